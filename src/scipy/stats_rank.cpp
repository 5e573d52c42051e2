// jax.scipy.stats.mode and rankdata (include/tessel/scipy_stats.h): both sort each slice and
// work on its runs of equal values, with scans over positions instead of JAX's unique/nonzero
// with a static size, so they need no value-dependent shapes and trace under jit and vmap.
#include <cmath>
#include <string>

#include "tessel/error.h"
#include "tessel/numpy.h"
#include "tessel/ops.h"
#include "tessel/scipy_stats.h"
#include "tessel/sort.h"

namespace tessel::scipy::stats {
namespace {

/// JAX accepts only "propagate": "omit" and "raise" would need the values at trace time.
void check_nan_policy(const std::string& fn, const std::string& nan_policy) {
  if (nan_policy == "propagate") return;
  if (nan_policy == "omit" || nan_policy == "raise")
    throw NotImplementedError("scipy::stats::" + fn + ": nan_policy \"" + nan_policy +
                              "\" is not implemented (as in JAX: under jit the values are unknown); test for NaNs "
                              "before the call (ts::any(ts::isnan(a))) and pass nan_policy \"propagate\"");
  throw ValueError("scipy::stats::" + fn + ": nan_policy \"" + nan_policy +
                   "\" is not one of \"propagate\", \"omit\", \"raise\"; pass \"propagate\"");
}

/// `axis` counted from 0, or a ValueError naming fn and the shape.
int64_t checked_axis(const std::string& fn, int64_t axis, const Array& a) {
  const int64_t nd = a.ndim();
  if (axis < -nd || axis >= nd)
    throw ValueError("scipy::stats::" + fn + ": axis " + std::to_string(axis) + " is out of range for an array of shape " +
                     shape_to_string(a.shape()) + "; pass an axis in [" + std::to_string(-nd) + ", " +
                     std::to_string(nd) + ") or nullopt for the flattened array");
  return axis < 0 ? axis + nd : axis;
}

/// Along the last axis of the sorted s (length >= 1): true where a run of equal values
/// starts. NaNs equal each other (jnp.unique's equal_nan) and -0.0 equals 0.0.
Array run_starts(const Array& s) {
  const int64_t last = s.ndim() - 1, n = s.shape().back();
  Array next = slice_in_dim(s, 1, n, 1, last), prev = slice_in_dim(s, 0, n - 1, 1, last);
  Array differs = next != prev;
  if (is_inexact(s.dtype())) differs = differs & !(isnan(next) & isnan(prev));
  Shape first = s.shape();
  first.back() = 1;
  return concatenate({full(first, Array(true)), differs}, last);
}

}  // namespace

ModeResult mode(const Array& a0, std::optional<int64_t> axis, const std::string& nan_policy, bool keepdims) {
  check_nan_policy("mode", nan_policy);
  const Array a = atleast_1d(a0);
  const int64_t ax = axis ? checked_axis("mode", *axis, a) : 0;
  // The slices along the last axis of x.
  const Array x = axis ? moveaxis(a, ax, -1) : reshape(a, {a.size()});
  Shape out_shape;
  for (int64_t d = 0; d < a.ndim(); ++d) {
    if (!axis || d == ax) {
      if (keepdims) out_shape.push_back(1);
    } else {
      out_shape.push_back(a.dim(d));
    }
  }
  if (x.shape().back() == 0)
    return {full(out_shape, Array(NAN), default_float), zeros(out_shape, default_float)};

  const int64_t last = x.ndim() - 1;
  const Array s = sort(x, last);
  const Array pos = iota(DType::int32, s.shape(), last);
  const Array start = cummax(where(run_starts(s), pos, Array(0)), last);
  const Array run = pos - start + Array(1);  // the length of each run so far
  // The first position where `run` peaks ends the smallest value among the most common ones.
  const Array count = max(run, {last}, true);
  const Array first = argmax(run, last, true) - count + Array(1);
  // The run's first element: the value jnp.unique reports (0.0 or -0.0 as they come first).
  const Array value = take_along_axis(s, first, last);
  return {reshape(value, out_shape), reshape(count, out_shape)};
}

Array rankdata(const Array& a, const std::string& method, std::optional<int64_t> axis, const std::string& nan_policy) {
  check_nan_policy("rankdata", nan_policy);
  if (method != "average" && method != "min" && method != "max" && method != "dense" && method != "ordinal")
    throw ValueError("scipy::stats::rankdata: method \"" + method +
                     "\" is unknown; pass \"average\", \"min\", \"max\", \"dense\" or \"ordinal\"");
  const int64_t ax = axis ? checked_axis("rankdata", *axis, a) : 0;
  const Array x = axis ? moveaxis(a, ax, -1) : reshape(a, {a.size()});
  const int64_t last = x.ndim() - 1, n = x.shape().back();
  if (n == 0) return zeros(axis ? a.shape() : x.shape(), default_float);

  const Array pos = iota(DType::int32, x.shape(), last);
  const auto [s, order] = sort_key_val(x, pos, last);  // stable: ties keep their order in a
  Array sorted_ranks;                                   // the rank at each sorted position
  if (method == "ordinal") {
    sorted_ranks = pos + Array(1);
  } else {
    const Array starts = run_starts(s);
    if (method == "dense") {
      sorted_ranks = cumsum(astype(starts, DType::int32), last);
    } else {
      Shape one = s.shape();
      one.back() = 1;
      const Array ends = concatenate({slice_in_dim(starts, 1, n, 1, last), full(one, Array(true))}, last);
      const Array lowest = cummax(where(starts, pos, Array(0)), last) + Array(1);
      const Array highest = cummin(where(ends, pos, Array(int32_t(n - 1))), last, /*reverse=*/true) + Array(1);
      if (method == "min") sorted_ranks = lowest;
      else if (method == "max") sorted_ranks = highest;
      else sorted_ranks = astype(lowest + highest, default_float) * Array(0.5f);
    }
  }
  // Sorting by `order` (a permutation) carries each rank back to its element's position.
  Array ranks = sort_key_val(order, astype(sorted_ranks, default_float), last).second;
  if (is_inexact(x.dtype())) ranks = where(any(isnan(x), {last}, true), full_like(ranks, Scalar(NAN)), ranks);
  return axis ? moveaxis(ranks, -1, ax) : ranks;
}

}  // namespace tessel::scipy::stats
