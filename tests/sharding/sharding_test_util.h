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

}  // namespace sharding_test
