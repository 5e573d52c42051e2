// Slicing and indexing primitives (slice, dynamic_slice, dynamic_update_slice, gather and
// scatter) and the lax-level functions built on them (slice, take, take_along_axis, ...).
// NumPy indexing (`x[...]`, `x.at(...)`) lives in numpy_indexing.cpp.
//
// gather and scatter mirror each other. Both see the operand through a strided window
// (start/limit/strides per dimension, like slice) on the dimensions that are not indexed,
// and through integer index arrays (all of one shape B) on the `axes` that are. Their
// "indexed shape" is the window sizes in dimension order with B inserted at `batch_pos`.
// gather reads that shape (index arrays wrap negative values, then clamp into range);
// scatter combines an update of that shape into the operand (negative values wrap,
// out-of-range ones are dropped, duplicates are applied in row-major order, so `set` keeps
// the last and `add` accumulates). An optional `out_of_bounds` parameter swaps the
// out-of-range behaviours, so that each has an exact transpose: gather["fill"] reads 0 at
// out-of-range indices, scatter["clip"] clamps them (gather's default), so the transpose of
// gather is scatter-add with the same handling of out-of-range indices, and vice versa.
// gather["fill"] may carry a `fill_value` (a scalar of the operand's dtype, JAX's NaN for
// jnp.take) read instead of 0; the gather is then affine, and its tangent reads 0.
#include <algorithm>
#include <cstring>
#include <limits>

#include "ops/indexing.h"
#include "ops/rule_util.h"
#include "ops/strided.h"

