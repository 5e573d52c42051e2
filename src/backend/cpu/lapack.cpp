#include "backend/cpu/lapack.h"

#include <complex>
// LAPACKE's complex types as the C++ ones (before lapacke.h, which otherwise uses C99's).
#define lapack_complex_float std::complex<float>
#define lapack_complex_double std::complex<double>
#include <cblas.h>
#include <lapacke.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "backend/cpu/blas.h"
#include "backend/cpu/parallel.h"
#include "tessel/error.h"

namespace tessel::cpu {
namespace {

using c64 = std::complex<float>;
using c128 = std::complex<double>;

// Flops one task should hold: enough to hide the cost of a task, so that small matrices are
// grouped (a batch of 4096 8 x 8 matrices runs as a few tasks of about a thousand each).
constexpr double kTaskWork = double(1 << 20);
// The fixed cost of one LAPACK call (argument checks, workspace set-up), in flops.
constexpr double kCallWork = 2000;

template <class T> struct Real { using type = T; };
template <class T> struct Real<std::complex<T>> { using type = T; };
template <class T> using real_t = typename Real<T>::type;
template <class T> constexpr bool is_cplx = !std::is_same_v<T, real_t<T>>;

lapack_int to_int(int64_t v, const char* op) {
  if (v > INT_MAX)
    throw ValueError(std::string(op) + ": a dimension of " + std::to_string(v) +
                     " exceeds LAPACK's 32-bit integers; factor smaller matrices");
  return lapack_int(v);
}

/// Splits `batch` matrices of `work` flops each over the arena (fn(begin, end) per group).
void for_each_matrix(int64_t batch, double work, const std::function<void(int64_t, int64_t)>& fn) {
  use_one_blas_thread();
  const int64_t grain = std::max<int64_t>(1, int64_t(kTaskWork / (work + kCallWork)));
  parallel_for(batch, grain, fn);
}

template <class T> T nan_value() {
  const real_t<T> q = std::numeric_limits<real_t<T>>::quiet_NaN();
  if constexpr (is_cplx<T>) return T(q, q);
  else return q;
}

template <class T> void fill_nan(T* p, int64_t n) {
  if (p) std::fill(p, p + n, nan_value<T>());
}

template <class T> T conj_if(T x, bool c) {
  if constexpr (is_cplx<T>) return c ? std::conj(x) : x;
  else return x;
}

/// dst (cols x rows, leading dimension ldd) = src^T (or src^H), src rows x cols with
/// leading dimension lds; blocked so that both sides stay in cache.
template <class T> void transpose(const T* src, int64_t rows, int64_t cols, int64_t lds, T* dst, int64_t ldd, bool conj = false) {
  constexpr int64_t kB = 32;
  for (int64_t i0 = 0; i0 < rows; i0 += kB)
    for (int64_t j0 = 0; j0 < cols; j0 += kB)
      for (int64_t i = i0; i < std::min(rows, i0 + kB); ++i)
        for (int64_t j = j0; j < std::min(cols, j0 + kB); ++j) dst[j * ldd + i] = conj_if(src[i * lds + j], conj);
}

/// Real part of a LAPACK workspace-size answer.
template <class T> lapack_int work_size(T w) {
  if constexpr (is_cplx<T>) return std::max<lapack_int>(1, lapack_int(w.real()));
  else return std::max<lapack_int>(1, lapack_int(w));
}

// ---- typed entry points: one overload per dtype ----

#define TESSEL_LAPACK_COMMON(T, p)                                                                                   \
  lapack_int potrf(char uplo, lapack_int n, T* a, lapack_int lda) {                                               \
    return LAPACKE_##p##potrf_work(LAPACK_COL_MAJOR, uplo, n, a, lda);                                            \
  }                                                                                                                \
  lapack_int getrf(lapack_int m, lapack_int n, T* a, lapack_int lda, lapack_int* ipiv) {                         \
    return LAPACKE_##p##getrf_work(LAPACK_COL_MAJOR, m, n, a, lda, ipiv);                                         \
  }                                                                                                                \
  lapack_int gelqf(lapack_int m, lapack_int n, T* a, lapack_int lda, T* tau, T* work, lapack_int lwork) {       \
    return LAPACKE_##p##gelqf_work(LAPACK_COL_MAJOR, m, n, a, lda, tau, work, lwork);                             \
  }
TESSEL_LAPACK_COMMON(float, s)
TESSEL_LAPACK_COMMON(double, d)
TESSEL_LAPACK_COMMON(c64, c)
TESSEL_LAPACK_COMMON(c128, z)
#undef TESSEL_LAPACK_COMMON

#define TESSEL_LAPACK_REAL(T, p)                                                                                     \
  lapack_int orglq(lapack_int m, lapack_int n, lapack_int k, T* a, lapack_int lda, const T* tau, T* work,         \
                   lapack_int lwork) {                                                                             \
    return LAPACKE_##p##orglq_work(LAPACK_COL_MAJOR, m, n, k, a, lda, tau, work, lwork);                          \
  }                                                                                                                \
  lapack_int heevd(char jobz, char uplo, lapack_int n, T* a, lapack_int lda, T* w, T* work, lapack_int lwork,     \
                   T*, lapack_int, lapack_int* iwork, lapack_int liwork) {                                         \
    return LAPACKE_##p##syevd_work(LAPACK_COL_MAJOR, jobz, uplo, n, a, lda, w, work, lwork, iwork, liwork);       \
  }                                                                                                                \
  lapack_int gesdd(char jobz, lapack_int m, lapack_int n, T* a, lapack_int lda, T* s, T* u, lapack_int ldu,      \
                   T* vt, lapack_int ldvt, T* work, lapack_int lwork, T*, lapack_int* iwork) {                    \
    return LAPACKE_##p##gesdd_work(LAPACK_COL_MAJOR, jobz, m, n, a, lda, s, u, ldu, vt, ldvt, work, lwork,        \
                                   iwork);                                                                         \
  }                                                                                                                \
  lapack_int geev(char jobvl, char jobvr, lapack_int n, T* a, lapack_int lda, T* wr, T* wi, T* vl,               \
                  lapack_int ldvl, T* vr, lapack_int ldvr, T* work, lapack_int lwork, T*) {                        \
    return LAPACKE_##p##geev_work(LAPACK_COL_MAJOR, jobvl, jobvr, n, a, lda, wr, wi, vl, ldvl, vr, ldvr, work,    \
                                  lwork);                                                                          \
  }
