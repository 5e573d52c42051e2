// Error paths and identities of the jax.scipy.special additions (src/scipy/special_extra.cpp) and
// of ts::scipy::stats (src/scipy/stats.cpp); their values against JAX are in the parity suite
// (tests/parity/cases_special_extra.py, cases_stats.py).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "expect_error.h"
#include "tessel/error.h"
#include "tessel/ops.h"
#include "tessel/scipy_special.h"
#include "tessel/scipy_stats.h"

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
