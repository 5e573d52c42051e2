#include "plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace shallow_water {
namespace {

// matplotlib's RdBu_r (ColorBrewer RdBu reversed): dark blue, white, dark red.
constexpr Rgb kRdBuR[] = {{5, 48, 97},    {33, 102, 172}, {67, 147, 195},  {146, 197, 222},
                          {209, 229, 240}, {247, 247, 247}, {253, 219, 199}, {244, 165, 130},
                          {214, 96, 77},   {178, 24, 43},   {103, 0, 31}};
constexpr Rgb kBlack = {0, 0, 0};

// A 5-row pixel font for the labels: each glyph is five rows of pixels ('#' = ink), three
// wide except 'm'.
struct Glyph {
  char c;
  const char* rows[5];
};
constexpr Glyph kFont[] = {
    {'0', {"###", "#.#", "#.#", "#.#", "###"}}, {'1', {".#.", "##.", ".#.", ".#.", "###"}},
    {'2', {"###", "..#", "###", "#..", "###"}}, {'3', {"###", "..#", "###", "..#", "###"}},
    {'4', {"#.#", "#.#", "###", "..#", "..#"}}, {'5', {"###", "#..", "###", "..#", "###"}},
    {'6', {"###", "#..", "###", "#.#", "###"}}, {'7', {"###", "..#", "..#", "..#", "..#"}},
    {'8', {"###", "#.#", "###", "#.#", "###"}}, {'9', {"###", "#.#", "###", "..#", "###"}},
    {'-', {"...", "...", "###", "...", "..."}}, {'+', {"...", ".#.", "###", ".#.", "..."}},
    {'.', {".", ".", ".", ".", "#"}},           {'=', {"...", "###", "...", "###", "..."}},
    {' ', {"..", "..", "..", "..", ".."}},      {'a', {"...", ".##", "#.#", "#.#", ".##"}},
    {'d', {"..#", "..#", ".##", "#.#", ".##"}}, {'m', {".....", "##.#.", "#.#.#", "#.#.#", "#.#.#"}},
    {'s', {"...", ".##", "#..", "..#", "##."}}, {'t', {".#.", "###", ".#.", ".#.", "..#"}},
    {'y', {"...", "#.#", "#.#", ".#.", "#.."}},
};
constexpr int kTextScale = 2;

const Glyph* glyph(char c) {
  for (const Glyph& g : kFont)
    if (g.c == c) return &g;
  return nullptr;
}

int glyph_width(char c) {
  const Glyph* g = glyph(c);
  return g ? int(std::string(g->rows[0]).size()) : 3;
}

int text_width(const std::string& s) {
  int w = 0;
  for (char c : s) w += (glyph_width(c) + 1) * kTextScale;
  return w - kTextScale;
}

void draw_text(Image& img, int x, int y, const std::string& s) {
  for (char c : s) {
    if (const Glyph* g = glyph(c))
      for (int r = 0; r < 5; ++r)
        for (int col = 0; g->rows[r][col]; ++col)
          if (g->rows[r][col] == '#') img.fill_rect(x + col * kTextScale, y + r * kTextScale, kTextScale, kTextScale, kBlack);
    x += (glyph_width(c) + 1) * kTextScale;
  }
}

// An arrow from (x0, y0) to (x1, y1) with a two-stroke head.
void draw_arrow(Image& img, double x0, double y0, double x1, double y1) {
  const double len = std::hypot(x1 - x0, y1 - y0);
  if (len < 1.0) {
    img.set(int(std::lround(x0)), int(std::lround(y0)), kBlack);
    return;
  }
  img.line(int(std::lround(x0)), int(std::lround(y0)), int(std::lround(x1)), int(std::lround(y1)), kBlack);
  const double head = std::clamp(0.35 * len, 2.0, 6.0), back = std::atan2(y0 - y1, x0 - x1);
  for (double side : {-0.45, 0.45})
    img.line(int(std::lround(x1)), int(std::lround(y1)), int(std::lround(x1 + head * std::cos(back + side))),
             int(std::lround(y1 + head * std::sin(back + side))), kBlack);
}

std::string format_number(double v, int decimals) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

}  // namespace