TESSEL_LAPACK_REAL(float, s)
TESSEL_LAPACK_REAL(double, d)
#undef TESSEL_LAPACK_REAL

#define TESSEL_LAPACK_COMPLEX(T, R, p)                                                                               \
  lapack_int orglq(lapack_int m, lapack_int n, lapack_int k, T* a, lapack_int lda, const T* tau, T* work,         \
                   lapack_int lwork) {                                                                             \
    return LAPACKE_##p##unglq_work(LAPACK_COL_MAJOR, m, n, k, a, lda, tau, work, lwork);                          \
  }                                                                                                                \
  lapack_int heevd(char jobz, char uplo, lapack_int n, T* a, lapack_int lda, R* w, T* work, lapack_int lwork,     \
                   R* rwork, lapack_int lrwork, lapack_int* iwork, lapack_int liwork) {                            \
    return LAPACKE_##p##heevd_work(LAPACK_COL_MAJOR, jobz, uplo, n, a, lda, w, work, lwork, rwork, lrwork, iwork, \
                                   liwork);                                                                        \
  }                                                                                                                \
  lapack_int gesdd(char jobz, lapack_int m, lapack_int n, T* a, lapack_int lda, R* s, T* u, lapack_int ldu,      \
                   T* vt, lapack_int ldvt, T* work, lapack_int lwork, R* rwork, lapack_int* iwork) {              \
    return LAPACKE_##p##gesdd_work(LAPACK_COL_MAJOR, jobz, m, n, a, lda, s, u, ldu, vt, ldvt, work, lwork, rwork, \
                                   iwork);                                                                         \
  }                                                                                                                \
  lapack_int geev(char jobvl, char jobvr, lapack_int n, T* a, lapack_int lda, T* w, T* vl, lapack_int ldvl,      \
                  T* vr, lapack_int ldvr, T* work, lapack_int lwork, R* rwork) {                                   \
    return LAPACKE_##p##geev_work(LAPACK_COL_MAJOR, jobvl, jobvr, n, a, lda, w, vl, ldvl, vr, ldvr, work, lwork,  \
                                  rwork);                                                                          \
  }