namespace tessel::ops {
namespace {

// ---- shared validation ----

/// Sizes of the strided window start:limit:strides of `s`, or an error naming `op`.
/// Dimensions in `skip` are not windowed (their size is left 0).
Shape window_sizes(const std::string& op, const Shape& s, const Shape& start, const Shape& limit,
                   const Shape& strides, const Axes& skip = {}) {
  const size_t r = s.size();
  if (start.size() != r || limit.size() != r || strides.size() != r)
    throw ShapeError(op + ": start_indices " + shape_to_string(start) + ", limit_indices " + shape_to_string(limit) +
                     " and strides " + shape_to_string(strides) + " need one entry per dimension of shape " +
                     shape_to_string(s));
  Shape out(r, 0);
  for (size_t d = 0; d < r; ++d) {
    if (std::find(skip.begin(), skip.end(), int64_t(d)) != skip.end()) continue;
    const std::string where = " dimension " + std::to_string(d) + " of size " + std::to_string(s[d]) +
                              " in shape " + shape_to_string(s);
    if (strides[d] <= 0)
      throw ValueError(op + ": stride " + std::to_string(strides[d]) + " in dimension " + std::to_string(d) +
                       " must be positive (reverse with flip/rev)");
    if (start[d] < 0) throw IndexError(op + ": start " + std::to_string(start[d]) + " is negative in" + where);
    if (start[d] > s[d]) throw IndexError(op + ": start " + std::to_string(start[d]) + " exceeds" + where);
    if (limit[d] > s[d]) throw IndexError(op + ": limit " + std::to_string(limit[d]) + " exceeds" + where);
    if (limit[d] < start[d])
      throw IndexError(op + ": limit " + std::to_string(limit[d]) + " is below start " + std::to_string(start[d]) +
                       " in" + where);
    out[d] = limit[d] == start[d] ? 0 : (limit[d] - start[d] - 1) / strides[d] + 1;  // (no overflow for huge strides)
  }
  return out;
}

}  // namespace

void check_index_dtype(const std::string& op, DType d) {
  if (is_bool(d))
    throw IndexError(op + ": boolean mask indices are not supported: the result's shape would depend on the "
                          "mask's values, and tessel needs static shapes (as under jit). Select element-wise "
                          "with where(mask, x, other) instead");
  check_dtype(op, d, is_integer(d), "an integer index dtype");
}

namespace {

/// Reads an integer scalar of any integer dtype (unsigned values past int64 saturate).
int64_t load_int(DType d, const void* p) {
  return visit_dtype(d, [&](auto z) -> int64_t {
    using T = decltype(z);
    if constexpr (std::is_integral_v<T>) {
      T v;
      std::memcpy(&v, p, sizeof(T));
      if constexpr (std::is_unsigned_v<T> && sizeof(T) == 8) return v > uint64_t(INT64_MAX) ? INT64_MAX : int64_t(v);
      return int64_t(v);
    } else {
      return 0;  // unreachable: abstract evaluation accepts integer dtypes only
    }
  });
}

// ---- slice[start_indices, limit_indices, strides] ----

std::vector<Aval> slice_aval(std::span<const Aval> ins, const Params& p) {
  Shape out = window_sizes("slice", ins[0].shape, p.get_ints("start_indices"), p.get_ints("limit_indices"),
                           p.get_ints("strides"));
  return {Aval(out, ins[0].dtype, ins[0].weak_type)};
}

void slice_kernel(const KernelCall& c) {
  const auto& start = c.params.get_ints("start_indices");
  const auto& strides = c.params.get_ints("strides");
  auto ist = strides_of(c.in_avals[0].shape);
  int64_t base = 0;
  for (size_t d = 0; d < ist.size(); ++d) base += start[d] * ist[d];
  const Shape& os = c.out_avals[0].shape;
  strided_copy(itemsize(c.in_avals[0].dtype), os, c.outs[0], 0, strides_of(os), c.ins[0], base,
               scaled_strides(c.in_avals[0].shape, strides));
}

/// The transpose of a slice pads the cotangent with zeros back to the operand's shape,
/// with strides - 1 zeros between the elements.
std::vector<Array> slice_transpose(const ir::Primitive&, std::span<const Array> cts, std::span<const Array>,
                                   std::span<const Aval> avals, const Params& p) {
  if (is_zero(cts[0])) return {Array()};
  const Array& ct = cts[0];
  const auto& start = p.get_ints("start_indices");
  const auto& strides = p.get_ints("strides");
  const Shape& xs = avals[0].shape;
  std::vector<std::array<int64_t, 3>> cfg;
  for (size_t d = 0; d < xs.size(); ++d) {
    const int64_t n = ct.shape()[d];
    const int64_t end = start[d] + (n == 0 ? 0 : 1 + (n - 1) * strides[d]);  // one past the last element read
    cfg.push_back({start[d], xs[d] - end, strides[d] - 1});
  }
  return {lax_pad(ct, Scalar(0, ct.dtype()), cfg)};
}

Batched slice_batch(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                    const BatchAxis& axis, const Params& p) {
  const size_t b = size_t(dims[0]);
  Shape start = p.get_ints("start_indices"), limit = p.get_ints("limit_indices"), strides = p.get_ints("strides");
  start.insert(start.begin() + long(b), 0);
  limit.insert(limit.begin() + long(b), axis.size);
  strides.insert(strides.begin() + long(b), 1);
  return {{bind1(self, {ins[0]}, Params{{"start_indices", start}, {"limit_indices", limit}, {"strides", strides}})},
          {dims[0]}};
}

// ---- SPMD rules of the slicing primitives: a dimension taken in full (from 0, stride 1)
// passes through; a window of stride 1 is a permutation factor (each piece of the result
// reads the operand's rows at its positions shifted by the start: a halo exchange); a
// strided one stays whole ----

/// Whether a strided window takes dimension d of `s` in full.
bool full_window(const Shape& s, const Params& p, size_t d) {
  return p.get_ints("start_indices")[d] == 0 && p.get_ints("strides")[d] == 1 && p.get_ints("limit_indices")[d] == s[d];
}

/// How dimension d of a strided window of `s` partitions.
DimRule window_rule(const Shape& s, const Params& p, size_t d) {
  if (full_window(s, p, d)) return DimRule::kPass;
  return p.get_ints("strides")[d] == 1 ? DimRule::kPermute : DimRule::kWhole;
}

ir::ShardingRule slice_sharding_rule(std::span<const Aval> ins, std::span<const Aval> outs, const Params& p) {
  std::vector<DimRule> dims(outs[0].shape.size());
  for (size_t d = 0; d < dims.size(); ++d) dims[d] = window_rule(ins[0].shape, p, d);
  return aligned_sharding_rule(ins, outs, dims);
}

/// limit_indices of the per-device window: a dimension read from 0 with stride 1 whose
/// local sizes agree is taken in full, up to its local size (whole dimensions keep their
/// limits, which they already have then). `out_dim[d]` is where operand dimension d lands in
/// `local_window` (-1: not windowed).
Shape local_limits(const Params& p, const Shape& local_operand, const Shape& local_window,
                   const std::vector<int64_t>& out_dim) {
  Shape limit = p.get_ints("limit_indices");
  for (size_t d = 0; d < limit.size(); ++d)
    if (out_dim[d] >= 0 && p.get_ints("start_indices")[d] == 0 && p.get_ints("strides")[d] == 1 &&
        local_window[size_t(out_dim[d])] == local_operand[d])
      limit[d] = local_operand[d];
  return limit;
}

Params slice_localize(const Params& p, std::span<const Aval> local_ins, std::span<const Aval> local_outs) {
  std::vector<int64_t> out_dim(local_ins[0].shape.size());
  for (size_t d = 0; d < out_dim.size(); ++d) out_dim[d] = int64_t(d);
  Params q = p;
  q.set("limit_indices", local_limits(p, local_ins[0].shape, local_outs[0].shape, out_dim));
  return q;
}

// Code generation: output index i reads the operand at start + stride * i.
std::vector<ir::IndexCase> slice_index_map(const ir::IndexMap& m, std::span<const Aval>, const Aval&, const Params& p) {
  const auto& start = p.get_ints("start_indices");
  const auto& strides = p.get_ints("strides");
  ir::IndexMap im;
  for (size_t d = 0; d < m.size(); ++d) im.push_back(m[d].scaled(strides[d], start[d]));
  return {{.at = im}};
}

}  // namespace

const ir::Primitive& slice_p = ir::register_primitive({
    .name = "slice", .arity = {1, 1}, .abstract_eval = slice_aval, .cpu_kernel = slice_kernel, .fusion = ir::FusionKind::kShape,
    .index_map = slice_index_map, .point_cost = 0, .jvp = jvp_linear, .transpose = slice_transpose,
    .batch = slice_batch, .sharding_rule = slice_sharding_rule, .localize = slice_localize});

namespace {

// ---- dynamic_slice[slice_sizes](operand, *start_indices) and
//      dynamic_update_slice(operand, update, *start_indices); as in JAX, a negative start
//      counts from the end, then starts clamp so the window fits ----

void check_starts(const std::string& op, std::span<const Aval> starts, const Aval& x) {
  if (int64_t(starts.size()) != x.ndim())
    throw ShapeError(op + ": needs one start index per dimension of shape " + shape_to_string(x.shape) + ", got " +
                     std::to_string(starts.size()));
  for (const Aval& s : starts) {
    if (!s.shape.empty())
      throw ShapeError(op + ": start indices must be scalars, got shape " + shape_to_string(s.shape));
    check_dtype(op, s.dtype, is_integer(s.dtype), "an integer start index");
  }
}

std::vector<Aval> dynamic_slice_aval(std::span<const Aval> ins, const Params& p) {
  const Aval& x = ins[0];
  check_starts("dynamic_slice", ins.subspan(1), x);
  const Shape& sizes = p.get_ints("slice_sizes");
  if (sizes.size() != x.shape.size())
    throw ShapeError("dynamic_slice: slice_sizes " + shape_to_string(sizes) + " need one entry per dimension of shape " +
                     shape_to_string(x.shape));
  for (size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] < 0 || sizes[d] > x.shape[d])
      throw IndexError("dynamic_slice: slice size " + std::to_string(sizes[d]) + " does not fit dimension " +
                       std::to_string(d) + " of size " + std::to_string(x.shape[d]) + " in shape " +
                       shape_to_string(x.shape));
  return {Aval(sizes, x.dtype, x.weak_type)};
}

/// Offset of the window start of shape `window` in an array of shape `s`: negative starts
/// wrapped from the end, then clamped.
int64_t clamped_base(const KernelCall& c, size_t first_start, const Shape& s, const Shape& window) {
  auto st = strides_of(s);
  int64_t base = 0;
  for (size_t d = 0; d < s.size(); ++d)
    base += window_start(load_int(c.in_avals[first_start + d].dtype, c.ins[first_start + d]), s[d], window[d]) * st[d];
  return base;
}

void dynamic_slice_kernel(const KernelCall& c) {
  const Shape& s = c.in_avals[0].shape;
  const Shape& os = c.out_avals[0].shape;
  auto st = strides_of(os);
  strided_copy(itemsize(c.in_avals[0].dtype), os, c.outs[0], 0, st, c.ins[0], clamped_base(c, 1, s, os), strides_of(s));
}

std::vector<Aval> dynamic_update_slice_aval(std::span<const Aval> ins, const Params&) {
  const Aval &x = ins[0], &u = ins[1];
  check_starts("dynamic_update_slice", ins.subspan(2), x);
  if (u.dtype != x.dtype)
    throw DTypeError("dynamic_update_slice: update dtype " + std::string(dtype_name(u.dtype)) +
                     " differs from the operand dtype " + dtype_name(x.dtype) + "; convert it with astype");
  bool fits = u.ndim() == x.ndim();
  for (size_t d = 0; fits && d < u.shape.size(); ++d) fits = u.shape[d] <= x.shape[d];
  if (!fits)
    throw ShapeError("dynamic_update_slice: update of shape " + shape_to_string(u.shape) +
                     " does not fit in the operand of shape " + shape_to_string(x.shape) +
                     " (same rank, each dimension at most the operand's)");
  return {x};
}

void dynamic_update_slice_kernel(const KernelCall& c) {
  const Shape& s = c.in_avals[0].shape;
  const Shape& us = c.in_avals[1].shape;
  if (c.outs[0] != c.ins[0]) parallel_memcpy(c.outs[0], c.ins[0], c.out_avals[0].nbytes());
  strided_copy(itemsize(c.in_avals[0].dtype), us, c.outs[0], clamped_base(c, 2, s, us), strides_of(s), c.ins[1], 0,
               strides_of(us));
}

// ---- rules of dynamic_slice and dynamic_update_slice: linear in the operand (and the
// update); the start indices are integers, held fixed ----

std::vector<Array> dynamic_slice_jvp(const ir::Primitive& self, std::span<const Array> primals,
                                     std::span<const Array> tangents, std::span<const Array>, const Params& p) {
  return jvp_linear_in_first(1, self, primals, tangents, p);
}

std::vector<Array> dynamic_slice_transpose(const ir::Primitive&, std::span<const Array> cts,
                                           std::span<const Array> args, std::span<const Aval> avals, const Params&) {
  std::vector<Array> out(args.size());
  if (is_zero(cts[0])) return out;
  std::vector<Array> starts(args.begin() + 1, args.end());
  out[0] = dynamic_update_slice(zeros(avals[0].shape, avals[0].dtype), cts[0], starts);
  return out;
}

/// The index dtype for positions below `n`: int32 when it fits, else int64.
DType index_dtype_for(int64_t n) { return n <= INT32_MAX ? int32 : int64; }

bool any_batched(std::span<const int64_t> dims) {
  return std::any_of(dims.begin(), dims.end(), [](int64_t d) { return d != kNotBatched; });
}

/// Start indices with a zero start for a new batch dimension inserted at `b`.
std::vector<Array> starts_with_batch(std::span<const Array> starts, size_t b) {
  std::vector<Array> out(starts.begin(), starts.end());
  const DType dt = starts.empty() ? int32 : starts[0].dtype();
  out.insert(out.begin() + long(b), zeros({}, dt));
  return out;
}

/// Index arrays addressing, for each example k of a batch of `size`, the window of `sizes`
/// that starts at starts[d][k] wrapped when negative and clamped into [0, shape[d] -
/// sizes[d]] (the dynamic_slice rule) in an operand of per-example `shape`: one array per dimension, all of shape
/// (size, sizes...), preceded by an iota over the batch when the operand is batched (at 0).
std::vector<Array> batched_window_indices(std::span<const Array> starts, std::span<const int64_t> dims,
                                          const Shape& shape, const Shape& sizes, int64_t size, bool with_iota) {
  int64_t largest = size;
  for (auto n : shape) largest = std::max(largest, n);
  const DType dt = index_dtype_for(largest);
  Shape full{size};
  full.insert(full.end(), sizes.begin(), sizes.end());
  std::vector<Array> idx;
  if (with_iota) idx.push_back(iota(dt, full, 0));
  for (size_t d = 0; d < starts.size(); ++d) {
    Array s = convert(move_batch_dim(starts[d], dims[d], 0, size), dt);
    s = where(s < zeros({}, dt), s + Array(Scalar(shape[d], dt)), s);
    s = clip(s, zeros({}, dt), Array(Scalar(shape[d] - sizes[d], dt)));
    idx.push_back(broadcast_in_dim(s, full, {0}) + iota(dt, full, int64_t(d) + 1));
  }
  return idx;
}

/// Params of a gather/scatter that indexes every dimension of an operand of `shape`.
Params all_indexed_params(const Shape& shape) {
  Axes axes;
  for (size_t d = 0; d < shape.size(); ++d) axes.push_back(int64_t(d));
  return indexed_params(axes, 0, Shape(shape.size(), 0), shape, Shape(shape.size(), 1));
}

/// With batched start indices the windows differ per example: a gather reads them (as JAX
/// does), with one index array per dimension.
Batched dynamic_slice_batch(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                            const BatchAxis& axis, const Params& p) {
  std::span<const Array> starts = ins.subspan(1);
  const Shape& sizes = p.get_ints("slice_sizes");
  if (!any_batched(dims.subspan(1))) {
    const size_t b = size_t(dims[0]);
    std::vector<Array> args{ins[0]};
    for (auto& s : starts_with_batch(starts, b)) args.push_back(s);
    Shape sz = sizes;
    sz.insert(sz.begin() + long(b), axis.size);
    return {{bind1(self, args, Params{{"slice_sizes", sz}})}, {dims[0]}};
  }
  const bool operand_batched = dims[0] != kNotBatched;
  Array x = operand_batched ? move_batch_dim(ins[0], dims[0], 0, axis.size) : ins[0];
  const Shape example(x.shape().begin() + operand_batched, x.shape().end());
  std::vector<Array> args{x};
  for (auto& i : batched_window_indices(starts, dims.subspan(1), example, sizes, axis.size, operand_batched))
    args.push_back(i);
  return {{bind1(gather_p, args, all_indexed_params(x.shape()))}, {0}};
}

std::vector<Array> dynamic_update_slice_jvp(const ir::Primitive& self, std::span<const Array> primals,
                                            std::span<const Array> tangents, std::span<const Array>, const Params& p) {
  return jvp_linear_in_first(2, self, primals, tangents, p);
}

std::vector<Array> dynamic_update_slice_transpose(const ir::Primitive&, std::span<const Array> cts,
                                                  std::span<const Array> args, std::span<const Aval> avals,
                                                  const Params&) {
  std::vector<Array> out(args.size());
  if (is_zero(cts[0])) return out;
  std::vector<Array> starts(args.begin() + 2, args.end());
  if (!args[0].valid()) out[0] = dynamic_update_slice(cts[0], zeros(avals[1].shape, avals[1].dtype), starts);
  if (!args[1].valid()) out[1] = dynamic_slice(cts[0], starts, avals[1].shape);
  return out;
}

/// With batched start indices, a scatter writes each example's window.
Batched dynamic_update_slice_batch(const ir::Primitive& self, std::span<const Array> ins,
                                   std::span<const int64_t> dims, const BatchAxis& axis, const Params&) {
  Array x = move_batch_dim(ins[0], dims[0], 0, axis.size);
  Array u = move_batch_dim(ins[1], dims[1], 0, axis.size);
  std::span<const Array> starts = ins.subspan(2);
  if (!any_batched(dims.subspan(2))) {
    std::vector<Array> args{x, u};
    for (auto& s : starts_with_batch(starts, 0)) args.push_back(s);
    return {{bind1(self, args)}, {0}};
  }
  const Shape example(x.shape().begin() + 1, x.shape().end()), usizes(u.shape().begin() + 1, u.shape().end());
  std::vector<Array> args{x, u};
  for (auto& i : batched_window_indices(starts, dims.subspan(2), example, usizes, axis.size, true))
    args.push_back(i);
  Params p = all_indexed_params(x.shape());
  p.set("mode", std::string("set"));
  return {{bind1(scatter_p, args, p)}, {0}};
}

// SPMD: dimensions the window covers in full (their start clamps to 0) pass through; the
// others are permutation factors (a constant start is a halo exchange; any other start
// gathers the dimension). The start indices are scalars.
ir::ShardingRule dynamic_slice_sharding_rule(std::span<const Aval> ins, std::span<const Aval> outs, const Params&) {
  std::vector<DimRule> dims(outs[0].shape.size());
  for (size_t d = 0; d < dims.size(); ++d)
    dims[d] = outs[0].shape[d] == ins[0].shape[d] ? DimRule::kPass : DimRule::kPermute;
  return aligned_sharding_rule(ins, outs, dims);
}

Params dynamic_slice_localize(const Params& p, std::span<const Aval>, std::span<const Aval> local_outs) {
  Params q = p;
  q.set("slice_sizes", local_outs[0].shape);
  return q;
}

ir::ShardingRule dynamic_update_slice_sharding_rule(std::span<const Aval> ins, std::span<const Aval> outs,
                                                    const Params&) {
  std::vector<DimRule> dims(outs[0].shape.size());
  for (size_t d = 0; d < dims.size(); ++d)
    dims[d] = ins[1].shape[d] == ins[0].shape[d] ? DimRule::kPass : DimRule::kPermute;
  return aligned_sharding_rule(ins, outs, dims);
}

// Code generation: output index i reads the operand at i + the clamped start, read when the
// kernel runs (a start per device in a partitioned program's halo windows fuses this way).
std::vector<ir::IndexCase> dynamic_slice_index_map(const ir::IndexMap& m, std::span<const Aval> ins, const Aval& out,
                                                   const Params&) {
  ir::IndexCase c{.at = m};
  for (size_t d = 0; d < m.size(); ++d)
    c.dynamic.push_back({int(d) + 1, ins[0].shape[d], out.shape[d]});
  return {c};
}

const ir::Primitive& dynamic_slice_p = ir::register_primitive({
    .name = "dynamic_slice", .arity = {1, -1}, .abstract_eval = dynamic_slice_aval, .cpu_kernel = dynamic_slice_kernel,
    .fusion = ir::FusionKind::kShape, .index_map = dynamic_slice_index_map, .point_cost = 0,
    .jvp = dynamic_slice_jvp, .transpose = dynamic_slice_transpose, .batch = dynamic_slice_batch,
    .sharding_rule = dynamic_slice_sharding_rule, .localize = dynamic_slice_localize});
const ir::Primitive& dynamic_update_slice_p = ir::register_primitive({
    .name = "dynamic_update_slice", .arity = {2, -1}, .abstract_eval = dynamic_update_slice_aval,
    .cpu_kernel = dynamic_update_slice_kernel, .inplace = ir::inplace_operand, .jvp = dynamic_update_slice_jvp,
    .transpose = dynamic_update_slice_transpose, .batch = dynamic_update_slice_batch,
    .sharding_rule = dynamic_update_slice_sharding_rule, .region_update = true});

}  // namespace

