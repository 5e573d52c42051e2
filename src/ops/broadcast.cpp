// broadcast_in_dim: the one broadcasting primitive; NumPy broadcasting is built on it.
#include <algorithm>
#include <cstring>

#include "core/shape_check.h"
#include "ops/rule_util.h"
#include "ops/strided.h"

namespace tessel::ops {
namespace {

std::vector<Aval> broadcast_aval(std::span<const Aval> ins, const Params& p) {
  const Shape& shape = p.get_ints("shape");
  const Axes& dims = p.get_ints("broadcast_dimensions");
  const Aval& x = ins[0];
  if (dims.size() != x.shape.size())
    throw ShapeError("broadcast_in_dim: operand of shape " + shape_to_string(x.shape) + " needs " +
                     std::to_string(x.shape.size()) + " broadcast_dimensions, got " + shape_to_string(dims));
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0 || dims[i] >= int64_t(shape.size()) || (i > 0 && dims[i] <= dims[i - 1]))
      throw ShapeError("broadcast_in_dim: broadcast_dimensions " + shape_to_string(dims) +
                       " must be strictly increasing and within the output rank " + std::to_string(shape.size()));
    if (x.shape[i] != 1 && x.shape[i] != shape[size_t(dims[i])])
      throw ShapeError("broadcast_in_dim: cannot broadcast operand of shape " + shape_to_string(x.shape) +
                       " to shape " + shape_to_string(shape) + " (operand dimension " + std::to_string(i) +
                       " has size " + std::to_string(x.shape[i]) + ", target " +
                       std::to_string(shape[size_t(dims[i])]) + ")");
  }
  detail::checked_size("broadcast_in_dim", shape, x.dtype);
  return {Aval(shape, x.dtype, x.weak_type)};
}

// A strided copy (ops/strided.h, split over the arena for large outputs) whose input stride
// is 0 along every broadcast dimension.
void broadcast_kernel(const KernelCall& c) {
  const Shape& out_shape = c.out_avals[0].shape;
  const Shape& in_shape = c.in_avals[0].shape;
  const Axes& dims = c.params.get_ints("broadcast_dimensions");
  const size_t isz = itemsize(c.in_avals[0].dtype);
  if (shape_size(out_shape) == 0) return;
  if (shape_size(in_shape) == 1) {
    visit_itemsize(isz, [&](auto z) {
      using E = decltype(z);
      E v;
      std::memcpy(&v, c.ins[0], sizeof(E));
      parallel_fill(c.out<E>(0), shape_size(out_shape), v);
    });
    return;
  }
  std::vector<int64_t> istr(out_shape.size(), 0);
  const auto in_strides = strides_of(in_shape);
  for (size_t i = 0; i < dims.size(); ++i)
    if (in_shape[i] != 1) istr[size_t(dims[i])] = in_strides[i];
  strided_copy(isz, out_shape, c.outs[0], 0, strides_of(out_shape), c.ins[0], 0, istr);
}

// ---- transformation rules: broadcast_in_dim is linear ----

/// The cotangent of a broadcast operand: sum over the new dimensions and the size-1
/// dimensions that were expanded, then restore the operand's size-1 dimensions.
std::vector<Array> broadcast_transpose(const ir::Primitive&, std::span<const Array> cts, std::span<const Array>,
                                       std::span<const Aval> avals, const Params& p) {
  if (is_zero(cts[0])) return {Array()};
  const Shape& shape = p.get_ints("shape");
  const Axes& dims = p.get_ints("broadcast_dimensions");
  const Shape& xs = avals[0].shape;
  Axes summed;
  for (int64_t d = 0; d < int64_t(shape.size()); ++d) {
    auto it = std::find(dims.begin(), dims.end(), d);
    if (it == dims.end() || (xs[size_t(it - dims.begin())] == 1 && shape[size_t(d)] != 1)) summed.push_back(d);
  }
  Array ct = summed.empty() ? cts[0] : sum(cts[0], summed);
  return {reshape(convert(ct, avals[0].dtype), xs)};
}

