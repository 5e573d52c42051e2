// jax.numpy's sorting and searching functions, composed from the sort and top_k primitives
// (sort.cpp) and gathers: sort, argsort, partition, argpartition, sort_complex, lexsort,
// searchsorted, digitize, and the order statistics (quantile, percentile, median and their
// nan- forms).
#include <cmath>

#include "ops/sort.h"
#include "ops/sort_order.h"
#include "tessel/sort.h"

namespace tessel::ops {

Array sort_less(const Array& x, const Array& y, bool or_equal) {
  if (is_complex(x.dtype())) {
    const Array xr = real(x), yr = real(y);
    return logical_or(sort_less(xr, yr, false), logical_and(sort_equal(xr, yr), sort_less(imag(x), imag(y), or_equal)));
  }
  if (!is_floating(x.dtype())) return or_equal ? less_equal(x, y) : less(x, y);
  const Array lt = logical_or(less(x, y), logical_and(logical_not(isnan(x)), isnan(y)));
  return or_equal ? logical_or(lt, sort_equal(x, y)) : lt;
}

Array sort_equal(const Array& x, const Array& y) {
  if (is_complex(x.dtype())) return logical_and(sort_equal(real(x), real(y)), sort_equal(imag(x), imag(y)));
  if (!is_floating(x.dtype())) return equal(x, y);
  return logical_or(equal(x, y), logical_and(isnan(x), isnan(y)));
}

DType position_dtype(int64_t n) { return n <= int64_t(INT32_MAX) ? default_int : DType::int64; }

namespace {

/// `a` flattened when `axis` is none; the canonical axis to sort along.
std::pair<Array, int64_t> sort_operand(const char* op, const Array& a, std::optional<int64_t> axis) {
  if (!a.valid()) throw ValueError(std::string(op) + ": the argument is an empty Array (default-constructed)");
  const Array arr = axis ? a : ravel(a);
  if (arr.ndim() == 0)
    throw ShapeError(std::string(op) + ": cannot sort a rank-0 array along axis " + std::to_string(*axis) +
                     "; pass axis = ts::none or reshape it to (1,)");
  return {arr, canonicalize_axis(op, axis.value_or(0), arr.ndim())};
}

/// kth in [-n, n) counted from the end when negative, as jnp.partition.
int64_t partition_kth(const char* op, int64_t kth, int64_t n) {
  if (kth < -n || kth >= n)
    throw ValueError(std::string(op) + ": kth = " + std::to_string(kth) + " is out of range for an axis of size " +
                     std::to_string(n));
  return kth < 0 ? kth + n : kth;
}

/// top_k of the negated values: the kth + 1 smallest elements (as JAX, unsigned values are
/// shifted by one first so that 0 negates to the largest).
std::pair<Array, Array> bottom_k(const char* op, const Array& arr, int64_t k) {
  const DType d = arr.dtype();
  if (is_complex(d) || is_bool(d))
    throw DTypeError(std::string(op) + ": " + dtype_name(d) + " operands are not supported (no top_k order); " +
                     "use ts::sort or ts::argsort");
  if (is_unsigned_int(d)) {
    auto [v, i] = bind_top_k(negative(add(arr, Array(Scalar(1, d)))), k, arr.ndim() - 1);
    return {subtract(negative(v), Array(Scalar(1, d))), i};
  }
  auto [v, i] = bind_top_k(negative(arr), k, arr.ndim() - 1);
  return {negative(v), i};
}

}  // namespace
}  // namespace tessel::ops

