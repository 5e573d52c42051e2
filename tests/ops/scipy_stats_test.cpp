// Error paths and identities of the jax.scipy.special additions (src/scipy/special_extra.cpp) and
// of ts::scipy::stats (src/scipy/stats.cpp); their values against JAX are in the parity suite
// (tests/parity/cases_special_extra.py, cases_stats.py, cases_stats_extra.py).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "expect_error.h"
#include "tessel/error.h"
#include "tessel/jit.h"
#include "tessel/ops.h"
#include "tessel/scipy_special.h"
#include "tessel/scipy_stats.h"
#include "tessel/transforms.h"

namespace ts = tessel;
namespace sp = tessel::scipy::special;
namespace st = tessel::scipy::stats;
using tessel_test::expect_error;

namespace {
std::vector<double> values(const ts::Array& a) { return ts::astype(a, ts::DType::float64).to_vector<double>(); }
}  // namespace

TEST(ScipySpecialExtra, RejectsBadArguments) {
  ts::Array x({0.5, 1.5, 2.5});
  expect_error<ts::ValueError>([&] { sp::bessel_jn(x, -1); }, {"bessel_jn", "v must be >= 0", "-1"});
  expect_error<ts::ValueError>([&] { sp::bessel_jn(x, 8, 5); }, {"bessel_jn", "n_iter (5)", "v (8)"});
  expect_error<ts::DTypeError>([&] { sp::sph_harm_y(x, ts::Array({0, 0, 0}), x, x); },
                               {"sph_harm_y", "integer"});
  expect_error<ts::DTypeError>([&] { sp::dawsn(ts::astype(x, ts::DType::complex64)); }, {"dawsn", "complex"});
  expect_error<ts::DTypeError>([&] { ts::Array h = ts::astype(x, ts::DType::float16); sp::hyp1f1(h, h, h); },
                               {"hyp1f1", "float16", "float32 or float64"});
}

TEST(ScipySpecialExtra, Identities) {
  ts::Array x({0.25, 1.0, 3.0});
  // Real input to wofz: w(x) = exp(-x^2) + 2i dawsn(x) / sqrt(pi).
  ts::Array w = sp::wofz(ts::astype(x, ts::DType::float64));
  std::vector<double> re = values(ts::real(w)), im = values(ts::imag(w)), d = values(sp::dawsn(ts::astype(x, ts::DType::float64)));
  std::vector<double> xv = values(x);
  for (size_t i = 0; i < xv.size(); ++i) {
    EXPECT_NEAR(re[i], std::exp(-xv[i] * xv[i]), 1e-13);
    EXPECT_NEAR(im[i], 2 * d[i] / std::sqrt(M_PI), 1e-13);
  }
  // J_0(0) = 1 is a limit: jn at small z, 1F1(a; a; x) = e^x, 2F1(a, b; b; x) = (1 - x)^-a.
  EXPECT_NEAR(values(sp::bessel_jn(ts::Array({1e-3}), 0))[0], 1.0, 1e-6);
  EXPECT_NEAR(values(sp::hyp1f1(ts::Array(1.5), ts::Array(1.5), ts::Array(0.7)))[0], std::exp(0.7), 1e-6);
  EXPECT_NEAR(values(sp::hyp2f1(ts::Array(0.5), ts::Array(2.0), ts::Array(2.0), ts::Array(0.3)))[0],
              std::pow(0.7, -0.5), 1e-6);
  // sph_harm_y without n_max reads max(n); Y_0^0 = 1 / (2 sqrt(pi)).
  ts::Array y = sp::sph_harm_y(ts::Array({0, 2}), ts::Array({0, 1}), ts::Array({0.3, 0.3}), ts::Array({0.1, 0.1}));
  EXPECT_NEAR(values(ts::real(y))[0], 0.5 / std::sqrt(M_PI), 1e-6);
}

