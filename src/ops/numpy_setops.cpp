// jax.numpy's functions whose result length depends on the values: nonzero, where(cond),
// argwhere, flatnonzero, unique, bincount, histogram, and the set operations (isin,
// intersect1d, union1d, setdiff1d). Each is a composition of sort, cumulative sums,
// gathers and scatter-adds; eagerly the length comes from the concrete values, under a
// transformation from the caller's static `size` (as JAX's `size=` arguments).
#include <cmath>

#include "ops/sort.h"
#include "ops/sort_order.h"
#include "tessel/sort.h"

namespace tessel::ops {
namespace {

void check_valid(const std::string& op, std::initializer_list<const Array*> xs) {
  for (const Array* x : xs)
    if (!x->valid()) throw ValueError(op + ": an argument is an empty Array (default-constructed)");
}

/// The concrete value of the scalar `n` (a count of the result), or a ConcretizationError
/// that tells the caller to pass `size`.
int64_t concrete_size(const std::string& op, const Array& n) {
  if (n.is_tracer())
    throw ConcretizationError(op + ": the length of the result depends on the values of its input, which are not "
                              "known under jit, vmap or grad (the input is traced); pass a static size, e.g. "
                              "{.size = 16}, and optionally fill_value for the positions past the values found");
  return n.item<int64_t>();
}

int64_t checked_size(const std::string& op, int64_t size) {
  if (size < 0) throw ValueError(op + ": size must be >= 0, got " + std::to_string(size));
  return size;
}

Array count_true(const Array& mask) { return sum(astype(mask, DType::int32)); }

/// 0, 1, ..., size-1 < count: the positions that hold results.
Array filled(int64_t size, const Array& count) { return less(iota(DType::int32, {size}), count); }

/// Positions of the true elements of the 1-D `mask`, `size` of them (as jnp.nonzero: the
/// position of the (k+1)-th true element is the number of running counts <= k; past the
/// count it is mask.size(), which wraps to 0).
Array true_positions(const Array& mask, int64_t size) {
  if (size == 0 || mask.size() == 0) return zeros({size}, DType::int32);
  const Array running = cumsum(astype(mask, DType::int32), 0);
  const Array positions = cumsum(bincount(running, Array(), 0, size), 0);
  return remainder(positions, Array(Scalar(mask.size(), DType::int32)));
}

}  // namespace
}  // namespace tessel::ops

namespace tessel {

using ops::check_valid;

Array bincount(const Array& x, const Array& weights, int64_t minlength, std::optional<int64_t> length) {
  check_valid("bincount", {&x});
  if (!is_integer(x.dtype()) && !is_bool(x.dtype()))
    throw DTypeError(std::string("bincount: x must hold integers, got ") + dtype_name(x.dtype()) +
                     "; convert it with astype first");
  if (x.ndim() != 1) throw ShapeError("bincount: x must be one-dimensional, got shape " + shape_to_string(x.shape()));
  if (weights.valid() && weights.shape() != x.shape())
    throw ShapeError("bincount: weights of shape " + shape_to_string(weights.shape()) + " must match x's shape " +
                     shape_to_string(x.shape()));
  if (minlength < 0) throw ValueError("bincount: minlength must be >= 0, got " + std::to_string(minlength));
  int64_t n;
  if (length) {
    n = ops::checked_size("bincount", *length);
  } else {
    n = minlength;
    if (x.size() > 0) n = std::max(n, ops::concrete_size("bincount", max(astype(x, DType::int64))) + 1);
  }
  const Array w = weights.valid() ? weights : ones(x.shape(), default_int);
  const Array bins = clip(astype(x, DType::int32), Array(0), Array(INT32_MAX));
  return zeros({n}, ops::strong_dtype(w)).at({bins}).add(w, {.mode = "drop"});
}

std::vector<Array> nonzero(const Array& a, const SizeOptions& o) {
  check_valid("nonzero", {&a});
  if (a.ndim() == 0)
    throw ShapeError("nonzero: a rank-0 array has no positions; reshape it to (1,) first (jnp.atleast_1d)");
  const Array mask = ravel(is_bool(a.dtype()) ? a : not_equal(a, Array(Scalar(0, a.dtype()))));
  const Array count = ops::count_true(mask);
  const int64_t size = o.size ? ops::checked_size("nonzero", *o.size) : ops::concrete_size("nonzero", count);
  const Array flat = ops::true_positions(mask, size);
  std::vector<Array> out;
  const std::vector<int64_t> strides = ops::strides_of(a.shape());
  for (int64_t d = 0; d < a.ndim(); ++d) {
    Array pos = size == 0 || a.size() == 0
                    ? zeros({size}, DType::int32)
                    : remainder(floor_divide(flat, Array(Scalar(strides[size_t(d)], DType::int32))),
                                Array(Scalar(a.dim(d), DType::int32)));
    if (o.fill_value) pos = where(ops::filled(size, count), pos, Array(Scalar(o.fill_value->to<int64_t>(), DType::int32)));
    out.push_back(pos);
  }
  return out;
}

std::vector<Array> where(const Array& condition, const SizeOptions& o) { return nonzero(condition, o); }

Array argwhere(const Array& a, const SizeOptions& o) {
  check_valid("argwhere", {&a});
  if (a.ndim() == 0) {  // as NumPy: one row (or none) of no positions
    const Array r = argwhere(reshape(a, {1}), o);
    return slice(r, {0, 0}, {r.dim(0), 0});
  }
  return stack(nonzero(a, o), 1);
}

Array flatnonzero(const Array& a, const SizeOptions& o) {
  check_valid("flatnonzero", {&a});
  return nonzero(ravel(a), o)[0];
}

}  // namespace tessel

