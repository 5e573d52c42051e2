#pragma once
// The scalar functions of the element-wise primitives, defined once: the CPU kernels of
// src/ops/elementwise.cpp call them per element, and the code generator (src/compiler/
// codegen.cpp) embeds this file verbatim at the top of every generated kernel, so fused and
// unfused code compute the same values. It must therefore include only standard headers.
//
// Functions take and return compute types: float, double, std::complex, the integer types
// and bool (the half types compute in float, converted by the caller). Where C++ leaves
// behaviour undefined, they define it as XLA does on CPU (see elementwise.cpp). Complex
// arguments go to backend/cpu/scalar_complex.h, which computes them as JAX does rather than as
// <complex> does (C99 Annex G signs its zeros and treats inf/NaN differently).
#include <algorithm>
#include <bit>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numbers>
#include <type_traits>

// Vector forms of the libm functions: glibc's libmvec (x86-64) has 4-, 8- and 16-lane forms of
// these functions, and GCC calls them from vectorised loops once the declarations carry the
// `simd` attribute, which glibc's <math.h> adds only under -ffast-math. Declared here for code
// compiled with -fno-math-errno (the generated kernels and backend/cpu/vector_math.cpp; GCC
// then defines __NO_MATH_ERRNO__): only there are the calls free of side effects, which the
// vectoriser needs. The maximum errors are in docs/performance.md ("Transcendental functions").
#if defined(__NO_MATH_ERRNO__) && defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && \
    defined(__GLIBC__)
#define TESSEL_VECTOR_LIBM 1
#define TESSEL_SIMD_LIBM2(NAME)                                                              \
  extern "C" float NAME##f(float, float) noexcept __attribute__((simd("notinbranch")));      \
  extern "C" double NAME(double, double) noexcept __attribute__((simd("notinbranch")));
#define TESSEL_SIMD_LIBM1(NAME)                                                      \
  extern "C" float NAME##f(float) noexcept __attribute__((simd("notinbranch")));     \
  extern "C" double NAME(double) noexcept __attribute__((simd("notinbranch")));
TESSEL_SIMD_LIBM1(exp) TESSEL_SIMD_LIBM1(exp2) TESSEL_SIMD_LIBM1(expm1) TESSEL_SIMD_LIBM1(log)
TESSEL_SIMD_LIBM1(log1p) TESSEL_SIMD_LIBM1(cbrt) TESSEL_SIMD_LIBM1(sin) TESSEL_SIMD_LIBM1(cos)
TESSEL_SIMD_LIBM1(tan) TESSEL_SIMD_LIBM1(asin) TESSEL_SIMD_LIBM1(acos) TESSEL_SIMD_LIBM1(atan)
TESSEL_SIMD_LIBM1(sinh) TESSEL_SIMD_LIBM1(cosh) TESSEL_SIMD_LIBM1(tanh) TESSEL_SIMD_LIBM1(asinh)
TESSEL_SIMD_LIBM1(acosh) TESSEL_SIMD_LIBM1(atanh) TESSEL_SIMD_LIBM1(erf) TESSEL_SIMD_LIBM1(erfc)
TESSEL_SIMD_LIBM2(pow) TESSEL_SIMD_LIBM2(atan2)
#undef TESSEL_SIMD_LIBM1
#undef TESSEL_SIMD_LIBM2
#endif

