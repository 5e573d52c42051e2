// jax.numpy's constructors (triangles, diagonals, grids, spaced values, windows), products and
// polynomials, composed of iota, comparisons, selects and products (include/tessel/numpy.h).
#include <algorithm>
#include <cmath>
#include <numbers>

#include "numpy/numpy_util.h"
#include "ops/linalg_factor.h"
#include "tessel/error.h"
#include "tessel/numpy.h"
#include "tessel/conv.h"
#include "tessel/ops.h"
#include "tessel/sort.h"

namespace tessel {

using numpy::promote_inexact;

namespace {

int64_t rank(const Array& x) { return int64_t(x.shape().size()); }

/// col - row at each point of an (n, m) matrix: which diagonal the point is on.
Array diagonal_index(int64_t n, int64_t m) { return iota(DType::int64, {n, m}, 1) - iota(DType::int64, {n, m}, 0); }

Array triangle(const std::string& op, const Array& x, int64_t k, bool lower) {
  if (rank(x) < 2) throw ShapeError(op + ": x must have at least 2 axes; got shape " + shape_to_string(x.shape()));
  return lower ? ops::tril(x, k) : ops::triu(x, k);
}

std::pair<Array, Array> triangle_indices(int64_t n, int64_t k, std::optional<int64_t> m0, bool lower) {
  const int64_t m = m0.value_or(n);
  std::vector<int32_t> r, c;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j)
      if (lower ? j - i <= k : j - i >= k) {
        r.push_back(int32_t(i));
        c.push_back(int32_t(j));
      }
  return {Array(r).astype(default_int), Array(c).astype(default_int)};
}

const Shape& matrix_shape(const std::string& op, const Array& a) {
  if (rank(a) != 2) throw ShapeError(op + ": a must be 2-D; got shape " + shape_to_string(a.shape()));
  return a.shape();
}

}  // namespace

Array tri(int64_t n, std::optional<int64_t> m, int64_t k, DType dtype) {
  return (diagonal_index(n, m.value_or(n)) <= Array(k)).astype(dtype);
}
Array tril(const Array& m, int64_t k) { return triangle("tril", m, k, true); }
Array triu(const Array& m, int64_t k) { return triangle("triu", m, k, false); }

std::pair<Array, Array> tril_indices(int64_t n, int64_t k, std::optional<int64_t> m) {
  return triangle_indices(n, k, m, true);
}
std::pair<Array, Array> triu_indices(int64_t n, int64_t k, std::optional<int64_t> m) {
  return triangle_indices(n, k, m, false);
}
std::pair<Array, Array> mask_indices(int64_t n, const std::function<Array(const Array&, int64_t)>& mask_func,
                                     int64_t k) {
  if (n < 0) throw ValueError("mask_indices: n must be >= 0, got " + std::to_string(n));
  const Array mask = mask_func(ones({n, n}), k);
  if (mask.shape() != Shape{n, n})
    throw ShapeError("mask_indices: mask_func must return an (n, n) array like triu or tril, got " +
                     mask.aval().to_string() + " for n = " + std::to_string(n));
  const std::vector<Array> idx = nonzero(mask);
  return {idx[0], idx[1]};
}

Array empty(const Shape& shape, DType dtype) { return zeros(shape, dtype); }

Shape shape(const Array& x) { return x.shape(); }

Array asarray(const Array& x, std::optional<DType> dtype) { return dtype && *dtype != x.dtype() ? astype(x, *dtype) : x; }

Array array(const Array& x, std::optional<DType> dtype) { return copy(astype(x, dtype.value_or(x.dtype()))); }

std::pair<Array, Array> tril_indices_from(const Array& a, int64_t k) {
  const Shape& s = matrix_shape("tril_indices_from", a);
  return tril_indices(s[0], k, s[1]);
}
std::pair<Array, Array> triu_indices_from(const Array& a, int64_t k) {
  const Shape& s = matrix_shape("triu_indices_from", a);
  return triu_indices(s[0], k, s[1]);
}

std::vector<Array> diag_indices(int64_t n, int64_t nd) {
  if (n < 0) throw ValueError("diag_indices: n = " + std::to_string(n) + " must be non-negative");
  return std::vector<Array>(size_t(std::max<int64_t>(nd, 0)), arange(n, default_int));
}

std::vector<Array> diag_indices_from(const Array& a) {
  if (rank(a) < 2) throw ShapeError("diag_indices_from: a must have at least 2 axes; got shape " + shape_to_string(a.shape()));
  for (int64_t d : a.shape())
    if (d != a.shape()[0])
      throw ShapeError("diag_indices_from: every axis must have the same size; got shape " + shape_to_string(a.shape()));
  return diag_indices(a.shape()[0], rank(a));
}