TESSEL_LAPACK_COMPLEX(c64, float, c)
TESSEL_LAPACK_COMPLEX(c128, double, z)
#undef TESSEL_LAPACK_COMPLEX

void trsm(CBLAS_SIDE side, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, blasint m, blasint n,
          const float* a, blasint lda, float* b, blasint ldb) {
  cblas_strsm(CblasRowMajor, side, uplo, trans, diag, m, n, 1.0f, a, lda, b, ldb);
}
void trsm(CBLAS_SIDE side, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, blasint m, blasint n,
          const double* a, blasint lda, double* b, blasint ldb) {
  cblas_dtrsm(CblasRowMajor, side, uplo, trans, diag, m, n, 1.0, a, lda, b, ldb);
}
void trsm(CBLAS_SIDE side, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, blasint m, blasint n,
          const c64* a, blasint lda, c64* b, blasint ldb) {
  const c64 one(1);
  cblas_ctrsm(CblasRowMajor, side, uplo, trans, diag, m, n, &one, a, lda, b, ldb);
}
void trsm(CBLAS_SIDE side, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, blasint m, blasint n,
          const c128* a, blasint lda, c128* b, blasint ldb) {
  const c128 one(1);
  cblas_ztrsm(CblasRowMajor, side, uplo, trans, diag, m, n, &one, a, lda, b, ldb);
}

// ---- per-dtype implementations ----

template <class T> void cholesky_t(int64_t batch, int64_t n, const T* a, T* l) {
  const lapack_int ni = to_int(n, "cholesky");
  for_each_matrix(batch, double(n) * double(n) * double(n) / 3, [&](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
      T* out = l + b * n * n;
      std::copy(a + b * n * n, a + (b + 1) * n * n, out);
      // Row-major A read column-major is A^T (= conj(A) for Hermitian A), whose upper factor
      // U (conj(A) = U^H U) read back row-major is L = U^T with A = L L^H.
      if (n > 0 && potrf('U', ni, out, ni) != 0) {
        fill_nan(out, n * n);
        continue;
      }
      for (int64_t i = 0; i < n; ++i) std::fill(out + i * n + i + 1, out + (i + 1) * n, T(0));
    }
  });
}

template <class T>
void triangular_solve_t(int64_t batch, int64_t m, int64_t cols, const T* a, const T* b, T* x,
                        const TriangularSolveOptions& o) {
  const int64_t na = o.left_side ? m : cols;
  const blasint mi = to_int(m, "triangular_solve"), ci = to_int(cols, "triangular_solve"),
                nai = to_int(na, "triangular_solve");
  // OpenBLAS's trsm takes A conjugated without transposing (CblasConjNoTrans).
  const CBLAS_TRANSPOSE trans = o.transpose_a ? (o.conjugate_a && is_cplx<T> ? CblasConjTrans : CblasTrans)
                                              : (o.conjugate_a && is_cplx<T> ? CblasConjNoTrans : CblasNoTrans);
  for_each_matrix(batch, double(na) * double(na) * double(o.left_side ? cols : m), [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      T* out = x + i * m * cols;
      if (out != b + i * m * cols) std::copy(b + i * m * cols, b + (i + 1) * m * cols, out);
      if (m == 0 || cols == 0) continue;
      trsm(o.left_side ? CblasLeft : CblasRight, o.lower ? CblasLower : CblasUpper, trans,
           o.unit_diagonal ? CblasUnit : CblasNonUnit, mi, ci, a + i * na * na, nai, out, ci);
    }
  });
}