// ---- gather / scatter[axes, batch_pos, start_indices, limit_indices, strides] ----

IndexedView indexed_view(const std::string& op, const Aval& x, std::span<const Aval> idx, const Params& p) {
  const Axes& axes = p.get_ints("axes");
  const int64_t batch_pos = p.get_int("batch_pos");
  if (axes.size() != idx.size())
    throw ShapeError(op + ": " + std::to_string(axes.size()) + " indexed axes need as many index arrays, got " +
                     std::to_string(idx.size()));
  for (size_t j = 0; j < axes.size(); ++j) {
    if (axes[j] < 0 || axes[j] >= x.ndim() || std::count(axes.begin(), axes.end(), axes[j]) > 1)
      throw IndexError(op + ": indexed axes " + shape_to_string(axes) + " must be distinct dimensions of shape " +
                       shape_to_string(x.shape));
    check_index_dtype(op, idx[j].dtype);
    if (idx[j].shape != idx[0].shape)
      throw ShapeError(op + ": index arrays must have one shape, got " + avals_to_string(idx) +
                       "; broadcast them first");
  }
  const auto& start = p.get_ints("start_indices");
  const auto& strides = p.get_ints("strides");
  Shape sizes = window_sizes(op, x.shape, start, p.get_ints("limit_indices"), strides, axes);
  const Shape batch = idx.empty() ? Shape{} : idx[0].shape;
  auto xst = strides_of(x.shape), bst = strides_of(batch);
  IndexedView v;
  int64_t nwin = 0;
  auto add_batch = [&] {
    for (size_t k = 0; k < batch.size(); ++k) {
      v.shape.push_back(batch[k]);
      v.xstep.push_back(0);
      v.bstep.push_back(bst[k]);
    }
  };
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (std::find(axes.begin(), axes.end(), int64_t(d)) != axes.end()) continue;
    if (nwin++ == batch_pos) add_batch();
    v.shape.push_back(sizes[d]);
    // A stride beyond the size leaves one element in the window: clamping it keeps the view
    // and keeps the step representable (strides may come from bytes).
    v.xstep.push_back(std::min(strides[d], std::max<int64_t>(1, x.shape[d])) * xst[d]);
    v.bstep.push_back(0);
    v.xbase += start[d] * xst[d];
  }
  if (batch_pos < 0 || batch_pos > nwin)
    throw IndexError(op + ": batch_pos " + std::to_string(batch_pos) + " must be in [0, " + std::to_string(nwin) + "]");
  if (batch_pos == nwin) add_batch();
  return v;
}

