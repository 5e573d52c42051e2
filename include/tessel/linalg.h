#pragma once
// Linear algebra, named and behaving like jax.numpy.linalg (namespace tessel::linalg),
// jax.scipy.linalg (tessel::scipy::linalg) and lax.linalg's primitives (tessel::lax::linalg).
// Factorizations call LAPACK (src/backend/cpu/lapack.h); every function batches over leading
// dimensions and works under jit, grad and vmap (docs/linalg.md).
//
//   ts::Array a = ...;                                   // float32[..., n, n]
//   ts::Array l = ts::linalg::cholesky(a);               // a = l l^H
//   ts::Array x = ts::linalg::solve(a, b);               // a x = b
//   auto [u, s, vh] = ts::linalg::svd(a, /*full_matrices=*/false);
//   auto [sign, logabsdet] = ts::linalg::slogdet(a);
//
// Matrices are the last two dimensions (..., m, n); the leading ones are a batch. Integer
// and bool inputs are converted to the default float dtype, half types to float32 (LAPACK
// factors float32, float64, complex64 and complex128). Failures follow JAX: a Cholesky
// factor of a matrix that is not positive definite is all NaN, a singular solve gives
// inf/NaN; wrong ranks, non-square inputs and mismatched shapes throw ShapeError or
// ValueError naming the function and the shapes.
#include <optional>
#include <string>
#include <vector>

#include "tessel/array.h"

namespace tessel::lax::linalg {
// ---- primitives (src/ops/linalg_factor.cpp) ----

/// lax.linalg.cholesky: the lower triangular L with x = L L^H, for Hermitian positive
/// definite matrices x (..., n, n). With `symmetrize_input`, x is replaced by (x + x^H) / 2
/// first; otherwise only its lower triangle is read. Not positive definite: L is all NaN.
TESSEL_API Array cholesky(const Array& x, bool symmetrize_input = true);

/// Parameters of triangular_solve (lax.linalg.triangular_solve's keywords, same defaults).
struct TriangularSolveOptions {
  bool left_side = false;      ///< solve op(a) x = b (else x op(a) = b)
  bool lower = false;          ///< a is lower triangular (only that triangle is read)
  bool transpose_a = false;    ///< op(a) = a^T (a^H with conjugate_a)
  bool conjugate_a = false;    ///< conjugate a (complex only)
  bool unit_diagonal = false;  ///< assume ones on a's diagonal (not read)
};
/// lax.linalg.triangular_solve: x with op(a) x = b (left_side) or x op(a) = b, for
/// triangular a (..., k, k) and b (..., m, n) with the same batch dimensions (k = m on the
/// left side, n on the right). Note JAX's default is the right side.
TESSEL_API Array triangular_solve(const Array& a, const Array& b, const TriangularSolveOptions& options = {});

/// The results of lu: P A = L U.
struct LuResult {
  Array lu;           ///< (..., m, n): L (unit diagonal, not stored) below, U on and above the diagonal
  Array pivots;       ///< int32 (..., min(m, n)): row i was swapped with row pivots[i] at step i
  Array permutation;  ///< int32 (..., m): the rows of A in the order of P A
};
/// lax.linalg.lu: LU decomposition with partial pivoting (getrf) of matrices (..., m, n).
/// A singular matrix is factored all the same, with zeros on U's diagonal.
TESSEL_API LuResult lu(const Array& x);

/// lax.linalg.lu_pivots_to_permutation: the permutation (int32 (..., permutation_size)) that
/// the row swaps of int32 pivots (..., k) make of 0, 1, ..., permutation_size - 1.
TESSEL_API Array lu_pivots_to_permutation(const Array& pivots, int64_t permutation_size);

/// The results of qr: x = q r.
struct QrResult {
  Array q;  ///< (..., m, m) or (..., m, k) with orthonormal columns; empty for mode "r"
  Array r;  ///< (..., m, n) or (..., k, n), upper triangular
};
/// lax.linalg.qr: QR decomposition of matrices (..., m, n), k = min(m, n): q is m x m and r
/// m x n with `full_matrices`, else m x k and k x n.
TESSEL_API QrResult qr(const Array& x, bool full_matrices = true);

/// The results of geqrf: LAPACK's packed Householder QR.
struct GeqrfResult {
  Array a;     ///< (..., m, n): R on and above the diagonal, the reflectors' vectors below
  Array taus;  ///< (..., min(m, n)): the reflectors' scales
};
/// lax.linalg.geqrf: x = H_0 ... H_{k-1} R with H_i = I - taus_i v_i v_i^H (v_i: column i
/// of `a` below the diagonal, with a leading 1). No derivative rule (as in JAX).
TESSEL_API GeqrfResult geqrf(const Array& x);

/// The results of eigh, in lax.linalg.eigh's order: x v = v diag(w).
struct EighResult {
  Array eigenvectors;  ///< v (..., n, n): column i is the unit eigenvector of eigenvalue i
  Array eigenvalues;   ///< w (..., n), real, ascending
};
/// Options of lax.linalg.eigh.
struct EighOptions {
  bool lower = true;             ///< without symmetrize_input: read only this triangle
  bool symmetrize_input = true;  ///< replace x by (x + x^H) / 2 first
  bool sort_eigenvalues = true;  ///< ascending eigenvalues (LAPACK's order, always ascending)
};
/// lax.linalg.eigh: eigenvalues and eigenvectors of Hermitian (real symmetric) matrices
/// (..., n, n) (syevd / heevd).
TESSEL_API EighResult eigh(const Array& x, const EighOptions& options = {});

/// The results of svd: x = u diag(s) vh.
struct SvdResult {
  Array u;   ///< (..., m, m) with full_matrices, else (..., m, k); empty without compute_uv
  Array s;   ///< (..., k), real, descending
  Array vh;  ///< (..., n, n) with full_matrices, else (..., k, n); empty without compute_uv
};
/// lax.linalg.svd: singular value decomposition (gesdd) of matrices (..., m, n),
/// k = min(m, n). Without `compute_uv` only s is computed (u and vh are empty Arrays).
TESSEL_API SvdResult svd(const Array& x, bool full_matrices = true, bool compute_uv = true);

/// lax.linalg.tridiagonal_solve: x with A x = b for tridiagonal matrices A given by their
/// diagonals dl (dl[i] = A[i, i-1], dl[0] ignored), d and du (du[i] = A[i, i+1], du[m-1]
/// ignored), all (..., m), and b (..., m, n) (gtsv, with partial pivoting; src/ops/
/// linalg_tridiagonal.cpp). A singular system gives NaN. JAX's perturb_singular is not
/// offered.
TESSEL_API Array tridiagonal_solve(const Array& dl, const Array& d, const Array& du, const Array& b);

}  // namespace tessel::lax::linalg

