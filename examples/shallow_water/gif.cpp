// Animated GIF through giflib: a global palette, the NETSCAPE2.0 extension for endless
// looping, and per frame a graphics control block (the delay) and the LZW-coded pixels.
#include "gif.h"

#include <gif_lib.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "plot.h"

namespace shallow_water {
namespace {

GifFileType* file(void* p) { return static_cast<GifFileType*>(p); }

[[noreturn]] void fail(const std::string& path, const char* what, int code) {
  throw std::runtime_error("cannot write GIF '" + path + "': " + what + " (" + GifErrorString(code) + ")");
}

}  // namespace

GifWriter::GifWriter(const std::string& path, int width, int height, int delay_centiseconds)
    : path_(path), width_(width), height_(height), delay_(delay_centiseconds), nearest_(32 * 32 * 32, -1) {
  // Black and white for frame, arrows and text; the colour map sampled evenly for the rest.
  palette_ = {0, 0, 0, 255, 255, 255};
  for (int k = 0; k < 254; ++k) {
    const Rgb c = colormap(k / 253.0);
    palette_.insert(palette_.end(), c.begin(), c.end());
  }
  // Opened here rather than by EGifOpenFileName, which creates files readable by their owner
  // only: the animation gets the usual mode (0666 less the umask).
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0666);
  if (fd < 0) throw std::runtime_error("cannot write GIF '" + path + "': " + std::strerror(errno));
  int err = 0;
  gif_ = EGifOpenFileHandle(fd, &err);
  if (!gif_) {
    ::close(fd);
    fail(path, "cannot open", err);
  }
  EGifSetGifVersion(file(gif_), true);
  GifColorType colors[256];
  for (int i = 0; i < 256; ++i)
    colors[i] = {palette_[size_t(3 * i)], palette_[size_t(3 * i + 1)], palette_[size_t(3 * i + 2)]};
  ColorMapObject* map = GifMakeMapObject(256, colors);
  const int screen = EGifPutScreenDesc(file(gif_), width, height, 8, 0, map);
  GifFreeMapObject(map);
  static const char kLoop[] = "NETSCAPE2.0";
  const unsigned char forever[3] = {1, 0, 0};
  if (screen == GIF_ERROR || EGifPutExtensionLeader(file(gif_), APPLICATION_EXT_FUNC_CODE) == GIF_ERROR ||
      EGifPutExtensionBlock(file(gif_), 11, kLoop) == GIF_ERROR ||
      EGifPutExtensionBlock(file(gif_), 3, forever) == GIF_ERROR || EGifPutExtensionTrailer(file(gif_)) == GIF_ERROR) {
    const int code = file(gif_)->Error;
    EGifCloseFile(file(gif_), &err);
    gif_ = nullptr;
    fail(path, "cannot write the header", code);
  }
}

GifWriter::~GifWriter() {
  if (gif_) {
    int err = 0;
    EGifCloseFile(file(gif_), &err);
  }
}

uint8_t GifWriter::palette_index(const uint8_t* rgb) {
  const size_t cell = size_t(rgb[0] >> 3) << 10 | size_t(rgb[1] >> 3) << 5 | size_t(rgb[2] >> 3);
  if (nearest_[cell] < 0) {
    int best = 0, best_d = std::numeric_limits<int>::max();
    for (int i = 0; i < 256; ++i) {
      int d = 0;
      for (int ch = 0; ch < 3; ++ch) {
        const int diff = int(rgb[ch]) - int(palette_[size_t(3 * i + ch)]);
        d += diff * diff;
      }
      if (d < best_d) best = i, best_d = d;
    }
    nearest_[cell] = int16_t(best);
  }
  return uint8_t(nearest_[cell]);
}

void GifWriter::add_frame(const Image& img) {
  if (!gif_) throw std::runtime_error("GIF '" + path_ + "' is closed");
  if (img.width != width_ || img.height != height_)
    throw std::runtime_error("GIF '" + path_ + "': frame of " + std::to_string(img.width) + "x" +
                             std::to_string(img.height) + " pixels, expected " + std::to_string(width_) + "x" +
                             std::to_string(height_));
  GraphicsControlBlock gcb{};
  gcb.DisposalMode = DISPOSE_DO_NOT;
  gcb.DelayTime = delay_;
  gcb.TransparentColor = NO_TRANSPARENT_COLOR;
  GifByteType ext[4];
  const size_t n = EGifGCBToExtension(&gcb, ext);
  if (EGifPutExtension(file(gif_), GRAPHICS_EXT_FUNC_CODE, int(n), ext) == GIF_ERROR ||
      EGifPutImageDesc(file(gif_), 0, 0, width_, height_, false, nullptr) == GIF_ERROR)
    fail(path_, "cannot write a frame", file(gif_)->Error);
  std::vector<GifPixelType> row(static_cast<size_t>(width_));
  for (int y = 0; y < height_; ++y) {
    const uint8_t* p = &img.rgb[size_t(y) * size_t(width_) * 3];
    for (int x = 0; x < width_; ++x) row[size_t(x)] = palette_index(p + 3 * x);
    if (EGifPutLine(file(gif_), row.data(), width_) == GIF_ERROR) fail(path_, "cannot write a frame", file(gif_)->Error);
  }
  ++frames_;
}

void GifWriter::close() {
  if (!gif_) return;
  int err = 0;
  const int rc = EGifCloseFile(file(gif_), &err);
  gif_ = nullptr;
  if (rc == GIF_ERROR) fail(path_, "cannot close", err);
}

}  // namespace shallow_water