namespace {

/// Whether a gather reads 0 (rather than the clamped element) at out-of-range indices, and
/// whether a scatter clamps out-of-range indices (rather than dropping their updates).
bool gather_fills(const Params& p) { return p.has("out_of_bounds") && p.get<std::string>("out_of_bounds") == "fill"; }
bool scatter_clips(const Params& p) { return p.has("out_of_bounds") && p.get<std::string>("out_of_bounds") == "clip"; }

/// The index arrays of a gather/scatter call as int64, with negative values wrapped.
std::vector<std::vector<int64_t>> load_indices(const KernelCall& c, size_t first) {
  const Axes& axes = c.params.get_ints("axes");
  std::vector<std::vector<int64_t>> out;
  for (size_t j = 0; j < axes.size(); ++j) {
    const Aval& a = c.in_avals[first + j];
    const int64_t n = c.in_avals[0].shape[size_t(axes[j])];
    std::vector<int64_t> v(size_t(a.size()));
    visit_dtype(a.dtype, [&](auto z) {
      using T = decltype(z);
      if constexpr (std::is_integral_v<T>) {
        const T* p = c.in<T>(first + j);
        for (size_t i = 0; i < v.size(); ++i) v[i] = int64_t(p[i]) < 0 ? int64_t(p[i]) + n : int64_t(p[i]);
      }
    });
    out.push_back(std::move(v));
  }
  return out;
}

/// A scatter whose updates come in long contiguous rows (x.at[rows].add(u)): each task owns
/// a range of the operand's `xn` elements and walks every row of the view, applying the part
/// that lands in its range (index_offset(b): the indexed axes' offset of batch position b, -1
/// where the update is dropped). Rows of the updates are read whole and in order, and each
/// operand element receives its updates on one thread, in the serial order.
template <class IndexOffset, class F>
void scatter_rows_by_owner(const IndexedView& v, int64_t xn, IndexOffset&& index_offset, F&& f) {
  const int64_t n = v.shape.back(), rows = shape_size(v.shape) / n, parts = 4 * int64_t(cpu::num_threads());
  cpu::parallel_for(parts, 1, [&](int64_t p0, int64_t p1) {
    const int64_t xlo = p0 * xn / parts, xhi = p1 * xn / parts;
    int64_t row = 0;
    for_each_row_start(v.shape, 0, rows, v.xbase, v.xstep, 0, v.bstep, [&](int64_t a, int64_t b) {
      const int64_t io = index_offset(b), pos = row++ * n;
      if (io < 0) return;
      const int64_t start = a + io, k0 = std::max<int64_t>(0, xlo - start), k1 = std::min<int64_t>(n, xhi - start);
      for (int64_t k = k0; k < k1; ++k) f(pos + k, start + k);
    });
  });
}

/// Calls f(out_pos, x_offset) for each element of the indexed view; x_offset is -1 for an
/// out-of-range index when `clamp` is false. The view is split over the shared arena along
/// one of its dimensions: for a gather the longest (every output element is written once);
/// for a scatter the longest window dimension (one that is not a batch dimension of the
/// indices), whose positions land on distinct elements of the operand whatever the
/// indices, so each operand element receives all its updates on one thread, in the serial
/// order; or, for long contiguous rows of updates, by ranges of the operand
/// (scatter_rows_by_owner). A scatter without a window dimension runs serially. Results do not depend on the
/// thread count.
template <class F> void for_each_indexed(const KernelCall& c, size_t first_index, bool clamp, F&& f) {
  const bool scatter = first_index != 1;
  const Aval& x = c.in_avals[0];
  auto v = indexed_view(scatter ? "scatter" : "gather", x, c.in_avals.subspan(first_index), c.params);
  const Axes& axes = c.params.get_ints("axes");
  auto idx = load_indices(c, first_index);
  auto xst = strides_of(x.shape);
  const size_t r = v.shape.size();
  const int64_t total = shape_size(v.shape);
  if (total == 0) return;
  const auto pst = strides_of(v.shape);
  int sd = -1;  // the split dimension
  for (size_t d = 0; d < r; ++d)
    if (v.shape[d] > 1 && (!scatter || (v.bstep[d] == 0 && v.xstep[d] != 0)) && (sd < 0 || v.shape[d] > v.shape[size_t(sd)]))
      sd = int(d);
  auto index_offset = [&](int64_t b) -> int64_t {  // the indexed axes' offset; -1 if dropped
    int64_t off = 0;
    for (size_t j = 0; j < axes.size(); ++j) {
      const int64_t m = x.shape[size_t(axes[j])];
      int64_t i = idx[j][size_t(b)];
      if (i < 0 || i >= m) {
        if (!clamp) return -1;
        i = std::clamp<int64_t>(i, 0, m - 1);
      }
      off += i * xst[size_t(axes[j])];
    }
    return off;
  };
  auto walk = [&](int64_t lo, int64_t hi) {  // the elements with index [lo, hi) along sd
    Shape box = v.shape;
    int64_t off0 = v.xbase, b0 = 0, pos0 = 0;
    if (sd >= 0) {
      box[size_t(sd)] = hi - lo;
      off0 += lo * v.xstep[size_t(sd)];
      b0 += lo * v.bstep[size_t(sd)];
      pos0 += lo * pst[size_t(sd)];
    }
    std::vector<int64_t> at(r, 0);
    int64_t off_row = off0, b_row = b0, pos_row = pos0;
    const int64_t n = r ? box[r - 1] : 1, dx = r ? v.xstep[r - 1] : 0, db = r ? v.bstep[r - 1] : 0;
    for (;;) {
      if (db == 0) {  // a window row: one index lookup for the row
        const int64_t io = index_offset(b_row);
        if (io < 0)
          for (int64_t k = 0; k < n; ++k) f(pos_row + k, int64_t(-1));
        else
          for (int64_t k = 0; k < n; ++k) f(pos_row + k, off_row + io + k * dx);
      } else {
        for (int64_t k = 0; k < n; ++k) {
          const int64_t io = index_offset(b_row + k * db);
          f(pos_row + k, io < 0 ? io : off_row + k * dx + io);
        }
      }
      size_t d = r ? r - 1 : 0;
      for (;;) {  // odometer over the outer dimensions of the box
        if (d == 0) return;
        --d;
        off_row += v.xstep[d];
        b_row += v.bstep[d];
        pos_row += pst[d];
        if (++at[d] < box[d]) break;
        off_row -= v.xstep[d] * box[d];
        b_row -= v.bstep[d] * box[d];
        pos_row -= pst[d] * box[d];
        at[d] = 0;
      }
    }
  };
  if (sd < 0 || total <= kCopyGrain) return walk(0, sd < 0 ? 1 : v.shape[size_t(sd)]);
  if (scatter && v.bstep[r - 1] == 0 && v.xstep[r - 1] == 1 && v.shape[r - 1] >= 64)
    return scatter_rows_by_owner(v, shape_size(x.shape), index_offset, f);
  // At most ~4 chunks per thread: chunks of an inner dimension stay long rows (the chunking
  // never changes a result, so it may follow the thread count).
  const int64_t extent = v.shape[size_t(sd)], per_index = total / extent;
  const int64_t grain = std::max(kCopyGrain / per_index, (extent + 4 * cpu::num_threads() - 1) / (4 * cpu::num_threads()));
  cpu::parallel_for(extent, std::max<int64_t>(1, grain), walk);
}

std::vector<Aval> gather_aval(std::span<const Aval> ins, const Params& p) {
  auto v = indexed_view("gather", ins[0], ins.subspan(1), p);
  if (p.has("out_of_bounds") && p.get<std::string>("out_of_bounds") != "clip" &&
      p.get<std::string>("out_of_bounds") != "fill")
    throw ValueError("gather: out_of_bounds must be \"clip\" or \"fill\", got '" +
                     p.get<std::string>("out_of_bounds") + "'");
  if (p.has("fill_value") && p.get<Scalar>("fill_value").dtype() != ins[0].dtype)
    throw DTypeError("gather: fill_value of dtype " + std::string(dtype_name(p.get<Scalar>("fill_value").dtype())) +
                     " differs from the operand dtype " + dtype_name(ins[0].dtype) + "; convert it first");
  if (shape_size(v.shape) > 0)  // clamping needs an element to clamp to
    for (auto d : p.get_ints("axes"))
      if (ins[0].shape[size_t(d)] == 0)
        throw IndexError("gather: cannot take indices from dimension " + std::to_string(d) + " of size 0 in shape " +
                         shape_to_string(ins[0].shape));
  return {Aval(v.shape, ins[0].dtype, ins[0].weak_type)};
}

void gather_kernel(const KernelCall& c) {
  visit_itemsize(itemsize(c.in_avals[0].dtype), [&](auto z) {
    using E = decltype(z);
    const E* in = c.in<E>(0);
    E* out = c.out<E>(0);
    E fill{};
    if (c.params.has("fill_value")) std::memcpy(&fill, c.params.get<Scalar>("fill_value").data(), sizeof(E));
    for_each_indexed(c, 1, !gather_fills(c.params), [&](int64_t o, int64_t off) { out[o] = off >= 0 ? in[off] : fill; });
  });
}

// ---- gather rules: linear in the operand ----

/// The same indexed params with out_of_bounds set (left out when it is the default).
Params with_out_of_bounds(Params p, const std::string& value, const char* dflt) {
  if (value != dflt || p.has("out_of_bounds")) p.set("out_of_bounds", value);
  return p;
}

/// The gather reading the elements a scatter with params `p` writes (zero where it drops).
Params gather_params_of_scatter(const Params& p) {
  Params g = indexed_params(p.get_ints("axes"), p.get_int("batch_pos"), p.get_ints("start_indices"),
                            p.get_ints("limit_indices"), p.get_ints("strides"));
  return with_out_of_bounds(g, scatter_clips(p) ? "clip" : "fill", "clip");
}

/// The scatter writing where a gather with params `p` reads, combining with `mode`.
Params scatter_params_of_gather(const Params& p, const std::string& mode) {
  Params s = indexed_params(p.get_ints("axes"), p.get_int("batch_pos"), p.get_ints("start_indices"),
                            p.get_ints("limit_indices"), p.get_ints("strides"));
  s.set("mode", mode);
  return with_out_of_bounds(s, gather_fills(p) ? "drop" : "clip", "drop");
}

/// The linear part of a gather: the same params without a fill_value (reading 0).
Params without_fill_value(const Params& p) {
  Params q;
  for (const auto& [k, v] : p.items())
    if (k != "fill_value") q.set(k, v);
  return q;
}

std::vector<Array> gather_jvp(const ir::Primitive& self, std::span<const Array> primals,
                              std::span<const Array> tangents, std::span<const Array>, const Params& p) {
  return jvp_linear_in_first(1, self, primals, tangents, without_fill_value(p));
}

/// The transpose of a gather adds the cotangent into zeros where the gather read.
std::vector<Array> gather_transpose(const ir::Primitive&, std::span<const Array> cts, std::span<const Array> args,
                                    std::span<const Aval> avals, const Params& p) {
  std::vector<Array> out(args.size());
  if (is_zero(cts[0])) return out;
  std::vector<Array> ins{zeros(avals[0].shape, avals[0].dtype), cts[0]};
  ins.insert(ins.end(), args.begin() + 1, args.end());
  out[0] = bind1(scatter_p, ins, scatter_params_of_gather(p, "add"));
  return out;
}

/// Params of a gather/scatter whose operand gained dimension `b` (of `size`), read in full
/// as a window dimension; also returns where that dimension lands in the indexed shape
/// when the index arrays have rank `index_rank`.
std::pair<Params, int64_t> with_window_dim(const Params& p, int64_t b, int64_t size, int64_t index_rank) {
  Params q = p;
  const Axes& axes = p.get_ints("axes");
  Axes ax;
  int64_t w = 0;  // window dimensions before b
  for (auto a : axes) ax.push_back(a >= b ? a + 1 : a);
  for (int64_t d = 0; d < b; ++d) w += std::find(axes.begin(), axes.end(), d) == axes.end();
  Shape start = p.get_ints("start_indices"), limit = p.get_ints("limit_indices"), strides = p.get_ints("strides");
  start.insert(start.begin() + b, 0);
  limit.insert(limit.begin() + b, size);
  strides.insert(strides.begin() + b, 1);
  const int64_t bp = p.get_int("batch_pos");
  q.set("axes", ax).set("start_indices", start).set("limit_indices", limit).set("strides", strides);
  q.set("batch_pos", w <= bp ? bp + 1 : bp);
  return {q, w <= bp ? w : w + index_rank};
}

/// Params of a gather/scatter whose operand gained a leading dimension (of `size`) indexed
/// by a new first index array (an iota over the batch): the batch becomes the first
/// dimension of the index shape, so it lands at batch_pos in the indexed shape.
Params with_indexed_batch(const Params& p, int64_t size) {
  Params q = p;
  Axes ax{0};
  for (auto a : p.get_ints("axes")) ax.push_back(a + 1);
  Shape start = p.get_ints("start_indices"), limit = p.get_ints("limit_indices"), strides = p.get_ints("strides");
  start.insert(start.begin(), 0);
  limit.insert(limit.begin(), size);
  strides.insert(strides.begin(), 1);
  q.set("axes", ax).set("start_indices", start).set("limit_indices", limit).set("strides", strides);
  return q;
}

/// Index arrays with their batch dimension moved to the front (unbatched ones broadcast),
/// preceded by an iota over the batch when `with_iota`.
std::vector<Array> batched_indices(std::span<const Array> idx, std::span<const int64_t> dims, int64_t size,
                                   bool with_iota) {
  std::vector<Array> out;
  for (size_t j = 0; j < idx.size(); ++j) out.push_back(move_batch_dim(idx[j], dims[j], 0, size));
  if (with_iota) out.insert(out.begin(), iota(index_dtype_for(size), out[0].shape(), 0));
  return out;
}

int64_t index_rank(std::span<const Array> idx) { return idx.empty() ? 0 : idx[0].ndim(); }

Batched gather_batch(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                     const BatchAxis& axis, const Params& p) {
  std::span<const Array> idx = ins.subspan(1);
  if (!any_batched(dims.subspan(1))) {  // only the operand: one more window dimension
    auto [q, pos] = with_window_dim(p, dims[0], axis.size, index_rank(idx));
    std::vector<Array> args(ins.begin(), ins.end());
    return {{bind1(self, args, q)}, {pos}};
  }
  const bool operand_batched = dims[0] != kNotBatched;
  std::vector<Array> args{operand_batched ? move_batch_dim(ins[0], dims[0], 0, axis.size) : ins[0]};
  for (auto& i : batched_indices(idx, dims.subspan(1), axis.size, operand_batched)) args.push_back(i);
  return {{bind1(self, args, operand_batched ? with_indexed_batch(p, axis.size) : p)}, {p.get_int("batch_pos")}};
}

// ---- SPMD rules of gather and scatter. Indexed dimensions stay whole (an index may point
// anywhere in them). A window dimension taken in full passes through to its place in the
// indexed shape. gather: the index arrays' dimensions pass through to the batch dimensions
// of the result (each device gathers for its piece of the indices); its partial windows
// stay whole. scatter: indices and the update's batch dimensions stay whole (every update
// must reach the whole operand); without index arrays (x.at[1:-1].set(u)) a partial
// window of stride 1 is a permutation factor (the update's rows move to the pieces that
// hold their positions) ----

/// Where each operand dimension lands in the indexed shape (-1 for indexed ones), for
/// index arrays of rank `index_rank`.
std::vector<int64_t> window_positions(const Params& p, size_t rank, int64_t index_rank) {
  const Axes& axes = p.get_ints("axes");
  const int64_t bp = p.get_int("batch_pos");
  std::vector<int64_t> pos(rank, -1);
  int64_t w = 0;
  for (size_t d = 0; d < rank; ++d) {
    if (std::find(axes.begin(), axes.end(), int64_t(d)) != axes.end()) continue;
    pos[d] = w + (w >= bp ? index_rank : 0);
    ++w;
  }
  return pos;
}

/// Labels the operand dimensions (`x`) and the indexed shape (`view`) of a gather/scatter:
/// full window dimensions get a shared factor, partial ones a shared permutation factor
/// when `partial_windows` (else they stay whole, like indexed ones).
void label_windows(ir::ShardingRule& r, const Aval& operand, size_t index_rank, const Params& p,
                   bool partial_windows, std::vector<int>& x, std::vector<int>& view) {
  const Shape& s = operand.shape;
  const auto pos = window_positions(p, s.size(), int64_t(index_rank));
  x.assign(s.size(), ir::kWhole);
  for (size_t d = 0; d < s.size(); ++d) {
    if (pos[d] < 0) continue;
    const DimRule kind = window_rule(s, p, d);
    if (kind == DimRule::kPass) x[d] = view[size_t(pos[d])] = add_factor(r);
    if (kind == DimRule::kPermute && partial_windows) x[d] = view[size_t(pos[d])] = add_permutation_factor(r);
  }
}

ir::ShardingRule gather_sharding_rule(std::span<const Aval> ins, std::span<const Aval> outs, const Params& p) {
  const size_t index_rank = ins.size() > 1 ? ins[1].shape.size() : 0;
  ir::ShardingRule r;
  std::vector<int> x, out(outs[0].shape.size(), ir::kWhole), idx;
  label_windows(r, ins[0], index_rank, p, /*partial_windows=*/false, x, out);
  const size_t bp = size_t(p.get_int("batch_pos"));
  for (size_t k = 0; k < index_rank; ++k) idx.push_back(out[bp + k] = add_factor(r));
  r.operands.push_back(x);
  for (size_t j = 1; j < ins.size(); ++j) r.operands.push_back(idx);
  r.results = {out};
  return r;
}

Params indexed_localize(const Params& p, const Shape& local_operand, const Shape& local_view, size_t index_rank) {
  Params q = p;
  q.set("limit_indices",
        local_limits(p, local_operand, local_view, window_positions(p, local_operand.size(), int64_t(index_rank))));
  return q;
}

Params gather_localize(const Params& p, std::span<const Aval> local_ins, std::span<const Aval> local_outs) {
  const size_t index_rank = local_ins.size() > 1 ? local_ins[1].shape.size() : 0;
  return indexed_localize(p, local_ins[0].shape, local_outs[0].shape, index_rank);
}

}  // namespace

