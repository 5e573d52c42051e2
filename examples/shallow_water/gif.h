#pragma once
// An animated GIF writer over giflib: frames of the RGB canvas (png.h) mapped onto one
// 256-colour palette (black, white and the plot's colour map), looping forever.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "png.h"

namespace shallow_water {

class GifWriter {
 public:
  /// Opens `path` for frames of width x height pixels shown `delay_centiseconds` each;
  /// throws std::runtime_error naming the file when it cannot be written.
  GifWriter(const std::string& path, int width, int height, int delay_centiseconds);
  ~GifWriter();
  GifWriter(const GifWriter&) = delete;
  GifWriter& operator=(const GifWriter&) = delete;
  /// Appends one frame; it must have the size given at construction.
  void add_frame(const Image& img);
  /// Writes the trailer and closes the file (the destructor does it too, ignoring errors).
  void close();
  int frames() const { return frames_; }

 private:
  uint8_t palette_index(const uint8_t* rgb);
  std::string path_;
  int width_, height_, delay_, frames_ = 0;
  void* gif_ = nullptr;            // GifFileType*, kept out of this header
  std::vector<uint8_t> palette_;   // 256 x RGB
  std::vector<int16_t> nearest_;   // 32^3 colour cells -> palette index, -1 until first use
};

}  // namespace shallow_water