namespace tessel::scalar {

// The complex functions, defined in backend/cpu/scalar_complex.h, which this file includes
// at its end. Generated kernels (no complex dtypes) embed only these declarations
// (CMakeLists.txt).
namespace cx {
template <class R> inline std::complex<R> mul(std::complex<R> x, std::complex<R> y);
template <class R> inline std::complex<R> div(std::complex<R> x, std::complex<R> y);
template <class R> inline std::complex<R> pow(std::complex<R> x, std::complex<R> y);
template <class R> inline std::complex<R> square(std::complex<R> z);
template <class R> inline R abs(std::complex<R> z);
#define TESSEL_CX_DECLARE(NAME) template <class R> inline std::complex<R> NAME(std::complex<R> z);
TESSEL_CX_DECLARE(exp) TESSEL_CX_DECLARE(expm1) TESSEL_CX_DECLARE(log) TESSEL_CX_DECLARE(log1p)
TESSEL_CX_DECLARE(sqrt) TESSEL_CX_DECLARE(rsqrt) TESSEL_CX_DECLARE(sin) TESSEL_CX_DECLARE(cos)
TESSEL_CX_DECLARE(tan) TESSEL_CX_DECLARE(asin) TESSEL_CX_DECLARE(acos) TESSEL_CX_DECLARE(atan)
TESSEL_CX_DECLARE(sinh) TESSEL_CX_DECLARE(cosh) TESSEL_CX_DECLARE(tanh) TESSEL_CX_DECLARE(asinh)
TESSEL_CX_DECLARE(acosh) TESSEL_CX_DECLARE(atanh)
#undef TESSEL_CX_DECLARE
}  // namespace cx

template <class T> struct is_complex : std::false_type {};
template <class T> struct is_complex<std::complex<T>> : std::true_type {};
template <class T> inline constexpr bool is_complex_v = is_complex<T>::value;
template <class T> inline constexpr bool is_int_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;
/// Integer arithmetic happens in an unsigned type at least as wide as int: it wraps
/// instead of overflowing (undefined for signed types, and for unsigned short * unsigned short).
template <class T> using wrap_t = std::make_unsigned_t<decltype(T() + T())>;

template <class T> inline T wrap_neg(T x) { return T(wrap_t<T>(0) - wrap_t<T>(x)); }

/// base^exp by squaring, wrapping; negative exponents truncate 1/base^|exp| toward zero.
template <class T, class E> inline T int_pow(T base, E exp) {
  if constexpr (std::is_signed_v<E>) {
    if (exp < 0) {
      if (base == T(1)) return T(1);
      if constexpr (std::is_signed_v<T>)
        if (base == T(-1)) return T(exp % 2 == 0 ? 1 : -1);
      return T(0);
    }
  }
  wrap_t<T> acc = 1, b = wrap_t<T>(base);
  for (auto e = std::make_unsigned_t<E>(exp); e; e >>= 1) {
    if (e & 1) acc *= b;
    b *= b;
  }
  return T(acc);
}

/// max (Max) or min, propagating NaN and ordering -0 below +0 (as XLA does); complex
/// numbers compare lexicographically. Written as selects, so loops over it vectorize (the
/// reduction kernels combine with it too).
template <bool Max, class T> inline T pick(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return Max ? (a || b) : (a && b);
  } else if constexpr (is_complex_v<T>) {
    if (a != a) return a;  // any NaN component
    if (b != b) return b;
    bool greater = a.real() > b.real() || (a.real() == b.real() && a.imag() > b.imag());
    return greater == Max ? a : b;
  } else if constexpr (std::is_floating_point_v<T>) {
    // On a tie of zeros, max gives +0 if either is +0 and min gives -0 if either is -0.
    const bool take_a = Max ? (a > b || (a == b && std::signbit(b))) : (a < b || (a == b && std::signbit(a)));
    const T r = take_a ? a : b;  // b when b is NaN: every comparison is false
    return a != a ? a : r;
  } else {
    return (a > b) == Max ? a : b;
  }
}

template <class T> inline T round_half_even(T x) {
  T r = std::round(x);  // half away from zero
  if (std::abs(x - r) == T(0.5)) r = T(2) * std::round(x / T(2));
  return r;
}

/// integer_pow[y]: x^y by squaring (wrapping for integers; 1/x^|y| for negative y on floats).
template <class T> inline T integer_pow(T x, int64_t y) {
  if constexpr (is_int_v<T>) {
    return int_pow(x, y);
  } else if constexpr (is_complex_v<T>) {
    // As JAX: y = 2 is jnp.square (the only caller with y = 2), which for complex numbers is
    // CHLO's square; otherwise XLA's plain complex products and quotient (lax.integer_pow).
    if (y == 2) return cx::square(x);
    T acc(1), b(x);
    bool first = true;
    for (uint64_t e = y < 0 ? uint64_t(0) - uint64_t(y) : uint64_t(y); e; e >>= 1) {
      if (e & 1) {
        acc = first ? b : cx::mul(acc, b);
        first = false;
      }
      b = cx::mul(b, b);
    }
    return y < 0 ? cx::div(T(1), acc) : acc;
  } else {
    // The first factor is taken as is: 1 * z would lose the sign of a complex zero part.
    T acc(1), b(x);
    bool first = true;
    for (uint64_t e = y < 0 ? uint64_t(0) - uint64_t(y) : uint64_t(y); e; e >>= 1) {
      if (e & 1) {
        acc = first ? b : T(acc * b);
        first = false;
      }
      b *= b;
    }
    return y < 0 ? T(1) / acc : acc;
  }
}

/// integer_pow with the exponent known at compile time (generated code): the same products
/// in the same order as integer_pow, unrolled so loops around it vectorise.
template <uint64_t E, bool First, class T> inline void pow_by_squaring(T& acc, T b) {
  if constexpr (E != 0) {
    if constexpr ((E & 1) != 0) {
      if constexpr (First) acc = b;
      else acc *= b;
    }
    if constexpr ((E >> 1) != 0) pow_by_squaring<(E >> 1), First && (E & 1) == 0>(acc, T(b * b));
  }
}
template <int64_t Y, class T> inline T integer_pow_static(T x) {
  if constexpr (is_int_v<T>) {
    return int_pow(x, Y);
  } else if constexpr (is_complex_v<T>) {
    return integer_pow(x, Y);
  } else {
    T acc(1);
    pow_by_squaring<(Y < 0 ? uint64_t(0) - uint64_t(Y) : uint64_t(Y)), true>(acc, x);
    if constexpr (Y < 0) return T(1) / acc;
    else return acc;
  }
}

