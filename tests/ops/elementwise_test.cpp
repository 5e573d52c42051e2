// Element-wise operations: values against std:: math and hand-derived cases for every dtype,
// integer edge cases, NaN handling, complex numbers, broadcasting, weak types and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <limits>

#include "ir/primitive.h"
#include "ir/program.h"
#include "ir/trace.h"
#include "tessel/tessel.h"

namespace ts = tessel;
using ts::Array;
using c128 = std::complex<double>;

namespace {

Array arr(const std::vector<double>& v, ts::DType d) { return Array(v).astype(d); }
Array carr(const std::vector<c128>& v, ts::DType d) { return Array(v).astype(d); }
std::vector<double> vals(const Array& a) { return a.to_vector<double>(); }
std::vector<c128> cvals(const Array& a) { return a.to_vector<c128>(); }
std::vector<bool> bools(const Array& a) { return a.to_vector<bool>(); }

/// Relative tolerance for results rounded to `d` (a few units in the last place).
double rtol(ts::DType d) {
  switch (d) {
    case ts::f16: return 2e-3;
    case ts::bf16: return 1.6e-2;
    case ts::f32: case ts::c64: return 4e-6;
    default: return 1e-14;
  }
}

void expect_close(double got, double want, ts::DType d, const std::string& what) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << what << ": got " << got << ", want NaN";
  } else if (std::isinf(want)) {
    EXPECT_EQ(got, want) << what;
  } else {
    const double atol = d == ts::f16 ? 6e-8 : 1e-30;  // float16 underflows below its smallest subnormal
    EXPECT_LE(std::abs(got - want), atol + rtol(d) * std::abs(want)) << what << ": got " << got << ", want " << want;
  }
}

const ts::DType kFloatTypes[] = {ts::f16, ts::bf16, ts::f32, ts::f64};

// ---------------------------------------------------------------------------------------
// Real unary functions against std:: math, for every floating dtype.

struct UnaryCase {
  const char* name;
  Array (*fn)(const Array&);
  double (*ref)(double);
  std::vector<double> xs;
};

const UnaryCase kUnaryCases[] = {
    {"exp", ts::exp, [](double x) { return std::exp(x); }, {-3, -0.5, 0, 0.7, 2.5}},
    {"exp2", ts::exp2, [](double x) { return std::exp2(x); }, {-3, -0.5, 0, 0.7, 5}},
    {"expm1", ts::expm1, [](double x) { return std::expm1(x); }, {-1, -1e-3, 1e-5, 0.5, 3}},
    {"log", ts::log, [](double x) { return std::log(x); }, {0.1, 0.5, 1.5, 2.5, 100}},
    {"log1p", ts::log1p, [](double x) { return std::log1p(x); }, {-0.5, -1e-4, 1e-6, 0.5, 10}},
    {"log2", ts::log2, [](double x) { return std::log2(x); }, {0.1, 0.5, 3, 8, 100}},
    {"log10", ts::log10, [](double x) { return std::log10(x); }, {0.1, 0.5, 3, 1000, 12345}},
    {"sqrt", ts::sqrt, [](double x) { return std::sqrt(x); }, {0, 0.25, 2, 9, 1e4}},
    {"rsqrt", ts::rsqrt, [](double x) { return 1 / std::sqrt(x); }, {0.25, 2, 9, 1e4}},
    {"cbrt", ts::cbrt, [](double x) { return std::cbrt(x); }, {-8, -0.5, 0, 2, 27}},
    {"sin", ts::sin, [](double x) { return std::sin(x); }, {-3, -1, 0, 0.5, 1.2, 3}},
    {"cos", ts::cos, [](double x) { return std::cos(x); }, {-3, -1, 0, 0.5, 1.2, 3}},
    {"tan", ts::tan, [](double x) { return std::tan(x); }, {-1.2, -0.3, 0, 0.5, 1.2}},
    {"arcsin", ts::arcsin, [](double x) { return std::asin(x); }, {-0.9, -0.3, 0, 0.4, 0.95}},
    {"arccos", ts::arccos, [](double x) { return std::acos(x); }, {-0.9, -0.3, 0, 0.4, 0.95}},
    {"arctan", ts::arctan, [](double x) { return std::atan(x); }, {-3, -0.5, 0, 0.7, 2.5}},
    {"sinh", ts::sinh, [](double x) { return std::sinh(x); }, {-3, -0.5, 0.7, 2.5}},
    {"cosh", ts::cosh, [](double x) { return std::cosh(x); }, {-3, -0.5, 0, 0.7, 2.5}},
    {"tanh", ts::tanh, [](double x) { return std::tanh(x); }, {-3, -0.5, 0, 0.7, 2.5}},
    {"arcsinh", ts::arcsinh, [](double x) { return std::asinh(x); }, {-3, -0.5, 0, 0.7, 2.5}},
    {"arccosh", ts::arccosh, [](double x) { return std::acosh(x); }, {1, 1.5, 3, 10}},
    {"arctanh", ts::arctanh, [](double x) { return std::atanh(x); }, {-0.9, -0.3, 0, 0.4, 0.95}},
    {"erf", ts::erf, [](double x) { return std::erf(x); }, {-2, -0.5, 0, 0.3, 1.5}},
    {"erfc", ts::erfc, [](double x) { return std::erfc(x); }, {-2, -0.5, 0, 0.3, 1.5}},
    {"logistic", ts::logistic, [](double x) { return 1 / (1 + std::exp(-x)); }, {-50, -2, 0, 1, 30}},
    {"abs", ts::abs, [](double x) { return std::abs(x); }, {-2.5, -0.0, 0, 3}},
    {"negative", ts::negative, [](double x) { return -x; }, {-2.5, 0, 3}},
    {"sign", ts::sign, [](double x) { return double((x > 0) - (x < 0)); }, {-2, -0.0, 0, 3}},
    {"floor", ts::floor, [](double x) { return std::floor(x); }, {-2.5, -0.2, 0, 0.2, 2.5}},
    {"ceil", ts::ceil, [](double x) { return std::ceil(x); }, {-2.5, -0.2, 0, 0.2, 2.5}},
    {"round", ts::round, [](double x) { return std::nearbyint(x); },
     {-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49, 3.7, -3.7}},
    {"square", ts::square, [](double x) { return x * x; }, {-3, -0.5, 0, 1.5}},
    {"reciprocal", ts::reciprocal, [](double x) { return 1 / x; }, {-4, 0.5, 3, 8}},
};

class UnaryFloat : public ::testing::TestWithParam<std::tuple<int, ts::DType>> {};

