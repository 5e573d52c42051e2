#pragma once
// What the LAPACK bindings share (lapack.cpp, lapack_schur.cpp): LAPACKE with C++ complex
// types, the real type of a LAPACK element type, 32-bit dimension checks, NaN results, the
// split of a batch of problems over the intra-op arena (large factorizations on all of
// OpenBLAS's threads), and the dispatch from a DType to its C++ element type.
#include <complex>
// LAPACKE's complex types as the C++ ones (before lapacke.h, which otherwise uses C99's).
#define lapack_complex_float std::complex<float>
#define lapack_complex_double std::complex<double>
#include <lapacke.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <type_traits>

#include "tessel/dtype.h"

namespace tessel::cpu::lapack {

using c64 = std::complex<float>;
using c128 = std::complex<double>;

// Flops one task should hold: enough to hide the cost of a task, so that small matrices are
// grouped (a batch of 4096 8 x 8 matrices runs as a few tasks of about a thousand each).
inline constexpr double kTaskWork = double(1 << 20);
// The fixed cost of one LAPACK call (argument checks, workspace set-up), in flops.
inline constexpr double kCallWork = 2000;
// A factorization this large (in flops: a Cholesky factor of about 400 x 400) runs alone
// with OpenBLAS's threads when the batch cannot give every thread of the arena a matrix.
inline constexpr double kLargeWork = 2e7;

template <class T> struct Real { using type = T; };
template <class T> struct Real<std::complex<T>> { using type = T; };
template <class T> using real_t = typename Real<T>::type;
template <class T> inline constexpr bool is_cplx = !std::is_same_v<T, real_t<T>>;

/// v as a LAPACK integer; ValueError naming `op` when it exceeds 32 bits.
lapack_int to_int(int64_t v, const char* op);

/// Runs fn with OpenBLAS on the arena's thread count: large factorizations use the cores
/// through LAPACK's own blocked, threaded algorithms. The count is process-wide, so such
/// calls take turns (each uses every core), and the count returns to one afterwards.
void with_all_blas_threads(const std::function<void()>& fn);

/// Splits `batch` matrices of `work` flops each over the arena (fn(begin, end) per group);
/// a batch of fewer large matrices (kLargeWork) than threads runs them one at a time on all
/// threads.
void for_each_matrix(int64_t batch, double work, const std::function<void(int64_t, int64_t)>& fn);

/// DTypeError: `op` was given a dtype LAPACK does not factor (abstract evaluation should
/// have rejected it).
[[noreturn]] void unsupported(const char* op, DType d);

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

// Runs CALL with T the C++ element type of d (float, double, c64, c128); any other dtype
// throws lapack::unsupported(op, d).
#define TESSEL_LAPACK_DISPATCH(op, d, CALL)                                   \
  switch (d) {                                                                \
    case ::tessel::DType::float32: { using T = float; CALL; break; }          \
    case ::tessel::DType::float64: { using T = double; CALL; break; }         \
    case ::tessel::DType::complex64: { using T = ::tessel::cpu::lapack::c64; CALL; break; }   \
    case ::tessel::DType::complex128: { using T = ::tessel::cpu::lapack::c128; CALL; break; } \
    default: ::tessel::cpu::lapack::unsupported(op, d);                       \
  }
