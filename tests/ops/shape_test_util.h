#pragma once
// Helpers shared by the shape, creation and indexing tests.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tessel/tessel.h"

namespace shape_testing {

namespace ts = tessel;

/// The dtypes the typed tests run over: every kind, with the half and complex types.
inline const std::vector<ts::DType> kDTypes = {ts::bool_, ts::i8,  ts::u16, ts::i32, ts::i64,  ts::f16,
                                               ts::bf16,  ts::f32, ts::f64, ts::c64, ts::c128};

/// Small values that every dtype holds exactly: i % 7 (bool: i % 7 != 0), as doubles.
inline std::vector<double> ramp_values(int64_t n, ts::DType d) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(d == ts::bool_ ? double(i % 7 != 0) : double(i % 7));
  return v;
}

/// An array of `shape` and dtype `d` holding ramp_values.
inline ts::Array ramp(const ts::Shape& shape, ts::DType d) {
  return ts::Array(ramp_values(ts::shape_size(shape), d), shape).astype(d);
}

inline std::vector<double> vals(const ts::Array& a) { return a.to_vector<double>(); }

/// Expects `f` to throw E whose message contains `needle`.
template <class E, class F> void expect_error(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "expected an exception mentioning \"" << needle << "\"";
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << "message: " << e.what();
  }
}

struct DTypeName {
  std::string operator()(const testing::TestParamInfo<ts::DType>& info) const {
    return ts::dtype_name(info.param);
  }
};

}  // namespace shape_testing