TEST(ScipyStats, RejectsBadArguments) {
  ts::Array x({{0.1, 0.2}, {0.3, 0.4}});
  expect_error<ts::ShapeError>([&] { st::multivariate_normal::logpdf(x, ts::Array({0.0, 0.0}), ts::ones({3, 3})); },
                               {"multivariate_normal::logpdf", "(..., 2, 2)", "(3, 3)"});
  expect_error<ts::ShapeError>([&] { st::dirichlet::logpdf(x, x); }, {"dirichlet::logpdf", "one-dimensional", "(2, 2)"});
  expect_error<ts::ShapeError>([&] { st::dirichlet::logpdf(ts::ones({5}), ts::Array({1.0, 2.0})); },
                               {"dirichlet::logpdf", "2 or 1 entries"});
  expect_error<ts::DTypeError>([&] { st::multinomial::logpmf(x, ts::Array(3), ts::Array({0.5, 0.5})); },
                               {"multinomial::logpmf", "integer"});
  expect_error<ts::DTypeError>([&] { st::norm::logpdf(ts::astype(x, ts::DType::complex64)); }, {"norm::logpdf", "complex"});
}

TEST(ScipyStats, Identities) {
  ts::Array x({-1.5, 0.0, 0.7, 2.0});
  std::vector<double> p = values(st::norm::cdf(x)), back = values(st::norm::ppf(st::norm::cdf(x)));
  std::vector<double> xv = values(x);
  for (size_t i = 0; i < xv.size(); ++i) EXPECT_NEAR(back[i], xv[i], 1e-5);
  // The standard normal as a one-dimensional multivariate normal.
  std::vector<double> mv = values(st::multivariate_normal::logpdf(ts::reshape(x, {4, 1}), ts::Array({0.0f}), ts::ones({1, 1})));
  std::vector<double> uni = values(st::norm::logpdf(x));
  for (size_t i = 0; i < xv.size(); ++i) EXPECT_NEAR(mv[i], uni[i], 1e-5);
  // Integer k is promoted as jnp does; off-support points are -inf.
  std::vector<double> lp = values(st::poisson::logpmf(ts::Array({-1, 0, 2}), ts::Array(1.5f)));
  EXPECT_TRUE(std::isinf(lp[0]) && lp[0] < 0);
  EXPECT_NEAR(lp[1], -1.5, 1e-6);
}

TEST(ScipyStatsMode, MostCommonValueSmallestOnTies) {
  ts::Array x({{1, 2, 1, 3, 2, 1}, {3, 1, 3, 2, 1, 3}, {1, 2, 2, 3, 1, 2}});
  st::ModeResult cols = st::mode(x);
  EXPECT_EQ(cols.mode.to_vector<int32_t>(), (std::vector<int32_t>{1, 2, 1, 3, 1, 1}));
  EXPECT_EQ(cols.count.to_vector<int32_t>(), (std::vector<int32_t>{2, 2, 1, 2, 2, 1}));
  EXPECT_EQ(cols.count.dtype(), ts::DType::int32);
  st::ModeResult rows = st::mode(x, 1, "propagate", true);
  EXPECT_EQ(rows.mode.shape(), (ts::Shape{3, 1}));
  EXPECT_EQ(rows.mode.to_vector<int32_t>(), (std::vector<int32_t>{1, 3, 2}));
  EXPECT_EQ(rows.count.to_vector<int32_t>(), (std::vector<int32_t>{3, 3, 3}));
  st::ModeResult all = st::mode(x, std::nullopt);  // 1 occurs 7 times, 2 six times, 3 five times
  EXPECT_EQ(all.mode.shape(), ts::Shape{});
  EXPECT_EQ(all.mode.to_vector<int32_t>()[0], 1);
  EXPECT_EQ(all.count.to_vector<int32_t>()[0], 7);
  // NaNs count as one value: here the most common one.
  st::ModeResult nan = st::mode(ts::Array({NAN, 2.0f, NAN, 1.0f}));
  EXPECT_TRUE(std::isnan(values(nan.mode)[0]));
  EXPECT_EQ(nan.count.to_vector<int32_t>()[0], 2);
  // An empty axis: NaN, counted 0 times, as float32 (JAX's result).
  st::ModeResult empty = st::mode(ts::zeros({0, 2}, ts::DType::int32));
  EXPECT_EQ(empty.mode.dtype(), ts::DType::float32);
  EXPECT_EQ(empty.count.dtype(), ts::DType::float32);
  EXPECT_TRUE(std::isnan(values(empty.mode)[1]));
  EXPECT_EQ(values(empty.count), (std::vector<double>{0.0, 0.0}));
}

