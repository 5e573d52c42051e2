#pragma once
// The scalar functions of the special-function primitives (src/ops/special.cpp): lgamma,
// digamma, polygamma, zeta, the regularized incomplete gamma and beta functions with the
// derivatives JAX needs, and the exponentially scaled Bessel functions i0e and i1e. Like
// scalar.h, whose text precedes this file's in every generated kernel (CMakeLists.txt embeds
// both), it includes only standard headers besides scalar.h, and the unfused kernels and
// generated code compute the same values.
//
// The algorithms are XLA's (and so JAX's on CPU): the Lanczos approximation (g = 7) for
// lgamma and digamma, Cephes' Euler–Maclaurin sum for the Hurwitz zeta function and Chebyshev
// expansions for i0e and i1e, the series / continued fraction of the incomplete gamma
// function with forward-mode derivatives in `a` carried along, and the continued fraction of
// the incomplete beta function. Functions written as selects (lgamma, digamma, zeta, i0e,
// i1e) vectorise; the iterative ones stop per element. Each computes in its argument's type
// (float or double); half types are computed in float by the callers. Measured errors:
// docs/special.md.
#include <utility>

#include "backend/cpu/scalar.h"

namespace tessel::scalar {

namespace special_detail {
inline constexpr double kLanczosG = 7.0;
inline constexpr double kLanczosBase = 0.99999999999980993227684700473478;
inline constexpr double kLanczosCoeffs[8] = {676.520368121885098567009190444019,  -1259.13921672240287047156078755283,
                                             771.3234287776530788486528258894,    -176.61502916214059906584551354,
                                             12.507343278686904814458936853,      -0.13857109526572011689554707,
                                             9.984369578019570859563e-6,          1.50563273514931155834e-7};

/// Clenshaw's sum of a Chebyshev series (coefficients highest order first), as Cephes' chbevl.
template <class T, size_t N> inline T chebyshev(const double (&c)[N], size_t first, T y) {
  T b0 = T(c[first]), b1 = T(0), b2 = T(0);
  for (size_t i = first + 1; i < N; ++i) {
    b2 = b1;
    b1 = b0;
    b0 = y * b1 - b2 + T(c[i]);
  }
  return T(0.5) * (b0 - b2);
}

// Cephes' Chebyshev coefficients of exp(-x) I0(x) and exp(-x) I1(x) / x on [0, 8] (A, in
// x/2 - 2) and of sqrt(x) exp(-x) I0(x), sqrt(x) exp(-x) I1(x) above 8 (B, in 32/x - 2).
// float uses the trailing terms only (Cephes' i0ef/i1ef).
inline constexpr double kI0eA[30] = {
    -4.41534164647933937950E-18, 3.33079451882223809783E-17,  -2.43127984654795469359E-16, 1.71539128555513303061E-15,
    -1.16853328779934516808E-14, 7.67618549860493561688E-14,  -4.85644678311192946090E-13, 2.95505266312963983461E-12,
    -1.72682629144155570723E-11, 9.67580903537323691224E-11,  -5.18979560163526290666E-10, 2.65982372468238665035E-9,
    -1.30002500998624804212E-8,  6.04699502254191894932E-8,   -2.67079385394061173391E-7,  1.11738753912010371815E-6,
    -4.41673835845875056359E-6,  1.64484480707288970893E-5,   -5.75419501008210370398E-5,  1.88502885095841655729E-4,
    -5.76375574538582365885E-4,  1.63947561694133579842E-3,   -4.32430999505057594430E-3,  1.05464603945949983183E-2,
    -2.37374148058994688156E-2,  4.93052842396707084878E-2,   -9.49010970480476444210E-2,  1.71620901522208775349E-1,
    -3.04682672343198398683E-1,  6.76795274409476084995E-1};
inline constexpr double kI0eB[25] = {
    -7.23318048787475395456E-18, -4.83050448594418207126E-18, 4.46562142029675999901E-17,  3.46122286769746109310E-17,
    -2.82762398051658348494E-16, -3.42548561967721913462E-16, 1.77256013305652638360E-15,  3.81168066935262242075E-15,
    -9.55484669882830764870E-15, -4.15056934728722208663E-14, 1.54008621752140982691E-14,  3.85277838274214270114E-13,
    7.18012445138366623367E-13,  -1.79417853150680611778E-12, -1.32158118404477131188E-11, -3.14991652796324136454E-11,
    1.18891471078464383424E-11,  4.94060238822496958910E-10,  3.39623202570838634515E-9,   2.26666899049817806459E-8,
    2.04891858946906374183E-7,   2.89137052083475648297E-6,   6.88975834691682398426E-5,   3.36911647825569408990E-3,
    8.04490411014108831608E-1};
inline constexpr double kI1eA[29] = {
    2.77791411276104639959E-18, -2.11142121435816608115E-17, 1.55363195773620046921E-16, -1.10559694773538630805E-15,
    7.60068429473540693410E-15, -5.04218550472791168711E-14, 3.22379336594557470981E-13, -1.98397439776494371520E-12,
    1.17361862988909016308E-11, -6.66348972350202774223E-11, 3.62559028155211703701E-10, -1.88724975172282928790E-9,
    9.38153738649577178388E-9,  -4.44505912879632808065E-8,  2.00329475355213526229E-7,  -8.56872026469545474066E-7,
    3.47025130813767847674E-6,  -1.32731636560394358279E-5,  4.78156510755005422638E-5,  -1.61760815825896745588E-4,
    5.12285956168575772895E-4,  -1.51357245063125314899E-3,  4.15642294431288815669E-3,  -1.05640848946261981558E-2,
    2.47264490306265168283E-2,  -5.29459812080949914269E-2,  1.02643658689847095384E-1,  -1.76416518357834055153E-1,
    2.52587186443633654823E-1};
inline constexpr double kI1eB[25] = {
    7.51729631084210481353E-18,  4.41434832307170791151E-18,  -4.65030536848935832153E-17, -3.20952592199342395980E-17,
    2.96262899764595013876E-16,  3.30820231092092828324E-16,  -1.88035477551078244854E-15, -3.81440307243700780478E-15,
    1.04202769841288027642E-14,  4.27244001671195135429E-14,  -2.10154184277266431302E-14, -4.08355111109219731823E-13,
    -7.19855177624590851209E-13, 2.03562854414708950722E-12,  1.41258074366137813316E-11,  3.25260358301548823856E-11,
    -1.89749581235054123450E-11, -5.58974346219658380687E-10, -3.83538038596423702205E-9,  -2.63146884688951950684E-8,
    -2.51223623787020892529E-7,  -3.88256480887769039346E-6,  -1.10588938762623716291E-4,  -9.76109749136146840777E-3,
    7.78576235018280120474E-1};

// The Bernoulli-number denominators of the Euler–Maclaurin tail of the Hurwitz zeta function
// ((2k)! / B_2k).
inline constexpr double kZetaA[12] = {12.0,
                                      -720.0,
                                      30240.0,
                                      -1209600.0,
                                      47900160.0,
                                      -1.8924375803183791606e9,
                                      7.47242496e10,
                                      -2.950130727918164224e12,
                                      1.1646782814350067249e14,
                                      -4.5979787224074726105e15,
                                      1.8152105401943546773e17,
                                      -7.1661652561756670113e18};

template <class T> inline T eps() { return std::numeric_limits<T>::epsilon(); }
template <class T> inline T nan() { return std::numeric_limits<T>::quiet_NaN(); }
template <class T> inline T inf() { return std::numeric_limits<T>::infinity(); }
}  // namespace special_detail

/// lax.lgamma: log |Gamma(x)|. Lanczos (g = 7) above 1/2, reflection below; +inf at the
/// poles and at +-inf.
template <class T> inline T lgamma(T x) {
  using namespace special_detail;
  const T one(1), half(0.5);
  const bool reflect = x < half;
  const T z = reflect ? -x : x - one;
  T acc = T(kLanczosBase);
  for (int i = 0; i < 8; ++i) acc = acc + T(kLanczosCoeffs[i]) / ((z + T(i)) + one);
  const T g_half = T(kLanczosG + 0.5);
  const T tz = g_half + z;
  const T log_t = T(std::log(kLanczosG + 0.5)) + std::log1p(z / g_half);
  const T log_y = (T((std::numbers::ln2 + std::log(std::numbers::pi)) / 2) + ((z + half) - tz / log_t) * log_t) +
                  std::log(acc);
  // log(pi) - log|sin(pi x)| - lgamma(1 - x), with the argument of sin reduced to [0, 1/2].
  const T abs_x = std::abs(x);
  const T frac = abs_x - std::floor(abs_x);
  const T reduced = frac > half ? one - frac : frac;
  const T denom = std::log(std::sin(T(std::numbers::pi) * reduced));
  const T reflection = std::isfinite(denom) ? (T(std::log(std::numbers::pi)) - denom) - log_y : -denom;
  const T out = reflect ? reflection : log_y;
  // XLA returns an exact 0 at x = 2 (the Lanczos sum rounds to a few ulp there).
  return std::isinf(x) ? inf<T>() : x == T(2) ? T(0) : out;
}

/// lax.digamma: the derivative of lgamma (the Lanczos sum differentiated), with
/// psi(x) = psi(1 - x) - pi cot(pi x) below 1/2; NaN at the poles (0, -1, -2, ...).
template <class T> inline T digamma(T x) {
  using namespace special_detail;
  const T one(1), half(0.5), zero(0);
  const bool reflect = x < half;
  const T z = reflect ? -x : x - one;
  T num = zero, den = T(kLanczosBase);
  for (int i = 0; i < 8; ++i) {
    const T zi = (z + T(i)) + one;
    num = num - T(kLanczosCoeffs[i]) / (zi * zi);
    den = den + T(kLanczosCoeffs[i]) / zi;
  }
  const T g_half = T(kLanczosG + 0.5);
  const T tz = g_half + z;
  const T log_t = T(std::log(kLanczosG + 0.5)) + std::log1p(z / g_half);
  const T y = (log_t + num / den) - T(kLanczosG) / tz;
  const T reduced = x + std::abs(std::floor(x + half));
  const T pi = T(std::numbers::pi);
  const T reflection = y - pi * std::cos(pi * reduced) / std::sin(pi * reduced);
  const T out = reflect ? reflection : y;
  return (x <= zero && x == std::floor(x)) ? nan<T>() : out;
}

/// lax.zeta: the Hurwitz zeta function zeta(x, q) = sum_k (q + k)^-x for x > 1: ten terms of
/// the sum and twelve Euler–Maclaurin corrections. +inf at x = 1 and at the poles q = 0, -1,
/// ...; NaN for x < 1, and for q < 0 with a non-integer x.
template <class T> inline T zeta(T x, T q) {
  using namespace special_detail;
  const T one(1);
  T s = std::pow(q, -x), a = q, b(0);
  for (int i = 0; i < 9; ++i) {
    a = a + one;
    b = std::pow(a, -x);
    s = s + b;
  }
  const T w = a;
  s = s + b * w / (x - one);
  s = s - T(0.5) * b;
  T fac = one, k(0);
  for (int i = 0; i < 12; ++i) {
    fac = fac * (x + k);
    b = b / w;
    s = s + fac * b / T(kZetaA[i]);
    k = k + one;
    fac = fac * (x + k);
    b = b / w;
    k = k + one;
  }
  const bool q_pole = q <= T(0) && q == std::floor(q);
  const bool domain = x < one || (q < T(0) && x != std::floor(x));
  return x == one || q_pole ? inf<T>() : domain ? nan<T>() : s;
}

/// lax.polygamma: the n-th derivative of digamma, (-1)^(n+1) n! zeta(n + 1, x) for n >= 1;
/// NaN unless n is a non-negative integer.
template <class T> inline T polygamma(T n, T x) {
  using namespace special_detail;
  if (n == T(0)) return digamma(x);
  if (!(n > T(0)) || n != std::floor(n)) return nan<T>();
  const T sign = std::fmod(n, T(2)) == T(1) ? T(1) : T(-1);
  return sign * std::exp(lgamma(n + T(1))) * zeta(n + T(1), x);
}

/// lax.bessel_i0e: exp(-|x|) I0(x).
template <class T> inline T bessel_i0e(T x) {
  using namespace special_detail;
  constexpr bool single = std::is_same_v<T, float>;
  const T ax = std::abs(x);
  const T small = chebyshev(kI0eA, single ? 12 : 0, T(0.5) * ax - T(2));
  const T large = chebyshev(kI0eB, single ? 18 : 0, T(32) / ax - T(2)) / std::sqrt(ax);
  return ax <= T(8) ? small : large;
}

/// lax.bessel_i1e: exp(-|x|) I1(x), odd in x.
template <class T> inline T bessel_i1e(T x) {
  using namespace special_detail;
  constexpr bool single = std::is_same_v<T, float>;
  const T ax = std::abs(x);
  const T small = chebyshev(kI1eA, single ? 12 : 0, T(0.5) * ax - T(2)) * ax;
  const T large = chebyshev(kI1eB, single ? 18 : 0, T(32) / ax - T(2)) / std::sqrt(ax);
  const T r = ax <= T(8) ? small : large;
  return x < T(0) ? -r : r;
}

namespace special_detail {
/// What the incomplete gamma machinery computes: P(a, x), dP/da (igamma_grad_a), or the
/// derivative of a gamma sample x with respect to a at fixed P (random_gamma_grad).
enum class IgammaMode { kValue, kDerivative, kSampleDerivative };

/// The series of P(a, x) (x below max(1, a)), from ax = x^a e^-x / Gamma(a); with `mode`
/// a derivative, the series' derivative in a is summed along.
template <class T> inline T igamma_series(T ax, T x, T a, IgammaMode mode) {
  T r = a, c(1), ans(1), dc_da(0), dans_da(0);
  for (;;) {
    r = r + T(1);
    dc_da = dc_da * (x / r) - (c * x) / (r * r);
    dans_da = dans_da + dc_da;
    c = c * (x / r);
    ans = ans + c;
    const bool more = mode == IgammaMode::kValue ? c / ans > eps<T>() : std::abs(dc_da / dans_da) > eps<T>();
    if (!more) break;
  }
  if (mode == IgammaMode::kValue) return (ans * ax) / a;
  const T dlogax_da = std::log(x) - digamma(a + T(1));
  if (mode == IgammaMode::kDerivative) return ax * (ans * dlogax_da + dans_da) / a;
  return -(dans_da + ans * dlogax_da) * x / a;
}

/// The continued fraction of Q(a, x) (x above max(1, a)), with its derivative in a.
template <class T> inline T igammac_fraction(T ax, T x, T a, IgammaMode mode) {
  T y = T(1) - a, z = x + y + T(1), c(0);
  T pkm2(1), qkm2 = x, pkm1 = x + T(1), qkm1 = z * x;
  T ans = pkm1 / qkm1;
  T dpkm2(0), dqkm2(0), dpkm1(0), dqkm1 = -x;
  T dans = (dpkm1 - ans * dqkm1) / qkm1;
  while (c < T(2000)) {
    c = c + T(1);
    y = y + T(1);
    z = z + T(2);
    const T yc = y * c;
    const T pk = pkm1 * z - pkm2 * yc, qk = qkm1 * z - qkm2 * yc;
    const bool nonzero = qk != T(0);
    const T r = pk / qk;
    const T t = nonzero ? std::abs((ans - r) / r) : T(1);
    if (nonzero) ans = r;
    const T dpk = dpkm1 * z - pkm1 - dpkm2 * yc + pkm2 * c;
    const T dqk = dqkm1 * z - qkm1 - dqkm2 * yc + qkm2 * c;
    const T dans_new = nonzero ? (dpk - ans * dqk) / qk : dans;
    const T dchange = nonzero ? std::abs(dans_new - dans) : T(1);
    dans = dans_new;
    pkm2 = pkm1;
    pkm1 = pk;
    qkm2 = qkm1;
    qkm1 = qk;
    dpkm2 = dpkm1;
    dqkm2 = dqkm1;
    dpkm1 = dpk;
    dqkm1 = dqk;
    if (std::abs(pk) > T(1) / eps<T>()) {  // rescale before the recurrences overflow
      pkm2 *= eps<T>(), pkm1 *= eps<T>(), qkm2 *= eps<T>(), qkm1 *= eps<T>();
      dpkm2 *= eps<T>(), dqkm2 *= eps<T>(), dpkm1 *= eps<T>(), dqkm1 *= eps<T>();
    }
    if (!(mode == IgammaMode::kValue ? t > eps<T>() : dchange > eps<T>())) break;
  }
  if (mode == IgammaMode::kValue) return ans * ax;
  const T dlogax_da = std::log(x) - digamma(a);
  if (mode == IgammaMode::kDerivative) return ax * (ans * dlogax_da + dans);
  return -(dans + ans * dlogax_da) * x;
}

/// x^a e^-x / Gamma(a), and whether it underflows (then the loops are skipped).
template <class T> inline T igamma_prefactor(T a, T x, bool& underflow) {
  const T log_ax = a * std::log(x) - x - lgamma(a);
  underflow = log_ax < -std::log(std::numeric_limits<T>::max());
  return std::exp(log_ax);
}

/// dP/da (kDerivative) or the gamma sample's derivative (kSampleDerivative); NaN for x < 0
/// or a <= 0, 0 at x = 0.
template <class T> inline T igamma_derivative(T a, T x, IgammaMode mode) {
  if (std::isnan(a) || std::isnan(x) || x < T(0) || a <= T(0)) return nan<T>();
  if (x == T(0)) return T(0);
  bool underflow;
  const T ax = igamma_prefactor(a, x, underflow);
  const bool use_fraction = x > T(1) && x > a;
  if (underflow) return use_fraction ? -(T(0) * ax) : T(0) * ax;
  return use_fraction ? -igammac_fraction(ax, x, a, mode) : igamma_series(ax, x, a, mode);
}
}  // namespace special_detail

/// lax.igamma: the regularized lower incomplete gamma function P(a, x).
template <class T> inline T igamma(T a, T x) {
  using namespace special_detail;
  if (std::isnan(a) || std::isnan(x) || x < T(0) || a < T(0) || (a == T(0) && x == T(0))) return nan<T>();
  if (x == T(0)) return T(0);
  if (std::isinf(x)) return T(1);
  bool underflow;
  const T ax = igamma_prefactor(a, x, underflow);
  const bool use_fraction = x >= T(1) && x > a;
  if (use_fraction) return T(1) - (underflow ? ax : igammac_fraction(ax, x, a, IgammaMode::kValue));
  return underflow ? ax / a : igamma_series(ax, x, a, IgammaMode::kValue);
}

/// lax.igammac: the regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x).
template <class T> inline T igammac(T a, T x) {
  using namespace special_detail;
  if (std::isnan(a) || std::isnan(x) || x < T(0) || a < T(0) || (a == T(0) && x == T(0))) return nan<T>();
  if (std::isinf(x) || a == T(0)) return T(0);
  bool underflow;
  const T ax = igamma_prefactor(a, x, underflow);
  const bool use_series = x < T(1) || x < a;
  if (use_series) return T(1) - (underflow ? ax / a : igamma_series(ax, x, a, IgammaMode::kValue));
  return underflow ? ax : igammac_fraction(ax, x, a, IgammaMode::kValue);
}

/// lax.igamma_grad_a: d P(a, x) / da.
template <class T> inline T igamma_grad_a(T a, T x) {
  return special_detail::igamma_derivative(a, x, special_detail::IgammaMode::kDerivative);
}

/// lax.random_gamma_grad: d x / da of a gamma(a) sample x at fixed P(a, x) (implicit
/// reparameterization: -(dP/da) / (dP/dx)).
template <class T> inline T random_gamma_grad(T a, T x) {
  return special_detail::igamma_derivative(a, x, special_detail::IgammaMode::kSampleDerivative);
}

/// lax.betainc: the regularized incomplete beta function I_x(a, b), by the continued
/// fraction of DLMF 8.17.22 (modified Lentz), on 1 - x with a and b swapped where
/// x > (a + 1) / (a + b + 2) so that it converges fast.
template <class T> inline T betainc(T a, T b, T x) {
  using namespace special_detail;
  const bool a_zero = a == T(0) || b == inf<T>(), b_zero = b == T(0) || a == inf<T>();
  if (std::isnan(a) || std::isnan(b) || std::isnan(x) || a < T(0) || b < T(0) || x < T(0) || x > T(1) ||
      (a_zero && b_zero))
    return nan<T>();
  if ((a_zero && x != T(0)) || (b_zero && x == T(1))) return T(1);
  if (b_zero || (a_zero && x == T(0))) return T(0);
  const bool direct = x < (a + T(1)) / (a + b + T(2));
  if (!direct) {
    std::swap(a, b);
    x = T(1) - x;
  }
  const T tiny = std::numeric_limits<T>::min() / eps<T>(), tol = eps<T>() / T(2);
  const int iterations = std::is_same_v<T, float> ? 200 : 600;
  auto nonzero = [tiny](T v) { return std::abs(v) < tiny ? tiny : v; };
  // f = 1 / (1 + d1 / (1 + d2 / (1 + ...))) by the modified Lentz method, the partial
  // numerators alternating d_2m+1 = -(a + m)(a + b + m) x / ((a + 2m)(a + 2m + 1)) and
  // d_2m = m (b - m) x / ((a + 2m - 1)(a + 2m)).
  T c(1), d = T(1) / nonzero(T(1) - (a + b) * x / (a + T(1)));
  T f = d;
  for (int m = 1; m < iterations; ++m) {
    const T m2 = T(2 * m), mm = T(m);
    const T even = mm * (b - mm) * x / ((a + m2 - T(1)) * (a + m2));
    d = T(1) / nonzero(T(1) + even * d);
    c = nonzero(T(1) + even / c);
    f = f * (d * c);
    const T odd = -(a + mm) * (a + b + mm) * x / ((a + m2) * (a + m2 + T(1)));
    d = T(1) / nonzero(T(1) + odd * d);
    c = nonzero(T(1) + odd / c);
    const T delta = d * c;
    f = f * delta;
    if (std::abs(delta - T(1)) < tol) break;
  }
  // x^a (1 - x)^b / (a B(a, b)), with a Gamma(a) -> 1 for a below twice the smallest normal.
  const T lbeta_small_a = lgamma(b) - lgamma(a + b);
  const T factor = a < T(2) * std::numeric_limits<T>::min()
                       ? std::exp(std::log1p(-x) * b - lbeta_small_a)
                       : std::exp(std::log(x) * a + std::log1p(-x) * b - (lgamma(a) + lbeta_small_a)) / a;
  const T result = f * factor;
  return direct ? result : T(1) - result;
}


namespace special_detail {
/// E_n(x) for x > 1 by its continued fraction (modified Lentz), n >= 1.
template <class T> inline T expn_fraction(T n, T x) {
  const T tiny = std::numeric_limits<T>::min() / eps<T>();
  T b = x + n, c = T(1) / tiny, d = T(1) / b, h = d;
  for (int i = 1; i < 1000; ++i) {
    const T a = -T(i) * (n - T(1) + T(i));
    b = b + T(2);
    d = T(1) / (a * d + b);
    c = b + a / c;
    const T delta = c * d;
    h = h * delta;
    if (std::abs(delta - T(1)) <= eps<T>()) break;
  }
  return h * std::exp(-x);
}
inline constexpr double kEulerGamma = 0.57721566490153286060651209008240243;
}  // namespace special_detail

/// scipy.special.expn: E_n(x) = int_1^inf e^-xt / t^n dt for integer n >= 0 and x >= 0: the
/// power series for x <= 1, the continued fraction above. NaN for negative or fractional n
/// and negative x; +inf at x = 0 for n <= 1.
template <class T> inline T expn(T n, T x) {
  using namespace special_detail;
  if (std::isnan(n) || std::isnan(x) || n < T(0) || n != std::floor(n) || x < T(0)) return nan<T>();
  if (x == T(0)) return n <= T(1) ? inf<T>() : T(1) / (n - T(1));
  if (n == T(0)) return std::exp(-x) / x;
  if (std::isinf(x)) return T(0);
  if (x > T(1)) return expn_fraction(n, x);
  const T nm1 = n - T(1);
  T ans = nm1 != T(0) ? T(1) / nm1 : -std::log(x) - T(kEulerGamma), fact(1);
  for (int i = 1; i < 1000; ++i) {
    fact = fact * (-x / T(i));
    T delta;
    if (T(i) != nm1) {
      delta = -fact / (T(i) - nm1);
    } else {
      T psi = -T(kEulerGamma);  // digamma(n)
      for (int k = 1; T(k) <= nm1; ++k) psi = psi + T(1) / T(k);
      delta = fact * (-std::log(x) + psi);
    }
    ans = ans + delta;
    if (std::abs(delta) < std::abs(ans) * eps<T>()) break;
  }
  return ans;
}

/// scipy.special.exp1: E_1(x) for x >= 0 (NaN below).
template <class T> inline T exp1(T x) { return expn(T(1), x); }

/// scipy.special.expi: the exponential integral Ei(x) = -E_1(-x) for x < 0; above, the power
/// series gamma + log x + sum x^k / (k k!) up to x = -log(eps), the asymptotic series
/// e^x / x sum k! / x^k beyond.
template <class T> inline T expi(T x) {
  using namespace special_detail;
  if (std::isnan(x)) return x;
  if (x < T(0)) return -exp1(-x);
  if (x == T(0)) return -inf<T>();
  if (std::isinf(x)) return x;
  if (x <= -std::log(eps<T>())) {
    T sum(0), fact(1);
    for (int k = 1; k < 1000; ++k) {
      fact = fact * (x / T(k));
      const T term = fact / T(k);
      sum = sum + term;
      if (term < eps<T>() * sum) break;
    }
    return sum + std::log(x) + T(kEulerGamma);
  }
  T sum(1), term(1);
  for (int k = 1; k < 100; ++k) {
    const T prev = term;
    term = term * (T(k) / x);
    if (term < eps<T>() / T(1000)) break;  // a tail of terms below eps still adds up to several ulp
    if (term >= prev) {  // the asymptotic series starts to diverge: stop before the smallest term
      sum = sum - prev;
      break;
    }
    sum = sum + term;
  }
  return std::exp(x) * sum / x;
}

}  // namespace tessel::scalar
