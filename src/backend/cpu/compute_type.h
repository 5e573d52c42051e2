#pragma once
// The C++ types kernels compute in, by storage type.
#include <complex>
#include <type_traits>

#include "tessel/dtype.h"

namespace tessel::cpu {

/// The type arithmetic happens in: float for the half types, else T itself.
template <class T> struct compute_type { using type = T; };
template <> struct compute_type<float16_t> { using type = float; };
template <> struct compute_type<bfloat16_t> { using type = float; };
template <class T> using compute_t = typename compute_type<T>::type;

template <class T> inline constexpr bool is_complex_v =
    std::is_same_v<T, complex64_t> || std::is_same_v<T, complex128_t>;
template <class T> inline constexpr bool is_half_v = std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>;
template <class T> inline constexpr bool is_float_v = std::is_floating_point_v<T> || is_half_v<T>;

}  // namespace tessel::cpu
