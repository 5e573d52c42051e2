// The jnp.linalg functions built on the singular value decomposition and on solves: pinv
// (with JAX's derivative of the pseudo-inverse), matrix_rank, cond, lstsq, tensorsolve and
// tensorinv, and jax.scipy.linalg.polar. The factorizations come from linalg_factor.cpp.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "ops/linalg_composed.h"
#include "ops/linalg_factor.h"
#include "tessel/linalg.h"
#include "tessel/transforms.h"

namespace tessel::ops {
namespace {

/// s[..., 0:1]: the largest singular value of each matrix, keeping its axis.
Array largest(const Array& s) { return slice_in_dim(s, 0, 1, 1, s.ndim() - 1); }

/// A tolerance of shape (...) (or a scalar) laid out against singular values (..., k): as
/// (..., 1), its leading axes filled with size 1 up to s's rank.
Array against(const std::string& op, const Array& tol, const Array& s) {
  if (tol.ndim() > s.ndim() - 1)
    throw ShapeError(op + ": the tolerance must be a scalar or have the batch shape " +
                     shape_to_string(batch_shape(s.shape(), 1)) + " of the matrices, got shape " +
                     shape_to_string(tol.shape()));
  Shape shape(size_t(s.ndim() - 1 - tol.ndim()), 1);
  shape.insert(shape.end(), tol.shape().begin(), tol.shape().end());
  shape.push_back(1);
  return reshape(tol, shape);
}

/// The pseudo-inverse of inexact a (..., m, n) through the SVD of conj(a): singular values at
/// or below rtol * the largest count as zero (their reciprocal as 0).
Array pinv_svd(const Array& a, const Array& rtol, bool hermitian) {
  // A `hermitian` matrix is read as (a + a^H) / 2, as JAX's svd (through eigh) reads it.
  const auto [u, s, vh] = linalg::svd(conj(hermitian ? symmetrize(a) : a), false, true, hermitian);
  const Array cutoff = multiply(against("linalg.pinv", convert(rtol, s.dtype()), s), largest(s));
  const Array kept = convert(where(greater(s, cutoff), s, Array(std::numeric_limits<double>::infinity())), u.dtype());
  return matmul(matrix_transpose(vh), divide(matrix_transpose(u), expand_dims(kept, {kept.ndim()})));
}

/// d pinv(a)[a_dot] (Golub and Pereyra, 1973), grouped by which side is larger as JAX does.
Array pinv_tangent(const Array& a, const Array& p, const Array& a_dot) {
  const Array ah_dot = matrix_adjoint(a_dot), ph = matrix_adjoint(p);
  if (a.dim(-2) >= a.dim(-1)) {
    const Array s = matmul(matmul(p, ph), ah_dot), t = matmul(matmul(ah_dot, ph), p);
    // -(p a') p + s - (s a) p + t - (p a) t
    return add(subtract(add(negative(matmul(matmul(p, a_dot), p)), s), matmul(matmul(s, a), p)),
               subtract(t, matmul(matmul(p, a), t)));
  }
  const Array s = matmul(p, matmul(ph, ah_dot)), t = matmul(ah_dot, matmul(ph, p));
  // -p (a' p) + s - s (a p) + t - p (a t)
  return add(subtract(add(negative(matmul(p, matmul(a_dot, p))), s), matmul(s, matmul(a, p))),
             subtract(t, matmul(p, matmul(a, t))));
}

}  // namespace
}  // namespace tessel::ops

