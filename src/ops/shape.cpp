// Shape primitives: reshape, transpose, concatenate, pad, rev, and the jax.numpy functions
// built on them (ravel, moveaxis, squeeze, stack, flip, roll, tile, repeat; jnp.pad's
// modes are in numpy_pad.cpp).
#include <algorithm>
#include <cstring>
#include <numeric>

#include "core/shape_check.h"
#include "ops/indexing.h"
#include "ops/rule_util.h"
#include "ops/shape.h"
#include "ops/strided.h"

namespace tessel::ops {
namespace {

std::vector<Aval> reshape_aval(std::span<const Aval> ins, const Params& p) {
  const Shape& s = p.get_ints("new_sizes");
  const int64_t n = detail::checked_size("reshape", s, ins[0].dtype);
  if (n != ins[0].size())
    throw ShapeError("reshape: cannot reshape an array of shape " + shape_to_string(ins[0].shape) + " (" +
                     std::to_string(ins[0].size()) + " elements) to " + shape_to_string(s) + " (" +
                     std::to_string(n) + " elements)");
  return {Aval(s, ins[0].dtype, ins[0].weak_type)};
}

void copy_kernel(const KernelCall& c) {
  if (c.outs[0] != c.ins[0]) parallel_memcpy(c.outs[0], c.ins[0], c.out_avals[0].nbytes());
}

// A reshape's output is its operand's bytes, so a compiled program hands it the operand's
// memory when the operand dies there (ir::InplaceFn) and copy_kernel copies nothing: the
// reshapes between products and the head splits of attention cost nothing.
std::vector<size_t> reshape_inplace(size_t out, std::span<const Aval> in_avals, std::span<const Aval> out_avals,
                                    const Params&) {
  if (out == 0 && in_avals[0].dtype == out_avals[0].dtype && in_avals[0].size() == out_avals[0].size()) return {0};
  return {};
}

std::vector<Array> reshape_transpose(const ir::Primitive&, std::span<const Array> cts, std::span<const Array>,
                                     std::span<const Aval> avals, const Params&) {
  if (is_zero(cts[0])) return {Array()};
  return {reshape(cts[0], avals[0].shape)};
}

Batched reshape_batch(const ir::Primitive&, std::span<const Array> ins, std::span<const int64_t> dims,
                      const BatchAxis& axis, const Params& p) {
  Shape s = p.get_ints("new_sizes");
  s.insert(s.begin(), axis.size);
  return {{reshape(move_batch_dim(ins[0], dims[0], 0, axis.size), s)}, {0}};
}

// SPMD. Leaving out size-1 dimensions (whole), the operand's and the result's dimensions
// fall into the smallest groups of equal size product, in order. A group of one
// dimension on each side is the same dimension: one pass-through factor. In a group that
// merges or splits dimensions, the major (first) dimension on each side is one factor and
// the others stay whole: k pieces of the major part, a on one side and b on the other, are
// the same contiguous runs of elements on both sides when k divides a and b, which the
// rule states as the factor's divisor gcd(a, b) (it sees no mesh; the partitioner checks
// it and gathers when it fails). Each group reshapes on its own, so groups stay
// independent: (5, 8, 6) split on dimension 1 -> (5, 48) split on dimension 1.
ir::ShardingRule reshape_sharding_rule(std::span<const Aval> ins, std::span<const Aval> outs, const Params&) {
  const Shape &is = ins[0].shape, &os = outs[0].shape;
  ir::ShardingRule r;
  r.operands = {std::vector<int>(is.size(), ir::kWhole)};
  r.results = {std::vector<int>(os.size(), ir::kWhole)};
  if (shape_size(is) == 0) return r;
  std::vector<size_t> id, od;  // the dimensions of size > 1
  for (size_t d = 0; d < is.size(); ++d)
    if (is[d] != 1) id.push_back(d);
  for (size_t d = 0; d < os.size(); ++d)
    if (os[d] != 1) od.push_back(d);
  size_t i = 0, o = 0;
  while (i < id.size() && o < od.size()) {
    const size_t i0 = i, o0 = o;
    int64_t pi = is[id[i++]], po = os[od[o++]];
    while (pi != po) {
      if (pi < po) pi *= is[id[i++]];
      else po *= os[od[o++]];
    }
    if (i == i0 + 1 && o == o0 + 1) {
      r.operands[0][id[i0]] = r.results[0][od[o0]] = add_factor(r);
      continue;
    }
    const int64_t major = std::gcd(is[id[i0]], os[od[o0]]);
    if (major < 2) continue;  // no piece count lines up: the group stays whole
    const int f = add_factor(r);
    r.divides.resize(size_t(f) + 1, 0);
    r.divides[size_t(f)] = major;
    r.operands[0][id[i0]] = r.results[0][od[o0]] = f;
  }
  return r;
}

Params reshape_localize(const Params& p, std::span<const Aval>, std::span<const Aval> local_outs) {
  Params q = p;
  q.set("new_sizes", local_outs[0].shape);
  return q;
}

// Code generation of a reshape that only inserts or removes size-1 dimensions: the other
// dimensions match in order (one that merges or splits dimensions has no affine map).
std::vector<ir::IndexCase> reshape_index_map(const ir::IndexMap& m, std::span<const Aval> ins, const Aval& out,
                                             const Params&) {
  Shape a, b;
  for (auto d : ins[0].shape)
    if (d != 1) a.push_back(d);
  for (auto d : out.shape)
    if (d != 1) b.push_back(d);
  if (a != b) return {};
  ir::IndexMap im;
  size_t k = 0;
  for (int64_t n : ins[0].shape) {
    if (n == 1) {
      im.push_back(ir::Affine{});
      continue;
    }
    while (out.shape[k] == 1) ++k;
    im.push_back(m[k++]);
  }
  return {{.at = im}};
}

}  // namespace

const ir::Primitive& reshape_p = ir::register_primitive({
    .name = "reshape", .arity = {1, 1}, .abstract_eval = reshape_aval, .cpu_kernel = copy_kernel,
    .inplace = reshape_inplace, .fusion = ir::FusionKind::kShape, .index_map = reshape_index_map,
    .point_cost = 0, .jvp = jvp_linear, .transpose = reshape_transpose, .batch = reshape_batch,
    .sharding_rule = reshape_sharding_rule, .localize = reshape_localize});

namespace {

// ---- transpose[permutation]: output dim i is input dim permutation[i] ----

void check_permutation(const std::string& op, const Axes& perm, int64_t ndim) {
  Axes sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  bool ok = int64_t(perm.size()) == ndim;
  for (int64_t i = 0; ok && i < ndim; ++i) ok = sorted[size_t(i)] == i;
  if (!ok)
    throw ValueError(op + ": axes " + shape_to_string(perm) + " are not a permutation of the " +
                     std::to_string(ndim) + " axes of the array; name each axis in [0, " + std::to_string(ndim) +
                     ") exactly once");
}

std::vector<Aval> transpose_aval(std::span<const Aval> ins, const Params& p) {
  const Axes& perm = p.get_ints("permutation");
  check_permutation("transpose", perm, ins[0].ndim());
  Shape s;
  for (auto a : perm) s.push_back(ins[0].shape[size_t(a)]);
  return {Aval(s, ins[0].dtype, ins[0].weak_type)};
}

void transpose_kernel(const KernelCall& c) {
  const Axes& perm = c.params.get_ints("permutation");
  auto in_st = strides_of(c.in_avals[0].shape);
  std::vector<int64_t> src(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) src[i] = in_st[size_t(perm[i])];
  const Shape& os = c.out_avals[0].shape;
  strided_copy(itemsize(c.in_avals[0].dtype), os, c.outs[0], 0, strides_of(os), c.ins[0], 0, src);
}

std::vector<Array> transpose_transpose(const ir::Primitive&, std::span<const Array> cts, std::span<const Array>,
                                       std::span<const Aval>, const Params& p) {
  if (is_zero(cts[0])) return {Array()};
  const Axes& perm = p.get_ints("permutation");
  Axes inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[size_t(perm[i])] = int64_t(i);
  return {transpose(cts[0], inverse)};
}

/// The batch dimension stays where it is; the permutation moves the others around it.
Batched transpose_batch(const ir::Primitive&, std::span<const Array> ins, std::span<const int64_t> dims,
                        const BatchAxis&, const Params& p) {
  const int64_t b = dims[0];
  Axes perm;
  for (auto a : p.get_ints("permutation")) perm.push_back(a < b ? a : a + 1);
  perm.insert(perm.begin() + b, b);
  return {{transpose(ins[0], perm)}, {b}};
}

// SPMD: every dimension passes through to where the permutation puts it.
ir::ShardingRule transpose_sharding_rule(std::span<const Aval> ins, std::span<const Aval>, const Params& p) {
  const Axes& perm = p.get_ints("permutation");
  ir::ShardingRule r;
  std::vector<int> in, out;
  for (int64_t d = 0; d < ins[0].ndim(); ++d) in.push_back(add_factor(r));
  for (auto a : perm) out.push_back(in[size_t(a)]);
  r.operands = {in};
  r.results = {out};
  return r;
}

// Code generation: output dimension k reads operand dimension permutation[k].
std::vector<ir::IndexCase> transpose_index_map(const ir::IndexMap& m, std::span<const Aval> ins, const Aval&,
                                               const Params& p) {
  const Axes& perm = p.get_ints("permutation");
  ir::IndexMap im(ins[0].shape.size());
  for (size_t k = 0; k < perm.size(); ++k) im[size_t(perm[k])] = m[k];
  return {{.at = im}};
}

const ir::Primitive& transpose_p = ir::register_primitive({
    .name = "transpose", .arity = {1, 1}, .abstract_eval = transpose_aval, .cpu_kernel = transpose_kernel,
    .fusion = ir::FusionKind::kShape, .index_map = transpose_index_map, .point_cost = 0, .jvp = jvp_linear,
    .transpose = transpose_transpose, .batch = transpose_batch, .sharding_rule = transpose_sharding_rule});

// ---- rev[dimensions]: reverses the order of elements along the dimensions ----

std::vector<Aval> rev_aval(std::span<const Aval> ins, const Params& p) {
  for (auto d : p.get_ints("dimensions"))
    if (d < 0 || d >= ins[0].ndim())
      throw IndexError("rev: dimension " + std::to_string(d) + " is out of range for shape " +
                       shape_to_string(ins[0].shape));
  return {ins[0]};
}

void rev_kernel(const KernelCall& c) {
  const Shape& s = c.in_avals[0].shape;
  auto st = strides_of(s);
  std::vector<int64_t> src = st;
  int64_t base = 0;
  for (auto d : c.params.get_ints("dimensions")) {
    base += (s[size_t(d)] - 1) * st[size_t(d)];
    src[size_t(d)] = -st[size_t(d)];
  }
  strided_copy(itemsize(c.in_avals[0].dtype), s, c.outs[0], 0, st, c.ins[0], base, src);
}

std::vector<Array> rev_transpose(const ir::Primitive& self, std::span<const Array> cts, std::span<const Array>,
                                 std::span<const Aval>, const Params& p) {
  if (is_zero(cts[0])) return {Array()};
  return {bind1(self, {cts[0]}, p)};
}

Batched rev_batch(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                  const BatchAxis&, const Params& p) {
  Axes rd;
  for (auto d : p.get_ints("dimensions")) rd.push_back(d < dims[0] ? d : d + 1);
  return {{bind1(self, {ins[0]}, Params{{"dimensions", rd}})}, {dims[0]}};
}

// SPMD: a reversed dimension is a permutation factor whose pieces change places (device d
// takes piece k-1-d and reverses it; where the pieces do not divide it, the result's grid
// puts the padding first: sharding/halo.cpp); the others pass through.
ir::ShardingRule rev_sharding_rule(std::span<const Aval> ins, std::span<const Aval> outs, const Params& p) {
  std::vector<DimRule> dims(outs[0].shape.size(), DimRule::kPass);
  for (auto d : p.get_ints("dimensions")) dims[size_t(d)] = DimRule::kPermute;
  return aligned_sharding_rule(ins, outs, dims);
}

// Code generation: a reversed dimension of size n reads index n - 1 - i.
std::vector<ir::IndexCase> rev_index_map(const ir::IndexMap& m, std::span<const Aval> ins, const Aval&,
                                         const Params& p) {
  ir::IndexMap im = m;
  for (int64_t d : p.get_ints("dimensions")) im[size_t(d)] = m[size_t(d)].scaled(-1, ins[0].shape[size_t(d)] - 1);
  return {{.at = im}};
}

const ir::Primitive& rev_p = ir::register_primitive({
    .name = "rev", .arity = {1, 1}, .abstract_eval = rev_aval, .cpu_kernel = rev_kernel, .fusion = ir::FusionKind::kShape,
    .index_map = rev_index_map, .point_cost = 0, .jvp = jvp_linear, .transpose = rev_transpose, .batch = rev_batch,
    .sharding_rule = rev_sharding_rule});

// ---- concatenate[dimension] ----

std::vector<Aval> concatenate_aval(std::span<const Aval> ins, const Params& p) {
  if (ins.empty()) throw ValueError("concatenate: needs at least one array");
  const int64_t dim = p.get_int("dimension");
  const Aval& a0 = ins[0];
  if (dim < 0 || dim >= a0.ndim())
    throw IndexError("concatenate: dimension " + std::to_string(dim) + " is out of range for operands of rank " +
                     std::to_string(a0.ndim()));
  Shape out = a0.shape;
  bool weak = true;
  for (const Aval& a : ins) {
    if (a.dtype != a0.dtype)
      throw DTypeError("concatenate: operands have different dtypes " + avals_to_string(ins) +
                       "; convert them to one dtype first");
    if (a.ndim() != a0.ndim())
      throw ShapeError("concatenate: arrays must have the same rank, got shapes " + shape_to_string(a0.shape) +
                       " and " + shape_to_string(a.shape) + "; reshape them first");
    for (int64_t d = 0; d < a0.ndim(); ++d)
      if (d != dim && a.shape[size_t(d)] != a0.shape[size_t(d)])
        throw ShapeError("concatenate: shapes " + shape_to_string(a0.shape) + " and " + shape_to_string(a.shape) +
                         " differ in dimension " + std::to_string(d) + " (only dimension " + std::to_string(dim) +
                         ", the one concatenated along, may differ)");
    weak &= a.weak_type;
    if (&a != &a0) out[size_t(dim)] = detail::checked_dim_add("concatenate", out[size_t(dim)], a.shape[size_t(dim)]);
  }
  return {Aval(out, a0.dtype, weak)};
}

void concatenate_kernel(const KernelCall& c) {
  const size_t dim = size_t(c.params.get_int("dimension"));
  const Shape& os = c.out_avals[0].shape;
  auto ost = strides_of(os);
  int64_t offset = 0;
  for (size_t i = 0; i < c.ins.size(); ++i) {
    const Shape& is = c.in_avals[i].shape;
    strided_copy(itemsize(c.out_avals[0].dtype), is, c.outs[0], offset * ost[dim], ost, c.ins[i], 0, strides_of(is));
    offset += is[dim];
  }
}

/// Each linear operand's cotangent is its slice of the output cotangent.
std::vector<Array> concatenate_transpose(const ir::Primitive&, std::span<const Array> cts, std::span<const Array> args,
                                         std::span<const Aval> avals, const Params& p) {
  const int64_t dim = p.get_int("dimension");
  std::vector<Array> out(avals.size());
  if (is_zero(cts[0])) return out;
  int64_t at = 0;
  for (size_t i = 0; i < avals.size(); ++i) {
    const int64_t n = avals[i].shape[size_t(dim)];
    if (!args[i].valid()) out[i] = slice_in_dim(cts[0], at, at + n, 1, dim);
    at += n;
  }
  return out;
}

Batched concatenate_batch(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                          const BatchAxis& axis, const Params& p) {
  std::vector<Array> xs;
  for (size_t i = 0; i < ins.size(); ++i) xs.push_back(move_batch_dim(ins[i], dims[i], 0, axis.size));
  return {{bind1(self, xs, Params{{"dimension", p.get_int("dimension") + 1}})}, {0}};
}

// SPMD: the concatenated dimension is a permutation factor (each piece of the result reads
// the operands' rows at its positions); the others pass through.
ir::ShardingRule concatenate_sharding_rule(std::span<const Aval> ins, std::span<const Aval> outs, const Params& p) {
  std::vector<DimRule> dims(outs[0].shape.size(), DimRule::kPass);
  dims[size_t(p.get_int("dimension"))] = DimRule::kPermute;
  return aligned_sharding_rule(ins, outs, dims);
}

// Code generation: operand i where the index along `dimension` lies in its range of the
// output (a range test, cost 1), read at that index less the range's start.
std::vector<ir::IndexCase> concatenate_index_map(const ir::IndexMap& m, std::span<const Aval> ins, const Aval&,
                                                 const Params& p) {
  const size_t dim = size_t(p.get_int("dimension"));
  std::vector<ir::IndexCase> cases;
  int64_t offset = 0;
  for (size_t i = 0; i < ins.size(); ++i) {
    const int64_t n = ins[i].shape[dim];
    ir::IndexMap im = m;
    im[dim] = m[dim].scaled(1, -offset);
    cases.push_back({.when = {{m[dim], offset, offset + n}}, .operand = int(i), .at = im});
    offset += n;
  }
  return cases;
}

}  // namespace

const ir::Primitive& concatenate_p = ir::register_primitive({
    .name = "concatenate", .arity = {1, -1}, .abstract_eval = concatenate_aval, .cpu_kernel = concatenate_kernel,
    .index_map = concatenate_index_map, .jvp = jvp_linear, .transpose = concatenate_transpose,
    .batch = concatenate_batch, .sharding_rule = concatenate_sharding_rule});

namespace {

// ---- pad[padding_config](operand, padding_value): padding_config holds (low, high,
// interior) for each dimension, flattened; negative low/high crop ----

std::vector<Aval> pad_aval(std::span<const Aval> ins, const Params& p) {
  const Aval& x = ins[0];
  const auto& cfg = p.get_ints("padding_config");
  if (!ins[1].shape.empty())
    throw ShapeError("pad: the padding value must be a scalar, got shape " + shape_to_string(ins[1].shape));
  if (ins[1].dtype != x.dtype)
    throw DTypeError("pad: padding value dtype " + std::string(dtype_name(ins[1].dtype)) +
                     " differs from the operand dtype " + dtype_name(x.dtype) + "; convert it first");
  if (int64_t(cfg.size()) != 3 * x.ndim())
    throw ShapeError("pad: needs one (low, high, interior) triple per dimension of shape " +
                     shape_to_string(x.shape) + ", got " + std::to_string(cfg.size() / 3));
  Shape out;
  for (int64_t d = 0; d < x.ndim(); ++d) {
    int64_t lo = cfg[size_t(3 * d)], hi = cfg[size_t(3 * d + 1)], in = cfg[size_t(3 * d + 2)];
    int64_t n = x.shape[size_t(d)];
    if (in < 0)
      throw ValueError("pad: interior padding must be >= 0, got " + std::to_string(in) + " for dimension " +
                       std::to_string(d));
    const int64_t size = detail::checked_dim_add(
        "pad", detail::checked_dim_add("pad", lo, hi),
        detail::checked_dim_add("pad", n, detail::checked_dim_mul("pad", std::max<int64_t>(0, n - 1), in)));
    if (size < 0)
      throw ValueError("pad: padding (" + std::to_string(lo) + ", " + std::to_string(hi) + ", " + std::to_string(in) +
                       ") crops dimension " + std::to_string(d) + " of size " + std::to_string(n) +
                       " to a negative size " + std::to_string(size));
    out.push_back(size);
  }
  return {Aval(out, x.dtype, x.weak_type)};
}

void pad_kernel(const KernelCall& c) {
  const Shape& is = c.in_avals[0].shape;
  const Shape& os = c.out_avals[0].shape;
  const auto& cfg = c.params.get_ints("padding_config");
  const size_t isz = itemsize(c.out_avals[0].dtype);
  visit_itemsize(isz, [&](auto z) {  // fill with the padding value
    using E = decltype(z);
    E v;
    std::memcpy(&v, c.ins[1], sizeof(E));
    parallel_fill(c.out<E>(0), c.out_avals[0].size(), v);
  });
  // Input element i of a dimension lands at lo + i * (interior + 1); copy those that land
  // inside the output.
  auto ist = strides_of(is), ost = strides_of(os);
  Shape box(is.size());
  std::vector<int64_t> sa(is.size()), sb(is.size());
  int64_t a0 = 0, b0 = 0;
  for (size_t d = 0; d < is.size(); ++d) {
    int64_t lo = cfg[3 * d], step = cfg[3 * d + 2] + 1;
    int64_t first = lo >= 0 ? 0 : (-lo + step - 1) / step;                      // first i with pos >= 0
    int64_t last = std::min(is[d] - 1, os[d] - 1 - lo < 0 ? -1 : (os[d] - 1 - lo) / step);  // pos < out
    box[d] = std::max<int64_t>(0, last - first + 1);
    a0 += (lo + first * step) * ost[d];
    b0 += first * ist[d];
    sa[d] = step * ost[d];
    sb[d] = ist[d];
  }
  strided_copy(isz, box, c.outs[0], a0, sa, c.ins[0], b0, sb);
}

// pad is linear in the operand and the padding value jointly.
std::vector<Array> pad_transpose(const ir::Primitive& self, std::span<const Array> cts, std::span<const Array> args,
                                 std::span<const Aval> avals, const Params& p) {
  if (is_zero(cts[0])) return {Array(), Array()};
  const Array& ct = cts[0];
  const auto& cfg = p.get_ints("padding_config");
  // Undo low/high padding (padding what was cropped with zeros), then take every
  // (interior + 1)-th element.
  std::vector<int64_t> unpad;
  Shape start, stride;
  for (size_t d = 0; d < cfg.size() / 3; ++d) {
    unpad.insert(unpad.end(), {-cfg[3 * d], -cfg[3 * d + 1], 0});
    start.push_back(0);
    stride.push_back(cfg[3 * d + 2] + 1);
  }
  Array zero = zeros({}, ct.dtype());
  Array unpadded = std::all_of(unpad.begin(), unpad.end(), [](int64_t v) { return v == 0; })
                       ? ct
                       : bind1(self, {ct, zero}, Params{{"padding_config", unpad}});
  Array t_operand = slice(unpadded, start, unpadded.shape(), stride);
  Array t_value;
  if (!args[1].valid()) t_value = convert(sum(ct) - sum(t_operand), avals[1].dtype);
  return {args[0].valid() ? Array() : t_operand, t_value};
}

/// A batched padding value pads with zeros and then selects the value outside the operand.
Batched pad_batch(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                  const BatchAxis& axis, const Params& p) {
  std::vector<int64_t> cfg{0, 0, 0};
  const auto& c = p.get_ints("padding_config");
  cfg.insert(cfg.end(), c.begin(), c.end());
  Array x = move_batch_dim(ins[0], dims[0], 0, axis.size);
  if (dims[1] == kNotBatched) return {{bind1(self, {x, ins[1]}, Params{{"padding_config", cfg}})}, {0}};
  Array padded = bind1(self, {x, zeros({}, x.dtype())}, Params{{"padding_config", cfg}});
  Shape example(x.shape().begin() + 1, x.shape().end());
  Array inside = bind1(self, {ones(example, bool_), Array(false)}, Params{{"padding_config", c}});
  Array value = broadcast_in_dim(ins[1], padded.shape(), {0});
  return {{where(broadcast_to(inside, padded.shape()), padded, value)}, {0}};
}

// SPMD: a dimension padded (or cropped) at its ends is a permutation factor (its positions
// shift by the low padding); interior padding keeps it whole; the others pass through. The
// padding value is a scalar.
ir::ShardingRule pad_sharding_rule(std::span<const Aval> ins, std::span<const Aval> outs, const Params& p) {
  const auto& cfg = p.get_ints("padding_config");
  std::vector<DimRule> dims(outs[0].shape.size(), DimRule::kPass);
  for (size_t d = 0; d < dims.size(); ++d) {
    if (cfg[3 * d + 2] != 0) dims[d] = DimRule::kWhole;
    else if (cfg[3 * d] != 0 || cfg[3 * d + 1] != 0) dims[d] = DimRule::kPermute;
  }
  return aligned_sharding_rule(ins, outs, dims);
}

// Code generation without interior padding: the operand inside [low, low + size) of every
// dimension (a range test, cost 1), read at the index less low; the padding value elsewhere.
std::vector<ir::IndexCase> pad_index_map(const ir::IndexMap& m, std::span<const Aval> ins, const Aval&,
                                         const Params& p) {
  const auto& cfg = p.get_ints("padding_config");
  for (size_t d = 0; d < cfg.size() / 3; ++d)
    if (cfg[3 * d + 2] != 0) return {};
  ir::IndexCase inside{.operand = 0};
  for (size_t d = 0; d < m.size(); ++d) {
    inside.when.push_back({m[d], cfg[3 * d], cfg[3 * d] + ins[0].shape[d]});
    inside.at.push_back(m[d].scaled(1, -cfg[3 * d]));
  }
  return {inside, {.operand = 1}};
}

const ir::Primitive& pad_p = ir::register_primitive({
    .name = "pad", .arity = {2, 2}, .abstract_eval = pad_aval, .cpu_kernel = pad_kernel,
    .index_map = pad_index_map, .jvp = jvp_linear, .transpose = pad_transpose, .batch = pad_batch,
    .sharding_rule = pad_sharding_rule});

}  // namespace
}  // namespace tessel::ops

