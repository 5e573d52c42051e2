// include/tessel/numpy.h beyond the parity data (tests/parity/cases_numpy_composed.py):
// denormals (where JAX's CPU results are flushed), the functions with no JAX counterpart to
// record (size, ndim, index helpers of shapes), transformations and the error paths.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "expect_error.h"
#include "tessel/numpy.h"
#include "tessel/tessel.h"

namespace ts = tessel;
using tessel_test::expect_error;

namespace {
template <class T> std::vector<T> values(const ts::Array& a) { return a.to_vector<T>(); }
}  // namespace

TEST(Numpy, FrexpAndLdexpAreExactOnDenormals) {
  for (double v : {std::ldexp(1.0, -1040), -std::ldexp(3.0, -1070), std::ldexp(1.0, -1074), 0.75, -1e300}) {
    int e = 0;
    const double m = std::frexp(v, &e);
    auto [tm, te] = ts::frexp(ts::Array(std::vector<double>{v}));
    EXPECT_EQ(values<double>(tm)[0], m) << v;
    EXPECT_EQ(values<int32_t>(te)[0], e) << v;
    EXPECT_EQ(values<double>(ts::ldexp(tm, te))[0], v) << v;
  }
  const float f = std::ldexp(1.0f, -140);
  int e = 0;
  const float m = std::frexp(f, &e);
  auto [tm, te] = ts::frexp(ts::Array(std::vector<float>{f}));
  EXPECT_EQ(values<float>(tm)[0], m);
  EXPECT_EQ(values<int32_t>(te)[0], e);
}

TEST(Numpy, NextafterAndSpacingStepOneUlp) {
  const ts::Array x(std::vector<float>{1.0f, -1.0f, 0.0f, -0.0f, std::numeric_limits<float>::max()});
  const ts::Array y(std::vector<float>{2.0f, 0.0f, -1.0f, 1.0f, INFINITY});
  const auto r = values<float>(ts::nextafter(x, y));
  for (size_t i = 0; i < r.size(); ++i)
    EXPECT_EQ(r[i], std::nextafter(values<float>(x)[i], values<float>(y)[i])) << i;
  EXPECT_EQ(values<float>(ts::spacing(ts::Array(std::vector<float>{1.0f})))[0], std::numeric_limits<float>::epsilon());
}

TEST(Numpy, ShapeQueriesAndIndexHelpers) {
  const ts::Array a = ts::zeros({3, 4, 5});
  EXPECT_EQ(ts::ndim(a), 3);
  EXPECT_EQ(ts::size(a), 60);
  EXPECT_TRUE(ts::isrealobj(a));
  EXPECT_FALSE(ts::iscomplexobj(a));
  EXPECT_TRUE(ts::iscomplexobj(ts::zeros({2}, ts::DType::complex64)));
  const auto d = ts::diag_indices_from(ts::zeros({3, 3, 3}));
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(values<int32_t>(d[2]), (std::vector<int32_t>{0, 1, 2}));
  auto [r, c] = ts::triu_indices_from(ts::zeros({2, 3}), 1);
  EXPECT_EQ(values<int32_t>(r), (std::vector<int32_t>{0, 0, 1}));
  EXPECT_EQ(values<int32_t>(c), (std::vector<int32_t>{1, 2, 2}));
  EXPECT_EQ(values<float>(ts::degrees(ts::radians(ts::Array(std::vector<float>{90.0f})))), (std::vector<float>{90.0f}));
  const ts::Array x(std::vector<float>{1, 2, 3});
  const ts::Array y = ts::copy(x);
  EXPECT_EQ(values<float>(y), values<float>(x));
}

TEST(Numpy, GcdUnderJitAndVmapAndNanReductionsUnderGrad) {
  auto g = ts::jit([](const ts::Array& a, const ts::Array& b) { return ts::gcd(a, b); });
  EXPECT_EQ(values<int32_t>(g(ts::Array(std::vector<int32_t>{12, -18, 0}), ts::Array(std::vector<int32_t>{8, 12, 0}))),
            (std::vector<int32_t>{4, 6, 0}));
  auto v = ts::vmap([](const ts::Array& a) { return ts::nanmean(a); });
  const ts::Array m(std::vector<float>{1, NAN, 3, 4, 5, NAN}, {2, 3});
  EXPECT_EQ(values<float>(v(m)), (std::vector<float>{2.0f, 4.5f}));
  // The derivative of nansum is 1 where the element is a number and 0 at the NaNs.
  auto dg = ts::grad([](const ts::Array& a) { return ts::nansum(a); });
  EXPECT_EQ(values<float>(dg(ts::Array(std::vector<float>{1, NAN, 3}))), (std::vector<float>{1, 0, 1}));
}

