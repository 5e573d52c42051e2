// The transcendental element-wise functions against glibc: every function, in float32 and
// float64 (over 10^7 points per dtype: 4 * 10^6 per function in float32, 10^6 in float64),
// through a jitted (generated, vectorised) kernel and through the unfused kernels, including 0,
// -0, denormals, +-inf and NaN. Errors are in units in the last place (ULP) of the result's
// dtype, measured against glibc in a wider type (double for float32, long double for float64);
// the bounds are the ones documented in docs/performance.md ("Transcendental functions").
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/parallel.h"
#include "tessel/random.h"
#include "tessel/tessel.h"

namespace ts = tessel;

namespace {

using Wide = long double;

struct Function {
  const char* name;
  int arity;
  Wide (*reference)(Wide, Wide);        // glibc in long double (float64's reference)
  double (*reference32)(double, double);  // glibc in double (float32's reference)
  double lo, hi;                          // the range most points are drawn from
  double max_ulp_f32, max_ulp_f64;        // the documented bounds
};

/// erfinv by Newton's method on erf (erfc in the tails, where 1 - |x| is exact), in R.
template <class R> R erf_inv_reference(R x) {
  if (std::isnan(x) || std::fabs(x) > 1) return std::numeric_limits<R>::quiet_NaN();
  if (std::fabs(x) == 1) return std::copysign(std::numeric_limits<R>::infinity(), x);
  if (x == 0) return x;
  const R a = std::fabs(x), tail = 1 - a, two_over_sqrt_pi = 2 / std::sqrt(std::acos(R(-1)));
  R y = a < R(0.9) ? a * (1 + a * a / 3) : std::sqrt(-std::log(tail * (1 + a)));
  for (int i = 0; i < 100; ++i) {
    const R step = (a < R(0.5) ? std::erf(y) - a : tail - std::erfc(y)) / (two_over_sqrt_pi * std::exp(-y * y));
    if (!std::isfinite(step)) break;
    y -= step;
    if (std::fabs(step) <= std::fabs(y) * std::numeric_limits<R>::epsilon()) break;
  }
  return std::copysign(y, x);
}

// EXPR in x (and y) as the long double and the double reference.
#define REFERENCE(EXPR) \
  [](Wide x, [[maybe_unused]] Wide y) -> Wide { return EXPR; }, [](double x, [[maybe_unused]] double y) -> double { return EXPR; }

// The bounds: erf_inv's are those of its Giles polynomials, computed as XLA does (near +-1,
// 1 - x^2 cancels: float32 loses up to ~65 ULP, float64 ~8000 ULP of its 53 bits); float32
// erf's those of XLA's rational interpolant (5.6 ULP near 3.72, where erf rounds to 1 - 2^-24);
// the others glibc's libmvec's (x86-64), with the rounding of logistic's division and sum on
// top of exp's error.
const Function kFunctions[] = {
    {"exp", 1, REFERENCE(std::exp(x)), -100, 100, 4, 4},
    {"expm1", 1, REFERENCE(std::expm1(x)), -20, 20, 4, 4},
    {"log", 1, REFERENCE(std::log(x)), 0, 100, 4, 4},
    {"log1p", 1, REFERENCE(std::log1p(x)), -1, 10, 4, 4},
    {"tanh", 1, REFERENCE(std::tanh(x)), -10, 10, 4, 4},
    {"logistic", 1, REFERENCE(1 / (1 + std::exp(-x))), -20, 20, 5, 5},
    {"sin", 1, REFERENCE(std::sin(x)), -100, 100, 4, 4},
    {"cos", 1, REFERENCE(std::cos(x)), -100, 100, 4, 4},
    {"tan", 1, REFERENCE(std::tan(x)), -10, 10, 4, 4},
    {"erf", 1, REFERENCE(std::erf(x)), -5, 5, 6, 4},
    {"erf_inv", 1, REFERENCE(erf_inv_reference(x)), -1, 1, 128, 16384},
    {"cbrt", 1, REFERENCE(std::cbrt(x)), -100, 100, 4, 4},
    {"pow", 2, REFERENCE(std::pow(x, y)), 0, 10, 4, 4},
};
#undef REFERENCE

ts::Array apply(const Function& f, const ts::Array& a, const ts::Array& b) {
  const std::string n = f.name;
  if (n == "exp") return ts::exp(a);
  if (n == "expm1") return ts::expm1(a);
  if (n == "log") return ts::log(a);
  if (n == "log1p") return ts::log1p(a);
  if (n == "tanh") return ts::tanh(a);
  if (n == "logistic") return ts::logistic(a);
  if (n == "sin") return ts::sin(a);
  if (n == "cos") return ts::cos(a);
  if (n == "tan") return ts::tan(a);
  if (n == "erf") return ts::erf(a);
  if (n == "erf_inv") return ts::erf_inv(a);
  if (n == "cbrt") return ts::cbrt(a);
  return ts::pow(a, b);
}

/// 0, -0, the denormal and normal extremes, +-inf, NaN and a few exact points, in T.
template <class T> std::vector<T> special_values() {
  using L = std::numeric_limits<T>;
  std::vector<T> v = {T(0),         T(1),          T(2),        T(0.5),      T(10),      T(100),      L::denorm_min(),
                      L::min() / 2, L::min(),      L::max(),    L::epsilon(), L::infinity(), L::quiet_NaN(), T(3),
                      T(88.7),      T(709.7),      T(1e-30),    T(1e30),     T(0.999999), T(1e10),      T(-1) + L::epsilon()};
  const size_t n = v.size();
  for (size_t i = 0; i < n; ++i) v.push_back(-v[i]);
  return v;
}

/// n points: the special values, then a quarter random bit patterns (every exponent, NaNs and
/// infinities included), the rest uniform in [lo, hi).
template <class T> std::vector<T> points(size_t n, double lo, double hi, uint64_t seed) {
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  std::vector<T> v = special_values<T>();
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(lo, hi);
  while (v.size() < n) {
    if (v.size() % 4 == 0) {
      const Bits bits = Bits(rng());
      T x;
      std::memcpy(&x, &bits, sizeof x);
      v.push_back(x);
    } else {
      v.push_back(T(uniform(rng)));
    }
  }
  return v;
}

/// The error of y against the exact value r, in ULP of T at r (denormal results in ULP of the
/// smallest denormal); infinite when y is NaN or infinite and r is not, or NaN-ness differs.
template <class T> double ulp_error(T y, Wide r) {
  if (std::isnan(r)) return std::isnan(y) ? 0 : INFINITY;
  if (std::isnan(y)) return INFINITY;
  const T rt = T(r);  // r rounded to T (an infinity when r is past T's range)
  if (std::isinf(rt) || std::isinf(y)) return y == rt ? 0 : INFINITY;
  if (r == 0 || y == 0) {  // zeros must be exact, sign included
    if (y == 0 && r == 0) return std::signbit(y) == std::signbit(r) ? 0 : INFINITY;
  }
  using L = std::numeric_limits<T>;
  const Wide ulp = std::fabs(rt) < L::min() ? Wide(L::denorm_min()) : std::ldexp(Wide(1), std::ilogb(rt) - (L::digits - 1));
  return double(std::fabs(Wide(y) - r) / ulp);
}

struct Worst {
  double ulp = 0;
  Wide a = 0, b = 0;
  double y = 0;
};

template <class T> class VectorMath : public ::testing::Test {};
using Types = ::testing::Types<float, double>;
class TypeName {
 public:
  template <class T> static std::string GetName(int) { return std::is_same_v<T, float> ? "float32" : "float64"; }
};
TYPED_TEST_SUITE(VectorMath, Types, TypeName);

// Points per function: 4 * 10^6 in float32 (52 * 10^6 over the 13 functions); in float64,
// whose long double references are slower, 10^6 (13 * 10^6).
template <class T> constexpr size_t kPoints = std::is_same_v<T, float> ? 4'000'000 : 1'000'000;
constexpr int64_t kChunk = int64_t(1) << 20;  // points per call

// Each function on kPoints<T> points through jit (a generated kernel) and the unfused kernel.
TYPED_TEST(VectorMath, WithinDocumentedUlpOfGlibc) {
  using T = TypeParam;
  const ts::DType dtype = std::is_same_v<T, float> ? ts::f32 : ts::f64;
  for (const Function& f : kFunctions) {
    SCOPED_TRACE(f.name);
    const std::vector<T> a = points<T>(kPoints<T>, f.lo, f.hi, 1);
    // pow's exponents: specials, bit patterns, integers and fractions in [-10, 10).
    std::vector<T> b = f.arity == 2 ? points<T>(kPoints<T>, -10, 10, 2) : std::vector<T>{};
    if (f.arity == 2)
      for (size_t i = 2; i < b.size(); i += 3) b[i] = std::round(b[i]);
    auto jitted = ts::jit([&f](const ts::Array& x, const ts::Array& y) { return apply(f, x, y); });
    Worst worst_jit, worst_unfused;
    for (size_t start = 0; start < kPoints<T>; start += size_t(kChunk)) {
      const size_t m = std::min(kPoints<T> - start, size_t(kChunk));
      const ts::Array x(std::vector<T>(a.begin() + long(start), a.begin() + long(start + m)));
      const ts::Array y = f.arity == 2 ? ts::Array(std::vector<T>(b.begin() + long(start), b.begin() + long(start + m)))
                                       : ts::zeros({int64_t(m)}, dtype);
      const std::vector<T> fused = jitted(x, y).template to_vector<T>();
      const std::vector<T> unfused = apply(f, x, y).template to_vector<T>();
      ASSERT_EQ(fused.size(), m);
      ASSERT_EQ(unfused.size(), m);
      // References in parallel (long double libm is slow); each chunk of work keeps its worst.
      std::vector<Worst> part_jit(size_t(ts::cpu::num_threads()) * 64), part_unfused(part_jit.size());
      const int64_t grain = int64_t(m) / int64_t(part_jit.size()) + 1;
      ts::cpu::parallel_for(int64_t(m), grain, [&](int64_t lo, int64_t hi) {
        Worst& wj = part_jit[size_t(lo / grain)];
        Worst& wu = part_unfused[size_t(lo / grain)];
        for (int64_t i = lo; i < hi; ++i) {
          const size_t k = start + size_t(i);
          // Arguments widen exactly.
          const Wide xa = Wide(a[k]), xb = f.arity == 2 ? Wide(b[k]) : 0;
          const Wide r = std::is_same_v<T, float> ? Wide(f.reference32(double(xa), double(xb))) : f.reference(xa, xb);
          const double ej = ulp_error<T>(fused[size_t(i)], r), eu = ulp_error<T>(unfused[size_t(i)], r);
          if (!(ej <= wj.ulp)) wj = {ej, xa, xb, double(fused[size_t(i)])};
          if (!(eu <= wu.ulp)) wu = {eu, xa, xb, double(unfused[size_t(i)])};
        }
      });
      for (size_t p = 0; p < part_jit.size(); ++p) {
        if (!(part_jit[p].ulp <= worst_jit.ulp)) worst_jit = part_jit[p];
        if (!(part_unfused[p].ulp <= worst_unfused.ulp)) worst_unfused = part_unfused[p];
      }
    }
    const double bound = std::is_same_v<T, float> ? f.max_ulp_f32 : f.max_ulp_f64;
    std::printf("  %-8s %s: max %.3g ULP jit, %.3g ULP unfused (bound %g)\n", f.name,
                std::is_same_v<T, float> ? "float32" : "float64", worst_jit.ulp, worst_unfused.ulp, bound);
    EXPECT_LE(worst_jit.ulp, bound) << "jit: at x = " << double(worst_jit.a) << ", y = " << double(worst_jit.b)
                                    << " it gives " << worst_jit.y;
    EXPECT_LE(worst_unfused.ulp, bound) << "unfused: at x = " << double(worst_unfused.a)
                                        << ", y = " << double(worst_unfused.b) << " it gives " << worst_unfused.y;
  }
}

}  // namespace