/// select_n with two cases.
template <class T> inline T select_n(bool pred, T on_false, T on_true) { return pred ? on_true : on_false; }

// The rows of the element-wise table (same names; `and_`, `or_`, `xor_`, `not_` keep their
// underscore): bodies compute on `x` (unary) or `a`, `b` (binary) of type T.
#define TESSEL_SCALAR_UNARY(NAME, ...) \
  template <class T> inline auto NAME(T x) { __VA_ARGS__ }
#define TESSEL_SCALAR_BINARY(NAME, ...) \
  template <class T> inline auto NAME(T a, T b) { __VA_ARGS__ }

TESSEL_SCALAR_BINARY(add, if constexpr (std::is_same_v<T, bool>) return a || b;
       else if constexpr (is_int_v<T>) return T(wrap_t<T>(a) + wrap_t<T>(b));
       else return a + b;)
TESSEL_SCALAR_BINARY(sub, if constexpr (is_int_v<T>) return T(wrap_t<T>(a) - wrap_t<T>(b));
       else return a - b;)
TESSEL_SCALAR_BINARY(mul, if constexpr (std::is_same_v<T, bool>) return a && b;
       else if constexpr (is_int_v<T>) return T(wrap_t<T>(a) * wrap_t<T>(b));
       else if constexpr (is_complex_v<T>) return cx::mul(a, b);
       else return a * b;)
TESSEL_SCALAR_BINARY(div, if constexpr (is_int_v<T>) {
         if (b == 0) return T(-1);
         if constexpr (std::is_signed_v<T>)
           if (b == T(-1)) return wrap_neg(a);
         return T(a / b);
       } else if constexpr (is_complex_v<T>) return cx::div(a, b);
       else return a / b;)
TESSEL_SCALAR_BINARY(rem, if constexpr (is_int_v<T>) {
         if (b == 0) return a;
         if constexpr (std::is_signed_v<T>)
           if (b == T(-1)) return T(0);
         return T(a % b);
       } else return std::fmod(a, b);)
TESSEL_SCALAR_BINARY(pow, if constexpr (is_int_v<T>) return int_pow(a, b);
       else if constexpr (is_complex_v<T>) return cx::pow(a, b);
       else return b == T(0) ? T(1) : std::pow(a, b);)  // x^0 = 1 even for NaN x (libmvec gives NaN)
TESSEL_SCALAR_BINARY(max, return pick<true>(a, b);)
TESSEL_SCALAR_BINARY(min, return pick<false>(a, b);)
TESSEL_SCALAR_BINARY(atan2, return std::atan2(a, b);)
TESSEL_SCALAR_UNARY(neg, if constexpr (is_int_v<T>) return wrap_neg(x);
      else return -x;)
TESSEL_SCALAR_UNARY(abs, if constexpr (std::is_unsigned_v<T>) return x;
      else if constexpr (is_int_v<T>) return x < 0 ? wrap_neg(x) : x;
      else if constexpr (is_complex_v<T>) return cx::abs(x);
      else return std::abs(x);)
TESSEL_SCALAR_UNARY(sign, if constexpr (is_complex_v<T>) return x == T(0) ? x : x / std::abs(x);
      else if constexpr (std::is_floating_point_v<T>) return x > 0 ? T(1) : x < 0 ? T(-1) : x;  // keeps -0, NaN
      else if constexpr (std::is_unsigned_v<T>) return T(x != 0);
      else return T((x > 0) - (x < 0));)
TESSEL_SCALAR_UNARY(floor, return std::floor(x);)
TESSEL_SCALAR_UNARY(ceil, return std::ceil(x);)
TESSEL_SCALAR_UNARY(round, return round_half_even(x);)
TESSEL_SCALAR_UNARY(is_finite, return std::isfinite(x);)
TESSEL_SCALAR_UNARY(exp, if constexpr (is_complex_v<T>) return cx::exp(x); else return std::exp(x);)
TESSEL_SCALAR_UNARY(exp2, if constexpr (is_complex_v<T>) {
        return cx::exp(cx::mul(x, T(std::numbers::ln2)));  // as jnp.exp2: exp(ln 2 z), a complex product
      } else return std::exp2(x);)