TEST(Numpy, BadInputNamesTheFunctionAndTheFix) {
  const ts::Array x(std::vector<float>{1, 2, 3, 4, 5});
  expect_error<ts::ValueError>([&] { ts::split(x, 2); }, {"split", "do not divide", "array_split"});
  expect_error<ts::DTypeError>([&] { ts::gcd(x, x); }, {"gcd", "float32", "integers"});
  expect_error<ts::DTypeError>([&] { ts::hypot(ts::zeros({2}, ts::DType::complex64), x); }, {"hypot", "complex"});
  expect_error<ts::ShapeError>([&] { ts::tril(x); }, {"tril", "2 axes", "(5,)"});
  expect_error<ts::IndexError>([&] { ts::delete_(x, {7}); }, {"delete", "index 7", "size 5"});
  expect_error<ts::IndexError>(
      [&] {
        ts::ravel_multi_index({ts::Array(std::vector<int32_t>{0, 3}), ts::Array(std::vector<int32_t>{1, 1})}, {3, 4});
      },
      {"ravel_multi_index", "index 3", "dimension 0", "'wrap'"});
  expect_error<ts::ShapeError>([&] { ts::interp(x, ts::zeros({3}), ts::zeros({4})); }, {"interp", "(3,)", "(4,)"});
  expect_error<ts::ShapeError>([&] { ts::gradient(ts::zeros({1, 4}), 0); }, {"gradient", "at least 2"});
  expect_error<ts::ValueError>([&] { ts::cumulative_sum(ts::zeros({2, 2})); }, {"cumulative_sum", "axis is required"});
  expect_error<ts::ValueError>([&] { ts::meshgrid({x}, "yx"); }, {"meshgrid", "'yx'"});
  expect_error<ts::DTypeError>([&] { ts::ldexp(x, x); }, {"ldexp", "integer"});
}

TEST(Numpy, BlocksAndHistogramsCheckTheirInput) {
  const ts::Array x = ts::zeros({5});
  expect_error<ts::ValueError>([&] { ts::block(std::vector<ts::Array>{}); }, {"block", "empty"});
  expect_error<ts::ValueError>([&] { ts::block(std::vector<std::vector<ts::Array>>{{x}, {}}); }, {"block", "empty"});
  expect_error<ts::ShapeError>([&] { ts::histogramdd(x); }, {"histogramdd", "(N, D)", "f32[5]"});
  const ts::Array pts = ts::zeros({6, 2});
  expect_error<ts::ShapeError>([&] { ts::histogramdd(pts, 3, {.weights = ts::ones({5})}); },
                               {"histogramdd", "one weight per sample point", "(6,)"});
  expect_error<ts::ValueError>([&] { ts::histogramdd(pts, std::vector<ts::HistogramBins>{3}); },
                               {"histogramdd", "one entry per dimension (2)"});
  expect_error<ts::ValueError>([&] { ts::histogramdd(pts, 3, {.range = {std::make_pair(0.0, 1.0)}}); },
                               {"histogramdd", "range", "(2)"});
  expect_error<ts::ShapeError>(
      [&] { ts::histogramdd(pts, std::vector<ts::HistogramBins>{3, ts::Array(std::vector<float>{1.0f})}); },
      {"histogramdd", "dimension 1", "at least 2 edges"});
  expect_error<ts::ShapeError>([&] { ts::histogram2d(x, ts::zeros({4})); }, {"histogram2d", "same length"});
  expect_error<ts::ShapeError>([&] { ts::mask_indices(3, [](const ts::Array& a, int64_t) { return ts::ravel(a); }); },
                               {"mask_indices", "(n, n)"});
  // A 3-level block: planes of rows of blocks, joined along axes -3, -2, -1.
  const ts::Array one = ts::ones({1, 2, 3});
  EXPECT_EQ(ts::block({{{one, one}, {one, one}}, {{one, one}, {one, one}}}).shape(), (ts::Shape{2, 4, 6}));
  // The histogram of 4 points on a 2 x 2 grid, one in each cell but two in the last.
  const ts::Array p = ts::Array(std::vector<float>{0.1f, 0.1f, 0.9f, 0.2f, 0.2f, 0.9f, 0.9f, 0.9f}, {4, 2});
  auto [h, edges] = ts::histogramdd(p, 2, {.range = {std::make_pair(0.0, 1.0), std::make_pair(0.0, 1.0)}});
  EXPECT_EQ(values<int32_t>(h), (std::vector<int32_t>{1, 1, 1, 1}));
  EXPECT_EQ(edges.size(), 2u);
}

