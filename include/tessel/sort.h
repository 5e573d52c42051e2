#pragma once
// Sorting and searching, named and behaving like jax.lax (sort, sort_key_val, top_k) and
// jax.numpy (sort, argsort, partition, searchsorted, unique, nonzero, histogram, quantile,
// set operations, ...). Two primitives carry them all: `sort` (lax.sort: operands of one
// shape sorted together, lexicographically by the first num_keys) and `top_k`. Everything
// works eagerly and under jit, grad and vmap (docs/sorting.md).
//
//   ts::Array x = ts::Array({3.0f, NAN, -0.0f, 1.0f, 0.0f});
//   ts::sort(x);                        // [-0, 0, 1, 3, nan]: NaNs last, -0 == 0 (stable)
//   ts::argsort(x, -1, true, true);     // descending, ties in their original order
//   auto [v, i] = ts::top_k(x, 2);      // [nan, 3], [1, 0]
//   ts::unique(x, {.size = 8, .fill_value = 0.0f}).values;   // under jit: a static size
//
// Order: floats sort with -0.0 equal to 0.0 and every NaN after +inf (as JAX); complex
// numbers by real part, then imaginary part. top_k (and so partition) uses the IEEE total
// order instead: -NaN < -inf < ... < -0.0 < 0.0 < ... < +inf < NaN.
//
// Functions whose result size depends on the values (unique, nonzero, argwhere,
// flatnonzero, one-argument where, bincount without length, the set operations) run
// eagerly without `size`; under jit/vmap/grad they need a static `size` (a
// ConcretizationError says so otherwise), and `fill_value` fills the unused tail.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tessel/array.h"
#include "tessel/ops.h"

