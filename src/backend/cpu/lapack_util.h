#pragma once
// What the LAPACK bindings share (lapack_schur.cpp; lapack.cpp keeps its own copy of these
// until it switches to this header): LAPACKE with C++ complex types, the real type of a
// LAPACK element type, 32-bit dimension checks, NaN results, and the split of a batch of
// problems over the intra-op arena.
#include <complex>
// LAPACKE's complex types as the C++ ones (before lapacke.h, which otherwise uses C99's).
#define lapack_complex_float std::complex<float>
#define lapack_complex_double std::complex<double>
#include <lapacke.h>

#include <algorithm>
#include <climits>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>

#include "backend/cpu/blas.h"
#include "backend/cpu/parallel.h"
#include "tessel/error.h"

namespace tessel::cpu::lapack {

using c64 = std::complex<float>;
using c128 = std::complex<double>;

// Flops one task should hold: enough to hide the cost of a task, so that small matrices are
// grouped (a batch of 4096 8 x 8 matrices runs as a few tasks of about a thousand each).
inline constexpr double kTaskWork = double(1 << 20);
// The fixed cost of one LAPACK call (argument checks, workspace set-up), in flops.
inline constexpr double kCallWork = 2000;

template <class T> struct Real { using type = T; };
template <class T> struct Real<std::complex<T>> { using type = T; };
template <class T> using real_t = typename Real<T>::type;
template <class T> inline constexpr bool is_cplx = !std::is_same_v<T, real_t<T>>;

inline lapack_int to_int(int64_t v, const char* op) {
  if (v > INT_MAX)
    throw ValueError(std::string(op) + ": a dimension of " + std::to_string(v) +
                     " exceeds LAPACK's 32-bit integers; factor smaller matrices");
  return lapack_int(v);
}

/// Splits `batch` matrices of `work` flops each over the arena (fn(begin, end) per group).
inline void for_each_matrix(int64_t batch, double work, const std::function<void(int64_t, int64_t)>& fn) {
  use_one_blas_thread();
  const int64_t grain = std::max<int64_t>(1, int64_t(kTaskWork / (work + kCallWork)));
  parallel_for(batch, grain, fn);
}

template <class T> T nan_value() {
  const real_t<T> q = std::numeric_limits<real_t<T>>::quiet_NaN();
  if constexpr (is_cplx<T>) return T(q, q);
  else return q;
}

/// Fills n elements at p (when not null) with NaN.
template <class T> void fill_nan(T* p, int64_t n) {
  if (p) std::fill(p, p + n, nan_value<T>());
}

}  // namespace tessel::cpu::lapack