namespace tessel {

Array reshape(const Array& x, const Shape& shape) {
  Shape s = shape;
  int64_t infer = -1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      if (infer >= 0) throw ShapeError("reshape: only one dimension may be -1, got " + shape_to_string(shape));
      infer = int64_t(i);
    } else if (s[i] < 0) {
      throw ShapeError("reshape: negative dimension in " + shape_to_string(shape));
    }
  }
  if (infer >= 0) {
    Shape others = s;
    others[size_t(infer)] = 1;
    const int64_t known = detail::checked_size("reshape", others, x.dtype());
    if (known == 0 || x.size() % known != 0)
      throw ShapeError("reshape: cannot reshape an array of shape " + shape_to_string(x.shape()) + " to " +
                       shape_to_string(shape));
    s[size_t(infer)] = x.size() / known;
  }
  if (s == x.shape()) return x;
  return ops::bind1(ops::reshape_p, {x}, ops::Params{{"new_sizes", s}});
}

Array Array::reshape(Shape s) const { return tessel::reshape(*this, s); }

Array ravel(const Array& x) { return reshape(x, {x.size()}); }

Array transpose(const Array& x, std::optional<Axes> axes) {
  const int64_t n = x.ndim();
  Axes perm;
  if (!axes) {
    for (int64_t i = n - 1; i >= 0; --i) perm.push_back(i);
  } else {
    if (int64_t(axes->size()) != n)
      throw ValueError("transpose: axes " + shape_to_string(*axes) + " do not match an array of rank " +
                       std::to_string(n) + "; give one entry per axis");
    for (auto a : *axes) perm.push_back(ops::canonicalize_axis("transpose", a, n));
  }
  Axes identity(static_cast<size_t>(n));
  std::iota(identity.begin(), identity.end(), 0);
  if (perm == identity) return x;
  return ops::bind1(ops::transpose_p, {x}, ops::Params{{"permutation", perm}});
}