Array diag(const Array& v, int64_t k) {
  if (rank(v) == 2) return linalg::diagonal(v, k);
  if (rank(v) != 1) throw ShapeError("diag: v must be 1-D or 2-D; got shape " + shape_to_string(v.shape()));
  const int64_t n = v.shape()[0] + std::abs(k);
  // v[i] sits at (i - min(k, 0), i + max(k, 0)): a padded copy of v broadcast along the
  // rows, kept where col - row == k.
  const Array row = pad(v, {{std::max<int64_t>(k, 0), std::max<int64_t>(-k, 0)}});
  const Array cols = broadcast_to(expand_dims(row, {0}), {n, n});
  return where(diagonal_index(n, n) == Array(k), cols, zeros_like(cols));
}

Array diagflat(const Array& v, int64_t k) { return diag(ravel(v), k); }

Array diagonal(const Array& a, int64_t offset, int64_t axis1, int64_t axis2) {
  const int64_t nd = rank(a);
  if (nd < 2) throw ShapeError("diagonal: a must have at least 2 axes; got shape " + shape_to_string(a.shape()));
  const int64_t a1 = ops::canonicalize_axis("diagonal", axis1, nd), a2 = ops::canonicalize_axis("diagonal", axis2, nd);
  if (a1 == a2) throw ValueError("diagonal: axis1 and axis2 must differ; got " + std::to_string(a1) + " twice");
  // The two axes go last, in that order, where linalg::diagonal reads its matrices.
  Axes perm;
  for (int64_t i = 0; i < nd; ++i)
    if (i != a1 && i != a2) perm.push_back(i);
  perm.push_back(a1);
  perm.push_back(a2);
  return linalg::diagonal(transpose(a, perm), offset);
}

Array fill_diagonal(const Array& a, const Array& val) {
  const int64_t nd = rank(a);
  if (nd < 2) throw ShapeError("fill_diagonal: a must have at least 2 axes; got shape " + shape_to_string(a.shape()));
  if (nd > 2)
    for (int64_t d : a.shape())
      if (d != a.shape()[0])
        throw ShapeError("fill_diagonal: an array of more than 2 axes must have equal sizes; got shape " +
                         shape_to_string(a.shape()));
  const int64_t n = *std::min_element(a.shape().begin(), a.shape().end());
  // The diagonal's flat positions are multiples of the sum of the strides; the values repeat
  // cyclically over them, as numpy's flat assignment does.
  int64_t step = 0, stride = 1;
  for (size_t i = a.shape().size(); i-- > 0;) {
    step += stride;
    stride *= a.shape()[i];
  }
  const Array flat_val = ravel(val).astype(a.dtype());
  const int64_t nv = flat_val.shape()[0];
  if (nv == 0) return a;
  const Array vals = slice_in_dim(tile(flat_val, {(n + nv - 1) / nv}), 0, n);
  const Array pos = arange(n, DType::int64) * Array(step);
  return reshape(ravel(a).at({pos}).set(vals), a.shape());
}

Array identity(int64_t n, DType dtype) { return eye(n, std::nullopt, 0, dtype); }

std::vector<Array> meshgrid(const std::vector<Array>& xs, const std::string& indexing, bool sparse) {
  if (indexing != "xy" && indexing != "ij")
    throw ValueError("meshgrid: indexing '" + indexing + "' is not one of 'xy', 'ij'");
  const size_t n = xs.size();
  Shape full;
  for (const Array& x : xs) {
    if (rank(x) != 1) throw ShapeError("meshgrid: every input must be 1-D; got shape " + shape_to_string(x.shape()));
    full.push_back(x.shape()[0]);
  }
  const bool swap = indexing == "xy" && n >= 2;
  if (swap) std::swap(full[0], full[1]);
  std::vector<Array> out;
  for (size_t i = 0; i < n; ++i) {
    const size_t at = swap && i < 2 ? 1 - i : i;
    Shape s(n, 1);
    s[at] = xs[i].shape()[0];
    const Array r = reshape(xs[i], s);
    out.push_back(sparse ? r : broadcast_to(r, full));
  }
  return out;
}

std::vector<Array> indices(const Shape& dimensions, DType dtype, bool sparse) {
  std::vector<Array> out;
  const size_t n = dimensions.size();
  for (size_t i = 0; i < n; ++i) {
    Shape s = sparse ? Shape(n, 1) : dimensions;
    s[i] = dimensions[i];
    out.push_back(iota(dtype, s, int64_t(i)));
  }
  return out;
}

