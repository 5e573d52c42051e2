#include "backend/cpu/lapack.h"

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <complex>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "backend/cpu/jacobi.h"
#include "backend/cpu/lapack_util.h"

namespace tessel::cpu {
namespace {

using namespace lapack;

template <class T> T conj_if(T x, bool c) {
  if constexpr (is_cplx<T>) return c ? std::conj(x) : x;
  else return x;
}

// OpenBLAS's out-of-place transposes (an OpenBLAS extension of CBLAS), row-major.
void omatcopy(CBLAS_TRANSPOSE t, blasint rows, blasint cols, const float* a, blasint lda, float* b, blasint ldb) {
  cblas_somatcopy(CblasRowMajor, t == CblasConjTrans ? CblasTrans : t, rows, cols, 1.0f, a, lda, b, ldb);
}
void omatcopy(CBLAS_TRANSPOSE t, blasint rows, blasint cols, const double* a, blasint lda, double* b, blasint ldb) {
  cblas_domatcopy(CblasRowMajor, t == CblasConjTrans ? CblasTrans : t, rows, cols, 1.0, a, lda, b, ldb);
}
void omatcopy(CBLAS_TRANSPOSE t, blasint rows, blasint cols, const c64* a, blasint lda, c64* b, blasint ldb) {
  const float one[2] = {1.0f, 0.0f};
  cblas_comatcopy(CblasRowMajor, t, rows, cols, one, reinterpret_cast<const float*>(a), lda,
                  reinterpret_cast<float*>(b), ldb);
}
void omatcopy(CBLAS_TRANSPOSE t, blasint rows, blasint cols, const c128* a, blasint lda, c128* b, blasint ldb) {
  const double one[2] = {1.0, 0.0};
  cblas_zomatcopy(CblasRowMajor, t, rows, cols, one, reinterpret_cast<const double*>(a), lda,
                  reinterpret_cast<double*>(b), ldb);
}

/// dst (cols x rows, leading dimension ldd) = src^T (or src^H), src rows x cols with
/// leading dimension lds. Large matrices go through OpenBLAS's omatcopy (0.9 ms at
/// 1024 x 1024 float32 from memory, a third of a 1024 x 1024 solve's time with the plain
/// 32 x 32 blocked loop this replaced, which evicted its own lines on power-of-two
/// strides: 3.1 ms); small ones through 16 x 16 tiles in a local buffer.
template <class T> void transpose(const T* src, int64_t rows, int64_t cols, int64_t lds, T* dst, int64_t ldd, bool conj = false) {
  if (rows * cols >= 64 * 64 && rows <= INT32_MAX && cols <= INT32_MAX && lds <= INT32_MAX && ldd <= INT32_MAX) {
    omatcopy(conj && is_cplx<T> ? CblasConjTrans : CblasTrans, blasint(rows), blasint(cols), src, blasint(lds), dst,
             blasint(ldd));
    return;
  }
  constexpr int64_t kB = 16;
  for (int64_t i0 = 0; i0 < rows; i0 += kB)
    for (int64_t j0 = 0; j0 < cols; j0 += kB) {
      const int64_t i1 = std::min(rows, i0 + kB), j1 = std::min(cols, j0 + kB);
      if (i1 - i0 < kB || j1 - j0 < kB) {  // an edge tile
        for (int64_t i = i0; i < i1; ++i)
          for (int64_t j = j0; j < j1; ++j) dst[j * ldd + i] = conj_if(src[i * lds + j], conj);
        continue;
      }
      T tile[kB][kB];
      for (int64_t i = 0; i < kB; ++i)
        for (int64_t j = 0; j < kB; ++j) tile[j][i] = src[(i0 + i) * lds + j0 + j];
      for (int64_t j = 0; j < kB; ++j)
        for (int64_t i = 0; i < kB; ++i) dst[(j0 + j) * ldd + i0 + i] = conj_if(tile[j][i], conj);
    }
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
  lapack_int geqrf(lapack_int m, lapack_int n, T* a, lapack_int lda, T* tau, T* work, lapack_int lwork) {       \
    return LAPACKE_##p##geqrf_work(LAPACK_COL_MAJOR, m, n, a, lda, tau, work, lwork);                             \
  }                                                                                                                \
  lapack_int gtsv(lapack_int n, lapack_int nrhs, T* dl, T* d, T* du, T* b, lapack_int ldb) {                      \
    return LAPACKE_##p##gtsv_work(LAPACK_COL_MAJOR, n, nrhs, dl, d, du, b, ldb);                                  \
  }                                                                                                                \
  lapack_int larft(lapack_int n, lapack_int k, const T* v, lapack_int ldv, const T* tau, T* t, lapack_int ldt) {  \
    return LAPACKE_##p##larft_work(LAPACK_COL_MAJOR, 'F', 'C', n, k, v, ldv, tau, t, ldt);                        \
  }                                                                                                                \
  lapack_int larfb(char trans, lapack_int m, lapack_int n, lapack_int k, const T* v, lapack_int ldv, const T* t,  \
                   lapack_int ldt, T* c, lapack_int ldc, T* work, lapack_int ldwork) {                             \
    return LAPACKE_##p##larfb_work(LAPACK_COL_MAJOR, 'L', trans, 'F', 'C', m, n, k, v, ldv, t, ldt, c, ldc, work, \
                                   ldwork);                                                                        \
  }
TESSEL_LAPACK_COMMON(float, s)
TESSEL_LAPACK_COMMON(double, d)
TESSEL_LAPACK_COMMON(c64, c)
TESSEL_LAPACK_COMMON(c128, z)
#undef TESSEL_LAPACK_COMMON

#define TESSEL_LAPACK_REAL(T, p)                                                                                     \
  lapack_int orgqr(lapack_int m, lapack_int n, lapack_int k, T* a, lapack_int lda, const T* tau, T* work,         \
                   lapack_int lwork) {                                                                             \
    return LAPACKE_##p##orgqr_work(LAPACK_COL_MAJOR, m, n, k, a, lda, tau, work, lwork);                          \
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
  lapack_int orgqr(lapack_int m, lapack_int n, lapack_int k, T* a, lapack_int lda, const T* tau, T* work,         \
                   lapack_int lwork) {                                                                             \
    return LAPACKE_##p##ungqr_work(LAPACK_COL_MAJOR, m, n, k, a, lda, tau, work, lwork);                          \
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

// ---- small matrices ----
// Householder QR of large matrices with wider blocks than LAPACK's: sgeqrf and sorgqr
// take their block size from ilaenv, 32 columns in the reference LAPACK that OpenBLAS
// ships, and at n = 1024 their block reflector updates (larfb) then spend much of the time
// packing thin panels and copying the reflectors (its scalar loops). The same algorithm
// in kQrBlock columns (the panels themselves factored by geqrf / orgqr) does the same
// arithmetic with a third fewer of those costs: 15% less time for geqrf + orgqr at 1024
// on one thread (71 ms against 83). Used from kQrBlockedMin columns on.
constexpr lapack_int kQrBlock = 64;
constexpr int64_t kQrBlockedMin = 256;

/// Workspace (elements) blocked_geqrf and blocked_orgqr need for an m x n matrix.
template <class T> size_t blocked_qr_work(lapack_int m, lapack_int n) {
  T q[2] = {T(0), T(0)}, dummy(0);
  geqrf(m, kQrBlock, &dummy, std::max<lapack_int>(1, m), &dummy, &q[0], -1);
  orgqr(m, kQrBlock, kQrBlock, &dummy, std::max<lapack_int>(1, m), &dummy, &q[1], -1);
  // larfb's (columns x block) workspace, the block's triangular factor, and the panels'.
  return size_t(n) * kQrBlock + size_t(kQrBlock) * kQrBlock + size_t(std::max(work_size(q[0]), work_size(q[1])));
}

/// geqrf of the column-major m x n matrix a (leading dimension lda) in blocks of kQrBlock.
template <class T> void blocked_geqrf(lapack_int m, lapack_int n, T* a, lapack_int lda, T* tau, T* work) {
  const lapack_int k = std::min(m, n), nb = kQrBlock;
  T* t = work + size_t(n) * nb;   // the block's triangular factor (nb x nb)
  T* panel = t + size_t(nb) * nb;  // the panel's own workspace
  const lapack_int lpanel = lapack_int(blocked_qr_work<T>(m, n) - size_t(n) * nb - size_t(nb) * nb);
  for (lapack_int i = 0; i < k; i += nb) {
    const lapack_int ib = std::min(k - i, nb);
    T* aii = a + i + size_t(i) * lda;
    geqrf(m - i, ib, aii, lda, tau + i, panel, lpanel);
    if (i + ib < n) {  // the rest of the columns: (H_i ... H_{i+ib-1})^H applied from the left
      larft(m - i, ib, aii, lda, tau + i, t, nb);
      larfb(is_cplx<T> ? 'C' : 'T', m - i, n - i - ib, ib, aii, lda, t, nb, aii + size_t(ib) * lda, lda, work,
            n - i - ib);
    }
  }
}

/// orgqr: the first n columns of Q = H_0 ... H_{k-1} from blocked_geqrf's reflectors, in
/// place of them, in blocks of kQrBlock from the last one back (as LAPACK's).
template <class T>
void blocked_orgqr(lapack_int m, lapack_int n, lapack_int k, T* a, lapack_int lda, const T* tau, T* work) {
  const lapack_int nb = kQrBlock;
  T* t = work + size_t(n) * nb;
  T* panel = t + size_t(nb) * nb;
  const lapack_int lpanel = lapack_int(blocked_qr_work<T>(m, n) - size_t(n) * nb - size_t(nb) * nb);
  const lapack_int last = ((k - 1) / nb) * nb, kk = std::min(k, last + nb);
  // Columns past the reflectors start as the identity's (rows below kk are set by orgqr).
  for (lapack_int j = kk; j < n; ++j) std::fill(a + size_t(j) * lda, a + size_t(j) * lda + kk, T(0));
  if (kk < n) orgqr(m - kk, n - kk, k - kk, a + kk + size_t(kk) * lda, lda, tau + kk, panel, lpanel);
  for (lapack_int i = last; i >= 0; i -= nb) {
    const lapack_int ib = std::min(nb, k - i);
    T* aii = a + i + size_t(i) * lda;
    if (i + ib < n) {  // the block's reflectors applied to the columns already formed
      larft(m - i, ib, aii, lda, tau + i, t, nb);
      larfb('N', m - i, n - i - ib, ib, aii, lda, t, nb, aii + size_t(ib) * lda, lda, work, n - i - ib);
    }
    orgqr(m - i, ib, ib, aii, lda, tau + i, panel, lpanel);
    for (lapack_int j = i; j < i + ib; ++j) std::fill(a + size_t(j) * lda, a + size_t(j) * lda + i, T(0));
  }
}

// Below kSmall rows, LAPACK's and BLAS's per-call costs (argument checks, workspace, kernel
// dispatch) outweigh the arithmetic: batches of small matrices run these plain loops on the
// row-major data instead (same algorithms, same pivot choices as getf2 / potf2 / trsm).
constexpr int64_t kSmall = 16;

template <class T> real_t<T> abs_sq(T x) {
  if constexpr (is_cplx<T>) return std::norm(x);
  else return x * x;
}
/// LAPACK's pivot measure (i?amax): |x| for real, |re| + |im| for complex.
template <class T> real_t<T> pivot_size(T x) {
  if constexpr (is_cplx<T>) return std::abs(x.real()) + std::abs(x.imag());
  else return std::abs(x);
}

/// Lower Cholesky factor in place (reads the lower triangle); false if not positive definite.
template <class T> bool small_cholesky(int64_t n, T* l) {
  for (int64_t j = 0; j < n; ++j) {
    real_t<T> d = std::real(l[j * n + j]);
    for (int64_t k = 0; k < j; ++k) d -= abs_sq(l[j * n + k]);
    if (!(d > 0)) return false;  // also NaN
    const real_t<T> djj = std::sqrt(d);
    l[j * n + j] = T(djj);
    for (int64_t i = j + 1; i < n; ++i) {
      T s = l[i * n + j];
      for (int64_t k = 0; k < j; ++k) s -= l[i * n + k] * conj_if(l[j * n + k], true);
      l[i * n + j] = s / djj;
    }
  }
  return true;
}

/// LU with partial pivoting in place, row-major m x n; ipiv gets 0-based pivot rows.
template <class T> void small_lu(int64_t m, int64_t n, T* a, int32_t* ipiv) {
  const int64_t k = std::min(m, n);
  for (int64_t c = 0; c < k; ++c) {
    int64_t p = c;
    real_t<T> best = pivot_size(a[c * n + c]);
    for (int64_t i = c + 1; i < m; ++i)
      if (pivot_size(a[i * n + c]) > best) best = pivot_size(a[i * n + c]), p = i;
    ipiv[c] = int32_t(p);
    if (p != c) std::swap_ranges(a + c * n, a + (c + 1) * n, a + p * n);
    const T pivot = a[c * n + c];
    if (pivot == T(0)) continue;  // singular: U keeps the zero, as getrf does
    const T inv = T(1) / pivot;
    for (int64_t i = c + 1; i < m; ++i) {
      T* row = a + i * n;
      const T f = row[c] *= inv;
      for (int64_t j = c + 1; j < n; ++j) row[j] -= f * a[c * n + j];
    }
  }
}

/// Triangular solve of one system, row-major, A na x na, B m x cols (overwritten by X).
/// op(A) is first copied into a dense local matrix M (transposed once more on the right
/// side, where X op(A) = B is op(A)^T x_r = b_r for each row r), so the loops below run
/// on contiguous rows without branches.
template <class T>
void small_trsm(int64_t m, int64_t cols, const T* a, T* b, const TriangularSolveOptions& o) {
  const int64_t na = o.left_side ? m : cols;
  const bool cj = o.conjugate_a && is_cplx<T>;
  const bool use_t = o.left_side ? o.transpose_a : !o.transpose_a;
  T mat[kSmall * kSmall];
  for (int64_t i = 0; i < na; ++i)
    for (int64_t j = 0; j < na; ++j) mat[i * na + j] = conj_if(use_t ? a[j * na + i] : a[i * na + j], cj);
  const bool lower = o.lower != use_t;
  T inv_diag[kSmall];
  for (int64_t i = 0; i < na; ++i) inv_diag[i] = o.unit_diagonal ? T(1) : T(1) / mat[i * na + i];
  // Row i of the solution, once rows k before it (in elimination order) are known.
  auto order = [&](int64_t t) { return lower ? t : na - 1 - t; };
  if (o.left_side) {  // M X = B: X[i, :] = (B[i, :] - sum_k M[i, k] X[k, :]) / M[i, i]
    for (int64_t t = 0; t < na; ++t) {
      const int64_t i = order(t);
      T* xi = b + i * cols;
      const int64_t k0 = lower ? 0 : i + 1, k1 = lower ? i : na;
      for (int64_t k = k0; k < k1; ++k) {
        const T f = mat[i * na + k];
        const T* xk = b + k * cols;
        for (int64_t c = 0; c < cols; ++c) xi[c] -= f * xk[c];
      }
      for (int64_t c = 0; c < cols; ++c) xi[c] *= inv_diag[i];
    }
  } else {  // per row r: M x = b_r with M = op(A)^T
    for (int64_t r = 0; r < m; ++r) {
      T* x = b + r * cols;
      for (int64_t t = 0; t < na; ++t) {
        const int64_t i = order(t);
        const int64_t k0 = lower ? 0 : i + 1, k1 = lower ? i : na;
        T s = x[i];
        for (int64_t k = k0; k < k1; ++k) s -= mat[i * na + k] * x[k];
        x[i] = s * inv_diag[i];
      }
    }
  }
}

/// Householder QR of a row-major m x n matrix `w` (overwritten), with LAPACK's reflectors
/// (larfg: beta = -sign(Re alpha) |(alpha, x)|, as geqr2) so the signs match geqrf's:
/// Q (m x qc, qc = k or m) = H_0 ... H_{k-1} applied to the identity, as org2r; R (rr x n).
template <class T> void small_qr(int64_t m, int64_t n, T* w, T* q, int64_t qc, T* r, int64_t rr) {
  using R = real_t<T>;
  const int64_t k = std::min(m, n);
  T tau[kSmall];
  for (int64_t i = 0; i < k; ++i) {
    const T alpha = w[i * n + i];
    R xnorm_sq = 0;
    for (int64_t s = i + 1; s < m; ++s) xnorm_sq += abs_sq(w[s * n + i]);
    if (xnorm_sq == 0 && std::imag(alpha) == R(0)) {
      tau[i] = T(0);
    } else {
      const R norm = std::sqrt(abs_sq(alpha) + xnorm_sq);
      const R beta = std::real(alpha) >= 0 ? -norm : norm;
      if constexpr (is_cplx<T>) tau[i] = T((beta - alpha.real()) / beta, -alpha.imag() / beta);
      else tau[i] = (beta - alpha) / beta;
      const T scale = T(1) / (alpha - T(beta));
      for (int64_t s = i + 1; s < m; ++s) w[s * n + i] *= scale;
      w[i * n + i] = T(beta);
    }
    // Apply H_i^H = I - conj(tau) v v^H (v_i = 1) to the trailing columns.
    const T ct = conj_if(tau[i], true);
    for (int64_t j = i + 1; j < n; ++j) {
      T dot = w[i * n + j];
      for (int64_t s = i + 1; s < m; ++s) dot += conj_if(w[s * n + i], true) * w[s * n + j];
      const T f = ct * dot;
      w[i * n + j] -= f;
      for (int64_t s = i + 1; s < m; ++s) w[s * n + j] -= f * w[s * n + i];
    }
  }
  std::fill(r, r + rr * n, T(0));
  for (int64_t i = 0; i < k; ++i) std::copy(w + i * n + i, w + (i + 1) * n, r + i * n + i);
  std::fill(q, q + m * qc, T(0));
  for (int64_t i = 0; i < std::min(m, qc); ++i) q[i * qc + i] = T(1);
  for (int64_t i = k; i-- > 0;) {  // Q = H_i Q, columns i.. only (the others are untouched)
    for (int64_t j = i; j < qc; ++j) {
      T dot = q[i * qc + j];
      for (int64_t s = i + 1; s < m; ++s) dot += conj_if(w[s * n + i], true) * q[s * qc + j];
      const T f = tau[i] * dot;
      q[i * qc + j] -= f;
      for (int64_t s = i + 1; s < m; ++s) q[s * qc + j] -= f * w[s * n + i];
    }
  }
}

// ---- per-dtype implementations ----

/// The lower triangle of (a + a^H) / 2 into `out` (n x n, row-major), in cache blocks.
template <class T> void symmetrized_lower(int64_t n, const T* a, T* out) {
  constexpr int64_t kB = 32;
  const real_t<T> half(0.5);
  for (int64_t i0 = 0; i0 < n; i0 += kB)
    for (int64_t j0 = 0; j0 <= i0; j0 += kB)
      for (int64_t i = i0; i < std::min(n, i0 + kB); ++i)
        for (int64_t j = j0; j < std::min(i + 1, j0 + kB); ++j)
          out[i * n + j] = (a[i * n + j] + conj_if(a[j * n + i], true)) * half;
}

template <class T> void cholesky_t(int64_t batch, int64_t n, const T* a, T* l, bool symmetrize) {
  const lapack_int ni = to_int(n, "cholesky");
  for_each_matrix(batch, double(n) * double(n) * double(n) / 3, [&](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
      T* out = l + b * n * n;
      if (symmetrize) symmetrized_lower(n, a + b * n * n, out);  // the upper triangle is never read
      else std::copy(a + b * n * n, a + (b + 1) * n * n, out);
      // Row-major A read column-major is A^T (= conj(A) for Hermitian A), whose upper factor
      // U (conj(A) = U^H U) read back row-major is L = U^T with A = L L^H.
      const bool ok = n <= kSmall ? small_cholesky(n, out) : n == 0 || potrf('U', ni, out, ni) == 0;
      if (!ok) {
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
      if (na <= kSmall) {
        small_trsm(m, cols, a + i * na * na, out, o);
        continue;
      }
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
      int32_t* piv = pivots + b * k;
      int32_t* p = perm + b * m;
      std::iota(p, p + m, 0);
      if (std::max(m, n) <= kSmall) {
        std::copy(a + b * m * n, a + (b + 1) * m * n, lu + b * m * n);
        small_lu(m, n, lu + b * m * n, piv);
        for (int64_t i = 0; i < k; ++i) std::swap(p[i], p[piv[i]]);
        continue;
      }
      transpose(a + b * m * n, m, n, n, t.data(), m);
      if (k > 0) getrf(mi, ni, t.data(), std::max<lapack_int>(1, mi), ipiv.data());  // info > 0: singular U, kept
      transpose(t.data(), n, m, m, lu + b * m * n, n);
      for (int64_t i = 0; i < k; ++i) {
        piv[i] = int32_t(ipiv[size_t(i)] - 1);
        std::swap(p[i], p[piv[i]]);
      }
    }
  });
}

template <class T> void qr_t(int64_t batch, int64_t m, int64_t n, const T* a, T* q, T* r, bool full) {
  const int64_t k = std::min(m, n), qc = full ? m : k, rr = full ? m : k;
  const bool small = std::max(m, n) <= kSmall, blocked = k >= kQrBlockedMin;
  const lapack_int mi = to_int(m, "qr"), ni = to_int(n, "qr"), ki = lapack_int(k), qci = lapack_int(qc),
                   ld = std::max<lapack_int>(1, mi);
  for_each_matrix(batch, 2.0 * double(m) * double(n) * double(k), [&](int64_t lo, int64_t hi) {
    // A working copy (column-major for LAPACK, with room for a complete Q of a tall matrix).
    std::vector<T> t(size_t(std::max<int64_t>(1, m * std::max(n, qc)))), tau(size_t(std::max<int64_t>(1, k)));
    T query[2] = {T(0), T(0)};  // workspace of geqrf and orgqr on these sizes, once per group
    if (!small && !blocked && k > 0) {
      geqrf(mi, ni, t.data(), ld, tau.data(), &query[0], -1);
      orgqr(mi, qci, ki, t.data(), ld, tau.data(), &query[1], -1);
    }
    std::vector<T> work(blocked ? blocked_qr_work<T>(mi, lapack_int(std::max(n, qc)))
                                : size_t(std::max(work_size(query[0]), work_size(query[1]))));
    const lapack_int lwork = lapack_int(work.size());
    for (int64_t b = lo; b < hi; ++b) {
      T* qb = q + b * m * qc;
      T* rb = r + b * rr * n;
      if (small) {
        std::copy(a + b * m * n, a + (b + 1) * m * n, t.data());
        small_qr(m, n, t.data(), qb, qc, rb, rr);
        continue;
      }
      if (k == 0) {  // no columns (or rows): a complete Q is the identity
        std::fill(rb, rb + rr * n, T(0));
        std::fill(qb, qb + m * qc, T(0));
        for (int64_t i = 0; i < std::min(m, qc); ++i) qb[i * qc + i] = T(1);
        continue;
      }
      // geqrf + orgqr on a column-major copy (two O(mn) transpositions beside the O(mnk)
      // work; measured faster than gelqf + orglq on the row-major buffer read as A^T).
      transpose(a + b * m * n, m, n, n, t.data(), m);
      if (blocked) blocked_geqrf(mi, ni, t.data(), ld, tau.data(), work.data());
      else geqrf(mi, ni, t.data(), ld, tau.data(), work.data(), lwork);
      // R: the top k rows of the factored copy, transposed back, below its diagonal zero.
      transpose(t.data(), n, k, m, rb, n);
      for (int64_t i = 1; i < k; ++i) std::fill(rb + i * n, rb + i * n + std::min(i, n), T(0));
      std::fill(rb + k * n, rb + rr * n, T(0));
      if (qc > n) std::fill(t.begin() + m * n, t.begin() + m * qc, T(0));  // Q's extra columns
      if (blocked) blocked_orgqr(mi, qci, ki, t.data(), ld, tau.data(), work.data());
      else orgqr(mi, qci, ki, t.data(), ld, tau.data(), work.data(), lwork);
      transpose(t.data(), qc, m, m, qb, qc);
    }
  });
}

template <class T> void geqrf_t(int64_t batch, int64_t m, int64_t n, const T* a, T* h, T* tau) {
  const int64_t k = std::min(m, n);
  const bool blocked = k >= kQrBlockedMin;
  const lapack_int mi = to_int(m, "geqrf"), ni = to_int(n, "geqrf"), ld = std::max<lapack_int>(1, mi);
  for_each_matrix(batch, 2.0 * double(m) * double(n) * double(k), [&](int64_t lo, int64_t hi) {
    std::vector<T> t(size_t(std::max<int64_t>(1, m * n)));  // column-major copy
    T wq(0);
    if (k > 0 && !blocked) geqrf(mi, ni, t.data(), ld, tau, &wq, -1);
    std::vector<T> work(blocked ? blocked_qr_work<T>(mi, ni) : size_t(work_size(wq)));
    for (int64_t b = lo; b < hi; ++b) {
      transpose(a + b * m * n, m, n, n, t.data(), m);
      if (blocked) blocked_geqrf(mi, ni, t.data(), ld, tau + b * k, work.data());
      else if (k > 0) geqrf(mi, ni, t.data(), ld, tau + b * k, work.data(), lapack_int(work.size()));
      transpose(t.data(), n, m, m, h + b * m * n, n);
    }
  });
}

/// Whether a batch of `batch` real matrices of at most `dim` rows and columns goes to the
/// batched Jacobi kernels (jacobi.h) instead of one LAPACK call per matrix: small matrices
/// in a batch that fills at least half a group of lanes.
template <class T> bool use_jacobi(int64_t batch, int64_t dim) {
  return !is_cplx<T> && dim >= 2 && dim <= kJacobiMaxN && batch >= kJacobiLanes / 2;
}

/// for_each_matrix, with the batch split at multiples of kJacobiLanes when `jacobi` (so that
/// no task holds a partial group of lanes but the last).
void for_each_matrix_in_groups(int64_t batch, double work, bool jacobi, const std::function<void(int64_t, int64_t)>& fn) {
  if (!jacobi) return for_each_matrix(batch, work, fn);
  const int64_t groups = (batch + kJacobiLanes - 1) / kJacobiLanes;
  for_each_matrix(groups, work * double(kJacobiLanes), [&](int64_t lo, int64_t hi) {
    fn(lo * kJacobiLanes, std::min(hi * kJacobiLanes, batch));
  });
}

/// Runs fn(b0, count) on the matrices [lo, hi) in groups of kJacobiLanes and calls
/// lapack_one(b) for each matrix whose bit is set in the mask fn returns.
template <class Jacobi, class One> void by_jacobi_groups(int64_t lo, int64_t hi, Jacobi&& fn, One&& lapack_one) {
  for (int64_t b0 = lo; b0 < hi; b0 += kJacobiLanes) {
    const int64_t count = std::min(kJacobiLanes, hi - b0);
    const uint32_t left = fn(b0, count);
    for (int64_t i = 0; i < count; ++i)
      if ((left >> i) & 1) lapack_one(b0 + i);
  }
}

template <class T> void eigh_t(int64_t batch, int64_t n, const T* a, T* v, real_t<T>* w, bool lower) {
  using R = real_t<T>;
  const lapack_int ni = to_int(n, "eigh");
  const char jobz = v ? 'V' : 'N';
  // A read column-major is A^T = conj(A): its upper triangle is A's lower one, and its
  // eigenvectors are conj(v), which a conjugating transpose turns into A's, as columns.
  const char uplo = lower ? 'U' : 'L';
  const bool jacobi = use_jacobi<T>(batch, n);
  // Jacobi's cost per matrix: about 6 sweeps of n^2 / 2 rotations of 12 n flops, spread
  // over the lanes.
  const double work = jacobi ? 36.0 * double(n) * double(n) * double(n) : 9.0 * double(n) * double(n) * double(n);
  for_each_matrix_in_groups(batch, work, jacobi, [&](int64_t lo, int64_t hi) {
    std::vector<T> t, work;
    std::vector<R> rwork;
    std::vector<lapack_int> iwork;
    auto lapack_one = [&](int64_t b) {
      if (t.empty()) {  // workspace queried once per group, on first use
        t.resize(size_t(std::max<int64_t>(1, n * n)));
        T wq(0);
        R rq(0);
        lapack_int iq = 0;
        if (n > 0) heevd(jobz, uplo, ni, t.data(), ni, w, &wq, -1, &rq, -1, &iq, -1);
        work.resize(size_t(work_size(wq)));
        rwork.resize(size_t(std::max<lapack_int>(1, lapack_int(rq))));
        iwork.resize(size_t(std::max<lapack_int>(1, iq)));
      }
      std::copy(a + b * n * n, a + (b + 1) * n * n, t.data());
      R* wb = w + b * n;
      const lapack_int info = n == 0 ? 0
                                     : heevd(jobz, uplo, ni, t.data(), ni, wb, work.data(), lapack_int(work.size()),
                                             rwork.data(), lapack_int(rwork.size()), iwork.data(),
                                             lapack_int(iwork.size()));
      if (info != 0) {
        fill_nan(wb, n);
        fill_nan(v ? v + b * n * n : nullptr, n * n);
        return;
      }
      if (v) transpose(t.data(), n, n, n, v + b * n * n, n, /*conj=*/true);
    };
    if constexpr (!is_cplx<T>) {
      if (jacobi) {
        by_jacobi_groups(
            lo, hi,
            [&](int64_t b0, int64_t count) {
              return jacobi_eigh(count, n, a + b0 * n * n, lower, w + b0 * n, v ? v + b0 * n * n : nullptr);
            },
            lapack_one);
        return;
      }
    }
    for (int64_t b = lo; b < hi; ++b) lapack_one(b);
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
  // Jacobi gives k singular vectors on each side: complete ones of a non-square matrix
  // (full_matrices) come from LAPACK.
  const bool jacobi = use_jacobi<T>(batch, mx) && k >= 1 && (!uv || !full || m == n);
  // Jacobi's cost per matrix: about 8 sweeps of k^2 / 2 column pairs of 12 m flops.
  const double work = jacobi ? 48.0 * double(mx) * double(k) * double(k) : 12.0 * double(mx) * double(k) * double(k);
  for_each_matrix_in_groups(batch, work, jacobi, [&](int64_t lo, int64_t hi) {
    std::vector<T> t, work;
    std::vector<R> rwork;
    std::vector<lapack_int> iwork;
    T dummy(0);
    auto lapack_one = [&](int64_t b) {
      if (t.empty()) {  // workspace queried once per group, on first use
        t.resize(size_t(std::max<int64_t>(1, m * n)));
        rwork.resize(size_t(std::max<int64_t>(1, std::max(7 * k, k * std::max(5 * k + 7, 2 * mx + 2 * k + 1)))));
        iwork.resize(size_t(std::max<int64_t>(1, 8 * k)));
        T wq(0);
        // Row-major A is the column-major n x m matrix A^T = conj(V) S U^T: gesdd's U of it,
        // read row-major, is V^H, and its V^T read row-major is U (the output buffers swap).
        if (k > 0)
          gesdd(jobz, ni, mi, t.data(), ld_u, s, uv ? vt : &dummy, ld_u, uv ? u : &dummy, ld_vt, &wq, -1,
                rwork.data(), iwork.data());
        work.resize(size_t(work_size(wq)));
      }
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
        return;
      }
      const lapack_int info = gesdd(jobz, ni, mi, t.data(), ld_u, sb, vb, ld_u, ub, ld_vt, work.data(),
                                    lapack_int(work.size()), rwork.data(), iwork.data());
      if (info != 0) {
        fill_nan(sb, k);
        if (uv) fill_nan(ub, m * uc), fill_nan(vb, vr * n);
      }
    };
    if constexpr (!is_cplx<T>) {
      if (jacobi) {
        by_jacobi_groups(
            lo, hi,
            [&](int64_t b0, int64_t count) {
              return jacobi_svd(count, m, n, a + b0 * m * n, s + b0 * k, uv ? u + b0 * m * k : nullptr,
                                uv ? vt + b0 * k * n : nullptr);
            },
            lapack_one);
        return;
      }
    }
    for (int64_t b = lo; b < hi; ++b) lapack_one(b);
  });
}

template <class T>
void tridiagonal_solve_t(int64_t batch, int64_t m, int64_t nrhs, const T* dl, const T* d, const T* du, const T* b,
                         T* x) {
  const lapack_int mi = to_int(m, "tridiagonal_solve"), ri = to_int(nrhs, "tridiagonal_solve");
  for_each_matrix(batch, 8.0 * double(m) * double(nrhs) + 8.0 * double(m), [&](int64_t lo, int64_t hi) {
    // gtsv overwrites the diagonals; b goes column-major (one column per right-hand side).
    std::vector<T> l(size_t(std::max<int64_t>(1, m))), c(l.size()), u(l.size()), t(size_t(std::max<int64_t>(1, m * nrhs)));
    for (int64_t i = lo; i < hi; ++i) {
      T* out = x + i * m * nrhs;
      if (m == 0 || nrhs == 0) continue;
      std::copy(dl + i * m + 1, dl + (i + 1) * m, l.begin());
      std::copy(d + i * m, d + (i + 1) * m, c.begin());
      std::copy(du + i * m, du + (i + 1) * m - 1, u.begin());
      transpose(b + i * m * nrhs, m, nrhs, nrhs, t.data(), m);
      if (gtsv(mi, ri, l.data(), c.data(), u.data(), t.data(), mi) != 0) {
        fill_nan(out, m * nrhs);
        continue;
      }
      transpose(t.data(), nrhs, m, m, out, nrhs);
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

}  // namespace

bool lapack_supported(DType d) {
  return d == DType::float32 || d == DType::float64 || d == DType::complex64 || d == DType::complex128;
}

void cholesky(DType d, int64_t batch, int64_t n, const void* a, void* l, bool symmetrize) {
  TESSEL_LAPACK_DISPATCH("cholesky", d,
                         cholesky_t<T>(batch, n, static_cast<const T*>(a), static_cast<T*>(l), symmetrize))
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

void geqrf(DType d, int64_t batch, int64_t m, int64_t n, const void* a, void* h, void* tau) {
  TESSEL_LAPACK_DISPATCH("geqrf", d,
                         geqrf_t<T>(batch, m, n, static_cast<const T*>(a), static_cast<T*>(h), static_cast<T*>(tau)))
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

void tridiagonal_solve(DType d, int64_t batch, int64_t m, int64_t nrhs, const void* dl, const void* diag,
                       const void* du, const void* b, void* x) {
  TESSEL_LAPACK_DISPATCH("tridiagonal_solve", d,
                         tridiagonal_solve_t<T>(batch, m, nrhs, static_cast<const T*>(dl), static_cast<const T*>(diag),
                                                static_cast<const T*>(du), static_cast<const T*>(b), static_cast<T*>(x)))
}

void eig(DType d, int64_t batch, int64_t n, const void* a, void* w, void* vl, void* vr) {
  TESSEL_LAPACK_DISPATCH("eig", d, {
    using C = std::complex<real_t<T>>;
    eig_t<T>(batch, n, static_cast<const T*>(a), static_cast<C*>(w), static_cast<C*>(vl), static_cast<C*>(vr));
  })
}

}  // namespace tessel::cpu