namespace tessel {

using ops::canonicalize_axis;

Array sort(const Array& a, std::optional<int64_t> axis, bool stable, bool descending) {
  auto [arr, dim] = ops::sort_operand("sort", a, axis);
  const Array sorted = ops::bind_sort({arr}, dim, stable, 1)[0];
  return descending ? flip(sorted, Axes{dim}) : sorted;
}

// A stable descending order sorts the reversed array and its reversed positions and
// reverses the result, so equal elements keep their original order (as jnp.argsort).
Array argsort(const Array& a, std::optional<int64_t> axis, bool stable, bool descending) {
  auto [arr, dim] = ops::sort_operand("argsort", a, axis);
  Array keys = arr, positions = iota(ops::position_dtype(arr.dim(dim)), arr.shape(), dim);
  if (descending && stable) keys = flip(keys, Axes{dim}), positions = flip(positions, Axes{dim});
  const Array order = ops::bind_sort({keys, positions}, dim, stable, 1)[1];
  return descending ? flip(order, Axes{dim}) : order;
}

Array partition(const Array& a, int64_t kth_in, int64_t axis_in) {
  auto [x, axis] = ops::sort_operand("partition", a, axis_in);
  const int64_t n = x.dim(axis), kth = ops::partition_kth("partition", kth_in, n);
  const Array arr = swapaxes(x, axis, -1);
  const Array bottom = ops::bottom_k("partition", arr, kth + 1).first;
  const Array top = ops::bind_top_k(arr, n - kth - 1, arr.ndim() - 1).first;
  return swapaxes(concatenate({bottom, top}, -1), -1, axis);
}

// The positions after kth are the top ones of a proxy that is 0 at the kth + 1 smallest
// elements and 1 elsewhere (as JAX: duplicates of the pivot are not taken twice).
Array argpartition(const Array& a, int64_t kth_in, int64_t axis_in) {
  auto [x, axis] = ops::sort_operand("argpartition", a, axis_in);
  const int64_t n = x.dim(axis), kth = ops::partition_kth("argpartition", kth_in, n);
  const Array arr = swapaxes(x, axis, -1);
  const Array bottom = ops::bottom_k("argpartition", arr, kth + 1).second;
  const int64_t rows = shape_size(arr.shape()) / std::max<int64_t>(n, 1);
  const Array flat_bottom = reshape(bottom, {rows, kth + 1});
  const Array row = iota(DType::int32, {rows, kth + 1}, 0);
  const Array proxy = ones({rows, n}, DType::float32).at({row, flat_bottom}).set(Array(0.0f));
  const Array top = ops::bind_top_k(reshape(proxy, arr.shape()), n - kth - 1, arr.ndim() - 1).second;
  return swapaxes(concatenate({bottom, top}, -1), -1, axis);
}

Array sort_complex(const Array& a) {
  auto [arr, dim] = ops::sort_operand("sort_complex", a, -1);
  const DType d = arr.dtype();
  const DType c = is_complex(d) ? d : d == DType::float64 || d == DType::int64 || d == DType::uint64 ? DType::complex128
                                                                                                 : DType::complex64;
  return astype(ops::bind_sort({arr}, dim, true, 1)[0], c);
}

Array lexsort(const std::vector<Array>& keys, int64_t axis_in) {
  if (keys.empty()) throw ValueError("lexsort: needs at least one key");
  for (const Array& k : keys) {
    if (!k.valid()) throw ValueError("lexsort: a key is an empty Array (default-constructed)");
    if (k.shape() != keys[0].shape())
      throw ShapeError("lexsort: all keys must have one shape, got " + shape_to_string(keys[0].shape()) + " and " +
                       shape_to_string(k.shape()));
  }
  if (keys[0].ndim() == 0) return zeros({}, default_int);
  const int64_t axis = canonicalize_axis("lexsort", axis_in, keys[0].ndim());
  std::vector<Array> operands(keys.rbegin(), keys.rend());  // the last key is the primary one
  operands.push_back(iota(ops::position_dtype(keys[0].dim(axis)), keys[0].shape(), axis));
  return ops::bind_sort(operands, axis, true, int64_t(keys.size())).back();
}

// The binary search of JAX's "scan" method: ceil(log2(n + 1)) halvings of [low, high), each
// reading a[mid] by a gather, unrolled at trace time.
Array searchsorted(const Array& a_in, const Array& v_in, const std::string& side, const Array& sorter,
                   const std::string& method) {
  if (!a_in.valid() || !v_in.valid()) throw ValueError("searchsorted: an argument is an empty Array (default-constructed)");
  if (side != "left" && side != "right")
    throw ValueError("searchsorted: side must be \"left\" or \"right\", got \"" + side + "\"");
  if (method != "scan" && method != "scan_unrolled" && method != "sort" && method != "compare_all")
    throw ValueError("searchsorted: method must be \"scan\", \"scan_unrolled\", \"sort\" or \"compare_all\", got \"" +
                     method + "\"");
  if (a_in.ndim() != 1)
    throw ShapeError("searchsorted: a must be one-dimensional, got shape " + shape_to_string(a_in.shape()));
  const PromotedType t = ops::result_type({a_in, v_in});
  Array a = ops::convert(a_in, t.dtype), v = ops::convert(v_in, t.dtype);
  if (sorter.valid()) a = take(a, sorter, 0, {.mode = "clip"});
  const int64_t n = a.dim(0);
  const bool left = side == "left";
  if (method == "compare_all") {
    const Array hits = ops::sort_less(a, expand_dims(v, {v.ndim()}), !left);
    return sum(astype(hits, DType::int32), {v.ndim()});
  }
  Array low = zeros(v.shape(), DType::int32), high = full(v.shape(), Array(Scalar(n, DType::int32)));
  for (int64_t width = n; width > 0; width /= 2) {  // ceil(log2(n + 1)) steps
    const Array mid = right_shift(add(low, high), Array(Scalar(1, DType::int32)));
    const Array go_left = ops::sort_less(v, take(a, mid, 0, {.mode = "clip"}), left);
    low = where(go_left, low, mid);
    high = where(go_left, mid, high);
  }
  return high;
}

Array digitize(const Array& x, const Array& bins, bool right, const std::string& method) {
  if (!x.valid() || !bins.valid()) throw ValueError("digitize: an argument is an empty Array (default-constructed)");
  if (bins.ndim() != 1)
    throw ShapeError("digitize: bins must be one-dimensional, got shape " + shape_to_string(bins.shape()));
  const int64_t n = bins.dim(0);
  if (n == 0) return zeros(x.shape(), DType::int32);
  const std::string side = right ? "left" : "right";
  const Array increasing = greater_equal(bins.index({n - 1}), bins.index({0}));
  const Array up = searchsorted(bins, x, side, Array(), method);
  const Array down = subtract(Array(Scalar(n, DType::int32)), searchsorted(flip(bins), x, side, Array(), method));
  return where(increasing, up, down);
}

}  // namespace tessel

