// tessel's side of tests/parity/cases_sort.py (include/tessel/sort.h).
#include "parity/parity.h"
#include "tessel/sort.h"

namespace ts = tessel;
using namespace tessel::parity;

namespace {
Out pair_out(const std::pair<Array, Array>& r) { return {r.first, r.second}; }
/// JAX's `size` of a value-dependent result.
ts::SizeOptions sized(const Params& p) { return {.size = p.i("size")}; }
}  // namespace

TESSEL_PARITY_CASES(sort) {
  // ---- sorting ----
  reg("sort", [](const In& x, const Params& p) {
    return out(ts::sort(x[0], p.opt_i("axis"), p.flag("stable"), p.flag("descending")));
  });
  reg("argsort", [](const In& x, const Params& p) {
    return out(ts::argsort(x[0], p.opt_i("axis"), p.flag("stable"), p.flag("descending")));
  });
  reg("lax_sort", [](const In& x, const Params& p) { return ts::lax_sort(x, -1, true, p.i("num_keys")); });
  reg("sort_key_val", [](const In& x, const Params&) { return pair_out(ts::sort_key_val(x[0], x[1], 0)); });
  reg("top_k", [](const In& x, const Params& p) { return pair_out(ts::top_k(x[0], p.i("k"))); });
  reg("partition", [](const In& x, const Params& p) { return out(ts::partition(x[0], p.i("kth"), p.i("axis"))); });
  reg("argpartition",
      [](const In& x, const Params& p) { return out(ts::argpartition(x[0], p.i("kth"), p.i("axis"))); });
  reg("sort_complex", unary(ts::sort_complex));
  // jnp.lexsort((a, b)): b is the primary key, as NumPy.
  reg("lexsort", [](const In& x, const Params& p) { return out(ts::lexsort(x, p.i("axis"))); });

  // ---- searching ----
  reg("searchsorted", [](const In& x, const Params& p) { return out(ts::searchsorted(x[0], x[1], p.s("side"))); });
  reg("digitize", [](const In& x, const Params& p) { return out(ts::digitize(x[0], x[1], p.flag("right"))); });
  reg("nonzero", [](const In& x, const Params& p) { return ts::nonzero(x[0], sized(p)); });
  reg("argwhere", [](const In& x, const Params& p) { return out(ts::argwhere(x[0], sized(p))); });
  reg("flatnonzero", [](const In& x, const Params& p) { return out(ts::flatnonzero(x[0], sized(p))); });

  // ---- counting and order statistics ----
  reg("unique", [](const In& x, const Params& p) {
    auto r = ts::unique(x[0], {.return_index = true, .return_inverse = true, .return_counts = true,
                               .size = p.i("size")});
    return Out{r.values, r.indices, r.inverse, r.counts};
  });
  reg("unique_all", [](const In& x, const Params& p) {
    auto r = ts::unique_all(x[0], sized(p));
    return Out{r.values, r.indices, r.inverse, r.counts};
  });
  reg("unique_counts", [](const In& x, const Params& p) {
    auto r = ts::unique_counts(x[0], sized(p));
    return Out{r.values, r.counts};
  });
  reg("unique_inverse", [](const In& x, const Params& p) {
    auto r = ts::unique_inverse(x[0], sized(p));
    return Out{r.values, r.inverse};
  });
  reg("unique_values", [](const In& x, const Params& p) { return out(ts::unique_values(x[0], sized(p))); });
  reg("bincount", [](const In& x, const Params& p) {
    return out(ts::bincount(x[0], x.size() > 1 ? x[1] : Array(), 0, p.i("length")));
  });
  reg("histogram", [](const In& x, const Params& p) {
    auto range = p.floats("range");
    return pair_out(ts::histogram(x[0], p.i("bins"), {.range = std::make_pair(range.at(0), range.at(1))}));
  });
  reg("histogram_bin_edges",
      [](const In& x, const Params& p) { return out(ts::histogram_bin_edges(x[0], p.i("bins"))); });
  reg("quantile", [](const In& x, const Params& p) {
    return out(ts::quantile(x[0], x[1], p.ints("axis"), p.has("method") ? p.s("method") : "linear"));
  });
  reg("percentile", [](const In& x, const Params& p) { return out(ts::percentile(x[0], x[1], p.ints("axis"))); });
  reg("median", [](const In& x, const Params& p) { return out(ts::median(x[0], p.ints("axis"), p.flag("keepdims"))); });
  reg("nanquantile", [](const In& x, const Params& p) { return out(ts::nanquantile(x[0], x[1], p.ints("axis"))); });
  reg("nanpercentile",
      [](const In& x, const Params& p) { return out(ts::nanpercentile(x[0], x[1], p.ints("axis"))); });
  reg("nanmedian", [](const In& x, const Params& p) { return out(ts::nanmedian(x[0], p.ints("axis"))); });

  // ---- set operations ----
  reg("isin", [](const In& x, const Params& p) { return out(ts::isin(x[0], x[1], false, p.flag("invert"))); });
  reg("intersect1d",
      [](const In& x, const Params& p) { return out(ts::intersect1d(x[0], x[1], false, sized(p))); });
  reg("union1d", [](const In& x, const Params& p) { return out(ts::union1d(x[0], x[1], sized(p))); });
  reg("setdiff1d", [](const In& x, const Params& p) { return out(ts::setdiff1d(x[0], x[1], false, sized(p))); });
}