namespace tessel::linalg {
// ---- factorizations and solves (src/ops/linalg_solve.cpp) ----

using lax::linalg::QrResult;
using lax::linalg::SvdResult;

/// The results of jnp.linalg.eigh, in its order (w, v): a v = v diag(w). (lax::linalg::eigh
/// returns them the other way round, as lax.linalg.eigh does.)
struct EighResult {
  Array eigenvalues;   ///< (..., n), real, ascending
  Array eigenvectors;  ///< (..., n, n): column i is the unit eigenvector of eigenvalue i
};

/// jnp.linalg.cholesky: the lower factor L (a = L L^H), or with `upper` the upper factor
/// U = L^H (a = U^H U), of Hermitian positive definite matrices (..., n, n). NaN where a
/// matrix is not positive definite.
TESSEL_API Array cholesky(const Array& a, bool upper = false, bool symmetrize_input = true);

/// jnp.linalg.qr of matrices (..., m, n), k = min(m, n). Modes: "reduced" (q m x k, r k x n),
/// "complete" (q m x m, r m x n), "r" (only r, k x n; q is empty) and "raw" (as numpy's and
/// JAX's (h, tau): the struct's q holds h = geqrf's packed factor transposed (..., n, m) and
/// its r the scales tau (..., k); no derivative).
TESSEL_API QrResult qr(const Array& a, const std::string& mode = "reduced");

/// jnp.linalg.svd: a = u diag(s) vh; u and vh are empty without compute_uv. With
/// `hermitian` (a must be square) JAX takes the factors from eigh; tessel computes the same
/// factorization with gesdd (singular vectors may differ in sign or phase from JAX's).
TESSEL_API SvdResult svd(const Array& a, bool full_matrices = true, bool compute_uv = true, bool hermitian = false);

/// jnp.linalg.svdvals: the singular values (..., k), descending.
TESSEL_API Array svdvals(const Array& a);

/// jnp.linalg.eigh: eigenvalues (ascending) and eigenvectors of Hermitian matrices. `UPLO`
/// is "L" (default) or "U": the triangle read when symmetrize_input is false.
TESSEL_API EighResult eigh(const Array& a, const std::string& UPLO = "L", bool symmetrize_input = true);

/// jnp.linalg.eigvalsh: the eigenvalues (..., n) of Hermitian matrices, ascending.
TESSEL_API Array eigvalsh(const Array& a, const std::string& UPLO = "L", bool symmetrize_input = true);

/// jnp.linalg.solve: x with a x = b, for a (..., n, n) and b either a vector (n,) or a batch
/// of matrices (..., n, k) whose batch dimensions broadcast with a's. Through an LU
/// factorization (getrf) and two triangular solves; singular a gives inf/NaN.
TESSEL_API Array solve(const Array& a, const Array& b);

/// jnp.linalg.inv: the inverses of square matrices (..., n, n) (solve against identities).
TESSEL_API Array inv(const Array& a);

/// jnp.linalg.det: determinants (...,) of square matrices, from an LU factorization; its
/// derivative is JAX's (a cofactor solve, so singular matrices have a gradient too).
TESSEL_API Array det(const Array& a);

/// The results of slogdet: det(a) = sign * exp(logabsdet).
struct SlogdetResult {
  Array sign;       ///< (...,): +1/-1 (real), a unit complex number (complex), 0 when singular
  Array logabsdet;  ///< (...,): log |det a| (real dtype), -inf when singular
};
/// jnp.linalg.slogdet: sign and log of the absolute value of determinants, from an LU
/// factorization; d logabsdet = Re trace(a^-1 da), as JAX's rule.
TESSEL_API SlogdetResult slogdet(const Array& a);

// ---- composed functions (src/ops/linalg_composed.cpp) ----
}  // namespace tessel::linalg

