// The special-function primitives (tessel/special.h) and scipy::special (tessel/scipy_special.h)
// against SciPy's float64 values (scipy 1.17, written here), in float64 and float32; jit and
// vmap against eager; derivatives against central differences; JAX's undefined derivatives and
// bad dtypes as errors. tests/parity/cases_special.py checks the same functions against JAX
// on more points; docs/special.md has their measured errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "expect_error.h"
#include "tessel/numpy.h"
#include "tessel/ops.h"
#include "tessel/scipy_special.h"
#include "tessel/special.h"
#include "tessel/transforms.h"

namespace ts = tessel;
namespace sp = tessel::scipy::special;
using tessel_test::expect_error;

namespace {

ts::Array f64(const std::vector<double>& v) { return ts::Array(v, ts::Shape{int64_t(v.size())}); }

/// Each computed value within `rtol` (relative) of the reference.
void expect_close(const ts::Array& got, const std::vector<double>& want, double rtol, const char* what) {
  std::vector<double> g = ts::astype(got, ts::DType::float64).to_vector<double>();
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(g[i])) << what << "[" << i << "] = " << g[i];
      continue;
    }
    if (std::isinf(want[i])) {
      EXPECT_EQ(g[i], want[i]) << what << "[" << i << "]";
      continue;
    }
    EXPECT_NEAR(g[i], want[i], rtol * std::abs(want[i]) + 1e-300) << what << "[" << i << "]";
  }
}

/// Unary functions in float64 and float32.
void check_unary(const std::function<ts::Array(const ts::Array&)>& f, const std::vector<double>& x,
                 const std::vector<double>& want, double rtol64, const char* what) {
  expect_close(f(f64(x)), want, rtol64, what);
  expect_close(f(ts::astype(f64(x), ts::DType::float32)), want, 2e-5, what);
}

TEST(SpecialPrimitives, LgammaDigammaAgainstScipy) {
  const std::vector<double> x = {0.1, 0.5, 1.5, 2.5, 7.0, -0.5, -2.5};
  check_unary(ts::lgamma, x,
              {2.252712651734206, 0.5723649429247, -0.12078223763524526, 0.2846828704729192, 6.579251212010101,
               1.2655121234846454, -0.05624371649767401},
              1e-13, "lgamma");
  check_unary(ts::digamma, x,
              {-10.423754940411076, -1.9635100260214235, 0.03648997397857652, 0.7031566406452432, 1.872784335098467,
               0.03648997397857651, 1.1031566406452433},
              1e-12, "digamma");
}

TEST(SpecialPrimitives, PolesAndInfinities) {
  const std::vector<double> poles = {0.0, -1.0, -2.0};
  expect_close(ts::lgamma(f64(poles)), {INFINITY, INFINITY, INFINITY}, 0, "lgamma poles");
  expect_close(ts::digamma(f64(poles)), {NAN, NAN, NAN}, 0, "digamma poles");
  expect_close(ts::lgamma(f64({INFINITY, -INFINITY, NAN})), {INFINITY, INFINITY, NAN}, 0, "lgamma inf");
  expect_close(ts::igamma(f64({1.0, -1.0, 0.0}), f64({INFINITY, 1.0, 0.0})), {1.0, NAN, NAN}, 0, "igamma edges");
  expect_close(ts::betainc(f64({1.0, 1.0}), f64({1.0, 1.0}), f64({0.0, 1.5})), {0.0, NAN}, 0, "betainc edges");
  expect_close(ts::zeta(f64({1.0, 0.5, 2.0}), f64({1.0, 1.0, -1.0})), {INFINITY, NAN, INFINITY}, 0, "zeta edges");
}

TEST(SpecialPrimitives, BesselAgainstScipy) {
  const std::vector<double> x = {0.0, 0.5, 3.0, 9.0, -20.0};
  check_unary(ts::bessel_i0e, x, {1.0, 0.64503527044915, 0.24300035416182536, 0.134959524581723, 0.089780311884826},
              1e-14, "i0e");
  check_unary(ts::bessel_i1e, x,
              {0.0, 0.15642080318487173, 0.19682671329730084, 0.1272249839358912, -0.08750622218328867}, 1e-14, "i1e");
}