// ---- unique ----

namespace tessel::ops {
namespace {

/// The slices of `aux` (n, rest...) sorted lexicographically, and the permutation (int32).
std::pair<Array, Array> sorted_slices(const Array& aux) {
  const int64_t n = aux.dim(0), m = aux.size() / std::max<int64_t>(n, 1);
  const Array cols = reshape(aux, {n, m});
  std::vector<Array> operands;
  for (int64_t j = 0; j < m; ++j) operands.push_back(reshape(slice(cols, {0, j}, {n, j + 1}), {n}));
  operands.push_back(iota(DType::int32, {n}, 0));
  const Array perm = bind_sort(operands, 0, true, m).back();
  return {take(aux, perm, 0, {.mode = "promise_in_bounds"}), perm};
}

}  // namespace
}  // namespace tessel::ops

namespace tessel {

UniqueResult unique(const Array& a, const UniqueOptions& o) {
  check_valid("unique", {&a});
  const Array arr = o.axis ? a : ravel(a);
  if (arr.ndim() == 0) throw ShapeError("unique: a rank-0 array has no axis " + std::to_string(*o.axis));
  const int64_t axis = ops::canonicalize_axis("unique", o.axis.value_or(0), arr.ndim());
  const int64_t n = arr.dim(axis);
  if (o.size) ops::checked_size("unique", *o.size);
  if (n == 0 && o.size.value_or(0) > 0 && !o.fill_value)
    throw ValueError("unique: an empty input with size " + std::to_string(*o.size) +
                     " needs a fill_value for the positions past the values found");
  Array aux = moveaxis(arr, axis, 0);
  if (is_complex(aux.dtype())) aux = where(isnan(aux), Array(Scalar(NAN, aux.dtype())), aux);
  UniqueResult r;
  if (aux.size() == 0) {  // nothing to compare: the result is empty (or all fill_value)
    Shape s = aux.shape();
    s[0] = o.size.value_or(0);
    r.values = moveaxis(o.size && o.fill_value ? full(s, Array(*o.fill_value).astype(aux.dtype())) : zeros(s, aux.dtype()),
                        0, axis);
    if (o.return_index) r.indices = zeros({0}, default_int);
    if (o.return_inverse) r.inverse = zeros({n}, default_int);
    if (o.return_counts) r.counts = zeros({n == 0 ? 0 : 1}, default_int) + n;
    return r;
  }
  auto [sorted, perm] = ops::sorted_slices(aux);
  // mask[i]: slice i differs from slice i - 1 (the first one always counts).
  const Array next = slice_in_dim(sorted, 1, n, 1, 0), prev = slice_in_dim(sorted, 0, n - 1, 1, 0);
  Array differs = o.equal_nan && is_inexact(aux.dtype()) ? logical_not(ops::sort_equal(next, prev)) : not_equal(next, prev);
  Axes rest_axes;
  for (int64_t d = 1; d < differs.ndim(); ++d) rest_axes.push_back(d);
  if (!rest_axes.empty()) differs = any(differs, rest_axes);
  const Array mask = concatenate({ones({1}, DType::bool_), differs}, 0);
  const Array count = ops::count_true(mask);
  const int64_t size = o.size ? *o.size : ops::concrete_size("unique", count);
  const Array ind = ops::true_positions(mask, size);
  Array values = take(sorted, ind, 0, {.mode = "clip"});
  if (o.size && o.fill_value) {
    Shape s(size_t(values.ndim()), 1);
    s[0] = size;
    values = where(reshape(ops::filled(size, count), s), values, Array(*o.fill_value).astype(values.dtype()));
  }
  r.values = moveaxis(values, 0, axis);
  if (o.return_index) r.indices = take(perm, ind, 0, {.mode = "clip"});
  if (o.return_inverse) {
    const Array rank = subtract(cumsum(astype(mask, DType::int32), 0), Array(1));
    r.inverse = zeros({n}, DType::int32).at({perm}).set(rank);
    if (!o.axis) r.inverse = reshape(r.inverse, a.shape());
  }
  if (o.return_counts) {
    // Where each run starts, n past the last one (the wrapped 0s of the padding included):
    // the counts are the differences.
    const Array starts = ops::true_positions(mask, size + 1);
    const Array tail = slice_in_dim(starts, 1, size + 1, 1, 0);
    const Array bounds = concatenate(
        {slice_in_dim(starts, 0, 1, 1, 0), where(greater(tail, Array(0)), tail, Array(Scalar(n, DType::int32)))}, 0);
    r.counts = subtract(slice_in_dim(bounds, 1, size + 1, 1, 0), slice_in_dim(bounds, 0, size, 1, 0));
  }
  return r;
}

UniqueResult unique_all(const Array& x, const SizeOptions& o) {
  return unique(x, {.return_index = true, .return_inverse = true, .return_counts = true, .equal_nan = false,
                    .size = o.size, .fill_value = o.fill_value});
}
UniqueResult unique_counts(const Array& x, const SizeOptions& o) {
  return unique(x, {.return_counts = true, .equal_nan = false, .size = o.size, .fill_value = o.fill_value});
}
UniqueResult unique_inverse(const Array& x, const SizeOptions& o) {
  return unique(x, {.return_inverse = true, .equal_nan = false, .size = o.size, .fill_value = o.fill_value});
}
Array unique_values(const Array& x, const SizeOptions& o) {
  return unique(x, {.equal_nan = false, .size = o.size, .fill_value = o.fill_value}).values;
}

// ---- histograms ----

namespace {

DType histogram_dtype(DType d) { return is_inexact(d) ? d : default_float; }

/// The (low, high) of the bins: the option, or the data's extremes; an empty range widens
/// by 0.5 on each side (as NumPy).
std::pair<Array, Array> histogram_range(const Array& a, const HistogramOptions& o, DType dt) {
  Array lo, hi;
  if (o.range) {
    if (!(o.range->first <= o.range->second))
      throw ValueError("histogram: range must have low <= high, got (" + std::to_string(o.range->first) + ", " +
                       std::to_string(o.range->second) + ")");
    lo = Array(Scalar(o.range->first, dt)), hi = Array(Scalar(o.range->second, dt));
  } else {
    if (a.size() == 0) lo = Array(Scalar(0.0, dt)), hi = Array(Scalar(1.0, dt));
    else lo = astype(min(a), dt), hi = astype(max(a), dt);
  }
  const Array flat = equal(lo, hi);
  return {where(flat, subtract(lo, Array(0.5)), lo), where(flat, add(hi, Array(0.5)), hi)};
}

}  // namespace

Array histogram_bin_edges(const Array& a, int64_t bins, const HistogramOptions& o) {
  check_valid("histogram_bin_edges", {&a});
  if (bins < 1) throw ValueError("histogram_bin_edges: bins must be >= 1, got " + std::to_string(bins));
  const DType dt = histogram_dtype(a.dtype());
  auto [lo, hi] = histogram_range(ravel(a), o, dt);
  // lo + (hi - lo) * k / bins, with the last edge exactly hi.
  const Array k = iota(dt, {bins + 1});
  const Array edges = add(lo, multiply(subtract(hi, lo), divide(k, Array(Scalar(double(bins), dt)))));
  return where(equal(iota(DType::int32, {bins + 1}), Array(int(bins))), hi, edges);
}

std::pair<Array, Array> histogram(const Array& a, const Array& bin_edges, const HistogramOptions& o) {
  check_valid("histogram", {&a, &bin_edges});
  if (bin_edges.ndim() != 1 || bin_edges.dim(0) < 2)
    throw ShapeError("histogram: bin edges must be one-dimensional with at least 2 edges, got shape " +
                     shape_to_string(bin_edges.shape()));
  if (o.weights.valid() && o.weights.shape() != a.shape())
    throw ShapeError("histogram: weights of shape " + shape_to_string(o.weights.shape()) + " must match a's shape " +
                     shape_to_string(a.shape()));
  const DType dt = histogram_dtype(a.dtype());
  const Array x = astype(ravel(a), dt), edges = astype(bin_edges, dt);
  const Array w = o.weights.valid() ? ravel(o.weights) : ones(x.shape(), a.dtype());  // counts in a's dtype, as JAX
  const int64_t m = edges.dim(0);
  // Bin i + 1 holds edges[i] <= x < edges[i + 1]; the last bin also holds its right edge.
  Array bin = searchsorted(edges, x, "right");
  bin = where(equal(x, edges.index({m - 1})), Array(Scalar(m - 1, DType::int32)), bin);
  Array counts = zeros({m}, ops::strong_dtype(w)).at({bin}).add(w, {.mode = "drop"});
  counts = slice_in_dim(counts, 1, m, 1, 0);
  if (o.density) {
    const Array widths = subtract(slice_in_dim(edges, 1, m, 1, 0), slice_in_dim(edges, 0, m - 1, 1, 0));
    counts = divide(divide(counts, widths), sum(counts));
  }
  return {counts, edges};
}

std::pair<Array, Array> histogram(const Array& a, int64_t bins, const HistogramOptions& o) {
  return histogram(a, histogram_bin_edges(a, bins, o), o);
}

// ---- set operations ----

// Sorted test elements and a binary search: O((n + m) log m) rather than comparing all pairs.
// Membership is ==, so NaN is in no set and -0.0 is in a set holding 0.0 (as JAX).
Array isin(const Array& element, const Array& test_elements, bool, bool invert) {
  check_valid("isin", {&element, &test_elements});
  const PromotedType t = ops::result_type({element, test_elements});
  const Array e = ops::convert(ravel(element), t.dtype), tests = ops::convert(ravel(test_elements), t.dtype);
  Array found;
  if (tests.size() == 0) {
    found = zeros(e.shape(), DType::bool_);
  } else {
    const Array s = sort(tests, 0);
    found = equal(take(s, searchsorted(s, e, "left"), 0, {.mode = "clip"}), e);
  }
  found = reshape(found, element.shape());
  return invert ? logical_not(found) : found;
}

namespace {

/// Both arguments flattened, in their promoted dtype.
std::pair<Array, Array> set_operands(const std::string& op, const Array& a, const Array& b) {
  check_valid(op, {&a, &b});
  const PromotedType t = ops::result_type({a, b});
  return {ops::convert(ravel(a), t.dtype), ops::convert(ravel(b), t.dtype)};
}

/// The `mask`ed elements of the 1-D `x` in order, `size` of them (the count of true
/// elements when none, which needs concrete values), the others `fill`.
Array compress(const std::string& op, const Array& x, const Array& mask, std::optional<int64_t> size, const Array& fill) {
  const Array count = ops::count_true(mask);
  const int64_t n = size ? *size : ops::concrete_size(op, count);
  if (x.size() == 0) return full({n}, fill.astype(x.dtype()));
  const Array picked = take(x, ops::true_positions(mask, n), 0, {.mode = "clip"});
  return where(ops::filled(n, count), picked, fill.astype(x.dtype()));
}

/// The sorted unique values of `x` and which of them are real: under `size`, x.size() of
/// them, padded (unique's default padding) past the count; else just the values.
std::pair<Array, Array> unique_padded(const Array& x, std::optional<int64_t> size) {
  if (!size) {
    const Array u = unique(x).values;
    return {u, ones(u.shape(), DType::bool_)};
  }
  const UniqueResult r = unique(x, {.return_counts = true, .size = x.size()});
  return {r.values, greater(r.counts, Array(0))};
}

}  // namespace

Array union1d(const Array& a, const Array& b, const SizeOptions& o) {
  auto [x, y] = set_operands("union1d", a, b);
  return unique(concatenate({x, y}, 0), {.size = o.size, .fill_value = o.fill_value}).values;
}

// The sorted unique values of a (padded with copies of the smallest under `size`), kept
// where they are not in b; fill_value defaults to 0 (as JAX).
Array setdiff1d(const Array& a, const Array& b, bool assume_unique, const SizeOptions& o) {
  auto [x, y] = set_operands("setdiff1d", a, b);
  const Array fill = o.fill_value ? Array(*o.fill_value) : Array(Scalar(0, x.dtype()));
  if (o.size) ops::checked_size("setdiff1d", *o.size);
  if (x.size() == 0) return full({o.size.value_or(0)}, fill.astype(x.dtype()));
  auto [u, valid] = assume_unique ? std::pair{x, ones(x.shape(), DType::bool_)} : unique_padded(x, o.size);
  return compress("setdiff1d", u, logical_and(valid, isin(u, y, true, true)), o.size, fill);
}

// The sorted unique values of a (with the position of each one's first occurrence) looked
// up in b sorted stably with its positions: a binary search finds each value's first
// occurrence in b. fill_value defaults to the smallest value found (0 when there are none),
// and the positions of the padding to the sizes of a and b, as JAX.
Intersect1dResult intersect1d_indices(const Array& a, const Array& b, bool assume_unique, const SizeOptions& o) {
  auto [x, y] = set_operands("intersect1d", a, b);
  if (o.size) ops::checked_size("intersect1d", *o.size);
  Array u, first_a, valid;
  if (assume_unique) {
    std::tie(u, first_a) = sort_key_val(x, iota(DType::int32, x.shape()), 0);
    valid = ones(x.shape(), DType::bool_);
  } else {
    const UniqueResult r = unique(x, {.return_index = true, .return_counts = true, .size = o.size ? std::optional(x.size()) : std::nullopt});
    u = r.values, first_a = r.indices, valid = greater(r.counts, Array(0));
  }
  Array found = zeros(u.shape(), DType::bool_), first_b = zeros(u.shape(), DType::int32);
  if (y.size() > 0 && u.size() > 0) {
    auto [sorted_b, positions_b] = sort_key_val(y, iota(DType::int32, y.shape()), 0);
    const Array at = searchsorted(sorted_b, u, "left");
    found = equal(take(sorted_b, at, 0, {.mode = "clip"}), u);
    first_b = take(positions_b, at, 0, {.mode = "clip"});
  }
  const Array mask = logical_and(valid, found), count = ops::count_true(mask);
  const Scalar zero(0, u.dtype());
  Intersect1dResult r;
  r.values = compress("intersect1d", u, mask, o.size, Array(zero));
  r.indices1 = compress("intersect1d", first_a, mask, o.size, Array(Scalar(x.size(), DType::int32)));
  r.indices2 = compress("intersect1d", first_b, mask, o.size, Array(Scalar(y.size(), DType::int32)));
  if (o.size && (o.fill_value || (*o.size > 0 && u.size() > 0))) {
    const Array fill = o.fill_value ? Array(*o.fill_value).astype(u.dtype())
                                    : where(greater(count, Array(0)), r.values.index({0}), Array(zero));
    r.values = where(ops::filled(*o.size, count), r.values, fill);
  }
  return r;
}

Array intersect1d(const Array& a, const Array& b, bool assume_unique, const SizeOptions& o) {
  return intersect1d_indices(a, b, assume_unique, o).values;
}

}  // namespace tessel