// ---- order statistics ----

namespace tessel::ops {
namespace {

enum class QuantileMethod { kLinear, kLower, kHigher, kMidpoint, kNearest, kInvertedCdf };

QuantileMethod quantile_method(const std::string& op, const std::string& m) {
  if (m == "linear") return QuantileMethod::kLinear;
  if (m == "lower") return QuantileMethod::kLower;
  if (m == "higher") return QuantileMethod::kHigher;
  if (m == "midpoint") return QuantileMethod::kMidpoint;
  if (m == "nearest") return QuantileMethod::kNearest;
  if (m == "inverted_cdf") return QuantileMethod::kInvertedCdf;
  throw ValueError(op + ": method must be \"linear\", \"lower\", \"higher\", \"midpoint\", \"nearest\" or "
                   "\"inverted_cdf\", got \"" + m + "\"");
}

// The reduced axes move to the end and merge into one; the slices are sorted along it (NaNs
// last) and read at positions computed from q. Results are laid out (rest..., nq) until the
// end, where q's dimension moves to the front.
Array quantile_impl(const std::string& op, const Array& a_in, const Array& q_in, Axes axes_in,
                    const std::string& method_name, bool keepdims, bool skip_nans, const Array& weights) {
  if (!a_in.valid() || !q_in.valid()) throw ValueError(op + ": an argument is an empty Array (default-constructed)");
  const QuantileMethod method = quantile_method(op, method_name);
  if (weights.valid() && method != QuantileMethod::kInvertedCdf)
    throw NotImplementedError(op + ": method \"" + method_name + "\" does not take weights; only \"inverted_cdf\" does (as JAX)");
  if (weights.valid() && is_complex(weights.dtype()))
    throw DTypeError(op + ": weights cannot be complex, got " + dtype_name(weights.dtype()));
  if (is_complex(a_in.dtype()) || is_complex(q_in.dtype()))
    throw DTypeError(op + ": complex input is not supported (quantiles of complex numbers are not defined); "
                     "take real() or abs() first");
  if (q_in.ndim() > 1) throw ShapeError(op + ": q must have rank 0 or 1, got shape " + shape_to_string(q_in.shape()));
  PromotedType t = weights.valid() ? result_type({a_in, q_in, weights}) : result_type({a_in, q_in});
  const DType dt = is_inexact(t.dtype) ? t.dtype : default_float;
  const Array a = convert(a_in, dt), q = reshape(convert(q_in, dt), {q_in.size()});
  const Axes axes = canonicalize_axes(op, axes_in, a.ndim(), true);
  Axes perm;
  Shape rest, kept = a.shape();
  int64_t n = 1;
  for (int64_t d = 0; d < a.ndim(); ++d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) perm.push_back(d), rest.push_back(a.dim(d));
  for (int64_t d : axes) perm.push_back(d), n *= a.dim(d), kept[size_t(d)] = 1;
  if (n == 0) throw ValueError(op + ": cannot take quantiles of an empty slice (input shape " +
                               shape_to_string(a.shape()) + ")");
  Shape merged = rest;
  merged.push_back(n);
  Array x = reshape(transpose(a, perm), merged);
  const int64_t last = x.ndim() - 1;
  if (skip_nans) x = where(isnan(x), Array(Scalar(NAN, dt)), x);  // positive NaNs, sorted last
  else x = where(any(isnan(x), {last}, true), Array(Scalar(NAN, dt)), x);
  Array w;  // the weights, laid out and sorted like x
  if (weights.valid()) {
    Array full_w = convert(weights, dt);
    if (weights.shape() != a.shape()) {
      Shape reduced;
      for (int64_t d : axes) reduced.push_back(a.dim(d));
      if (axes_in.empty() || weights.shape() != reduced)
        throw ShapeError(op + ": weights of shape " + shape_to_string(weights.shape()) + " must have a's shape " +
                         shape_to_string(a.shape()) + (axes_in.empty() ? "" : " or the reduced axes' shape " +
                                                                                 shape_to_string(reduced)));
      full_w = broadcast_in_dim(full_w, a.shape(), axes);
    }
    std::vector<Array> both = bind_sort({x, reshape(transpose(full_w, perm), merged)}, last, true, 1);
    x = both[0], w = both[1];
  } else {
    x = bind_sort({x}, last, true, 1)[0];
  }
  // count: the values each slice holds (shape rest + (1,)); positions in [0, count - 1].
  Shape count_shape = rest;
  count_shape.push_back(1);
  const Array count = skip_nans ? sum(astype(logical_not(isnan(x)), dt), {last}, true)
                                : full(count_shape, Array(Scalar(double(n), dt)));
  const Array top = subtract(count, Array(Scalar(1.0, dt)));
  auto read = [&](const Array& pos) {
    const Array clamped = clip(pos, Array(Scalar(0.0, dt)), maximum(top, Array(Scalar(0.0, dt))));
    return take_along_axis(x, astype(clamped, DType::int32), last, {.mode = "clip"});
  };
  Array result;
  if (method == QuantileMethod::kInvertedCdf && w.valid()) {
    // The first position whose cumulative weight reaches q * total weight (NaN values weigh
    // nothing); a negative or NaN weight makes the slice's result NaN, as JAX.
    const Array zero = Array(Scalar(0.0, dt));
    const Array bad = logical_or(logical_or(less(w, zero), isnan(w)), isnan(x));
    const Array cum = cumsum(where(bad, zero, w), last);
    const Array target = multiply(q, slice_in_dim(cum, n - 1, n, 1, last));  // (rest..., nq)
    const Array below = less(expand_dims(cum, {last}), expand_dims(target, {last + 1}));  // (rest..., nq, n)
    result = read(astype(sum(astype(below, DType::int32), {last + 1}), dt));
    result = where(any(logical_or(less(w, zero), isnan(w)), {last}, true), Array(Scalar(NAN, dt)), result);
  } else if (method == QuantileMethod::kInvertedCdf) {
    // The first position whose cumulative count (1, 2, ...) reaches q * count.
    result = read(subtract(ceil(multiply(q, count)), Array(Scalar(1.0, dt))));
  } else {
    const Array pos = multiply(q, top), low = floor(pos), high = ceil(pos);
    const Array high_weight = subtract(pos, low), low_weight = subtract(Array(Scalar(1.0, dt)), high_weight);
    const Array lo = read(low), hi = read(high);
    switch (method) {
      case QuantileMethod::kLinear: result = add(multiply(lo, low_weight), multiply(hi, high_weight)); break;
      case QuantileMethod::kLower: result = lo; break;
      case QuantileMethod::kHigher: result = hi; break;
      case QuantileMethod::kNearest: result = where(less_equal(high_weight, Array(Scalar(0.5, dt))), lo, hi); break;
      default: result = multiply(add(lo, hi), Array(Scalar(0.5, dt))); break;
    }
  }
  // (rest..., nq) -> (nq, rest...) -> q's shape + the kept or reduced shape.
  result = moveaxis(result, -1, 0);
  Shape out = q_in.shape();
  Shape tail = keepdims ? kept : rest;
  out.insert(out.end(), tail.begin(), tail.end());
  return reshape(result, out);
}

}  // namespace
}  // namespace tessel::ops

