// Transformation rules of the reductions (reduce_sum/prod/max/min/and/or, argmax/argmin), the
// cumulative ops (cumsum/prod/max/min) and the jax.numpy functions composed of them (mean,
// var): jvp against finite differences, vjp against jvp, vmap against a loop.
#include <limits>

#include "transforms/check_transforms.h"

namespace {
using namespace transform_testing;
using V = std::vector<ts::Array>;

/// A reduction or scan of one array along the given axes (scans use the first).
struct UnaryCase {
  const char* name;
  std::function<ts::Array(const ts::Array&, const ts::Axes&)> f;
};

std::string case_name(const testing::TestParamInfo<UnaryCase>& info) { return info.param.name; }
void PrintTo(const UnaryCase& c, std::ostream* os) { *os << c.name; }

// Float reductions whose jvp is checked numerically (distinct values avoid max/min ties).
const UnaryCase kFloatReductions[] = {
    {"sum", [](const ts::Array& x, const ts::Axes& a) { return ts::sum(x, a); }},
    {"sum_keepdims", [](const ts::Array& x, const ts::Axes& a) { return ts::sum(x, a, true); }},
    {"prod", [](const ts::Array& x, const ts::Axes& a) { return ts::prod(x, a); }},
    {"max", [](const ts::Array& x, const ts::Axes& a) { return ts::max(x, a); }},
    {"min", [](const ts::Array& x, const ts::Axes& a) { return ts::min(x, a); }},
    {"mean", [](const ts::Array& x, const ts::Axes& a) { return ts::mean(x, a); }},
    {"var", [](const ts::Array& x, const ts::Axes& a) { return ts::var(x, a); }},
    {"var_keepdims", [](const ts::Array& x, const ts::Axes& a) { return ts::var(x, a, true); }},
};

const UnaryCase kScans[] = {
    {"cumsum", [](const ts::Array& x, const ts::Axes& a) { return ts::cumsum(x, a[0]); }},
    {"cumsum_reverse", [](const ts::Array& x, const ts::Axes& a) { return ts::cumsum(x, a[0], true); }},
    {"cumprod", [](const ts::Array& x, const ts::Axes& a) { return ts::cumprod(x, a[0]); }},
    {"cumprod_reverse", [](const ts::Array& x, const ts::Axes& a) { return ts::cumprod(x, a[0], true); }},
    {"cummax", [](const ts::Array& x, const ts::Axes& a) { return ts::cummax(x, a[0]); }},
    {"cummax_reverse", [](const ts::Array& x, const ts::Axes& a) { return ts::cummax(x, a[0], true); }},
    {"cummin", [](const ts::Array& x, const ts::Axes& a) { return ts::cummin(x, a[0]); }},
    {"cummin_reverse", [](const ts::Array& x, const ts::Axes& a) { return ts::cummin(x, a[0], true); }},
};

// The axes each reduction is checked over (empty = all).
const ts::Axes kReduceAxes[] = {{}, {0}, {1}, {2}, {0, 2}, {-1, 1}};

class FloatReductionRules : public testing::TestWithParam<UnaryCase> {};

TEST_P(FloatReductionRules, JvpAndVjpMatchFiniteDifferencesOverAxes) {
  const auto& c = GetParam();
  const ts::Array x = uniform({3, 4, 5}, 11, 0.5, 1.5);
  for (const auto& axes : kReduceAxes) {
    SCOPED_TRACE("axes " + ts::shape_to_string(axes));
    check_grads([&](const V& a) { return c.f(a[0], axes); }, {x});
  }
}

TEST_P(FloatReductionRules, DifferentiatesNonContiguousAndBroadcastOperands) {
  const auto& c = GetParam();
  // A transposed operand, a slice with a stride, and a broadcast one.
  check_grads([&](const V& a) { return c.f(ts::transpose(a[0], ts::Axes{2, 0, 1}), {0, 1}); },
              {uniform({3, 4, 5}, 12, 0.5, 1.5)});
  check_grads([&](const V& a) { return c.f(ts::slice(a[0], {0, 1}, {6, 5}, {2, 2}), {1}); },
              {uniform({6, 5}, 13, 0.5, 1.5)});
  check_grads([&](const V& a) { return c.f(ts::broadcast_to(a[0], {3, 4}), {0}); }, {uniform({4}, 14, 0.5, 1.5)});
}

TEST_P(FloatReductionRules, VmapMatchesLoopForEachBatchAxis) {
  const auto& c = GetParam();
  // float64: batched and looped sums may add in different orders (f32 would differ in the
  // last bit); integer and float32 max/min are covered by IndexReductionRules.
  {
    const ts::Array x = uniform({3, 4, 5}, 15, -1, 1);
    // Examples are rank 2.
    for (const ts::Axes& axes : {ts::Axes{}, ts::Axes{0}, ts::Axes{1}, ts::Axes{-1}, ts::Axes{0, 1}})
      for (int64_t in : {0, 1, 2, -1})
        for (int64_t out : {0, 1}) {
          const bool keeps = std::string(c.name).find("keepdims") != std::string::npos;
          const int64_t out_rank = keeps ? 2 : axes.empty() ? 0 : 2 - int64_t(axes.size());
          if (out > out_rank) continue;
          SCOPED_TRACE("axes " + ts::shape_to_string(axes) + " in_axis " + std::to_string(in) + " out_axis " +
                       std::to_string(out));
          check_vmap([&](const V& a) { return c.f(a[0], axes); }, {x}, {in}, out);
        }
  }
}

INSTANTIATE_TEST_SUITE_P(Reductions, FloatReductionRules, testing::ValuesIn(kFloatReductions), case_name);

class ScanRules : public testing::TestWithParam<UnaryCase> {};

TEST_P(ScanRules, JvpAndVjpMatchFiniteDifferencesAlongEachAxis) {
  const auto& c = GetParam();
  const ts::Array x = uniform({3, 6, 4}, 21, 0.5, 1.5);
  for (int64_t axis : {0, 1, 2, -1}) {
    SCOPED_TRACE("axis " + std::to_string(axis));
    check_grads([&](const V& a) { return c.f(a[0], {axis}); }, {x});
  }
  // Long axes (more doubling steps than a power of two) and a non-contiguous operand.
  check_grads([&](const V& a) { return c.f(a[0], {0}); }, {uniform({13}, 22, 0.5, 1.5)});
  check_grads([&](const V& a) { return c.f(ts::transpose(a[0]), {1}); }, {uniform({7, 3}, 23, 0.5, 1.5)});
}

TEST_P(ScanRules, VmapMatchesLoopForEachBatchAxis) {
  const auto& c = GetParam();
  for (ts::DType dt : {ts::i32, ts::f32}) {
    const ts::Array x = uniform({3, 4, 5}, 24, -3, 3).astype(dt);
    for (int64_t axis : {0, 1, -1})
      for (int64_t in : {0, 1, 2, -1})
        for (int64_t out : {0, 2}) {
          SCOPED_TRACE("axis " + std::to_string(axis) + " in_axis " + std::to_string(in) + " out_axis " +
                       std::to_string(out));
          check_vmap([&](const V& a) { return c.f(a[0], {axis}); }, {x}, {in}, out);
        }
  }
}

INSTANTIATE_TEST_SUITE_P(Scans, ScanRules, testing::ValuesIn(kScans), case_name);

// ---- hand-derived derivatives ----

ts::Array vec(std::vector<double> v) { return ts::Array(v, {int64_t(v.size())}); }

TEST(ReductionRules, ProdGradientIsExactWithZeros) {
  auto f = [](const ts::Array& x) { return ts::prod(x); };
  // d/dx_i prod(x) = product of the others.
  expect_close(ts::grad(f)(vec({2, 0, 3, 5})), vec({0, 30, 0, 0}), 1e-15, "one zero");
  expect_close(ts::grad(f)(vec({0, 4, 0, 5})), vec({0, 0, 0, 0}), 1e-15, "two zeros");
  expect_close(ts::grad(f)(vec({2, 3, 4, 5, 7})), vec({420, 280, 210, 168, 120}), 1e-13, "no zero, odd length");
  // Along one axis of a matrix with a zero in one row.
  auto g = [](const ts::Array& x) { return ts::sum(ts::prod(x, {1})); };
  ts::Array m = ts::Array(std::vector<double>{1, 0, 2, 3, 4, 5}, {2, 3});
  expect_close(ts::grad(g)(m), ts::Array(std::vector<double>{0, 2, 0, 20, 15, 12}, {2, 3}), 1e-14, "rows");
  check_grads([](const V& a) { return ts::prod(a[0], {0}); }, {ts::Array(std::vector<double>{1, 0, 2, 0, 3, 1}, {3, 2})});
}

TEST(ReductionRules, ProdHessianMatchesFormula) {
  // d2 prod(x) / dx_i dx_j = prod(x) / (x_i x_j) off the diagonal, 0 on it: second-order
  // differentiation through the pairwise product jvp, also with a zero in x.
  auto f = [](const ts::Array& x) { return ts::prod(x); };
  expect_close(ts::hessian(f)(vec({2, 3, 4})),
               ts::Array(std::vector<double>{0, 4, 3, 4, 0, 2, 3, 2, 0}, {3, 3}), 1e-14, "no zero");
  expect_close(ts::hessian(f)(vec({2, 0, 4})),
               ts::Array(std::vector<double>{0, 4, 0, 4, 0, 2, 0, 2, 0}, {3, 3}), 1e-14, "a zero");
}

TEST(ReductionRules, MaxAndMinGradientsAverageOverTies) {
  expect_close(ts::grad([](const ts::Array& x) { return ts::max(x); })(vec({1, 3, 2, 3})), vec({0, 0.5, 0, 0.5}),
               1e-15, "max");
  expect_close(ts::grad([](const ts::Array& x) { return ts::min(x); })(vec({1, 3, 1, 1})),
               vec({1. / 3, 0, 1. / 3, 1. / 3}), 1e-15, "min");
  // Per row of a matrix.
  auto rows = [](const ts::Array& x) { return ts::sum(ts::max(x, {1})); };
  expect_close(ts::grad(rows)(ts::Array(std::vector<double>{4, 1, 4, 0, 2, 1}, {2, 3})),
               ts::Array(std::vector<double>{0.5, 0, 0.5, 0, 1, 0}, {2, 3}), 1e-15, "rows");
}

TEST(ReductionRules, MeanAndVarGradientsMatchFormulas) {
  const ts::Array x = vec({1, 2, 4, 7});
  expect_close(ts::grad([](const ts::Array& a) { return ts::mean(a); })(x), vec({0.25, 0.25, 0.25, 0.25}), 1e-15,
               "mean");
  // d var / dx_i = 2 (x_i - mean) / n, mean = 3.5.
  expect_close(ts::grad([](const ts::Array& a) { return ts::var(a); })(x), vec({-1.25, -0.75, 0.25, 1.75}), 1e-14,
               "var");
}

TEST(ReductionRules, SumSecondDerivativeMatchesFormula) {
  // f = sum(x^3): grad = 3 x^2, and the gradient of sum(grad) is 6 x.
  auto f = [](const ts::Array& x) { return ts::sum(x * x * x); };
  auto g = [&](const ts::Array& x) { return ts::sum(ts::grad(f)(x)); };
  const ts::Array x = vec({1, -2, 0.5});
  expect_close(ts::grad(f)(x), vec({3, 12, 0.75}), 1e-14, "grad");
  expect_close(ts::grad(g)(x), vec({6, -12, 3}), 1e-14, "grad of grad");
  // Hessian of sum(x)^2 is all twos: grad of grad through reduce_sum's transpose.
  ts::Array h = ts::hessian([](const ts::Array& a) { return ts::sum(a) * ts::sum(a); })(x);
  expect_close(h, ts::full({3, 3}, 2.0), 1e-14, "hessian");
}

TEST(ReductionRules, MaxSecondDerivativeIsZeroAwayFromTies) {
  auto f = [](const ts::Array& x) { return ts::max(x * x); };
  auto g = [&](const ts::Array& x) { return ts::sum(ts::grad(f)(x)); };
  // max(x^2) at x = -3: grad 2x = -6 there; d/dx of that is 2.
  expect_close(ts::grad(g)(vec({1, -3, 2})), vec({0, 2, 0}), 1e-14, "grad of grad");
}

TEST(ScanRules, CumprodGradientIsExactWithZeros) {
  // f = sum(cumprod(x)) for x = (2, 0, 3): cumprod = (2, 0, 0); df/dx0 = 1 + x1 + x1 x2 = 1,
  // df/dx1 = x0 + x0 x2 = 8, df/dx2 = x0 x1 = 0.
  auto f = [](const ts::Array& x) { return ts::sum(ts::cumprod(x, 0)); };
  expect_close(ts::grad(f)(vec({2, 0, 3})), vec({1, 8, 0}), 1e-15, "forward");
  auto r = [](const ts::Array& x) { return ts::sum(ts::cumprod(x, 0, true)); };
  // Reverse: cumprod = (0, 0, 3); df/dx0 = x1 x2 = 0, df/dx1 = x2 + x0 x2 = 9, df/dx2 = 1 + x1 + x0 x1 = 1.
  expect_close(ts::grad(r)(vec({2, 0, 3})), vec({0, 9, 1}), 1e-15, "reverse");
  check_grads([](const V& a) { return ts::cumprod(a[0], 0); }, {vec({1.5, 0, 2, 0, -1})});
}

TEST(ScanRules, CummaxTangentFollowsTheRunningMaximum) {
  // cummax((1, 3, 2, 5, 4)) = (1, 3, 3, 5, 5): the tangent comes from positions 0, 1, 1, 3, 3.
  const ts::Array x = vec({1, 3, 2, 5, 4}), t = vec({10, 20, 30, 40, 50});
  auto [y, dy] = ts::jvp([](const ts::Array& a) { return ts::cummax(a, 0); }, x, t);
  expect_close(dy, vec({10, 20, 20, 40, 40}), 0, "cummax");
  auto [y2, dy2] = ts::jvp([](const ts::Array& a) { return ts::cummin(a, 0, true); }, x, t);
  // reverse cummin = (1, 2, 2, 4, 4) from positions 0, 2, 2, 4, 4.
  expect_close(dy2, vec({10, 30, 30, 50, 50}), 0, "reverse cummin");
}

TEST(ScanRules, CumsumTransposeIsReverseCumsum) {
  // The vjp of cumsum maps a cotangent to its reversed cumulative sum.
  auto [y, pullback] = ts::vjp([](const ts::Array& a) { return ts::cumsum(a, 0); }, vec({1, 2, 3}));
  expect_close(pullback(vec({1, 10, 100})), vec({111, 110, 100}), 0, "pullback");
}

// ---- integer-valued reductions (batching only: their tangents are zero), and reductions
// that are exact in any order (batched over int32 and float32) ----

struct IndexCase {
  const char* name;
  std::function<ts::Array(const ts::Array&, int64_t)> f;
};

const IndexCase kIndexReductions[] = {
    {"argmax", [](const ts::Array& x, int64_t a) { return ts::argmax(x, a); }},
    {"argmin_keepdims", [](const ts::Array& x, int64_t a) { return ts::argmin(x, a, true); }},
    {"any", [](const ts::Array& x, int64_t a) { return ts::any(x > 0, {a}); }},
    {"all", [](const ts::Array& x, int64_t a) { return ts::all(x > -2, {a}); }},
    // reduce_and / reduce_or on integers (bitwise) through the primitive's batch rule.
    {"bitwise_any",
     [](const ts::Array& x, int64_t a) { return ts::any(ts::astype(x, ts::i32), {a}); }},
    {"sum_int", [](const ts::Array& x, int64_t a) { return ts::sum(ts::astype(x, ts::i8), {a}); }},
    {"prod_int", [](const ts::Array& x, int64_t a) { return ts::prod(ts::astype(x, ts::i32), {a}); }},
};

void PrintTo(const IndexCase& c, std::ostream* os) { *os << c.name; }

// max and min are exact in any order, so they are batched over float32 too.
const IndexCase kExactReductions[] = {
    {"max", [](const ts::Array& x, int64_t a) { return ts::max(x, {a}); }},
    {"min_keepdims", [](const ts::Array& x, int64_t a) { return ts::min(x, {a}, true); }},
};

void check_vmap_over_axes(const IndexCase& c) {
  for (ts::DType dt : {ts::i32, ts::f32}) {
    const ts::Array x = uniform({3, 4, 5}, 31, -3, 3).astype(dt);
    for (int64_t axis : {0, 1, -1})
      for (int64_t in : {0, 1, 2, -1})
        for (int64_t out : {0, 1}) {
          SCOPED_TRACE("axis " + std::to_string(axis) + " in_axis " + std::to_string(in) + " out_axis " +
                       std::to_string(out));
          check_vmap([&](const V& a) { return c.f(a[0], axis); }, {x}, {in}, out);
        }
  }
}

class IndexReductionRules : public testing::TestWithParam<IndexCase> {};
class ExactReductionRules : public testing::TestWithParam<IndexCase> {};

TEST_P(IndexReductionRules, VmapMatchesLoopForEachBatchAxis) { check_vmap_over_axes(GetParam()); }
TEST_P(ExactReductionRules, VmapMatchesLoopForEachBatchAxis) { check_vmap_over_axes(GetParam()); }

TEST_P(IndexReductionRules, HaveZeroDerivative) {
  const auto& c = GetParam();
  // The integer result is held constant: d/dx (sum(x) * result) = result's sum, broadcast.
  auto f = [&](const ts::Array& x) { return ts::sum(x) * ts::sum(ts::astype(c.f(x, 1), ts::f64)); };
  const ts::Array x = uniform({3, 4}, 32, -1, 1);
  const double k = ts::sum(ts::astype(c.f(x, 1), ts::f64)).item<double>();
  expect_close(ts::grad(f)(x), ts::full({3, 4}, k), 1e-14, "grad");
}

std::string index_case_name(const testing::TestParamInfo<IndexCase>& i) { return i.param.name; }
INSTANTIATE_TEST_SUITE_P(Reductions, IndexReductionRules, testing::ValuesIn(kIndexReductions), index_case_name);
INSTANTIATE_TEST_SUITE_P(Reductions, ExactReductionRules, testing::ValuesIn(kExactReductions), index_case_name);

}  // namespace