const ir::Primitive& gather_p = ir::register_primitive({
    .name = "gather", .arity = {1, -1}, .abstract_eval = gather_aval, .cpu_kernel = gather_kernel,
    .jvp = gather_jvp, .transpose = gather_transpose, .batch = gather_batch,
    .sharding_rule = gather_sharding_rule, .localize = gather_localize});

namespace {

std::vector<Aval> scatter_aval(std::span<const Aval> ins, const Params& p) {
  const std::string& mode = p.get<std::string>("mode");
  if (p.has("out_of_bounds") && p.get<std::string>("out_of_bounds") != "clip" &&
      p.get<std::string>("out_of_bounds") != "drop")
    throw ValueError("scatter: out_of_bounds must be \"drop\" or \"clip\", got '" +
                     p.get<std::string>("out_of_bounds") + "'");
  if (mode != "set" && mode != "add" && mode != "mul" && mode != "min" && mode != "max")
    throw ValueError("scatter: unknown mode '" + mode + "'; use set, add, mul, min or max");
  const Aval &x = ins[0], &u = ins[1];
  auto v = indexed_view("scatter", x, ins.subspan(2), p);
  if (u.dtype != x.dtype)
    throw DTypeError("scatter: update dtype " + std::string(dtype_name(u.dtype)) + " differs from the operand dtype " +
                     dtype_name(x.dtype) + "; convert it first");
  if (u.shape != v.shape)
    throw ShapeError("scatter: the update has shape " + shape_to_string(u.shape) + " but the indexed part of " +
                     shape_to_string(x.shape) + " has shape " + shape_to_string(v.shape));
  return {x};
}

template <class T> T combine_max(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return a || b;
  } else if constexpr (is_complex_v<T>) {  // lexicographic, as lax.max on complex numbers
    return (a.real() > b.real() || (a.real() == b.real() && a.imag() >= b.imag())) ? a : b;
  } else {
    compute_t<T> x = a, y = b;
    if (x != x) return a;  // NaN propagates
    if (y != y) return b;
    return x >= y ? a : b;
  }
}
template <class T> T combine_min(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return a && b;
  } else if constexpr (is_complex_v<T>) {
    return (a.real() < b.real() || (a.real() == b.real() && a.imag() <= b.imag())) ? a : b;
  } else {
    compute_t<T> x = a, y = b;
    if (x != x) return a;
    if (y != y) return b;
    return x <= y ? a : b;
  }
}
template <class T> T combine_add(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) return a || b;
  else return T(compute_t<T>(a) + compute_t<T>(b));
}
template <class T> T combine_mul(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) return a && b;
  else return T(compute_t<T>(a) * compute_t<T>(b));
}

