// The parts of jnp.linalg and jax.scipy.linalg that are compositions: norms, products
// (cross, multi_dot, vecdot, outer), diagonals and traces, matrix powers, and structured
// matrices (block_diag, toeplitz, hankel, circulant). Each reads like its formula over
// primitives, so it inherits jit, grad and vmap from them; the factorizations they lean on
// (svd for the spectral norms, inv for negative powers) come from linalg_factor.cpp.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <sstream>

#include "ops/elementwise.h"
#include "ops/linalg.h"
#include "ops/linalg_composed.h"
#include "ops/linalg_factor.h"
#include "ops/op_util.h"
#include "tessel/linalg.h"

namespace tessel::ops {

Array to_inexact(const Array& x) {
  const DType d = strong_dtype(x);
  return convert(x, is_inexact(d) ? d : default_float);
}

std::vector<Array> promote_all(std::vector<Array> xs) {
  const PromotedType t = result_type(xs);
  for (Array& x : xs) x = convert(x, t.dtype, t.weak);
  return xs;
}

double eps_of(DType d) {
  return real_dtype(d) == DType::float64 ? std::numeric_limits<double>::epsilon()
                                         : double(std::numeric_limits<float>::epsilon());
}

namespace {

using linalg::NormOrd;

/// |x|^2 as a real array (x * conj(x) without the zero imaginary part).
Array abs_squared(const Array& x) { return is_complex(x.dtype()) ? real(multiply(x, conj(x))) : multiply(x, x); }

/// The elements of `axes` (canonical) multiplied: how many values a reduction over them sees.
int64_t reduced_size(const Shape& s, const Axes& axes) {
  int64_t n = 1;
  for (auto a : axes) n *= s[size_t(a)];
  return n;
}

/// The shape a reduction over `axes` (canonical) leaves.
Shape reduced_shape(const Shape& s, const Axes& axes, bool keepdims) {
  Shape out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (std::find(axes.begin(), axes.end(), int64_t(i)) == axes.end()) out.push_back(s[i]);
    else if (keepdims) out.push_back(1);
  }
  return out;
}

/// jnp's sum over `axes` (canonical; empty reduces nothing, where tessel::sum's empty list
/// means all axes).
Array reduce_sum(const Array& x, const Axes& axes, bool keepdims) { return axes.empty() ? x : sum(x, axes, keepdims); }

/// max over `axes` with 0 as the initial value, as jnp's amax(..., initial=0) (for values
/// known to be >= 0): zeros when the reduction sees no values.
Array max_or_zero(const Array& x, const Axes& axes, bool keepdims) {
  if (axes.empty()) return x;
  if (reduced_size(x.shape(), axes) == 0) return zeros(reduced_shape(x.shape(), axes, keepdims), x.dtype());
  return max(x, axes, keepdims);
}

/// min over `axes`, which must see at least one value (min has no identity).
Array min_nonempty(const std::string& op, const Array& x, const Axes& axes, bool keepdims, const NormOrd& ord) {
  if (axes.empty()) return x;
  if (reduced_size(x.shape(), axes) == 0)
    throw ValueError(op + ": the norm of order " + ord.to_string() + " of an empty array (shape " +
                     shape_to_string(x.shape()) + ") is undefined (a minimum over no values); use a non-empty array");
  return min(x, axes, keepdims);
}

bool is_number(const NormOrd& ord, double v) { return ord.value && *ord.value == v; }

/// The vector norm of inexact x over canonical `axes`.
Array vector_norm_of(const std::string& op, const Array& x, const NormOrd& ord, const Axes& axes, bool keepdims) {
  if (!ord.value)
    throw ValueError(op + ": invalid order " + ord.to_string() +
                     " for a vector norm; use a number (2, 1, 0, -1, linalg::inf, -linalg::inf, any p)");
  const double p = *ord.value;
  if (std::isnan(p)) throw ValueError(op + ": the order of a vector norm must not be NaN");
  if (p == 2) return sqrt(reduce_sum(abs_squared(x), axes, keepdims));
  if (p == 1) return reduce_sum(abs(x), axes, keepdims);
  if (std::isinf(p)) return p > 0 ? max_or_zero(abs(x), axes, keepdims) : min_nonempty(op, abs(x), axes, keepdims, ord);
  if (p == 0) return reduce_sum(convert(not_equal(x, Array(0)), real_dtype(x.dtype())), axes, keepdims);
  // An integer order multiplies (integer_pow, as XLA simplifies JAX's pow by a constant);
  // others need pow.
  const Array a = abs(x);
  const bool whole = p == std::round(p) && std::abs(p) <= 64;
  const Array powered = whole ? bind1(integer_pow_p, {a}, Params{{"y", int64_t(p)}}) : pow(a, Array(p));
  return pow(reduce_sum(powered, axes, keepdims), Array(1.0 / p));
}

/// The singular values of the matrices of x in axes (row, col), those axes removed.
Array singular_values(const Array& x, int64_t row, int64_t col) {
  Axes perm;
  for (int64_t d = 0; d < x.ndim(); ++d)
    if (d != row && d != col) perm.push_back(d);
  perm.push_back(row);
  perm.push_back(col);
  return linalg::svdvals(transpose(x, perm));
}

/// The matrix norm of inexact x over the distinct canonical axes (row, col).
Array matrix_norm_of(const std::string& op, const Array& x, const std::optional<NormOrd>& ord_in, int64_t row,
                     int64_t col, bool keepdims) {
  const NormOrd ord = ord_in.value_or(NormOrd("fro"));
  if (ord.name == "fro" || ord.name == "f") return sqrt(sum(abs_squared(x), {row, col}, keepdims));
  // Orders 1 and inf: the largest absolute column (1) or row (inf) sum; -1 and -inf the
  // smallest. The sums run over the other axis, which moves down one when it is removed.
  if (is_number(ord, 1) || is_number(ord, -1) || is_number(ord, linalg::inf) || is_number(ord, -linalg::inf)) {
    const bool columns = std::abs(*ord.value) == 1;
    const int64_t summed = columns ? row : col;
    int64_t kept = columns ? col : row;
    if (!keepdims && kept > summed) --kept;
    const Array sums = sum(abs(x), {summed}, keepdims);
    return *ord.value > 0 ? max_or_zero(sums, {kept}, keepdims) : min_nonempty(op, sums, {kept}, keepdims, ord);
  }
  if (ord.name == "nuc" || is_number(ord, 2) || is_number(ord, -2)) {
    const Array s = singular_values(x, row, col);
    Array y;
    if (ord.name == "nuc") y = sum(s, {-1});
    else if (*ord.value > 0) y = max_or_zero(s, {s.ndim() - 1}, false);
    else y = min_nonempty(op, s, {s.ndim() - 1}, false, ord);
    return keepdims ? expand_dims(y, {std::min(row, col), std::max(row, col)}) : y;
  }
  throw ValueError(op + ": invalid order " + ord.to_string() +
                   " for a matrix norm; use \"fro\", \"nuc\", 1, -1, 2, -2, linalg::inf or -linalg::inf");
}

/// Component i of the vectors in the last axis of x (that axis removed).
Array component(const Array& x, int64_t i) {
  Shape s = x.shape();
  s.pop_back();
  return reshape(slice_in_dim(x, i, i + 1, 1, x.ndim() - 1), s);
}

/// x with its leading axes (all but the last) broadcast to `batch`.
Array broadcast_batch(const Array& x, const Shape& batch) { return broadcast_to(x, with_batch(batch, {x.dim(-1)})); }

/// ShapeError unless a and b are arrays of vectors (at least 1-D): cross's and vecdot's inputs.
void check_vector_arrays(const std::string& op, const Array& a, const Array& b) {
  if (a.ndim() == 0 || b.ndim() == 0)
    throw ShapeError(op + ": the arguments must be arrays of vectors (at least 1-D), got shapes " +
                     shape_to_string(a.shape()) + " and " + shape_to_string(b.shape()));
}

/// 0-D arrays as 1-D (jnp.atleast_1d).
Array atleast_1d(const Array& x) { return x.ndim() == 0 ? reshape(x, {1}) : x; }

/// Two 1-D vectors with batch axes broadcast together and one dtype (the inputs of the
/// structured-matrix constructors).
std::pair<Array, Array> vector_pair(const std::string& op, const Array& a, const Array& b) {
  std::vector<Array> ab = promote_all({a, b});
  const Shape batch = broadcast_shapes(op, {batch_shape(ab[0].shape(), 1), batch_shape(ab[1].shape(), 1)});
  return {broadcast_batch(ab[0], batch), broadcast_batch(ab[1], batch)};
}

/// The (n, m) matrices of elements v[..., index(i, j)]: a gather along the last axis of v
/// with an index matrix built from iotas (no host constant of n * m entries).
Array gather_matrix(const Array& v, int64_t n, int64_t m, const std::function<Array(Array, Array)>& index) {
  const Array i = iota(DType::int32, {n, m}, 0), j = iota(DType::int32, {n, m}, 1);
  return take(v, index(i, j), v.ndim() - 1, {.mode = "promise_in_bounds"});
}

/// Zeros of shape batch + (n, m) for the vectors c (..., k): the structured matrices with an
/// empty side.
Array empty_matrices(const Array& c, int64_t n, int64_t m) {
  return zeros(with_batch(batch_shape(c.shape(), 1), {n, m}), c.dtype());
}

/// The product of chain[i..j] in the order split[i][j] recorded.
Array chain_product(const std::vector<Array>& chain, const std::vector<std::vector<size_t>>& split, size_t i,
                    size_t j) {
  if (i == j) return chain[i];
  const size_t k = split[i][j];
  return matmul(chain_product(chain, split, i, k), chain_product(chain, split, k + 1, j));
}

}  // namespace
}  // namespace tessel::ops

