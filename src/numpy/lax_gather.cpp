// lax.gather and the lax.scatter family with XLA's dimension numbers
// (include/tessel/lax_extra.h), composed of tessel's gather and scatter primitives
// (src/ops/indexing.cpp), which index some operand dimensions with integer arrays of one
// shape and take a window of the others.
//
// A JAX gather reads, for each index vector (batch position b), the slice of `slice_sizes`
// starting at the vector's starts (operand batching dimensions start at b's position along
// the matching index dimension). Here every operand dimension that has a start (named by
// start_index_map or a batching dimension) is indexed by an array over (b, window): the
// start broadcast over the window plus an iota along the window; the other dimensions are
// windows from 0. The primitive's result (b..., windows of the indexed dims..., windows of
// the others...) is then squeezed and transposed into JAX's layout. Starts are clamped so the
// slice fits (XLA's rule); in "fill" mode a slice that does not fit reads the fill value
// instead, and a scatter window that does not fit is dropped (its indices are moved out of
// range, where tessel's scatter drops updates). Derivatives, batching and partitioning come
// from the primitives.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "ops/indexing.h"
#include "ops/op_util.h"
#include "tessel/control_flow.h"
#include "tessel/lax_extra.h"

namespace tessel::lax {
namespace {

bool contains(const Axes& a, int64_t d) { return std::find(a.begin(), a.end(), d) != a.end(); }

enum class Mode { kClip, kFill, kPromise };

Mode parse_mode(const std::string& op, const std::string& m) {
  if (m == "clip") return Mode::kClip;
  if (m == "fill" || m == "drop" || m == "fill_or_drop" || m.empty()) return Mode::kFill;
  if (m == "promise_in_bounds") return Mode::kPromise;
  throw ValueError(op + ": unknown mode '" + m + "'; expected \"clip\", \"fill\" (\"drop\") or \"promise_in_bounds\"");
}

/// How the indexed operand dimensions are read or written.
struct IndexPlan {
  Shape batch;                      // the index vectors' batch shape B
  Axes indexed;                     // operand dims indexed by arrays, ascending
  std::vector<Array> index_arrays;  // one per indexed dim, of shape B + (window of each dim in `windowed`)
  Axes windowed;                    // indexed dims with a window axis, ascending
  Axes rest;                        // the other operand dims (windows from 0), ascending
  Array valid;                      // bool of shape B: the slice fits (only in fill mode with starts)
};

/// The plan for operand shape `xs`, index vectors in `indices` (last dim), windows `ws` per
/// operand dim; `dropped` names the dims without a window axis in the result (collapsed /
/// inserted dims and batching dims).
IndexPlan make_plan(const std::string& op, const Shape& xs, const Array& indices, const Axes& start_map,
                    const Axes& operand_batching, const Axes& indices_batching, const Shape& ws, const Axes& dropped,
                    Mode mode) {
  const int64_t r = int64_t(xs.size());
  ops::check_index_dtype(op, indices.dtype());
  if (indices.ndim() < 1)
    throw ShapeError(op + ": the indices must have at least one dimension (the index vector is the last), got a scalar");
  if (indices.shape().back() != int64_t(start_map.size()))
    throw ShapeError(op + ": the index vectors have " + std::to_string(indices.shape().back()) +
                     " entries (last dimension of " + shape_to_string(indices.shape()) + ") but the dimension numbers map " +
                     std::to_string(start_map.size()) + " operand dimensions " + shape_to_string(start_map));
  if (int64_t(ws.size()) != r)
    throw ShapeError(op + ": the slice sizes " + shape_to_string(ws) + " need one entry per dimension of the operand " +
                     shape_to_string(xs));
  for (int64_t d = 0; d < r; ++d)
    if (ws[size_t(d)] < 0 || ws[size_t(d)] > xs[size_t(d)])
      throw ShapeError(op + ": slice size " + std::to_string(ws[size_t(d)]) + " of dimension " + std::to_string(d) +
                       " must be in [0, " + std::to_string(xs[size_t(d)]) + "] for the operand " + shape_to_string(xs));
  const auto check_dims = [&](const Axes& a, const char* what, int64_t bound) {
    for (int64_t d : a)
      if (d < 0 || d >= bound || std::count(a.begin(), a.end(), d) > 1)
        throw ValueError(op + ": " + what + " " + shape_to_string(a) + " must be distinct dimensions in [0, " +
                         std::to_string(bound) + ")");
  };
  check_dims(start_map, "the start index map", r);
  check_dims(operand_batching, "operand_batching_dims", r);
  check_dims(dropped, "the collapsed/inserted and batching dims", r);
  const int64_t nb = indices.ndim() - 1;
  check_dims(indices_batching, "the indices' batching dims", nb);
  if (operand_batching.size() != indices_batching.size())
    throw ValueError(op + ": operand_batching_dims " + shape_to_string(operand_batching) + " and the indices' batching dims " +
                     shape_to_string(indices_batching) + " must have one length");
  for (int64_t d : dropped)
    if (ws[size_t(d)] != 1)
      throw ShapeError(op + ": dimension " + std::to_string(d) + " is collapsed (or inserted, or a batching dimension) "
                       "so its window size must be 1, got " + std::to_string(ws[size_t(d)]));
  IndexPlan p;
  p.batch = Shape(indices.shape().begin(), indices.shape().end() - 1);
  for (size_t j = 0; j < operand_batching.size(); ++j)
    if (xs[size_t(operand_batching[j])] != p.batch[size_t(indices_batching[j])])
      throw ShapeError(op + ": operand batching dimension " + std::to_string(operand_batching[j]) + " has size " +
                       std::to_string(xs[size_t(operand_batching[j])]) + " but the indices' batching dimension " +
                       std::to_string(indices_batching[j]) + " has " + std::to_string(p.batch[size_t(indices_batching[j])]));
  for (int64_t d = 0; d < r; ++d) {
    const bool has_start = contains(start_map, d) || contains(operand_batching, d);
    if (contains(start_map, d) && contains(operand_batching, d))
      throw ValueError(op + ": dimension " + std::to_string(d) + " is both in the start index map and a batching dimension");
    (has_start ? p.indexed : p.rest).push_back(d);
    if (has_start && !contains(dropped, d)) p.windowed.push_back(d);
  }
  // The full index shape: B, then one axis per windowed dim.
  Shape full = p.batch;
  for (int64_t d : p.windowed) full.push_back(ws[size_t(d)]);
  Axes batch_dims(static_cast<size_t>(nb));
  std::iota(batch_dims.begin(), batch_dims.end(), 0);
  const DType wd = itemsize(indices.dtype()) == 8 ? DType::int64 : DType::int32;
  for (int64_t d : p.indexed) {
    Array start;
    auto k = std::find(start_map.begin(), start_map.end(), d);
    if (k != start_map.end()) {
      const int64_t kk = k - start_map.begin();
      const Array s = reshape(slice_in_dim(indices, kk, kk + 1, 1, nb), p.batch).astype(wd);
      const Array hi = Array(Scalar(xs[size_t(d)] - ws[size_t(d)], wd)), lo = zeros({}, wd);
      if (mode == Mode::kFill) {
        const Array ok = (s >= lo) & (s <= hi);
        p.valid = p.valid.valid() ? (p.valid & ok) : ok;
      }
      start = clip(s, lo, hi);
    } else {
      const size_t j = size_t(std::find(operand_batching.begin(), operand_batching.end(), d) - operand_batching.begin());
      start = iota(wd, p.batch, indices_batching[j]);
    }
    Array idx = broadcast_in_dim(start, full, batch_dims);
    auto w = std::find(p.windowed.begin(), p.windowed.end(), d);
    if (w != p.windowed.end()) idx = idx + iota(wd, full, nb + (w - p.windowed.begin()));
    p.index_arrays.push_back(idx);
  }
  return p;
}

/// Params of tessel's gather/scatter for a plan: windows [0, ws) on the other dims.
ops::Params plan_params(const IndexPlan& p, const Shape& xs, const Shape& ws) {
  Shape start(xs.size(), 0), limit = xs, strides(xs.size(), 1);
  for (int64_t d : p.rest) limit[size_t(d)] = ws[size_t(d)];
  return ops::indexed_params(p.indexed, 0, start, limit, strides);
}

/// The operand dims in the order of the primitive's non-batch axes: windowed, then rest.
Axes raw_window_dims(const IndexPlan& p) {
  Axes a = p.windowed;
  a.insert(a.end(), p.rest.begin(), p.rest.end());
  return a;
}

Scalar default_fill(DType d) {
  if (is_inexact(d)) return Scalar(std::nan(""), d);
  if (is_bool(d)) return Scalar(true);
  const int bits = int(itemsize(d)) * 8;
  if (is_signed_int(d)) return Scalar(std::numeric_limits<int64_t>::min() >> (64 - bits), d);
  return Scalar(std::numeric_limits<uint64_t>::max() >> (64 - bits), d);
}

}  // namespace

Array gather(const Array& operand, const Array& start_indices, const GatherDimensionNumbers& dn, const Shape& slice_sizes,
             const GatherOptions& options) {
  const std::string op = "gather";
  const Mode mode = parse_mode(op, options.mode);
  const Shape& xs = operand.shape();
  Axes dropped = dn.collapsed_slice_dims;
  dropped.insert(dropped.end(), dn.operand_batching_dims.begin(), dn.operand_batching_dims.end());
  const IndexPlan p = make_plan(op, xs, start_indices, dn.start_index_map, dn.operand_batching_dims,
                                dn.start_indices_batching_dims, slice_sizes, dropped, mode);
  const int64_t nb = int64_t(p.batch.size());
  // The offset dims: operand dims that keep a window axis, ascending.
  Axes offset_operand;
  for (int64_t d = 0; d < operand.ndim(); ++d)
    if (!contains(dropped, d)) offset_operand.push_back(d);
  const int64_t out_rank = nb + int64_t(offset_operand.size());
  if (dn.offset_dims.size() != offset_operand.size() || !std::is_sorted(dn.offset_dims.begin(), dn.offset_dims.end()))
    throw ValueError(op + ": offset_dims " + shape_to_string(dn.offset_dims) + " must list, ascending, one result " +
                     "dimension per slice dimension that is not collapsed (" + std::to_string(offset_operand.size()) + ")");
  for (int64_t d : dn.offset_dims)
    if (d < 0 || d >= out_rank || std::count(dn.offset_dims.begin(), dn.offset_dims.end(), d) > 1)
      throw ValueError(op + ": offset_dims " + shape_to_string(dn.offset_dims) + " must be distinct dimensions of the "
                       "rank-" + std::to_string(out_rank) + " result");
  Array raw;
  if (p.indexed.empty()) {
    // No starts: every index vector reads the same leading slice.
    Shape zero(xs.size(), 0);
    Array s = slice(operand, zero, slice_sizes);
    raw = broadcast(s, p.batch);
  } else {
    std::vector<Array> ins{operand};
    ins.insert(ins.end(), p.index_arrays.begin(), p.index_arrays.end());
    raw = ops::bind1(ops::gather_p, ins, plan_params(p, xs, slice_sizes));
  }
  // raw: (B..., one axis per operand dim of raw_window_dims). Drop the collapsed ones.
  const Axes wdims = p.indexed.empty() ? [&] { Axes a(xs.size()); std::iota(a.begin(), a.end(), 0); return a; }()
                                       : raw_window_dims(p);
  Axes squeeze_axes;
  std::vector<int64_t> kept;  // operand dim of each remaining window axis
  for (size_t i = 0; i < wdims.size(); ++i) {
    if (contains(dropped, wdims[i])) squeeze_axes.push_back(nb + int64_t(i));
    else kept.push_back(wdims[i]);
  }
  if (!squeeze_axes.empty()) raw = squeeze(raw, squeeze_axes);
  // Result position -> raw axis: offset_dims[i] holds offset dim i, the rest the batch dims.
  Axes perm(static_cast<size_t>(out_rank));
  size_t next_batch = 0;
  for (int64_t pos = 0, off = 0; pos < out_rank; ++pos) {
    if (off < int64_t(dn.offset_dims.size()) && dn.offset_dims[size_t(off)] == pos) {
      const int64_t d = offset_operand[size_t(off++)];
      perm[size_t(pos)] = nb + (std::find(kept.begin(), kept.end(), d) - kept.begin());
    } else {
      perm[size_t(pos)] = int64_t(next_batch++);
    }
  }
  Array out = transpose(raw, perm);
  if (mode == Mode::kFill && p.valid.valid()) {
    Axes bpos;
    for (int64_t pos = 0; pos < out_rank; ++pos)
      if (!contains(dn.offset_dims, pos)) bpos.push_back(pos);
    const Array ok = broadcast_in_dim(p.valid, out.shape(), bpos);
    const Scalar fill = options.fill_value ? options.fill_value->astype(out.dtype()) : default_fill(out.dtype());
    out = where(ok, out, full_like(out, fill));
  }
  return out;
}

namespace {

Array scatter_impl(const std::string& op, const std::string& combine, const Array& operand, const Array& indices,
                   const Array& updates, const ScatterDimensionNumbers& dn, const ScatterOptions& options) {
  const Mode mode = parse_mode(op, options.mode);
  const Shape& xs = operand.shape();
  const int64_t r = operand.ndim();
  if (updates.dtype() != operand.dtype())
    throw DTypeError(op + ": updates of dtype " + std::string(dtype_name(updates.dtype())) + " differ from the operand's " +
                     dtype_name(operand.dtype()) + "; convert them with astype");
  Axes dropped = dn.inserted_window_dims;
  dropped.insert(dropped.end(), dn.operand_batching_dims.begin(), dn.operand_batching_dims.end());
  Axes window_operand;
  for (int64_t d = 0; d < r; ++d)
    if (!contains(dropped, d)) window_operand.push_back(d);
  const Axes& uw = dn.update_window_dims;
  if (uw.size() != window_operand.size() || !std::is_sorted(uw.begin(), uw.end()))
    throw ValueError(op + ": update_window_dims " + shape_to_string(uw) + " must list, ascending, one updates dimension " +
                     "per operand dimension that is not inserted or batching (" + std::to_string(window_operand.size()) + ")");
  const int64_t nb = indices.ndim() - 1;
  if (updates.ndim() != nb + int64_t(uw.size()))
    throw ShapeError(op + ": updates of shape " + shape_to_string(updates.shape()) + " need rank " +
                     std::to_string(nb + int64_t(uw.size())) + " (the indices' batch dims " + std::to_string(nb) +
                     " plus the window dims " + std::to_string(uw.size()) + ")");
  for (int64_t d : uw)
    if (d < 0 || d >= updates.ndim())
      throw ValueError(op + ": update_window_dims " + shape_to_string(uw) + " must be dimensions of the updates " +
                       shape_to_string(updates.shape()));
  Shape ws(size_t(r), 1);
  for (size_t i = 0; i < uw.size(); ++i) ws[size_t(window_operand[i])] = updates.dim(uw[i]);
  Axes ubatch;  // updates' scatter dims, in order
  for (int64_t d = 0; d < updates.ndim(); ++d)
    if (!contains(uw, d)) ubatch.push_back(d);
  const Shape ib(indices.shape().begin(), indices.shape().end() - (indices.ndim() > 0 ? 1 : 0));
  for (size_t i = 0; i < ubatch.size() && i < ib.size(); ++i)
    if (updates.dim(ubatch[i]) != ib[i])
      throw ShapeError(op + ": the updates' scatter dimensions of " + shape_to_string(updates.shape()) +
                       " must match the indices' batch shape " + shape_to_string(ib));
  IndexPlan p = make_plan(op, xs, indices, dn.scatter_dims_to_operand_dims, dn.operand_batching_dims,
                          dn.scatter_indices_batching_dims, ws, dropped, mode);
  // Updates as (B..., window axes in operand order), then as the primitive's indexed shape
  // (B..., windowed dims..., rest dims incl. size-1 inserted ones...).
  Axes perm = ubatch;
  perm.insert(perm.end(), uw.begin(), uw.end());
  Array u = transpose(updates, perm);
  Shape all_windows = p.batch;
  for (int64_t d = 0; d < r; ++d) all_windows.push_back(ws[size_t(d)]);
  {  // insert the size-1 axes of the dropped dims, in operand order
    Axes keep_dims(size_t(u.ndim()));
    for (int64_t i = 0; i < nb; ++i) keep_dims[size_t(i)] = i;
    for (size_t i = 0; i < window_operand.size(); ++i) keep_dims[size_t(nb) + i] = nb + window_operand[i];
    u = broadcast_in_dim(u, all_windows, keep_dims);
  }
  if (p.indexed.empty()) {
    // Every window starts at 0: the updates, combined over the batch (the last one for set),
    // combine with the operand's leading window.
    const int64_t n = std::accumulate(p.batch.begin(), p.batch.end(), int64_t(1), std::multiplies<>());
    if (n == 0) return operand;
    Shape flat{n};
    flat.insert(flat.end(), ws.begin(), ws.end());
    const Array uf = reshape(u, flat);
    const std::vector<Array> origin(size_t(r), zeros({}, DType::int32));
    const Array cur = dynamic_slice(operand, origin, ws);
    Array nv;
    if (combine == "set") nv = squeeze(slice_in_dim(uf, n - 1, n), Axes{0});
    else if (combine == "add") nv = cur + sum(uf, {0});
    else if (combine == "mul") nv = cur * prod(uf, {0});
    else if (combine == "min") nv = minimum(cur, min(uf, {0}));
    else nv = maximum(cur, max(uf, {0}));
    return dynamic_update_slice(operand, nv, origin);
  }
  // (B..., windowed..., rest...) and last the size-1 axes of indexed dims without a window,
  // which the primitive's indexed shape does not have.
  Axes order;
  for (int64_t i = 0; i < nb; ++i) order.push_back(i);
  Shape ushape(p.batch);
  for (int64_t d : raw_window_dims(p)) {
    order.push_back(nb + d);
    ushape.push_back(ws[size_t(d)]);
  }
  for (int64_t d : p.indexed)
    if (!contains(p.windowed, d)) order.push_back(nb + d);
  u = reshape(transpose(u, order), ushape);
  if (p.valid.valid()) {
    // Windows that do not fit go out of range along the first indexed dim: dropped.
    const int64_t d0 = p.indexed[0];
    Array& i0 = p.index_arrays[0];
    Axes bd(static_cast<size_t>(nb));
    std::iota(bd.begin(), bd.end(), 0);
    const Array ok = broadcast_in_dim(p.valid, i0.shape(), bd);
    i0 = where(ok, i0, full_like(i0, Scalar(xs[size_t(d0)], i0.dtype())));
  }
  std::vector<Array> ins{operand, u};
  ins.insert(ins.end(), p.index_arrays.begin(), p.index_arrays.end());
  ops::Params params = plan_params(p, xs, ws);
  params.set("mode", combine);
  return ops::bind1(ops::scatter_p, ins, params);
}

}  // namespace

Array scatter(const Array& operand, const Array& scatter_indices, const Array& updates, const ScatterDimensionNumbers& dn,
              const ScatterOptions& options) {
  return scatter_impl("scatter", "set", operand, scatter_indices, updates, dn, options);
}
Array scatter_add(const Array& operand, const Array& scatter_indices, const Array& updates,
                  const ScatterDimensionNumbers& dn, const ScatterOptions& options) {
  return scatter_impl("scatter_add", "add", operand, scatter_indices, updates, dn, options);
}
Array scatter_sub(const Array& operand, const Array& scatter_indices, const Array& updates,
                  const ScatterDimensionNumbers& dn, const ScatterOptions& options) {
  if (is_bool(updates.dtype()))
    throw DTypeError("scatter_sub: boolean updates cannot be subtracted; convert them to an integer dtype");
  return scatter_impl("scatter_sub", "add", operand, scatter_indices, negative(updates), dn, options);
}
Array scatter_mul(const Array& operand, const Array& scatter_indices, const Array& updates,
                  const ScatterDimensionNumbers& dn, const ScatterOptions& options) {
  return scatter_impl("scatter_mul", "mul", operand, scatter_indices, updates, dn, options);
}
Array scatter_min(const Array& operand, const Array& scatter_indices, const Array& updates,
                  const ScatterDimensionNumbers& dn, const ScatterOptions& options) {
  return scatter_impl("scatter_min", "min", operand, scatter_indices, updates, dn, options);
}
Array scatter_max(const Array& operand, const Array& scatter_indices, const Array& updates,
                  const ScatterDimensionNumbers& dn, const ScatterOptions& options) {
  return scatter_impl("scatter_max", "max", operand, scatter_indices, updates, dn, options);
}

Array scatter_apply(const Array& operand, const Array& scatter_indices, const std::function<Array(const Array&)>& func,
                    const ScatterDimensionNumbers& dn, const Shape& update_shape, const ScatterOptions& options) {
  // How often each element is hit (XLA applies func once per update, so an element that
  // k updates hit gets func applied k times): a scatter-add of ones.
  const Array hits = scatter_impl("scatter_apply", "add", zeros(operand.shape(), DType::int32), scatter_indices,
                                  ones(update_shape, DType::int32), dn, options);
  const Array once = func(operand);
  if (once.shape() != operand.shape() || once.dtype() != operand.dtype())
    throw ShapeError("scatter_apply: func turned the operand " + operand.aval().to_string() + " into " +
                     once.aval().to_string() + "; it must be element-wise and keep the dtype");
  Array x = where(hits > zeros({}, DType::int32), once, operand);
  // Further applications only where an element was hit more than once.
  return fori_loop(Array(int32_t(1)), max(hits), [&](const Array& i, const Array& v) {
    return where(hits > i, func(v), v);
  }, x);
}

Array index_take(const Array& src, const std::vector<Array>& idxs, const Axes& axes) {
  const std::string op = "index_take";
  if (idxs.size() != axes.size() || idxs.empty())
    throw ValueError(op + ": " + std::to_string(axes.size()) + " axes need as many index arrays, got " +
                     std::to_string(idxs.size()));
  std::vector<Array> cols;
  for (size_t k = 0; k < idxs.size(); ++k) {
    if (idxs[k].ndim() != 1 || idxs[k].dim(0) != idxs[0].dim(0))
      throw ShapeError(op + ": the index arrays must be 1-D of one length, got " + idxs[0].aval().to_string() + " and " +
                       idxs[k].aval().to_string());
    ops::check_index_dtype(op, idxs[k].dtype());
    const int64_t ax = ops::canonicalize_axis(op, axes[k], src.ndim());
    const Array i = idxs[k].astype(DType::int32);
    cols.push_back(expand_dims(where(i < zeros({}, DType::int32), i + Array(int32_t(src.dim(ax))), i), Axes{1}));
  }
  Axes sorted_axes;
  for (int64_t a : axes) sorted_axes.push_back(ops::canonicalize_axis(op, a, src.ndim()));
  Axes offset(size_t(src.ndim()) - axes.size());
  std::iota(offset.begin(), offset.end(), 1);
  Shape sizes = src.shape();
  for (int64_t a : sorted_axes) sizes[size_t(a)] = 1;
  Axes collapsed = sorted_axes;
  std::sort(collapsed.begin(), collapsed.end());
  return gather(src, concatenate(cols, 1),
                {.offset_dims = offset, .collapsed_slice_dims = collapsed, .start_index_map = sorted_axes}, sizes);
}

}  // namespace tessel::lax