std::vector<Array> ix_(const std::vector<Array>& args) {
  std::vector<Array> out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (rank(args[i]) != 1) throw ShapeError("ix_: every argument must be 1-D; got shape " + shape_to_string(args[i].shape()));
    Shape s(args.size(), 1);
    s[i] = args[i].shape()[0];
    out.push_back(reshape(args[i], s));
  }
  return out;
}

Array logspace(double start, double stop, int64_t num, bool endpoint, double base, DType dtype) {
  const Array exps = linspace(start, stop, num, endpoint, is_inexact(dtype) ? dtype : default_float);
  return pow(full_like(exps, Scalar(base)), exps).astype(dtype);
}

Array geomspace(double start, double stop, int64_t num, bool endpoint, DType dtype) {
  if (start == 0 || stop == 0) throw ValueError("geomspace: start and stop must be nonzero (got " + std::to_string(start) + ", " + std::to_string(stop) + ")");
  const double sign = start < 0 && stop < 0 ? -1.0 : 1.0;
  if (start * stop < 0) throw ValueError("geomspace: start and stop must have the same sign for real results");
  const DType d = is_inexact(dtype) ? dtype : default_float;
  Array r = logspace(std::log10(sign * start), std::log10(sign * stop), num, endpoint, 10.0, d);
  // The ends are exactly start and stop, as in numpy.
  if (num > 0) r = r.at({int64_t(0)}).set(Array(sign * start).astype(d));
  if (num > 1 && endpoint) r = r.at({num - 1}).set(Array(sign * stop).astype(d));
  return (r * Array(sign).astype(d)).astype(dtype);
}

Array vander(const Array& x, std::optional<int64_t> n0, bool increasing) {
  if (rank(x) != 1) throw ShapeError("vander: x must be 1-D; got shape " + shape_to_string(x.shape()));
  const int64_t n = n0.value_or(x.shape()[0]);
  if (n < 0) throw ValueError("vander: n = " + std::to_string(n) + " must be non-negative");
  Array p = arange(n, x.dtype());
  if (!increasing) p = flip(p);
  return pow(expand_dims(x, {1}), expand_dims(p, {0}));
}

Array inner(const Array& a, const Array& b) {
  if (rank(a) == 0 || rank(b) == 0) return a * b;
  return tensordot(a, b, Axes{rank(a) - 1}, Axes{rank(b) - 1});
}

Array kron(const Array& a0, const Array& b0) {
  const int64_t nd = std::max(rank(a0), rank(b0));
  const auto lift = [nd](const Array& x) {
    Shape s(size_t(nd - rank(x)), 1);
    s.insert(s.end(), x.shape().begin(), x.shape().end());
    return reshape(x, s);
  };
  const Array a = lift(a0), b = lift(b0);
  // a's axes interleaved with size-1 axes times b's: (a0, 1, a1, 1, ...) * (1, b0, 1, b1, ...).
  Shape sa, sb, out;
  for (int64_t i = 0; i < nd; ++i) {
    sa.insert(sa.end(), {a.shape()[size_t(i)], 1});
    sb.insert(sb.end(), {1, b.shape()[size_t(i)]});
    out.push_back(a.shape()[size_t(i)] * b.shape()[size_t(i)]);
  }
  return reshape(reshape(a, sa) * reshape(b, sb), out);
}

Array matvec(const Array& m, const Array& v) {
  if (rank(m) < 2 || rank(v) < 1)
    throw ShapeError("matvec: needs a matrix (..., m, n) and a vector (..., n); got shapes " + shape_to_string(m.shape()) +
                     " and " + shape_to_string(v.shape()));
  return squeeze(matmul(m, expand_dims(v, {-1})), Axes{-1});
}

Array vecmat(const Array& v, const Array& m) {
  if (rank(m) < 2 || rank(v) < 1)
    throw ShapeError("vecmat: needs a vector (..., m) and a matrix (..., m, n); got shapes " + shape_to_string(v.shape()) +
                     " and " + shape_to_string(m.shape()));
  return squeeze(matmul(expand_dims(conj(v), {-2}), m), Axes{-2});
}

Array vecdot(const Array& a, const Array& b, int64_t axis) { return linalg::vecdot(a, b, axis); }
Array matrix_transpose(const Array& x) { return linalg::matrix_transpose(x); }
Array cross(const Array& a, const Array& b, const linalg::CrossAxes& axes) { return linalg::cross(a, b, axes); }

// ---- polynomials: coefficient vectors, highest power first ----------------------------------