TEST_P(UnaryFloat, MatchesStdMath) {
  const UnaryCase& c = kUnaryCases[std::get<0>(GetParam())];
  ts::DType d = std::get<1>(GetParam());
  Array x = arr(c.xs, d);
  Array y = c.fn(x);
  ASSERT_EQ(y.dtype(), d) << c.name;
  ASSERT_EQ(y.shape(), x.shape());
  auto in = vals(x), out = vals(y);  // the reference starts from the input as stored in d
  for (size_t i = 0; i < in.size(); ++i)
    expect_close(out[i], c.ref(in[i]), d, std::string(c.name) + "(" + std::to_string(in[i]) + ") " + ts::dtype_name(d));
}

INSTANTIATE_TEST_SUITE_P(Elementwise, UnaryFloat,
                         ::testing::Combine(::testing::Range(0, int(std::size(kUnaryCases))),
                                            ::testing::ValuesIn(kFloatTypes)),
                         [](const auto& info) {
                           return std::string(kUnaryCases[std::get<0>(info.param)].name) + "_" +
                                  ts::dtype_name(std::get<1>(info.param));
                         });

// ---------------------------------------------------------------------------------------
// Real binary functions against std:: math, for every floating dtype.

struct BinaryCase {
  const char* name;
  Array (*fn)(const Array&, const Array&);
  double (*ref)(double, double);
  std::vector<double> as, bs;
};

double py_mod(double a, double b) {
  double r = std::fmod(a, b);
  return r != 0 && (r < 0) != (b < 0) ? r + b : r;
}

const std::vector<double> kA = {7.5, -7.5, 7.5, -7.5, 5.25, 0.5};
const std::vector<double> kB = {2, 2, -2, -2, 0.5, 3};
const BinaryCase kBinaryCases[] = {
    {"add", ts::add, [](double a, double b) { return a + b; }, kA, kB},
    {"subtract", ts::subtract, [](double a, double b) { return a - b; }, kA, kB},
    {"multiply", ts::multiply, [](double a, double b) { return a * b; }, kA, kB},
    {"divide", ts::divide, [](double a, double b) { return a / b; }, kA, kB},
    {"rem", ts::rem, [](double a, double b) { return std::fmod(a, b); }, kA, kB},
    {"remainder", ts::remainder, py_mod, kA, kB},
    {"floor_divide", ts::floor_divide, [](double a, double b) { return std::floor(a / b); }, kA, kB},
    {"maximum", ts::maximum, [](double a, double b) { return std::max(a, b); }, kA, kB},
    {"minimum", ts::minimum, [](double a, double b) { return std::min(a, b); }, kA, kB},
    {"atan2", ts::atan2, [](double a, double b) { return std::atan2(a, b); }, kA, kB},
    {"pow", ts::pow, [](double a, double b) { return std::pow(a, b); }, {2.5, 0.5, 9, 3, 0, 0}, {1.5, -2, 0.5, 0, 0, 2}},
};

class BinaryFloat : public ::testing::TestWithParam<std::tuple<int, ts::DType>> {};

TEST_P(BinaryFloat, MatchesStdMath) {
  const BinaryCase& c = kBinaryCases[std::get<0>(GetParam())];
  ts::DType d = std::get<1>(GetParam());
  Array a = arr(c.as, d), b = arr(c.bs, d);
  Array y = c.fn(a, b);
  ASSERT_EQ(y.dtype(), d) << c.name;
  auto av = vals(a), bv = vals(b), out = vals(y);
  for (size_t i = 0; i < av.size(); ++i)
    expect_close(out[i], c.ref(av[i], bv[i]), d,
                 std::string(c.name) + "(" + std::to_string(av[i]) + ", " + std::to_string(bv[i]) + ") " +
                     ts::dtype_name(d));
}

INSTANTIATE_TEST_SUITE_P(Elementwise, BinaryFloat,
                         ::testing::Combine(::testing::Range(0, int(std::size(kBinaryCases))),
                                            ::testing::ValuesIn(kFloatTypes)),
                         [](const auto& info) {
                           return std::string(kBinaryCases[std::get<0>(info.param)].name) + "_" +
                                  ts::dtype_name(std::get<1>(info.param));
                         });

// ---------------------------------------------------------------------------------------
// Complex functions against std::complex<double>.

struct ComplexCase {
  const char* name;
  Array (*fn)(const Array&);
  c128 (*ref)(c128);
};

const ComplexCase kComplexCases[] = {
    {"exp", ts::exp, [](c128 z) { return std::exp(z); }},
    {"exp2", ts::exp2, [](c128 z) { return std::pow(c128(2), z); }},
    {"expm1", ts::expm1, [](c128 z) { return std::exp(z) - 1.0; }},
    {"log", ts::log, [](c128 z) { return std::log(z); }},
    {"log1p", ts::log1p, [](c128 z) { return std::log(1.0 + z); }},
    {"log10", ts::log10, [](c128 z) { return std::log10(z); }},
    {"sqrt", ts::sqrt, [](c128 z) { return std::sqrt(z); }},
    {"rsqrt", ts::rsqrt, [](c128 z) { return 1.0 / std::sqrt(z); }},
    {"sin", ts::sin, [](c128 z) { return std::sin(z); }},
    {"cos", ts::cos, [](c128 z) { return std::cos(z); }},
    {"tan", ts::tan, [](c128 z) { return std::tan(z); }},
    {"arcsin", ts::arcsin, [](c128 z) { return std::asin(z); }},
    {"arccos", ts::arccos, [](c128 z) { return std::acos(z); }},
    {"arctan", ts::arctan, [](c128 z) { return std::atan(z); }},
    {"sinh", ts::sinh, [](c128 z) { return std::sinh(z); }},
    {"cosh", ts::cosh, [](c128 z) { return std::cosh(z); }},
    {"tanh", ts::tanh, [](c128 z) { return std::tanh(z); }},
    {"arcsinh", ts::arcsinh, [](c128 z) { return std::asinh(z); }},
    {"arccosh", ts::arccosh, [](c128 z) { return std::acosh(z); }},
    {"arctanh", ts::arctanh, [](c128 z) { return std::atanh(z); }},
    {"logistic", ts::logistic, [](c128 z) { return 1.0 / (1.0 + std::exp(-z)); }},
    {"sign", ts::sign, [](c128 z) { return z / std::abs(z); }},
    {"negative", ts::negative, [](c128 z) { return -z; }},
    {"square", ts::square, [](c128 z) { return z * z; }},
    {"reciprocal", ts::reciprocal, [](c128 z) { return 1.0 / z; }},
    {"conj", ts::conj, [](c128 z) { return std::conj(z); }},
};

class ComplexUnary : public ::testing::TestWithParam<std::tuple<int, ts::DType>> {};