Array Array::T() const { return tessel::transpose(*this); }

Array moveaxis(const Array& x, int64_t source, int64_t destination) {
  const int64_t n = x.ndim();
  int64_t s = ops::canonicalize_axis("moveaxis", source, n), d = ops::canonicalize_axis("moveaxis", destination, n);
  Axes perm;
  for (int64_t i = 0; i < n; ++i)
    if (i != s) perm.push_back(i);
  perm.insert(perm.begin() + d, s);
  return transpose(x, perm);
}

Array swapaxes(const Array& x, int64_t a, int64_t b) {
  const int64_t n = x.ndim();
  a = ops::canonicalize_axis("swapaxes", a, n);
  b = ops::canonicalize_axis("swapaxes", b, n);
  Axes perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[size_t(a)], perm[size_t(b)]);
  return transpose(x, perm);
}

Array squeeze(const Array& x, std::optional<Axes> axes) {
  const Shape& s = x.shape();
  Axes drop;
  if (!axes) {
    for (size_t i = 0; i < s.size(); ++i)
      if (s[i] == 1) drop.push_back(int64_t(i));
  } else {
    drop = ops::canonicalize_axes("squeeze", *axes, x.ndim(), false);
    for (auto a : drop)
      if (s[size_t(a)] != 1)
        throw ShapeError("squeeze: cannot remove axis " + std::to_string(a) + " of shape " + shape_to_string(s) +
                         " because its size is " + std::to_string(s[size_t(a)]) + ", not 1");
  }
  Shape out;
  for (size_t i = 0; i < s.size(); ++i)
    if (!std::binary_search(drop.begin(), drop.end(), int64_t(i))) out.push_back(s[i]);
  return reshape(x, out);
}