namespace tessel {

// ---- lax level (src/ops/sort.cpp) ----

/// lax.sort: sorts `operands` (one shape, any dtypes) together along `dimension`, ordering
/// lexicographically by the first `num_keys` of them; the others follow the same
/// permutation. Stable when `is_stable` (tessel's kernel is always stable). For one operand
/// write `lax_sort({x})[0]` (or ts::sort).
TESSEL_API std::vector<Array> lax_sort(const std::vector<Array>& operands, int64_t dimension = -1,
                                       bool is_stable = true, int64_t num_keys = 1);
/// lax.sort_key_val: sorts `keys` along `dimension` and applies the same permutation to
/// `values` (same shape). Returns (sorted keys, permuted values).
TESSEL_API std::pair<Array, Array> sort_key_val(const Array& keys, const Array& values, int64_t dimension = -1,
                                                bool is_stable = true);
/// lax.top_k: the `k` largest elements along `axis` (largest first; ties: lower position
/// first) and their positions as int32. Not for complex operands.
TESSEL_API std::pair<Array, Array> top_k(const Array& operand, int64_t k, int64_t axis = -1);

// ---- sorting (src/ops/numpy_sort.cpp) ----

/// jnp.sort: a sorted copy along `axis` (none: of the flattened array). `descending`
/// reverses the order.
TESSEL_API Array sort(const Array& a, std::optional<int64_t> axis = -1, bool stable = true, bool descending = false);
/// jnp.argsort: the positions that sort `a` along `axis` (none: of the flattened array),
/// int32. A stable descending sort keeps equal elements in their original order.
TESSEL_API Array argsort(const Array& a, std::optional<int64_t> axis = -1, bool stable = true,
                         bool descending = false);
/// jnp.partition: a copy of `a` where position `kth` along `axis` holds the element a full
/// sort would put there, smaller ones before it and larger ones after it (in no particular
/// order). Uses top_k's order, so -NaN counts as smallest.
TESSEL_API Array partition(const Array& a, int64_t kth, int64_t axis = -1);
/// jnp.argpartition: the positions that partition `a` at `kth` (see partition).
TESSEL_API Array argpartition(const Array& a, int64_t kth, int64_t axis = -1);
/// jnp.sort_complex: sorts `a` along its last axis by (real, imag), as complex.
TESSEL_API Array sort_complex(const Array& a);
/// jnp.lexsort: positions that sort along `axis` by `keys` lexicographically, the LAST key
/// primary (as NumPy); int32.
TESSEL_API Array lexsort(const std::vector<Array>& keys, int64_t axis = -1);

// ---- searching ----

/// jnp.searchsorted: for each element of `v`, the position in the 1-D sorted `a` where it
/// would be inserted to keep the order ("left": before equal elements, "right": after),
/// int32, in the sort order above (NaNs last). `sorter`, when given, holds positions that
/// sort `a`. `method` is "scan" (a binary search: log2(n) gathers), "scan_unrolled",
/// "sort" (both share the binary search) or "compare_all" (compares every pair).
TESSEL_API Array searchsorted(const Array& a, const Array& v, const std::string& side = "left",
                              const Array& sorter = Array(), const std::string& method = "scan");
/// jnp.digitize: the bin of each element of `x` among the monotonic 1-D `bins` edges
/// (`right`: intervals closed on the right), int32.
TESSEL_API Array digitize(const Array& x, const Array& bins, bool right = false, const std::string& method = "scan");

/// The `size` of a result whose length depends on the values: required under jit, vmap and
/// grad. The first positions hold the result; the others hold `fill_value` (each function
/// says its default).
struct SizeOptions {
  std::optional<int64_t> size = std::nullopt;
  std::optional<Scalar> fill_value = std::nullopt;
};

/// jnp.nonzero: per dimension of `a` (rank >= 1), the positions of its nonzero elements in
/// row-major order, int32. With `size`, entries past the count hold fill_value (default:
/// what JAX gives, the positions continuing from the last one found).
TESSEL_API std::vector<Array> nonzero(const Array& a, const SizeOptions& options = {});
/// jnp.where with one argument: nonzero(condition).
TESSEL_API std::vector<Array> where(const Array& condition, const SizeOptions& options = {});
/// jnp.argwhere: the positions of the nonzero elements, one row each: (count, ndim), int32.
TESSEL_API Array argwhere(const Array& a, const SizeOptions& options = {});
/// jnp.flatnonzero: the flat positions of the nonzero elements, int32.
TESSEL_API Array flatnonzero(const Array& a, const SizeOptions& options = {});

/// The keyword arguments of jnp.unique.
struct UniqueOptions {
  bool return_index = false;    ///< fill UniqueResult::indices
  bool return_inverse = false;  ///< fill UniqueResult::inverse
  bool return_counts = false;   ///< fill UniqueResult::counts
  /// Unique slices along this axis (none: unique elements of the flattened array).
  std::optional<int64_t> axis = std::nullopt;
  /// NaNs count as equal to each other (one NaN in the result).
  bool equal_nan = true;
  /// Static result length (needed under jit); extra positions hold `fill_value` (default:
  /// the smallest unique value, as JAX).
  std::optional<int64_t> size = std::nullopt;
  std::optional<Scalar> fill_value = std::nullopt;
};
/// What jnp.unique returns; the arrays not asked for are empty (`!valid()`).
struct UniqueResult {
  Array values;   ///< the sorted unique elements (or slices along `axis`)
  Array indices;  ///< position of each one's first occurrence in the input
  Array inverse;  ///< per input element (or slice), its position in `values`
  Array counts;   ///< how often each occurs
};
/// jnp.unique.
TESSEL_API UniqueResult unique(const Array& a, const UniqueOptions& options = {});
/// The array-API forms (jnp.unique_all, unique_counts, unique_inverse, unique_values):
/// unique of the flattened `x` with NaNs distinct (equal_nan false), returning everything,
/// (values, counts), (values, inverse), or the values.
TESSEL_API UniqueResult unique_all(const Array& x, const SizeOptions& options = {});
TESSEL_API UniqueResult unique_counts(const Array& x, const SizeOptions& options = {});
TESSEL_API UniqueResult unique_inverse(const Array& x, const SizeOptions& options = {});
TESSEL_API Array unique_values(const Array& x, const SizeOptions& options = {});

/// jnp.bincount: counts (or sums of `weights`) of each value of the non-negative integer
/// array `x` (negative values count as 0), in `length` bins (none: max(minlength,
/// max(x) + 1), which needs concrete values). Values past the last bin are dropped.
TESSEL_API Array bincount(const Array& x, const Array& weights = Array(), int64_t minlength = 0,
                          std::optional<int64_t> length = std::nullopt);

/// The keyword arguments of jnp.histogram and jnp.histogram_bin_edges.
struct HistogramOptions {
  /// (low, high) of the bins; none: (min(a), max(a)); an empty range widens by 0.5 each side.
  std::optional<std::pair<double, double>> range = std::nullopt;
  /// A weight per element of `a` (same shape); empty: ones.
  Array weights = Array();
  /// Normalize the counts to a density (integral 1 over the range).
  bool density = false;
};
/// jnp.histogram with `bins` equal-width bins: (counts, bin edges); the last bin includes
/// its right edge, values outside the range are dropped.
TESSEL_API std::pair<Array, Array> histogram(const Array& a, int64_t bins = 10, const HistogramOptions& options = {});
/// jnp.histogram with explicit monotonically increasing bin edges.
TESSEL_API std::pair<Array, Array> histogram(const Array& a, const Array& bin_edges,
                                             const HistogramOptions& options = {});
/// jnp.histogram_bin_edges: the `bins + 1` edges histogram uses.
TESSEL_API Array histogram_bin_edges(const Array& a, int64_t bins = 10, const HistogramOptions& options = {});

// ---- order statistics ----

/// jnp.quantile: the `q`-th quantiles (q: rank 0 or 1, in [0, 1]) of `a` over `axes`
/// (empty: all). Methods: "linear" (default), "lower", "higher", "midpoint", "nearest",
/// "inverted_cdf". The result has q's dimensions first. A NaN in a reduced slice gives NaN.
/// `weights` (a's shape, or the reduced axes' shape) weigh the values, for "inverted_cdf"
/// only (as JAX); a negative or NaN weight in a slice gives NaN.
TESSEL_API Array quantile(const Array& a, const Array& q, Axes axes = {}, const std::string& method = "linear",
                          bool keepdims = false, const Array& weights = Array());
/// jnp.percentile: quantile(a, q / 100, ...).
TESSEL_API Array percentile(const Array& a, const Array& q, Axes axes = {}, const std::string& method = "linear",
                            bool keepdims = false, const Array& weights = Array());
/// jnp.median: quantile(a, 0.5, axes, "midpoint").
TESSEL_API Array median(const Array& a, Axes axes = {}, bool keepdims = false);
/// jnp.nanquantile: quantile ignoring NaNs (all-NaN slices give NaN).
TESSEL_API Array nanquantile(const Array& a, const Array& q, Axes axes = {}, const std::string& method = "linear",
                             bool keepdims = false, const Array& weights = Array());
/// jnp.nanpercentile.
TESSEL_API Array nanpercentile(const Array& a, const Array& q, Axes axes = {}, const std::string& method = "linear",
                               bool keepdims = false, const Array& weights = Array());
/// jnp.nanmedian.
TESSEL_API Array nanmedian(const Array& a, Axes axes = {}, bool keepdims = false);

// ---- set operations (flattened inputs; src/ops/numpy_setops.cpp) ----

/// jnp.isin: for each element of `element`, whether it occurs in `test_elements` (`invert`:
/// whether it does not). Same shape as `element`.
TESSEL_API Array isin(const Array& element, const Array& test_elements, bool assume_unique = false,
                      bool invert = false);
/// jnp.intersect1d: the sorted unique values found in both. fill_value default: the
/// smallest value of the result.
TESSEL_API Array intersect1d(const Array& a, const Array& b, bool assume_unique = false,
                             const SizeOptions& options = {});
/// What jnp.intersect1d(..., return_indices=True) returns.
struct Intersect1dResult {
  Array values;    ///< the sorted unique values found in both
  Array indices1;  ///< position of each one's first occurrence in a (a.size() for padding)
  Array indices2;  ///< position of each one's first occurrence in b (b.size() for padding)
};
/// jnp.intersect1d with return_indices=True.
TESSEL_API Intersect1dResult intersect1d_indices(const Array& a, const Array& b, bool assume_unique = false,
                                                 const SizeOptions& options = {});
/// jnp.union1d: the sorted unique values found in either.
TESSEL_API Array union1d(const Array& a, const Array& b, const SizeOptions& options = {});
/// jnp.setdiff1d: the sorted unique values of `a` not in `b`.
TESSEL_API Array setdiff1d(const Array& a, const Array& b, bool assume_unique = false,
                           const SizeOptions& options = {});

}  // namespace tessel