TEST(SpecialPrimitives, IncompleteGammaAndBetaAgainstScipy) {
  for (ts::DType dt : {ts::DType::float64, ts::DType::float32}) {
    const double rtol = dt == ts::DType::float64 ? 1e-13 : 2e-5;
    ts::Array a = ts::astype(f64({0.5, 2.0, 5.0, 2.0}), dt), x = ts::astype(f64({0.3, 3.0, 2.0, 10.0}), dt);
    expect_close(ts::igamma(a, x), {0.5614219739190003, 0.8008517265285442, 0.052653017343711125, 0.9995006007726127},
                 rtol, "igamma");
    expect_close(ts::igammac(a, x),
                 {0.4385780260809997, 0.1991482734714558, 0.9473469826562889, 0.0004993992273873336}, rtol * 10,
                 "igammac");
    expect_close(ts::betainc(ts::astype(f64({0.5, 2, 5, 10}), dt), ts::astype(f64({0.5, 3, 1.5, 10}), dt),
                             ts::astype(f64({0.3, 0.6, 0.9, 0.5}), dt)),
                 {0.36901011956554536, 0.8208, 0.7761721343162159, 0.5}, rtol * 10, "betainc");
    expect_close(ts::polygamma(ts::astype(f64({1, 2, 3}), dt), ts::astype(f64({0.5, 3.0, 1.5}), dt)),
                 {4.93480220054468, -0.15411380631918856, 1.4090910340024367}, rtol * 10, "polygamma");
    expect_close(ts::zeta(ts::astype(f64({2, 3, 4.5}), dt), ts::astype(f64({1, 0.5, 2.0}), dt)),
                 {1.6449340668482266, 8.414398322117158, 0.054707510761454255}, rtol, "zeta");
  }
}

TEST(SpecialPrimitives, ScalarOperandsBroadcastAndWeakScalarsTakeTheArrayDtype) {
  ts::Array x = ts::astype(f64({0.3, 3.0}), ts::DType::float32);
  ts::Array p = ts::igamma(ts::Array(2.0), x);
  EXPECT_EQ(p.dtype(), ts::DType::float32);
  EXPECT_EQ(p.shape(), (ts::Shape{2}));
}

TEST(SpecialPrimitives, JitAndVmapAgreeWithEager) {
  ts::Array a = f64({0.5, 2.0, 5.0, 2.0}), x = f64({0.3, 3.0, 2.0, 10.0});
  auto f = [](const ts::Array& a, const ts::Array& x) {
    return ts::igamma(a, x) + ts::lgamma(x) * ts::digamma(a) + ts::bessel_i0e(x) + ts::betainc(a, a, x / 11.0) +
           ts::zeta(a + 1.5, x);
  };
  std::vector<double> eager = f(a, x).to_vector<double>();
  std::vector<double> jitted = ts::jit(f)(a, x).to_vector<double>();
  std::vector<double> mapped = ts::vmap(f)(a, x).to_vector<double>();
  for (size_t i = 0; i < eager.size(); ++i) {
    EXPECT_NEAR(jitted[i], eager[i], 1e-14 * std::abs(eager[i])) << i;
    EXPECT_NEAR(mapped[i], eager[i], 1e-14 * std::abs(eager[i])) << i;
  }
}