template <class T> void lu_t(int64_t batch, int64_t m, int64_t n, const T* a, T* lu, int32_t* pivots, int32_t* perm) {
  const int64_t k = std::min(m, n);
  const lapack_int mi = to_int(m, "lu"), ni = to_int(n, "lu");
  for_each_matrix(batch, double(m) * double(n) * double(k), [&](int64_t lo, int64_t hi) {
    std::vector<T> t(size_t(m * n));  // column-major copy: getrf pivots rows
    std::vector<lapack_int> ipiv(static_cast<size_t>(k));
    for (int64_t b = lo; b < hi; ++b) {
      transpose(a + b * m * n, m, n, n, t.data(), m);
      if (k > 0) getrf(mi, ni, t.data(), std::max<lapack_int>(1, mi), ipiv.data());  // info > 0: singular U, kept
      transpose(t.data(), n, m, m, lu + b * m * n, n);
      int32_t* piv = pivots + b * k;
      int32_t* p = perm + b * m;
      std::iota(p, p + m, 0);
      for (int64_t i = 0; i < k; ++i) {
        piv[i] = int32_t(ipiv[size_t(i)] - 1);
        std::swap(p[i], p[piv[i]]);
      }
    }
  });
}

template <class T> void qr_t(int64_t batch, int64_t m, int64_t n, const T* a, T* q, T* r, bool full) {
  const int64_t k = std::min(m, n), qc = full ? m : k, rr = full ? m : k;
  const lapack_int mi = to_int(m, "qr"), ni = to_int(n, "qr"), ki = lapack_int(k);
  for_each_matrix(batch, 2.0 * double(m) * double(n) * double(k), [&](int64_t lo, int64_t hi) {
    std::vector<T> w(size_t(std::max<int64_t>(1, m * n))), tau(size_t(std::max<int64_t>(1, k)));
    // Workspace for gelqf and orglq on these sizes (queried once per group).
    T query[2] = {T(0), T(0)};
    if (k > 0) {
      gelqf(ni, mi, w.data(), ni, tau.data(), &query[0], -1);
      if (full && m > n) orglq(mi, mi, ki, q, mi, tau.data(), &query[1], -1);
      else orglq(ki, mi, ki, w.data(), ni, tau.data(), &query[1], -1);
    }
    std::vector<T> work(size_t(std::max(work_size(query[0]), work_size(query[1]))));
    const lapack_int lwork = lapack_int(work.size());
    for (int64_t b = lo; b < hi; ++b) {
      T* qb = q + b * m * qc;
      T* rb = r + b * rr * n;
      std::copy(a + b * m * n, a + (b + 1) * m * n, w.data());
      // Row-major A is the column-major n x m matrix A^T, whose LQ factorization
      // A^T = L Q' gives A = Q'^T L^T: Q = Q'^T (Q' read row-major), R = L^T (the upper
      // triangle of A's first k rows, in place).
      if (k > 0) gelqf(ni, mi, w.data(), ni, tau.data(), work.data(), lwork);
      std::fill(rb, rb + rr * n, T(0));
      for (int64_t i = 0; i < k; ++i) std::copy(w.data() + i * n + i, w.data() + (i + 1) * n, rb + i * n + i);
      if (full && m > n) {  // Q' is m x m: its first n rows hold the reflectors
        std::fill(qb, qb + m * m, T(0));
        for (int64_t j = 0; j < m; ++j) std::copy(w.data() + j * n, w.data() + j * n + n, qb + j * m);
        if (k > 0) orglq(mi, mi, ki, qb, mi, tau.data(), work.data(), lwork);
        else
          for (int64_t j = 0; j < m; ++j) qb[j * m + j] = T(1);
      } else {
        if (k > 0) orglq(ki, mi, ki, w.data(), ni, tau.data(), work.data(), lwork);
        for (int64_t j = 0; j < m; ++j) std::copy(w.data() + j * n, w.data() + j * n + k, qb + j * k);
      }
    }
  });
}