void scatter_kernel(const KernelCall& c) {
  if (c.outs[0] != c.ins[0]) parallel_memcpy(c.outs[0], c.ins[0], c.out_avals[0].nbytes());
  const std::string& mode = c.params.get<std::string>("mode");
  visit_dtype(c.in_avals[0].dtype, [&](auto z) {
    using T = decltype(z);
    const T* u = c.in<T>(1);
    T* out = c.out<T>(0);
    auto run = [&](auto combine) {
      for_each_indexed(c, 2, scatter_clips(c.params), [&](int64_t o, int64_t off) {
        if (off >= 0) out[off] = combine(out[off], u[o]);
      });
    };
    // Lambdas, not function pointers, so the combination inlines into the loop.
    if (mode == "set") run([](T, T b) { return b; });
    else if (mode == "add") run([](T a, T b) { return combine_add<T>(a, b); });
    else if (mode == "mul") run([](T a, T b) { return combine_mul<T>(a, b); });
    else if (mode == "min") run([](T a, T b) { return combine_min<T>(a, b); });
    else run([](T a, T b) { return combine_max<T>(a, b); });
  });
}

// ---- scatter rules. set and add are linear in the operand and the update jointly (set
// keeps the last of duplicate updates, deterministically); mul is linear in the operand;
// min and max are not linear ----

Array scatter_with(const std::string& mode, const Array& x, const Array& u, std::span<const Array> idx,
                   const Params& p) {
  std::vector<Array> ins{x, u};
  ins.insert(ins.end(), idx.begin(), idx.end());
  Params q = p;
  q.set("mode", mode);
  return bind1(scatter_p, ins, q);
}

/// What a scatter with params `p` would write at each update position: the values of `x`
/// there, or zero for updates it drops.
Array gather_at_scatter(const Array& x, std::span<const Array> idx, const Params& p) {
  // Without index arrays the window is static: a slice, which fuses and partitions along a
  // split dimension by halo exchange (the gradient of x.at[1:-1].set(u) stays split).
  const Shape &start = p.get_ints("start_indices"), &limit = p.get_ints("limit_indices");
  bool inside = idx.empty();
  for (size_t d = 0; inside && d < limit.size(); ++d) inside = start[d] >= 0 && limit[d] <= x.shape()[d];
  if (inside) return slice(x, start, limit, p.get_ints("strides"));
  std::vector<Array> ins{x};
  ins.insert(ins.end(), idx.begin(), idx.end());
  return bind1(gather_p, ins, gather_params_of_scatter(p));
}