Batched broadcast_batch(const ir::Primitive&, std::span<const Array> ins, std::span<const int64_t> bdims,
                        const BatchAxis& axis, const Params& p) {
  Shape shape = p.get_ints("shape");
  shape.insert(shape.begin(), axis.size);
  Axes dims{0};
  for (auto d : p.get_ints("broadcast_dimensions")) dims.push_back(d + 1);
  return {{broadcast_in_dim(move_batch_dim(ins[0], bdims[0], 0, axis.size), shape, dims)}, {0}};
}

// ---- SPMD: operand dimensions of the target size share the result dimension's factor;
// expanded size-1 dimensions and new dimensions are the result's alone (each device
// broadcasts to its piece) ----

ir::ShardingRule broadcast_sharding_rule(std::span<const Aval> ins, std::span<const Aval> outs, const Params& p) {
  const Axes& dims = p.get_ints("broadcast_dimensions");
  ir::ShardingRule r;
  std::vector<int> out;
  for (size_t d = 0; d < outs[0].shape.size(); ++d) out.push_back(add_factor(r));
  std::vector<int> in;
  for (size_t i = 0; i < dims.size(); ++i) {
    const size_t d = size_t(dims[i]);
    in.push_back(ins[0].shape[i] == outs[0].shape[d] ? out[d] : ir::kWhole);
  }
  r.operands = {in};
  r.results = {out};
  return r;
}

Params broadcast_localize(const Params& p, std::span<const Aval>, std::span<const Aval> local_outs) {
  Params q = p;
  q.set("shape", local_outs[0].shape);
  return q;
}

// ---- code generation: operand dimension k reads output dimension dims[k] (index 0 of a
// dimension expanded from size 1) ----

std::vector<ir::IndexCase> broadcast_index_map(const ir::IndexMap& m, std::span<const Aval> ins, const Aval&,
                                               const Params& p) {
  const Axes& dims = p.get_ints("broadcast_dimensions");
  ir::IndexMap im;
  for (size_t k = 0; k < dims.size(); ++k) im.push_back(ins[0].shape[k] == 1 ? ir::Affine{} : m[size_t(dims[k])]);
  return {{.at = im}};
}

const ir::Primitive& broadcast_in_dim_p = ir::register_primitive({
    .name = "broadcast_in_dim",
    .arity = {1, 1},
    .abstract_eval = broadcast_aval,
    .cpu_kernel = broadcast_kernel,
    .fusion = ir::FusionKind::kBroadcast,
    .index_map = broadcast_index_map,
    .point_cost = 0,
    .jvp = jvp_linear,
    .transpose = broadcast_transpose,
    .batch = broadcast_batch,
    .sharding_rule = broadcast_sharding_rule,
    .localize = broadcast_localize,
});

}  // namespace
}  // namespace tessel::ops

namespace tessel {

Array broadcast_in_dim(const Array& x, const Shape& shape, const Axes& dims) {
  if (x.shape() == shape) return x;
  return ops::bind1(ops::broadcast_in_dim_p, {x},
                    ops::Params{{"shape", shape}, {"broadcast_dimensions", dims}});
}

Array broadcast_to(const Array& x, const Shape& shape) {
  const Shape& s = x.shape();
  if (s.size() > shape.size())
    throw ShapeError("broadcast_to: cannot broadcast shape " + shape_to_string(s) + " to the lower-rank shape " +
                     shape_to_string(shape));
  Axes dims;
  size_t off = shape.size() - s.size();
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != 1 && s[i] != shape[off + i])
      throw ShapeError("broadcast_to: cannot broadcast shape " + shape_to_string(s) + " to " + shape_to_string(shape) +
                       "; sizes must match or be 1");
    dims.push_back(int64_t(off + i));
  }
  return broadcast_in_dim(x, shape, dims);
}

Shape broadcast_shapes(const std::vector<Shape>& shapes) { return ops::broadcast_shapes("broadcast_shapes", shapes); }

}  // namespace tessel