TEST_P(ComplexUnary, MatchesStdComplex) {
  const ComplexCase& c = kComplexCases[std::get<0>(GetParam())];
  ts::DType d = std::get<1>(GetParam());
  Array z = carr({{0.5, -1.2}, {-2, 0.3}, {0.3, 0.4}, {-0.7, -0.1}}, d);
  Array y = c.fn(z);
  ASSERT_EQ(y.dtype(), d) << c.name;
  auto in = cvals(z), out = cvals(y);
  for (size_t i = 0; i < in.size(); ++i) {
    c128 want = c.ref(in[i]);
    EXPECT_LE(std::abs(out[i] - want), 1e-300 + 4 * rtol(d) * std::abs(want))
        << c.name << in[i] << " " << ts::dtype_name(d) << ": got " << out[i] << ", want " << want;
  }
}

INSTANTIATE_TEST_SUITE_P(Elementwise, ComplexUnary,
                         ::testing::Combine(::testing::Range(0, int(std::size(kComplexCases))),
                                            ::testing::Values(ts::c64, ts::c128)),
                         [](const auto& info) {
                           return std::string(kComplexCases[std::get<0>(info.param)].name) + "_" +
                                  ts::dtype_name(std::get<1>(info.param));
                         });

TEST(Elementwise, ComplexExpm1AndLog1pAreAccurateNearZero) {
  Array z = carr({{1e-9, 2e-9}}, ts::c128);
  c128 e = cvals(ts::expm1(z))[0], l = cvals(ts::log1p(z))[0];
  // Series: expm1(z) = z + z^2/2, log1p(z) = z - z^2/2 (to well below double precision here).
  c128 zz(1e-9, 2e-9);
  EXPECT_LE(std::abs(e - (zz + zz * zz / 2.0)), 1e-24);
  EXPECT_LE(std::abs(l - (zz - zz * zz / 2.0)), 1e-24);
}

TEST(Elementwise, ComplexArithmeticAndPow) {
  for (ts::DType d : {ts::c64, ts::c128}) {
    Array a = carr({{1, 2}, {-0.5, 0.25}, {0, 0}}, d), b = carr({{3, -1}, {2, 0.5}, {0, 0}}, d);
    auto av = cvals(a), bv = cvals(b);
    auto sum = cvals(a + b), diff = cvals(a - b), prod = cvals(a * b), pw = cvals(ts::pow(a, b));
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_LE(std::abs(sum[i] - (av[i] + bv[i])), 1e-6);
      EXPECT_LE(std::abs(diff[i] - (av[i] - bv[i])), 1e-6);
      EXPECT_LE(std::abs(prod[i] - (av[i] * bv[i])), 1e-6);
      EXPECT_LE(std::abs(pw[i] - std::pow(av[i], bv[i])), 1e-5 * std::abs(std::pow(av[i], bv[i])));
    }
    EXPECT_EQ(pw[2], c128(1, 0)) << "0^0 is 1";
    auto q = cvals(a / b);
    EXPECT_LE(std::abs(q[0] - av[0] / bv[0]), 1e-6);
  }
}

TEST(Elementwise, ComplexAbsIsRealAndPartsRoundTrip) {
  for (ts::DType d : {ts::c64, ts::c128}) {
    Array z = carr({{3, -4}, {-1, 0.5}}, d);
    Array a = ts::abs(z);
    EXPECT_EQ(a.dtype(), ts::real_dtype(d));
    EXPECT_NEAR(vals(a)[0], 5.0, 1e-6);
    Array re = ts::real(z), im = ts::imag(z);
    EXPECT_EQ(re.dtype(), ts::real_dtype(d));
    EXPECT_EQ(vals(re), (std::vector<double>{3, -1}));
    EXPECT_EQ(vals(im), (std::vector<double>{-4, 0.5}));
    Array back = ts::complex(re, im);
    EXPECT_EQ(back.dtype(), d);
    EXPECT_EQ(cvals(back), cvals(z));
    EXPECT_EQ(cvals(ts::conj(z)), (std::vector<c128>{{3, 4}, {-1, -0.5}}));
  }
}

TEST(Elementwise, ComplexOfRealPartsPicksItsPrecision) {
  EXPECT_EQ(ts::complex(arr({1}, ts::f32), arr({2}, ts::f32)).dtype(), ts::c64);
  EXPECT_EQ(ts::complex(arr({1}, ts::f64), arr({2}, ts::f64)).dtype(), ts::c128);
  EXPECT_EQ(ts::complex(arr({1}, ts::f16), arr({2}, ts::bf16)).dtype(), ts::c64);
  EXPECT_EQ(ts::complex(arr({1}, ts::i64), arr({2}, ts::i64)).dtype(), ts::c128);
  Array z = ts::complex(arr({1, 2}, ts::i32), arr({-1}, ts::i16));
  EXPECT_EQ(z.dtype(), ts::c64);
  EXPECT_EQ(cvals(z), (std::vector<c128>{{1, -1}, {2, -1}}));
}

TEST(Elementwise, RealImagConjOfRealArrays) {
  Array x = arr({1.5, -2}, ts::f32);
  EXPECT_EQ(vals(ts::real(x)), vals(x));
  EXPECT_EQ(vals(ts::conj(x)), vals(x));
  Array im = ts::imag(x);
  EXPECT_EQ(im.dtype(), ts::f32);
  EXPECT_EQ(vals(im), (std::vector<double>{0, 0}));
}

TEST(Elementwise, ComplexMaximumIsLexicographic) {
  Array a = carr({{1, 5}, {2, -1}, {1, 1}}, ts::c64), b = carr({{2, 0}, {2, 3}, {1, 1}}, ts::c64);
  EXPECT_EQ(cvals(ts::maximum(a, b)), (std::vector<c128>{{2, 0}, {2, 3}, {1, 1}}));
  EXPECT_EQ(cvals(ts::minimum(a, b)), (std::vector<c128>{{1, 5}, {2, -1}, {1, 1}}));
}

TEST(Elementwise, ComplexComparisonsOnlyTestEquality) {
  Array a = carr({{1, 2}, {3, 4}}, ts::c128), b = carr({{1, 2}, {3, 5}}, ts::c128);
  EXPECT_EQ(bools(a == b), (std::vector<bool>{true, false}));
  EXPECT_EQ(bools(a != b), (std::vector<bool>{false, true}));
  EXPECT_THROW(a < b, ts::DTypeError);
  EXPECT_THROW(ts::greater_equal(a, b), ts::DTypeError);
}

// ---------------------------------------------------------------------------------------
// Every dtype: the operations that make sense for all of them.

template <class T> constexpr bool is_complex_v = std::is_same_v<T, ts::complex64_t> || std::is_same_v<T, ts::complex128_t>;
template <class T> class AllDTypes : public ::testing::Test {};
using AllTypes = ::testing::Types<bool, int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t,
                                  ts::float16_t, ts::bfloat16_t, float, double, ts::complex64_t, ts::complex128_t>;
