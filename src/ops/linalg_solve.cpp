// jax.numpy.linalg's and jax.scipy.linalg's factorizations and solves, composed from the
// primitives of linalg_factor.cpp: cholesky, qr, svd, eigh, solve (LU with JAX's
// linear-solve derivative), inv, det (JAX's cofactor-solve derivative) and slogdet
// (d logabsdet = trace(a^-1 da)); scipy's solve_triangular, cho_factor/cho_solve, lu,
// lu_factor/lu_solve, qr and svd.
#include "ops/linalg_factor.h"
#include "ops/rule_util.h"
#include "tessel/linalg.h"
#include "tessel/transforms.h"

namespace tessel::ops {
namespace {

using lax::linalg::triangular_solve;

/// a converted to a LAPACK dtype and checked to be a batch of (square) matrices.
Array prepare(const std::string& op, const Array& a, bool square) {
  const Array x = to_lapack_dtype(a);
  check_matrices(op, x.aval(), square);
  return x;
}

/// b as a batch of right-hand sides for matrices a (..., n, n): a vector (n,) becomes a
/// column; batch dimensions of both broadcast. Returns (a, b, was_vector).
std::tuple<Array, Array, bool> solve_operands(const std::string& op, const Array& a, const Array& b_in,
                                              bool vector_only_1d) {
  const PromotedType t = result_type({a, b_in});
  Array x = prepare(op, convert(a, t.dtype), true);
  Array b = convert(b_in, x.dtype());
  const int64_t n = x.dim(-1);
  // jnp.linalg.solve takes only a 1-D b as a vector; scipy's solvers also (..., n) when
  // a is 2-D (b.ndim == a.ndim - 1).
  const bool vec = b.ndim() == 1 || (!vector_only_1d && b.ndim() == x.ndim() - 1);
  if (b.ndim() == 0 || (vec ? b.dim(-1) : b.dim(-2)) != n)
    throw ShapeError(op + ": b of shape " + shape_to_string(b_in.shape()) + " does not match a of shape " +
                     shape_to_string(a.shape()) + "; b must be (" + std::to_string(n) + ",) or (..., " +
                     std::to_string(n) + ", k)");
  if (vec) b = expand_dims(b, {b.ndim()});
  const Shape ab = batch_shape(x.shape(), 2), bb = batch_shape(b.shape(), 2);
  Shape batch;
  try {
    batch = tessel::broadcast_shapes({ab, bb});
  } catch (const ShapeError&) {
    throw ShapeError(op + ": the batch dimensions of a " + shape_to_string(a.shape()) + " and b " +
                     shape_to_string(b_in.shape()) + " do not broadcast");
  }
  Shape as = batch, bs = batch;
  as.insert(as.end(), {n, n});
  bs.insert(bs.end(), {n, b.dim(-1)});
  return {broadcast_to(x, as), broadcast_to(b, bs), vec};
}

Array squeeze_last(const Array& x) { return squeeze(x, Axes{x.ndim() - 1}); }

Array lu_solve_of(const lax::linalg::LuResult& f, const Array& b) { return lu_solve_matrices(f.lu, f.permutation, b, 0); }

// solve(a, b) with the derivative of a linear solve (JAX's custom_linear_solve):
// dx = a^-1 (db - da x), reusing one LU factorization for both.
const auto solve_matrices = custom_jvp(
    [](const Array& a, const Array& b) { return lu_solve_of(lax::linalg::lu(a), b); },
    [](const std::tuple<Array, Array>& p, const std::tuple<Array, Array>& t) {
      const auto& [a, b] = p;
      const auto& [da, db] = t;
      const auto f = lax::linalg::lu(a);
      const Array x = lu_solve_of(f, b);
      return std::make_pair(x, lu_solve_of(f, db - matmul(da, x)));
    });

/// Sign of the row permutation of LU pivots (+1 / -1) in dtype dt, per matrix.
Array pivot_sign(const Array& pivots, DType dt) {
  const int64_t k = pivots.dim(-1);
  const Array swaps = sum(not_equal(pivots, broadcast_to(iota(DType::int32, {k}, 0), pivots.shape())).astype(DType::int32), {-1});
  const Array odd = equal(swaps % Array(int32_t(2)), Array(int32_t(1)));
  return where(odd, Array(-1.0).astype(dt), Array(1.0).astype(dt));
}

std::pair<Array, Array> slogdet_lu(const Array& a) {
  const DType dt = a.dtype();
  const auto f = lax::linalg::lu(a);
  const Array diag = matrix_diagonal(f.lu);
  const Array singular = any(equal(diag, zeros_like(diag)), {-1});
  Array sign = pivot_sign(f.pivots, dt);
  if (is_complex(dt)) {
    sign = sign * prod(diag / abs(diag).astype(dt), {-1});
  } else {
    const Array negatives = sum(less(diag, zeros_like(diag)).astype(DType::int32), {-1});
    sign = where(equal(negatives % Array(int32_t(2)), Array(int32_t(1))), -sign, sign);
  }
  const DType rt = real_dtype(dt);
  const Array logabs = sum(log(abs(diag)), {-1});
  sign = where(singular, zeros_like(sign), sign);
  return {sign, where(singular, full_like(logabs, Scalar(-std::numeric_limits<double>::infinity())), logabs.astype(rt))};
}

// d logabsdet = Re trace(a^-1 da); for complex a the sign turns by i Im trace(a^-1 da).
// (Rules solve with lu_solve_of, not solve_matrices: a custom_jvp function applied to a
// tangent would have to be transposed, which custom_jvp_call cannot.)
const auto slogdet_fn = custom_jvp([](const Array& a) { return slogdet_lu(a); },
                                   [](const std::tuple<Array>& p, const std::tuple<Array>& t) {
                                     const Array& a = std::get<0>(p);
                                     const auto [sign, logabs] = slogdet_lu(a);
                                     Array d = trace(lu_solve_of(lax::linalg::lu(a), std::get<0>(t)), 0, -2, -1);
                                     Array dsign = zeros_like(sign);
                                     if (is_complex(a.dtype())) {
                                       dsign = (d - real(d).astype(d.dtype())) * sign;
                                       d = real(d);
                                     }
                                     return std::make_pair(std::make_pair(sign, logabs), std::make_pair(dsign, d));
                                   });

/// det(a) and adj(a) b (= det(a) a^-1 b for invertible a), finite for singular a: JAX's
/// _cofactor_solve. The last diagonal entry of U is replaced by 1 / (product of the others)
/// so that a rank n-1 matrix still solves, and matrices of lower rank give zeros.
std::pair<Array, Array> cofactor_solve(const Array& a, const Array& b) {
  const int64_t n = a.dim(-1);
  if (n == 1) return {squeeze(a, Axes{a.ndim() - 2, a.ndim() - 1}), b};
  const DType dt = a.dtype();
  const auto f = lax::linalg::lu(a);
  const Array diag = matrix_diagonal(f.lu);
  const Array partial_det = cumprod(diag, -1) * expand_dims(pivot_sign(f.pivots, dt), {diag.ndim() - 1});
  const Array last_but_one = slice_in_dim(partial_det, n - 2, n - 1, 1, -1);  // (..., 1)
  const Array corner = expand_dims(reciprocal(last_but_one), {last_but_one.ndim()});  // (..., 1, 1)
  const Array at_corner = logical_and(equal(iota(DType::int32, {n, n}, 0), Array(int32_t(n - 1))),
                                      equal(iota(DType::int32, {n, n}, 1), Array(int32_t(n - 1))));
  const Array lu = where(broadcast_to(at_corner, f.lu.shape()), broadcast_to(corner, f.lu.shape()), f.lu);
  const Array det = squeeze(slice_in_dim(partial_det, n - 1, n, 1, -1), Axes{partial_det.ndim() - 1});
  // Matrices whose (modified) U is still singular have rank < n - 1: their adjugate is 0.
  Shape ones_shape = b.shape();
  ones_shape.pop_back();
  const Array probe = triangular_solve(lu, expand_dims(ones(ones_shape, dt), {int64_t(ones_shape.size())}),
                                       {.left_side = true, .lower = false});
  const Array bad = any(logical_or(isnan(probe), isinf(probe)), {-2, -1});
  const Array bad_m = broadcast_to(expand_dims(bad, {bad.ndim(), bad.ndim() + 1}), b.shape());
  Array x = where(bad_m, zeros_like(b), b);
  x = permute_rows(x, f.permutation);
  x = triangular_solve(lu, x, {.left_side = true, .lower = true, .unit_diagonal = true});
  const Array scale = expand_dims(det, {det.ndim(), det.ndim() + 1});
  x = concatenate({slice_in_dim(x, 0, n - 1, 1, -2) * scale, slice_in_dim(x, n - 1, n, 1, -2)}, -2);
  x = triangular_solve(lu, x, {.left_side = true, .lower = false});
  return {det, where(bad_m, zeros_like(x), x)};
}

const auto det_lu = custom_jvp(
    [](const Array& a) {
      auto [sign, logabs] = slogdet_lu(a);
      return sign * exp(logabs).astype(sign.dtype());
    },
    [](const std::tuple<Array>& p, const std::tuple<Array>& t) {
      auto [y, z] = cofactor_solve(std::get<0>(p), std::get<0>(t));
      return std::make_pair(y, trace(z, 0, -2, -1));
    });

}  // namespace
}  // namespace tessel::ops

