#pragma once
// A small RGB canvas and a PNG writer (zlib-compressed, 8-bit RGB, no interlace).
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace shallow_water {

using Rgb = std::array<uint8_t, 3>;

/// Width x height RGB pixels, row 0 at the top.
struct Image {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;  // 3 bytes per pixel, row-major
  Image(int w, int h, Rgb fill = {255, 255, 255});
  /// Sets a pixel; coordinates outside the image are ignored (drawing clips).
  void set(int x, int y, Rgb c);
  /// A 1-pixel line from (x0, y0) to (x1, y1), end points included.
  void line(int x0, int y0, int x1, int y1, Rgb c);
  void fill_rect(int x, int y, int w, int h, Rgb c);
};

/// Writes `img` as PNG; throws std::runtime_error on failure.
void write_png(const std::string& path, const Image& img);

}  // namespace shallow_water
