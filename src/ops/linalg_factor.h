#pragma once
// Matrix helpers shared by the factorization primitives (linalg_factor.cpp), the functions
// composed from them (linalg_solve.cpp, linalg_composed.cpp): every helper acts on the last
// two dimensions of a batch of matrices (..., m, n). Also the batching and sharding rules of
// every linear-algebra primitive whose kernel takes leading dimensions as a batch (the
// factorizations, eig, schur, tridiagonal_solve).
#include <initializer_list>
#include <string>

#include "ops/op_util.h"
#include "ops/rule_util.h"

namespace tessel::ops {

/// The leading dimensions of `s`: all but the last `matrix_dims` (the batch of a batch of
/// matrices, matrix_dims = 2, or of vectors, 1).
Shape batch_shape(const Shape& s, int64_t matrix_dims);
/// `batch` followed by `tail`: the shape of a batch of matrices (or vectors) of shape `tail`.
Shape with_batch(const Shape& batch, std::initializer_list<int64_t> tail);

/// The lower triangle of the matrices of x, from diagonal k up (k < 0: below the main
/// diagonal); the rest zero (jnp.tril).
Array tril(const Array& x, int64_t k = 0);
/// The upper triangle of the matrices of x, from diagonal k (jnp.triu).
Array triu(const Array& x, int64_t k = 0);
/// The matrices transposed (swapping the last two axes).
Array matrix_transpose(const Array& x);
/// The matrices conjugate-transposed (transposed for real dtypes).
Array matrix_adjoint(const Array& x);
/// (x + x^H) / 2.
Array symmetrize(const Array& x);
/// The main diagonals of the matrices: shape (..., min(m, n)).
Array matrix_diagonal(const Array& x);
/// Matrices with `d` (..., n) on their diagonals and zeros elsewhere: (..., n, n).
Array diagonal_matrix(const Array& d);
/// An n x n identity of x's dtype, broadcast to x's batch dimensions: (..., n, n).
Array identity_like(const Array& x, int64_t n);

/// ShapeError "op: <what> must be a matrix or a batch of matrices ..., got shape (3,)" unless
/// `shape` has rank >= 2, and (when `square`) "... must hold square matrices" unless its last
/// two dimensions are equal.
void check_matrix_shape(const std::string& op, const Shape& shape, bool square, const char* what = "the input");
/// check_matrix_shape, and DTypeError unless x has a LAPACK dtype (float32, float64,
/// complex64, complex128): the inputs of the factorization primitives.
void check_matrices(const std::string& op, const Aval& x, bool square);
/// x converted to the dtype LAPACK factors for it: floating and complex stay (half types
/// become float32), integers and bool become the default float (as jnp.linalg does).
Array to_lapack_dtype(const Array& x);

/// lax.linalg.lu_solve of `lu`, `permutation` (from lu) and b (..., n, k): solves A x = b
/// (trans 0), A^T x = b (trans 1) or A^H x = b (trans 2).
Array lu_solve_matrices(const Array& lu, const Array& permutation, const Array& b, int trans);
/// Permutation matrices P (..., m, m) of int32 permutations (..., m): P x = x[perm].
Array permutation_matrix(const Array& permutation, DType dtype);
/// The rows of x (..., m, k) in the order of int32 permutations (..., m) (batch dimensions
/// broadcast): x[perm] = P x, or with `inverse` P^T x, copying whole rows (the primitive
/// permute_rows; O(m k) where the product with permutation_matrix is O(m^2 k)).
Array permute_rows(const Array& x, const Array& permutation, bool inverse = false);

// ---- rules of the primitives whose kernels take leading dimensions as a batch ----

/// The number of problems in x: the product of its dimensions before the last `matrix_dims`.
int64_t batch_size(const Aval& x, int64_t matrix_dims);
/// Batching: every operand's batch dimension to the front (unbatched operands broadcast);
/// every output batched there.
Batched batch_leading(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                      const BatchAxis& axis, const Params& p);
/// Batching of a solve whose only batched operand is its last, the right-hand sides b
/// (..., m, k), batched at `dim`: the batch joins b's columns (`into_columns`, as a minor
/// index) or its rows (as a major index), so one solve covers the whole batch.
Batched batch_into_rhs(const ir::Primitive& self, std::span<const Array> ins, int64_t dim, bool into_columns,
                       const Params& p);
/// SPMD: the first `nb` dimensions of every operand and result are shared batch dimensions
/// (pass-through factors); the others stay whole.
ir::ShardingRule leading_batch_rule(std::span<const Aval> ins, std::span<const Aval> outs, int64_t nb);
/// leading_batch_rule with the batch dimensions those before the first operand's two matrix
/// dimensions: matrix and vector dimensions stay whole.
ir::ShardingRule batch_sharding_rule(std::span<const Aval> ins, std::span<const Aval> outs, const Params&);

}  // namespace tessel::ops