TEST(SpecialPrimitives, FusedLoopsGiveTheUnfusedValues) {
  // Every primitive in one generated loop nest (the scalar functions are embedded in the
  // generated code), against the unfused kernels.
  const char* old = std::getenv("TESSEL_FUSION_MIN_ELEMENTS");
  const std::string saved = old ? old : "";
  setenv("TESSEL_FUSION_MIN_ELEMENTS", "0", 1);
  for (ts::DType dt : {ts::DType::float32, ts::DType::float64}) {
    ts::Array a = ts::astype(f64({0.5, 2.0, 5.0, 2.0, 9.5}), dt), x = ts::astype(f64({0.3, 3.0, 2.0, 10.0, 0.7}), dt);
    auto f = [](const ts::Array& a, const ts::Array& x) {
      return ts::igamma(a, x) + ts::igammac(a, x) * ts::lgamma(x) + ts::digamma(a) + ts::bessel_i0e(x) +
             ts::bessel_i1e(-x) + ts::betainc(a, a, x / 11.0) + ts::zeta(a + 1.5, x) + ts::polygamma(a - a + 2.0, x) +
             ts::igamma_grad_a(a, x) + ts::random_gamma_grad(a, x) + sp::expi(x) + sp::exp1(x) + sp::expn(a - a + 3.0, x);
    };
    std::vector<double> eager = ts::astype(f(a, x), ts::DType::float64).to_vector<double>();
    std::vector<double> fused = ts::astype(ts::jit(f)(a, x), ts::DType::float64).to_vector<double>();
    const double tol = dt == ts::DType::float32 ? 1e-6 : 1e-14;
    for (size_t i = 0; i < eager.size(); ++i) EXPECT_NEAR(fused[i], eager[i], tol * std::abs(eager[i])) << i;
  }
  if (old) setenv("TESSEL_FUSION_MIN_ELEMENTS", saved.c_str(), 1);
  else unsetenv("TESSEL_FUSION_MIN_ELEMENTS");
}

/// grad of sum(f(x)) against central differences, element by element.
void check_grad(const std::function<ts::Array(const ts::Array&)>& f, const std::vector<double>& x, double rtol,
                const char* what) {
  ts::Array g = ts::grad([&](const ts::Array& v) { return ts::sum(f(v)); })(f64(x));
  std::vector<double> got = g.to_vector<double>();
  for (size_t i = 0; i < x.size(); ++i) {
    const double h = 1e-6 * std::max(1.0, std::abs(x[i]));
    auto at = [&](double d) {
      std::vector<double> y = x;
      y[i] += d;
      return f(f64(y)).to_vector<double>()[i];
    };
    const double fd = (at(h) - at(-h)) / (2 * h);
    EXPECT_NEAR(got[i], fd, rtol * std::max(1.0, std::abs(fd))) << what << " at " << x[i];
  }
}

TEST(SpecialPrimitives, DerivativesMatchFiniteDifferences) {
  const std::vector<double> x = {0.3, 1.7, 4.2, -2.5};
  check_grad(ts::lgamma, x, 1e-7, "lgamma");
  check_grad(ts::digamma, x, 1e-6, "digamma");
  check_grad(ts::bessel_i0e, {0.3, -1.7, 9.5}, 1e-7, "i0e");
  check_grad(ts::bessel_i1e, {0.3, -1.7, 9.5}, 1e-7, "i1e");
  check_grad([](const ts::Array& a) { return ts::igamma(a, ts::full_like(a, 2.0)); }, {0.5, 1.5, 3.0}, 1e-6,
             "igamma da");
  check_grad([](const ts::Array& v) { return ts::igammac(ts::full_like(v, 2.5), v); }, {0.5, 1.5, 3.0}, 1e-7,
             "igammac dx");
  check_grad([](const ts::Array& v) { return ts::betainc(ts::full_like(v, 2.0), ts::full_like(v, 3.5), v); },
             {0.1, 0.5, 0.8}, 1e-7, "betainc dx");
  check_grad([](const ts::Array& v) { return ts::zeta(ts::full_like(v, 3.0), v); }, {0.5, 1.5, 3.0}, 1e-6, "zeta dq");
  check_grad([](const ts::Array& v) { return ts::polygamma(ts::full_like(v, 1.0), v); }, {0.5, 1.5}, 1e-6,
             "polygamma dx");
  // The sample derivative is -(dP/da) / (dP/dx).
  ts::Array a = f64({0.5, 2.0, 7.0}), s = f64({0.4, 2.5, 9.0});
  ts::Array want = -ts::igamma_grad_a(a, s) / ts::exp((-s + (a - 1.0) * ts::log(s)) - ts::lgamma(a));
  expect_close(ts::random_gamma_grad(a, s), want.to_vector<double>(), 1e-10, "random_gamma_grad");
}