namespace tessel::linalg {

Array cholesky(const Array& a, bool upper, bool symmetrize_input) {
  const Array l = lax::linalg::cholesky(ops::prepare("linalg.cholesky", a, true), symmetrize_input);
  return upper ? ops::matrix_adjoint(l) : l;
}

QrResult qr(const Array& a, const std::string& mode) {
  const Array x = ops::prepare("linalg.qr", a, false);
  if (mode == "reduced") return lax::linalg::qr(x, false);
  if (mode == "complete") return lax::linalg::qr(x, true);
  if (mode == "r") return {Array(), lax::linalg::qr(x, false).r};
  if (mode == "raw") {
    const auto [h, taus] = lax::linalg::geqrf(x);
    return {ops::matrix_transpose(h), taus};
  }
  throw ValueError("linalg.qr: unknown mode \"" + mode + "\"; expected \"reduced\", \"complete\", \"r\" or \"raw\"");
}

SvdResult svd(const Array& a, bool full_matrices, bool compute_uv, bool hermitian) {
  // JAX takes the SVD of a Hermitian matrix from eigh; tessel computes the same
  // factorization with gesdd (`hermitian` only adds the squareness check).
  return lax::linalg::svd(ops::prepare("linalg.svd", a, hermitian), full_matrices, compute_uv);
}

Array svdvals(const Array& a) { return lax::linalg::svd(ops::prepare("linalg.svdvals", a, false), false, false).s; }

/// The lower flag of a UPLO string.
bool uplo_lower(const std::string& op, const std::string& uplo) {
  if (uplo == "L") return true;
  if (uplo == "U") return false;
  throw ValueError(op + ": UPLO must be \"L\" or \"U\", got \"" + uplo + "\"");
}

EighResult eigh(const Array& a, const std::string& UPLO, bool symmetrize_input) {
  const auto [v, w] = lax::linalg::eigh(ops::prepare("linalg.eigh", a, true),
                                        {.lower = uplo_lower("linalg.eigh", UPLO), .symmetrize_input = symmetrize_input});
  return {w, v};
}

Array eigvalsh(const Array& a, const std::string& UPLO, bool symmetrize_input) {
  return eigh(a, UPLO, symmetrize_input).eigenvalues;
}

Array solve(const Array& a, const Array& b) {
  auto [x, y, vec] = ops::solve_operands("linalg.solve", a, b, /*vector_only_1d=*/true);
  const Array r = ops::solve_matrices(x, y);
  return vec ? ops::squeeze_last(r) : r;
}

Array inv(const Array& a) {
  const Array x = ops::prepare("linalg.inv", a, true);
  return ops::solve_matrices(x, ops::identity_like(x, x.dim(-1)));
}

Array det(const Array& a) {
  const Array x = ops::prepare("linalg.det", a, true);
  return ops::det_lu(x);
}

SlogdetResult slogdet(const Array& a) {
  const auto [sign, logabs] = ops::slogdet_fn(ops::prepare("linalg.slogdet", a, true));
  return {sign, logabs};
}

}  // namespace tessel::linalg

