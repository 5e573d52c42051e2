#pragma once
// Linear algebra, named and behaving like jax.numpy.linalg (namespace tessel::linalg),
// jax.scipy.linalg (tessel::scipy::linalg) and lax.linalg's primitives (tessel::lax::linalg).
// Factorizations call LAPACK (src/backend/cpu/lapack.h); every function batches over leading
// dimensions and works under jit, grad and vmap (docs/linalg.md).
#include <optional>
#include <string>
#include <vector>

#include "tessel/array.h"

namespace tessel::lax::linalg {
// ---- primitives (src/ops/linalg_factor.cpp) ----
}  // namespace tessel::lax::linalg

namespace tessel::linalg {
// ---- factorizations and solves (src/ops/linalg_factor.cpp) ----

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
/// jnp.linalg.trace: the sum of diagonal `offset` of each matrix in the last two axes,
/// computed in `dtype` when given.
TESSEL_API Array trace(const Array& x, int64_t offset = 0, std::optional<DType> dtype = std::nullopt);
/// jnp.linalg.matrix_power: a (..., M, M) raised to the integer power n: the identity for
/// n = 0, repeated squaring for n > 0 (about 2 log2(n) products), inv(a) to the power -n for
/// n < 0.
TESSEL_API Array matrix_power(const Array& a, int64_t n);
}  // namespace tessel::linalg

namespace tessel::scipy::linalg {
// ---- factorizations and solves (src/ops/linalg_factor.cpp) ----

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
}  // namespace tessel::scipy::linalg