/// jvp of scatter-mul: out[p] = x[p] * prod_k u_k over the updates k landing at p. The
/// operand part scatters t_x like the primal; the update part is x[p] * t_u_k where one
/// update lands, and out[p] * sum_k t_u_k / u_k where several do (exact unless one of
/// those is 0).
Array scatter_mul_update_tangent(const Array& x, const Array& u, const Array& tu, const Array& out,
                                 std::span<const Array> idx, const Params& p) {
  Array zero = zeros(x.shape(), x.dtype());
  Array count = scatter_with("add", zero, ones(u.shape(), u.dtype()), idx, p);
  Array single = x * scatter_with("add", zero, tu, idx, p);
  Array safe_u = where(u == zeros({}, u.dtype()), ones({}, u.dtype()), u);
  Array several = out * scatter_with("add", zero, tu / safe_u, idx, p);
  return where(real(count) > ones({}, real(count).dtype()), several, single);
}

/// jvp of scatter-min/max (as JAX): the tangent at an element is the mean of the tangents
/// of the values that tie for the result there (the operand's and the updates').
Array scatter_extremal_tangent(const Array& x, const Array& u, const Array& tx, const Array& tu, const Array& out,
                               std::span<const Array> idx, const Params& p) {
  const DType dt = x.dtype();
  Array zero = zeros(x.shape(), dt);
  // An update wins if it equals the result where it lands (dropped updates never do).
  Array in_range = gather_at_scatter(ones(x.shape(), bool_), idx, p);
  Array wins = convert(logical_and(in_range, u == gather_at_scatter(out, idx, p)), dt);
  Array kept = convert(x == out, dt);
  Array winners = scatter_with("add", zero, wins, idx, p) + kept;
  Array share = ones({}, dt) / maximum(winners, ones({}, dt));
  Array t;
  if (!is_zero(tx)) t = tx * (kept * share);
  if (!is_zero(tu)) t = add_tangents(t, scatter_with("add", zero, tu * (wins * gather_at_scatter(share, idx, p)), idx, p));
  return t;
}

std::vector<Array> scatter_jvp(const ir::Primitive& self, std::span<const Array> primals,
                               std::span<const Array> tangents, std::span<const Array> outs, const Params& p) {
  const std::string& mode = p.get<std::string>("mode");
  if (mode == "set" || mode == "add") return jvp_linear_in_first(2, self, primals, tangents, p);
  const Array &x = primals[0], &u = primals[1], &tx = tangents[0], &tu = tangents[1];
  std::span<const Array> idx = primals.subspan(2);
  if (is_zero(tx) && is_zero(tu)) return {Array()};
  if (mode == "mul") {
    Array t;
    if (!is_zero(tx)) t = scatter_with("mul", tx, u, idx, p);
    if (!is_zero(tu)) t = add_tangents(t, scatter_mul_update_tangent(x, u, tu, outs[0], idx, p));
    return {t};
  }
  return {scatter_extremal_tangent(x, u, tx, tu, outs[0], idx, p)};
}

std::vector<Array> scatter_transpose(const ir::Primitive&, std::span<const Array> cts, std::span<const Array> args,
                                     std::span<const Aval> avals, const Params& p) {
  const std::string& mode = p.get<std::string>("mode");
  std::vector<Array> out(args.size());
  const bool x_linear = !args[0].valid(), u_linear = !args[1].valid();
  if (mode == "min" || mode == "max" || (mode == "mul" && u_linear))
    throw NotImplementedError("transpose: scatter[mode=" + mode + "] is not linear in its " +
                              (mode == "mul" ? "updates" : "operand and updates") +
                              ", so it has no transpose (its jvp never needs one)");
  if (is_zero(cts[0])) return out;
  const Array& ct = cts[0];
  std::span<const Array> idx = args.subspan(2);
  if (mode == "mul") {  // out = x * (product of the updates landing there): diagonal in x
    out[0] = scatter_with("mul", ct, args[1], idx, p);
    return out;
  }
  if (mode == "add") {
    if (x_linear) out[0] = ct;
    if (u_linear) out[1] = gather_at_scatter(ct, idx, p);
    return out;
  }
  // set: written elements take no cotangent back to the operand; of duplicate updates only
  // the one that is kept (the last) takes the cotangent of its element.
  if (x_linear) out[0] = scatter_with("set", ct, zeros(avals[1].shape, avals[1].dtype), idx, p);
  if (u_linear) {
    Array g = gather_at_scatter(ct, idx, p);
    if (!idx.empty()) {
      const Shape& us = avals[1].shape;
      const DType dt = index_dtype_for(shape_size(us) + 1);
      Array ids = reshape(iota(dt, {shape_size(us)}, 0) + Array(Scalar(1, dt)), us);  // 0 marks "none"
      Array owner = gather_at_scatter(scatter_with("set", zeros(avals[0].shape, dt), ids, idx, p), idx, p);
      g = where(owner == ids, g, zeros({}, g.dtype()));
    }
    out[1] = g;
  }
  return out;
}

Batched scatter_batch(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                      const BatchAxis& axis, const Params& p) {
  std::span<const Array> idx = ins.subspan(2);
  if (!any_batched(dims.subspan(2))) {  // the batch is one more window dimension
    const int64_t b = dims[0] == kNotBatched ? 0 : dims[0];
    auto [q, pos] = with_window_dim(p, b, axis.size, index_rank(idx));
    std::vector<Array> args{move_batch_dim(ins[0], dims[0], b, axis.size), move_batch_dim(ins[1], dims[1], pos, axis.size)};
    args.insert(args.end(), idx.begin(), idx.end());
    return {{bind1(self, args, q)}, {b}};
  }
  // Batched indices: index the operand's batch dimension with an iota.
  std::vector<Array> args{move_batch_dim(ins[0], dims[0], 0, axis.size),
                          move_batch_dim(ins[1], dims[1], p.get_int("batch_pos"), axis.size)};
  for (auto& i : batched_indices(idx, dims.subspan(2), axis.size, true)) args.push_back(i);
  return {{bind1(self, args, with_indexed_batch(p, axis.size))}, {0}};
}

ir::ShardingRule scatter_sharding_rule(std::span<const Aval> ins, std::span<const Aval>, const Params& p) {
  const size_t index_rank = ins.size() > 2 ? ins[2].shape.size() : 0;
  ir::ShardingRule r;
  std::vector<int> x, update(ins[1].shape.size(), ir::kWhole);
  label_windows(r, ins[0], index_rank, p, /*partial_windows=*/ins.size() == 2, x, update);
  r.operands = {x, update};
  for (size_t j = 2; j < ins.size(); ++j) r.operands.push_back(std::vector<int>(index_rank, ir::kWhole));
  r.results = {x};
  return r;
}

Params scatter_localize(const Params& p, std::span<const Aval> local_ins, std::span<const Aval>) {
  const size_t index_rank = local_ins.size() > 2 ? local_ins[2].shape.size() : 0;
  return indexed_localize(p, local_ins[0].shape, local_ins[1].shape, index_rank);
}

// Code generation of a static scatter (no index arrays) with unit strides and mode set, add or
// mul: inside the region [start, start + update shape) the update (combined with the operand
// unless `set`), elsewhere the operand.
std::vector<ir::IndexCase> scatter_index_map(const ir::IndexMap& m, std::span<const Aval> ins, const Aval&,
                                             const Params& p) {
  const std::string& mode = p.get<std::string>("mode");
  if (ins.size() != 2 || !p.get_ints("axes").empty() || (mode != "set" && mode != "add" && mode != "mul")) return {};
  for (int64_t s : p.get_ints("strides"))
    if (s != 1) return {};
  const auto& start = p.get_ints("start_indices");
  const Shape& region = ins[1].shape;
  ir::IndexCase update{.operand = 1, .combine = mode == "set" ? "" : mode};
  for (size_t d = 0; d < m.size(); ++d) {
    update.when.push_back({m[d], start[d], start[d] + region[d]});
    update.at.push_back(m[d].scaled(1, -start[d]));
  }
  return {update, {.operand = 0, .at = m}};
}

}  // namespace

const ir::Primitive& scatter_p = ir::register_primitive({
    .name = "scatter", .arity = {2, -1}, .abstract_eval = scatter_aval, .cpu_kernel = scatter_kernel, .inplace = ir::inplace_operand,
    .index_map = scatter_index_map, .jvp = scatter_jvp, .transpose = scatter_transpose, .batch = scatter_batch,
    .sharding_rule = scatter_sharding_rule, .localize = scatter_localize, .region_update = true});

