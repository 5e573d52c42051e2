// jax.numpy's NaN-aware and derived reductions, differences and statistics, composed of
// primitives (include/tessel/numpy.h), following jnp's reductions.py and lax_numpy.py.
#include <cmath>

#include "numpy/numpy_util.h"
#include "tessel/error.h"
#include "tessel/numpy.h"
#include "tessel/ops.h"
#include "tessel/sort.h"

namespace tessel {

using numpy::promote_inexact;

namespace {

/// x with NaNs replaced by `fill` (integers and bool unchanged).
Array nan_filled(const Array& x, double fill) {
  if (!is_inexact(x.dtype())) return x;
  return where(isnan(x), full_like(x, Scalar(fill)), x);
}

/// A reduction over x with NaNs replaced by `fill`; where `all_nan_is_nan`, NaN where every
/// reduced element was NaN (jnp's _nan_reduction).
Array nan_reduction(const Array& x, Array (*reduce)(const Array&, Axes, bool), double fill, bool all_nan_is_nan,
                    const Axes& axes, bool keepdims) {
  Array r = reduce(nan_filled(x, fill), axes, keepdims);
  if (all_nan_is_nan && is_inexact(x.dtype()))
    r = where(all(isnan(x), axes, keepdims), full_like(r, Scalar(NAN)), r);
  return r;
}

/// argmax/argmin ignoring NaNs, -1 where all are NaN.
Array nan_arg(const Array& x, Array (*arg)(const Array&, std::optional<int64_t>, bool), double fill,
              std::optional<int64_t> axis, bool keepdims) {
  if (!is_inexact(x.dtype())) return arg(x, axis, keepdims);
  const Array mask = isnan(x);
  const Array r = arg(where(mask, full_like(x, Scalar(fill)), x), axis, keepdims);
  const Array all_nan = axis ? all(mask, Axes{*axis}, keepdims) : all(mask, Axes{}, keepdims);
  return where(all_nan, full_like(r, Scalar(-1)), r);
}

/// x's one axis for cumulative_sum/prod: `axis`, or 0 for a 1-D x.
int64_t cumulative_axis(const std::string& op, const Array& x, std::optional<int64_t> axis) {
  if (axis) return *axis;
  if (x.shape().size() != 1)
    throw ValueError(op + ": x has shape " + shape_to_string(x.shape()) +
                     "; an axis is required unless x is 1-D (pass axis = the dimension to accumulate along)");
  return 0;
}

/// A cumulative op along `axis` with an optional leading identity element.
Array cumulative(const std::string& op, const Array& x, std::optional<int64_t> axis0, bool include_initial,
                 Array (*f)(const Array&, int64_t, bool), double identity) {
  const int64_t axis = ops::canonicalize_axis(op, cumulative_axis(op, x, axis0), int64_t(x.shape().size()));
  Array r = f(x, axis, false);
  if (!include_initial) return r;
  Shape s = r.shape();
  s[size_t(axis)] = 1;
  return concatenate({full(s, Array(identity), r.dtype()), r}, axis);
}

}  // namespace

Array ptp(const Array& x, Axes axes, bool keepdims) { return max(x, axes, keepdims) - min(x, axes, keepdims); }

Array count_nonzero(const Array& x, Axes axes, bool keepdims) {
  return sum((x != Array(0)).astype(default_int), axes, keepdims);
}

Array average(const Array& x, Axes axes, const std::optional<Array>& weights, bool keepdims) {
  if (!weights) return mean(x, axes, keepdims);
  auto xs = promote_inexact({x, *weights});
  Array a = xs[0], w = xs[1];
  const int64_t nd = int64_t(a.shape().size());
  if (w.shape() != a.shape()) {
    if (axes.size() != 1)
      throw ShapeError("average: weights of shape " + shape_to_string(w.shape()) + " differ from x's shape " +
                       shape_to_string(a.shape()) + "; give weights x's shape, or 1-D weights with exactly one axis");
    if (w.shape().size() != 1)
      throw ShapeError("average: 1-D weights expected when their shape " + shape_to_string(w.shape()) +
                       " differs from x's " + shape_to_string(a.shape()));
    const int64_t ax = ops::canonicalize_axis("average", axes[0], nd);
    if (w.shape()[0] != a.shape()[size_t(ax)])
      throw ShapeError("average: weights of length " + std::to_string(w.shape()[0]) + " do not match axis " +
                       std::to_string(ax) + " of x (size " + std::to_string(a.shape()[size_t(ax)]) + ")");
    Shape ws(size_t(nd), 1);
    ws[size_t(ax)] = w.shape()[0];
    w = broadcast_to(reshape(w, ws), a.shape());
  }
  const Array wsum = sum(w, axes, keepdims);
  return sum(a * w, axes, keepdims) / wsum;
}

Array nansum(const Array& x, Axes axes, bool keepdims) { return nan_reduction(x, sum, 0, false, axes, keepdims); }
Array nanprod(const Array& x, Axes axes, bool keepdims) { return nan_reduction(x, prod, 1, false, axes, keepdims); }
Array nanmax(const Array& x, Axes axes, bool keepdims) { return nan_reduction(x, max, -INFINITY, true, axes, keepdims); }
Array nanmin(const Array& x, Axes axes, bool keepdims) { return nan_reduction(x, min, INFINITY, true, axes, keepdims); }

Array nanmean(const Array& x, Axes axes, bool keepdims) {
  if (!is_inexact(x.dtype())) return mean(x, axes, keepdims);
  const Array count = sum(logical_not(isnan(x)).astype(x.dtype()), axes, keepdims);
  return nansum(x, axes, keepdims) / count;
}

Array nanvar(const Array& x0, Axes axes, bool keepdims, double ddof) {
  const Array x = promote_inexact({x0})[0];
  const Array centered = where(isnan(x), zeros_like(x), x - nanmean(x, axes, true));
  const Array sq = is_complex(x.dtype()) ? real(centered * conj(centered)) : square(centered);
  const Array n = sum(logical_not(isnan(x)).astype(default_int), axes, keepdims) - Array(ddof);
  const Array none_left = n <= Array(0);
  const Array total = sum(sq, axes, keepdims);
  const Array r = where(none_left, full_like(total, Scalar(NAN)), total);
  return r / where(none_left, ones_like(n), n).astype(r.dtype());
}

Array nanstd(const Array& x, Axes axes, bool keepdims, double ddof) { return sqrt(nanvar(x, axes, keepdims, ddof)); }

Array nanargmax(const Array& x, std::optional<int64_t> axis, bool keepdims) {
  return nan_arg(x, argmax, -INFINITY, axis, keepdims);
}
Array nanargmin(const Array& x, std::optional<int64_t> axis, bool keepdims) {
  return nan_arg(x, argmin, INFINITY, axis, keepdims);
}

Array nancumsum(const Array& x, int64_t axis, bool reverse) { return cumsum(nan_filled(x, 0), axis, reverse); }
Array nancumprod(const Array& x, int64_t axis, bool reverse) { return cumprod(nan_filled(x, 1), axis, reverse); }

Array cumulative_sum(const Array& x, std::optional<int64_t> axis, bool include_initial) {
  return cumulative("cumulative_sum", x, axis, include_initial, cumsum, 0);
}
Array cumulative_prod(const Array& x, std::optional<int64_t> axis, bool include_initial) {
  return cumulative("cumulative_prod", x, axis, include_initial, cumprod, 1);
}

Array diff(const Array& x0, int64_t n, int64_t axis0, const std::optional<Array>& prepend,
           const std::optional<Array>& append) {
  if (n < 0) throw ValueError("diff: order n = " + std::to_string(n) + " must be non-negative");
  if (x0.shape().empty()) throw ShapeError("diff: x must have at least one axis; got a scalar");
  const int64_t nd = int64_t(x0.shape().size());
  const int64_t axis = ops::canonicalize_axis("diff", axis0, nd);
  // Scalars put before/after are broadcast to one slice of x.
  const auto slab = [&](const Array& v) {
    if (!v.shape().empty()) return v;
    Shape s = x0.shape();
    s[size_t(axis)] = 1;
    return broadcast_to(v, s);
  };
  std::vector<Array> parts;
  if (prepend) parts.push_back(slab(*prepend));
  parts.push_back(x0);
  if (append) parts.push_back(slab(*append));
  Array x = parts.size() == 1 ? x0 : concatenate(parts, axis);
  const bool boolean = is_bool(x.dtype());
  for (int64_t i = 0; i < n; ++i) {
    const int64_t len = x.shape()[size_t(axis)];
    if (len == 0) break;
    const Array hi = slice_in_dim(x, 1, len, 1, axis), lo = slice_in_dim(x, 0, len - 1, 1, axis);
    x = boolean ? not_equal(hi, lo) : hi - lo;
  }
  return x;
}

Array ediff1d(const Array& x, const std::optional<Array>& to_end, const std::optional<Array>& to_begin) {
  const Array flat = ravel(x);
  const int64_t n = flat.shape()[0];
  std::vector<Array> parts;
  if (to_begin) parts.push_back(ravel(*to_begin).astype(x.dtype()));
  parts.push_back(n > 0 ? slice_in_dim(flat, 1, n) - slice_in_dim(flat, 0, n - 1) : flat);
  if (to_end) parts.push_back(ravel(*to_end).astype(x.dtype()));
  return parts.size() == 1 ? parts[0] : concatenate(parts, 0);
}

Array gradient(const Array& f0, int64_t axis0, double dx) {
  const Array f = promote_inexact({f0})[0];
  const int64_t axis = ops::canonicalize_axis("gradient", axis0, int64_t(f.shape().size()));
  const int64_t n = f.shape()[size_t(axis)];
  if (n < 2)
    throw ShapeError("gradient: axis " + std::to_string(axis) + " of shape " + shape_to_string(f.shape()) +
                     " has fewer than 2 elements; a numerical gradient needs at least 2");
  const auto sl = [&](int64_t lo, int64_t hi) { return slice_in_dim(f, lo, hi, 1, axis); };
  const Array h(dx);
  const Array upper = (sl(1, 2) - sl(0, 1)) / h;
  const Array lower = (sl(n - 1, n) - sl(n - 2, n - 1)) / h;
  const Array inside = (sl(2, n) - sl(0, n - 2)) * Array(0.5) / h;
  return concatenate({upper, inside, lower}, axis);
}

std::vector<Array> gradient(const Array& f) {
  std::vector<Array> out;
  for (size_t a = 0; a < f.shape().size(); ++a) out.push_back(gradient(f, int64_t(a)));
  return out;
}

Array trapezoid(const Array& y0, const std::optional<Array>& x, double dx, int64_t axis0) {
  const Array y = promote_inexact({y0})[0];
  const int64_t nd = int64_t(y.shape().size());
  const int64_t axis = ops::canonicalize_axis("trapezoid", axis0, nd);
  const int64_t n = y.shape()[size_t(axis)];
  Array d = Array(dx);
  if (x) {
    if (x->shape().size() == 1) {
      if (x->shape()[0] != n)
        throw ShapeError("trapezoid: x of length " + std::to_string(x->shape()[0]) + " does not match y's axis " +
                         std::to_string(axis) + " of size " + std::to_string(n));
      Shape s(size_t(nd), 1);
      s[size_t(axis)] = n;
      d = diff(reshape(*x, s), 1, axis);
    } else {
      d = diff(*x, 1, axis);
    }
  }
  const Array avg = (slice_in_dim(y, 1, n, 1, axis) + slice_in_dim(y, 0, n - 1, 1, axis)) * Array(0.5);
  return sum(d * avg, {axis});
}

Array interp(const Array& x0, const Array& xp0, const Array& fp0, const std::optional<Array>& left,
             const std::optional<Array>& right) {
  if (xp0.shape().size() != 1 || fp0.shape().size() != 1 || xp0.shape() != fp0.shape() || xp0.shape()[0] == 0)
    throw ShapeError("interp: xp and fp must be 1-D of the same nonzero length; got " + shape_to_string(xp0.shape()) +
                     " and " + shape_to_string(fp0.shape()));
  auto xs = promote_inexact({x0, xp0});
  const Array &x = xs[0], &xp = xs[1];
  const Array fp = promote_inexact({fp0})[0];
  const int64_t n = xp.shape()[0];
  const Array i = clip(searchsorted(xp, x, "right"), Array(1), Array(std::max<int64_t>(n - 1, 1)));
  const Array im1 = i - Array(1);
  const Array f_lo = take(fp, im1), f_hi = take(fp, i);
  const Array x_lo = take(xp, im1), x_hi = take(xp, i);
  const Array dfx = f_hi - f_lo, dxx = x_hi - x_lo;
  const Array delta = x - x_lo;
  const Array flat = abs(dxx) <= Array(ops::eps_of(dxx.dtype()));
  Array f = where(flat, f_lo, f_lo + (delta / where(flat, ones_like(dxx), dxx)) * dfx);
  const Array fl = left ? *left : take(fp, Array(0));
  const Array fr = right ? *right : take(fp, Array(n - 1));
  f = where(x < take(xp, Array(0)), fl.astype(f.dtype()), f);
  return where(x > take(xp, Array(n - 1)), fr.astype(f.dtype()), f);
}

Array unwrap(const Array& p0, std::optional<double> discont, int64_t axis0, double period) {
  const Array p = promote_inexact({p0})[0];
  numpy::check_real("unwrap", p);
  const int64_t axis = ops::canonicalize_axis("unwrap", axis0, int64_t(p.shape().size()));
  const int64_t n = p.shape()[size_t(axis)];
  if (n == 0) return p;
  const Array per = Array(period).astype(p.dtype());
  const Array interval = per / Array(2);
  const Array dd = diff(p, 1, axis);
  Array ddmod = remainder(dd + interval, per) - interval;
  ddmod = where(logical_and(ddmod == -interval, dd > Array(0)), broadcast_to(interval, ddmod.shape()), ddmod);
  const Array lim = discont ? Array(*discont).astype(p.dtype()) : interval;
  const Array correct = where(abs(dd) < lim, zeros_like(dd), ddmod - dd);
  return concatenate({slice_in_dim(p, 0, 1, 1, axis), slice_in_dim(p, 1, n, 1, axis) + cumsum(correct, axis)}, axis);
}

Array cov(const Array& m0, bool rowvar, bool bias, std::optional<int64_t> ddof) {
  if (m0.shape().size() > 2)
    throw ShapeError("cov: m must be at most 2-D; got shape " + shape_to_string(m0.shape()));
  Array m = promote_inexact({atleast_2d(m0)})[0];
  if (!rowvar && m.shape()[0] != 1) m = transpose(m);
  const int64_t d = ddof.value_or(bias ? 0 : 1);
  const int64_t n = m.shape()[1];
  const Array centered = m - mean(m, {1}, true);
  const Array c = matmul(centered, transpose(conj(centered))) / Array(double(n - d)).astype(real_dtype(m.dtype()));
  return squeeze(c);
}

Array corrcoef(const Array& m, bool rowvar) {
  const Array c = cov(m, rowvar);
  if (c.shape().empty()) return c / c;
  const Array d = linalg::diagonal(c);
  const Array s = sqrt(real(d));
  Array r = c / expand_dims(s, {1}) / expand_dims(s, {0});
  if (is_complex(r.dtype())) return complex(clip(real(r), Array(-1), Array(1)), clip(imag(r), Array(-1), Array(1)));
  return clip(r, Array(-1), Array(1));
}


std::pair<Array, std::vector<Array>> histogramdd(const Array& sample0, const std::vector<HistogramBins>& bins,
                                                 const HistogramddOptions& o) {
  if (!sample0.valid()) throw ValueError("histogramdd: sample is an empty (default-constructed) Array");
  if (sample0.ndim() != 2)
    throw ShapeError("histogramdd: sample must be (N, D), N points in D dimensions, got " + sample0.aval().to_string());
  const int64_t n = sample0.dim(0), d = sample0.dim(1);
  if (o.weights.valid() && o.weights.shape() != Shape{n})
    throw ShapeError("histogramdd: weights must hold one weight per sample point, shape (" + std::to_string(n) +
                     ",), got " + o.weights.aval().to_string());
  if (!o.range.empty() && int64_t(o.range.size()) != d)
    throw ValueError("histogramdd: range must hold one (low, high) or none per dimension (" + std::to_string(d) +
                     "), got " + std::to_string(o.range.size()));
  if (int64_t(bins.size()) != d)
    throw ValueError("histogramdd: bins must hold one entry per dimension (" + std::to_string(d) + "), got " +
                     std::to_string(bins.size()));
  // The sample (and the weights) in their common inexact dtype, as JAX promotes them.
  DType dt = is_inexact(sample0.dtype()) ? sample0.dtype() : default_float;
  if (o.weights.valid()) dt = result_type({Array(Scalar(0, dt)), o.weights});
  const Array sample = astype(sample0, dt);
  std::vector<Array> index, edges;
  Shape grid;
  for (int64_t i = 0; i < d; ++i) {
    const Array column = squeeze(slice_in_dim(sample, i, i + 1, 1, 1), Axes{1});
    HistogramOptions one;
    if (!o.range.empty()) one.range = o.range[size_t(i)];
    const Array e = std::holds_alternative<int64_t>(bins[size_t(i)])
                        ? histogram_bin_edges(column, std::get<int64_t>(bins[size_t(i)]), one)
                        : std::get<Array>(bins[size_t(i)]);
    if (e.ndim() != 1 || e.dim(0) < 2)
      throw ShapeError("histogramdd: the edges of dimension " + std::to_string(i) +
                       " must be one-dimensional with at least 2 edges, got " + e.aval().to_string());
    // Bin b + 1 holds e[b] <= x < e[b + 1]; the last bin also its right edge; 0 and m + 1 the outside.
    Array b = searchsorted(e, column, "right");
    b = where(equal(column, e.index({e.dim(0) - 1})), b - Array(1), b);
    index.push_back(b);
    edges.push_back(e);
    grid.push_back(e.dim(0) + 1);
  }
  int64_t cells = 1;
  for (int64_t g : grid) cells *= g;
  const Array flat = ravel_multi_index(index, grid, "clip");
  Array hist = reshape(bincount(flat, o.weights.valid() ? astype(o.weights, dt) : Array(), 0, cells), grid);
  Shape start(size_t(d), 1), stop = grid;
  for (auto& s : stop) s -= 1;
  hist = slice(hist, start, stop);
  if (o.density) {
    hist = astype(hist, dt);
    hist = hist / sum(hist);
    std::vector<Array> widths;
    for (const Array& e : edges) widths.push_back(diff(e));
    for (const Array& w : ix_(widths)) hist = hist / w;
  }
  return {hist, edges};
}

std::pair<Array, std::vector<Array>> histogramdd(const Array& sample, int64_t bins, const HistogramddOptions& o) {
  const int64_t d = sample.ndim() == 2 ? sample.dim(1) : 0;
  return histogramdd(sample, std::vector<HistogramBins>(size_t(d), bins), o);
}

std::tuple<Array, Array, Array> histogram2d(const Array& x, const Array& y, const std::vector<HistogramBins>& bins,
                                            const HistogramddOptions& o) {
  if (x.ndim() != 1 || x.shape() != y.shape())
    throw ShapeError("histogram2d: x and y must be one-dimensional of the same length, got " + x.aval().to_string() +
                     " and " + y.aval().to_string());
  auto [hist, edges] = histogramdd(transpose(stack({x, y})), bins, o);
  return {hist, edges[0], edges[1]};
}

std::tuple<Array, Array, Array> histogram2d(const Array& x, const Array& y, int64_t bins, const HistogramddOptions& o) {
  return histogram2d(x, y, std::vector<HistogramBins>{bins, bins}, o);
}

}  // namespace tessel