Array expand_dims(const Array& x, Axes axes) {
  const int64_t rank = x.ndim() + int64_t(axes.size());
  Axes ins = ops::canonicalize_axes("expand_dims", axes, rank, false);
  Shape out;
  size_t k = 0;
  for (int64_t i = 0; i < rank; ++i)
    out.push_back(std::binary_search(ins.begin(), ins.end(), i) ? 1 : x.shape()[k++]);
  return reshape(x, out);
}

Array concatenate(const std::vector<Array>& xs, int64_t axis) {
  if (xs.empty()) throw ValueError("concatenate: needs at least one array");
  const int64_t n = xs[0].ndim();
  if (n == 0) throw ShapeError("concatenate: zero-dimensional arrays cannot be concatenated; use stack");
  for (const Array& x : xs)
    if (x.ndim() != n)
      throw ShapeError("concatenate: arrays must have the same rank, got shapes " + shape_to_string(xs[0].shape()) +
                       " and " + shape_to_string(x.shape()) + "; reshape them first");
  axis = ops::canonicalize_axis("concatenate", axis, n);
  PromotedType t = ops::result_type(xs);
  std::vector<Array> ys;
  for (const Array& x : xs) ys.push_back(ops::convert(x, t.dtype, t.weak));
  if (ys.size() == 1) return ys[0];
  return ops::bind1(ops::concatenate_p, ys, ops::Params{{"dimension", axis}});
}