TEST(Numpy, ValueDependentSizesRunEagerly) {
  const ts::Array f(std::vector<float>{0, 0, 1, 2, 0, 3, 0});
  EXPECT_EQ(values<float>(ts::trim_zeros(f)), (std::vector<float>{1, 2, 0, 3}));
  EXPECT_EQ(values<float>(ts::trim_zeros(f, "f")), (std::vector<float>{1, 2, 0, 3, 0}));
  EXPECT_EQ(values<float>(ts::trim_zeros(f, "b")), (std::vector<float>{0, 0, 1, 2, 0, 3}));
  EXPECT_EQ(ts::trim_zeros(ts::zeros({3})).shape(), (ts::Shape{0}));
  const ts::Array a(std::vector<int32_t>{1, 2, 3, 3, 7}), b(std::vector<int32_t>{2, 4, 7, 9});
  EXPECT_EQ(values<int32_t>(ts::setxor1d(a, b)), (std::vector<int32_t>{1, 3, 4, 9}));
  const ts::Array x(std::vector<float>{1, 2, 3, 4, 5, 6}, {3, 2});
  const ts::Array c(std::vector<bool>{true, false, true});
  EXPECT_EQ(values<float>(ts::compress(c, x, 0)), (std::vector<float>{1, 2, 5, 6}));
  EXPECT_EQ(values<float>(ts::extract(x > ts::Array(3.0f), x)), (std::vector<float>{4, 5, 6}));
  // Leading zeros are stripped: x^2 - 3x + 2 has roots 1 and 2.
  const auto r = ts::sort_complex(ts::roots(ts::Array(std::vector<double>{0, 1, -3, 2}))).to_vector<std::complex<double>>();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_NEAR(r[0].real(), 1.0, 1e-12);
  EXPECT_NEAR(r[1].real(), 2.0, 1e-12);
  // Without stripping, a leading zero gives a NaN root and the others are still found.
  const auto rz = ts::roots(ts::Array(std::vector<double>{0, 1, -3}), false).to_vector<std::complex<double>>();
  ASSERT_EQ(rz.size(), 2u);
  EXPECT_EQ(std::isnan(rz[0].real()) + std::isnan(rz[1].real()), 1);
  EXPECT_NEAR(std::isnan(rz[0].real()) ? rz[1].real() : rz[0].real(), 3.0, 1e-12);
  auto jitted = ts::jit([](const ts::Array& v) { return ts::trim_zeros(v); });
  expect_error<ts::ConcretizationError>([&] { jitted(f); }, {"trim_zeros", "jit"});
  expect_error<ts::IndexError>([&] { ts::choose(ts::Array(std::vector<int32_t>{0, 3}), {x, x}); }, {"choose", "3", "'wrap'"});
}

TEST(Numpy, CallablesApplyAlongAxesAndPiecewise) {
  const ts::Array x(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  const ts::Array s = ts::apply_along_axis([](const ts::Array& v) { return ts::sum(v); }, 1, x);
  EXPECT_EQ(values<float>(s), (std::vector<float>{6, 15}));
  const ts::Array d = ts::apply_along_axis([](const ts::Array& v) { return ts::stack({v, v * ts::Array(2.0f)}); }, 0, x);
  EXPECT_EQ(d.shape(), (ts::Shape{2, 2, 3}));
  EXPECT_EQ(values<float>(ts::apply_over_axes([](const ts::Array& v, int64_t a) { return ts::sum(v, {a}); }, x, {0, 1})),
            (std::vector<float>{21}));
  EXPECT_EQ(values<int32_t>(ts::fromfunction([](const std::vector<ts::Array>& i) { return i[0] * ts::Array(10) + i[1]; },
                                             {2, 2}, ts::DType::int32)),
            (std::vector<int32_t>{0, 1, 10, 11}));
  const ts::Array v(std::vector<float>{-2, -0.5, 0.5, 2});
  const ts::Array p = ts::piecewise(v, {v < ts::Array(0.0f), v > ts::Array(1.0f)},
                                    {[](const ts::Array& t) { return -t; }, [](const ts::Array& t) { return t * t; },
                                     [](const ts::Array& t) { return ts::zeros_like(t) + ts::Array(9.0f); }});
  EXPECT_EQ(values<float>(p), (std::vector<float>{2, 0.5f, 9, 4}));
  EXPECT_TRUE(ts::can_cast(ts::DType::int32, ts::DType::float64));
  EXPECT_FALSE(ts::can_cast(ts::DType::float64, ts::DType::int32));
  EXPECT_TRUE(ts::isdtype(ts::DType::uint8, "unsigned integer"));
  EXPECT_TRUE(ts::issubdtype(ts::DType::bfloat16, "floating"));
  EXPECT_EQ(ts::result_type({ts::zeros({1}, ts::DType::int32), ts::zeros({1}, ts::DType::float32)}), ts::DType::float32);
}