TESSEL_SCALAR_UNARY(expm1, if constexpr (is_complex_v<T>) return cx::expm1(x); else return std::expm1(x);)
TESSEL_SCALAR_UNARY(log, if constexpr (is_complex_v<T>) return cx::log(x); else return std::log(x);)
TESSEL_SCALAR_UNARY(log1p, if constexpr (is_complex_v<T>) return cx::log1p(x); else return std::log1p(x);)
TESSEL_SCALAR_UNARY(sqrt, if constexpr (is_complex_v<T>) return cx::sqrt(x); else return std::sqrt(x);)
TESSEL_SCALAR_UNARY(rsqrt, if constexpr (is_complex_v<T>) return cx::rsqrt(x); else return T(1) / std::sqrt(x);)
TESSEL_SCALAR_UNARY(cbrt, return std::cbrt(x);)
TESSEL_SCALAR_UNARY(sin, if constexpr (is_complex_v<T>) return cx::sin(x); else return std::sin(x);)
TESSEL_SCALAR_UNARY(cos, if constexpr (is_complex_v<T>) return cx::cos(x); else return std::cos(x);)
TESSEL_SCALAR_UNARY(tan, if constexpr (is_complex_v<T>) return cx::tan(x); else return std::tan(x);)
TESSEL_SCALAR_UNARY(asin, if constexpr (is_complex_v<T>) return cx::asin(x); else return std::asin(x);)
TESSEL_SCALAR_UNARY(acos, if constexpr (is_complex_v<T>) return cx::acos(x); else return std::acos(x);)
TESSEL_SCALAR_UNARY(atan, if constexpr (is_complex_v<T>) return cx::atan(x); else return std::atan(x);)
TESSEL_SCALAR_UNARY(sinh, if constexpr (is_complex_v<T>) return cx::sinh(x); else return std::sinh(x);)
TESSEL_SCALAR_UNARY(cosh, if constexpr (is_complex_v<T>) return cx::cosh(x); else return std::cosh(x);)
TESSEL_SCALAR_UNARY(tanh, if constexpr (is_complex_v<T>) return cx::tanh(x); else return std::tanh(x);)
TESSEL_SCALAR_UNARY(asinh, if constexpr (is_complex_v<T>) return cx::asinh(x); else return std::asinh(x);)
TESSEL_SCALAR_UNARY(acosh, if constexpr (is_complex_v<T>) return cx::acosh(x); else return std::acosh(x);)
TESSEL_SCALAR_UNARY(atanh, if constexpr (is_complex_v<T>) return cx::atanh(x); else return std::atanh(x);)
TESSEL_SCALAR_UNARY(erfc, return std::erfc(x);)
/// The polynomial with coefficients `c` (highest degree first) at w, by Horner's rule with one
/// fused multiply-add per step (one rounding each, as XLA's CPU code contracts its steps).
template <class T, size_t N> inline T horner_fma(const T (&c)[N], T w) {
  T p = c[0];
#pragma GCC unroll 32  // unrolled, so that loops calling it vectorise
  for (size_t i = 1; i < N; ++i) p = std::fma(p, w, c[i]);
  return p;
}

/// XLA's float32 erf on CPU (Eigen's rational interpolant): x P(x^2) / Q(x^2) with P of
/// degree 4 and Q of degree 6 by fused Horner steps, and +-1 from |x| = 3.8325 on (where
/// erf rounds to 1). Bit for bit XLA's for normal inputs, so truncated_normal's bounds
/// erf(lower / sqrt 2) equal JAX's; branch-free, so loops vectorise.
inline float xla_erf(float x) {
  static constexpr float kNumerator[] = {0.00022905065861350646f, 0.0034082910107109506f, 0.050955695062380861f,
                                         0.18520832239976145f, 1.128379143519084f};
  static constexpr float kDenominator[] = {-1.1791602954361697e-7f, 0.000023547966471313185f,
                                           0.0010179625278914885f,  0.014070470171167667f,
                                           0.11098505178285362f,    0.49746925110067538f, 1.0f};
  const float x2 = x * x;
  const float ratio = (x * horner_fma(kNumerator, x2)) / horner_fma(kDenominator, x2);
  return std::fabs(x) >= 3.832506856900711f ? std::copysign(1.0f, x) : ratio;
}
TESSEL_SCALAR_UNARY(erf, if constexpr (std::is_same_v<T, float>) return xla_erf(x); else return std::erf(x);)
/// XLA's float64 erf on CPU: libm's scalar erf, declared under another name so that vector
/// loops call it rather than libmvec's vector forms (a few ulp apart).
extern "C" double tessel_libm_erf(double) noexcept __asm__("erf");
inline double xla_erf(double x) { return tessel_libm_erf(x); }
/// The float32 natural logarithm of XLA's CPU backend, which replaces libm's logf with
/// Cephes' approximation: x = 2^e m with m in [sqrt(1/2), sqrt(2)), log(m) from a degree-8
/// polynomial in t = m - 1 (three interleaved Horner chains), and e ln 2 added in two parts
/// (0.693359375 exact, -2.12194440e-4 the rest). Where XLA's code multiplies then adds, the
/// steps are fused multiply-adds as LLVM contracts them there; the other roundings are
/// XLA's, so results equal XLA's log bit for bit, subnormal inputs included (XLA's kernels
/// flush them to zero: -inf).
inline float xla_log(float x) {
  // max(x, smallest normal) on the bits (positive floats order as integers; negative x and
  // zero become the smallest normal): an integer max, which the vectoriser keeps branch-free
  // where a float select lets GCC thread the constant case into a branch.
  const uint32_t bits = uint32_t(std::max(std::bit_cast<int32_t>(x), int32_t(0x00800000)));
  float e = float(int32_t(bits >> 23) - 126);                           // exponent for m in [1/2, 1)
  const float m = std::bit_cast<float>((bits & 0x807fffffu) | 0x3f000000u);
  // m below sqrt(1/2): use 2m - 1 and one less in the exponent, so t lies in [-0.29, 0.41).
  const bool low = m < 0.707106781186547524f;
  const float t = low ? (m - 1.0f) + m : m - 1.0f;
  e = low ? e - 1.0f : e;
  const float t2 = t * t, t3 = t2 * t;
  const float a = std::fma(std::fma(t, 7.0376836292e-2f, -1.1514610310e-1f), t, 1.1676998740e-1f);
  const float b = std::fma(std::fma(t, -1.2420140846e-1f, 1.4249322787e-1f), t, -1.6668057665e-1f);
  const float c = std::fma(std::fma(t, 2.0000714765e-1f, -2.4999993993e-1f), t, 3.3333331174e-1f);
  const float poly = std::fma(std::fma(std::fma(a, t3, b), t3, c), t3, -2.12194440e-4f * e);
  const float r = std::fma(0.693359375f, e, std::fma(-0.5f, t2, t) + poly);
  constexpr float inf = std::numeric_limits<float>::infinity();
  // Subnormal inputs count as zero, as in XLA's kernels (which flush them): -inf.
  constexpr float min = std::numeric_limits<float>::min();
  return x >= min ? (x == inf ? x : r) : x > -min ? -inf : std::numeric_limits<float>::quiet_NaN();
}
/// XLA's float64 natural logarithm on CPU: libm's log (XLA approximates only float32
/// logarithms itself). Declared under another name so that vector loops keep calling glibc's
/// scalar log rather than libmvec's vector forms (the declarations above), whose last bits differ.
extern "C" double tessel_libm_log(double) noexcept __asm__("log");
inline double xla_log(double x) { return tessel_libm_log(x); }

