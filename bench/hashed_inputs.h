#pragma once
// Inputs that a benchmark and its JAX baseline both compute exactly: a 32-bit integer hash
// of (index, salt), as bench/baselines/jax_transformer.py's hashed_uniform computes it, so
// the two sides run on the same values and their results can be compared.
#include <cstdint>
#include <vector>

#include "tessel/tessel.h"

namespace tessel::bench {

/// float32 values in [-bound, bound): the hash of (index, salt) (exact integer arithmetic,
/// one rounding to float), as jax_transformer.py's hashed_uniform.
inline std::vector<float> hashed_uniform(int64_t n, uint64_t salt, double bound) {
  std::vector<float> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    uint64_t h = (uint64_t(i) * 2654435761ull + salt * 97531ull) & 0xFFFFFFFFull;
    h ^= h >> 16;
    h = (h * 0x45D9F3Bull) & 0xFFFFFFFFull;
    h ^= h >> 16;
    double u = double(h) / 4294967296.0;
    out[size_t(i)] = float((2.0 * u - 1.0) * bound);
  }
  return out;
}

/// hashed_uniform over `shape`, as a float32 array.
inline Array hashed_array(const Shape& shape, uint64_t salt, double bound) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return Array(hashed_uniform(n, salt, bound), shape);
}

}  // namespace tessel::bench
