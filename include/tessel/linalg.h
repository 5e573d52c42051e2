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
#include <functional>
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

namespace tessel::lax::linalg {
// ---- primitives of the composed functions (src/ops/linalg_eig.cpp, linalg_structured.cpp) and the
// ---- custom solves (src/ops/linalg_custom_solve.cpp)

/// The results of lax.linalg.eig (JAX returns the list [w, vl, vr]).
struct EigResult {
  Array eigenvalues;         ///< w (..., n), complex
  Array left_eigenvectors;   ///< vl (..., n, n): u^H a = w u^H, column-wise; empty unless requested
  Array right_eigenvectors;  ///< vr (..., n, n): a v = w v, column-wise; empty unless requested
};
/// lax.linalg.eig: eigenvalues and the requested eigenvectors (unit length, largest
/// component real) of general square matrices (..., n, n) of a LAPACK dtype (float32,
/// float64, complex64, complex128), by geev; results are complex (complex64 for 32-bit
/// input, complex128 for 64-bit). The eigenvalues are differentiable; the eigenvectors only
/// with `enable_eigvec_derivs` (JAX's opt-in: the rule assumes distinct eigenvalues).
TESSEL_API EigResult eig(const Array& x, bool compute_left_eigenvectors = true, bool compute_right_eigenvectors = true,
                         bool enable_eigvec_derivs = false);

/// A linear operator with explicit differentiable parameters: (params, x) -> A(params) x.
using LinearOperator = std::function<Array(const std::vector<Array>& params, const Array& x)>;
/// A linear solver: (matvec, b) -> x with matvec(x) = b.
using LinearSolver = std::function<Array(const std::function<Array(const Array&)>& matvec, const Array& b)>;
/// lax.custom_linear_solve: x = solve(matvec, b) with matvec(x) = A(params) x, run as written
/// (an iterative solver, a while loop, a factorization) but differentiated implicitly:
/// reverse mode gives b the cotangent lambda = transpose_solve(vecmat, ct) (vecmat: A^T, by
/// linear_transpose of matvec; `symmetric` uses solve and matvec instead) and the parameters
/// -(d(A x)/d params)^T lambda, never differentiating through `solve`. The operator's
/// parameters are explicit (JAX finds them in matvec's closure; tessel's custom rules
/// reject closure-captured values with derivatives). Reverse mode (grad, vjp) and vmap
/// only: forward mode throws, as for every custom_vjp function.
TESSEL_API Array custom_linear_solve(const LinearOperator& matvec, const std::vector<Array>& params, const Array& b,
                                     const LinearSolver& solve, const LinearSolver& transpose_solve = nullptr,
                                     bool symmetric = false);
/// A function whose root is sought: (params, x) -> f(x; params), of x's shape.
using RootFunction = std::function<Array(const std::vector<Array>& params, const Array& x)>;
/// A root finder: (f, initial_guess) -> x with f(x) = 0.
using RootSolver = std::function<Array(const std::function<Array(const Array&)>& f, const Array& initial_guess)>;
/// lax.custom_root: x* = solve(f(params, .), initial_guess), differentiated by the implicit
/// function theorem: the parameters get -(df/dparams)^T lambda with lambda solving
/// (df/dx)^T lambda = ct through tangent_solve(g, y) (g: a linear map, here the transposed
/// Jacobian at x*); the initial guess gets zero. Parameters explicit, reverse mode only, as
/// custom_linear_solve.
TESSEL_API Array custom_root(const RootFunction& f, const std::vector<Array>& params, const Array& initial_guess,
                             const RootSolver& solve, const LinearSolver& tangent_solve);

/// The results of lax.linalg.schur: x = z t z^H.
struct SchurResult {
  Array t;  ///< (..., n, n): upper (quasi-)triangular
  Array z;  ///< (..., n, n): unitary Schur vectors; empty unless requested
};
/// lax.linalg.schur: Schur decompositions (gees, unsorted) of square matrices of a LAPACK
/// dtype; real input gives the real Schur form. No derivative (as JAX).
TESSEL_API SchurResult schur(const Array& x, bool compute_schur_vectors = true);
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

/// The order of a vector or matrix norm, as jnp.linalg's `ord`: a number p (an integer or
/// real, or +-infinity: use tessel::linalg::inf) or a name ("fro" or "f", "nuc").
struct NormOrd {
  NormOrd(double p) : value(p) {}                      // NOLINT: implicit, `norm(x, 1)` reads naturally
  NormOrd(int p) : value(p) {}                         // NOLINT: (an int overload, so 0 is not a null name)
  NormOrd(const char* name) : name(name) {}            // NOLINT
  NormOrd(std::string name) : name(std::move(name)) {}  // NOLINT
  std::optional<double> value;  ///< the number, when the order is one
  std::string name;             ///< the name, when it is one
  /// The order as JAX prints it ("2", "inf", "-inf", "'fro'").
  TESSEL_API std::string to_string() const;
};
/// +infinity, for `ord`: `norm(x, inf)` is the largest absolute value (vectors) or the
/// largest absolute row sum (matrices).
inline constexpr double inf = std::numeric_limits<double>::infinity();

/// jnp.linalg.vector_norm: the `ord`-norm of the vectors along `axis` (all axes when none;
/// several axes are taken as one flattened vector). Orders: 2 (sqrt of the sum of |x|^2), 1
/// (sum of |x|), inf (max |x|), -inf (min |x|), 0 (count of non-zeros, as a float), any other
/// p (sum(|x|^p)^(1/p)). Integer and bool inputs are promoted to float first (as
/// jnp.linalg.norm does; JAX's vector_norm keeps integers for ord 1 and inf). The result is
/// real; keepdims keeps the reduced axes as size 1.
TESSEL_API Array vector_norm(const Array& x, NormOrd ord = 2, std::optional<std::vector<int64_t>> axis = std::nullopt,
                             bool keepdims = false);
/// jnp.linalg.matrix_norm: the norm of the matrices in the last two axes of x (rank >= 2).
/// Orders: "fro" (Frobenius), "nuc" (sum of singular values), 1 / -1 (max / min absolute
/// column sum), inf / -inf (max / min absolute row sum), 2 / -2 (largest / smallest
/// singular value).
TESSEL_API Array matrix_norm(const Array& x, NormOrd ord = "fro", bool keepdims = false);
/// jnp.linalg.norm: with no `axis`, the 2-norm of x flattened when `ord` is none, else the
/// vector norm (1-D x) or matrix norm (2-D x); with one axis a vector norm, with two axes
/// (rows, columns) a matrix norm over them (none: 2 for vectors, "fro" for matrices). Any
/// other number of axes is a ValueError.
TESSEL_API Array norm(const Array& x, std::optional<NormOrd> ord = std::nullopt, std::optional<std::vector<int64_t>> axis = std::nullopt,
                      bool keepdims = false);

/// The axes of jnp.cross: `axisa` / `axisb` hold the vectors of a / b, `axisc` those of the
/// result; `axis`, when set, is all three.
struct CrossAxes {
  int64_t axisa = -1, axisb = -1, axisc = -1;
  std::optional<int64_t> axis = std::nullopt;
};
/// jnp.cross: the cross products of the 2- or 3-vectors along the axes `axes` names, with
/// the other axes broadcast. Two 2-vectors give the scalar z component (that axis is
/// dropped); a 2-vector against a 3-vector counts as having z = 0.
TESSEL_API Array cross(const Array& a, const Array& b, const CrossAxes& axes);
/// jnp.linalg.cross: the cross products of the 3-vectors along `axis` of a and b (other
/// axes broadcast). Both must have size 3 there.
TESSEL_API Array cross(const Array& a, const Array& b, int64_t axis = -1);
/// jnp.linalg.multi_dot: arrays[0] @ arrays[1] @ ... with the multiplication order that
/// needs the fewest scalar products (the classic matrix-chain order, as JAX's einsum path
/// gives). All arrays are 2-D, except the first and last, which may be 1-D (a row / column
/// vector, whose axis the result drops). At least two arrays.
TESSEL_API Array multi_dot(const std::vector<Array>& arrays);
/// jnp.linalg.diagonal: diagonal `offset` (above the main one when positive) of each
/// matrix in the last two axes: shape (..., k).
TESSEL_API Array diagonal(const Array& x, int64_t offset = 0);
/// jnp.linalg.matrix_transpose: swaps the last two axes (rank >= 2).
TESSEL_API Array matrix_transpose(const Array& x);
/// jnp.linalg.vecdot: sum(conj(a) * b) along `axis` (conjugating the first argument, as
/// JAX), other axes broadcast. Both must have the same size along `axis`.
TESSEL_API Array vecdot(const Array& a, const Array& b, int64_t axis = -1);
/// jnp.linalg.outer: the outer product of two 1-D arrays.
TESSEL_API Array outer(const Array& a, const Array& b);
/// jnp.linalg.tensordot: tessel::tensordot (the last `axes` dimensions of a with the first
/// `axes` of b).
TESSEL_API Array tensordot(const Array& a, const Array& b, int64_t axes = 2);
/// jnp.linalg.tensordot with axes ([a_axes], [b_axes]).
TESSEL_API Array tensordot(const Array& a, const Array& b, const std::vector<int64_t>& a_axes,
                           const std::vector<int64_t>& b_axes);
/// jnp.linalg.trace: the sum of diagonal `offset` of each matrix in the last two axes,
/// computed in `dtype` when given.
TESSEL_API Array trace(const Array& x, int64_t offset = 0, std::optional<DType> dtype = std::nullopt);
/// jnp.linalg.matrix_power: a (..., M, M) raised to the integer power n: the identity for
/// n = 0, repeated squaring for n > 0 (about 2 log2(n) products), inv(a) to the power -n for
/// n < 0.
TESSEL_API Array matrix_power(const Array& a, int64_t n);

// (src/ops/linalg_spectral.cpp: through the SVD and solves)

/// jnp.linalg.pinv: the Moore-Penrose pseudo-inverses (..., n, m) of a (..., m, n), from the
/// SVD: singular values at or below rtol * the largest are taken as zero. `rtol` is a scalar
/// or has a's batch shape (default 10 * max(m, n) * eps); `hermitian` uses eigh. Its
/// derivative is JAX's closed form (Golub and Pereyra), not the SVD's.
TESSEL_API Array pinv(const Array& a, std::optional<Array> rtol = std::nullopt, bool hermitian = false);
/// jnp.linalg.matrix_rank: the number of singular values of each matrix above a threshold,
/// int32 (...,). The default threshold is max(s) * max(m, n) * eps; a given `tol` (JAX's
/// `rtol`, or its alias `tol`) is compared to the singular values directly, as JAX 0.10
/// does (an absolute tolerance). Arrays of rank < 2 give 1 when any element is non-zero.
TESSEL_API Array matrix_rank(const Array& m, std::optional<Array> tol = std::nullopt, bool hermitian = false);
/// jnp.linalg.cond: the condition number in norm `p`: none or 2 (largest over smallest
/// singular value), -2 (the reverse), or any matrix norm order ("fro", "nuc", 1, -1, inf,
/// -inf: norm(x) * norm(inv(x)), square x only). A singular matrix gives inf (NaN only when
/// x holds NaNs). x (..., m, n) must not be empty.
TESSEL_API Array cond(const Array& x, std::optional<NormOrd> p = std::nullopt);
/// The results of lstsq.
struct LstsqResult {
  Array solution;         ///< x (..., n) or (..., n, k) minimizing |a x - b|
  Array residuals;        ///< (..., k): the squared 2-norm of b - a x per right-hand side (k = 1 for vectors)
  Array rank;             ///< int32 (...,): the singular values counted
  Array singular_values;  ///< (..., min(m, n)), descending
};
/// jnp.linalg.lstsq: least-squares solutions of a x = b through the SVD, for a (..., m, n)
/// and b (..., m) or (..., m, k) (JAX takes 2-D a only; the leading axes here are a batch).
/// Singular values below rcond * the largest count as zero (default eps * max(m, n); a
/// negative rcond means eps). Residuals are returned for every system, as JAX does.
TESSEL_API LstsqResult lstsq(const Array& a, const Array& b, std::optional<double> rcond = std::nullopt);
/// jnp.linalg.tensorsolve: x with tensordot(a, x, x.ndim) = b. a's leading dimensions are
/// b's shape and its trailing ones x's (`axes` of a move to the end first); both must hold
/// the same number of elements.
TESSEL_API Array tensorsolve(const Array& a, const Array& b, std::optional<std::vector<int64_t>> axes = std::nullopt);
/// jnp.linalg.tensorinv: the inverse of a seen as a matrix from its first `ind` dimensions
/// to the others: the result has shape a.shape[ind:] + a.shape[:ind].
TESSEL_API Array tensorinv(const Array& a, int64_t ind = 2);

// (src/ops/linalg_eig.cpp: the eig primitive)

/// The results of jnp.linalg.eig: a v = v diag(w).
struct EigResult {
  Array eigenvalues;   ///< w (..., n), complex, in LAPACK's order (not sorted)
  Array eigenvectors;  ///< v (..., n, n), complex: column i is the unit eigenvector of w[i]
};
/// jnp.linalg.eig: eigenvalues and right eigenvectors of general square matrices (geev),
/// complex64 for float32 and complex64 input, complex128 for float64 and complex128 (as JAX
/// on CPU). Not differentiable (JAX neither, by default): use eigvals or eigh.
TESSEL_API EigResult eig(const Array& a);
/// jnp.linalg.eigvals: the eigenvalues (..., n) of general square matrices, complex.
/// Differentiable: dw_i = (V^-1 dA V)_ii (JAX's rule; valid for distinct eigenvalues).
TESSEL_API Array eigvals(const Array& a);
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

/// jax.scipy.linalg.block_diag: the arrays (0-D as 1x1, 1-D as one row, 2-D as they are)
/// on the diagonal of one matrix of their promoted dtype, zeros elsewhere. No arrays give a
/// (1, 0) float32 matrix, as JAX.
TESSEL_API Array block_diag(const std::vector<Array>& arrays);
/// jax.scipy.linalg.toeplitz: the (..., N, M) matrix with first column c (..., N) and first
/// row r (..., M) (r[0] is ignored; default conj(c)): A[i, j] = c[i - j] for i >= j, else
/// r[j - i]. Leading axes broadcast (a batch of matrices); 0-D inputs count as 1-D.
TESSEL_API Array toeplitz(const Array& c, std::optional<Array> r = std::nullopt);
/// jax.scipy.linalg.hankel: the (..., M, N) matrix with first column c (..., M) and last row
/// r (..., N) (r[0] is ignored; default zeros): A[i, j] = c[i + j] for i + j < M, else
/// r[i + j - M + 1]. Leading axes broadcast; c and r must be at least 1-D.
TESSEL_API Array hankel(const Array& c, std::optional<Array> r = std::nullopt);
/// jax.scipy.linalg.circulant: the (..., N, N) matrix whose columns are c (..., N) shifted
/// cyclically: A[i, j] = c[(i - j) mod N].
TESSEL_API Array circulant(const Array& c);

// (src/ops/linalg_matrix_functions.cpp)

/// jax.scipy.linalg.expm: the matrix exponentials of square matrices (..., n, n), by
/// scaling and squaring around a Padé approximant as JAX computes them (degree 3 to 13 in
/// float64 and complex128, 3 to 7 in float32 and complex64, picked per matrix from its
/// 1-norm). `upper_triangular` solves the Padé system by back substitution. A matrix that
/// needs more than `max_squarings` squarings gives NaN. Differentiable (through the
/// computation, as JAX); integers are promoted to float, half types are a DTypeError.
TESSEL_API Array expm(const Array& a, bool upper_triangular = false, int64_t max_squarings = 16);

// (src/ops/linalg_structured.cpp: the schur primitive, and eigh)

/// jax.scipy.linalg.schur: A = Z T Z^H for square matrices (..., n, n) (gees): "real"
/// output gives real input its real Schur form (T quasi-triangular, 2 x 2 blocks for complex
/// eigenvalue pairs); "complex" converts to complex first (T upper triangular). Not
/// differentiable (JAX neither).
TESSEL_API lax::linalg::SchurResult schur(const Array& a, const std::string& output = "real");
/// jax.scipy.linalg.sqrtm: a square root X (X @ X = A) of square matrices (..., n, n), complex
/// (as JAX), by the Schur method: A = Z T Z^H in complex Schur form, then the triangular
/// root U of T column by column, X = Z U Z^H. Not differentiable (it goes through schur,
/// like JAX's). A singular matrix with a repeated zero eigenvalue may give NaN.
TESSEL_API Array sqrtm(const Array& a);
/// The results of eigh_tridiagonal.
struct EighTridiagonalResult {
  Array eigenvalues;   ///< (..., k) ascending (the selected ones)
  Array eigenvectors;  ///< (..., n, k): column i belongs to eigenvalue i; empty with eigvals_only
};
/// jax.scipy.linalg.eigh_tridiagonal: eigenvalues (and, unless eigvals_only, eigenvectors) of
/// the Hermitian tridiagonal matrices with diagonal d (..., n) and sub-diagonal e (..., n - 1)
/// (the super-diagonal is conj(e)). `select` "a" gives all eigenvalues, "i" those with
/// indices select_range.first..second (inclusive); JAX's value range "v" (a data-dependent
/// size) is not supported. Computed by eigh of the dense matrix, so eigenvectors and
/// derivatives come with it (JAX gives eigenvalues only, by bisection).
TESSEL_API EighTridiagonalResult eigh_tridiagonal(const Array& d, const Array& e, bool eigvals_only = false,
                                                  const std::string& select = "a",
                                                  std::pair<int64_t, int64_t> select_range = {0, 0});

// (src/ops/linalg_spectral.cpp)

/// The results of polar: a = unitary @ posdef (side "right") or posdef @ unitary ("left").
struct PolarResult {
  Array unitary;  ///< (..., m, n): orthonormal columns (m >= n) or rows
  Array posdef;   ///< (..., n, n) for "right", (..., m, m) for "left": Hermitian positive semi-definite
};
/// jax.scipy.linalg.polar of matrices (..., m, n), from the SVD a = u s vh: unitary = u vh,
/// posdef = vh^H s vh (right) or u s u^H (left). JAX's default method "qdwh" (an iteration)
/// is accepted and computed through the SVD too: the factors agree to rounding.
TESSEL_API PolarResult polar(const Array& a, const std::string& side = "right", const std::string& method = "qdwh");
}  // namespace tessel::scipy::linalg

