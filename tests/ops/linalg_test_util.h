#pragma once
// What the linear-algebra tests (linalg_factor_test.cpp, linalg_composed_test.cpp) share:
// matrix helpers computed independently of the library's own (adjoint, triangles), the
// batch sharding over two devices and the check that a batch-sharded computation runs
// without moving its batch between devices.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "tessel/tessel.h"

namespace linalg_testing {

namespace ts = tessel;

/// The matrices of x conjugate-transposed (transposed for real dtypes).
inline ts::Array adjoint(const ts::Array& x) {
  const ts::Array t = ts::swapaxes(x, -1, -2);
  return ts::is_complex(x.dtype()) ? ts::conj(t) : t;
}

/// The lower (upper) triangle of the matrices of x from diagonal k, the rest zero.
inline ts::Array band(const ts::Array& x, int64_t k, bool upper) {
  const int64_t m = x.dim(-2), n = x.dim(-1);
  const ts::Array d = ts::iota(ts::i32, {m, n}, 1) - ts::iota(ts::i32, {m, n}, 0);
  const ts::Array keep = upper ? ts::greater_equal(d, ts::Array(int32_t(k))) : ts::less_equal(d, ts::Array(int32_t(k)));
  return ts::where(ts::broadcast_to(keep, x.shape()), x, ts::zeros_like(x));
}
inline ts::Array tril(const ts::Array& x, int64_t k = 0) { return band(x, k, false); }
inline ts::Array triu(const ts::Array& x, int64_t k = 0) { return band(x, k, true); }

/// The first (batch) dimension split over a 2-device mesh axis "x": P("x").
inline ts::NamedSharding batch_sharding() { return ts::NamedSharding(ts::make_mesh({2}, {"x"}), ts::P("x")); }

/// Expects the compiled program text of a batch-sharded computation to hold no collective
/// that gathers or redistributes the batch (all_gather, all_to_all).
inline void expect_no_batch_collectives(const std::string& text) {
  EXPECT_EQ(text.find("all_gather"), std::string::npos) << text;
  EXPECT_EQ(text.find("all_to_all"), std::string::npos) << text;
}

}  // namespace linalg_testing