namespace {
const Array& poly_vector(const std::string& op, const Array& p) {
  if (rank(p) != 1) throw ShapeError(op + ": coefficients must be 1-D; got shape " + shape_to_string(p.shape()));
  return p;
}
/// a and b padded at the front to the same length.
std::pair<Array, Array> poly_aligned(const std::string& op, const Array& a, const Array& b) {
  const int64_t na = poly_vector(op, a).shape()[0], nb = poly_vector(op, b).shape()[0];
  const int64_t n = std::max(na, nb);
  return {pad(a, {{n - na, 0}}), pad(b, {{n - nb, 0}})};
}
}  // namespace

Array polyval(const Array& p, const Array& x) {
  poly_vector("polyval", p);
  const int64_t n = p.shape()[0];
  Array y = zeros_like(x * take(p, Array(0)));
  for (int64_t i = 0; i < n; ++i) y = y * x + take(p, Array(i));
  return y;
}

Array polyadd(const Array& a, const Array& b) {
  auto [x, y] = poly_aligned("polyadd", a, b);
  return x + y;
}
Array polysub(const Array& a, const Array& b) {
  auto [x, y] = poly_aligned("polysub", a, b);
  return x - y;
}

Array polyder(const Array& p0, int64_t m) {
  if (m < 0) throw ValueError("polyder: order m = " + std::to_string(m) + " must be non-negative");
  Array p = poly_vector("polyder", p0);
  for (int64_t k = 0; k < m && p.shape()[0] > 0; ++k) {
    const int64_t n = p.shape()[0];
    const Array powers = flip(arange(double(1), double(n), 1.0, DType::float64)).astype(p.dtype());
    p = slice_in_dim(p, 0, n - 1) * powers;
  }
  return p;
}

Array polyint(const Array& p0, int64_t m, const std::optional<Array>& k) {
  if (m < 0) throw ValueError("polyint: order m = " + std::to_string(m) + " must be non-negative");
  Array p = promote_inexact({poly_vector("polyint", p0)})[0];
  const Array ks = k ? broadcast_to(ravel(*k), {m}).astype(p.dtype()) : zeros({m}, p.dtype());
  for (int64_t i = 0; i < m; ++i) {
    const int64_t n = p.shape()[0];
    const Array div = flip(arange(double(1), double(n + 1), 1.0, DType::float64)).astype(p.dtype());
    p = concatenate({p / div, reshape(take(ks, Array(i)), {1})}, 0);
  }
  return p;
}

Array polymul(const Array& a1, const Array& a2) {
  auto xs = promote_inexact({poly_vector("polymul", a1), poly_vector("polymul", a2)});
  for (size_t i = 0; i < 2; ++i)
    if (xs[i].shape()[0] == 0) xs[i] = zeros({1}, xs[1 - i].dtype());
  return convolve(xs[0], xs[1], "full");
}

std::pair<Array, Array> polydiv(const Array& u, const Array& v) {
  auto xs = promote_inexact({poly_vector("polydiv", u), poly_vector("polydiv", v)});
  Array r = xs[0];
  const Array& d = xs[1];
  const int64_t m = r.shape()[0] - 1, n = d.shape()[0] - 1;
  if (n < 0) throw ValueError("polydiv: the divisor v is empty");
  const Array scale = Array(1.0) / take(d, Array(0));
  Array q = zeros({std::max<int64_t>(m - n + 1, 1)}, r.dtype());
  // Long division, one leading coefficient per step.
  for (int64_t k = 0; k <= m - n; ++k) {
    const Array c = scale * take(r, Array(k));
    q = q.at({k}).set(c);
    r = r.at({Slice(k, k + n + 1)}).add(-c * d);
  }
  return {q, r};
}

Array polyfit(const Array& x0, const Array& y0, int64_t deg, std::optional<double> rcond) {
  auto xs = promote_inexact({x0, y0});
  const Array &x = xs[0], &y = xs[1];
  if (deg < 0) throw ValueError("polyfit: deg = " + std::to_string(deg) + " must be >= 0");
  if (rank(x) != 1 || x.shape()[0] == 0)
    throw ShapeError("polyfit: x must be a non-empty 1-D vector; got shape " + shape_to_string(x.shape()));
  if (rank(y) < 1 || rank(y) > 2 || y.shape()[0] != x.shape()[0])
    throw ShapeError("polyfit: y must be 1-D or 2-D with x's length " + std::to_string(x.shape()[0]) + "; got shape " +
                     shape_to_string(y.shape()));
  const double rc = rcond.value_or(double(x.shape()[0]) * ops::eps_of(x.dtype()));
  Array lhs = vander(x, deg + 1);
  // Columns scaled to unit norm, as numpy does, for the conditioning of the solve.
  const Array scale = sqrt(sum(lhs * lhs, {0}));
  lhs = lhs / expand_dims(scale, {0});
  const Array c = linalg::lstsq(lhs, y, rc).solution;
  return rank(c) > 1 ? c / expand_dims(scale, {1}) : c / scale;
}