namespace tessel::linalg {

std::string NormOrd::to_string() const {
  if (!value) return "'" + name + "'";
  if (std::isinf(*value)) return *value > 0 ? "inf" : "-inf";
  std::ostringstream s;
  s << *value;
  return s.str();
}

Array vector_norm(const Array& x_in, NormOrd ord, std::optional<std::vector<int64_t>> axis, bool keepdims) {
  const std::string op = "linalg.vector_norm";
  const Array x = ops::to_inexact(x_in);
  Axes axes;
  if (axis) axes = ops::canonicalize_axes(op, *axis, x.ndim(), false);
  else axes = ops::canonicalize_axes(op, {}, x.ndim(), true);
  return ops::vector_norm_of(op, x, ord, axes, keepdims);
}

Array matrix_norm(const Array& x, NormOrd ord, bool keepdims) {
  ops::check_matrix_shape("linalg.matrix_norm", x.shape(), false);
  const Array xi = ops::to_inexact(x);
  return ops::matrix_norm_of("linalg.matrix_norm", xi, ord, xi.ndim() - 2, xi.ndim() - 1, keepdims);
}

Array norm(const Array& x_in, std::optional<NormOrd> ord, std::optional<std::vector<int64_t>> axis, bool keepdims) {
  const std::string op = "linalg.norm";
  const Array x = ops::to_inexact(x_in);
  Axes axes;
  if (!axis) {
    // No axis and no order: the 2-norm of all elements, whatever the rank (as NumPy).
    if (!ord) return sqrt(sum(ops::abs_squared(x), {}, keepdims));
    for (int64_t d = 0; d < x.ndim(); ++d) axes.push_back(d);
  } else {
    for (auto a : *axis) axes.push_back(ops::canonicalize_axis(op, a, x.ndim()));
  }
  if (axes.size() == 1) return ops::vector_norm_of(op, x, ord.value_or(NormOrd(2)), axes, keepdims);
  if (axes.size() == 2) {
    if (axes[0] == axes[1])
      throw ValueError(op + ": the two axes of a matrix norm must differ, got axis " +
                       shape_to_string(*axis) + " for shape " + shape_to_string(x.shape()));
    return ops::matrix_norm_of(op, x, ord, axes[0], axes[1], keepdims);
  }
  throw ValueError(op + ": " + std::to_string(axes.size()) + " axes " + shape_to_string(axes) + " for shape " +
                   shape_to_string(x.shape()) + "; pass one axis for a vector norm or two for a matrix norm" +
                   (axis ? "" : " (or omit ord for the 2-norm of all elements)"));
}

Array cross(const Array& a_in, const Array& b_in, const CrossAxes& axes) {
  const std::string op = "cross";
  ops::check_vector_arrays(op, a_in, b_in);
  const int64_t axa = axes.axis.value_or(axes.axisa), axb = axes.axis.value_or(axes.axisb);
  const int64_t axc = axes.axis.value_or(axes.axisc);
  const Array a = moveaxis(a_in, ops::canonicalize_axis(op, axa, a_in.ndim()), -1);
  const Array b = moveaxis(b_in, ops::canonicalize_axis(op, axb, b_in.ndim()), -1);
  const int64_t na = a.dim(-1), nb = b.dim(-1);
  if ((na != 2 && na != 3) || (nb != 2 && nb != 3))
    throw ValueError(op + ": the vectors must have 2 or 3 components, got " + std::to_string(na) + " and " +
                     std::to_string(nb) + " (shapes " + shape_to_string(a_in.shape()) + " and " +
                     shape_to_string(b_in.shape()) + " along axes " + std::to_string(axa) + " and " +
                     std::to_string(axb) + ")");
  const Array a0 = ops::component(a, 0), a1 = ops::component(a, 1), b0 = ops::component(b, 0),
              b1 = ops::component(b, 1);
  if (na == 2 && nb == 2) return subtract(multiply(a0, b1), multiply(a1, b0));
  // A 2-vector counts as a 3-vector with z = 0.
  const Array a2 = na == 3 ? ops::component(a, 2) : zeros_like(a0);
  const Array b2 = nb == 3 ? ops::component(b, 2) : zeros_like(b0);
  std::vector<Array> c = ops::promote_all({
      subtract(multiply(a1, b2), multiply(a2, b1)),
      subtract(multiply(a2, b0), multiply(a0, b2)),
      subtract(multiply(a0, b1), multiply(a1, b0)),
  });
  const Shape shape = ops::broadcast_shapes(op, {c[0].shape(), c[1].shape(), c[2].shape()});
  for (Array& ci : c) ci = broadcast_to(ci, shape);
  const Array stacked = stack(c, 0);
  return moveaxis(stacked, 0, ops::canonicalize_axis(op, axc, stacked.ndim()));
}

Array cross(const Array& a, const Array& b, int64_t axis) {
  const std::string op = "linalg.cross";
  if (a.ndim() == 0 || b.ndim() == 0 || a.dim(ops::canonicalize_axis(op, axis, a.ndim())) != 3 ||
      b.dim(ops::canonicalize_axis(op, axis, b.ndim())) != 3)
    throw ValueError(op + ": both arguments must be (arrays of) 3-vectors along axis " + std::to_string(axis) +
                     ", got shapes " + shape_to_string(a.shape()) + " and " + shape_to_string(b.shape()) +
                     "; use cross(a, b, CrossAxes{...}) for 2-vectors");
  return cross(a, b, CrossAxes{.axis = axis});
}

Array multi_dot(const std::vector<Array>& arrays) {
  const std::string op = "linalg.multi_dot";
  const size_t n = arrays.size();
  if (n < 2) throw ValueError(op + ": needs at least two arrays, got " + std::to_string(n));
  std::string shapes;
  for (const Array& a : arrays) shapes += (shapes.empty() ? "" : ", ") + shape_to_string(a.shape());
  for (size_t i = 0; i < n; ++i) {
    const bool end = i == 0 || i + 1 == n;
    if (arrays[i].ndim() != 2 && !(end && arrays[i].ndim() == 1))
      throw ShapeError(op + ": the arrays must be 2-D, except the first and last, which may be 1-D; got shapes " +
                       shapes);
  }
  for (size_t i = 0; i + 1 < n; ++i)
    if (arrays[i].dim(-1) != arrays[i + 1].dim(0))
      throw ShapeError(op + ": the last axis of each array must match the first axis of the next; got shapes " +
                       shapes + " (arrays " + std::to_string(i) + " and " + std::to_string(i + 1) + ")");
  // 1-D ends become a row (first) and a column (last); their axes are dropped at the end.
  std::vector<Array> chain = ops::promote_all(arrays);
  const bool row = chain.front().ndim() == 1, col = chain.back().ndim() == 1;
  if (row) chain.front() = reshape(chain.front(), {1, chain.front().dim(0)});
  if (col) chain.back() = reshape(chain.back(), {chain.back().dim(0), 1});
  // The matrix-chain order: cost[i][j] is the fewest scalar products for chain[i..j].
  std::vector<int64_t> dims{chain[0].dim(0)};
  for (const Array& a : chain) dims.push_back(a.dim(1));
  std::vector<std::vector<double>> cost(n, std::vector<double>(n, 0));
  std::vector<std::vector<size_t>> split(n, std::vector<size_t>(n, 0));
  for (size_t len = 1; len < n; ++len)
    for (size_t i = 0; i + len < n; ++i) {
      const size_t j = i + len;
      cost[i][j] = std::numeric_limits<double>::infinity();
      for (size_t k = i; k < j; ++k) {
        const double c = cost[i][k] + cost[k + 1][j] + double(dims[i]) * double(dims[k + 1]) * double(dims[j + 1]);
        if (c < cost[i][j]) cost[i][j] = c, split[i][j] = k;
      }
    }
  Array r = ops::chain_product(chain, split, 0, n - 1);
  if (row && col) return reshape(r, {});
  if (row) return reshape(r, {r.dim(1)});
  if (col) return reshape(r, {r.dim(0)});
  return r;
}

Array diagonal(const Array& x, int64_t offset) {
  ops::check_matrix_shape("linalg.diagonal", x.shape(), false);
  return moveaxis(ops::diagonal_offset_front(x, offset, x.ndim() - 2, x.ndim() - 1), 0, -1);
}

Array matrix_transpose(const Array& x) {
  ops::check_matrix_shape("linalg.matrix_transpose", x.shape(), false);
  return ops::matrix_transpose(x);
}

Array vecdot(const Array& a_in, const Array& b_in, int64_t axis) {
  const std::string op = "linalg.vecdot";
  ops::check_vector_arrays(op, a_in, b_in);
  const int64_t axa = ops::canonicalize_axis(op, axis, a_in.ndim()), axb = ops::canonicalize_axis(op, axis, b_in.ndim());
  if (a_in.dim(axa) != b_in.dim(axb))
    throw ShapeError(op + ": the vectors along axis " + std::to_string(axis) + " differ in length for shapes " +
                     shape_to_string(a_in.shape()) + " and " + shape_to_string(b_in.shape()) + " (" +
                     std::to_string(a_in.dim(axa)) + " != " + std::to_string(b_in.dim(axb)) + ")");
  auto [a, b] = ops::vector_pair(op, moveaxis(a_in, axa, -1), moveaxis(b_in, axb, -1));
  if (is_complex(a.dtype())) a = conj(a);
  const int64_t nb = a.ndim() - 1;
  Axes batch(static_cast<size_t>(nb));
  std::iota(batch.begin(), batch.end(), 0);
  return dot_general(a, b, {{nb}, {nb}, batch, batch});
}

Array outer(const Array& a, const Array& b) {
  if (a.ndim() != 1 || b.ndim() != 1)
    throw ShapeError("linalg.outer: the arguments must be 1-D, got shapes " + shape_to_string(a.shape()) + " and " +
                     shape_to_string(b.shape()) + "; use tessel::outer to flatten them");
  return tessel::outer(a, b);
}

Array tensordot(const Array& a, const Array& b, int64_t axes) { return tessel::tensordot(a, b, axes); }
Array tensordot(const Array& a, const Array& b, const Axes& a_axes, const Axes& b_axes) {
  return tessel::tensordot(a, b, a_axes, b_axes);
}

Array trace(const Array& x, int64_t offset, std::optional<DType> dtype) {
  ops::check_matrix_shape("linalg.trace", x.shape(), false);
  return tessel::trace(dtype ? astype(x, *dtype) : x, offset, -2, -1);
}

Array matrix_power(const Array& a_in, int64_t n) {
  ops::check_matrix_shape("linalg.matrix_power", a_in.shape(), true);
  if (n == 0) return broadcast_to(eye(a_in.dim(-1), std::nullopt, 0, a_in.dtype()), a_in.shape());
  const Array a = n < 0 ? inv(a_in) : a_in;
  // Binary powering: z runs through a, a^2, a^4, ...; the set bits of |n| pick the factors.
  uint64_t k = n < 0 ? uint64_t(0) - uint64_t(n) : uint64_t(n);
  std::optional<Array> z, result;
  while (k > 0) {
    z = z ? matmul(*z, *z) : a;
    if (k & 1) result = result ? matmul(*result, *z) : *z;
    k >>= 1;
  }
  return *result;
}

}  // namespace tessel::linalg

