#pragma once
// A table-driven harness for the rule tests of the structural primitives (shape_rules_test,
// indexing_rules_test): each case is a function with the shapes of its arguments; the
// tests check its derivatives (check_grads, float64) and its vmap against a loop for every
// in_axes variant and data dtype.
#include <random>
#include <string>
#include <vector>

#include "transforms/check_transforms.h"

namespace transform_testing {

/// An argument of a case: float data of `shape`, or (index_hi > index_lo) integer indices
/// drawn from [index_lo, index_hi), held fixed under differentiation.
struct Arg {
  ts::Shape shape;
  int64_t index_lo = 0, index_hi = 0;
  bool is_index() const { return index_hi > index_lo; }
};

inline Arg index_arg(ts::Shape shape, int64_t lo, int64_t hi) { return Arg{std::move(shape), lo, hi}; }

struct Case {
  std::string name;
  Fn f;
  std::vector<Arg> args;
  bool int_data = true;  ///< f is defined for integer data too (vmap is checked over int32)
};

inline ts::Array make_arg(const Arg& a, const ts::Shape& shape, uint32_t seed, ts::DType dtype) {
  if (a.is_index()) {
    std::mt19937 gen(seed);
    std::uniform_int_distribution<int64_t> d(a.index_lo, a.index_hi - 1);
    std::vector<int32_t> v(size_t(ts::shape_size(shape)));
    for (auto& x : v) x = int32_t(d(gen));
    return ts::Array(v, shape).reshape(shape);  // Array(v, {}) is 1-D
  }
  if (ts::is_integer(dtype)) return uniform(shape, seed, -9, 9).astype(dtype);
  return uniform(shape, seed, -1, 1, dtype);
}

inline std::vector<ts::Array> example_args(const Case& c, ts::DType dtype, uint32_t seed = 1) {
  std::vector<ts::Array> xs;
  for (const Arg& a : c.args) xs.push_back(make_arg(a, a.shape, seed++, dtype));
  return xs;
}

inline void check_case_grads(const Case& c, double tol = 1e-6) { check_grads(c.f, example_args(c, ts::f64), tol); }

/// vmap of the case over a batch of 3 with: every argument mapped at 0, at -1, at a middle
/// axis; the first argument unmapped; only the first argument mapped; the data arguments
/// mapped at -1 and the index arguments unmapped; with varying out axes.
inline void check_case_vmap(const Case& c, ts::DType dtype) {
  const int64_t out_rank = c.f(example_args(c, dtype)).ndim();
  struct Variant {
    std::vector<ts::AxisSpec> in_axes;
    int64_t out_axis;
  };
  std::vector<Variant> variants;
  const size_t n = c.args.size();
  auto all = [&](auto axis_of) {
    std::vector<ts::AxisSpec> v;
    for (const Arg& a : c.args) v.push_back(axis_of(a));
    return v;
  };
  variants.push_back({all([](const Arg&) { return ts::AxisSpec(0); }), 0});
  variants.push_back({all([](const Arg&) { return ts::AxisSpec(-1); }), -1});
  variants.push_back({all([](const Arg& a) { return ts::AxisSpec(int64_t(a.shape.size() + 1) / 2); }), (out_rank + 1) / 2});
  if (n > 1) {
    auto v = all([](const Arg&) { return ts::AxisSpec(0); });
    v[0] = ts::none;
    variants.push_back({v, out_rank});
    auto w = all([](const Arg&) { return ts::AxisSpec(ts::none); });
    w[0] = 0;
    variants.push_back({w, std::min<int64_t>(1, out_rank)});
  }
  bool has_index = false;
  for (const Arg& a : c.args) has_index |= a.is_index();
  if (has_index) {  // data mapped at its last axis, indices unmapped
    std::vector<ts::AxisSpec> v;
    for (const Arg& a : c.args) v.push_back(a.is_index() ? ts::AxisSpec(ts::none) : ts::AxisSpec(-1));
    variants.push_back({v, out_rank});
  }
  uint32_t seed = 11;
  for (const Variant& var : variants) {
    std::vector<ts::Array> xs;
    for (size_t i = 0; i < n; ++i) {
      ts::Shape s = c.args[i].shape;
      if (var.in_axes[i]) {
        int64_t ax = *var.in_axes[i] < 0 ? *var.in_axes[i] + int64_t(s.size()) + 1 : *var.in_axes[i];
        s.insert(s.begin() + ax, 3);
      }
      xs.push_back(make_arg(c.args[i], s, seed++, dtype));
    }
    SCOPED_TRACE(c.name + " vmap over " + std::string(ts::dtype_name(dtype)) + ", variant with out_axis " +
                 std::to_string(var.out_axis));
    check_vmap(c.f, xs, var.in_axes, var.out_axis);
  }
}

/// gtest prints a case by its name.
inline void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

/// Names parameterized tests over a table of cases.
inline std::string case_name(const ::testing::TestParamInfo<Case>& info) { return info.param.name; }

}  // namespace transform_testing
