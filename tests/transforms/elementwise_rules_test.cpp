// Transformation rules of the element-wise primitives (src/ops/elementwise.cpp and the
// element-wise primitives of convert.cpp and random.cpp): jvp against finite differences,
// vjp against jvp (transpose rules), second derivatives against hand formulas, and vmap
// against a loop, for every primitive.
#include <cmath>
#include <numbers>

#include "transforms/check_transforms.h"

namespace {
using namespace transform_testing;
using V = std::vector<ts::Array>;

/// An operation under test: f over its arguments and the interval each argument is drawn from.
struct OpCase {
  std::string name;
  Fn f;
  std::vector<std::pair<double, double>> domain;  // one per argument
};
std::string case_name(const testing::TestParamInfo<OpCase>& info) { return info.param.name; }
void PrintTo(const OpCase& c, std::ostream* os) { *os << c.name; }

OpCase unary(std::string name, ts::Array (*op)(const ts::Array&), double lo = -1, double hi = 1) {
  return {std::move(name), [op](const V& a) { return op(a[0]); }, {{lo, hi}}};
}
OpCase binary(std::string name, ts::Array (*op)(const ts::Array&, const ts::Array&), std::pair<double, double> da = {-1, 1},
              std::pair<double, double> db = {-1, 1}) {
  return {std::move(name), [op](const V& a) { return op(a[0], a[1]); }, {da, db}};
}

// ---- differentiable operations: check_grads (float64) ----

std::vector<OpCase> differentiable_unary() {
  return {
      unary("negative", ts::negative),
      unary("abs", ts::abs),
      unary("exp", ts::exp),
      unary("exp2", ts::exp2),
      unary("expm1", ts::expm1),
      unary("log", ts::log, 0.5, 2),
      unary("log1p", ts::log1p, -0.5, 1),
      unary("sqrt", ts::sqrt, 0.5, 2),
      unary("rsqrt", ts::rsqrt, 0.5, 2),
      unary("cbrt", ts::cbrt, 0.5, 2),
      unary("sin", ts::sin),
      unary("cos", ts::cos),
      unary("tan", ts::tan),
      unary("arcsin", ts::arcsin, -0.8, 0.8),
      unary("arccos", ts::arccos, -0.8, 0.8),
      unary("arctan", ts::arctan, -2, 2),
      unary("sinh", ts::sinh),
      unary("cosh", ts::cosh),
      unary("tanh", ts::tanh),
      unary("arcsinh", ts::arcsinh, -2, 2),
      unary("arccosh", ts::arccosh, 1.5, 3),
      unary("arctanh", ts::arctanh, -0.8, 0.8),
      unary("erf", ts::erf),
      unary("erfc", ts::erfc),
      unary("logistic", ts::logistic, -3, 3),
      unary("erf_inv", ts::erf_inv, -0.8, 0.8),
      unary("square", ts::square),
      unary("reciprocal", ts::reciprocal, 0.5, 2),
      {"pow_by_integer_constant", [](const V& a) { return ts::pow(a[0], ts::Array(3)); }, {{-1, 1}}},
      {"convert_to_c128_and_back", [](const V& a) { return ts::real(ts::astype(a[0], ts::c128) * 2.0); }, {{-1, 1}}},
  };
}

std::vector<OpCase> differentiable_binary() {
  return {
      binary("add", ts::add),
      binary("subtract", ts::subtract),
      binary("multiply", ts::multiply),
      binary("divide", ts::divide, {-1, 1}, {0.5, 2}),
      binary("pow", ts::pow, {0.5, 2}, {-1.5, 1.5}),
      binary("maximum", ts::maximum),
      binary("minimum", ts::minimum),
      binary("atan2", ts::atan2, {0.2, 1}, {-1, 1}),
      // a / b stays strictly between 2 and 3, away from the jumps of rem.
      binary("rem", ts::rem, {2.2, 2.8}, {1.0, 1.05}),
      {"complex_parts",
       [](const V& a) {
         ts::Array z = ts::complex(a[0], a[1]), w = ts::complex(a[1], a[0] * 2.0);
         return ts::real(z * w) + ts::imag(ts::conj(z) * w) + ts::abs(z);
       },
       {{0.2, 1}, {0.2, 1}}},
      {"where", [](const V& a) { return ts::where(a[0] > 0.0, a[0] * 3.0, a[1]); }, {{-1, 1}, {-1, 1}}},
  };
}

ts::Array draw(const ts::Shape& shape, uint32_t seed, std::pair<double, double> d, ts::DType dtype = ts::f64) {
  return uniform(shape, seed, d.first, d.second, dtype);
}

class UnaryGrad : public testing::TestWithParam<OpCase> {};

TEST_P(UnaryGrad, JvpMatchesFiniteDifferencesAndVjpMatchesJvp) {
  const OpCase& c = GetParam();
  check_grads(c.f, {draw({3, 4}, 1, c.domain[0])});
}

TEST_P(UnaryGrad, NonContiguousOperand) {
  const OpCase& c = GetParam();
  check_grads([&](const V& a) { return c.f({ts::transpose(a[0])}); }, {draw({4, 3}, 2, c.domain[0])});
}

TEST_P(UnaryGrad, RankZeroOperand) {
  const OpCase& c = GetParam();
  check_grads(c.f, {draw({}, 3, c.domain[0])});
}

TEST_P(UnaryGrad, TangentsAndCotangentsKeepLowPrecisionDtypes) {
  const OpCase& c = GetParam();
  for (ts::DType d : {ts::f32, ts::f16, ts::bf16}) {
    ts::Array x = draw({4}, 4, c.domain[0], d);
    auto [y, t] = ts::jvp([&](const ts::Array& z) { return c.f({z}); }, x, ts::ones_like(x));
    EXPECT_EQ(t.dtype(), y.dtype()) << ts::dtype_name(d);
    auto [y2, pullback] = ts::vjp([&](const V& z) { return c.f(z); }, V{x});
    EXPECT_EQ(pullback(ts::ones_like(y2))[0].dtype(), d);
  }
}

INSTANTIATE_TEST_SUITE_P(ElementwiseRules, UnaryGrad, testing::ValuesIn(differentiable_unary()), case_name);

class BinaryGrad : public testing::TestWithParam<OpCase> {};

TEST_P(BinaryGrad, JvpMatchesFiniteDifferencesAndVjpMatchesJvp) {
  const OpCase& c = GetParam();
  check_grads(c.f, {draw({3, 4}, 1, c.domain[0]), draw({3, 4}, 2, c.domain[1])});
}

TEST_P(BinaryGrad, NonContiguousOperands) {
  const OpCase& c = GetParam();
  check_grads([&](const V& a) { return c.f({ts::transpose(a[0]), ts::slice(a[1], {0, 1}, {3, 5})}); },
              {draw({4, 3}, 3, c.domain[0]), draw({3, 6}, 4, c.domain[1])});
}

TEST_P(BinaryGrad, RankZeroFirstOperandBroadcasts) {
  const OpCase& c = GetParam();
  check_grads(c.f, {draw({}, 5, c.domain[0]), draw({3, 4}, 6, c.domain[1])});
}

TEST_P(BinaryGrad, RankZeroSecondOperandBroadcasts) {
  const OpCase& c = GetParam();
  check_grads(c.f, {draw({3, 4}, 7, c.domain[0]), draw({}, 8, c.domain[1])});
}

TEST_P(BinaryGrad, OnlyOneOperandDifferentiated) {
  const OpCase& c = GetParam();
  ts::Array b = draw({3, 4}, 10, c.domain[1]);
  check_grads([&](const V& a) { return c.f({a[0], b}); }, {draw({3, 4}, 9, c.domain[0])});
  ts::Array a = draw({3, 4}, 11, c.domain[0]);
  check_grads([&](const V& x) { return c.f({a, x[0]}); }, {draw({3, 4}, 12, c.domain[1])});
}

TEST_P(BinaryGrad, VmapOfGradMatchesLoop) {
  const OpCase& c = GetParam();
  auto g = [&](const V& a) {
    return ts::grad<0, 1>([&](const ts::Array& x, const ts::Array& y) { return ts::sum(c.f({x, y})); })(a[0], a[1]);
  };
  check_vmap([&](const V& a) { return std::get<0>(g(a)) + std::get<1>(g(a)) * 3.0; },
             {draw({2, 3}, 13, c.domain[0]), draw({2}, 14, c.domain[1])}, {1, ts::none}, 1);
}

INSTANTIATE_TEST_SUITE_P(ElementwiseRules, BinaryGrad, testing::ValuesIn(differentiable_binary()), case_name);

// ---- specific rules ----

ts::Array scalar(double v) { return ts::Array(ts::Scalar(v, ts::f64)); }
double value(const ts::Array& x) { return x.astype(ts::f64).to_vector<double>().at(0); }

TEST(ElementwiseRules, PiecewiseConstantOpsHaveZeroGradient) {
  auto f = [](const ts::Array& x) {
    ts::Array flags = ts::astype(x > 0.1, ts::f64) + ts::astype(ts::less_equal(x, x * 2.0), ts::f64) +
                      ts::astype(ts::isfinite(x), ts::f64);
    return ts::sum(ts::floor(x) + ts::ceil(x) + ts::round(x) + ts::sign(x) + flags);
  };
  ts::Array x = uniform({5}, 1, -3, 3);
  expect_close(ts::grad(f)(x), ts::zeros({5}, ts::f64), 0, "grad");
  auto [y, t] = ts::jvp(f, x, ts::ones({5}, ts::f64));
  EXPECT_EQ(value(t), 0.0);
}

TEST(ElementwiseRules, MaximumSplitsTheGradientOnTies) {
  ts::Array a = ts::Array(std::vector<double>{1, 2, 3}), b = ts::Array(std::vector<double>{1, 5, 0});
  auto [ga, gb] = ts::grad<0, 1>([](const ts::Array& x, const ts::Array& y) { return ts::sum(ts::maximum(x, y)); })(a, b);
  expect_close(ga, ts::Array(std::vector<double>{0.5, 0, 1}), 0, "d/da");
  expect_close(gb, ts::Array(std::vector<double>{0.5, 1, 0}), 0, "d/db");
  ts::Array gmin = ts::grad([&](const ts::Array& x) { return ts::sum(ts::minimum(x, b)); })(a);
  expect_close(gmin, ts::Array(std::vector<double>{0.5, 1, 0}), 0, "d min/da");
}

TEST(ElementwiseRules, PowGradientWithRespectToExponentIsZeroSafeAtZeroBase) {
  // d/dy 0^y = log(0) * 0 would be NaN; JAX's rule replaces the zero base, giving 0.
  ts::Array g = ts::grad([](const ts::Array& y) { return ts::pow(scalar(0.0), y); })(scalar(2.0));
  EXPECT_EQ(value(g), 0.0);
}

TEST(ElementwiseRules, AbsGradientIsOneAtZero) {
  // JAX: select(x >= 0, t, -t).
  ts::Array g = ts::grad([](const ts::Array& x) { return ts::sum(ts::abs(x)); })(
      ts::Array(std::vector<double>{-2, 0, 3}));
  expect_close(g, ts::Array(std::vector<double>{-1, 1, 1}), 0, "grad abs");
}

TEST(ElementwiseRules, RemGradientIsMinusTruncatedQuotientForDivisor) {
  auto [ga, gb] = ts::grad<0, 1>([](const ts::Array& a, const ts::Array& b) { return ts::rem(a, b); })(scalar(-7.5),
                                                                                                        scalar(2.0));
  EXPECT_EQ(value(ga), 1.0);
  EXPECT_EQ(value(gb), 3.0);  // -trunc(-3.75)
}

TEST(ElementwiseRules, ConvertToIntegerHasZeroTangentAndToFloatConvertsIt) {
  auto f = [](const ts::Array& x) { return ts::sum(ts::astype(ts::astype(x, ts::i32), ts::f64) + ts::astype(x, ts::f32)); };
  ts::Array g = ts::grad(f)(uniform({4}, 3, -5, 5));
  expect_close(g, ts::ones({4}, ts::f64), 0, "grad");
  EXPECT_EQ(g.dtype(), ts::f64);
}

TEST(ElementwiseRules, ConvertGradientsThroughFloat32) {
  check_grads([](const V& a) { return ts::astype(ts::sin(ts::astype(a[0], ts::f32)), ts::f64); }, {uniform({3}, 4)},
              1e-3, 1e-2);
}

// ---- second derivatives ----

TEST(ElementwiseRules, SecondDerivativesMatchFormulas) {
  static constexpr double x0 = 0.7, y0 = 1.3;
  auto d2 = [](auto f, double x) { return value(ts::grad(ts::grad(f))(scalar(x))); };
  EXPECT_NEAR(d2([](const ts::Array& x) { return ts::sin(x); }, x0), -std::sin(x0), 1e-12);
  EXPECT_NEAR(d2([](const ts::Array& x) { return ts::exp(x * 2.0); }, x0), 4 * std::exp(2 * x0), 1e-12);
  EXPECT_NEAR(d2([](const ts::Array& x) { return x * x * x; }, x0), 6 * x0, 1e-12);
  EXPECT_NEAR(d2([](const ts::Array& x) { return ts::pow(x, scalar(y0)); }, x0),
              y0 * (y0 - 1) * std::pow(x0, y0 - 2), 1e-12);
  EXPECT_NEAR(d2([](const ts::Array& y) { return ts::pow(scalar(x0), y); }, y0),
              std::pow(std::log(x0), 2) * std::pow(x0, y0), 1e-12);
  EXPECT_NEAR(d2([](const ts::Array& x) { return ts::logistic(x); }, x0),
              [&] {
                double s = 1 / (1 + std::exp(-x0));
                return s * (1 - s) * (1 - 2 * s);
              }(),
              1e-12);
  // Mixed partial d/dy d/dx x^y = x^(y-1) (1 + y log x).
  auto dxy = ts::grad([](const ts::Array& y) {
    return ts::grad([&](const ts::Array& x) { return ts::pow(x, y); })(scalar(x0));
  })(scalar(y0));
  EXPECT_NEAR(value(dxy), std::pow(x0, y0 - 1) * (1 + y0 * std::log(x0)), 1e-12);
  // d2/da db (a * b) = 1.
  auto dab = ts::grad([](const ts::Array& b) {
    return ts::grad([&](const ts::Array& a) { return a * b; })(scalar(x0));
  })(scalar(y0));
  EXPECT_NEAR(value(dab), 1.0, 1e-12);
}

// ---- complex numbers: holomorphic jvp, JAX's transpose convention ----

ts::Array complex_draw(const ts::Shape& shape, uint32_t seed, double lo, double hi) {
  return ts::complex(uniform(shape, seed, lo, hi), uniform(shape, seed + 100, lo, hi));
}
void expect_complex_close(const ts::Array& got, const ts::Array& want, double tol, const std::string& what) {
  expect_close(ts::real(got), ts::real(want), tol, what + " (real part)");
  expect_close(ts::imag(got), ts::imag(want), tol, what + " (imaginary part)");
}

class HolomorphicRules : public testing::TestWithParam<OpCase> {};

TEST_P(HolomorphicRules, JvpMatchesComplexFiniteDifferencesAndVjpIsUnconjugated) {
  const OpCase& c = GetParam();
  const double eps = 1e-6;
  ts::Array z = complex_draw({5}, 1, c.domain[0].first, c.domain[0].second);
  ts::Array t = complex_draw({5}, 2, -1, 1);
  auto f = [&](const ts::Array& x) { return c.f({x}); };
  auto [y, jt] = ts::jvp(f, z, t);
  ts::Array fd = (f(z + t * eps) - f(z - t * eps)) / (2 * eps);
  expect_complex_close(jt, fd, 1e-6, "jvp vs finite differences");
  // Holomorphic element-wise f: vjp(ct) = ct * f'(z) = jvp(ct), with no conjugation (JAX).
  auto [y2, pullback] = ts::vjp([&](const V& x) { return f(x[0]); }, V{z});
  expect_complex_close(pullback(t)[0], jt, 1e-12, "vjp vs jvp");
}

INSTANTIATE_TEST_SUITE_P(
    ElementwiseRules, HolomorphicRules,
    testing::Values(unary("sin", ts::sin, 0.2, 1), unary("exp", ts::exp, 0.2, 1), unary("log", ts::log, 0.5, 2),
                    unary("sqrt", ts::sqrt, 0.5, 2), unary("tanh", ts::tanh, 0.2, 1),
                    unary("reciprocal", ts::reciprocal, 0.5, 2), unary("logistic", ts::logistic, 0.2, 1),
                    OpCase{"mul_div_by_constant",
                           [](const V& a) {
                             ts::Array c = ts::complex(scalar(0.5), scalar(-2.0));
                             return (a[0] * c - c) / c * a[0];
                           },
                           {{0.2, 1}}},
                    OpCase{"pow", [](const V& a) { return ts::pow(a[0], ts::complex(scalar(1.5), scalar(0.5))); },
                           {{0.5, 2}}}),
    case_name);

// ---- vmap: every primitive, several in_axes, float32 and int32 ----

struct VmapLayout {
  std::string name;
  std::vector<ts::Shape> shapes;
  std::vector<ts::AxisSpec> in_axes;
  int64_t out_axis;
};

std::vector<VmapLayout> unary_layouts() {
  return {{"axis0", {{2, 3, 4}}, {0}, 0}, {"middle_axis", {{3, 2, 4}}, {1}, 1}, {"last_axis", {{3, 4, 2}}, {-1}, 2},
          {"scalar_examples", {{5}}, {0}, 0}};
}
std::vector<VmapLayout> binary_layouts() {
  return {{"both_axis0", {{2, 3, 4}, {2, 3, 4}}, {0, 0}, 0},
          {"middle_and_unbatched", {{3, 2, 4}, {3, 4}}, {1, ts::none}, 1},
          {"unbatched_and_last", {{3, 4}, {3, 4, 2}}, {ts::none, -1}, 2},
          {"different_axes", {{2, 3, 4}, {3, 4, 2}}, {0, 2}, 1},
          {"scalar_examples_broadcast", {{2}, {3, 4, 2}}, {0, 2}, 0},
          {"unbatched_rank0", {{}, {2, 3}}, {ts::none, 0}, 1},
          {"batched_and_unbatched_rank0", {{2, 3}, {}}, {1, ts::none}, 0}};
}

/// An operation over one dtype, with its argument intervals.
struct VmapCase {
  std::string name;
  Fn f;
  ts::DType dtype;
  std::vector<std::pair<double, double>> domain;
};
void PrintTo(const VmapCase& c, std::ostream* os) { *os << c.name; }
void PrintTo(const VmapLayout& l, std::ostream* os) { *os << l.name; }

std::vector<VmapCase> vmap_unary_cases() {
  std::vector<VmapCase> cs;
  auto add = [&](OpCase c, std::vector<ts::DType> dtypes) {
    for (ts::DType d : dtypes) cs.push_back({c.name + "_" + std::string(ts::dtype_name(d)), c.f, d, c.domain});
  };
  for (auto& c : differentiable_unary())
    add(c, c.name == "negative" || c.name == "abs" || c.name == "square" ? std::vector{ts::f32, ts::i32}
                                                                          : std::vector{ts::f32});
  add(unary("sign", ts::sign, -3, 3), {ts::f32, ts::i32});
  add(unary("floor", ts::floor, -3, 3), {ts::f32});
  add(unary("ceil", ts::ceil, -3, 3), {ts::f32});
  add(unary("round", ts::round, -3, 3), {ts::f32});
  add(unary("isfinite", ts::isfinite), {ts::f32});
  add(unary("bitwise_not", ts::bitwise_not, -9, 9), {ts::i32});
  add({"logical_not", [](const V& a) { return ts::logical_not(a[0] > 0); }, {{-1, 1}}}, {ts::f32});
  add({"real_imag_conj_complex",
       [](const V& a) {
         ts::Array z = ts::conj(ts::complex(a[0], a[0] * 2.0f));
         return ts::real(z) * 3.0f + ts::imag(z);
       },
       {{-1, 1}}},
      {ts::f32});
  add({"convert_element_type", [](const V& a) { return ts::astype(a[0], ts::f64); }, {{-9, 9}}}, {ts::f32, ts::i32});
  add({"bitcast_convert_type", [](const V& a) { return ts::bitcast_convert_type(a[0], ts::i32); }, {{-9, 9}}},
      {ts::f32});
  return cs;
}

std::vector<VmapCase> vmap_binary_cases() {
  std::vector<VmapCase> cs;
  auto add = [&](OpCase c, std::vector<ts::DType> dtypes) {
    for (ts::DType d : dtypes) cs.push_back({c.name + "_" + std::string(ts::dtype_name(d)), c.f, d, c.domain});
  };
  for (auto& c : differentiable_binary())
    add(c, c.name == "add" || c.name == "subtract" || c.name == "multiply" || c.name == "maximum" ||
                   c.name == "minimum" || c.name == "rem" || c.name == "where"
               ? std::vector{ts::f32, ts::i32}
               : std::vector{ts::f32});
  add(binary("divide_integers", [](const ts::Array& a, const ts::Array& b) { return ts::floor_divide(a, b); }, {-9, 9},
             {1, 4}),
      {ts::i32});
  add(binary("pow_integers", ts::pow, {-4, 4}, {0, 4}), {ts::i32});
  for (auto [name, op] : std::vector<std::pair<std::string, ts::Array (*)(const ts::Array&, const ts::Array&)>>{
           {"equal", ts::equal},
           {"not_equal", ts::not_equal},
           {"less", ts::less},
           {"less_equal", ts::less_equal},
           {"greater", ts::greater},
           {"greater_equal", ts::greater_equal}})
    add(binary(name, op, {-2, 2}, {-2, 2}), {ts::f32, ts::i32});
  for (auto [name, op] : std::vector<std::pair<std::string, ts::Array (*)(const ts::Array&, const ts::Array&)>>{
           {"bitwise_and", ts::bitwise_and}, {"bitwise_or", ts::bitwise_or}, {"bitwise_xor", ts::bitwise_xor}})
    add(binary(name, op, {-9, 9}, {-9, 9}), {ts::i32});
  for (auto [name, op] : std::vector<std::pair<std::string, ts::Array (*)(const ts::Array&, const ts::Array&)>>{
           {"logical_and", ts::logical_and}, {"logical_or", ts::logical_or}, {"logical_xor", ts::logical_xor}})
    add({name, [op](const V& a) { return op(a[0] > 0, a[1] > 0); }, {{-1, 1}, {-1, 1}}}, {ts::f32});
  add(binary("left_shift", ts::left_shift, {-9, 9}, {0, 8}), {ts::i32});
  add(binary("right_shift", ts::right_shift, {-99, 99}, {0, 8}), {ts::i32});
  return cs;
}

using VmapParam = std::tuple<VmapCase, VmapLayout>;
std::string vmap_name(const testing::TestParamInfo<VmapParam>& info) {
  return std::get<0>(info.param).name + "_" + std::get<1>(info.param).name;
}

class ElementwiseVmap : public testing::TestWithParam<VmapParam> {};

TEST_P(ElementwiseVmap, MatchesLoop) {
  const auto& [c, layout] = GetParam();
  std::vector<ts::Array> args;
  for (size_t i = 0; i < layout.shapes.size(); ++i) {
    auto [lo, hi] = c.domain[i];
    if (ts::is_integer(c.dtype)) lo *= 5, hi *= 5;  // spread integers beyond {-1, 0, 1}
    args.push_back(uniform(layout.shapes[i], uint32_t(i + 1), lo, hi, c.dtype));
  }
  check_vmap(c.f, args, layout.in_axes, layout.out_axis);
}

INSTANTIATE_TEST_SUITE_P(Unary, ElementwiseVmap,
                         testing::Combine(testing::ValuesIn(vmap_unary_cases()), testing::ValuesIn(unary_layouts())),
                         vmap_name);
INSTANTIATE_TEST_SUITE_P(Binary, ElementwiseVmap,
                         testing::Combine(testing::ValuesIn(vmap_binary_cases()), testing::ValuesIn(binary_layouts())),
                         vmap_name);

TEST(ElementwiseVmapSelect, PredicateBatchedOrNotRankZeroOrNot) {
  // where(pred, a, b) with each of the three batched or not, and rank-0 predicates.
  ts::Array p = uniform({2, 3}, 1), a = uniform({2, 3}, 2), b = uniform({3}, 3);
  auto f = [](const V& x) { return ts::where(x[0] > 0.0, x[1], x[2]); };
  check_vmap(f, {p, a, b}, {0, 0, ts::none}, 1);
  check_vmap(f, {p, a, b}, {1, 1, 0}, 0);
  check_vmap(f, {uniform({3}, 4), a, b}, {ts::none, 0, ts::none}, 0);
  check_vmap(f, {uniform({2}, 5), a, b}, {0, 0, ts::none}, 1);          // per-example rank-0 predicate
  check_vmap(f, {uniform({2}, 6), scalar(1.0), scalar(-1.0)}, {0, ts::none, ts::none}, 0);
  check_vmap(f, {scalar(0.5), a, uniform({2}, 10)}, {ts::none, 1, ts::none}, 0);  // unbatched rank-0 predicate
  check_vmap(f, {uniform({2}, 7), uniform({2}, 8), uniform({3}, 9)}, {0, 0, ts::none}, 1);  // rank-0 cases
}

TEST(ElementwiseVmapRandom, Threefry2x32BatchesAnyOperand) {
  auto u32 = [](const ts::Shape& s, uint32_t seed) { return uniform(s, seed, 0, 4e9).astype(ts::u32); };
  auto f = [](const V& x) {
    auto [o0, o1] = ts::random::threefry2x32(x[0], x[1], x[2], ts::Array(ts::Scalar(uint32_t(7))));
    return ts::bitwise_xor(o0, o1);
  };
  check_vmap(f, {u32({3}, 1), u32({}, 2), u32({3, 4}, 3)}, {0, ts::none, 0}, 0);
  check_vmap(f, {u32({}, 1), u32({3}, 2), u32({4, 3}, 3)}, {ts::none, 0, 1}, 1);
  check_vmap(f, {u32({3}, 1), u32({3}, 2), u32({4}, 3)}, {0, 0, ts::none}, 0);
  check_vmap(f, {u32({3}, 1), u32({}, 2), u32({}, 3)}, {0, ts::none, ts::none}, 0);
}

TEST(ElementwiseVmapRandom, ErfInvAndBitcastBatch) {
  check_vmap([](const V& x) { return ts::erf_inv(x[0]); }, {uniform({3, 2}, 1, -0.9, 0.9)}, {1}, 0);
  check_vmap([](const V& x) { return ts::bitcast_convert_type(x[0], ts::f64); },
             {uniform({2, 3}, 2, 0, 9, ts::i32).astype(ts::i64)}, {-1}, 1);
}

}  // namespace