TEST(ScipyStatsRankdata, EveryTieMethod) {
  ts::Array x({3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5});
  auto ranks = [&](const char* method) { return values(st::rankdata(x, method)); };
  EXPECT_EQ(ranks("average"), (std::vector<double>{4.5, 1.5, 6, 1.5, 8, 11, 3, 10, 8, 4.5, 8}));
  EXPECT_EQ(ranks("min"), (std::vector<double>{4, 1, 6, 1, 7, 11, 3, 10, 7, 4, 7}));
  EXPECT_EQ(ranks("max"), (std::vector<double>{5, 2, 6, 2, 9, 11, 3, 10, 9, 5, 9}));
  EXPECT_EQ(ranks("dense"), (std::vector<double>{3, 1, 4, 1, 5, 7, 2, 6, 5, 3, 5}));
  EXPECT_EQ(ranks("ordinal"), (std::vector<double>{4, 1, 6, 2, 7, 11, 3, 10, 8, 5, 9}));
  EXPECT_EQ(st::rankdata(x).dtype(), ts::DType::float32);
  // Along an axis; a slice holding a NaN ranks as NaN, the others as usual.
  ts::Array m({{1.0, double(NAN), 2.0}, {3.0, 3.0, 1.0}});
  std::vector<double> r = values(st::rankdata(m, "average", 1));
  EXPECT_TRUE(std::isnan(r[0]) && std::isnan(r[1]) && std::isnan(r[2]));
  EXPECT_EQ(std::vector<double>(r.begin() + 3, r.end()), (std::vector<double>{2.5, 2.5, 1.0}));
  EXPECT_EQ(values(st::rankdata(m, "max", 0)).size(), 6u);
  EXPECT_EQ(st::rankdata(ts::Array(7.0)).shape(), ts::Shape{1});  // flattened: a scalar is one element
}

TEST(ScipyStatsOrderStatistics, SameUnderJitAndVmap) {
  ts::Array x({{2.0f, 7.0f, 2.0f, 7.0f, 1.0f}, {0.5f, 0.5f, 4.0f, 4.0f, 4.0f}});
  auto modes = [](const ts::Array& v) { return st::mode(v, -1).mode; };
  auto ranks = [](const ts::Array& v) { return st::rankdata(v, "average"); };
  const std::vector<double> want_modes{2.0, 4.0}, want_ranks{2.5, 4.5, 2.5, 4.5, 1.0, 1.5, 1.5, 4.0, 4.0, 4.0};
  EXPECT_EQ(values(modes(x)), want_modes);
  EXPECT_EQ(values(ts::jit(modes)(x)), want_modes);
  EXPECT_EQ(values(ts::vmap(modes)(x)), want_modes);  // each row is a 1-D slice under vmap
  EXPECT_EQ(values(ts::vmap(ranks)(x)), want_ranks);
  EXPECT_EQ(values(ts::jit(ts::vmap(ranks))(x)), want_ranks);
  EXPECT_EQ(values(st::rankdata(x, "average", 1)), want_ranks);
}

TEST(ScipyStatsOrderStatistics, RejectsBadArguments) {
  ts::Array x({{1.0, 2.0}, {3.0, 4.0}});
  expect_error<ts::ValueError>([&] { st::mode(x, 2); }, {"stats::mode", "axis 2", "(2, 2)", "[-2, 2)"});
  expect_error<ts::ValueError>([&] { st::rankdata(x, "average", -3); }, {"stats::rankdata", "axis -3", "(2, 2)"});
  expect_error<ts::ValueError>([&] { st::rankdata(ts::Array(1.0), "average", 0); }, {"stats::rankdata", "axis 0", "()"});
  expect_error<ts::ValueError>([&] { st::rankdata(x, "mean"); },
                               {"stats::rankdata", "method \"mean\"", "\"average\", \"min\", \"max\", \"dense\" or \"ordinal\""});
  expect_error<ts::NotImplementedError>([&] { st::mode(x, 0, "omit"); },
                                        {"stats::mode", "nan_policy \"omit\"", "pass nan_policy \"propagate\""});
  expect_error<ts::NotImplementedError>([&] { st::rankdata(x, "min", std::nullopt, "raise"); },
                                        {"stats::rankdata", "nan_policy \"raise\"", "ts::any(ts::isnan(a))"});
  expect_error<ts::ValueError>([&] { st::mode(x, 0, "ignore"); }, {"stats::mode", "nan_policy \"ignore\"", "\"propagate\""});
}
