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

/// The first (batch) dimension split over a 2-device mesh axis "x": P("x").
inline ts::NamedSharding batch_sharding() { return ts::NamedSharding(ts::make_mesh({2}, {"x"}), ts::P("x")); }

/// Expects the compiled program text of a batch-sharded computation to hold no collective
/// that gathers or redistributes the batch (all_gather, all_to_all).
inline void expect_no_batch_collectives(const std::string& text) {
  EXPECT_EQ(text.find("all_gather"), std::string::npos) << text;
  EXPECT_EQ(text.find("all_to_all"), std::string::npos) << text;
}

}  // namespace linalg_testing
