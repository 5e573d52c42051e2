// jax.scipy.special over tessel's primitives (include/tessel/scipy_special.h, docs/special.md).
// Each function follows JAX's formula (jax/_src/scipy/special.py) with the same custom
// derivatives; the special functions themselves are the lax-level primitives of
// src/ops/special.cpp.
#include "tessel/scipy_special.h"

#include <cmath>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include "ops/linalg_composed.h"
#include "ops/special.h"
#include "scipy/special_util.h"
#include "tessel/error.h"
#include "tessel/nn.h"
#include "tessel/numpy.h"
#include "tessel/ops.h"
#include "tessel/random.h"
#include "tessel/special.h"
#include "tessel/transforms.h"

namespace tessel::scipy::special {
namespace {

constexpr double kPi = std::numbers::pi;

/// The shared argument checks (src/scipy/special_util.h) with this module's name in messages.
Array real_inexact(const char* fn, const Array& x) { return scipy::detail::real_inexact(std::string("special::") + fn, x); }
/// Both arguments promoted to one real inexact dtype.
std::pair<Array, Array> real_inexact(const char* fn, const Array& a, const Array& b) {
  std::vector<Array> v = scipy::detail::real_inexact_all(std::string("special::") + fn, {a, b});
  return {v[0], v[1]};
}
Array f32_or_f64(const char* fn, const Array& x) { return scipy::detail::f32_or_f64(std::string("special::") + fn, x); }
using scipy::detail::horner;

/// x log(x) with JAX's derivative log(x) + 1 (finite at the selected points of entr, rel_entr).
const auto xlogx_fn = custom_jvp([](const Array& x) { return xlogy(x, x); },
                                 [](const std::tuple<Array>& p, const std::tuple<Array>& t) {
                                   const Array& x = std::get<0>(p);
                                   return std::pair(xlogy(x, x), std::get<0>(t) * (log(x) + Array(1.0)));
                                 });

/// x f(y), 0 where x = 0 unless y is NaN, with JAX's rule dx f(y) + dy x f'(y) (xlogy, xlog1py).
template <Array (*F)(const Array&), Array (*DF)(const Array&)> auto x_times() {
  auto value = [](const Array& x, const Array& y) {
    return where((x != Array(0.0)) | isnan(y), x * F(y), zeros_like(x));
  };
  return custom_jvp(value, [value](const std::tuple<Array, Array>& p, const std::tuple<Array, Array>& t) {
    const auto& [x, y] = p;
    const auto& [dx, dy] = t;
    return std::pair(value(x, y), dx * F(y) + dy * x * DF(y));
  });
}
Array log_(const Array& y) { return log(y); }
Array log1p_(const Array& y) { return log1p(y); }
Array dlog(const Array& y) { return Array(1.0) / y; }
Array dlog1p(const Array& y) { return Array(1.0) / (Array(1.0) + y); }
const auto xlogy_fn = x_times<log_, dlog>();
const auto xlog1py_fn = x_times<log1p_, dlog1p>();

const auto logit_fn = custom_jvp([](const Array& x) { return log(x / (Array(1.0) - x)); },
                                 [](const std::tuple<Array>& p, const std::tuple<Array>& t) {
                                   const Array& x = std::get<0>(p);
                                   return std::pair(log(x / (Array(1.0) - x)),
                                                    std::get<0>(t) / (x * (Array(1.0) - x)));
                                 });

/// Gamma(z + m) / Gamma(z), 1 at m = 0.
Array poch_value(const Array& z, const Array& m) {
  return where(m == Array(0.0), ones_like(z), gamma(z + m) / gamma(z));
}
const auto poch_fn = custom_jvp([](const Array& z, const Array& m) { return poch_value(z, m); },
                                [](const std::tuple<Array, Array>& p, const std::tuple<Array, Array>& t) {
                                  const auto& [z, m] = p;
                                  const auto& [dz, dm] = t;
                                  Array out = poch_value(z, m);
                                  Array dzm = tessel::digamma(z + m);
                                  return std::pair(out, dz * ((dzm - tessel::digamma(z)) * out) + dm * (dzm * out));
                                });

// erfcx: exp(x^2) erfc(x), with the asymptotic series 1/(x sqrt(pi)) sum c_k / x^2k beyond
// sqrt(log(max float)), where exp(x^2) overflows. Derivative 2 x erfcx(x) - 2 / sqrt(pi).
Array erfcx_value(const Array& x) {
  const bool f64 = x.dtype() == DType::float64;
  const double threshold = std::sqrt(std::log(f64 ? std::numeric_limits<double>::max() : double(std::numeric_limits<float>::max())));
  Array large = x > Array(threshold);
  Array safe_x = where(large, ones_like(x), x);
  Array direct = exp(square(safe_x)) * tessel::erfc(safe_x);
  Array t = Array(1.0) / square(x);
  Array series = f64 ? horner({7918.06640625, -1055.7421875, 162.421875, -29.53125, 6.5625, -1.875, .75, -.5, 1.}, t)
                     : horner({6.5625, -1.875, .75, -.5, 1.}, t);
  Array asymptotic = series / (x * Array(std::sqrt(kPi)));
  return where(large, asymptotic, direct);
}
const auto erfcx_fn = custom_jvp([](const Array& x) { return erfcx_value(x); },
                                 [](const std::tuple<Array>& p, const std::tuple<Array>& t) {
                                   const Array& x = std::get<0>(p);
                                   Array out = erfcx_value(x);
                                   return std::pair(out, std::get<0>(t) * (Array(2.0) * x * out -
                                                                            Array(2.0 / std::sqrt(kPi))));
                                 });

/// (2n - 1)!! as a double.
double double_factorial(int n) {
  double r = 1;
  for (int k = n; k > 1; k -= 2) r *= k;
  return r;
}

/// log(ndtr(x)) for x below the lower segment: the asymptotic series of the normal tail.
Array log_ndtr_lower(const Array& x, int series_order) {
  Array x2 = square(x);
  Array log_scale = Array(-0.5) * x2 - log(-x) - Array(0.5 * std::log(2 * kPi));
  Array series = ones_like(x);
  if (series_order > 0) {
    Array even = zeros_like(x), odd = zeros_like(x), x2n = x2;
    for (int n = 1; n <= series_order; ++n) {
      Array y = Array(double_factorial(2 * n - 1)) / x2n;
      if (n % 2) odd = odd + y;
      else even = even + y;
      x2n = x2n * x2;
    }
    series = Array(1.0) + even - odd;
  }
  return log_scale + log(series);
}

Array log_ndtr_value(const Array& x, int series_order) {
  const bool f64 = x.dtype() == DType::float64;
  const double lower = f64 ? -20 : -10, upper = f64 ? 8 : 5;
  Array above = x > Array(upper);
  Array ndtr_arg = where(above, -x, maximum(x, full_like(x, Scalar(lower))));
  Array ndtr_res = ndtr(ndtr_arg);
  return where(above, -ndtr_res,
               where(x > Array(lower), log(ndtr_res), log_ndtr_lower(minimum(x, full_like(x, Scalar(lower))), series_order)));
}

}  // namespace

// ---- gamma and beta functions ----

Array gammaln(const Array& x) { return tessel::lgamma(real_inexact("gammaln", x)); }
Array digamma(const Array& x) { return tessel::digamma(real_inexact("digamma", x)); }

Array loggamma(const Array& x0) {
  Array x = real_inexact("loggamma", x0);
  return where(x > Array(0.0), tessel::lgamma(x), full_like(x, Scalar(NAN)));
}

Array gammasgn(const Array& x0) {
  Array x = real_inexact("gammasgn", x0);
  Array floor_x = floor(x), negative = x < Array(0.0);
  Array pole = (negative & (x == floor_x)) | isnan(x);
  Array minus = (negative & (remainder(floor_x, Array(2.0)) != Array(0.0))) | ((x == Array(0.0)) & signbit(x));
  return where(pole, full_like(x, Scalar(NAN)), where(minus, full_like(x, Scalar(-1.0)), ones_like(x)));
}

Array gamma(const Array& x0) {
  Array x = real_inexact("gamma", x0);
  return gammasgn(x) * exp(tessel::lgamma(x));
}

Array polygamma(const Array& n, const Array& x) {
  if (!is_integer(n.dtype()))
    throw DTypeError(std::string("scipy::special::polygamma: the order n must have an integer dtype, got ") +
                     dtype_name(n.dtype()) + "; convert it with astype(int32)");
  auto [nf, xf] = real_inexact("polygamma", n, x);
  return tessel::polygamma(nf, xf);
}

Array betaln(const Array& a0, const Array& b0) {
  auto [a, b] = real_inexact("betaln", a0, b0);
  return (tessel::lgamma(a) + tessel::lgamma(b)) - tessel::lgamma(a + b);
}

Array beta(const Array& a0, const Array& b0) {
  auto [a, b] = real_inexact("beta", a0, b0);
  Array sign = gammasgn(a) * gammasgn(b) * gammasgn(a + b);
  return sign * exp(betaln(a, b));
}

Array betainc(const Array& a0, const Array& b0, const Array& x0) {
  std::vector<Array> v = ops::promote_all({a0, b0, x0});
  return tessel::betainc(real_inexact("betainc", v[0]), real_inexact("betainc", v[1]), real_inexact("betainc", v[2]));
}

Array gammainc(const Array& a0, const Array& x0) {
  auto [a, x] = real_inexact("gammainc", a0, x0);
  return tessel::igamma(a, x);
}

Array gammaincc(const Array& a0, const Array& x0) {
  auto [a, x] = real_inexact("gammaincc", a0, x0);
  return tessel::igammac(a, x);
}

Array multigammaln(const Array& a0, int64_t d) {
  if (d < 1)
    throw ValueError("scipy::special::multigammaln: the dimension d must be at least 1, got " + std::to_string(d));
  Array a = real_inexact("multigammaln", a0);
  const double dd = double(d);
  Array res = tessel::lgamma(a);
  for (int64_t j = 1; j < d; ++j) res = res + tessel::lgamma(a - Array(double(j) / 2));
  return res + Array(0.25 * dd * (dd - 1) * std::log(kPi));
}

Array factorial(const Array& n0) {
  Array n = real_inexact("factorial", n0);
  return where(n < Array(0.0), zeros_like(n), exp(tessel::lgamma(n + Array(1.0))));
}

Array comb(const Array& N0, const Array& k0, bool repetition) {
  auto [N, k] = real_inexact("comb", N0, k0);
  if (repetition) return where((k == Array(0.0)) & (N >= Array(0.0)), ones_like(N + k), comb(N + k - Array(1.0), k));
  Array ok = (k <= N) & (N >= Array(0.0)) & (k >= Array(0.0));
  Array safe_N = where(ok, N, zeros_like(N)), safe_k = where(ok, k, zeros_like(k));
  Array r = exp(gammaln(safe_N + Array(1.0)) - gammaln(safe_k + Array(1.0)) - gammaln(safe_N + Array(1.0) - safe_k));
  return where(ok, r, zeros_like(r));
}

Array poch(const Array& z0, const Array& m0) {
  auto [z, m] = real_inexact("poch", z0, m0);
  return poch_fn(z, m);
}

Array zeta(const Array& x0, const Array& q0) {
  auto [x, q] = real_inexact("zeta", x0, q0);
  return tessel::zeta(x, q);
}

Array bernoulli(int64_t n) {
  if (n < 0)
    throw ValueError("scipy::special::bernoulli: n must be a non-negative integer, got " + std::to_string(n));
  // B_m for even m >= 4 is (-1)^(m/2+1) 2 m! / (2 pi)^m zeta(m): the products built up term by
  // term, zeta(m) as 1 + sum_{k=2}^{49} k^-m (2^-50 < 1e-15), as JAX computes them.
  std::vector<double> b(size_t(n) + 1, 0.0);
  const double first[] = {1.0, -0.5, 1.0 / 6};
  for (int64_t i = 0; i <= std::min<int64_t>(n, 2); ++i) b[size_t(i)] = first[i];
  double q1 = 1.0 / (kPi * kPi);
  for (int64_t m = 4; m <= n; m += 2) {
    q1 *= -double(m - 1) * double(m) / 4 / (kPi * kPi);
    double q2 = 0;
    for (int k = 2; k < 50; ++k) q2 += std::pow(double(k), -double(m));
    b[size_t(m)] = q1 * (1 + q2);
  }
  return astype(Array(b, Shape{n + 1}), default_float);
}

// ---- error function and normal distribution ----

Array erf(const Array& x) { return tessel::erf(real_inexact("erf", x)); }
Array erfc(const Array& x) { return tessel::erfc(real_inexact("erfc", x)); }
Array erfinv(const Array& x) { return tessel::erf_inv(real_inexact("erfinv", x)); }
Array erfcx(const Array& x) { return erfcx_fn(f32_or_f64("erfcx", x)); }

Array ndtr(const Array& x0) {
  Array x = f32_or_f64("ndtr", x0);
  const double half_sqrt_2 = 0.5 * std::sqrt(2.0);
  Array w = x * Array(half_sqrt_2);
  Array z = abs(w);
  Array y = where(z < Array(half_sqrt_2), Array(1.0) + tessel::erf(w),
                  where(w > Array(0.0), Array(2.0) - tessel::erfc(z), tessel::erfc(z)));
  return Array(0.5) * y;
}

Array ndtri(const Array& p0) {
  Array p = f32_or_f64("ndtri", p0);
  // Cephes' ndtri: a rational function of (p - 1/2)^2 in the middle, of 1 / sqrt(-2 log p)
  // in the tails (two pieces), on the smaller of p and 1 - p.
  const double exp_m2 = std::exp(-2.0);
  Array mcp = where(p > Array(-std::expm1(-2.0)), Array(1.0) - p, p);
  Array safe = where(mcp == Array(0.0), full_like(p, Scalar(0.5)), mcp);
  Array w = safe - Array(0.5);
  Array ww = square(w);
  Array big_p = w + w * ww *
                        (horner({-5.99633501014107895267E1, 9.80010754185999661536E1, -5.66762857469070293439E1,
                                 1.39312609387279679503E1, -1.23916583867381258016E0},
                                ww) /
                         horner({1.0, 1.95448858338141759834E0, 4.67627912898881538453E0, 8.63602421390890590575E1,
                                 -2.25462687854119370527E2, 2.00260212380060660359E2, -8.20372256168333339912E1,
                                 1.59056225126211695515E1, -1.18331621121330003142E0},
                                ww));
  big_p = big_p * Array(-std::sqrt(2 * kPi));
  Array z = sqrt(Array(-2.0) * log(safe));
  Array first = z - log(z) / z;
  Array inv_z = Array(1.0) / z;
  Array small_p = horner({3.23774891776946035970E0, 6.91522889068984211695E0, 3.93881025292474443415E0,
                          1.33303460815807542389E0, 2.01485389549179081538E-1, 1.23716634817820021358E-2,
                          3.01581553508235416007E-4, 2.65806974686737550832E-6, 6.23974539184983293730E-9},
                         inv_z) /
                  horner({1.0, 6.02427039364742014255E0, 3.67983563856160859403E0, 1.37702099489081330271E0,
                          2.16236993594496635890E-1, 1.34204006088543189037E-2, 3.28014464682127739104E-4,
                          2.89247864745380683936E-6, 6.79019408009981274425E-9},
                         inv_z) /
                  z;
  Array otherwise = horner({4.05544892305962419923E0, 3.15251094599893866154E1, 5.71628192246421288162E1,
                            4.40805073893200834700E1, 1.46849561928858024014E1, 2.18663306850790267539E0,
                            -1.40256079171354495875E-1, -3.50424626827848203418E-2, -8.57456785154685413611E-4},
                           inv_z) /
                    horner({1.0, 1.57799883256466749731E1, 4.53907635128879210584E1, 4.13172038254672030440E1,
                            1.50425385692907503408E1, 2.50464946208309415979E0, -1.42182922854787788574E-1,
                            -3.80806407691578277194E-2, -9.33259480895457427372E-4},
                           inv_z) /
                    z;
  Array x = where(safe > Array(exp_m2), big_p, where(z >= Array(8.0), first - small_p, first - otherwise));
  x = where(p > Array(1.0 - exp_m2), x, -x);
  return where(p == Array(0.0), full_like(p, Scalar(-INFINITY)), where(p == Array(1.0), full_like(p, Scalar(INFINITY)), x));
}

Array log_ndtr(const Array& x0, int series_order) {
  if (series_order < 0 || series_order > 30)
    throw ValueError("scipy::special::log_ndtr: series_order must be in [0, 30], got " + std::to_string(series_order));
  Array x = f32_or_f64("log_ndtr", x0);
  // JAX's rule: d log_ndtr(x) = exp(log N(x; 0, 1) - log_ndtr(x)).
  auto fn = custom_jvp([series_order](const Array& v) { return log_ndtr_value(v, series_order); },
                       [series_order](const std::tuple<Array>& p, const std::tuple<Array>& t) {
                         const Array& v = std::get<0>(p);
                         Array out = log_ndtr_value(v, series_order);
                         Array norm_logpdf = Array(-0.5) * square(v) - Array(std::log(std::sqrt(2 * kPi)));
                         return std::pair(out, std::get<0>(t) * exp(norm_logpdf - out));
                       });
  return fn(x);
}

// ---- logistic, logarithms and entropies ----

Array expit(const Array& x) { return logistic(real_inexact("expit", x)); }
Array logit(const Array& x) { return logit_fn(real_inexact("logit", x)); }

Array xlogy(const Array& x0, const Array& y0) {
  auto [x, y] = real_inexact("xlogy", x0, y0);
  return xlogy_fn(x, y);
}

Array xlog1py(const Array& x0, const Array& y0) {
  auto [x, y] = real_inexact("xlog1py", x0, y0);
  return xlog1py_fn(x, y);
}

Array entr(const Array& x0) {
  Array x = real_inexact("entr", x0);
  return where(x < Array(0.0), full_like(x, Scalar(-INFINITY)), -xlogx_fn(x));
}

Array rel_entr(const Array& p0, const Array& q0) {
  auto [p, q] = real_inexact("rel_entr", p0, q0);
  Array both_positive = (p > Array(0.0)) & (q > Array(0.0));
  Array p_zero = (p == Array(0.0)) & (q >= Array(0.0));
  Array safe_p = where(both_positive, p, ones_like(p)), safe_q = where(both_positive, q, ones_like(q));
  Array value = xlogx_fn(safe_p) - xlogy(safe_p, safe_q);
  return where(both_positive, value, where(p_zero, zeros_like(value), full_like(value, Scalar(INFINITY))));
}

Array kl_div(const Array& p0, const Array& q0) {
  auto [p, q] = real_inexact("kl_div", p0, q0);
  return rel_entr(p, q) - p + q;
}

namespace {
/// (e^(lmbda log_x) - 1) / lmbda, log_x at lmbda = 0: the Box-Cox transform given log x.
Array box_cox_of(const Array& log_x, const Array& lmbda) {
  Array zero = lmbda == Array(0.0);
  Array safe = where(zero, ones_like(lmbda), lmbda);
  return where(zero, log_x, expm1(safe * log_x) / safe);
}
}  // namespace

Array boxcox(const Array& x0, const Array& l0) {
  auto [x, lmbda] = real_inexact("boxcox", x0, l0);
  return box_cox_of(log(x), lmbda);
}

Array boxcox1p(const Array& x0, const Array& l0) {
  auto [x, lmbda] = real_inexact("boxcox1p", x0, l0);
  return box_cox_of(log1p(x), lmbda);
}

Array logsumexp(const Array& x, const Axes& axes, bool keepdims, const std::optional<Array>& b) {
  return nn::logsumexp(x, axes, {.b = b, .keepdims = keepdims});
}
Array softmax(const Array& x, const Axes& axes) { return nn::softmax(x, axes); }
Array log_softmax(const Array& x, const Axes& axes) { return nn::log_softmax(x, axes); }

// ---- Bessel functions and integrals ----

Array i0e(const Array& x) { return tessel::bessel_i0e(real_inexact("i0e", x)); }
Array i1e(const Array& x) { return tessel::bessel_i1e(real_inexact("i1e", x)); }
Array i0(const Array& x0) {
  Array x = real_inexact("i0", x0);
  return exp(abs(x)) * tessel::bessel_i0e(x);
}
Array i1(const Array& x0) {
  Array x = real_inexact("i1", x0);
  return exp(abs(x)) * tessel::bessel_i1e(x);
}

Array spence(const Array& x0) {
  Array x = f32_or_f64("spence", x0);
  // Cephes' spence on a point where every branch is finite; the special points are selected last.
  Array safe = where((x <= Array(0.0)) | (x == Array(1.0)), full_like(x, Scalar(0.75)), x);
  Array above_2 = safe > Array(2.0);
  Array xr = where(above_2, Array(1.0) / safe, safe);
  Array above_1_5 = xr > Array(1.5), below_half = xr < Array(0.5);
  Array w = where(above_1_5, Array(1.0) / xr - Array(1.0), where(below_half, -xr, xr - Array(1.0)));
  Array y = -w *
            horner({4.65128586073990045278E-5, 7.31589045238094711071E-3, 1.33847639578309018650E-1,
                    8.79691311754530315341E-1, 2.71149851196553469920E0, 4.25697156008121755724E0,
                    3.29771340985225106936E0, 1.00000000000000000126E0},
                   w) /
            horner({6.90990488912553276999E-4, 2.54043763932544379113E-2, 2.82974860602568089943E-1,
                    1.41172597751831069617E0, 3.63800533345137075418E0, 5.03278880143316990390E0,
                    3.54771340985225096217E0, 9.99999999999999998740E-1},
                   w);
  // (the reflection's logs at a point below 1/2 in every element, so no branch is NaN)
  Array xh = where(below_half, xr, full_like(xr, Scalar(0.25)));
  y = where(below_half, Array(kPi * kPi / 6.0) - log(xh) * log(Array(1.0) - xh) - y, y);
  y = where(above_2 | above_1_5, Array(-0.5) * square(log(xr)) - y, y);
  return where(x < Array(0.0), full_like(x, Scalar(NAN)),
               where(x == Array(1.0), zeros_like(x), where(x == Array(0.0), full_like(x, Scalar(kPi * kPi / 6.0)), y)));
}

Array expi(const Array& x) { return ops::expi(real_inexact("expi", x)); }
Array exp1(const Array& x) { return ops::exp1(real_inexact("exp1", x)); }
Array expn(const Array& n, const Array& x) {
  auto [nf, xf] = real_inexact("expn", n, x);
  return ops::expn(nf, xf);
}

}  // namespace tessel::scipy::special