namespace tessel::scipy::linalg {

Array block_diag(const std::vector<Array>& arrays) {
  if (arrays.empty()) return zeros({1, 0}, DType::float32);
  std::vector<Array> blocks = ops::promote_all(arrays);
  int64_t cols = 0;
  for (size_t i = 0; i < blocks.size(); ++i) {
    Array& b = blocks[i];
    if (b.ndim() > 2)
      throw ShapeError("scipy.linalg.block_diag: the arrays must have at most 2 dimensions, got shape " +
                       shape_to_string(b.shape()) + " at argument " + std::to_string(i));
    if (b.ndim() < 2) b = reshape(b, {1, b.size()});
    cols += b.dim(1);
  }
  // Each block padded with zeros to the full width at its column offset, then stacked.
  int64_t at = 0;
  for (Array& b : blocks) {
    const int64_t w = b.dim(1);
    b = lax_pad(b, Scalar(0), {{0, 0, 0}, {at, cols - at - w, 0}});
    at += w;
  }
  return concatenate(blocks, 0);
}

Array toeplitz(const Array& c_in, std::optional<Array> r_in) {
  const Array c1 = ops::atleast_1d(c_in);
  const Array r1 = r_in ? ops::atleast_1d(*r_in) : conj(c1);
  auto [c, r] = ops::vector_pair("scipy.linalg.toeplitz", c1, r1);
  const int64_t n = c.dim(-1), m = r.dim(-1);
  if (n == 0 || m == 0) return ops::empty_matrices(c, n, m);
  // v = (c reversed, r[1:]); A[i, j] = v[n - 1 - i + j].
  const Array v = concatenate({flip(c, Axes{c.ndim() - 1}), slice_in_dim(r, 1, m, 1, r.ndim() - 1)}, -1);
  return ops::gather_matrix(v, n, m, [n](Array i, Array j) { return add(subtract(j, i), Array(int(n - 1))); });
}

Array hankel(const Array& c_in, std::optional<Array> r_in) {
  const std::string op = "scipy.linalg.hankel";
  if (c_in.ndim() == 0 || (r_in && r_in->ndim() == 0))
    throw ShapeError(op + ": c and r must be at least 1-D, got shapes " + shape_to_string(c_in.shape()) +
                     (r_in ? " and " + shape_to_string(r_in->shape()) : std::string()));
  auto [c, r] = ops::vector_pair(op, c_in, r_in ? *r_in : zeros_like(c_in));
  const int64_t n = c.dim(-1), m = r.dim(-1);
  if (n == 0 || m == 0) return ops::empty_matrices(c, n, m);
  // v = (c, r[1:]); A[i, j] = v[i + j].
  const Array v = concatenate({c, slice_in_dim(r, 1, m, 1, r.ndim() - 1)}, -1);
  return ops::gather_matrix(v, n, m, [](Array i, Array j) { return add(i, j); });
}

Array circulant(const Array& c_in) {
  const Array c = ops::atleast_1d(c_in);
  const int64_t n = c.dim(-1);
  if (n == 0) return ops::empty_matrices(c, 0, 0);
  // A[i, j] = c[(i - j) mod n].
  return ops::gather_matrix(c, n, n, [n](Array i, Array j) { return remainder(add(subtract(i, j), Array(int(n))), Array(int(n))); });
}

}  // namespace tessel::scipy::linalg
