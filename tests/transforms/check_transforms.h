#pragma once
// Numerical checks of transformation rules, shared by the rule tests:
//  - check_grads: forward mode against central finite differences (float64), and reverse
//    mode against forward mode (<ct, J t> == <J^T ct, t>), eagerly and under jit;
//  - check_vmap: vmap against an explicit loop over the mapped axis.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "tessel/tessel.h"

namespace transform_testing {

namespace ts = tessel;
using Fn = std::function<ts::Array(const std::vector<ts::Array>&)>;

/// Deterministic pseudo-random float64 values in [lo, hi) of `shape`.
inline ts::Array uniform(const ts::Shape& shape, uint32_t seed, double lo = -1.0, double hi = 1.0,
                         ts::DType dtype = ts::f64) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<double> v(size_t(ts::shape_size(shape)));
  for (auto& x : v) x = d(gen);
  return ts::Array(v, shape).reshape(shape).astype(dtype);  // Array(v, {}) is 1-D: reshape to rank 0
}

inline double vdot_all(const ts::Array& a, const ts::Array& b) {
  auto x = a.astype(ts::f64).to_vector<double>(), y = b.astype(ts::f64).to_vector<double>();
  double s = 0;
  for (size_t i = 0; i < x.size(); ++i) s += x[i] * y[i];
  return s;
}

inline void expect_close(const ts::Array& got, const ts::Array& want, double tol, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  auto g = got.astype(ts::f64).to_vector<double>(), w = want.astype(ts::f64).to_vector<double>();
  double scale = 1;
  for (double x : w) scale = std::max(scale, std::abs(x));
  for (size_t i = 0; i < g.size(); ++i)
    ASSERT_NEAR(g[i], w[i], tol * scale) << what << " at flat index " << i;
}

/// The tangent output of f's jvp under jit: the float tangents are jit's arguments, the empty
/// ones (integer inputs, JAX's float0) stay empty inside.
inline ts::Array jitted_jvp_tangent(const Fn& f, const std::vector<ts::Array>& args,
                                    const std::vector<ts::Array>& tangents) {
  using V = std::vector<ts::Array>;
  V float_tangents;
  for (auto& x : tangents)
    if (x.valid()) float_tangents.push_back(x);
  auto jitted = ts::jit([&](const V& xs, const V& fts) {
    V all;
    size_t k = 0;
    for (auto& x : tangents) all.push_back(x.valid() ? fts[k++] : ts::Array());
    return ts::jvp([&](const V& z) { return f(z); }, std::tuple<V>(xs), std::tuple<V>(all)).second;
  });
  return jitted(args, float_tangents);
}

/// Checks f's jvp against central differences and its vjp against its jvp, at `args`
/// (float64 arrays; integer arrays are held fixed). `tol` is relative to the largest value.
inline void check_grads(const Fn& f, const std::vector<ts::Array>& args, double tol = 1e-6, double eps = 1e-6) {
  std::vector<ts::Array> tangents;
  uint32_t seed = 7;
  for (auto& a : args)
    tangents.push_back(ts::is_inexact(a.dtype()) ? uniform(a.shape(), seed++, -1, 1, a.dtype()) : ts::Array());
  auto shifted = [&](double s) {
    std::vector<ts::Array> xs;
    for (size_t i = 0; i < args.size(); ++i)
      xs.push_back(tangents[i].valid() ? args[i] + tangents[i] * s : args[i]);
    return f(xs);
  };
  ts::Array fd = (shifted(eps) - shifted(-eps)) / (2 * eps);
  using V = std::vector<ts::Array>;
  // Integer arguments take an empty tangent (JAX's float0).
  auto [y, t] = ts::jvp([&](const V& xs) { return f(xs); }, std::tuple<V>(args), std::tuple<V>(tangents));
  expect_close(t, fd, tol, "jvp vs finite differences");
  expect_close(jitted_jvp_tangent(f, args, tangents), t, 1e-12, "jit(jvp) vs jvp");
  // Reverse mode: <ct, J t> == <J^T ct, t>.
  auto [y2, pullback] = ts::vjp([&](const V& xs) { return f(xs); }, args);
  ts::Array ct = uniform(y2.shape(), 99, -1, 1, y2.dtype());
  V cts = pullback(ct);
  ASSERT_EQ(cts.size(), args.size());
  double lhs = vdot_all(ct, t), rhs = 0;
  for (size_t i = 0; i < args.size(); ++i)
    if (tangents[i].valid()) rhs += vdot_all(cts[i], tangents[i]);
  EXPECT_NEAR(lhs, rhs, tol * (1 + std::abs(lhs))) << "vjp disagrees with jvp";
  // Reverse mode under jit agrees with eager reverse mode.
  auto jitted_vjp = ts::jit([&](const V& xs, const ts::Array& c) {
    return ts::vjp([&](const V& z) { return f(z); }, xs).second(c);
  });
  V jcts = jitted_vjp(args, ct);
  for (size_t i = 0; i < args.size(); ++i)
    if (tangents[i].valid()) expect_close(jcts[i], cts[i], 1e-12, "jit(vjp) vs vjp");
}

/// Checks vmap(f, in_axes, {out_axis}) against a loop that slices each mapped argument,
/// applies f and stacks the results along out_axis.
inline void check_vmap(const Fn& f, const std::vector<ts::Array>& args, const std::vector<ts::AxisSpec>& in_axes,
                       int64_t out_axis = 0) {
  using V = std::vector<ts::Array>;
  int64_t n = -1;
  for (size_t i = 0; i < args.size(); ++i)
    if (in_axes[i]) n = args[i].dim(*in_axes[i]);
  ASSERT_GT(n, 0) << "check_vmap needs a mapped argument";
  std::vector<ts::Array> rows;
  for (int64_t b = 0; b < n; ++b) {
    V xs;
    for (size_t i = 0; i < args.size(); ++i) {
      if (!in_axes[i]) {
        xs.push_back(args[i]);
        continue;
      }
      int64_t ax = *in_axes[i] < 0 ? *in_axes[i] + args[i].ndim() : *in_axes[i];
      xs.push_back(ts::squeeze(ts::slice_in_dim(args[i], b, b + 1, 1, ax), ts::Axes{ax}));
    }
    rows.push_back(f(xs));
  }
  ts::Array want = ts::stack(rows, out_axis);
  // Wrap the per-argument axes into one vmap over separate arguments.
  auto g = [&](const V& xs) { return f(xs); };
  ts::Array got;
  switch (args.size()) {
    case 1: got = ts::vmap([&](const ts::Array& a) { return g({a}); }, in_axes, {out_axis})(args[0]); break;
    case 2:
      got = ts::vmap([&](const ts::Array& a, const ts::Array& b) { return g({a, b}); }, in_axes, {out_axis})(args[0],
                                                                                                            args[1]);
      break;
    case 3:
      got = ts::vmap([&](const ts::Array& a, const ts::Array& b, const ts::Array& c) { return g({a, b, c}); }, in_axes,
                     {out_axis})(args[0], args[1], args[2]);
      break;
    default: FAIL() << "check_vmap supports 1 to 3 arguments";
  }
  ASSERT_EQ(got.dtype(), want.dtype());
  ASSERT_EQ(got.shape(), want.shape());
  expect_close(got, want, 1e-12, "vmap vs loop");
}

}  // namespace transform_testing