template <class T> void eigh_t(int64_t batch, int64_t n, const T* a, T* v, real_t<T>* w, bool lower) {
  using R = real_t<T>;
  const lapack_int ni = to_int(n, "eigh");
  const char jobz = v ? 'V' : 'N';
  // A read column-major is A^T = conj(A): its upper triangle is A's lower one, and its
  // eigenvectors are conj(v), which a conjugating transpose turns into A's, as columns.
  const char uplo = lower ? 'U' : 'L';
  for_each_matrix(batch, 9.0 * double(n) * double(n) * double(n), [&](int64_t lo, int64_t hi) {
    std::vector<T> t(size_t(std::max<int64_t>(1, n * n)));
    T wq(0);
    R rq(0);
    lapack_int iq = 0;
    if (n > 0) heevd(jobz, uplo, ni, t.data(), ni, w, &wq, -1, &rq, -1, &iq, -1);
    std::vector<T> work(size_t(work_size(wq)));
    std::vector<R> rwork(size_t(std::max<lapack_int>(1, lapack_int(rq))));
    std::vector<lapack_int> iwork(size_t(std::max<lapack_int>(1, iq)));
    for (int64_t b = lo; b < hi; ++b) {
      std::copy(a + b * n * n, a + (b + 1) * n * n, t.data());
      R* wb = w + b * n;
      const lapack_int info = n == 0 ? 0
                                     : heevd(jobz, uplo, ni, t.data(), ni, wb, work.data(), lapack_int(work.size()),
                                             rwork.data(), lapack_int(rwork.size()), iwork.data(),
                                             lapack_int(iwork.size()));
      if (info != 0) {
        fill_nan(wb, n);
        fill_nan(v ? v + b * n * n : nullptr, n * n);
        continue;
      }
      if (v) transpose(t.data(), n, n, n, v + b * n * n, n, /*conj=*/true);
    }
  });
}

template <class T>
void svd_t(int64_t batch, int64_t m, int64_t n, const T* a, real_t<T>* s, T* u, T* vt, bool full) {
  using R = real_t<T>;
  const int64_t k = std::min(m, n), mx = std::max(m, n);
  const bool uv = u && vt;
  const char jobz = !uv ? 'N' : full ? 'A' : 'S';
  const int64_t uc = full ? m : k, vr = full ? n : k;  // U is m x uc, V^H is vr x n
  const lapack_int mi = to_int(m, "svd"), ni = to_int(n, "svd");
  const lapack_int ld_u = std::max<lapack_int>(1, ni), ld_vt = std::max<lapack_int>(1, lapack_int(uc));
  for_each_matrix(batch, 12.0 * double(mx) * double(k) * double(k), [&](int64_t lo, int64_t hi) {
    std::vector<T> t(size_t(std::max<int64_t>(1, m * n)));
    std::vector<R> rwork(size_t(std::max<int64_t>(1, std::max(7 * k, k * std::max(5 * k + 7, 2 * mx + 2 * k + 1)))));
    std::vector<lapack_int> iwork(size_t(std::max<int64_t>(1, 8 * k)));
    T dummy(0), wq(0);
    // Row-major A is the column-major n x m matrix A^T = conj(V) S U^T: gesdd's U of it,
    // read row-major, is V^H, and its V^T read row-major is U (the output buffers swap).
    if (k > 0)
      gesdd(jobz, ni, mi, t.data(), ld_u, s, uv ? vt : &dummy, ld_u, uv ? u : &dummy, ld_vt, &wq, -1, rwork.data(),
            iwork.data());
    std::vector<T> work(size_t(work_size(wq)));
    for (int64_t b = lo; b < hi; ++b) {
      std::copy(a + b * m * n, a + (b + 1) * m * n, t.data());
      R* sb = s + b * k;
      T* ub = uv ? u + b * m * uc : &dummy;
      T* vb = uv ? vt + b * vr * n : &dummy;
      if (k == 0) {  // an empty matrix: full U and V^H are identities
        if (uv && full) {
          std::fill(ub, ub + m * m, T(0));
          std::fill(vb, vb + n * n, T(0));
          for (int64_t i = 0; i < m; ++i) ub[i * m + i] = T(1);
          for (int64_t i = 0; i < n; ++i) vb[i * n + i] = T(1);
        }
        continue;
      }
      const lapack_int info = gesdd(jobz, ni, mi, t.data(), ld_u, sb, vb, ld_u, ub, ld_vt, work.data(),
                                    lapack_int(work.size()), rwork.data(), iwork.data());
      if (info != 0) {
        fill_nan(sb, k);
        if (uv) fill_nan(ub, m * uc), fill_nan(vb, vr * n);
      }
    }
  });
}