Params indexed_params(const Axes& axes, int64_t batch_pos, const Shape& start, const Shape& limit,
                      const Shape& strides) {
  return Params{{"axes", axes}, {"batch_pos", batch_pos}, {"start_indices", start}, {"limit_indices", limit},
                {"strides", strides}};
}

OutOfBounds index_mode(const std::string& op, const IndexOptions& o, OutOfBounds dflt) {
  if (o.mode.empty()) return dflt;
  if (o.mode == "fill" || o.mode == "drop") return OutOfBounds::fill;
  if (o.mode == "clip") return OutOfBounds::clip;
  if (o.mode == "wrap") return OutOfBounds::wrap;
  if (o.mode == "promise_in_bounds") return OutOfBounds::promise_in_bounds;
  throw ValueError(op + ": unknown mode '" + o.mode +
                   "'; use \"fill\" (or \"drop\"), \"clip\", \"wrap\" or \"promise_in_bounds\"");
}

namespace {

/// A signed dtype that holds the indices of dtype `d` and the axis size `n`.
DType index_work_dtype(DType d, int64_t n) {
  return n > INT32_MAX || d == int64 || d == uint32 || d == uint64 ? int64 : int32;
}

/// JAX's fill value for out-of-bounds reads: NaN for floating and complex dtypes, the
/// minimum of signed integers, the maximum of unsigned ones, true for bool.
Scalar default_fill_value(DType d) {
  return visit_dtype(d, [&](auto z) -> Scalar {
    using T = decltype(z);
    if constexpr (std::is_same_v<T, bool>) return Scalar(true, d);
    else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) return Scalar(std::numeric_limits<T>::lowest(), d);
    else if constexpr (std::is_integral_v<T>) return Scalar(std::numeric_limits<T>::max(), d);
    else return Scalar(std::numeric_limits<double>::quiet_NaN(), d);
  });
}

}  // namespace

Array wrap_indices(const Array& i, int64_t n) {
  const DType dt = index_work_dtype(i.dtype(), n);
  return remainder(convert(i, dt), Array(Scalar(n, dt)));
}

Params with_fill(Params p, const IndexOptions& o, DType dtype) {
  p.set("out_of_bounds", std::string("fill"));
  p.set("fill_value", o.fill_value ? o.fill_value->astype(dtype) : default_fill_value(dtype));
  return p;
}

}  // namespace tessel::ops

namespace tessel {

Array slice(const Array& x, const Shape& start, const Shape& limit, const Shape& strides) {
  Shape st = strides.empty() ? Shape(size_t(x.ndim()), 1) : strides;
  ops::window_sizes("slice", x.shape(), start, limit, st);  // validate before the identity shortcut
  if (start == Shape(size_t(x.ndim()), 0) && limit == x.shape() && st == Shape(size_t(x.ndim()), 1)) return x;
  return ops::bind1(ops::slice_p, {x},
                    ops::Params{{"start_indices", start}, {"limit_indices", limit}, {"strides", st}});
}

Array slice_in_dim(const Array& x, int64_t start, int64_t limit, int64_t stride, int64_t axis) {
  axis = ops::canonicalize_axis("slice_in_dim", axis, x.ndim());
  const int64_t n = x.dim(axis);
  Shape s(size_t(x.ndim()), 0), l = x.shape(), st(size_t(x.ndim()), 1);
  s[size_t(axis)] = start < 0 ? start + n : start;  // negative bounds count from the end, as in lax
  l[size_t(axis)] = limit < 0 ? limit + n : limit;
  st[size_t(axis)] = stride;
  return slice(x, s, l, st);
}

Array dynamic_slice(const Array& x, const std::vector<Array>& start, const Shape& sizes) {
  std::vector<Array> ins{x};
  ins.insert(ins.end(), start.begin(), start.end());
  if (sizes == x.shape() && int64_t(start.size()) == x.ndim()) {  // only one window fits
    bool scalars = true;
    for (auto& s : start) scalars &= s.valid() && s.ndim() == 0 && is_integer(s.dtype());
    if (scalars) return x;
  }
  return ops::bind1(ops::dynamic_slice_p, ins, ops::Params{{"slice_sizes", sizes}});
}

Array dynamic_update_slice(const Array& x, const Array& update, const std::vector<Array>& start) {
  Array u = update;
  if (u.valid() && u.weak_type() && u.dtype() != x.dtype()) u = ops::convert(u, x.dtype(), x.weak_type());
  std::vector<Array> ins{x, u};
  ins.insert(ins.end(), start.begin(), start.end());
  return ops::bind1(ops::dynamic_update_slice_p, ins);
}

Array take(const Array& x_in, const Array& indices, std::optional<int64_t> axis_in, const IndexOptions& options) {
  using ops::OutOfBounds;
  if (!x_in.valid() || !indices.valid()) throw ValueError("take: an argument is an empty Array (default-constructed)");
  ops::check_index_dtype("take", indices.dtype());
  const Array x = axis_in ? x_in : ravel(x_in);
  if (x.ndim() == 0) throw IndexError("take: cannot take from a rank-0 array; reshape it first");
  const int64_t axis = ops::canonicalize_axis("take", axis_in.value_or(0), x.ndim());
  const OutOfBounds mode = ops::index_mode("take", options, OutOfBounds::fill);
  const int64_t n = x.dim(axis);
  Array idx = indices;
  if (mode == OutOfBounds::wrap) {
    idx = ops::wrap_indices(idx, n);
  } else if (mode == OutOfBounds::clip && n > 0) {  // jnp.take clamps the raw index: -1 reads element 0
    const DType dt = ops::index_work_dtype(idx.dtype(), n);
    idx = clip(ops::convert(idx, dt), zeros({}, dt), Array(Scalar(n - 1, dt)));
  }
  Shape start(size_t(x.ndim()), 0), st(size_t(x.ndim()), 1);
  ops::Params p = ops::indexed_params({axis}, axis, start, x.shape(), st);
  if (mode == OutOfBounds::fill) p = ops::with_fill(p, options, x.dtype());
  return ops::bind1(ops::gather_p, {x, idx}, p);
}

Array take_along_axis(const Array& x_in, const Array& indices, std::optional<int64_t> axis_in,
                      const IndexOptions& options) {
  using ops::OutOfBounds;
  if (!x_in.valid() || !indices.valid())
    throw ValueError("take_along_axis: an argument is an empty Array (default-constructed)");
  if (!axis_in && indices.ndim() != 1)
    throw ShapeError("take_along_axis: without an axis the indices must be 1-D (they index the flattened array), "
                     "got shape " + shape_to_string(indices.shape()));
  const Array x = axis_in ? x_in : ravel(x_in);
  const int64_t n = x.ndim();
  if (indices.ndim() != n)
    throw ShapeError("take_along_axis: indices of shape " + shape_to_string(indices.shape()) +
                     " must have the rank of the array of shape " + shape_to_string(x.shape()));
  const int64_t axis = ops::canonicalize_axis("take_along_axis", axis_in.value_or(0), n);
  ops::check_index_dtype("take_along_axis", indices.dtype());
  const OutOfBounds mode = ops::index_mode("take_along_axis", options, OutOfBounds::fill);
  // Other dimensions broadcast; index them with iotas so one gather reads every element.
  Shape out = indices.shape(), xs = x.shape();
  for (int64_t d = 0; d < n; ++d) {
    if (d == axis) continue;
    Shape b = ops::broadcast_shapes("take_along_axis", {{x.dim(d)}, {indices.dim(d)}});
    out[size_t(d)] = xs[size_t(d)] = b[0];
  }
  // Nothing to read from an empty axis: JAX's gather gives zeros (jnp.take refuses instead).
  if (x.dim(axis) == 0) return zeros(out, x.dtype());
  Array xb = broadcast_to(x, xs);
  std::vector<Array> ins{xb};
  Axes axes;
  for (int64_t d = 0; d < n; ++d) {
    axes.push_back(d);
    Array i = d == axis ? broadcast_to(indices, out) : iota(int32, out, d);
    if (d == axis && mode == OutOfBounds::wrap) i = ops::wrap_indices(i, x.dim(axis));
    ins.push_back(i);
  }
  Shape start(size_t(n), 0), st(size_t(n), 1);
  ops::Params p = ops::indexed_params(axes, 0, start, xs, st);
  if (mode == OutOfBounds::fill) p = ops::with_fill(p, options, x.dtype());
  return ops::bind1(ops::gather_p, ins, p);
}

}  // namespace tessel
