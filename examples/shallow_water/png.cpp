// PNG: the 8-byte signature, then chunks (length, type, data, CRC-32 of type + data):
// IHDR, one IDAT holding the zlib stream of all scanlines (each led by filter byte 0), IEND.
#include "png.h"

#include <zlib.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace shallow_water {

Image::Image(int w, int h, Rgb fill) : width(w), height(h), rgb(size_t(w) * size_t(h) * 3) {
  for (size_t i = 0; i < rgb.size(); i += 3) rgb[i] = fill[0], rgb[i + 1] = fill[1], rgb[i + 2] = fill[2];
}

void Image::set(int x, int y, Rgb c) {
  if (x < 0 || y < 0 || x >= width || y >= height) return;
  uint8_t* p = &rgb[(size_t(y) * size_t(width) + size_t(x)) * 3];
  p[0] = c[0], p[1] = c[1], p[2] = c[2];
}

void Image::line(int x0, int y0, int x1, int y1, Rgb c) {
  // Bresenham, all octants.
  const int dx = std::abs(x1 - x0), dy = -std::abs(y1 - y0);
  const int sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
  int err = dx + dy;
  for (;;) {
    set(x0, y0, c);
    if (x0 == x1 && y0 == y1) break;
    const int e2 = 2 * err;
    if (e2 >= dy) err += dy, x0 += sx;
    if (e2 <= dx) err += dx, y0 += sy;
  }
}

void Image::fill_rect(int x, int y, int w, int h, Rgb c) {
  for (int j = y; j < y + h; ++j)
    for (int i = x; i < x + w; ++i) set(i, j, c);
}

namespace {

void put_u32(std::string& s, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) s += char((v >> shift) & 0xff);
}

void write_chunk(std::ofstream& out, const char* type, const std::string& data) {
  std::string chunk;
  put_u32(chunk, uint32_t(data.size()));
  chunk.append(type, 4);
  chunk += data;
  const uLong crc = crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(chunk.data() + 4), uInt(data.size() + 4));
  put_u32(chunk, uint32_t(crc));
  out.write(chunk.data(), std::streamsize(chunk.size()));
}

}  // namespace

void write_png(const std::string& path, const Image& img) {
  std::string ihdr;
  put_u32(ihdr, uint32_t(img.width));
  put_u32(ihdr, uint32_t(img.height));
  ihdr += {char(8), char(2), char(0), char(0), char(0)};  // 8-bit RGB, deflate, no filter, no interlace

  const size_t stride = size_t(img.width) * 3;
  std::string raw;
  raw.reserve((stride + 1) * size_t(img.height));
  for (int y = 0; y < img.height; ++y) {
    raw += char(0);
    raw.append(reinterpret_cast<const char*>(&img.rgb[size_t(y) * stride]), stride);
  }
  uLongf packed_size = compressBound(uLong(raw.size()));
  std::string packed(packed_size, '\0');
  if (compress2(reinterpret_cast<Bytef*>(packed.data()), &packed_size, reinterpret_cast<const Bytef*>(raw.data()),
                uLong(raw.size()), Z_BEST_COMPRESSION) != Z_OK)
    throw std::runtime_error("write_png: zlib compression failed");
  packed.resize(packed_size);

  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error("write_png: cannot open " + path + " for writing");
  out.write("\x89PNG\r\n\x1a\n", 8);
  write_chunk(out, "IHDR", ihdr);
  write_chunk(out, "IDAT", packed);
  write_chunk(out, "IEND", "");
  if (!out) throw std::runtime_error("write_png: failed writing " + path);
}

}  // namespace shallow_water