/// XLA's float32 exp on CPU (Cephes' polynomial, as XLA's CPU backend rewrites every float32
/// exp): n = floor(x log2(e) + 1/2) with x clamped to [-87.8, 88.8] and n to [-127, 127],
/// a = x - n ln 2 in two parts (0.693359375 exact, then -2.12194440e-4), e^a = 1 + a + a^2 P(a)
/// with P of degree 5, times 2^n built from its exponent bits (0 for n = -127). Multiply-adds
/// are fused as LLVM contracts them in XLA's code, and results below the smallest normal float
/// are flushed to zero as XLA's kernels do, so results equal XLA's bit for bit (checked on
/// 8.4e6 inputs over the whole range, tests/parity/tools/exp_log_vs_xla.py). Branch-free, so
/// loops over it vectorise.
inline float xla_exp(float x) {
  const float c = std::min(std::max(x, -87.8f), 88.8f);  // NaN stays NaN, +-inf become the bounds
  // max(-127, .) first maps NaN to -127, so the conversion to int below is always defined.
  const float n = std::min(std::max(-127.0f, std::floor(std::fma(c, 1.44269504088896341f, 0.5f))), 127.0f);
  float a = std::fma(-0.693359375f, n, c);
  a = std::fma(2.12194440e-4f, n, a);
  float p = std::fma(a, 1.9875691500e-4f, 1.3981999507e-3f);
  p = std::fma(p, a, 8.3334519073e-3f);
  p = std::fma(p, a, 4.1665795894e-2f);
  p = std::fma(p, a, 1.6666665459e-1f);
  p = std::fma(p, a, 5.0000001201e-1f);
  const float ea = 1.0f + std::fma(p, a * a, a);
  const float r = ea * std::bit_cast<float>(uint32_t(int32_t(n) + 127) << 23);
  return std::fabs(r) < std::numeric_limits<float>::min() ? 0.0f : r;
}
/// XLA's float64 exp on CPU (its own intrinsic, Cephes' rational form as in Eigen):
/// n = floor(x log2(e) + 1/2) with x clamped to [-708.396, 709.783], g = x - n ln 2 in two
/// parts, e^g = 1 + 2 g P(g^2) / (Q(g^2) - g P(g^2)), scaled by 2^n; 0 below and +inf above
/// the clamp. Multiply-adds fused as LLVM contracts them; bit for bit XLA's on 4.2e6 inputs.
inline double xla_exp(double x) {
  constexpr double lo = -708.3964185322641, hi = 709.782712893384;
  const double c = std::max(lo, std::min(hi, x));  // NaN becomes hi (the result is selected below)
  const double n = std::floor(std::fma(c, 1.4426950408889634073599, 0.5));
  double g = std::fma(-n, 0.693145751953125, c);
  g = std::fma(-n, 1.42860682030941723212e-6, g);
  const double g2 = g * g;
  const double p = std::fma(std::fma(1.26177193074810590878e-4, g2, 3.02994407707441961300e-2), g2,
                            9.99999999999999999910e-1) * g;
  const double q = std::fma(std::fma(std::fma(3.00198505138664455042e-6, g2, 2.52448340349684104192e-3), g2,
                                     2.27265548208155028766e-1), g2, 2.00000000000000000009e0);
  // 2^n in two exact factors (n is in [-1022, 1024]): one rounding, as ldexp.
  const int64_t n1 = int64_t(n) / 2, n2 = int64_t(n) - n1;
  const double r = std::fma(p / (q - p), 2.0, 1.0) * std::bit_cast<double>(uint64_t(n1 + 1023) << 52) *
                   std::bit_cast<double>(uint64_t(n2 + 1023) << 52);
  return x != x ? x : x < lo ? 0.0 : x > hi ? std::numeric_limits<double>::infinity() : r;
}

