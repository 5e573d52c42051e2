#pragma once
// jax.scipy.special: SciPy's special functions as compositions of tessel's primitives (the
// lax-level special functions of tessel/special.h, exp, log, erf, ...), so they inherit jit,
// grad, vmap, fusion and partitioning. Values and derivatives follow JAX's formulas
// (jax/_src/scipy/special.py), custom derivatives included (logit, xlogy, xlog1py, entr,
// log_ndtr, poch, expi, exp1, expn). Integer arguments are converted to the default float
// dtype first, as jax.numpy does; complex arguments are rejected with a DTypeError. Maximum
// errors against SciPy in float64: docs/special.md.
//
//   namespace sp = ts::scipy::special;
//   ts::Array x = ts::linspace(0.1, 5.0, 50);
//   ts::Array g = sp::gammaln(x), p = sp::gammainc(ts::Array(2.0f), x), n = sp::ndtri(sp::ndtr(x));
#include <optional>
#include <utility>

#include "tessel/array.h"
#include "tessel/ops.h"

namespace tessel::scipy::special {

// ---- gamma and beta functions ----
/// log|Gamma(x)| (scipy.special.gammaln).
TESSEL_API Array gammaln(const Array& x);
/// log Gamma(x) for real x > 0, NaN for x <= 0 (scipy.special.loggamma on real input).
TESSEL_API Array loggamma(const Array& x);
/// The sign of Gamma(x): +1 or -1; NaN at the poles 0, -1, -2, ... (-1 at -0.0).
TESSEL_API Array gammasgn(const Array& x);
/// Gamma(x) = gammasgn(x) exp(gammaln(x)).
TESSEL_API Array gamma(const Array& x);
/// psi(x), the logarithmic derivative of Gamma.
TESSEL_API Array digamma(const Array& x);
/// The n-th derivative of digamma at x; n holds non-negative integer values (an integer or
/// floating array; NaN for negative or fractional n).
TESSEL_API Array polygamma(const Array& n, const Array& x);
/// log|B(a, b)| = gammaln(a) + gammaln(b) - gammaln(a + b).
TESSEL_API Array betaln(const Array& a, const Array& b);
/// B(a, b) = Gamma(a) Gamma(b) / Gamma(a + b), with its sign.
TESSEL_API Array beta(const Array& a, const Array& b);
/// The regularized incomplete beta function I_x(a, b) (differentiable in x only, as in JAX).
TESSEL_API Array betainc(const Array& a, const Array& b, const Array& x);
/// The regularized lower incomplete gamma function P(a, x).
TESSEL_API Array gammainc(const Array& a, const Array& x);
/// The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x).
TESSEL_API Array gammaincc(const Array& a, const Array& x);
/// The multivariate log-gamma function of dimension d: log Gamma_d(a).
TESSEL_API Array multigammaln(const Array& a, int64_t d);
/// n! = Gamma(n + 1) for n >= 0 (0 for n < 0), as a float (exact=False).
TESSEL_API Array factorial(const Array& n);
/// N choose k = N! / (k! (N - k)!) as a float; 0 outside 0 <= k <= N. With `repetition`,
/// the number of multisets: comb(N + k - 1, k).
TESSEL_API Array comb(const Array& N, const Array& k, bool repetition = false);
/// The Pochhammer symbol (z)_m = Gamma(z + m) / Gamma(z) (1 for m = 0).
TESSEL_API Array poch(const Array& z, const Array& m);
/// The Hurwitz zeta function sum_k (q + k)^-x (differentiable in q; JAX also gives a
/// derivative in x through a series, which tessel does not).
TESSEL_API Array zeta(const Array& x, const Array& q);
/// The Bernoulli numbers B_0 ... B_n as a float array of n + 1 values (B_1 = -1/2).
TESSEL_API Array bernoulli(int64_t n);

// ---- error function and normal distribution ----
/// The error function.
TESSEL_API Array erf(const Array& x);
/// The complementary error function 1 - erf(x).
TESSEL_API Array erfc(const Array& x);
/// The inverse error function.
TESSEL_API Array erfinv(const Array& x);
/// The scaled complementary error function exp(x^2) erfc(x), with an asymptotic series where
/// exp(x^2) would overflow.
TESSEL_API Array erfcx(const Array& x);
/// The standard normal CDF.
TESSEL_API Array ndtr(const Array& x);
/// The inverse of ndtr (Cephes' rational approximations); -inf at 0, +inf at 1.
TESSEL_API Array ndtri(const Array& p);
/// log(ndtr(x)), accurate far into both tails (an asymptotic series below -20 in float64,
/// -10 in float32). `series_order` in [0, 30].
TESSEL_API Array log_ndtr(const Array& x, int series_order = 3);

// ---- logistic, logarithms and entropies ----
/// The logistic sigmoid 1 / (1 + exp(-x)).
TESSEL_API Array expit(const Array& x);
/// log(x / (1 - x)), the inverse of expit.
TESSEL_API Array logit(const Array& x);
/// x log(y), 0 where x = 0 (unless y is NaN).
TESSEL_API Array xlogy(const Array& x, const Array& y);
/// x log1p(y), 0 where x = 0 (unless y is NaN).
TESSEL_API Array xlog1py(const Array& x, const Array& y);
/// -x log(x) for x >= 0, -inf for x < 0.
TESSEL_API Array entr(const Array& x);
/// p log(p / q) for p, q > 0; 0 at p = 0, q >= 0; +inf otherwise.
TESSEL_API Array rel_entr(const Array& p, const Array& q);
/// rel_entr(p, q) - p + q.
TESSEL_API Array kl_div(const Array& p, const Array& q);
/// The Box-Cox transform (x^lmbda - 1) / lmbda, log(x) at lmbda = 0.
TESSEL_API Array boxcox(const Array& x, const Array& lmbda);
/// The Box-Cox transform of 1 + x.
TESSEL_API Array boxcox1p(const Array& x, const Array& lmbda);
/// log(sum(exp(x))) over `axes` (all when empty); see nn::logsumexp for the options.
TESSEL_API Array logsumexp(const Array& x, const Axes& axes = {}, bool keepdims = false,
                           const std::optional<Array>& b = std::nullopt);
/// exp(x) / sum(exp(x)) over `axes` (nn::softmax).
TESSEL_API Array softmax(const Array& x, const Axes& axes = {-1});
/// x - logsumexp(x) over `axes` (nn::log_softmax).
TESSEL_API Array log_softmax(const Array& x, const Axes& axes = {-1});

// ---- Bessel functions and integrals ----
/// The modified Bessel function of the first kind of order 0.
TESSEL_API Array i0(const Array& x);
/// exp(-|x|) i0(x).
TESSEL_API Array i0e(const Array& x);
/// The modified Bessel function of the first kind of order 1.
TESSEL_API Array i1(const Array& x);
/// exp(-|x|) i1(x).
TESSEL_API Array i1e(const Array& x);
/// Spence's function (the dilogarithm Li2(1 - x)) for x >= 0; NaN below.
TESSEL_API Array spence(const Array& x);
/// The exponential integral Ei(x) = -PV int_{-x}^inf e^-t / t dt.
TESSEL_API Array expi(const Array& x);
/// The exponential integral E1(x) = int_1^inf e^-xt / t dt for x > 0 (NaN below, +inf at 0).
TESSEL_API Array exp1(const Array& x);
/// The generalized exponential integral E_n(x) = int_1^inf e^-xt / t^n dt for integer n >= 0.
TESSEL_API Array expn(const Array& n, const Array& x);

// ---- more integrals, Bessel J, hypergeometric functions and spherical harmonics ----
// (src/scipy/special_extra.cpp; float32 and float64, JAX's algorithms and derivatives)

/// Dawson's integral exp(-x^2) int_0^x exp(t^2) dt (Cody's rational approximations).
TESSEL_API Array dawsn(const Array& x);
/// The sine and cosine integrals {Si(x), Ci(x)} (Cephes' series, asymptotic forms beyond
/// 4 and 1e9); Ci is NaN at -inf, -inf at 0, and takes log|x| for negative x.
TESSEL_API std::pair<Array, Array> sici(const Array& x);
/// The Fresnel integrals {S(x), C(x)} = int_0^x {sin, cos}(pi t^2 / 2) dt (Cephes' fresnl;
/// float32 uses fresnlf's shorter polynomials, as JAX does).
TESSEL_API std::pair<Array, Array> fresnel(const Array& x);
/// Owen's T function T(h, a) = 1/(2 pi) int_0^a exp(-h^2 (1 + t^2) / 2) / (1 + t^2) dt
/// (13-point quadrature, Patefield and Tandy's method T5, with JAX's reflection for |a| > 1).
TESSEL_API Array owens_t(const Array& h, const Array& a);
/// The Faddeeva function w(z) = exp(-z^2) erfc(-iz) (Weideman's 32-term rational form);
/// real input is converted to complex. The result is complex64 or complex128.
TESSEL_API Array wofz(const Array& z);
/// The Bessel functions of the first kind J_0(z) ... J_v(z) of a real argument, by Miller's
/// backward recurrence from order n_iter (Zhang and Jin's BJNDD): shape (v + 1, *z.shape).
/// n_iter must exceed v and |z| by a margin for full accuracy (see JAX's bessel_jn).
TESSEL_API Array bessel_jn(const Array& z, int64_t v, int64_t n_iter = 50);
/// The confluent hypergeometric function 1F1(a; b; x): the Taylor series for |x| < 100,
/// the asymptotic series beyond; 1 at a = 0 (also a = b = 0), exp(x) at a = b, inf at b = 0.
/// Differentiable in a, b and x (JAX's series derivatives).
TESSEL_API Array hyp1f1(const Array& a, const Array& b, const Array& x);
/// The Gauss hypergeometric function 2F1(a, b; c; x) for real arguments and x <= 1 (inf for
/// x > 1), with JAX's transformations: terminating series for non-positive integer a or b,
/// the digamma form near x = 1, Euler's transformation for c - a - b <= -1.
/// Differentiable in a, b, c and x.
TESSEL_API Array hyp2f1(const Array& a, const Array& b, const Array& c, const Array& x);
/// The spherical harmonics Y_n^m(theta, phi) = N P_n^|m|(cos theta) e^(i m phi) for integer
/// n >= 0 and |m| <= n (broadcast together with theta and phi; theta the colatitude). n and
/// |m| above n_max are clipped to n_max as in JAX; n_max defaults to max(n) (read from the
/// values: pass it under jit). The result is complex.
TESSEL_API Array sph_harm_y(const Array& n, const Array& m, const Array& theta, const Array& phi,
                            std::optional<int64_t> n_max = std::nullopt);

}  // namespace tessel::scipy::special
