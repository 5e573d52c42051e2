#pragma once
// Helpers shared by the sharding tests.
#include <string>

#include "tessel/tessel.h"

namespace sharding_test {

/// 0, 1, 2, ... in row-major order as float32 of `shape`, times `scale` plus `offset`.
inline tessel::Array range_f32(const tessel::Shape& shape, float scale = 1.0f, float offset = 0.0f) {
  tessel::Array r = tessel::arange(0.0, double(tessel::shape_size(shape)), 1.0, tessel::f32).reshape(shape);
  if (scale != 1.0f) r = r * scale;
  if (offset != 0.0f) r = r + offset;
  return r;
}

/// How many times `what` occurs in `text` (collectives in a lowered program's text).
inline int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

/// A chain of windows with edges along dimension 0 (an edge pad, interior updates, the
/// last row set, a zero pad): each window reads the previous one's halo.
inline tessel::Array chained_windows_with_edges(const tessel::Array& h) {
  namespace ts = tessel;
    const ts::Slice I(1, -1), All;
    const ts::Array hc = ts::pad(h[{I, All}], {{1, 1}, {0, 0}}, "edge");
    ts::Array flux = ts::zeros_like(h);
    flux = flux.at({I, All}).set((hc[{ts::Slice(2), All}] - hc[{ts::Slice(0, -2), All}]) * 0.5f);
    ts::Array next = h.at({I, All}).add((flux[{ts::Slice(2), All}] - flux[{ts::Slice(0, -2), All}]) * 0.1f);
    next = next.at({-2, All}).set(0.0f);
    return ts::pad(next[{I, All}] * 0.9f + next[{ts::Slice(2), All}] * 0.1f, {{1, 1}, {0, 0}});
}

}  // namespace sharding_test