/// XLA's log1p (float32 and float64): below |x| = sqrt(2) - 1 a Cephes rational function,
/// x - x^2/2 + x^3 P(x)/Q(x) with P and Q of degree 6 evaluated by fused Horner steps;
/// above it XLA's log(1 + x). Both are computed and one selected, so loops vectorise.
template <class T> inline T xla_log1p(T x) {
  static constexpr T kNumerator[] = {T(4.5270000862445199635215E-5), T(4.9854102823193375972212E-1),
                                     T(6.5787325942061044846969E0),  T(2.9911919328553073277375E1),
                                     T(6.0949667980987787057556E1),  T(5.7112963590585538103336E1),
                                     T(2.0039553499201281259648E1)};
  static constexpr T kDenominator[] = {T(1), T(1.5062909083469192043167E1), T(8.3047565967967209469434E1),
                                       T(2.2176239823732856465394E2), T(3.0909872225312059774938E2),
                                       T(2.1642788614495947685003E2), T(6.0118660497603843919306E1)};
  const T x2 = x * x;
  const T ratio = horner_fma(kNumerator, x) / horner_fma(kDenominator, x);
  const T small = x + std::fma(T(-0.5), x2, (x * x2) * ratio);
  const T large = xla_log(x + T(1));
  return std::fabs(x) < T(0.41421356237309504880) ? small : large;
}

/// XLA's pow and tan on CPU are glibc's scalar powf/pow and tanf/tan (LLVM lowers its pow and
/// tan calls to them), run as XLA runs every kernel: with the SSE control bits flush-to-zero
/// (FTZ) and denormals-are-zero (DAZ) set. FTZ turns subnormal results into zeros; DAZ makes
/// glibc read a subnormal pow base as 2^-150 (its normalising x * 2^23 gives 0), while tan
/// returns a subnormal angle untouched. xla_pow and xla_tan flush subnormal results, and for the rare subnormal operand
/// set the two bits around the call (an ldmxcsr costs more than the call itself on some
/// processors, so only there), which reproduces XLA's values for every input (checked on 3e6
/// inputs per dtype, tests/parity/tools/pow_tan_vs_xla.py). Declared under other names so that
/// loops never call libmvec's vector forms (a few ulp apart).
extern "C" float tessel_libm_powf(float, float) noexcept __asm__("powf");
extern "C" double tessel_libm_pow(double, double) noexcept __asm__("pow");
extern "C" float tessel_libm_tanf(float) noexcept __asm__("tanf");
extern "C" double tessel_libm_tan(double) noexcept __asm__("tan");
template <class T> inline bool is_subnormal(T x) { return x != 0 && std::fabs(x) < std::numeric_limits<T>::min(); }
template <class T> inline T flush_subnormal(T x) { return is_subnormal(x) ? std::copysign(T(0), x) : x; }
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/// An empty volatile statement that reads and writes v in an SSE register: the compiler can
/// move no computation of v across it (nor across the control-word writes around it).
template <class T> inline void pin_to_sequence(T& v) { asm volatile("" : "+x"(v)); }
#endif
/// f(x, more...) as XLA's kernels compute it, with FTZ and DAZ in effect.
template <class F, class T, class... U> inline T call_as_xla(F f, T x, U... more) {
  if (!(is_subnormal(x) || (is_subnormal(more) || ...))) [[likely]]
    return flush_subnormal(f(x, more...));
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  const unsigned csr = __builtin_ia32_stmxcsr();
  __builtin_ia32_ldmxcsr(csr | 0x8040u);  // FTZ (bit 15) and DAZ (bit 6)
  pin_to_sequence(x);                     // the call stays between the two writes
  (pin_to_sequence(more), ...);
  T r = f(x, more...);
  pin_to_sequence(r);
  __builtin_ia32_ldmxcsr(csr);
  return r;
#else
  // Without SSE control bits: subnormal operands read as zero (glibc under DAZ differs for pow).
  return flush_subnormal(f(flush_subnormal(x), flush_subnormal(more)...));
#endif
}
inline float xla_pow(float x, float y) { return call_as_xla(tessel_libm_powf, x, y); }
inline double xla_pow(double x, double y) { return call_as_xla(tessel_libm_pow, x, y); }
inline float xla_tan(float x) { return call_as_xla(tessel_libm_tanf, x); }
inline double xla_tan(double x) { return call_as_xla(tessel_libm_tan, x); }