Array stack(const std::vector<Array>& xs, int64_t axis) {
  if (xs.empty()) throw ValueError("stack: needs at least one array");
  axis = ops::canonicalize_axis("stack", axis, xs[0].ndim() + 1);
  std::vector<Array> ys;
  for (const Array& x : xs) {
    if (x.shape() != xs[0].shape())
      throw ShapeError("stack: all arrays must have the same shape, got " + shape_to_string(xs[0].shape()) + " and " +
                       shape_to_string(x.shape()));
    ys.push_back(expand_dims(x, {axis}));
  }
  return concatenate(ys, axis);
}

Array lax_pad(const Array& x, Scalar value, const std::vector<std::array<int64_t, 3>>& config) {
  if (int64_t(config.size()) != x.ndim())
    throw ShapeError("lax_pad: needs one (low, high, interior) triple per dimension of shape " +
                     shape_to_string(x.shape()) + ", got " + std::to_string(config.size()));
  std::vector<int64_t> flat;
  for (auto& c : config) flat.insert(flat.end(), c.begin(), c.end());
  if (std::all_of(flat.begin(), flat.end(), [](int64_t v) { return v == 0; })) return x;
  Array v = detail::scalar_array(value.astype(x.dtype()), false);
  return ops::bind1(ops::pad_p, {x, v}, ops::Params{{"padding_config", flat}});
}