// Interpolates the anchors linearly.
Rgb colormap(double t) {
  constexpr int n = int(std::size(kRdBuR)) - 1;
  t = std::clamp(std::isfinite(t) ? t : 0.5, 0.0, 1.0) * n;
  const int k = std::min(int(t), n - 1);
  const double f = t - k;
  Rgb c;
  for (int ch = 0; ch < 3; ++ch) c[size_t(ch)] = uint8_t(std::lround(kRdBuR[k][size_t(ch)] * (1 - f) + kRdBuR[k + 1][size_t(ch)] * f));
  return c;
}

Image plot_surface(const PlotInput& in) {
  const int nx = int(in.nx), ny = int(in.ny);
  const int scale = std::max(1, 720 / std::max(nx, 1));  // about 720 pixels wide
  const int margin = 12, title_h = 5 * kTextScale + 10, bar_h = 12, label_h = 5 * kTextScale + 6;
  const int map_w = nx * scale, map_h = ny * scale;
  const int map_x = margin, map_y = margin + title_h;
  const int bar_y = map_y + map_h + 14;
  Image img(map_w + 2 * margin, bar_y + bar_h + label_h + margin);

  double range = in.eta_range;
  if (range <= 0) {
    range = 0;
    for (double e : in.eta) range = std::max(range, std::fabs(e));
    if (range == 0) range = 1;
  }

  // Surface height anomaly; image rows run north to south.
  for (int j = 0; j < ny; ++j)
    for (int i = 0; i < nx; ++i) {
      const Rgb c = colormap(0.5 + 0.5 * in.eta[size_t(j * nx + i)] / range);
      img.fill_rect(map_x + i * scale, map_y + (ny - 1 - j) * scale, scale, scale, c);
    }

  // Velocity arrows on the original's coarse grid (about 25 x 50 arrows).
  const int sy = std::max(1, (ny + 2) / 25), sx = std::max(1, (nx + 2) / 50);
  double vmax = 0;
  for (int j = 0; j < ny; j += sy)
    for (int i = 0; i < nx; i += sx) vmax = std::max(vmax, std::hypot(in.u[size_t(j * nx + i)], in.v[size_t(j * nx + i)]));
  const double px_per_ms = vmax > 0 ? 0.9 * std::min(sx, sy) * scale / vmax : 0;
  for (int j = 0; j < ny; j += sy)
    for (int i = 0; i < nx; i += sx) {
      const double cx = map_x + (i + 0.5) * scale, cy = map_y + (ny - 1 - j + 0.5) * scale;
      const size_t k = size_t(j * nx + i);
      draw_arrow(img, cx, cy, cx + in.u[k] * px_per_ms, cy - in.v[k] * px_per_ms);
    }

  // Frame, title, colour bar with ticks at -range, 0, +range.
  img.line(map_x - 1, map_y - 1, map_x + map_w, map_y - 1, kBlack);
  img.line(map_x - 1, map_y + map_h, map_x + map_w, map_y + map_h, kBlack);
  img.line(map_x - 1, map_y - 1, map_x - 1, map_y + map_h, kBlack);
  img.line(map_x + map_w, map_y - 1, map_x + map_w, map_y + map_h, kBlack);
  draw_text(img, map_x, margin, "t = " + format_number(in.time_days, in.time_days < 1 ? 3 : 2) + " days");

  const int bar_w = map_w * 4 / 5, bar_x = map_x + (map_w - bar_w) / 2;
  for (int i = 0; i < bar_w; ++i) img.fill_rect(bar_x + i, bar_y, 1, bar_h, colormap((i + 0.5) / bar_w));
  const int decimals = range >= 10 ? 0 : range >= 1 ? 1 : 3;
  for (int t = 0; t < 3; ++t) {
    const int x = bar_x + t * (bar_w - 1) / 2;
    img.line(x, bar_y + bar_h, x, bar_y + bar_h + 3, kBlack);
    const double value = (t - 1) * range;
    // Built by appending: GCC 12 warns falsely (-Wrestrict) on `"+" + std::string`.
    std::string number = value > 0 ? std::string("+") : std::string();
    number += format_number(value, decimals);
    draw_text(img, x - text_width(number) / 2, bar_y + bar_h + 6, t == 2 ? number + " m" : number);
  }
  return img;
}

}  // namespace shallow_water
