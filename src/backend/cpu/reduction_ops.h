#pragma once
// The monoids shared by the reduction kernels (reduce_sum, ...) and the cumulative kernels
// (cumsum, ...). Each op names its accumulator type `Acc<T>`, its identity and `combine`.
//
// Accumulators: float16/bfloat16 accumulate in float; integer sums and products in an
// unsigned type of at least 32 bits, so overflow wraps like XLA (and is not C++ UB); f32,
// f64 and complex in their own type. Sums along a contiguous axis are pairwise (like
// NumPy), so f32 rounding error grows like log n rather than n; sums across outer axes add
// rows in memory order (also like NumPy) within fixed blocks whose partial results combine
// in block order (src/ops/reduction.cpp: the same bits for any thread count).
#include <bit>
#include <cmath>
#include <limits>
#include <type_traits>

#include "backend/cpu/compute_type.h"
#include "backend/cpu/scalar.h"

namespace tessel::cpu::reduce {

template <class T> struct int_acc {
  using type = std::conditional_t<(sizeof(T) < 4), uint32_t, std::make_unsigned_t<T>>;
};
/// Accumulator of sums and products.
template <class T> using arith_acc_t =
    typename std::conditional_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int_acc<T>,
                                compute_type<T>>::type;

template <class A> inline bool is_nan(const A& a) {
  if constexpr (std::is_integral_v<A>) return false;
  else return a != a;  // complex: either part NaN
}
/// The order argmax/argmin use: numeric, lexicographic (real, imag) for complex.
template <class A> inline bool greater(const A& a, const A& b) {
  if constexpr (is_complex_v<A>) return a.real() > b.real() || (a.real() == b.real() && a.imag() > b.imag());
  else return a > b;
}

template <class A> A lowest_value() {
  if constexpr (is_complex_v<A>) {
    using R = typename A::value_type;
    return A(-std::numeric_limits<R>::infinity(), -std::numeric_limits<R>::infinity());
  } else if constexpr (std::numeric_limits<A>::has_infinity) {
    return -std::numeric_limits<A>::infinity();
  } else {
    return std::numeric_limits<A>::lowest();
  }
}
template <class A> A highest_value() {
  if constexpr (is_complex_v<A>) {
    using R = typename A::value_type;
    return A(std::numeric_limits<R>::infinity(), std::numeric_limits<R>::infinity());
  } else if constexpr (std::numeric_limits<A>::has_infinity) {
    return std::numeric_limits<A>::infinity();
  } else {
    return std::numeric_limits<A>::max();
  }
}

struct SumOp {
  static constexpr bool kPairwise = true;
  template <class T> using Acc = arith_acc_t<T>;
  template <class A> static A identity() { return A(0); }
  template <class A> static A combine(A a, A b) {
    if constexpr (std::is_same_v<A, bool>) return a || b;
    else return A(a + b);
  }
};
struct ProdOp {
  static constexpr bool kPairwise = false;
  template <class T> using Acc = arith_acc_t<T>;
  template <class A> static A identity() { return A(1); }
  template <class A> static A combine(A a, A b) {
    if constexpr (std::is_same_v<A, bool>) return a && b;
    else return A(a * b);
  }
};
/// max/min: scalar::max / scalar::min (NaN propagates, -0 < +0), the element-wise functions.
///
/// Long contiguous rows of floats take `combine_ignoring_zero_sign` (two selects, which
/// vectorize; the signed-zero test does not, and costs ~3x there), and reduce_row settles
/// the sign of a zero result afterwards: the max is +0 if any element is +0, the min -0 if
/// any element is -0.
template <bool Max> struct MaxMinOp {
  static constexpr bool kPairwise = false;
  static constexpr bool kMax = Max;
  template <class T> using Acc = compute_t<T>;
  template <class A> static A identity() { return Max ? lowest_value<A>() : highest_value<A>(); }
  template <class A> static A combine(A a, A b) { return Max ? scalar::max(a, b) : scalar::min(a, b); }
  template <class A> static A combine_ignoring_zero_sign(A a, A b) {
    const A r = (Max ? greater(a, b) : greater(b, a)) ? a : b;
    return is_nan(a) ? a : r;
  }
};
using MaxOp = MaxMinOp<true>;
using MinOp = MaxMinOp<false>;
/// Logical for bool, bitwise for integers (lax.reduce_and / reduce_or).
struct AndOp {
  static constexpr bool kPairwise = false;
  template <class T> using Acc = T;
  template <class A> static A identity() {
    if constexpr (std::is_same_v<A, bool>) return true;
    else return A(~A(0));
  }
  template <class A> static A combine(A a, A b) {
    if constexpr (std::is_same_v<A, bool>) return a && b;
    else return A(a & b);
  }
};
struct OrOp {
  static constexpr bool kPairwise = false;
  template <class T> using Acc = T;
  template <class A> static A identity() { return A(0); }
  template <class A> static A combine(A a, A b) {
    if constexpr (std::is_same_v<A, bool>) return a || b;
    else return A(a | b);
  }
};

/// jnp's accumulation dtype of sum and prod: bool and small integers widen to 32 bits (the
/// default int; unsigned stay unsigned). cumsum and cumprod keep small integers.
inline DType promote_small_int(DType d) {
  if (d == DType::bool_ || d == DType::int8 || d == DType::int16) return DType::int32;
  if (d == DType::uint8 || d == DType::uint16) return DType::uint32;
  return d;
}

/// float16 -> float inline (the out-of-line conversion costs a call per element): the half's
/// exponent and mantissa bits placed in a float are the value times 2^-112, subnormals
/// included; infinities and NaN keep an all-ones exponent.
inline float half_to_float(float16_t h) {
  const uint32_t em = uint32_t(h.bits & 0x7fffu), o = em << 13;
  const uint32_t finite = std::bit_cast<uint32_t>(std::bit_cast<float>(o) * 0x1p112f);
  // A mask, not a branch or select: loops over half arrays then vectorize.
  const uint32_t special = 0u - uint32_t(em >= 0x7c00u);
  const uint32_t u = (special & (o | 0x7f800000u)) | (~special & finite) | (uint32_t(h.bits & 0x8000u) << 16);
  return std::bit_cast<float>(u);
}

template <class A, class T> inline A load(T v) {
  if constexpr (std::is_same_v<A, T>) return v;
  else if constexpr (std::is_same_v<T, float16_t>) return A(half_to_float(v));
  else if constexpr (is_half_v<T>) return A(float(v));
  else return static_cast<A>(v);  // integer -> wider unsigned accumulator (modular)
}
template <class T, class A> inline T store(A a) {
  if constexpr (std::is_same_v<A, T>) return a;
  else if constexpr (is_half_v<T>) return T(float(a));
  else return static_cast<T>(a);  // modular narrowing (defined since C++20)
}

}  // namespace tessel::cpu::reduce