Array flip(const Array& x, std::optional<Axes> axes) {
  Axes dims = ops::canonicalize_axes("flip", axes.value_or(Axes{}), x.ndim(), !axes.has_value());
  if (dims.empty()) return x;
  return ops::bind1(ops::rev_p, {x}, ops::Params{{"dimensions", dims}});
}

Array roll(const Array& x, int64_t shift, int64_t axis) {
  axis = ops::canonicalize_axis("roll", axis, x.ndim());
  const int64_t n = x.dim(axis);
  if (n == 0) return x;
  const int64_t s = ((shift % n) + n) % n;
  if (s == 0) return x;
  return concatenate({slice_in_dim(x, n - s, n, 1, axis), slice_in_dim(x, 0, n - s, 1, axis)}, axis);
}

Array tile(const Array& x, const Shape& reps) {
  for (auto r : reps)
    if (r < 0) throw ValueError("tile: repetitions must be >= 0, got " + shape_to_string(reps));
  const size_t rank = std::max(reps.size(), size_t(x.ndim()));
  Shape r(rank - reps.size(), 1), s(rank - size_t(x.ndim()), 1);
  r.insert(r.end(), reps.begin(), reps.end());
  s.insert(s.end(), x.shape().begin(), x.shape().end());
  // (s0, s1, ...) -> broadcast to (r0, s0, r1, s1, ...) -> (r0*s0, r1*s1, ...).
  Shape big, out;
  Axes dims;
  for (size_t d = 0; d < rank; ++d) {
    big.push_back(r[d]);
    big.push_back(s[d]);
    dims.push_back(int64_t(2 * d + 1));
  }
  detail::checked_size("tile", big, x.dtype());
  for (size_t d = 0; d < rank; ++d) out.push_back(r[d] * s[d]);  // (cannot overflow once `big` passed)
  return reshape(broadcast_in_dim(reshape(x, s), big, dims), out);
}