/// XLA's rsqrt on x86 CPUs (JAX 0.10.2; XLA rewrites JAX's c / sqrt(x) into c * rsqrt(x)): the
/// processor's estimate refined by Newton steps y + (-y/2) (x y^2 - 1) in two fused
/// multiply-adds, once in float32 and twice in float64, for positive normal x; other x keep the
/// estimate. float32's estimate is rsqrtss/rsqrtps (XLA never takes the 16-lane rsqrt14 form on
/// CPUs that prefer 256-bit vectors), float64's is AVX-512's vrsqrt14sd/pd. Intel specifies
/// rsqrt14 exactly, but rsqrtps only within 1.5 * 2^-12, and AMD's table differs from Intel's:
/// running the same instruction gives XLA's value on the machine at hand, bit for bit
/// (tests/parity/tools/rsqrt_vs_xla.py). Without AVX-512 float64 starts from 1/sqrt(x), which
/// is not what XLA's code gives, and is within an ulp of it. Subnormal x reads as zero (DAZ).
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
inline float rsqrt_estimate(float x) {
  using v4f = float __attribute__((vector_size(16)));
  return __builtin_ia32_rsqrtss(v4f{x, 0, 0, 0})[0];
}
inline bool has_rsqrt14() {
#if defined(__AVX512F__)
  return true;
#else
  // __builtin_cpu_init first: the check may run before libgcc's own constructor (static init).
  static const bool has = (__builtin_cpu_init(), __builtin_cpu_supports("avx512f"));
  return has;
#endif
}
inline double rsqrt_estimate(double x) {
  if (!has_rsqrt14()) [[unlikely]]
    return 1.0 / std::sqrt(x);
  double y;
  asm("vrsqrt14sd %1, %1, %0" : "=v"(y) : "v"(x));
  return y;
}
#else
template <class T> inline T rsqrt_estimate(T x) { return T(1) / std::sqrt(x); }
#endif
template <class T> inline T xla_rsqrt(T x) {
  if (is_subnormal(x)) x = std::copysign(T(0), x);
  const T y = rsqrt_estimate(x);
  if (!(x >= std::numeric_limits<T>::min() && x <= std::numeric_limits<T>::max())) return y;
  auto newton = [x](T r) { return std::fma(r * T(-0.5), std::fma(x * r, r, T(-1)), r); };
  return std::is_same_v<T, float> ? newton(y) : newton(newton(y));
}

/// a * b + c with one rounding: the fma primitive (ops/special.h).
template <class T> inline T fma(T a, T b, T c) { return std::fma(a, b, c); }

