#pragma once
// LAPACK binding (LAPACKE over OpenBLAS's LAPACK): batches of factorizations of dense
// row-major matrices, for the linear-algebra primitives (src/ops/linalg_factor.cpp).
//
// Every function takes `batch` matrices stored back to back (row-major, no padding) in
// float32, float64, complex64 or complex128, and splits the batch over the shared intra-op
// arena (parallel.h) in groups that hold enough work per task (small matrices are grouped).
// OpenBLAS runs single-threaded inside tessel (blas.h), except for large matrices in a
// batch too small to occupy the arena: those run one at a time with OpenBLAS's threads (as
// many as the arena has), so LAPACK's threaded blocked algorithms use the cores. Such calls
// take turns, since OpenBLAS's thread count is process-wide.
//
// Layout: LAPACK is column-major. A row-major buffer read column-major is the transpose,
// and some factorizations are computed on it without copying: Cholesky and eigh of a
// symmetric matrix swap the triangle, and the SVD of A^T gives U and V^T of A with their
// roles swapped. LU (getrf), QR (geqrf + orgqr), tridiagonal solves and the eigenvectors
// of eigh and geev are transposed explicitly (O(n^2) beside O(n^3) work). Matrices up to
// 16 x 16 skip LAPACK for Cholesky, LU, QR and triangular solves (plain loops with the
// same pivots and reflector signs).
//
// Inputs are never written; outputs are separate buffers. A matrix LAPACK fails on (not
// positive definite, no convergence) gives NaNs in all of its outputs, as JAX's kernels do.
#include <cstdint>

#include "tessel/dtype.h"

namespace tessel::cpu {

/// True for the dtypes LAPACK factors: f32, f64, c64, c128.
bool lapack_supported(DType d);

/// Cholesky factorizations (potrf): `l` gets the lower triangular L with A = L L^H, its
/// strict upper triangle zero. Only the lower triangle of each `a` is read, unless
/// `symmetrize`: then A is (a + a^H) / 2, formed while copying (one cache-friendly pass
/// instead of a separate transposed read). A matrix that is not positive definite gives
/// an all-NaN L.
void cholesky(DType d, int64_t batch, int64_t n, const void* a, void* l, bool symmetrize = false);

/// Triangular solves (trsm) of `batch` systems: op(A) X = B (left_side) or X op(A) = B,
/// where A is n x n (n = m for left_side, else the column count), B and X are m x cols, and
/// op(A) is A, A^T (transpose_a) or A^H (transpose_a and conjugate_a; conjugate_a alone
/// conjugates A). Only the `lower` (or upper) triangle of A is read; unit_diagonal assumes
/// ones on the diagonal without reading it. `x` may equal `b`.
struct TriangularSolveOptions {
  bool left_side = false;
  bool lower = false;
  bool transpose_a = false;
  bool conjugate_a = false;
  bool unit_diagonal = false;
};
void triangular_solve(DType d, int64_t batch, int64_t m, int64_t cols, const void* a, const void* b, void* x,
                      const TriangularSolveOptions& opt);

/// LU factorizations with partial pivoting (getrf) of m x n matrices: `lu` holds L (unit
/// diagonal, not stored) below the diagonal and U on and above it; `pivots` (int32,
/// min(m, n) per matrix) the 0-based row swapped with row i at step i; `permutation`
/// (int32, m per matrix) the rows of A in the order of P A = L U. A singular matrix is
/// factored all the same (zeros on U's diagonal), as getrf does.
void lu(DType d, int64_t batch, int64_t m, int64_t n, const void* a, void* lu, int32_t* pivots, int32_t* permutation);

/// QR factorizations of m x n matrices (A = Q R): with k = min(m, n), Q is m x k and R is
/// k x n, or with `full_matrices` Q is m x m and R is m x n. Q has orthonormal columns and R
/// is upper triangular (trapezoidal).
void qr(DType d, int64_t batch, int64_t m, int64_t n, const void* a, void* q, void* r, bool full_matrices);

/// Householder QR factorizations in LAPACK's packed form (geqrf) of m x n matrices: `h`
/// holds R on and above the diagonal and the reflectors' vectors below it (their leading 1
/// not stored), `tau` (min(m, n) per matrix) their scales: A = H_0 ... H_{k-1} R with
/// H_i = I - tau_i v_i v_i^H.
void geqrf(DType d, int64_t batch, int64_t m, int64_t n, const void* a, void* h, void* tau);

/// Eigendecompositions of Hermitian (real symmetric) n x n matrices (syevd / heevd):
/// eigenvalues `w` (the real dtype of d, n per matrix, ascending) and, when `v` is not
/// null, eigenvectors as the columns of `v`. Only the `lower` (or upper) triangle is read.
void eigh(DType d, int64_t batch, int64_t n, const void* a, void* v, void* w, bool lower);

/// Singular value decompositions of m x n matrices (gesdd): singular values `s` (the real
/// dtype of d, k = min(m, n) per matrix, descending) and, when `u` and `vt` are not null,
/// A = U diag(s) V^H with U m x k and V^H k x n, or m x m and n x n with `full_matrices`.
void svd(DType d, int64_t batch, int64_t m, int64_t n, const void* a, void* s, void* u, void* vt,
         bool full_matrices);

/// Tridiagonal solves (gtsv, Gaussian elimination with partial pivoting): x (m x nrhs per
/// system) with A x = b, where A has sub-diagonal dl (dl[i] = A[i, i-1], dl[0] unused),
/// diagonal d and super-diagonal du (du[i] = A[i, i+1], du[m-1] unused), m per system. A
/// singular system gives an all-NaN x.
void tridiagonal_solve(DType d, int64_t batch, int64_t m, int64_t nrhs, const void* dl, const void* diag,
                       const void* du, const void* b, void* x);

/// Eigendecompositions of general n x n matrices (geev): eigenvalues `w` (complex dtype:
/// complex64 for f32 and c64, complex128 otherwise; n per matrix, in LAPACK's order) and,
/// when not null, right eigenvectors (columns of `vr`, A v = w v) and left eigenvectors
/// (columns of `vl`, u^H A = w u^H), complex, each normalized to unit length.
void eig(DType d, int64_t batch, int64_t n, const void* a, void* w, void* vl, void* vr);

}  // namespace tessel::cpu