namespace tessel {

Array quantile(const Array& a, const Array& q, Axes axes, const std::string& method, bool keepdims,
               const Array& weights) {
  return ops::quantile_impl("quantile", a, q, std::move(axes), method, keepdims, false, weights);
}
Array nanquantile(const Array& a, const Array& q, Axes axes, const std::string& method, bool keepdims,
                  const Array& weights) {
  return ops::quantile_impl("nanquantile", a, q, std::move(axes), method, keepdims, true, weights);
}
Array percentile(const Array& a, const Array& q, Axes axes, const std::string& method, bool keepdims,
                 const Array& weights) {
  return ops::quantile_impl("percentile", a, divide(q, Array(100.0)), std::move(axes), method, keepdims, false, weights);
}
Array nanpercentile(const Array& a, const Array& q, Axes axes, const std::string& method, bool keepdims,
                    const Array& weights) {
  return ops::quantile_impl("nanpercentile", a, divide(q, Array(100.0)), std::move(axes), method, keepdims, true,
                            weights);
}
Array median(const Array& a, Axes axes, bool keepdims) {
  return ops::quantile_impl("median", a, Array(0.5), std::move(axes), "midpoint", keepdims, false, Array());
}
Array nanmedian(const Array& a, Axes axes, bool keepdims) {
  return ops::quantile_impl("nanmedian", a, Array(0.5), std::move(axes), "midpoint", keepdims, true, Array());
}

}  // namespace tessel