/// lax.erf_inv, computed as XLA computes it on CPU so that results (and random.normal's
/// samples) equal JAX's bit for bit: Giles, "Approximating the erfinv function" (GPU
/// Computing Gems, 2011), with float using two polynomials in w = -log1p(-x^2) and double
/// three, w from XLA's log1p (above), and each Horner step one fused multiply-add (XLA's CPU
/// code contracts them). Subnormal inputs and results keep their IEEE values, where XLA's
/// kernels flush them to zero (|x| below about 1.3e-38 in float32). Every polynomial is
/// evaluated and one selected, so loops over it vectorise.
inline float erf_inv(float x) {
  static constexpr float kCentral[] = {2.81022636e-08f,  3.43273939e-07f, -3.5233877e-06f,
                                       -4.39150654e-06f, 0.00021858087f,  -0.00125372503f,
                                       -0.00417768164f,  0.246640727f,    1.50140941f};
  static constexpr float kTail[] = {-0.000200214257f, 0.000100950558f, 0.00134934322f,
                                    -0.00367342844f,  0.00573950773f,  -0.0076224613f,
                                    0.00943887047f,   1.00167406f,     2.83297682f};
  const float w = -xla_log1p(-(x * x));
  const float p = w < 5.0f ? horner_fma(kCentral, w - 2.5f) : horner_fma(kTail, std::sqrt(w) - 3.0f);
  return std::fabs(x) == 1.0f ? std::copysign(std::numeric_limits<float>::infinity(), x) : p * x;
}
inline double erf_inv(double x) {
  static constexpr double kCentral[] = {
      -3.6444120640178196996e-21, -1.685059138182016589e-19,  1.2858480715256400167e-18,
      1.115787767802518096e-17,   -1.333171662854620906e-16,  2.0972767875968561637e-17,
      6.6376381343583238325e-15,  -4.0545662729752068639e-14, -8.1519341976054721522e-14,
      2.6335093153082322977e-12,  -1.2975133253453532498e-11, -5.4154120542946279317e-11,
      1.051212273321532285e-09,   -4.1126339803469836976e-09, -2.9070369957882005086e-08,
      4.2347877827932403518e-07,  -1.3654692000834678645e-06, -1.3882523362786468719e-05,
      0.0001867342080340571352,   -0.00074070253416626697512, -0.0060336708714301490533,
      0.24015818242558961693,     1.6536545626831027356};
  static constexpr double kMiddle[] = {
      2.2137376921775787049e-09,  9.0756561938885390979e-08, -2.7517406297064545428e-07,
      1.8239629214389227755e-08,  1.5027403968909827627e-06, -4.013867526981545969e-06,
      2.9234449089955446044e-06,  1.2475304481671778723e-05, -4.7318229009055733981e-05,
      6.8284851459573175448e-05,  2.4031110387097893999e-05, -0.0003550375203628474796,
      0.00095328937973738049703,  -0.0016882755560235047313, 0.0024914420961078508066,
      -0.0037512085075692412107,  0.005370914553590063617,   1.0052589676941592334,
      3.0838856104922207635};
  static constexpr double kTail[] = {
      -2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,
      -3.7894654401267369937e-09, 7.6157012080783393804e-09,  -1.4960026627149240478e-08,
      2.9147953450901080826e-08,  -6.7711997758452339498e-08, 2.2900482228026654717e-07,
      -9.9298272942317002539e-07, 4.5260625972231537039e-06,  -1.9681778105531670567e-05,
      7.5995277030017761139e-05,  -0.00021503011930044477347, -0.00013871931833623122026,
      1.0103004648645343977,      4.8499064014085844221};
  const double w = -xla_log1p(-(x * x)), s = std::sqrt(w);
  const double p = w < 6.25 ? horner_fma(kCentral, w - 3.125) : w < 16.0 ? horner_fma(kMiddle, s - 3.25) : horner_fma(kTail, s - 5.0);
  return std::fabs(x) == 1.0 ? std::copysign(std::numeric_limits<double>::infinity(), x) : p * x;
}
TESSEL_SCALAR_UNARY(logistic, if constexpr (!is_complex_v<T>) {
        // e^-|x| never overflows: 1 / (1 + e) for x >= 0, e / (1 + e) below. One exp and a
        // select instead of a branch, so loops over it vectorise.
        const T e = std::exp(-std::abs(x)), d = T(1) + e;
        return x < 0 ? e / d : T(1) / d;
      } else {
        return T(1) / (T(1) + std::exp(-x));
      })
TESSEL_SCALAR_BINARY(eq, return a == b;)
TESSEL_SCALAR_BINARY(ne, return a != b;)
TESSEL_SCALAR_BINARY(lt, return a < b;)
TESSEL_SCALAR_BINARY(le, return a <= b;)
TESSEL_SCALAR_BINARY(gt, return a > b;)
TESSEL_SCALAR_BINARY(ge, return a >= b;)
TESSEL_SCALAR_BINARY(and_, if constexpr (std::is_same_v<T, bool>) return a && b; else return T(a & b);)
TESSEL_SCALAR_BINARY(or_, if constexpr (std::is_same_v<T, bool>) return a || b; else return T(a | b);)
TESSEL_SCALAR_BINARY(xor_, if constexpr (std::is_same_v<T, bool>) return a != b; else return T(a ^ b);)
TESSEL_SCALAR_UNARY(not_, if constexpr (std::is_same_v<T, bool>) return !x; else return T(~x);)
TESSEL_SCALAR_BINARY(shift_left, using U = std::make_unsigned_t<T>;
       if (U(b) >= sizeof(T) * 8) return T(0);  // negative amounts are huge as unsigned
       return T(wrap_t<T>(a) << U(b));)
TESSEL_SCALAR_BINARY(shift_right, using U = std::make_unsigned_t<T>;
       if (U(b) >= sizeof(T) * 8) {
         if constexpr (std::is_signed_v<T>) return T(a < 0 ? -1 : 0);
         else return T(0);
       }
       return T(a >> U(b));)
TESSEL_SCALAR_UNARY(real, return x.real();)
TESSEL_SCALAR_UNARY(imag, return x.imag();)
TESSEL_SCALAR_UNARY(conj, return std::conj(x);)
TESSEL_SCALAR_BINARY(complex, return std::complex<T>(a, b);)

#undef TESSEL_SCALAR_UNARY
#undef TESSEL_SCALAR_BINARY

}  // namespace tessel::scalar

#include "backend/cpu/scalar_complex.h"  // left out of the text embedded in generated kernels