namespace tessel::scipy::linalg {
// ---- factorizations and solves (src/ops/linalg_solve.cpp) ----

using lax::linalg::SvdResult;

/// jax.scipy.linalg.solve_triangular: x with op(a) x = b for triangular a (..., n, n) and b
/// (..., n) or (..., n, k). `trans`: 0 (a), 1 (a^T) or 2 (a^H). Only the `lower` (default:
/// upper) triangle of a is read.
TESSEL_API Array solve_triangular(const Array& a, const Array& b, int trans = 0, bool lower = false,
                                  bool unit_diagonal = false);

/// The result of cho_factor: c holds the factor in its `lower` (else upper) triangle.
struct ChoFactor {
  Array c;
  bool lower = false;
};
/// jax.scipy.linalg.cho_factor: the Cholesky factor of a (..., n, n), lower (a = c c^H) or
/// upper (a = c^H c), for cho_solve. Unlike scipy, the other triangle is zero.
TESSEL_API ChoFactor cho_factor(const Array& a, bool lower = false);
/// jax.scipy.linalg.cho_solve: x with a x = b, given cho_factor(a); b is (..., n) or
/// (..., n, k).
TESSEL_API Array cho_solve(const ChoFactor& c_and_lower, const Array& b);

/// The results of scipy's lu: a = p l u.
struct PluResult {
  Array p;  ///< (..., m, m) permutation matrices
  Array l;  ///< (..., m, k) unit lower triangular (trapezoidal)
  Array u;  ///< (..., k, n) upper triangular (trapezoidal)
};
/// jax.scipy.linalg.lu: a = p l u for matrices (..., m, n), k = min(m, n).
TESSEL_API PluResult lu(const Array& a);

/// The result of lu_factor.
struct LuFactor {
  Array lu;   ///< (..., m, n): L below the diagonal (unit diagonal not stored), U on and above
  Array piv;  ///< int32 (..., min(m, n)): row i was swapped with row piv[i]
};
/// jax.scipy.linalg.lu_factor: the LU factorization of a, for lu_solve.
TESSEL_API LuFactor lu_factor(const Array& a);
/// jax.scipy.linalg.lu_solve: x with op(a) x = b given lu_factor(a), trans 0 (a), 1 (a^T)
/// or 2 (a^H); b is (..., n) or (..., n, k).
TESSEL_API Array lu_solve(const LuFactor& lu_and_piv, const Array& b, int trans = 0);

/// jax.scipy.linalg.qr: modes "full" (q m x m, r m x n), "economic" (q m x k, r k x n) and
/// "r" (r only, m x n; q empty).
TESSEL_API lax::linalg::QrResult qr(const Array& a, const std::string& mode = "full");

/// jax.scipy.linalg.svd: a = u diag(s) vh (u, vh empty without compute_uv).
TESSEL_API SvdResult svd(const Array& a, bool full_matrices = true, bool compute_uv = true);

// ---- composed functions (src/ops/linalg_composed.cpp) ----
}  // namespace tessel::scipy::linalg