namespace {
// Complex numbers have no order, so cummax/cummin of complex operands cannot be
// differentiated: a clear error naming the op (cumprod of complex is fine).
TEST(ReductionRules, CumulativeMaxOfComplexRefusesDifferentiation) {
  transform_testing::ts::Array z = transform_testing::ts::complex(transform_testing::uniform({4}, 1),
                                                                  transform_testing::uniform({4}, 2));
  for (auto op : {&transform_testing::ts::cummax, &transform_testing::ts::cummin}) {
    try {
      transform_testing::ts::jvp([&](const transform_testing::ts::Array& x) { return op(x, 0, false); }, z, z);
      ADD_FAILURE() << "expected NotImplementedError";
    } catch (const transform_testing::ts::NotImplementedError& e) {
      EXPECT_NE(std::string(e.what()).find("complex"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("cum"), std::string::npos) << e.what();
    }
  }
  auto [y, t] = transform_testing::ts::jvp(
      [](const transform_testing::ts::Array& x) { return transform_testing::ts::cumprod(x, 0); }, z, z);
  // With tangent x itself, d cumprod = sum_j y_k t_j / x_j = (k + 1) y_k.
  namespace ts = transform_testing::ts;
  ts::Array want = y * (ts::arange(4).astype(ts::f64) + 1.0);
  transform_testing::expect_close(ts::real(t), ts::real(want), 1e-12, "cumprod jvp (real)");
  transform_testing::expect_close(ts::imag(t), ts::imag(want), 1e-12, "cumprod jvp (imag)");
}
}  // namespace