namespace tessel::linalg {

Array pinv(const Array& a_in, std::optional<Array> rtol_in, bool hermitian) {
  const std::string op = "linalg.pinv";
  ops::check_matrix_shape(op, a_in.shape(), false);
  const Array a = ops::to_inexact(a_in);
  const int64_t m = a.dim(-2), n = a.dim(-1);
  if (m == 0 || n == 0) {
    Shape s = ops::batch_shape(a.shape(), 2);
    s.push_back(n);
    s.push_back(m);
    return zeros(s, a.dtype());
  }
  const DType real = real_dtype(a.dtype());
  const Array rtol = rtol_in ? astype(*rtol_in, real)
                             : Array(Scalar(10.0 * double(std::max(m, n)) * ops::eps_of(real), real));
  // The derivative is JAX's closed form (the SVD's own is ill-defined for repeated singular
  // values); rtol has none.
  auto f = [hermitian](const Array& x, const Array& tol) { return ops::pinv_svd(x, tol, hermitian); };
  auto rule = [hermitian](const std::tuple<Array, Array>& primals, const std::tuple<Array, Array>& tangents) {
    const auto& [x, tol] = primals;
    const Array p = ops::pinv_svd(x, tol, hermitian);
    Array xs = x, dx = std::get<0>(tangents);
    if (hermitian) xs = ops::symmetrize(xs), dx = ops::symmetrize(dx);  // as svd(hermitian) reads it
    return std::pair<Array, Array>(p, ops::pinv_tangent(xs, p, dx));
  };
  return custom_jvp(f, rule)(a, rtol);
}

Array matrix_rank(const Array& m_in, std::optional<Array> tol, bool hermitian) {
  const Array m = ops::to_inexact(m_in);
  if (m.ndim() < 2) return astype(any(not_equal(m, Array(0))), DType::int32);
  const Array s = svd(hermitian ? ops::symmetrize(m) : m, false, false, hermitian).s;
  Array threshold;
  if (tol) {
    threshold = ops::against("linalg.matrix_rank", astype(*tol, s.dtype()), s);
  } else {
    const double scale = double(std::max(m.dim(-1), m.dim(-2))) * ops::eps_of(s.dtype());
    threshold = s.dim(-1) == 0 ? zeros({1}, s.dtype()) : multiply(max(s, {-1}, true), Array(scale));
  }
  return astype(sum(astype(greater(s, threshold), DType::int32), {-1}), DType::int32);
}

Array cond(const Array& x_in, std::optional<NormOrd> p) {
  const std::string op = "linalg.cond";
  ops::check_matrix_shape(op, x_in.shape(), false);
  if (x_in.dim(-1) == 0 || x_in.dim(-2) == 0)
    throw ValueError(op + ": the matrices must not be empty, got shape " + shape_to_string(x_in.shape()));
  const Array x = ops::to_inexact(x_in);
  const bool two = !p || (p->value && *p->value == 2), minus_two = p && p->value && *p->value == -2;
  auto first = [](const Array& s) { return squeeze(slice_in_dim(s, 0, 1, 1, -1), Axes{s.ndim() - 1}); };
  auto last = [](const Array& s) { return squeeze(slice_in_dim(s, -1, s.dim(-1), 1, -1), Axes{s.ndim() - 1}); };
  if (two) {
    const Array s = svdvals(x);
    return divide(first(s), last(s));
  }
  Array r;
  if (minus_two) {
    const Array s = svdvals(x);
    r = divide(last(s), first(s));
  } else {
    if (x.dim(-1) != x.dim(-2))
      throw ShapeError(op + ": for p=" + p->to_string() + " the matrices must be square, got shape " +
                       shape_to_string(x.shape()));
    r = multiply(norm(x, p, std::vector<int64_t>{-2, -1}), norm(inv(x), p, std::vector<int64_t>{-2, -1}));
  }
  // A singular matrix gives NaN from inf * 0: report it as infinitely ill-conditioned, unless
  // the input itself held NaNs.
  const Array input_nan = any(isnan(x), {x.ndim() - 2, x.ndim() - 1});
  return where(logical_and(isnan(r), logical_not(input_nan)), Array(std::numeric_limits<double>::infinity()), r);
}

LstsqResult lstsq(const Array& a_in, const Array& b_in, std::optional<double> rcond) {
  const std::string op = "linalg.lstsq";
  ops::check_matrix_shape(op, a_in.shape(), false, "a");
  std::vector<Array> ab = ops::promote_all({ops::to_inexact(a_in), ops::to_inexact(b_in)});
  Array a = ab[0], b = ab[1];
  const bool vector = b.ndim() == a.ndim() - 1;
  if (!vector && b.ndim() != a.ndim())
    throw ShapeError(op + ": b must have a's rank (a batch of right-hand-side matrices) or one less (vectors), got "
                     "shapes " + shape_to_string(a_in.shape()) + " and " + shape_to_string(b_in.shape()));
  if (vector) b = expand_dims(b, {b.ndim()});
  const int64_t m = a.dim(-2), n = a.dim(-1);
  const Shape batch = ops::batch_shape(a.shape(), 2);
  if (b.dim(-2) != m || ops::batch_shape(b.shape(), 2) != batch)
    throw ShapeError(op + ": b must have a's " + std::to_string(m) + " rows and its batch dimensions, got shapes " +
                     shape_to_string(a_in.shape()) + " and " + shape_to_string(b_in.shape()));
  const DType real = real_dtype(a.dtype());
  const double eps = ops::eps_of(real);
  const double rc = !rcond ? eps * double(std::max(m, n)) : (*rcond < 0 ? eps : *rcond);
  LstsqResult r;
  Array x;
  if (a.size() == 0) {
    Shape s = batch;
    s.push_back(0);
    r.singular_values = zeros(s, real);
    r.rank = zeros(batch, DType::int32);
    s.back() = n;
    s.push_back(b.dim(-1));
    x = zeros(s, a.dtype());
  } else {
    const auto [u, s, vh] = svd(a, false, true);
    // Singular values below rcond * the largest count as zero: their reciprocal is 0.
    const Array mask = logical_and(greater(s, Array(0)), greater_equal(s, multiply(Array(Scalar(rc, real)), ops::largest(s))));
    const Array safe = astype(where(mask, s, Array(1)), a.dtype());
    const Array s_inv = where(mask, divide(Array(1), safe), Array(0));
    x = matmul(ops::matrix_adjoint(vh), multiply(expand_dims(s_inv, {s_inv.ndim()}), matmul(ops::matrix_adjoint(u), b)));
    r.rank = astype(sum(astype(mask, DType::int32), {-1}), DType::int32);
    r.singular_values = s;
  }
  // Residuals for every right-hand side, always (JAX's choice, so that shapes are static).
  const Array resid = vector_norm(subtract(b, matmul(a, x)), 2, std::vector<int64_t>{-2});
  r.residuals = multiply(resid, resid);
  r.solution = vector ? squeeze(x, Axes{x.ndim() - 1}) : x;
  return r;
}

Array tensorinv(const Array& a, int64_t ind) {
  const std::string op = "linalg.tensorinv";
  if (ind <= 0) throw ValueError(op + ": ind must be a positive integer, got " + std::to_string(ind));
  if (ind > a.ndim())
    throw ShapeError(op + ": ind=" + std::to_string(ind) + " exceeds the rank of a, shape " +
                     shape_to_string(a.shape()));
  const Shape& s = a.shape();
  const int64_t rows = shape_size(Shape(s.begin(), s.begin() + ind)), cols = shape_size(Shape(s.begin() + ind, s.end()));
  if (rows != cols)
    throw ShapeError(op + ": the first ind=" + std::to_string(ind) + " dimensions of a must hold as many elements (" +
                     std::to_string(rows) + ") as the others (" + std::to_string(cols) + "), got shape " +
                     shape_to_string(s));
  Shape out(s.begin() + ind, s.end());
  out.insert(out.end(), s.begin(), s.begin() + ind);
  return reshape(inv(reshape(a, {rows, cols})), out);
}

Array tensorsolve(const Array& a_in, const Array& b, std::optional<std::vector<int64_t>> axes) {
  const std::string op = "linalg.tensorsolve";
  Array a = a_in;
  if (axes) {
    // The named axes of a move to the end, in order.
    Axes moved;
    for (auto ax : *axes) moved.push_back(ops::canonicalize_axis(op, ax, a.ndim()));
    Axes perm;
    for (int64_t d = 0; d < a.ndim(); ++d)
      if (std::find(moved.begin(), moved.end(), d) == moved.end()) perm.push_back(d);
    perm.insert(perm.end(), moved.begin(), moved.end());
    a = transpose(a, perm);
  }
  const Shape& s = a.shape();
  if (b.ndim() > a.ndim() || Shape(s.begin(), s.begin() + b.ndim()) != b.shape())
    throw ShapeError(op + ": the leading dimensions of a must equal b's shape, got shapes " +
                     shape_to_string(a.shape()) + " and " + shape_to_string(b.shape()));
  const Shape out(s.begin() + b.ndim(), s.end());
  if (b.size() != shape_size(out))
    throw ShapeError(op + ": the trailing dimensions of a (" + shape_to_string(out) + ") must hold as many elements as b (" +
                     shape_to_string(b.shape()) + ") for a square system, got a of shape " + shape_to_string(a.shape()));
  return reshape(solve(reshape(a, {b.size(), b.size()}), reshape(b, {b.size()})), out);
}

}  // namespace tessel::linalg

namespace tessel::scipy::linalg {

PolarResult polar(const Array& a_in, const std::string& side, const std::string& method) {
  const std::string op = "scipy.linalg.polar";
  if (side != "right" && side != "left")
    throw ValueError(op + ": side must be \"right\" or \"left\", got \"" + side + "\"");
  if (method != "svd" && method != "qdwh")
    throw ValueError(op + ": unknown method \"" + method + "\"; use \"svd\" or \"qdwh\"");
  ops::check_matrix_shape(op, a_in.shape(), false);
  const Array a = ops::to_inexact(a_in);
  const auto [u, s, vh] = tessel::linalg::svd(a, false, true);
  const Array sc = expand_dims(astype(s, u.dtype()), {s.ndim() - 1});  // (..., 1, k): scales columns
  PolarResult r;
  r.unitary = matmul(u, vh);
  r.posdef = side == "right" ? matmul(multiply(ops::matrix_adjoint(vh), sc), vh) : matmul(multiply(u, sc), ops::matrix_adjoint(u));
  return r;
}

}  // namespace tessel::scipy::linalg