TEST(SpecialPrimitives, UndefinedDerivativesThrow) {
  auto grad_of = [](auto f) { return [f] { ts::grad([&](const ts::Array& v) { return ts::sum(f(v)); })(f64({0.5, 1.5})); }; };
  expect_error<ts::ValueError>(grad_of([](const ts::Array& v) { return ts::polygamma(v, v); }),
                               {"polygamma", "derivative with respect to n"});
  expect_error<ts::ValueError>(grad_of([](const ts::Array& v) { return ts::betainc(v, v, ts::full_like(v, 0.5)); }),
                               {"betainc", "with respect to a"});
  expect_error<ts::ValueError>(grad_of([](const ts::Array& v) { return ts::zeta(v + 2.0, v); }),
                               {"zeta", "with respect to x"});
  expect_error<ts::ValueError>(grad_of([](const ts::Array& v) { return ts::igamma_grad_a(v, v); }),
                               {"igamma_grad_a"});
}

TEST(SpecialPrimitives, IntegerOperandsAreDTypeErrors) {
  ts::Array i = ts::arange(3);
  expect_error<ts::DTypeError>([&] { ts::lgamma(i); }, {"lgamma", "int32", "floating", "astype(float32)"});
  expect_error<ts::DTypeError>([&] { ts::igamma(i, i); }, {"igamma", "int32", "astype"});
  expect_error<ts::DTypeError>([&] { sp::polygamma(ts::Array(1.0), ts::Array(1.0)); },
                               {"polygamma", "integer dtype", "astype(int32)"});
  expect_error<ts::DTypeError>([&] { sp::ndtri(ts::astype(ts::arange(3), ts::DType::float16)); },
                               {"ndtri", "float16", "float32 or float64"});
  expect_error<ts::DTypeError>([&] { sp::gammaln(ts::astype(ts::arange(3), ts::DType::complex64)); },
                               {"gammaln", "complex"});
}

TEST(ScipySpecial, ValuesAgainstScipy) {
  check_unary(sp::expi, {-2.0, 0.5, 3.0, 50.0},
              {-0.048900510708061125, 0.45421990486317354, 9.933832570625416, 1.058563689713169e+20}, 1e-13, "expi");
  check_unary(sp::exp1, {0.1, 1.0, 5.0}, {1.8229239584193906, 0.2193839343955205, 0.0011482955912753257}, 1e-13,
              "exp1");
  expect_close(sp::expn(f64({0, 2, 3}), f64({1.0, 0.5, 4.0})),
               {0.36787944117144233, 0.3266438623245532, 0.002761360945689982}, 1e-13, "expn");
  check_unary(sp::ndtri, {1e-10, 0.1, 0.5, 0.975}, {-6.361340902404056, -1.2815515655446004, 0.0, 1.959963984540054},
              1e-14, "ndtri");
  check_unary(sp::spence, {0.2, 1.2, 3.0}, {1.0747946000082482, -0.19080013777753554, -1.436746366883681}, 1e-13,
              "spence");
  check_unary(sp::erfcx, {-1.0, 0.5, 30.0}, {5.008980080762283, 0.6156903441929258, 0.018795888861416754}, 1e-13,
              "erfcx");
  check_unary([](const ts::Array& x) { return sp::log_ndtr(x); }, {-30.0, -3.0, 2.0, 10.0},
              {-454.32124395634327, -6.60772622151035, -0.023012909328963476, -7.61985302416047e-24}, 1e-12,
              "log_ndtr");
  expect_close(sp::bernoulli(8), {1, -0.5, 1.0 / 6, 0, -1.0 / 30, 0, 1.0 / 42, 0, -1.0 / 30}, 1e-5, "bernoulli");
  check_unary(sp::gamma, {0.5, 5.0, -1.5}, {std::sqrt(M_PI), 24.0, 4 * std::sqrt(M_PI) / 3}, 1e-13, "gamma");
  expect_close(sp::comb(f64({5, 10, 3}), f64({2, 3, 5})), {10, 120, 0}, 1e-12, "comb");
  expect_close(sp::comb(f64({5}), f64({2}), true), {15}, 1e-12, "comb repetition");
  expect_close(sp::xlogy(f64({0.0, 2.0}), f64({0.0, 3.0})), {0.0, 2 * std::log(3.0)}, 1e-15, "xlogy");
  expect_close(sp::entr(f64({-1.0, 0.0, 0.5})), {-INFINITY, 0.0, 0.5 * std::log(2.0)}, 1e-15, "entr");
  expect_close(sp::rel_entr(f64({0.0, 0.5, 1.0}), f64({0.0, 0.25, 0.0})), {0.0, 0.5 * std::log(2.0), INFINITY}, 1e-15,
               "rel_entr");
  expect_close(sp::multigammaln(f64({3.0}), 2), {std::log(M_PI) / 2 + std::lgamma(3.0) + std::lgamma(2.5)}, 1e-14,
               "multigammaln");
}

