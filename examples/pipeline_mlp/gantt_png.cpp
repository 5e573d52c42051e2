// The pipeline Gantt chart (gantt_png.h): an RGB canvas filled with lanes and bars, written
// with libpng's simplified API (no setjmp error handling needed).
#include "gantt_png.h"

#include <png.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>

namespace pipeline_mlp {

namespace {

using Rgb = std::array<uint8_t, 3>;

constexpr int kWidth = 1200;      // pixels of the whole image
constexpr int kPad = 4;           // blank pixels left and right of the time axis
constexpr int kLane = 60;         // pixels per worker lane
constexpr int kSeparator = 1;     // pixels between lanes (and above/below them)
constexpr int kTaskInset = 6;     // blank pixels above and below a stage task's bar
constexpr int kCommHeight = 10;   // send/recv bars: thin, so compute stands out
constexpr int kOtherHeight = 4;   // bookkeeping: thinner still

constexpr Rgb kBackground = {255, 255, 255};
constexpr Rgb kLaneShade = {246, 246, 246};  // every other lane, to follow a worker across
constexpr Rgb kSeparatorColor = {170, 170, 170};
constexpr Rgb kCommColor = {150, 150, 150};
constexpr Rgb kOtherColor = {200, 200, 200};

/// HSL to RGB (h in degrees, s and l in [0, 1]): varying only lightness keeps a kind's hue
/// recognisable while telling its microbatches apart.
Rgb hsl(double h, double s, double l) {
  const double c = (1 - std::abs(2 * l - 1)) * s;
  const double hp = std::fmod(h, 360.0) / 60.0;
  const double x = c * (1 - std::abs(std::fmod(hp, 2.0) - 1));
  double r = 0, g = 0, b = 0;
  if (hp < 1) r = c, g = x;
  else if (hp < 2) r = x, g = c;
  else if (hp < 3) g = c, b = x;
  else if (hp < 4) g = x, b = c;
  else if (hp < 5) r = x, b = c;
  else r = c, b = x;
  const double m = l - c / 2;
  auto byte = [&](double v) { return uint8_t(std::lround(std::clamp(v + m, 0.0, 1.0) * 255)); };
  return {byte(r), byte(g), byte(b)};
}

/// How a bar of `kind` is drawn: its colour and its height within the lane.
struct BarStyle {
  Rgb color;
  int height;
};

/// Stage tasks get a hue per kind and one of three lightnesses by microbatch, so two
/// consecutive microbatches never share a shade; communication is grey whatever it carries.
BarStyle bar_style(const std::string& kind, int microbatch) {
  static constexpr double kLightness[3] = {0.42, 0.55, 0.68};
  const double l = kLightness[microbatch < 0 ? 0 : microbatch % 3];
  const int task_height = kLane - 2 * kTaskInset;
  if (kind == "forward") return {hsl(215, 0.70, l), task_height};
  if (kind == "backward") return {hsl(135, 0.55, l), task_height};
  if (kind == "backward_input") return {hsl(30, 0.85, l), task_height};
  if (kind == "backward_weight") return {hsl(280, 0.50, l), task_height};
  if (kind == "send" || kind == "recv") return {kCommColor, kCommHeight};
  return {kOtherColor, kOtherHeight};
}

/// Width x height RGB pixels, row 0 at the top, in the layout libpng's simplified API reads.
struct Canvas {
  int width, height;
  std::vector<uint8_t> rgb;
  Canvas(int w, int h) : width(w), height(h), rgb(size_t(w) * size_t(h) * 3) {}
  /// Clips to the canvas so callers can pass rounded coordinates without checks.
  void fill_rect(int x0, int y0, int x1, int y1, Rgb c) {
    x0 = std::max(x0, 0), y0 = std::max(y0, 0), x1 = std::min(x1, width), y1 = std::min(y1, height);
    for (int y = y0; y < y1; ++y)
      for (int x = x0; x < x1; ++x) {
        uint8_t* p = &rgb[(size_t(y) * size_t(width) + size_t(x)) * 3];
        p[0] = c[0], p[1] = c[1], p[2] = c[2];
      }
  }
};

/// The empty chart: a lane per worker, alternate lanes shaded, 1-pixel rules between them.
Canvas draw_lanes(int num_workers) {
  Canvas img(kWidth, num_workers * (kLane + kSeparator) + kSeparator);
  img.fill_rect(0, 0, img.width, img.height, kBackground);
  for (int w = 0; w <= num_workers; ++w) {
    const int top = w * (kLane + kSeparator);
    img.fill_rect(0, top, img.width, top + kSeparator, kSeparatorColor);
    if (w < num_workers && w % 2 == 1) img.fill_rect(0, top + kSeparator, img.width, top + kSeparator + kLane, kLaneShade);
  }
  return img;
}

void write_png(const std::string& path, const Canvas& img) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = png_uint_32(img.width);
  image.height = png_uint_32(img.height);
  image.format = PNG_FORMAT_RGB;
  if (!png_image_write_to_file(&image, path.c_str(), 0, img.rgb.data(), png_int_32(img.width * 3), nullptr))
    throw std::runtime_error("write_gantt_png: cannot write '" + path + "': " + image.message +
                             "; check that its directory exists and is writable");
}

}  // namespace

void write_gantt_png(const std::string& path, const std::vector<tessel::pipeline::TimelineEvent>& events,
                     int num_workers) {
  if (num_workers <= 0)
    throw std::invalid_argument("write_gantt_png: num_workers must be positive, got " + std::to_string(num_workers));
  double t0 = std::numeric_limits<double>::infinity(), t1 = -t0;
  for (auto& e : events) {
    if (e.worker < 0 || e.worker >= num_workers)
      throw std::invalid_argument("write_gantt_png: event '" + e.name + "' is on worker " + std::to_string(e.worker) +
                                  ", outside the " + std::to_string(num_workers) + " lanes");
    t0 = std::min(t0, e.start_us);
    t1 = std::max(t1, e.end_us);
  }
  Canvas img = draw_lanes(num_workers);
  const double span = t1 - t0;
  if (span > 0) {
    const double scale = double(kWidth - 2 * kPad) / span;
    auto to_x = [&](double t) { return kPad + int(std::lround((t - t0) * scale)); };
    for (auto& e : events) {
      const BarStyle style = bar_style(e.kind, e.microbatch);
      int x0 = to_x(e.start_us), x1 = std::max(to_x(e.end_us), x0 + 1);  // a short event stays visible
      if (x1 - x0 >= 4) --x1;  // a 1-pixel gap so back-to-back tasks read as separate bars
      const int mid = kSeparator + e.worker * (kLane + kSeparator) + kLane / 2;
      img.fill_rect(x0, mid - style.height / 2, x1, mid - style.height / 2 + style.height, style.color);
    }
  }
  write_png(path, img);
}

}  // namespace pipeline_mlp
