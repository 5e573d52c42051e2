// jnp.pad: every mode of jax.numpy.pad composed from slices, flips, concatenation,
// reductions and lax_pad, one axis at a time (so padded corners combine the axes in
// order, as in JAX).
#include <algorithm>
#include <limits>

#include "ops/op_util.h"

namespace tessel {
namespace {

using Widths = std::vector<std::pair<int64_t, int64_t>>;

/// Entry `d` of a per-axis list that may also hold one pair for all axes.
template <class P> const P& per_axis(const std::vector<P>& v, int64_t d) { return v.size() == 1 ? v[0] : v[size_t(d)]; }

/// The leading `count` (or trailing, when !front) slices of `y` along axis d.
Array edge_slices(const Array& y, int64_t d, int64_t count, bool front) {
  const int64_t n = y.dim(d);
  return front ? slice_in_dim(y, 0, count, 1, d) : slice_in_dim(y, n - count, n, 1, d);
}

/// `part` (size 1 along d) repeated `count` times along d.
Array repeat_slice(const Array& part, int64_t d, int64_t count) {
  Shape s = part.shape();
  s[size_t(d)] = count;
  return broadcast_to(part, s);
}

/// Concatenates before, y, after along d, leaving out empty pieces.
Array around(const Array& before, const Array& y, const Array& after, int64_t d) {
  std::vector<Array> parts;
  if (before.valid() && before.dim(d) > 0) parts.push_back(before);
  parts.push_back(y);
  if (after.valid() && after.dim(d) > 0) parts.push_back(after);
  return parts.size() == 1 ? y : concatenate(parts, d);
}

/// Modes that read the array's values need a non-empty axis to pad.
void check_not_empty(const std::string& mode, const Array& y, int64_t d) {
  if (y.dim(d) == 0)
    throw ValueError("pad: cannot pad the empty axis " + std::to_string(d) + " of shape " + shape_to_string(y.shape()) +
                     " in \"" + mode + "\" mode (it has no values to pad with); use mode \"constant\"");
}

Array pad_edge(const Array& y, int64_t d, int64_t lo, int64_t hi) {
  return around(repeat_slice(edge_slices(y, d, 1, true), d, lo), y, repeat_slice(edge_slices(y, d, 1, false), d, hi), d);
}

/// "wrap": the axis repeated periodically.
Array pad_wrap(const Array& y, int64_t d, int64_t lo, int64_t hi) {
  const int64_t n = y.dim(d);
  std::vector<Array> parts;
  if (lo % n) parts.push_back(edge_slices(y, d, lo % n, false));
  for (int64_t k = 0; k < lo / n + hi / n + 1; ++k) parts.push_back(y);
  if (hi % n) parts.push_back(edge_slices(y, d, hi % n, true));
  return parts.size() == 1 ? y : concatenate(parts, d);
}

/// "reflect" (mirror about the edge element) and "symmetric" (mirror including it); an
/// "odd" reflect_type mirrors the values through the edge value. Widths beyond the axis
/// reflect again off the padded part, as numpy.
Array pad_reflect(Array y, int64_t d, int64_t lo, int64_t hi, bool symmetric, bool odd) {
  const int64_t n = y.dim(d);
  if (n == 1) return pad_edge(y, d, lo, hi);  // every mode mirrors the single value
  const int64_t offset = symmetric ? 0 : 1;
  for (bool front : {true, false}) {
    Array edge = edge_slices(y, d, 1, front);
    for (int64_t left = front ? lo : hi; left > 0;) {
      const int64_t take = std::min(left, n - offset);
      left -= take;
      // The `take` values next to the edge (skipping the edge itself for reflect), mirrored.
      const int64_t len = y.dim(d);
      Array part = front ? slice_in_dim(y, offset, offset + take, 1, d)
                         : slice_in_dim(y, len - take - offset, len - offset, 1, d);
      part = flip(part, Axes{d});
      if (odd) {
        part = edge + edge - part;
        edge = edge_slices(part, d, 1, front);
      }
      y = front ? concatenate({part, y}, d) : concatenate({y, part}, d);
    }
  }
  return y;
}

/// "linear_ramp": values going linearly from the end value to the edge value (exclusive).
Array pad_linear_ramp(const Array& y, int64_t d, int64_t lo, int64_t hi, const std::pair<Scalar, Scalar>& ends) {
  const DType dt = y.dtype();
  const DType ct = is_inexact(dt) ? dt : DType::float64;  // integers: ramp in float, then floor
  auto ramp = [&](const Array& edge, Scalar end, int64_t count, bool front) -> Array {
    if (count == 0) return Array();
    Shape s = edge.shape();
    s[size_t(d)] = count;
    const Array start = ops::convert(Array(end.astype(ct)), ct), stop = ops::convert(edge, ct);
    const Array step = (stop - start) / Array(double(count));
    Array r = start + iota(real_dtype(ct), s, d) * step;  // position k of count, from the end value
    if (!is_inexact(dt)) r = floor(r);  // jnp.linspace floors integer ramps
    r = ops::convert(r, dt);
    return front ? r : flip(r, Axes{d});
  };
  return around(ramp(edge_slices(y, d, 1, true), ends.first, lo, true), y,
                ramp(edge_slices(y, d, 1, false), ends.second, hi, false), d);
}

/// Median along axis d (kept, size 1) without a sort: the k-th smallest value is the one
/// with fewer than k + 1 values below it and at least k + 1 at or below it. This costs
/// n^2 comparisons per lane, fine for padding statistics; NaN anywhere gives NaN.
Array median_keepdims(const Array& y, int64_t d) {
  const DType d0 = y.dtype();  // integers give the default float (as jnp.median); halves compute in f32
  const DType ct = !is_inexact(d0) || itemsize(d0) == 2 ? DType::float32 : d0;
  const Array x = ops::convert(moveaxis(y, d, -1), ct);
  const int64_t n = x.dim(-1), r = x.ndim();
  const Array xi = expand_dims(x, {r}), xj = expand_dims(x, {r - 1});  // (..., n, 1) and (..., 1, n)
  const Array below = sum(ops::convert(xj < xi, int32), {r}), at_or_below = sum(ops::convert(xj <= xi, int32), {r});
  const Array lowest = Array(Scalar(-std::numeric_limits<double>::infinity(), ct));
  auto kth = [&](int64_t k) {
    const Array kk = Array(Scalar(k, int32));
    return max(where(logical_and(below <= kk, at_or_below > kk), x, lowest), {r - 1}, true);
  };
  Array m = (kth((n - 1) / 2) + kth(n / 2)) * Array(0.5);
  if (is_inexact(ct)) m = where(any(isnan(x), {r - 1}, true), full_like(m, std::numeric_limits<double>::quiet_NaN()), m);
  return moveaxis(m, -1, d);
}

/// "maximum", "minimum", "mean", "median": the statistic of the whole axis, or of
/// `lengths` values at each edge. Integer results round half to even, as jnp.pad.
Array pad_stat(const std::string& mode, const Array& y, int64_t d, int64_t lo, int64_t hi,
               std::optional<std::pair<int64_t, int64_t>> lengths) {
  auto stat = [&](const Array& part) -> Array {
    Array v = mode == "maximum"   ? max(part, {d}, true)
              : mode == "minimum" ? min(part, {d}, true)
              : mode == "mean"    ? mean(part, {d}, true)
                                  : median_keepdims(part, d);
    if (is_integer(y.dtype()) && is_inexact(v.dtype())) v = round(v);
    return ops::convert(v, y.dtype());
  };
  Array before = stat(y), after = before;
  if (lengths) {
    if (lengths->first <= 0 || lengths->second <= 0)
      throw ValueError("pad: stat_length (" + std::to_string(lengths->first) + ", " + std::to_string(lengths->second) +
                       ") for axis " + std::to_string(d) + " leaves no values to compute the " + mode +
                       " from; give lengths >= 1");
    const int64_t n = y.dim(d);
    before = stat(edge_slices(y, d, std::min(lengths->first, n), true));
    after = stat(edge_slices(y, d, std::min(lengths->second, n), false));
  }
  return around(repeat_slice(before, d, lo), y, repeat_slice(after, d, hi), d);
}

}  // namespace

Array pad(const Array& x, const Widths& widths, const std::string& mode, Scalar value) {
  return pad(x, widths, mode, PadOptions{.constant_values = value});
}

Array pad(const Array& x, const Widths& widths, const std::string& mode, const PadOptions& o) {
  const int64_t n = x.ndim();
  if (widths.size() != 1 && int64_t(widths.size()) != n)
    throw ShapeError("pad: widths must hold one (before, after) pair, or one per axis of shape " +
                     shape_to_string(x.shape()) + "; got " + std::to_string(widths.size()) + " pairs");
  for (int64_t d = 0; d < n; ++d)
    if (per_axis(widths, d).first < 0 || per_axis(widths, d).second < 0)
      throw ValueError("pad: widths must be >= 0, got (" + std::to_string(per_axis(widths, d).first) + ", " +
                       std::to_string(per_axis(widths, d).second) + ") for axis " + std::to_string(d) +
                       " (lax_pad crops with negative padding)");
  auto check_list = [&](const char* name, size_t size) {
    if (size != 0 && size != 1 && int64_t(size) != n)
      throw ShapeError(std::string("pad: ") + name + " must hold one pair, or one per axis of shape " +
                       shape_to_string(x.shape()) + "; got " + std::to_string(size) + " pairs");
  };
  check_list("stat_length", o.stat_length.size());
  check_list("end_values", o.end_values.size());
  if (o.reflect_type != "even" && o.reflect_type != "odd")
    throw ValueError("pad: reflect_type must be \"even\" or \"odd\", got '" + o.reflect_type + "'");
  if (mode == "constant" || mode == "empty") {  // jnp's "empty" pads with zeros
    std::vector<std::array<int64_t, 3>> cfg;
    for (int64_t d = 0; d < n; ++d) cfg.push_back({per_axis(widths, d).first, per_axis(widths, d).second, 0});
    return lax_pad(x, mode == "empty" ? Scalar(0) : o.constant_values, cfg);
  }
  const bool stat = mode == "maximum" || mode == "minimum" || mode == "mean" || mode == "median";
  if (mode != "edge" && mode != "wrap" && mode != "reflect" && mode != "symmetric" && mode != "linear_ramp" && !stat)
    throw ValueError("pad: unknown mode '" + mode +
                     "'; supported modes are \"constant\", \"edge\", \"reflect\", \"symmetric\", \"wrap\", "
                     "\"linear_ramp\", \"maximum\", \"minimum\", \"mean\", \"median\" and \"empty\"");
  Array y = x;
  for (int64_t d = 0; d < n; ++d) {
    const auto [lo, hi] = per_axis(widths, d);
    if (lo == 0 && hi == 0) continue;
    if (mode != "mean") check_not_empty(mode, y, d);  // jnp pads an empty axis's mean with NaN
    if (mode == "edge") {
      y = pad_edge(y, d, lo, hi);
    } else if (mode == "wrap") {
      y = pad_wrap(y, d, lo, hi);
    } else if (mode == "reflect" || mode == "symmetric") {
      y = pad_reflect(y, d, lo, hi, mode == "symmetric", o.reflect_type == "odd");
    } else if (mode == "linear_ramp") {
      y = pad_linear_ramp(y, d, lo, hi, o.end_values.empty() ? std::pair<Scalar, Scalar>{0, 0} : per_axis(o.end_values, d));
    } else {
      std::optional<std::pair<int64_t, int64_t>> lengths;
      if (!o.stat_length.empty()) lengths = per_axis(o.stat_length, d);
      y = pad_stat(mode, y, d, lo, hi, lengths);
    }
  }
  return y;
}

}  // namespace tessel
