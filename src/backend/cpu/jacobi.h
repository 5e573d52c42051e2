#pragma once
// Batched Jacobi eigendecompositions and SVDs of small real matrices (n <= 16), vectorized
// across matrices: a group of kJacobiLanes matrices is stored structure-of-arrays (element
// (i, j) of every matrix of the group side by side), so each rotation updates all of them
// with the same vector instructions. For batches of small matrices this beats one LAPACK
// call per matrix (syevd / gesdd spend most of their time on argument checks, workspace
// and branches at n = 8); lapack.cpp's eigh and svd call it for such batches.
//
// eigh: cyclic two-sided Jacobi on the symmetric matrix; svd: one-sided (Hestenes) Jacobi
// on the columns of A (of A^T when A is wide). Each matrix is first scaled by a power of
// two (exact) so that its largest entry is near 1, so squares neither overflow nor
// underflow. Results follow LAPACK's conventions: eigenvalues ascending with eigenvectors
// as columns, singular values descending; vectors are orthonormal to working precision
// (their signs, like LAPACK's, are arbitrary).
//
// A matrix the kernel does not finish — a non-finite entry, no convergence within the
// sweep limit, or (svd with vectors) a zero singular value, whose singular vector the
// rotations do not give — is reported in the returned bit mask, and its outputs are left
// for the caller to compute with LAPACK.
#include <cstdint>

namespace tessel::cpu {

/// Matrices one Jacobi group processes together (the lanes of its vectors).
inline constexpr int64_t kJacobiLanes = 16;
/// The largest matrix dimension the Jacobi kernels take.
inline constexpr int64_t kJacobiMaxN = 16;

/// Eigendecompositions of `count` (1..kJacobiLanes) real symmetric n x n matrices (n <=
/// kJacobiMaxN) stored back to back at `a` (row-major); only the `lower` (or upper) triangle
/// is read. Writes the eigenvalues, ascending, to w (n per matrix) and, when `v` is not null,
/// the eigenvectors as the columns of v (n x n per matrix). Returns the mask of matrices
/// (bit i: matrix i) whose outputs were not written (see above).
uint32_t jacobi_eigh(int64_t count, int64_t n, const float* a, bool lower, float* w, float* v);
uint32_t jacobi_eigh(int64_t count, int64_t n, const double* a, bool lower, double* w, double* v);

/// Singular value decompositions of `count` (1..kJacobiLanes) real m x n matrices (m, n <=
/// kJacobiMaxN) stored back to back at `a`: singular values descending in s (k = min(m, n)
/// per matrix) and, when u and vt are not null, A = U diag(s) V^T with U m x k and V^T k x n
/// (row-major). Returns the mask of matrices whose outputs were not written.
uint32_t jacobi_svd(int64_t count, int64_t m, int64_t n, const float* a, float* s, float* u, float* vt);
uint32_t jacobi_svd(int64_t count, int64_t m, int64_t n, const double* a, double* s, double* u, double* vt);

}  // namespace tessel::cpu