namespace {
// What repeat works on: the flattened operand without an axis; a scalar repeats into 1-D
// whatever the axis (jnp).
std::pair<Array, int64_t> repeat_operand(const Array& x, std::optional<int64_t> axis) {
  if (!axis || x.ndim() == 0) return {ravel(x), 0};
  return {x, ops::canonicalize_axis("repeat", *axis, x.ndim())};
}
}  // namespace

Array repeat(const Array& x_in, int64_t repeats, std::optional<int64_t> axis_in, const RepeatOptions& options) {
  if (repeats < 0) throw ValueError("repeat: repeats must be >= 0, got " + std::to_string(repeats));
  const auto [x, axis] = repeat_operand(x_in, axis_in);
  if (options.total_repeat_length && *options.total_repeat_length != x.dim(axis) * repeats)
    return repeat(x, full({x.dim(axis)}, repeats, int64), axis, options);
  // (..., n, ...) -> broadcast to (..., n, repeats, ...) -> (..., n * repeats, ...).
  Shape big = x.shape(), out = x.shape();
  big.insert(big.begin() + axis + 1, repeats);
  detail::checked_size("repeat", big, x.dtype());
  out[size_t(axis)] *= repeats;  // (cannot overflow once `big` passed the check)
  Axes dims;
  for (int64_t d = 0; d < x.ndim(); ++d) dims.push_back(d <= axis ? d : d + 1);
  return reshape(broadcast_in_dim(x, big, dims), out);
}