/// Column j of a real geev eigenvector matrix (column-major, n x n) as complex: real
/// eigenvalues have real vectors; a complex pair (wi[j] > 0, then wi[j+1] < 0) stores
/// re and im in columns j and j+1.
template <class R>
void unpack_real_vectors(int64_t n, const R* vecs, const R* wi, std::complex<R>* out) {
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = 0; i < n; ++i) {
      std::complex<R> z;
      if (wi[j] == 0) z = vecs[i + j * n];
      else if (wi[j] > 0) z = {vecs[i + j * n], vecs[i + (j + 1) * n]};
      else z = {vecs[i + (j - 1) * n], -vecs[i + j * n]};
      out[i * n + j] = z;
    }
  }
}

template <class T> void eig_t(int64_t batch, int64_t n, const T* a, std::complex<real_t<T>>* w,
                              std::complex<real_t<T>>* vl, std::complex<real_t<T>>* vr) {
  using R = real_t<T>;
  const lapack_int ni = to_int(n, "eig"), ld = std::max<lapack_int>(1, ni);
  const char jl = vl ? 'V' : 'N', jr = vr ? 'V' : 'N';
  for_each_matrix(batch, 25.0 * double(n) * double(n) * double(n), [&](int64_t lo, int64_t hi) {
    const size_t nn = size_t(std::max<int64_t>(1, n * n));
    std::vector<T> t(nn), left(vl ? nn : 1), right(vr ? nn : 1);
    std::vector<R> wr(size_t(std::max<int64_t>(1, n))), wi(wr.size()), rwork(size_t(std::max<int64_t>(1, 2 * n)));
    std::vector<std::complex<R>> wc(wr.size());
    T wq(0);
    auto call = [&](T* work, lapack_int lwork) -> lapack_int {
      if constexpr (is_cplx<T>)
        return geev(jl, jr, ni, t.data(), ld, wc.data(), left.data(), ld, right.data(), ld, work, lwork,
                    rwork.data());
      else
        return geev(jl, jr, ni, t.data(), ld, wr.data(), wi.data(), left.data(), ld, right.data(), ld, work, lwork,
                    nullptr);
    };
    if (n > 0) call(&wq, -1);
    std::vector<T> work(size_t(work_size(wq)));
    for (int64_t b = lo; b < hi; ++b) {
      transpose(a + b * n * n, n, n, n, t.data(), n);
      std::complex<R>* wb = w + b * n;
      std::complex<R>* lb = vl ? vl + b * n * n : nullptr;
      std::complex<R>* rb = vr ? vr + b * n * n : nullptr;
      if (n == 0) continue;
      if (call(work.data(), lapack_int(work.size())) != 0) {
        fill_nan(wb, n), fill_nan(lb, n * n), fill_nan(rb, n * n);
        continue;
      }
      if constexpr (is_cplx<T>) {
        std::copy(wc.begin(), wc.begin() + n, wb);
        if (lb) transpose(left.data(), n, n, n, lb, n);
        if (rb) transpose(right.data(), n, n, n, rb, n);
      } else {
        for (int64_t j = 0; j < n; ++j) wb[j] = {wr[size_t(j)], wi[size_t(j)]};
        if (lb) unpack_real_vectors(n, left.data(), wi.data(), lb);
        if (rb) unpack_real_vectors(n, right.data(), wi.data(), rb);
      }
    }
  });
}