namespace {
/// The eigenvalues of p's companion matrix: ones below the diagonal, -p[1:] / p[0] in the
/// first row (JAX's _roots_no_zeros).
Array companion_roots(const Array& p) {
  const int64_t n = p.shape()[0];
  if (n < 2) return zeros({0}, complex_dtype(p.dtype()));
  Array a = diag(ones({n - 2}, p.dtype()), -1);
  a = a.at({int64_t(0), Slice()}).set(-slice_in_dim(p, 1, n) / take(p, Array(0)));
  return linalg::eigvals(a);
}
}  // namespace

Array roots(const Array& p0, bool strip_zeros) {
  Array p = promote_inexact({atleast_1d(p0)})[0];
  if (rank(p) != 1) throw ShapeError("roots: p must be 1-D; got shape " + shape_to_string(p.shape()));
  const int64_t n = p.shape()[0];
  if (n < 2) return zeros({0}, complex_dtype(p.dtype()));
  if (strip_zeros) {
    if (p.is_tracer())
      throw ConcretizationError(
          "roots: stripping leading zeros needs concrete coefficients; under jit pass strip_zeros = false (each "
          "leading zero then gives a NaN root)");
    const auto nz = (p != Array(0)).astype(DType::uint8).to_vector<uint8_t>();
    const int64_t lead = int64_t(std::find(nz.begin(), nz.end(), 1) - nz.begin());
    return companion_roots(slice_in_dim(p, std::min(lead, n), n));
  }
  // Leading zeros rotated to the end, where they add roots at 0, which become NaN.
  const Array is_zero = p == Array(0);
  const Array lead = where(all(is_zero), Array(n), argmin(is_zero.astype(DType::int32)).astype(DType::int64));
  const Array pos = arange(n, DType::int64);
  const Array rolled = take(p, remainder(pos + lead, Array(n)));
  const Array q = where(pos < Array(n) - lead, rolled, zeros_like(p));
  const Array r = companion_roots(q);
  // The `lead` added roots are zeros: the ones of smallest magnitude become NaN, whatever
  // order the eigenvalue solver returns them in.
  const Array by_size = argsort(argsort(abs(r)));
  return where(by_size < lead.astype(by_size.dtype()), full_like(r, Scalar(complex64_t(NAN, NAN))), r);
}

Array poly(const Array& seq0) {
  Array seq = promote_inexact({atleast_1d(seq0)})[0];
  if (rank(seq) == 2 && seq.shape()[0] == seq.shape()[1] && seq.shape()[0] != 0) seq = linalg::eigvals(seq);
  if (rank(seq) != 1) throw ShapeError("poly: input must be 1-D or a non-empty square 2-D array; got shape " + shape_to_string(seq.shape()));
  const DType dt = seq.dtype();
  if (seq.shape()[0] == 0) return ones({}, dt);
  Array a = ones({1}, dt);
  for (int64_t k = 0; k < seq.shape()[0]; ++k)
    a = convolve(a, concatenate({ones({1}, dt), -slice_in_dim(seq, k, k + 1)}, 0), "full");
  return a;
}

// ---- windows ------------------------------------------------------------------------------

namespace {
/// The window of M points from f(n) for n = 0..M-1 (1 for M == 1, empty for M <= 0).
template <class F> Array window(int64_t M, F f) {
  if (M <= 0) return zeros({0}, default_float);
  if (M == 1) return ones({1}, default_float);
  return f(arange(double(0), double(M), 1.0, default_float), double(M - 1));
}
}  // namespace

Array bartlett(int64_t M) {
  return window(M, [](const Array& n, double m) {
    return Array(1.0) - abs(Array(2.0) * n - Array(m)) / Array(m);
  });
}
Array blackman(int64_t M) {
  return window(M, [](const Array& n, double m) {
    const Array t = Array(2 * std::numbers::pi) * n / Array(m);
    return Array(0.42) - Array(0.5) * cos(t) + Array(0.08) * cos(Array(2.0) * t);
  });
}
Array hamming(int64_t M) {
  return window(M, [](const Array& n, double m) {
    return Array(0.54) - Array(0.46) * cos(Array(2 * std::numbers::pi) * n / Array(m));
  });
}
Array hanning(int64_t M) {
  return window(M, [](const Array& n, double m) {
    return Array(0.5) - Array(0.5) * cos(Array(2 * std::numbers::pi) * n / Array(m));
  });
}

}  // namespace tessel