TYPED_TEST_SUITE(AllDTypes, AllTypes);

template <class T> std::vector<double> sample_a() {
  if constexpr (std::is_same_v<T, bool>) return {0, 1, 0, 1};
  else if constexpr (std::is_unsigned_v<T>) return {0, 7, 2, 5};
  else return {-3, 7, 2, 0};
}
template <class T> std::vector<double> sample_b() {
  if constexpr (std::is_same_v<T, bool>) return {0, 0, 1, 1};
  else if constexpr (std::is_unsigned_v<T>) return {1, 3, 2, 0};
  else return {2, -1, 2, 5};
}

TYPED_TEST(AllDTypes, ArithmeticMatchesReference) {
  constexpr ts::DType d = ts::dtype_of<TypeParam>();
  auto av = sample_a<TypeParam>(), bv = sample_b<TypeParam>();
  Array a = arr(av, d), b = arr(bv, d);
  Array s = a + b, p = a * b;
  EXPECT_EQ(s.dtype(), d);
  for (size_t i = 0; i < av.size(); ++i) {
    if constexpr (std::is_same_v<TypeParam, bool>) {
      EXPECT_EQ(vals(s)[i], double(av[i] || bv[i]));  // bool add is or, mul is and
      EXPECT_EQ(vals(p)[i], double(av[i] && bv[i]));
    } else {
      EXPECT_EQ(vals(s)[i], av[i] + bv[i]);
      EXPECT_EQ(vals(p)[i], av[i] * bv[i]);
      if (!std::is_unsigned_v<TypeParam>) {
        EXPECT_EQ(vals(a - b)[i], av[i] - bv[i]);
      }
    }
  }
  if constexpr (std::is_same_v<TypeParam, bool>) {
    EXPECT_THROW(a - b, ts::DTypeError);
  }
}

TYPED_TEST(AllDTypes, MaximumMinimumEqualAndWhere) {
  constexpr ts::DType d = ts::dtype_of<TypeParam>();
  auto av = sample_a<TypeParam>(), bv = sample_b<TypeParam>();
  Array a = arr(av, d), b = arr(bv, d);
  Array mx = ts::maximum(a, b), mn = ts::minimum(a, b), eq = a == b, ne = a != b;
  Array pred(std::vector<bool>{true, false, false, true});
  Array w = ts::where(pred, a, b);
  EXPECT_EQ(mx.dtype(), d);
  EXPECT_EQ(eq.dtype(), ts::bool_);
  EXPECT_EQ(w.dtype(), d);
  for (size_t i = 0; i < av.size(); ++i) {
    if constexpr (!is_complex_v<TypeParam>) {
      EXPECT_EQ(vals(mx)[i], std::max(av[i], bv[i]));
      EXPECT_EQ(vals(mn)[i], std::min(av[i], bv[i]));
    }
    EXPECT_EQ(bools(eq)[i], av[i] == bv[i]);
    EXPECT_EQ(bools(ne)[i], av[i] != bv[i]);
    EXPECT_EQ(vals(w)[i], bools(pred)[i] ? av[i] : bv[i]);
  }
}

TYPED_TEST(AllDTypes, OrderingComparisonsExceptComplex) {
  constexpr ts::DType d = ts::dtype_of<TypeParam>();
  auto av = sample_a<TypeParam>(), bv = sample_b<TypeParam>();
  Array a = arr(av, d), b = arr(bv, d);
  if constexpr (is_complex_v<TypeParam>) {
    EXPECT_THROW(a < b, ts::DTypeError);
  } else {
    for (size_t i = 0; i < av.size(); ++i) {
      EXPECT_EQ(bools(a < b)[i], av[i] < bv[i]);
      EXPECT_EQ(bools(a <= b)[i], av[i] <= bv[i]);
      EXPECT_EQ(bools(a > b)[i], av[i] > bv[i]);
      EXPECT_EQ(bools(a >= b)[i], av[i] >= bv[i]);
    }
  }
}

