// Structured control flow (cond / switch_, while_loop, fori_loop, scan): values against
// hand-computed references, under jit, forward and reverse mode (finite differences), and
// vmap against an explicit loop (including batched predicates with per-example trip counts).
#include <algorithm>
#include <functional>
#include <tuple>
#include <utility>
#include <vector>

#include "core/value_copies.h"
#include "tessel/control_flow.h"
#include "transforms/check_transforms.h"

namespace {
using namespace transform_testing;
using V = std::vector<ts::Array>;
using ArrayFn = std::function<ts::Array(const ts::Array&)>;

std::vector<double> vals(const ts::Array& a) { return a.astype(ts::f64).to_vector<double>(); }
ts::Array f64s(std::vector<double> v, ts::Shape shape) { return ts::Array(v, {int64_t(v.size())}).reshape(shape); }
ts::Array f64s(std::vector<double> v) { return ts::Array(v); }
ts::Array i32(int32_t v) { return ts::Array(ts::Scalar(v)); }
ts::Array i32s(std::vector<int32_t> v) { return ts::Array(v); }
ts::Array scalar_one() { return ts::Array(ts::Scalar(1.0)); }
ts::Array scalar_of(double v) { return ts::Array(ts::Scalar(v)); }

/// Forward mode only (for while_loop, which reverse mode rejects): jvp against central
/// differences, and jit(jvp) against jvp. Integer arguments are held fixed.
void check_jvp_fd(const Fn& f, const V& args, double tol = 1e-6, double eps = 1e-6) {
  V tangents;
  uint32_t seed = 21;
  // Integer arguments take an empty tangent (JAX's float0).
  for (auto& a : args) tangents.push_back(ts::is_inexact(a.dtype()) ? uniform(a.shape(), seed++) : ts::Array());
  auto shifted = [&](double s) {
    V xs;
    for (size_t i = 0; i < args.size(); ++i)
      xs.push_back(ts::is_inexact(args[i].dtype()) ? args[i] + tangents[i] * s : args[i]);
    return f(xs);
  };
  ts::Array fd = (shifted(eps) - shifted(-eps)) / (2 * eps);
  auto [y, t] = ts::jvp([&](const V& xs) { return f(xs); }, std::tuple<V>(args), std::tuple<V>(tangents));
  expect_close(y, f(args), 1e-12, "jvp primal output vs f");
  expect_close(t, fd, tol, "jvp vs finite differences");
  expect_close(jitted_jvp_tangent(f, args, tangents), t, 1e-12, "jit(jvp) vs jvp");
}

// Rows of mixed sign, so that a predicate on sum(row) differs per example.
ts::Array mixed_rows() {
  return f64s({0.1, 0.2, 0.3, -0.5, 0.1, 0.2, 0.3, -0.1, 0.4, -0.3, -0.2, 0.1}, {4, 3});
}

// =================================== cond / switch_ ===================================

ts::Array sin_or_double(const ts::Array& x) {
  return ts::cond(
      ts::sum(x) > 0.0, [](const ts::Array& a) { return ts::sin(a); }, [](const ts::Array& a) { return a * 2.0; }, x);
}

Fn sin_or_double_fn() {
  return [](const V& a) { return sin_or_double(a[0]); };
}

TEST(Cond, RunsTheBranchThePredicateSelects) {
  ts::Array x = f64s({0.1, 0.2, 0.3});
  expect_close(sin_or_double(x), ts::sin(x), 1e-15, "true branch");
  expect_close(sin_or_double(-x), x * -2.0, 1e-15, "false branch");
}

TEST(Cond, IntegerPredicateIsTrueWhenNonzero) {
  auto f = [](const ts::Array& p, const ts::Array& x) {
    return ts::cond(p, [](const ts::Array& a) { return a + 1.0; }, [](const ts::Array& a) { return a - 1.0; }, x);
  };
  ts::Array x = f64s({1.0, 2.0});
  EXPECT_EQ(vals(f(i32(3), x)), (std::vector<double>{2.0, 3.0}));
  EXPECT_EQ(vals(f(i32(-1), x)), (std::vector<double>{2.0, 3.0}));
  EXPECT_EQ(vals(f(i32(0), x)), (std::vector<double>{0.0, 1.0}));
}

TEST(Cond, UnderJitOneProgramChoosesTheBranchAtRunTime) {
  auto jf = ts::jit(sin_or_double);
  ts::Array x = f64s({0.1, 0.2, 0.3});
  expect_close(jf(x), ts::sin(x), 1e-15, "jit true branch");
  expect_close(jf(-x), x * -2.0, 1e-15, "jit false branch");
  EXPECT_EQ(jf.cache_size(), 1u);
}

std::vector<ArrayFn> three_branches() {
  return {[](const ts::Array& a) { return a + 1.0; }, [](const ts::Array& a) { return a * 2.0; },
          [](const ts::Array& a) { return a - 1.0; }};
}

TEST(Switch, ThreeBranchesWithTheIndexClampedIntoRange) {
  ts::Array x = f64s({1.0, 3.0});
  auto branches = three_branches();
  auto jf = ts::jit([&](const ts::Array& i, const ts::Array& a) { return ts::switch_(i, branches, a); });
  for (int32_t k : {-5, -1, 0, 1, 2, 3, 100}) {
    int b = std::clamp(k, 0, 2);
    std::vector<double> want = b == 0 ? std::vector<double>{2.0, 4.0}
                               : b == 1 ? std::vector<double>{2.0, 6.0}
                                        : std::vector<double>{0.0, 2.0};
    EXPECT_EQ(vals(ts::switch_(i32(k), branches, x)), want) << "index " << k;
    EXPECT_EQ(vals(jf(i32(k), x)), want) << "jit, index " << k;
  }
}

TEST(Switch, OneBranchAlwaysRuns) {
  std::vector<ArrayFn> one{[](const ts::Array& a) { return a * 3.0; }};
  EXPECT_EQ(vals(ts::switch_(i32(7), one, f64s({1.0}))), (std::vector<double>{3.0}));
}

TEST(Cond, TreeOperandsAndTreeOutputs) {
  using P = std::pair<ts::Array, ts::Array>;
  auto f = [](const ts::Array& pred, const P& ab, const ts::Array& c) {
    return ts::cond(
        pred, [](const P& p, const ts::Array& k) { return std::make_tuple(p.first + k, p.second * k); },
        [](const P& p, const ts::Array& k) { return std::make_tuple(p.second - k, p.first); }, ab, c);
  };
  P ab{f64s({1.0, 2.0}), f64s({3.0, 4.0})};
  ts::Array c = f64s({10.0, 20.0});
  auto [t0, t1] = f(ts::Array(true), ab, c);
  EXPECT_EQ(vals(t0), (std::vector<double>{11.0, 22.0}));
  EXPECT_EQ(vals(t1), (std::vector<double>{30.0, 80.0}));
  auto [f0, f1] = ts::jit(f)(ts::Array(false), ab, c);
  EXPECT_EQ(vals(f0), (std::vector<double>{-7.0, -16.0}));
  EXPECT_EQ(vals(f1), (std::vector<double>{1.0, 2.0}));
  // Gradient through the tree: d/d(ab) sum(first + second) on the true branch.
  auto loss = [&](const P& p) {
    auto [u, w] = f(ts::Array(true), p, c);
    return ts::sum(u + w);
  };
  P g = ts::grad(loss)(ab);
  EXPECT_EQ(vals(g.first), (std::vector<double>{1.0, 1.0}));
  EXPECT_EQ(vals(g.second), (std::vector<double>{10.0, 20.0}));
}

TEST(Cond, BranchesCloseOverOuterConstantsAndTracers) {
  ts::Array k = f64s({100.0, 200.0, 300.0});  // a concrete value the branch closes over
  auto f = [k](const ts::Array& x, const ts::Array& y) {
    return ts::sum(ts::cond(
        ts::sum(x) > 0.0, [&](const ts::Array& a) { return a * y + k; }, [&](const ts::Array& a) { return a + ts::sin(y); },
        x));
  };
  ts::Array x = f64s({0.1, 0.2, 0.3}), y = f64s({0.5, -0.4, 0.7});
  EXPECT_NEAR(f(x, y).item<double>(), 0.05 - 0.08 + 0.21 + 600.0, 1e-12);
  EXPECT_NEAR(ts::jit(f)(x, y).item<double>(), 0.05 - 0.08 + 0.21 + 600.0, 1e-12);
  // y is captured by the branches (a tracer under grad): its gradient flows through them.
  expect_close(ts::grad<1>(f)(x, y), x, 1e-15, "grad wrt captured y, true branch");
  expect_close(ts::grad<1>(f)(-x, y), ts::cos(y), 1e-15, "grad wrt captured y, false branch");
  auto [gx, gy] = ts::jit(ts::grad<0, 1>(f))(x, y);
  expect_close(gx, y, 1e-15, "jit grad wrt operand");
  expect_close(gy, x, 1e-15, "jit grad wrt captured y");
  check_grads([&](const V& a) { return f(a[0], a[1]); }, {x, y});
  check_grads([&](const V& a) { return f(a[0], a[1]); }, {-x, y});
}

Fn cond_fn() {
  return [](const V& a) {
    return ts::cond(
        ts::sum(a[0]) > 0.0, [](const ts::Array& x, const ts::Array& y) { return ts::sin(x) * y; },
        [](const ts::Array& x, const ts::Array& y) { return x * y * y; }, a[0], a[1]);
  };
}

TEST(Cond, GradientsMatchFiniteDifferencesOnBothBranches) {
  check_grads(cond_fn(), {uniform({3}, 1, 0.1, 1.0), uniform({3}, 2)});
  check_grads(cond_fn(), {uniform({3}, 1, -1.0, -0.1), uniform({3}, 2)});
}

TEST(Cond, GradientsWithAConstantBranchAndAnIntegerOperand) {
  // One branch ignores the float operand (a symbolic-zero tangent on that path); n is an int.
  auto f = [](const V& a) {
    return ts::cond(
        ts::sum(a[0]) > 0.0, [](const ts::Array& x, const ts::Array& n) { return x * ts::astype(n, ts::f64); },
        [](const ts::Array& x, const ts::Array&) { return ts::ones_like(x); }, a[0], a[1]);
  };
  check_grads(f, {uniform({3}, 1, 0.1, 1.0), i32s({1, 2, 3})});
  check_grads(f, {uniform({3}, 1, -1.0, -0.1), i32s({1, 2, 3})});
  auto loss = [&](const ts::Array& x) { return ts::sum(f({x, i32s({1, 2, 3})})); };
  EXPECT_EQ(vals(ts::grad(loss)(f64s({0.5, 0.5, 0.5}))), (std::vector<double>{1.0, 2.0, 3.0}));
  EXPECT_EQ(vals(ts::grad(loss)(f64s({-0.5, -0.5, -0.5}))), (std::vector<double>{0.0, 0.0, 0.0}));
  EXPECT_EQ(vals(ts::jit(ts::grad(loss))(f64s({-0.5, -0.5, -0.5}))), (std::vector<double>{0.0, 0.0, 0.0}));
}

TEST(Switch, GradientsMatchFiniteDifferencesForEachIndex) {
  auto f = [](const V& a) {
    std::vector<ArrayFn> b{[](const ts::Array& x) { return ts::exp(x); }, [](const ts::Array& x) { return x * x * x; },
                           [](const ts::Array& x) { return ts::cos(x) * x; }};
    return ts::switch_(a[1], b, a[0]);
  };
  for (int32_t k : {0, 1, 2, 9}) check_grads(f, {uniform({2, 2}, 3), i32(k)});
}

TEST(Cond, VmapWithAnUnbatchedPredicate) {
  auto f = [](const V& a) {
    return ts::cond(
        ts::sum(a[1]) > 0.0, [](const ts::Array& x) { return ts::sin(x); }, [](const ts::Array& x) { return x * 2.0; },
        a[0]);
  };
  ts::Array pos = f64s({1.0, 2.0}), neg = f64s({-1.0, 0.5});
  check_vmap(f, {mixed_rows(), pos}, {0, ts::none});
  check_vmap(f, {mixed_rows(), neg}, {0, ts::none});
  check_vmap(f, {mixed_rows(), neg}, {1, ts::none}, 1);
}

TEST(Cond, VmapWithABatchedPredicateSelectsPerExample) {
  check_vmap(sin_or_double_fn(), {mixed_rows()}, {0});
  check_vmap(sin_or_double_fn(), {ts::transpose(mixed_rows())}, {1}, 1);
  check_vmap(sin_or_double_fn(), {mixed_rows()}, {-2}, 1);
  // Predicate from one argument, operands from others (one unbatched, one along axis 1).
  auto g = [](const V& a) {
    return ts::cond(
        a[2] > 0.0, [](const ts::Array& x, const ts::Array& y) { return x * y; },
        [](const ts::Array& x, const ts::Array& y) { return x - y; }, a[0], a[1]);
  };
  check_vmap(g, {ts::transpose(mixed_rows()), f64s({1.0, 2.0, 3.0}), f64s({1.0, -1.0, -2.0, 3.0})}, {1, ts::none, 0});
  check_vmap(g, {ts::transpose(mixed_rows()), f64s({1.0, 2.0, 3.0}), f64s({1.0, -1.0, -2.0, 3.0})}, {1, ts::none, 0},
             1);
}

TEST(Switch, VmapWithBatchedIndicesIncludingOutOfRange) {
  auto f = [](const V& a) { return ts::switch_(a[1], three_branches(), a[0]); };
  check_vmap(f, {mixed_rows(), i32s({0, 1, 2, 7})}, {0, 0});
  check_vmap(f, {mixed_rows(), i32s({-3, 2, 1, 0})}, {0, 0}, 1);
  check_vmap(f, {mixed_rows(), i32(1)}, {0, ts::none});
}

TEST(Cond, VmapOfABranchClosingOverABatchedValue) {
  auto f = [](const V& a) {
    return ts::cond(
        ts::sum(a[0]) > 0.0, [&](const ts::Array& x) { return x * a[1]; }, [&](const ts::Array& x) { return x - a[1]; },
        a[0]);
  };
  check_vmap(f, {f64s({1.0, -2.0, 0.5}), mixed_rows()}, {ts::none, 0});
  check_vmap(f, {mixed_rows(), f64s({1.0, -2.0, 0.5})}, {0, ts::none}, 1);
}

TEST(Cond, JitOfVmapWithABatchedPredicate) {
  ts::Array x = mixed_rows();
  expect_close(ts::jit(ts::vmap(sin_or_double))(x), ts::vmap(sin_or_double)(x), 1e-15, "jit(vmap(cond))");
}

// ===================================== while_loop =====================================

ts::Array grow_until_ten(const ts::Array& x) {
  return ts::while_loop([](const ts::Array& v) { return ts::sum(v) < 10.0; }, [](const ts::Array& v) { return v * 1.5; },
                        x);
}

std::vector<double> grow_until_ten_ref(std::vector<double> v) {
  for (;;) {
    double s = 0;
    for (double e : v) s += e;
    if (!(s < 10.0)) return v;
    for (double& e : v) e *= 1.5;
  }
}

TEST(WhileLoop, RunsWhileThePredicateHolds) {
  ts::Array x = f64s({0.1, 0.2, 0.3});
  expect_close(grow_until_ten(x), f64s(grow_until_ten_ref({0.1, 0.2, 0.3})), 1e-14, "while");
  expect_close(ts::jit(grow_until_ten)(x), f64s(grow_until_ten_ref({0.1, 0.2, 0.3})), 1e-14, "jit while");
  // A carry that fails the predicate at once is returned unchanged.
  EXPECT_EQ(vals(grow_until_ten(f64s({20.0}))), (std::vector<double>{20.0}));
}

TEST(WhileLoop, TreeCarryWithACounterAndAClosedOverBound) {
  using C = std::tuple<ts::Array, ts::Array>;
  auto f = [](const ts::Array& x, const ts::Array& n) {
    C r = ts::while_loop([&](const C& c) { return std::get<0>(c) < n; },
                         [](const C& c) { return C(std::get<0>(c) + 1, std::get<1>(c) * 0.5 + 1.0); }, C(i32(0), x));
    return std::get<1>(r) + ts::astype(std::get<0>(r), ts::f64);
  };
  auto ref = [](double x, int n) {
    for (int i = 0; i < n; ++i) x = x * 0.5 + 1.0;
    return x + n;
  };
  auto jf = ts::jit(f);
  for (int n : {0, 1, 4}) {
    EXPECT_NEAR(f(ts::Array(3.0).astype(ts::f64), i32(n)).item<double>(), ref(3.0, n), 1e-14) << n;
    EXPECT_NEAR(jf(ts::Array(ts::Scalar(3.0)), i32(n)).item<double>(), ref(3.0, n), 1e-14) << "jit " << n;
  }
  EXPECT_EQ(jf.cache_size(), 1u);  // the trip count is a run-time value
}

Fn while_fn() {
  // Four steps counted by an int carry; the body closes over a[1].
  return [](const V& a) {
    using C = std::pair<ts::Array, ts::Array>;
    C r = ts::while_loop([](const C& c) { return c.first < 4; },
                         [&](const C& c) { return C(c.first + 1, ts::sin(c.second) * a[1] + c.second); }, C(i32(0), a[0]));
    return r.second;
  };
}

TEST(WhileLoop, ForwardModeMatchesFiniteDifferences) {
  check_jvp_fd(while_fn(), {uniform({3}, 4), uniform({3}, 5)});
  // The trip count depends on the carried values (locally constant away from the threshold).
  check_jvp_fd([](const V& a) { return grow_until_ten(a[0]); }, {f64s({0.1, 0.2, 0.33})});
}

TEST(WhileLoop, ForwardModeWithAPredicateClosingOverADifferentiatedValue) {
  // The limit is a float the predicate closes over; its tangent does not reach the carry.
  auto f = [](const V& a) {
    return ts::while_loop([&](const ts::Array& v) { return ts::sum(v) < a[1]; },
                          [&](const ts::Array& v) { return v * 1.5 + a[1] * 0.01; }, a[0]);
  };
  check_jvp_fd(f, {f64s({0.1, 0.2, 0.33}), scalar_of(10.0)});
  check_vmap(f, {f64s({0.1, 0.2, 0.33}), f64s({1.0, 5.0, 10.0, 0.1})}, {ts::none, 0});
}

TEST(WhileLoop, VmapWithAnUnbatchedPredicate) {
  check_vmap(while_fn(), {mixed_rows(), f64s({0.5, 1.0, -0.5})}, {0, ts::none});
  check_vmap(while_fn(), {f64s({0.5, 1.0, -0.5}), mixed_rows()}, {ts::none, 0});
  check_vmap(while_fn(), {ts::transpose(mixed_rows()), mixed_rows()}, {1, 0}, 1);
}

TEST(WhileLoop, VmapWithABatchedPredicateHasPerExampleTripCounts) {
  ts::Array x = f64s({0.1, 0.2, 0.3, 1.0, 2.0, 3.0, 11.0, 0.0, 0.0, 0.01, 0.01, 0.01}, {4, 3});  // 7, 1, 0, 11 trips
  check_vmap([](const V& a) { return grow_until_ten(a[0]); }, {x}, {0});
  check_vmap([](const V& a) { return grow_until_ten(a[0]); }, {ts::transpose(x)}, {1}, 1);
  // A per-example bound on a counter: in_axes none for the value, 0 for the bound.
  auto f = [](const V& a) {
    using C = std::pair<ts::Array, ts::Array>;
    return ts::while_loop([&](const C& c) { return c.first < a[1]; },
                          [](const C& c) { return C(c.first + 1, c.second * 2.0 + 1.0); }, C(i32(0), a[0]))
        .second;
  };
  check_vmap(f, {f64s({1.0, -1.0}), i32s({0, 1, 3, 5})}, {ts::none, 0});
  check_vmap(f, {mixed_rows(), i32s({0, 1, 3, 5})}, {0, 0}, 1);
}

TEST(WhileLoop, JitOfVmapWithABatchedPredicate) {
  ts::Array x = f64s({0.1, 0.2, 0.3, 1.0, 2.0, 3.0, 11.0, 0.0, 0.0}, {3, 3});
  expect_close(ts::jit(ts::vmap(grow_until_ten))(x), ts::vmap(grow_until_ten)(x), 1e-15, "jit(vmap(while))");
}

TEST(WhileLoop, ForwardModeUnderVmapWithABatchedPredicate) {
  ts::Array x = f64s({0.1, 0.2, 0.3, 1.0, 2.0, 3.0}, {2, 3});
  auto tangent = [](const ts::Array& row) { return ts::jvp(grow_until_ten, row, ts::ones_like(row)).second; };
  ts::Array got = ts::vmap(tangent)(x);
  // grow_until_ten multiplies by 1.5 per trip: the tangent of ones is 1.5^trips.
  std::vector<double> want;
  for (auto row : {std::vector<double>{0.1, 0.2, 0.3}, std::vector<double>{1.0, 2.0, 3.0}}) {
    double out = grow_until_ten_ref(row)[0] / row[0];
    for (int k = 0; k < 3; ++k) want.push_back(out);
  }
  expect_close(got, f64s(want, {2, 3}), 1e-12, "vmap(jvp(while))");
}

// ===================================== fori_loop ======================================

ts::Array fori_static(const ts::Array& x, int64_t lo, int64_t hi) {
  return ts::fori_loop(lo, hi, [](const ts::Array& i, const ts::Array& v) { return ts::sin(v) + i; }, x);
}
ts::Array fori_dynamic(const ts::Array& x, const ts::Array& lo, const ts::Array& hi) {
  return ts::fori_loop(lo, hi, [](const ts::Array& i, const ts::Array& v) { return ts::sin(v) + i; }, x);
}
std::vector<double> fori_ref(std::vector<double> v, int lo, int hi) {
  for (int i = lo; i < hi; ++i)
    for (double& e : v) e = std::sin(e) + i;
  return v;
}

TEST(ForiLoop, StaticAndDynamicBoundsGiveTheLoopResult) {
  ts::Array x = f64s({0.1, -0.7});
  for (auto [lo, hi] : {std::pair{0, 3}, std::pair{2, 5}, std::pair{5, 2}, std::pair{1, 1}}) {
    ts::Array want = f64s(fori_ref({0.1, -0.7}, lo, hi));
    expect_close(fori_static(x, lo, hi), want, 1e-14, "int bounds");
    expect_close(fori_dynamic(x, i32(lo), i32(hi)), want, 1e-14, "Array bounds");
    expect_close(ts::jit([&](const ts::Array& a) { return fori_static(a, lo, hi); })(x), want, 1e-14, "jit int bounds");
    expect_close(ts::jit(fori_dynamic)(x, i32(lo), i32(hi)), want, 1e-14, "jit Array bounds");
  }
}

TEST(ForiLoop, IntBoundsLowerToScanAndArrayBoundsToWhile) {
  ts::Array x = f64s({0.1});
  auto s = ts::make_program([](const ts::Array& a) { return fori_static(a, 0, 3); }, x).primitive_names();
  auto w = ts::make_program([](const ts::Array& a) { return fori_dynamic(a, i32(0), i32(3)); }, x).primitive_names();
  EXPECT_NE(std::find(s.begin(), s.end(), "scan"), s.end());
  EXPECT_NE(std::find(w.begin(), w.end(), "while"), w.end());
}

Fn fori_fn() {
  return [](const V& a) {
    return ts::fori_loop(
        0, 4, [&](const ts::Array& i, const ts::Array& v) { return ts::sin(v) * a[1] + v * ts::astype(i, ts::f64); }, a[0]);
  };
}

TEST(ForiLoop, IntBoundsAreDifferentiableInBothModes) {
  check_grads(fori_fn(), {uniform({3}, 6), uniform({3}, 7)});
  check_grads([](const V& a) { return fori_static(a[0], 2, 5); }, {uniform({2, 2}, 8)});
}

TEST(ForiLoop, ZeroTripsPassTheGradientThrough) {
  ts::Array x = f64s({0.3, -0.2});
  auto loss = [](const ts::Array& a) { return ts::sum(fori_static(a, 5, 2) * 3.0); };
  EXPECT_EQ(vals(ts::grad(loss)(x)), (std::vector<double>{3.0, 3.0}));
}

TEST(ForiLoop, ArrayBoundsAreForwardDifferentiable) {
  check_jvp_fd([](const V& a) { return fori_dynamic(a[0], a[1], a[2]); }, {uniform({3}, 9), i32(1), i32(4)});
}

TEST(ForiLoop, Vmap) {
  check_vmap(fori_fn(), {mixed_rows(), f64s({0.5, 1.0, -0.5})}, {0, ts::none});
  check_vmap(fori_fn(), {ts::transpose(mixed_rows()), mixed_rows()}, {1, 0}, 1);
  // Array bounds with a batched upper bound: per-example trip counts.
  auto f = [](const V& a) { return fori_dynamic(a[0], i32(0), a[1]); };
  check_vmap(f, {mixed_rows(), i32s({0, 1, 2, 4})}, {0, 0});
  check_vmap(f, {f64s({0.3, -0.2}), i32s({3, 0, 2})}, {ts::none, 0}, 1);
}

// Loop carries stay where the iterations write them: the first iteration reads the loop's
// operands in place, the iterations alternate between the results and one scratch set, and
// a carry the body keeps is never written. Copies that only move a value are counted
// (detail::value_copy_bytes): none per iteration.
namespace {
/// x' = 0.5 x + k + i for `trips` trips of a fori_loop with int bounds (a scan) or Array
/// bounds (a while loop), k carried unchanged; returns (x, k) and the bytes copied.
std::tuple<ts::Array, ts::Array, size_t> halving_loop(const ts::Array& x, const ts::Array& k, int trips, bool dynamic) {
  using Carry = std::pair<ts::Array, ts::Array>;
  auto body = [](const ts::Array& i, const Carry& c) {
    return Carry(c.first * 0.5 + c.second + ts::astype(i, ts::f64), c.second);
  };
  auto f = ts::jit([&](const ts::Array& a, const ts::Array& b) {
    return dynamic ? ts::fori_loop(i32(0), i32(trips), body, Carry(a, b)) : ts::fori_loop(0, trips, body, Carry(a, b));
  });
  f(x, k).first.block_until_ready();  // compiles the loop and its body
  const size_t before = tessel::detail::value_copy_bytes();
  auto [rx, rk] = f(x, k);
  rx.block_until_ready();
  rk.block_until_ready();
  return {rx, rk, tessel::detail::value_copy_bytes() - before};
}
}  // namespace

TEST(LoopCarry, NoCarryIsCopiedPerIterationAndAKeptCarryOnceAtTheEnd) {
  const ts::Array x = uniform({64, 256}, 31), k = uniform({64, 256}, 32);
  const size_t carry_bytes = size_t(x.nbytes());
  for (bool dynamic : {false, true})
    for (int trips : {0, 1, 2, 3, 10, 11}) {
      SCOPED_TRACE(std::string(dynamic ? "while" : "scan") + ", " + std::to_string(trips) + " trips");
      auto [rx, rk, copied] = halving_loop(x, k, trips, dynamic);
      ts::Array want = x;
      for (int i = 0; i < trips; ++i) want = want * 0.5 + k + double(i);
      expect_close(rx, want, 1e-12, "x");
      EXPECT_EQ(vals(rk), vals(k));
      if (trips == 0) continue;  // (the operands are the results: copied once)
      if (!dynamic) {
        // A scan knows its length: its last iteration writes the results; k moves once.
        EXPECT_EQ(copied, carry_bytes);
      } else {
        // A while loop's last iteration may have written the scratch set: at most one more
        // copy of x and of the index (the bound is kept, like k), never one per trip.
        EXPECT_GE(copied, carry_bytes + 4);
        EXPECT_LE(copied, 2 * carry_bytes + 12);
      }
    }
}

TEST(LoopCarry, SwappedAndNestedCarriesKeepTheirValues) {
  // (a, b) -> (b, a + b): each result of an iteration is read from the other carry.
  using Pair = std::pair<ts::Array, ts::Array>;
  const ts::Array a0 = uniform({8, 128}, 33), b0 = uniform({8, 128}, 34);
  for (int trips : {1, 2, 5}) {
    auto fib = ts::jit([&](const ts::Array& a, const ts::Array& b) {
      return ts::fori_loop(0, trips, [](const ts::Array&, const Pair& c) { return Pair(c.second, c.first + c.second); },
                           Pair(a, b));
    });
    ts::Array wa = a0, wb = b0;
    for (int i = 0; i < trips; ++i) std::tie(wa, wb) = std::pair(wb, wa + wb);
    auto [ra, rb] = fib(a0, b0);
    expect_close(ra, wa, 1e-12, "a");
    expect_close(rb, wb, 1e-12, "b");
  }
  // A scan inside a while loop: the inner loop's operands are the outer iteration's buffers.
  auto nested = ts::jit([](const ts::Array& x) {
    return ts::fori_loop(i32(0), i32(3), [](const ts::Array&, const ts::Array& v) {
      return ts::fori_loop(0, 2, [](const ts::Array&, const ts::Array& w) { return w * 0.5 + 1.0; }, v);
    }, x);
  });
  ts::Array want = a0;
  for (int i = 0; i < 6; ++i) want = want * 0.5 + 1.0;
  expect_close(nested(a0), want, 1e-12, "nested");
}

// ======================================== scan ========================================

using Step = std::pair<ts::Array, ts::Array>;

TEST(Scan, CarryXsAndYs) {
  // carry' = carry * x + 1, y = sin(carry) (the carry before the step).
  auto f = [](const ts::Array& c0, const ts::Array& xs) {
    return ts::scan([](const ts::Array& c, const ts::Array& x) { return Step(c * x + 1.0, ts::sin(c)); }, c0, xs);
  };
  ts::Array xs = f64s({0.5, -1.0, 2.0, 0.25});
  auto [c, ys] = f(ts::Array(ts::Scalar(1.0)), xs);
  double cr = 1.0;
  std::vector<double> yr;
  for (double x : {0.5, -1.0, 2.0, 0.25}) {
    yr.push_back(std::sin(cr));
    cr = cr * x + 1.0;
  }
  EXPECT_NEAR(c.item<double>(), cr, 1e-14);
  expect_close(ys, f64s(yr), 1e-14, "ys");
  auto [jc, jys] = ts::jit(f)(ts::Array(ts::Scalar(1.0)), xs);
  EXPECT_NEAR(jc.item<double>(), cr, 1e-14);
  expect_close(jys, f64s(yr), 1e-14, "jit ys");
}

TEST(Scan, TreeCarryAndTreeYsOverRowsOfAMatrix) {
  using C = std::pair<ts::Array, ts::Array>;
  auto f = [](const C& init, const ts::Array& xs) {
    return ts::scan(
        [](const C& c, const ts::Array& row) {
          C next(c.second, c.first + c.second * row);
          return std::make_pair(next, std::make_tuple(c.first * 2.0, ts::sum(row)));
        },
        init, xs);
  };
  C init(f64s({1.0, 0.0}), f64s({0.0, 1.0}));
  ts::Array xs = f64s({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}, {3, 2});
  for (bool use_jit : {false, true}) {
    auto [c, ys] = use_jit ? ts::jit(f)(init, xs) : f(init, xs);
    double a[2] = {1, 0}, b[2] = {0, 1}, m[3][2] = {{1, 2}, {3, 4}, {5, 6}};
    std::vector<double> y0, y1;
    for (int k = 0; k < 3; ++k) {
      double na[2], nb[2];
      for (int j = 0; j < 2; ++j) y0.push_back(a[j] * 2), na[j] = b[j], nb[j] = a[j] + b[j] * m[k][j];
      y1.push_back(m[k][0] + m[k][1]);
      std::copy(na, na + 2, a), std::copy(nb, nb + 2, b);
    }
    expect_close(c.first, f64s({a[0], a[1]}), 1e-14, "carry.first");
    expect_close(c.second, f64s({b[0], b[1]}), 1e-14, "carry.second");
    expect_close(std::get<0>(ys), f64s(y0, {3, 2}), 1e-14, "ys 0");
    expect_close(std::get<1>(ys), f64s(y1), 1e-14, "ys 1");
  }
}

// The carries go back and forth between the result's buffers and one spare set, the first
// step reading the operands: every length (odd and even) gives the loop's values, with
// carries swapped, passed through unchanged and updated, and the operands stay as they were.
TEST(Scan, CarriesSwappedPassedThroughAndUpdatedAtEveryLength) {
  using C = std::tuple<ts::Array, ts::Array, ts::Array>;
  for (int64_t length : {1, 2, 3, 4, 7}) {
    auto f = [length](const C& init) {
      return ts::scan(
          [](const C& c, const std::nullopt_t&) {
            const auto& [a, b, k] = c;
            return std::make_pair(C(b, a, k + b), a);
          },
          init, ts::none, {.length = length});
    };
    const C init(f64s({1.0, 2.0}), f64s({10.0, 20.0}), f64s({0.5, 0.25}));
    for (bool use_jit : {false, true}) {
      auto [c, ys] = use_jit ? ts::jit(f)(init) : f(init);
      double a[2] = {1, 2}, b[2] = {10, 20}, k[2] = {0.5, 0.25};
      std::vector<double> y;
      for (int64_t s = 0; s < length; ++s)
        for (int j = 0; j < 2; ++j) y.push_back(a[j]), k[j] += b[j], std::swap(a[j], b[j]);
      const std::string what = "length " + std::to_string(length) + (use_jit ? ", jit" : "");
      EXPECT_EQ(vals(std::get<0>(c)), (std::vector<double>{a[0], a[1]})) << what;
      EXPECT_EQ(vals(std::get<1>(c)), (std::vector<double>{b[0], b[1]})) << what;
      EXPECT_EQ(vals(std::get<2>(c)), (std::vector<double>{k[0], k[1]})) << what;
      EXPECT_EQ(vals(ys), y) << what;
      EXPECT_EQ(vals(std::get<0>(init)), (std::vector<double>{1.0, 2.0})) << what;
      EXPECT_EQ(vals(std::get<2>(init)), (std::vector<double>{0.5, 0.25})) << what;
    }
  }
}

TEST(Scan, ReverseVisitsXsBackwardsAndKeepsYsInOrder) {
  auto f = [](const ts::Array& xs) {
    return ts::scan([](const ts::Array& c, const ts::Array& x) { return Step(c * 0.5 + x, c * 0.5 + x); },
                    ts::Array(ts::Scalar(0.0)), xs, {.reverse = true});
  };
  std::vector<double> x{1.0, 2.0, 3.0, 4.0}, y(4);
  double c = 0;
  for (int i = 3; i >= 0; --i) y[size_t(i)] = c = c * 0.5 + x[size_t(i)];
  auto [cc, ys] = f(f64s(x));
  EXPECT_NEAR(cc.item<double>(), c, 1e-14);
  expect_close(ys, f64s(y), 1e-14, "reverse ys");
  auto [jc, jys] = ts::jit(f)(f64s(x));
  EXPECT_NEAR(jc.item<double>(), c, 1e-14);
  expect_close(jys, f64s(y), 1e-14, "jit reverse ys");
}

TEST(Scan, LengthWithoutXs) {
  auto f = [](const ts::Array& c0) {
    return ts::scan([](const ts::Array& c, const std::nullopt_t&) { return Step(c * 3.0, c); }, c0, ts::none,
                    {.length = 4});
  };
  ts::Array c0 = f64s({1.0, 2.0});
  for (bool use_jit : {false, true}) {
    auto [c, ys] = use_jit ? ts::jit(f)(c0) : f(c0);
    EXPECT_EQ(vals(c), (std::vector<double>{81.0, 162.0}));
    EXPECT_EQ(ys.shape(), (ts::Shape{4, 2}));
    EXPECT_EQ(vals(ys), (std::vector<double>{1, 2, 3, 6, 9, 18, 27, 54}));
  }
}

TEST(Scan, ZeroLengthReturnsTheInitAndEmptyYs) {
  auto f = [](const ts::Array& c0, const ts::Array& xs) {
    return ts::scan([](const ts::Array& c, const ts::Array& x) { return Step(c + x, c * x); }, c0, xs);
  };
  ts::Array c0 = f64s({1.0, 2.0});
  for (bool use_jit : {false, true}) {
    auto [c, ys] = use_jit ? ts::jit(f)(c0, ts::zeros({0, 2}, ts::f64)) : f(c0, ts::zeros({0, 2}, ts::f64));
    EXPECT_EQ(vals(c), (std::vector<double>{1.0, 2.0}));
    EXPECT_EQ(ys.shape(), (ts::Shape{0, 2}));
  }
  auto [c, ys] = ts::scan([](const ts::Array& k, const std::nullopt_t&) { return Step(k + 1.0, k); }, c0, ts::none,
                          {.length = 0});
  EXPECT_EQ(vals(c), (std::vector<double>{1.0, 2.0}));
  EXPECT_EQ(ys.shape(), (ts::Shape{0, 2}));
  // Gradients through an empty scan: the carry passes straight through, xs get nothing.
  auto g = ts::grad([&](const ts::Array& k) { return ts::sum(f(k, ts::zeros({0, 2}, ts::f64)).first); })(c0);
  EXPECT_EQ(vals(g), (std::vector<double>{1.0, 1.0}));
}

Fn scan_fn(bool reverse) {
  // Carry, xs, ys and a closed-over value a[2].
  return [reverse](const V& a) {
    auto [c, ys] = ts::scan(
        [&](const ts::Array& c, const ts::Array& x) { return Step(ts::sin(c) * x + a[2], c * x * x); }, a[0], a[1],
        {.reverse = reverse});
    return c + ts::sum(ys, {0});
  };
}

TEST(Scan, GradientsMatchFiniteDifferences) {
  V args{uniform({2}, 10), uniform({5, 2}, 11), uniform({2}, 12)};
  check_grads(scan_fn(false), args);
  check_grads(scan_fn(true), args);
  // A tree carry, and no xs.
  check_grads(
      [](const V& a) {
        using C = std::pair<ts::Array, ts::Array>;
        auto [c, ys] = ts::scan(
            [](const C& c, const std::nullopt_t&) {
              return std::make_pair(C(c.second * 0.9, ts::sin(c.first) + c.second), ts::cos(c.first));
            },
            C(a[0], a[1]), ts::none, {.length = 3});
        return c.first * c.second + ys[{2}];
      },
      {uniform({3}, 13), uniform({3}, 14)});
}

TEST(Scan, Vmap) {
  V args{uniform({4, 2}, 15), uniform({4, 5, 2}, 16), uniform({2}, 17)};
  check_vmap(scan_fn(false), args, {0, 0, ts::none});
  check_vmap(scan_fn(true), args, {0, 0, ts::none}, 1);
  // Only the carry batched; only the xs batched (along axis 1); only the closed-over value.
  check_vmap(scan_fn(false), {uniform({4, 2}, 15), uniform({5, 2}, 16), uniform({2}, 17)}, {0, ts::none, ts::none});
  check_vmap(scan_fn(false), {uniform({2}, 15), uniform({5, 4, 2}, 16), uniform({2}, 17)}, {ts::none, 1, ts::none}, 1);
  check_vmap(scan_fn(false), {uniform({2}, 15), uniform({5, 2}, 16), uniform({2, 3}, 17)}, {ts::none, ts::none, 1});
  // The ys as the output, mapped to axis 1.
  auto ys_only = [](const V& a) {
    return ts::scan([](const ts::Array& c, const ts::Array& x) { return Step(c + x, c * x); }, a[0], a[1]).second;
  };
  check_vmap(ys_only, {uniform({3, 2}, 18), uniform({4, 2}, 19)}, {0, ts::none}, 1);
}

TEST(Scan, VmapOfAZeroLengthScan) {
  auto f = [](const V& a) {
    auto [c, ys] = ts::scan([](const ts::Array& c, const ts::Array& x) { return Step(c + x, c * x); }, a[0], a[1]);
    return c + ts::sum(ys, {0});
  };
  check_vmap(f, {uniform({3, 2}, 1), ts::zeros({0, 2}, ts::f64)}, {0, ts::none});
  check_vmap(f, {uniform({2}, 1), ts::zeros({0, 3, 2}, ts::f64)}, {ts::none, 1}, 1);
}

TEST(Scan, LinearScanTransposesToAReverseScan) {
  // A running sum is linear in xs: its transpose is the reverse running sum.
  auto running = [](const ts::Array& xs) {
    return ts::scan([](const ts::Array& c, const ts::Array& x) { return Step(c + x, c + x); }, ts::zeros({}, ts::f64),
                    xs)
        .second;
  };
  ts::Array xs = f64s({1.0, 2.0, 3.0, 4.0});
  EXPECT_EQ(vals(running(xs)), (std::vector<double>{1.0, 3.0, 6.0, 10.0}));
  ts::Array ct = f64s({1.0, 10.0, 100.0, 1000.0});
  EXPECT_EQ(vals(ts::linear_transpose(running, xs)(ct)), (std::vector<double>{1111.0, 1110.0, 1100.0, 1000.0}));
  auto [y, f_jvp] = ts::linearize(running, xs);
  EXPECT_EQ(vals(f_jvp(ct)), (std::vector<double>{1.0, 11.0, 111.0, 1111.0}));
}

TEST(Scan, ValueAndGradWithAux) {
  auto f = [](const ts::Array& xs) {
    auto [c, ys] = ts::scan([](const ts::Array& c, const ts::Array& x) { return Step(c * x, c); }, scalar_one(), xs);
    return std::make_pair(c, ys);
  };
  ts::Array xs = f64s({2.0, 3.0, 4.0});
  auto [value, g] = ts::value_and_grad(f, {.has_aux = true})(xs);
  EXPECT_DOUBLE_EQ(value.first.item<double>(), 24.0);
  EXPECT_EQ(vals(value.second), (std::vector<double>{1.0, 2.0, 6.0}));
  EXPECT_EQ(vals(g), (std::vector<double>{12.0, 8.0, 6.0}));
  auto [jv, jg] = ts::jit(ts::value_and_grad(f, {.has_aux = true}))(xs);
  EXPECT_EQ(vals(jg), (std::vector<double>{12.0, 8.0, 6.0}));
  EXPECT_EQ(vals(jv.second), (std::vector<double>{1.0, 2.0, 6.0}));
}

TEST(Scan, IntegerXsAndCarryAreHeldFixed) {
  // Scanning over int indices with an int step counter in the carry.
  auto f = [](const V& a) {
    using C = std::pair<ts::Array, ts::Array>;
    return ts::scan(
               [&](const C& c, const ts::Array& k) {
                 ts::Array w = ts::astype(k + c.first, ts::f64);
                 return std::make_pair(C(c.first + 1, ts::sin(c.second) * w + a[1]), c.second);
               },
               C(i32(0), a[0]), a[2])
        .first.second;
  };
  check_grads(f, {uniform({2}, 30), uniform({2}, 31), i32s({3, 1, 2})});
  check_vmap(f, {uniform({3, 2}, 30), uniform({2}, 31), i32s({3, 1, 2})}, {0, ts::none, ts::none});
  check_vmap(f, {uniform({2}, 30), uniform({2}, 31), ts::reshape(i32s({3, 1, 2, 0, 5, 4}), {3, 2})},
             {ts::none, ts::none, 1}, 1);
}

TEST(Scan, JitOfGradAndOfVmap) {
  V args{uniform({2}, 20), uniform({5, 2}, 21), uniform({2}, 22)};
  auto loss = [](const V& a) { return ts::sum(scan_fn(false)(a)); };
  V g = ts::grad(loss)(args), jg = ts::jit(ts::grad(loss))(args);
  for (size_t i = 0; i < g.size(); ++i) expect_close(jg[i], g[i], 1e-13, "jit(grad(scan))");
  auto h = [](const ts::Array& c0, const ts::Array& xs) { return scan_fn(false)({c0, xs, ts::ones({2}, ts::f64)}); };
  ts::Array c0 = uniform({3, 2}, 23), xs = uniform({3, 5, 2}, 24);
  expect_close(ts::jit(ts::vmap(h))(c0, xs), ts::vmap(h)(c0, xs), 1e-14, "jit(vmap(scan))");
}

}  // namespace