[[noreturn]] void unsupported(const char* op, DType d) {
  throw DTypeError(std::string(op) + ": LAPACK factors float32, float64, complex64 and complex128 matrices, got " +
                   dtype_name(d) + " (internal error: abstract evaluation should have rejected it)");
}

// Calls F<T> for d's C++ type.
#define TESSEL_LAPACK_DISPATCH(op, d, CALL)             \
  switch (d) {                                          \
    case DType::float32: { using T = float; CALL; break; }  \
    case DType::float64: { using T = double; CALL; break; } \
    case DType::complex64: { using T = c64; CALL; break; }  \
    case DType::complex128: { using T = c128; CALL; break; } \
    default: unsupported(op, d);                        \
  }

}  // namespace

bool lapack_supported(DType d) {
  return d == DType::float32 || d == DType::float64 || d == DType::complex64 || d == DType::complex128;
}

void cholesky(DType d, int64_t batch, int64_t n, const void* a, void* l) {
  TESSEL_LAPACK_DISPATCH("cholesky", d, cholesky_t<T>(batch, n, static_cast<const T*>(a), static_cast<T*>(l)))
}

void triangular_solve(DType d, int64_t batch, int64_t m, int64_t cols, const void* a, const void* b, void* x,
                      const TriangularSolveOptions& opt) {
  TESSEL_LAPACK_DISPATCH("triangular_solve", d,
                         triangular_solve_t<T>(batch, m, cols, static_cast<const T*>(a), static_cast<const T*>(b),
                                               static_cast<T*>(x), opt))
}

void lu(DType d, int64_t batch, int64_t m, int64_t n, const void* a, void* lu, int32_t* pivots, int32_t* permutation) {
  TESSEL_LAPACK_DISPATCH("lu", d,
                         lu_t<T>(batch, m, n, static_cast<const T*>(a), static_cast<T*>(lu), pivots, permutation))
}

void qr(DType d, int64_t batch, int64_t m, int64_t n, const void* a, void* q, void* r, bool full_matrices) {
  TESSEL_LAPACK_DISPATCH("qr", d,
                         qr_t<T>(batch, m, n, static_cast<const T*>(a), static_cast<T*>(q), static_cast<T*>(r),
                                 full_matrices))
}

void eigh(DType d, int64_t batch, int64_t n, const void* a, void* v, void* w, bool lower) {
  TESSEL_LAPACK_DISPATCH("eigh", d,
                         eigh_t<T>(batch, n, static_cast<const T*>(a), static_cast<T*>(v),
                                   static_cast<real_t<T>*>(w), lower))
}

void svd(DType d, int64_t batch, int64_t m, int64_t n, const void* a, void* s, void* u, void* vt,
         bool full_matrices) {
  TESSEL_LAPACK_DISPATCH("svd", d,
                         svd_t<T>(batch, m, n, static_cast<const T*>(a), static_cast<real_t<T>*>(s),
                                  static_cast<T*>(u), static_cast<T*>(vt), full_matrices))
}

void eig(DType d, int64_t batch, int64_t n, const void* a, void* w, void* vl, void* vr) {
  TESSEL_LAPACK_DISPATCH("eig", d, {
    using C = std::complex<real_t<T>>;
    eig_t<T>(batch, n, static_cast<const T*>(a), static_cast<C*>(w), static_cast<C*>(vl), static_cast<C*>(vr));
  })
}

}  // namespace tessel::cpu