Array repeat(const Array& x_in, const Array& repeats, std::optional<int64_t> axis_in, const RepeatOptions& options) {
  if (!repeats.valid()) throw ValueError("repeat: repeats is an empty Array (default-constructed)");
  if (!is_integer(repeats.dtype()))
    throw DTypeError("repeat: repeats must have an integer dtype, got " + std::string(dtype_name(repeats.dtype())));
  if (repeats.ndim() > 1)
    throw ShapeError("repeat: repeats must be a scalar or 1-D, got shape " + shape_to_string(repeats.shape()));
  const auto [x, axis] = repeat_operand(x_in, axis_in);
  const int64_t n = x.dim(axis);
  const auto& total_opt = options.total_repeat_length;
  if (total_opt && *total_opt < 0)
    throw ValueError("repeat: total_repeat_length must be >= 0, got " + std::to_string(*total_opt));
  if (repeats.size() == 1 && !repeats.is_tracer()) {  // one count for all: the broadcast above
    const int64_t r = ravel(repeats).to_vector<int64_t>()[0];
    if (!total_opt || *total_opt == r * n) return repeat(x, r, axis);
  }
  if (repeats.size() != 1 && repeats.size() != n)
    throw ShapeError("repeat: repeats of shape " + shape_to_string(repeats.shape()) + " must hold one count, or one " +
                     "per element along axis " + std::to_string(axis) + " of shape " + shape_to_string(x.shape()));
  const Array counts = broadcast_to(reshape(repeats, {repeats.size()}), {n});
  int64_t total = 0;
  if (total_opt) {
    total = *total_opt;
  } else if (counts.is_tracer()) {
    throw ConcretizationError("repeat: the counts are traced (under jit), so the length of the result is unknown; "
                              "pass RepeatOptions{.total_repeat_length = ...}, or concrete counts");
  } else {
    for (int64_t c : counts.to_vector<int64_t>()) {
      if (c < 0) throw ValueError("repeat: repeats must be >= 0, got " + std::to_string(c));
      total += c;
    }
  }
  Shape out = x.shape();
  out[size_t(axis)] = total;
  if (total == 0 || n == 0) {
    if (total > 0)
      throw ValueError("repeat: cannot fill " + std::to_string(total) + " positions from the empty axis " +
                       std::to_string(axis) + " of shape " + shape_to_string(x.shape()));
    return zeros(out, x.dtype());
  }
  // Element k starts at position sum(counts[:k]): mark each start, and a running count of
  // the marks is the element each position reads (past the last start: the last element;
  // starts beyond `total` are dropped, cutting the result off).
  const DType dt = total > INT32_MAX ? int64 : int32;
  const Array c = ops::convert(counts, dt);
  const Array starts = cumsum(c, 0) - c;
  const Array marks = zeros({total}, dt).at({starts}).add(ones({n}, dt));
  const Array which = cumsum(marks, 0) - Array(Scalar(1, dt));
  return take(x, which, axis, {.mode = "clip"});
}
}  // namespace tessel