TEST(ScipySpecial, IntegersPromoteToFloat) {
  ts::Array g = sp::gammaln(ts::arange(4) + 1);
  EXPECT_TRUE(ts::is_floating(g.dtype()));
  const std::vector<double> got = ts::astype(g, ts::DType::float64).to_vector<double>();
  const double want[] = {0.0, 0.0, std::log(2.0), std::log(6.0)};
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;
}

TEST(ScipySpecial, CustomDerivativesAreJaxs) {
  // scipy's i0 is JAX's exp(|x|) i0e(x) without a custom rule (its derivative at 0 is abs's, 1);
  // jnp.i0 below has the rule.
  check_grad(sp::i0, {0.7, -3.0}, 1e-7, "i0");
  check_grad(sp::i1, {0.0, 0.7, -3.0}, 1e-7, "i1");
  check_grad(sp::expi, {-1.5, 0.5, 3.0}, 1e-7, "expi");
  check_grad(sp::exp1, {0.5, 3.0}, 1e-7, "exp1");
  check_grad(sp::erfcx, {-1.0, 0.5, 3.0}, 1e-7, "erfcx");
  check_grad([](const ts::Array& x) { return sp::log_ndtr(x); }, {-25.0, -3.0, 0.5, 6.0}, 1e-6, "log_ndtr");
  check_grad(sp::logit, {0.2, 0.7}, 1e-7, "logit");
  check_grad(sp::ndtri, {0.01, 0.3, 0.9}, 1e-6, "ndtri");
  check_grad(sp::spence, {0.3, 1.7, 4.0}, 1e-6, "spence");
  check_grad([](const ts::Array& z) { return sp::poch(z, ts::full_like(z, 2.5)); }, {0.5, 1.5}, 1e-6, "poch");
  // jnp.i0 at 0: JAX's rule gives 0 where abs's derivative would give 1.
  ts::Array d = ts::grad([](const ts::Array& v) { return ts::sum(ts::i0(v)); })(f64({0.0}));
  EXPECT_EQ(d.to_vector<double>()[0], 0.0);
}

TEST(ScipySpecial, KaiserWindowMatchesNumpy) {
  // numpy.kaiser(5, 2.5)
  expect_close(ts::astype(ts::kaiser(5, 2.5), ts::DType::float64),
               {0.3039662294153687, 0.7791669747707872, 1.0, 0.7791669747707872, 0.3039662294153687}, 2e-6,
               "kaiser");
  EXPECT_EQ(ts::kaiser(1, 2.0).shape(), (ts::Shape{1}));
  EXPECT_EQ(ts::kaiser(0, 2.0).shape(), (ts::Shape{0}));
}

}  // namespace