namespace tessel::scipy::linalg {

Array solve_triangular(const Array& a, const Array& b, int trans, bool lower, bool unit_diagonal) {
  if (trans < 0 || trans > 2)
    throw ValueError("scipy.linalg.solve_triangular: trans must be 0 (a), 1 (a^T) or 2 (a^H), got " +
                     std::to_string(trans));
  auto [x, y, vec] = ops::solve_operands("scipy.linalg.solve_triangular", a, b, /*vector_only_1d=*/false);
  const Array r = lax::linalg::triangular_solve(x, y, {.left_side = true, .lower = lower, .transpose_a = trans != 0,
                                                       .conjugate_a = trans == 2, .unit_diagonal = unit_diagonal});
  return vec ? ops::squeeze_last(r) : r;
}

// As JAX's, the factor reads one triangle of a (lower: the lower one) and is not symmetrized,
// so derivatives treat the tangent of a as given.
ChoFactor cho_factor(const Array& a, bool lower) {
  const Array x = ops::prepare("scipy.linalg.cho_factor", a, true);
  const Array l = lax::linalg::cholesky(lower ? x : ops::matrix_adjoint(x), /*symmetrize_input=*/false);
  return {lower ? l : ops::matrix_adjoint(l), lower};
}

Array cho_solve(const ChoFactor& f, const Array& b) {
  auto [c, y, vec] = ops::solve_operands("scipy.linalg.cho_solve", f.c, b, /*vector_only_1d=*/false);
  // a = L L^H: solve L z = b, then L^H x = z (with U = L^H for an upper factor).
  const bool lo = f.lower;
  const Array z = lax::linalg::triangular_solve(c, y, {.left_side = true, .lower = lo, .transpose_a = !lo,
                                                       .conjugate_a = !lo});
  const Array r = lax::linalg::triangular_solve(c, z, {.left_side = true, .lower = lo, .transpose_a = lo,
                                                       .conjugate_a = lo});
  return vec ? ops::squeeze_last(r) : r;
}

PluResult lu(const Array& a) {
  const Array x = ops::prepare("scipy.linalg.lu", a, false);
  const auto f = lax::linalg::lu(x);
  const int64_t m = x.dim(-2), n = x.dim(-1), k = std::min(m, n);
  const Array l = ops::tril(slice_in_dim(f.lu, 0, k, 1, x.ndim() - 1), -1) + eye(m, k, 0, x.dtype());
  const Array u = ops::triu(slice_in_dim(f.lu, 0, k, 1, x.ndim() - 2));
  // P A = L U with (P A) = A[permutation], so A = P^T L U.
  // p is real, as JAX's (float32 for complex64 input).
  return {ops::matrix_transpose(ops::permutation_matrix(f.permutation, real_dtype(x.dtype()))), l, u};
}

LuFactor lu_factor(const Array& a) {
  const auto f = lax::linalg::lu(ops::prepare("scipy.linalg.lu_factor", a, false));
  return {f.lu, f.pivots};
}

Array lu_solve(const LuFactor& f, const Array& b, int trans) {
  if (trans < 0 || trans > 2)
    throw ValueError("scipy.linalg.lu_solve: trans must be 0 (a), 1 (a^T) or 2 (a^H), got " + std::to_string(trans));
  auto [lu, y, vec] = ops::solve_operands("scipy.linalg.lu_solve", f.lu, b, /*vector_only_1d=*/false);
  const int64_t n = lu.dim(-1);
  if (f.piv.ndim() == 0 || f.piv.dim(-1) != n || !is_integer(f.piv.dtype()))
    throw ShapeError("scipy.linalg.lu_solve: piv must be integer pivots (..., " + std::to_string(n) +
                     ") from lu_factor, got " + dtype_name(f.piv.dtype()) + shape_to_string(f.piv.shape()));
  const Array perm = lax::linalg::lu_pivots_to_permutation(f.piv.astype(DType::int32), n);
  const Array r = ops::lu_solve_matrices(lu, broadcast_to(perm, ops::batch_shape(lu.shape(), 1)), y,
                                         trans);
  return vec ? ops::squeeze_last(r) : r;
}

lax::linalg::QrResult qr(const Array& a, const std::string& mode) {
  if (mode == "full") return tessel::linalg::qr(a, "complete");
  if (mode == "economic") return tessel::linalg::qr(a, "reduced");
  if (mode == "r") return {Array(), tessel::linalg::qr(a, "complete").r};
  throw ValueError("scipy.linalg.qr: unknown mode \"" + mode + "\"; expected \"full\", \"economic\" or \"r\"");
}

SvdResult svd(const Array& a, bool full_matrices, bool compute_uv) {
  return tessel::linalg::svd(a, full_matrices, compute_uv);
}

}  // namespace tessel::scipy::linalg
