#include "backend/cpu/lapack_schur.h"

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
#include <vector>

#include "backend/cpu/blas.h"
#include "backend/cpu/parallel.h"
#include "tessel/error.h"

namespace tessel::cpu {
namespace {

using c64 = std::complex<float>;
using c128 = std::complex<double>;

template <class T> struct Real { using type = T; };
template <class T> struct Real<std::complex<T>> { using type = T; };
template <class T> using real_t = typename Real<T>::type;

// Flops one task should hold, so that batches of small problems are grouped.
constexpr double kTaskWork = double(1 << 20);

lapack_int to_int(int64_t v, const char* op) {
  if (v > INT_MAX)
    throw ValueError(std::string(op) + ": a dimension of " + std::to_string(v) +
                     " exceeds LAPACK's 32-bit integers; use smaller problems");
  return lapack_int(v);
}

template <class T> void fill_nan(T* p, int64_t n) {
  const real_t<T> q = std::numeric_limits<real_t<T>>::quiet_NaN();
  if constexpr (std::is_same_v<T, real_t<T>>) std::fill(p, p + n, q);
  else std::fill(p, p + n, T(q, q));
}

void for_each_problem(int64_t batch, double work, const std::function<void(int64_t, int64_t)>& fn) {
  use_one_blas_thread();
  parallel_for(batch, std::max<int64_t>(1, int64_t(kTaskWork / (work + 2000))), fn);
}

// ---- typed entry points ----

// gees on row-major storage (LAPACKE transposes); no eigenvalue ordering (select unused).
lapack_int gees(char jobvs, lapack_int n, float* a, float* z) {
  std::vector<float> wr(static_cast<size_t>(n)), wi(static_cast<size_t>(n));
  lapack_int sdim = 0;
  return LAPACKE_sgees(LAPACK_ROW_MAJOR, jobvs, 'N', nullptr, n, a, n, &sdim, wr.data(), wi.data(), z, n);
}
lapack_int gees(char jobvs, lapack_int n, double* a, double* z) {
  std::vector<double> wr(static_cast<size_t>(n)), wi(static_cast<size_t>(n));
  lapack_int sdim = 0;
  return LAPACKE_dgees(LAPACK_ROW_MAJOR, jobvs, 'N', nullptr, n, a, n, &sdim, wr.data(), wi.data(), z, n);
}
lapack_int gees(char jobvs, lapack_int n, c64* a, c64* z) {
  std::vector<c64> w(static_cast<size_t>(n));
  lapack_int sdim = 0;
  return LAPACKE_cgees(LAPACK_ROW_MAJOR, jobvs, 'N', nullptr, n, a, n, &sdim, w.data(), z, n);
}
lapack_int gees(char jobvs, lapack_int n, c128* a, c128* z) {
  std::vector<c128> w(static_cast<size_t>(n));
  lapack_int sdim = 0;
  return LAPACKE_zgees(LAPACK_ROW_MAJOR, jobvs, 'N', nullptr, n, a, n, &sdim, w.data(), z, n);
}

template <class T> void schur_t(int64_t batch, int64_t n, const T* a, T* t, T* z) {
  const lapack_int ni = to_int(n, "schur");
  for_each_problem(batch, 25.0 * double(n) * double(n) * double(n), [&](int64_t lo, int64_t hi) {
    std::vector<T> zbuf(z ? 1 : size_t(std::max<int64_t>(1, n * n)));
    for (int64_t p = lo; p < hi; ++p) {
      T* tp = t + p * n * n;
      T* zp = z ? z + p * n * n : zbuf.data();
      std::copy(a + p * n * n, a + (p + 1) * n * n, tp);
      if (n == 0) continue;
      if (gees(z ? 'V' : 'N', ni, tp, zp) != 0) {
        fill_nan(tp, n * n);
        if (z) fill_nan(zp, n * n);
      }
    }
  });
}

#define TESSEL_SCHUR_DISPATCH(op, d, CALL)                 \
  switch (d) {                                                  \
    case DType::float32: { using T = float; CALL; break; }      \
    case DType::float64: { using T = double; CALL; break; }     \
    case DType::complex64: { using T = c64; CALL; break; }      \
    case DType::complex128: { using T = c128; CALL; break; }    \
    default:                                                    \
      throw DTypeError(std::string(op) + ": LAPACK takes float32, float64, complex64 and complex128, got " + \
                       dtype_name(d));                          \
  }

}  // namespace

void schur(DType d, int64_t batch, int64_t n, const void* a, void* t, void* z) {
  TESSEL_SCHUR_DISPATCH("schur", d,
                             schur_t<T>(batch, n, static_cast<const T*>(a), static_cast<T*>(t), static_cast<T*>(z)))
}

}  // namespace tessel::cpu