TYPED_TEST(AllDTypes, AbsSignNegative) {
  constexpr ts::DType d = ts::dtype_of<TypeParam>();
  auto av = sample_a<TypeParam>();
  Array a = arr(av, d);
  if constexpr (std::is_same_v<TypeParam, bool>) {
    EXPECT_EQ(vals(ts::abs(a)), av);  // abs of bool is the identity, as in jnp
    EXPECT_THROW(-a, ts::DTypeError);
  } else {
    for (size_t i = 0; i < av.size(); ++i) {
      EXPECT_EQ(vals(ts::abs(a))[i], std::abs(av[i]));
      EXPECT_EQ(vals(ts::sign(a))[i], double((av[i] > 0) - (av[i] < 0)));
      if (!std::is_unsigned_v<TypeParam>) {
        EXPECT_EQ(vals(-a)[i], -av[i]);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------
// Integers: division and remainder signs, division by zero, overflow, shifts, pow.

template <class T> class SignedInts : public ::testing::Test {};
using SignedTypes = ::testing::Types<int8_t, int16_t, int32_t, int64_t>;
TYPED_TEST_SUITE(SignedInts, SignedTypes);
template <class T> class UnsignedInts : public ::testing::Test {};
using UnsignedTypes = ::testing::Types<uint8_t, uint16_t, uint32_t, uint64_t>;
TYPED_TEST_SUITE(UnsignedInts, UnsignedTypes);

template <class T> std::vector<T> ivals(const Array& a) { return a.to_vector<T>(); }
template <class T> Array iarr(std::vector<T> v) { return Array(v); }

TYPED_TEST(SignedInts, DivisionTruncatesAndFloorDivisionFloors) {
  using T = TypeParam;
  Array a = iarr<T>({7, -7, 7, -7, 6}), b = iarr<T>({2, 2, -2, -2, 3});
  EXPECT_EQ(ivals<T>(ts::rem(a, b)), (std::vector<T>{1, -1, 1, -1, 0}));
  EXPECT_EQ(ivals<T>(ts::floor_divide(a, b)), (std::vector<T>{3, -4, -4, 3, 2}));
  EXPECT_EQ(ivals<T>(ts::remainder(a, b)), (std::vector<T>{1, 1, -1, -1, 0}));
  EXPECT_EQ(ivals<T>(a % b), (std::vector<T>{1, 1, -1, -1, 0}));
  Array q = a / b;  // true division
  EXPECT_TRUE(ts::is_floating(q.dtype()));
  EXPECT_EQ(vals(q), (std::vector<double>{3.5, -3.5, -3.5, 3.5, 2}));
  EXPECT_EQ(q.dtype(), sizeof(T) == 8 ? ts::f64 : ts::f32);
}

TYPED_TEST(SignedInts, DivisionByZeroAndOverflowDoNotTrap) {
  using T = TypeParam;
  constexpr T lo = std::numeric_limits<T>::min();
  Array a = iarr<T>({5, -5, 0, lo}), z = iarr<T>({0, 0, 0, -1});
  // XLA's CPU semantics: x / 0 = -1, x rem 0 = x, INT_MIN / -1 = INT_MIN, INT_MIN rem -1 = 0;
  // jnp.remainder and jnp.fmod by 0 are 0.
  ts::Array div = ts::floor_divide(iarr<T>({5, lo}), iarr<T>({0, -1}));
  EXPECT_EQ(ivals<T>(ts::rem(a, z)), (std::vector<T>{5, -5, 0, 0}));
  EXPECT_EQ(ivals<T>(ts::remainder(a, z)), (std::vector<T>{0, 0, 0, 0}));
  EXPECT_EQ(ivals<T>(ts::fmod(a, z)), (std::vector<T>{0, 0, 0, 0}));
  EXPECT_EQ(ivals<T>(div)[1], lo);
  // Through the primitive directly (floor_divide adds a sign correction).
  auto& div_p = ts::ir::lookup_primitive("div");
  EXPECT_EQ(ivals<T>(ts::detail::bind1(div_p, {a, z})), (std::vector<T>{-1, -1, -1, lo}));
}

TYPED_TEST(SignedInts, ArithmeticWraps) {
  using T = TypeParam;
  constexpr T hi = std::numeric_limits<T>::max(), lo = std::numeric_limits<T>::min();
  Array a = iarr<T>({hi, lo, hi}), b = iarr<T>({1, -1, 2});
  EXPECT_EQ(ivals<T>(a + b), (std::vector<T>{lo, hi, T(-hi)}));  // hi + 2 wraps to lo + 1
  EXPECT_EQ(ivals<T>(a * iarr<T>({2, 2, 1})), (std::vector<T>{T(-2), T(0), hi}));
  EXPECT_EQ(ivals<T>(-iarr<T>({lo, 3})), (std::vector<T>{lo, T(-3)}));
  EXPECT_EQ(ivals<T>(ts::abs(iarr<T>({lo, -3}))), (std::vector<T>{lo, T(3)}));
}

TYPED_TEST(SignedInts, ShiftsAreArithmeticAndSaturateOutOfRange) {
  using T = TypeParam;
  constexpr int bits = sizeof(T) * 8;
  Array a = iarr<T>({1, 1, -16, -1, -5, 5, 3}), s = iarr<T>({bits - 1, bits, 2, 100, -1, -1, 1});
  EXPECT_EQ(ivals<T>(ts::left_shift(a, s)),
            (std::vector<T>{std::numeric_limits<T>::min(), 0, -64, 0, 0, 0, 6}));
  EXPECT_EQ(ivals<T>(ts::right_shift(a, s)), (std::vector<T>{0, 0, -4, -1, -1, 0, 1}));
}

TYPED_TEST(SignedInts, IntegerPowerBySquaring) {
  using T = TypeParam;
  Array b = iarr<T>({2, 3, 0, -2, 2, 1, -1, -1, 0, 5}), e = iarr<T>({6, 0, 0, 3, -1, -5, -3, -4, -1, 1});
  EXPECT_EQ(ivals<T>(ts::pow(b, e)), (std::vector<T>{64, 1, 1, -8, 0, 1, -1, 1, 0, 5}));
  EXPECT_EQ(ivals<T>(ts::pow(iarr<T>({2}), iarr<T>({T(sizeof(T) * 8 - 1)})))[0], std::numeric_limits<T>::min());
  EXPECT_EQ(ivals<T>(ts::square(iarr<T>({-7, 11}))), (std::vector<T>{49, 121}));
}

TYPED_TEST(SignedInts, BitwiseOperations) {
  using T = TypeParam;
  Array a = iarr<T>({12, -1, 0}), b = iarr<T>({10, 5, -1});
  EXPECT_EQ(ivals<T>(a & b), (std::vector<T>{8, 5, 0}));
  EXPECT_EQ(ivals<T>(a | b), (std::vector<T>{14, -1, -1}));
  EXPECT_EQ(ivals<T>(a ^ b), (std::vector<T>{6, -6, -1}));
  EXPECT_EQ(ivals<T>(~a), (std::vector<T>{-13, 0, -1}));
  EXPECT_EQ(bools(!a), (std::vector<bool>{false, false, true}));
}

TYPED_TEST(UnsignedInts, DivisionByZeroGivesAllOnes) {
  using T = TypeParam;
  constexpr T hi = std::numeric_limits<T>::max();
  Array a = iarr<T>({5, 7, 0}), z = iarr<T>({0, 2, 0});
  EXPECT_EQ(ivals<T>(ts::floor_divide(a, z)), (std::vector<T>{hi, 3, hi}));
  EXPECT_EQ(ivals<T>(ts::rem(a, z)), (std::vector<T>{5, 1, 0}));
  EXPECT_EQ(ivals<T>(a % z), (std::vector<T>{0, 1, 0}));
}

TYPED_TEST(UnsignedInts, ArithmeticWrapsAndShiftsAreLogical) {
  using T = TypeParam;
  constexpr T hi = std::numeric_limits<T>::max();
  constexpr int bits = sizeof(T) * 8;
  EXPECT_EQ(ivals<T>(iarr<T>({0, 3}) - iarr<T>({1, 1})), (std::vector<T>{hi, 2}));
  EXPECT_EQ(ivals<T>(iarr<T>({hi}) * iarr<T>({hi}))[0], T(1));  // (2^n - 1)^2 = 1 mod 2^n
  EXPECT_EQ(ivals<T>(-iarr<T>({1}))[0], hi);
  Array top = iarr<T>({T(T(1) << (bits - 1)), hi, 200});
  EXPECT_EQ(ivals<T>(ts::right_shift(top, iarr<T>({T(bits - 1), T(bits), 3}))), (std::vector<T>{1, 0, 25}));
  EXPECT_EQ(ivals<T>(~iarr<T>({0}))[0], hi);
  EXPECT_EQ(ivals<T>(ts::pow(iarr<T>({2, 3}), iarr<T>({T(bits - 1), 4}))), (std::vector<T>{T(T(1) << (bits - 1)), 81}));
}

// ---------------------------------------------------------------------------------------
// Floating special values.

TEST(Elementwise, MaximumAndMinimumPropagateNaN) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (ts::DType d : kFloatTypes) {
    Array a = arr({nan, 1, nan, -2}, d), b = arr({1, nan, nan, 3}, d);
    for (const Array& r : {ts::maximum(a, b), ts::minimum(a, b), ts::maximum(b, a)}) {
      auto v = vals(r);
      EXPECT_TRUE(std::isnan(v[0]) && std::isnan(v[1]) && std::isnan(v[2])) << ts::dtype_name(d);
    }
    EXPECT_EQ(vals(ts::maximum(a, b))[3], 3);
    EXPECT_EQ(vals(ts::minimum(a, b))[3], -2);
  }
}

TEST(Elementwise, ClassifiesNaNAndInfinity) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  for (ts::DType d : kFloatTypes) {
    Array x = arr({1, inf, -inf, nan, 0}, d);
    EXPECT_EQ(bools(ts::isnan(x)), (std::vector<bool>{false, false, false, true, false})) << ts::dtype_name(d);
    EXPECT_EQ(bools(ts::isinf(x)), (std::vector<bool>{false, true, true, false, false}));
    EXPECT_EQ(bools(ts::isfinite(x)), (std::vector<bool>{true, false, false, false, true}));
  }
  Array z = carr({{1, 0}, {inf, 0}, {0, nan}, {1, -inf}}, ts::c64);
  EXPECT_EQ(bools(ts::isnan(z)), (std::vector<bool>{false, false, true, false}));
  EXPECT_EQ(bools(ts::isinf(z)), (std::vector<bool>{false, true, false, true}));
  EXPECT_EQ(bools(ts::isfinite(z)), (std::vector<bool>{true, false, false, false}));
  Array i = arr({1, 2}, ts::i32);
  EXPECT_EQ(bools(ts::isnan(i)), (std::vector<bool>{false, false}));
  EXPECT_EQ(bools(ts::isinf(i)), (std::vector<bool>{false, false}));
  EXPECT_EQ(bools(ts::isfinite(i)), (std::vector<bool>{true, true}));
}

TEST(Elementwise, SpecialValuesOfFloatFunctions) {
  const double inf = std::numeric_limits<double>::infinity();
  Array x = arr({-0.0, inf, -1}, ts::f32);
  auto sq = vals(ts::sqrt(x));
  EXPECT_TRUE(std::signbit(sq[0]));
  EXPECT_EQ(sq[1], inf);
  EXPECT_TRUE(std::isnan(sq[2]));
  EXPECT_TRUE(std::signbit(vals(ts::sign(x))[0])) << "sign(-0) is -0";
  EXPECT_TRUE(std::isnan(vals(ts::sign(arr({std::nan("")}, ts::f64)))[0]));
  EXPECT_EQ(vals(ts::log(arr({0}, ts::f64)))[0], -inf);
  EXPECT_EQ(vals(arr({1, -1}, ts::f32) / arr({0, 0}, ts::f32)), (std::vector<double>{inf, -inf}));
  EXPECT_EQ(vals(ts::logistic(arr({-1000, 1000}, ts::f64))), (std::vector<double>{0, 1}));
}

TEST(Elementwise, RoundsHalfToEven) {
  for (ts::DType d : kFloatTypes) {
    Array x = arr({-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 1e6 + 0.5}, d);
    auto in = vals(x), out = vals(ts::round(x));
    for (size_t i = 0; i < in.size(); ++i) EXPECT_EQ(out[i], std::nearbyint(in[i])) << in[i] << " " << ts::dtype_name(d);
  }
  EXPECT_EQ(cvals(ts::round(carr({{0.5, 1.5}, {2.5, -2.7}}, ts::c128))), (std::vector<c128>{{0, 2}, {2, -3}}));
}

// ---------------------------------------------------------------------------------------
// Booleans and logical functions.

TEST(Elementwise, LogicalFunctionsOnBool) {
  Array a(std::vector<bool>{false, false, true, true}), b(std::vector<bool>{false, true, false, true});
  EXPECT_EQ(bools(ts::logical_and(a, b)), (std::vector<bool>{false, false, false, true}));
  EXPECT_EQ(bools(ts::logical_or(a, b)), (std::vector<bool>{false, true, true, true}));
  EXPECT_EQ(bools(ts::logical_xor(a, b)), (std::vector<bool>{false, true, true, false}));
  EXPECT_EQ(bools(ts::logical_not(a)), (std::vector<bool>{true, true, false, false}));
  EXPECT_EQ(bools(a & b), bools(ts::logical_and(a, b)));
  EXPECT_EQ(bools(a | b), bools(ts::logical_or(a, b)));
  EXPECT_EQ(bools(a ^ b), bools(ts::logical_xor(a, b)));
  EXPECT_EQ(bools(~a), bools(!a));
  EXPECT_EQ(bools(a < b), (std::vector<bool>{false, true, false, false}));
  EXPECT_EQ((a & b).dtype(), ts::bool_);
}

TEST(Elementwise, LogicalFunctionsTreatNonzeroAsTrue) {
  Array x = arr({0, 2.5, -1, 0}, ts::f32), y = arr({3, 0, 7, 0}, ts::i32);
  EXPECT_EQ(bools(ts::logical_and(x, y)), (std::vector<bool>{false, false, true, false}));
  EXPECT_EQ(bools(ts::logical_or(x, y)), (std::vector<bool>{true, true, true, false}));
  EXPECT_EQ(bools(ts::logical_not(x)), (std::vector<bool>{true, false, false, true}));
  EXPECT_EQ(bools(!x), (std::vector<bool>{true, false, false, true}));
}

// ---------------------------------------------------------------------------------------
// Broadcasting and inputs that are results of other operations.

TEST(Elementwise, BroadcastsLikeNumPy) {
  Array col = arr({1, 2, 3}, ts::f32).reshape({3, 1}), row = arr({10, 20}, ts::f32);
  Array s = col + row;
  EXPECT_EQ(s.shape(), (ts::Shape{3, 2}));
  EXPECT_EQ(vals(s), (std::vector<double>{11, 21, 12, 22, 13, 23}));
  EXPECT_EQ(vals(row - col), (std::vector<double>{9, 19, 8, 18, 7, 17}));
  Array b = ts::broadcast_to(arr({0.5, 1}, ts::f64), {3, 2});
  // exp is libmvec's (within 4 ULP of glibc's scalar exp; docs/performance.md).
  const std::vector<double> e = vals(ts::exp(b));
  const double want[] = {std::exp(0.5), std::exp(1.0)};
  ASSERT_EQ(e.size(), 6u);
  for (size_t i = 0; i < e.size(); ++i) EXPECT_NEAR(e[i], want[i % 2], 4 * std::ldexp(want[i % 2], -52)) << i;
  EXPECT_EQ(vals(ts::maximum(b, col)), (std::vector<double>{1, 1, 2, 2, 3, 3}));
}

TEST(Elementwise, ScalarsBroadcastOnEitherSide) {
  Array x = arr({1, 2, 4}, ts::f32);
  EXPECT_EQ(vals(2.0 - x), (std::vector<double>{1, 0, -2}));
  EXPECT_EQ(vals(x - 2.0), (std::vector<double>{-1, 0, 2}));
  EXPECT_EQ(vals(8.0 / x), (std::vector<double>{8, 4, 2}));
  EXPECT_EQ(vals(ts::pow(2, x)), (std::vector<double>{2, 4, 16}));
  EXPECT_EQ(bools(3.0 > x), (std::vector<bool>{true, true, false}));
  Array s = Array(ts::Scalar(3.0f));  // a strong rank-0 array
  EXPECT_EQ(vals(s * x), (std::vector<double>{3, 6, 12}));
  EXPECT_EQ((s * x).shape(), (ts::Shape{3}));
  Array both = Array(ts::Scalar(2)) + Array(ts::Scalar(5));
  EXPECT_EQ(both.shape(), ts::Shape{});
  EXPECT_EQ(both.item<int>(), 7);
}

TEST(Elementwise, WhereBroadcastsAllThree) {
  Array pred = Array(std::vector<bool>{true, false, true}).reshape({3, 1});
  Array a = arr({1, 2}, ts::i32), b = Array(-1);
  Array w = ts::where(pred, a, b);
  EXPECT_EQ(w.shape(), (ts::Shape{3, 2}));
  EXPECT_EQ(w.dtype(), ts::i32);
  EXPECT_EQ(vals(w), (std::vector<double>{1, 2, -1, -1, 1, 2}));
  Array w2 = ts::select(Array(ts::Scalar(false)), arr({1, 2}, ts::f32), 0.5);
  EXPECT_EQ(w2.dtype(), ts::f32);
  EXPECT_EQ(vals(w2), (std::vector<double>{0.5, 0.5}));
  EXPECT_EQ(vals(ts::where(Array(std::vector<bool>{true, false}), 1.0, 2.0)), (std::vector<double>{1, 2}));
}

TEST(Elementwise, SlicedAndTransposedInputs) {
  Array m = arr({1, 2, 3, 4, 5, 6}, ts::f64).reshape({2, 3});
  Array t = ts::transpose(m);  // (3, 2): 1 4 / 2 5 / 3 6
  EXPECT_EQ(vals(t * arr({1, 10}, ts::f64)), (std::vector<double>{1, 40, 2, 50, 3, 60}));
  Array s = ts::slice(m, {0, 0}, {2, 3}, {1, 2});  // columns 0 and 2: 1 3 / 4 6
  EXPECT_EQ(vals(s * 2.0), (std::vector<double>{2, 6, 8, 12}));
  EXPECT_EQ(vals(ts::sqrt(s)), (std::vector<double>{1, std::sqrt(3.0), 2, std::sqrt(6.0)}));
  EXPECT_EQ(vals(ts::maximum(s, ts::slice(t, {1, 0}, {3, 2}))), (std::vector<double>{2, 5, 4, 6}));
}

TEST(Elementwise, ClipAndClamp) {
  Array x = arr({-2, 0.25, 3}, ts::f32);
  EXPECT_EQ(vals(ts::clip(x, 0, 1)), (std::vector<double>{0, 0.25, 1}));
  EXPECT_EQ(vals(ts::clamp(-1, x, 0.5)), (std::vector<double>{-1, 0.25, 0.5}));
  EXPECT_EQ(ts::clip(x, 0, 1).dtype(), ts::f32);
  Array i = arr({-5, 5, 50}, ts::i8);
  Array c = ts::clip(i, arr({0, 0, 0}, ts::i8), 10);
  EXPECT_EQ(c.dtype(), ts::i8);
  EXPECT_EQ(vals(c), (std::vector<double>{0, 5, 10}));
}

// ---------------------------------------------------------------------------------------
// Dtype rules: weak C++ scalars, promotion of integer arguments of float functions.

TEST(Elementwise, WeakScalarsKeepTheArrayDtype) {
  EXPECT_EQ((arr({1}, ts::f32) * 2.0).dtype(), ts::f32);
  EXPECT_FALSE((arr({1}, ts::f32) * 2.0).weak_type());
  EXPECT_EQ((arr({1}, ts::i8) + 1).dtype(), ts::i8);
  EXPECT_EQ((arr({1}, ts::u8) + 1).dtype(), ts::u8);
  EXPECT_EQ((arr({1}, ts::f16) + 1.0).dtype(), ts::f16);
  EXPECT_EQ((arr({1}, ts::bf16) * 2).dtype(), ts::bf16);
  EXPECT_EQ((arr({1}, ts::c64) * 2.0).dtype(), ts::c64);
  EXPECT_EQ((arr({1}, ts::f16) / 2).dtype(), ts::f16);
  Array mixed = arr({1, 3}, ts::i32) * 2.5;
  EXPECT_TRUE(ts::is_floating(mixed.dtype()));
  EXPECT_EQ(vals(mixed), (std::vector<double>{2.5, 7.5}));
  EXPECT_EQ(vals(arr({100}, ts::i8) + 100), (std::vector<double>{-56}));  // stays i8 and wraps
  Array w = Array(2.0) * Array(3.0);
  EXPECT_TRUE(w.weak_type());
  EXPECT_EQ((w + arr({1}, ts::f16)).dtype(), ts::f16);
}

TEST(Elementwise, FloatFunctionsPromoteIntegersToFloat) {
  EXPECT_EQ(ts::sin(arr({1}, ts::i32)).dtype(), ts::f32);
  EXPECT_EQ(ts::sqrt(arr({4}, ts::u8)).dtype(), ts::f32);
  EXPECT_EQ(ts::exp(arr({1}, ts::bool_)).dtype(), ts::f32);
  EXPECT_EQ(ts::log(arr({1}, ts::i64)).dtype(), ts::f64);
  EXPECT_EQ(vals(ts::sqrt(arr({4, 9}, ts::i16))), (std::vector<double>{2, 3}));
  EXPECT_EQ(ts::divide(arr({1}, ts::i64), arr({2}, ts::i64)).dtype(), ts::f64);
  EXPECT_EQ(ts::reciprocal(arr({4}, ts::i32)).dtype(), ts::f32);
  Array weak = ts::sin(Array(1));
  EXPECT_EQ(weak.dtype(), ts::f32);
  EXPECT_TRUE(weak.weak_type());
  // floor, ceil, round and abs leave integers alone.
  Array i = arr({-3, 4}, ts::i32);
  EXPECT_EQ(ts::floor(i).dtype(), ts::i32);
  EXPECT_EQ(vals(ts::round(i)), (std::vector<double>{-3, 4}));
  EXPECT_EQ(ts::abs(arr({3}, ts::u16)).dtype(), ts::u16);
}

TEST(Elementwise, OperatorsCallTheNamedFunctions) {
  Array a = arr({6, -7}, ts::i32), b = arr({4, 2}, ts::i32);
  EXPECT_EQ(vals(a + b), (std::vector<double>{10, -5}));
  EXPECT_EQ(vals(a - b), (std::vector<double>{2, -9}));
  EXPECT_EQ(vals(a * b), (std::vector<double>{24, -14}));
  EXPECT_EQ(vals(a / b), (std::vector<double>{1.5, -3.5}));
  EXPECT_EQ(vals(a % b), (std::vector<double>{2, 1}));
  EXPECT_EQ(vals(-a), (std::vector<double>{-6, 7}));
  EXPECT_EQ(bools(a < b), (std::vector<bool>{false, true}));
  EXPECT_EQ(bools(a <= b), (std::vector<bool>{false, true}));
  EXPECT_EQ(bools(a > b), (std::vector<bool>{true, false}));
  EXPECT_EQ(bools(a >= b), (std::vector<bool>{true, false}));
  EXPECT_EQ(bools(a == 6), (std::vector<bool>{true, false}));
  EXPECT_EQ(bools(a != 6), (std::vector<bool>{false, true}));
  EXPECT_EQ(vals(a & b), (std::vector<double>{4, 0}));
  EXPECT_EQ(vals(a | b), (std::vector<double>{6, -5}));
  EXPECT_EQ(vals(a ^ b), (std::vector<double>{2, -5}));
  EXPECT_EQ(vals(~a), (std::vector<double>{-7, 6}));
  EXPECT_EQ(bools(!a), (std::vector<bool>{false, false}));
}

// ---------------------------------------------------------------------------------------
// Errors name the operation, the dtype or shapes, and the fix.

template <class E, class F> std::string error_of(F f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "no exception of the expected type";
  return "";
}

TEST(Elementwise, PrimitivesRejectDtypesOutsideTheirClass) {
  auto& sin_p = ts::ir::lookup_primitive("sin");
  Array i = arr({1}, ts::i32);
  EXPECT_EQ(error_of<ts::DTypeError>([&] { ts::detail::bind1(sin_p, {i}); }),
            "sin: dtype int32 is not supported; expected a floating or complex dtype (convert with astype)");
  auto& and_p = ts::ir::lookup_primitive("and");
  Array f = arr({1}, ts::f32);
  EXPECT_EQ(error_of<ts::DTypeError>([&] { ts::detail::bind1(and_p, {f, f}); }),
            "and: dtype float32 is not supported; expected a boolean or integer dtype (convert with astype)");
  auto& add_p = ts::ir::lookup_primitive("add");
  EXPECT_NE(error_of<ts::DTypeError>([&] { ts::detail::bind1(add_p, {f, i}); }).find("add: operands have different dtypes"),
            std::string::npos);
}

TEST(Elementwise, PublicFunctionsNameThemselvesInErrors) {
  Array b = Array(std::vector<bool>{true}), f = arr({1}, ts::f32), c = carr({{1, 1}}, ts::c64), i = arr({1}, ts::i32);
  EXPECT_NE(error_of<ts::DTypeError>([&] { ts::subtract(b, b); }).find("subtract: dtype bool is not supported"),
            std::string::npos);
  EXPECT_NE(error_of<ts::DTypeError>([&] { ts::bitwise_and(f, f); }).find("bitwise_and: dtype float32"), std::string::npos);
  EXPECT_NE(error_of<ts::DTypeError>([&] { ts::left_shift(f, 1); }).find("left_shift: dtype float32 is not supported; "
                                                                         "expected an integer dtype"),
            std::string::npos);
  EXPECT_NE(error_of<ts::DTypeError>([&] { ts::less(c, c); }).find("less: dtype complex64"), std::string::npos);
  EXPECT_NE(error_of<ts::DTypeError>([&] { ts::erf(c); }).find("erf: dtype complex64 is not supported; expected a "
                                                               "floating dtype"),
            std::string::npos);
  EXPECT_NE(error_of<ts::DTypeError>([&] { ts::floor_divide(c, c); }).find("floor_divide"), std::string::npos);
  EXPECT_NE(error_of<ts::DTypeError>([&] { ts::remainder(c, c); }).find("remainder"), std::string::npos);
  EXPECT_NE(error_of<ts::DTypeError>([&] { ts::floor(c); }).find("floor"), std::string::npos);
  EXPECT_NE(error_of<ts::DTypeError>([&] { ts::negative(b); }).find("negative"), std::string::npos);
  EXPECT_NE(error_of<ts::DTypeError>([&] { ts::where(i, f, f); }).find("where: the condition must have dtype bool, got int32"),
            std::string::npos);
  EXPECT_NE(error_of<ts::DTypeError>([&] { ts::complex(c, f); }).find("complex:"), std::string::npos);
  EXPECT_NE(error_of<ts::DTypeError>([&] { ts::fmod(c, c); }).find("fmod:"), std::string::npos);
}

TEST(Elementwise, ShapeMismatchSaysCannotBroadcast) {
  Array a = arr({1, 2, 3}, ts::f32), b = arr({1, 2, 3, 4}, ts::f32);
  EXPECT_EQ(error_of<ts::ShapeError>([&] { ts::add(a, b); }),
            "add: cannot broadcast shapes (3,) and (4,) (dimension 0 has sizes 3 and 4); sizes must match or be 1");
  EXPECT_NE(error_of<ts::ShapeError>([&] { a < b; }).find("less: cannot broadcast"), std::string::npos);
  EXPECT_NE(error_of<ts::ShapeError>([&] { ts::where(Array(std::vector<bool>{true, false}), a, a); })
                .find("where: cannot broadcast"),
            std::string::npos);
  auto& mul_p = ts::ir::lookup_primitive("mul");
  EXPECT_NE(error_of<ts::ShapeError>([&] { ts::detail::bind1(mul_p, {a, b}); }).find("mul: operands have different shapes"),
            std::string::npos);
}

// ---------------------------------------------------------------------------------------
// Abstract evaluation under tracing: the program records the primitives, with their dtypes.

TEST(Elementwise, TracesIntoPrimitives) {
  ts::Aval in(ts::Shape{4}, ts::i32);
  auto prog = ts::detail::trace_to_program(
      [](std::span<const Array> xs) {
        return std::vector<Array>{ts::sin(xs[0]) * 2.0, ts::floor_divide(xs[0], 3), xs[0] < 0};
      },
      std::span<const ts::Aval>(&in, 1));
  std::string text = ts::ir::print_program(prog);
  for (const char* p : {"convert_element_type", "sin", "mul", "div", "select_n", "lt"})
    EXPECT_NE(text.find(p), std::string::npos) << p << " missing from\n" << text;
}

}  // namespace
