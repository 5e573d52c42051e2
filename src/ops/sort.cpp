// The `sort` primitive (lax.sort_p: operands of one shape sorted together along
// `dimension`, lexicographically by the first `num_keys`; params dimension, is_stable,
// num_keys) and `top_k` (lax.top_k_p: the k largest elements along `axis` and their int32
// positions; params k, axis). Both order rows with the kernels of ops/sort_kernel.h.
//
// Orders, as JAX's: sort compares floats with -0.0 equal to 0.0 and every NaN after +inf
// (equal to each other), complex numbers by (real, imag); top_k uses the IEEE total order
// (-NaN first, then -inf, ..., -0.0 < 0.0, ..., +inf, NaN) and keeps lower positions first
// among ties.
#include "ops/sort.h"

#include "ops/rule_util.h"
#include "ops/sort_kernel.h"
#include "tessel/sort.h"

namespace tessel::ops {

namespace {

Params sort_params(int64_t dimension, bool is_stable, int64_t num_keys) {
  return Params{{"dimension", dimension}, {"is_stable", is_stable}, {"num_keys", num_keys}};
}

/// The rows of `shape` along `axis`.
sortk::Rows rows_along(const Shape& shape, int64_t axis) {
  sortk::Rows r;
  for (int64_t d = 0; d < int64_t(shape.size()); ++d) {
    if (d < axis) r.outer *= shape[size_t(d)];
    else if (d > axis) r.inner *= shape[size_t(d)];
  }
  r.n = shape[size_t(axis)];
  return r;
}

/// The smallest index dtype that holds positions along a dimension of `n` elements.
DType index_dtype(int64_t n) { return n <= int64_t(INT32_MAX) ? DType::int32 : DType::int64; }

// ---- sort ----

std::vector<Aval> sort_aval(std::span<const Aval> ins, const Params& p) {
  const int64_t dim = p.get_int("dimension"), num_keys = p.get_int("num_keys");
  const Shape& shape = ins[0].shape;
  for (size_t i = 1; i < ins.size(); ++i)
    if (ins[i].shape != shape)
      throw ShapeError("sort: all operands must have one shape, got " + avals_to_string(ins) +
                       "; broadcast them to a common shape first");
  if (shape.empty())
    throw ShapeError("sort: operands must have at least one dimension, got " + avals_to_string(ins) +
                     "; reshape a scalar to (1,)");
  if (dim < 0 || dim >= int64_t(shape.size()))
    throw IndexError("sort: dimension " + std::to_string(dim) + " is out of range for operands of shape " +
                     shape_to_string(shape));
  if (num_keys < 1 || num_keys > int64_t(ins.size()))
    throw ValueError("sort: num_keys must be between 1 and the number of operands (" + std::to_string(ins.size()) +
                     "), got " + std::to_string(num_keys));
  return {ins.begin(), ins.end()};
}

void sort_kernel(const KernelCall& c) {
  const int64_t dim = c.params.get_int("dimension"), num_keys = c.params.get_int("num_keys");
  const sortk::Rows rows = rows_along(c.in_avals[0].shape, dim);
  std::vector<sortk::KeyColumn> keys;
  for (int64_t i = 0; i < num_keys; ++i) {
    const DType d = c.in_avals[size_t(i)].dtype;
    keys.push_back({c.ins[size_t(i)], d, false});
    if (is_complex(d)) keys.push_back({c.ins[size_t(i)], d, true});
  }
  sortk::for_each_row(rows, [&](int64_t r, bool parallel, sortk::Scratch& s) {
    sortk::sort_row(keys, rows, r, sortk::FloatOrder::kSort, false, parallel, s);
    // Moving elements by the order found is a gather; two common operands avoid it: a key
    // that its sorted keys give back, and positions 0..n-1 (argsort), which become the order.
    for (size_t i = 0; i < c.ins.size(); ++i) {
      const DType d = c.in_avals[i].dtype;
      if (i == 0 && sortk::write_sorted_keys(keys[0], c.outs[0], rows, r, sortk::FloatOrder::kSort, false, s, parallel))
        continue;
      if (sortk::write_if_positions(c.ins[i], d, c.outs[i], rows, r, s, parallel)) continue;
      sortk::permute_row(c.ins[i], c.outs[i], itemsize(d), rows, rows, r, s, rows.n, parallel);
    }
  });
}

// As JAX's rule: sort the operands together with the positions along `dimension`, then move
// each tangent by the permutation found.
std::vector<Array> sort_jvp(const ir::Primitive& self, std::span<const Array> primals, std::span<const Array> tangents,
                            const Params& p) {
  const int64_t dim = p.get_int("dimension");
  const Shape& shape = primals[0].shape();
  std::vector<Array> ins(primals.begin(), primals.end());
  ins.push_back(iota(index_dtype(shape[size_t(dim)]), shape, dim));
  std::vector<Array> outs = bind(self, ins, p);
  const Array perm = outs.back();
  outs.pop_back();
  const size_t n = outs.size();
  for (size_t i = 0; i < n; ++i)
    outs.push_back(is_zero(tangents[i]) ? Array()
                                        : take_along_axis(tangents[i], perm, dim, {.mode = "promise_in_bounds"}));
  return outs;
}

// Batch dimensions move to the front (unbatched operands are broadcast); the sorted
// dimension shifts past it.
Batched sort_batch(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                   const BatchAxis& axis, const Params& p) {
  std::vector<Array> moved;
  for (size_t i = 0; i < ins.size(); ++i) moved.push_back(move_batch_dim(ins[i], dims[i], 0, axis.size));
  Params q = p;
  q.set("dimension", p.get_int("dimension") + 1);
  return {bind(self, moved, q), std::vector<int64_t>(ins.size(), 0)};
}

/// SPMD: the sorted dimension stays whole (gathered where split); the others pass through.
ir::ShardingRule whole_along(std::span<const Aval> ins, std::span<const Aval> outs, int64_t axis) {
  std::vector<DimRule> dims(ins[0].shape.size(), DimRule::kPass);
  dims[size_t(axis)] = DimRule::kWhole;
  return aligned_sharding_rule(ins, outs, dims);
}

ir::ShardingRule sort_sharding_rule(std::span<const Aval> ins, std::span<const Aval> outs, const Params& p) {
  return whole_along(ins, outs, p.get_int("dimension"));
}

// ---- top_k ----

std::vector<Aval> top_k_aval(std::span<const Aval> ins, const Params& p) {
  const Aval& x = ins[0];
  const int64_t k = p.get_int("k"), axis = p.get_int("axis");
  if (is_complex(x.dtype))
    throw DTypeError("top_k: complex operands have no order, got " + x.to_string() +
                     "; take real() or abs() first, or sort with ts::lax_sort");
  if (x.shape.empty())
    throw ShapeError("top_k: the operand must have at least one dimension, got " + x.to_string());
  if (axis < 0 || axis >= x.ndim())
    throw IndexError("top_k: axis " + std::to_string(axis) + " is out of range for an operand of shape " +
                     shape_to_string(x.shape));
  if (k < 0 || k > x.shape[size_t(axis)])
    throw ValueError("top_k: k must be between 0 and the size " + std::to_string(x.shape[size_t(axis)]) +
                     " of axis " + std::to_string(axis) + " of the operand " + x.to_string() + ", got k = " +
                     std::to_string(k));
  if (x.shape[size_t(axis)] > int64_t(INT32_MAX) + 1)
    throw ValueError("top_k: returns int32 positions, which overflow along an axis of " +
                     std::to_string(x.shape[size_t(axis)]) + " elements");
  Shape s = x.shape;
  s[size_t(axis)] = k;
  return {Aval(s, x.dtype, x.weak_type), Aval(s, DType::int32)};
}

void top_k_kernel(const KernelCall& c) {
  const int64_t k = c.params.get_int("k"), axis = c.params.get_int("axis");
  const sortk::Rows rows = rows_along(c.in_avals[0].shape, axis), out_rows = rows_along(c.out_avals[0].shape, axis);
  if (k == 0) return;
  const sortk::KeyColumn key{c.ins[0], c.in_avals[0].dtype, false};
  const size_t item = itemsize(c.in_avals[0].dtype);
  int32_t* positions = c.out<int32_t>(1);
  sortk::for_each_row(rows, [&](int64_t r, bool parallel, sortk::Scratch& s) {
    sortk::sort_row({&key, 1}, rows, r, sortk::FloatOrder::kTotal, true, parallel, s);
    sortk::permute_row(c.ins[0], c.outs[0], item, rows, out_rows, r, s, k, parallel);
    const int64_t base = out_rows.base(r);
    for (int64_t i = 0; i < k; ++i) positions[base + i * out_rows.inner] = int32_t(s.position(i));
  });
}

// The values' tangent is the operand's tangent at the positions found (as JAX's rule).
std::vector<Array> top_k_jvp(const ir::Primitive&, std::span<const Array>, std::span<const Array> tangents,
                             std::span<const Array> outs, const Params& p) {
  return {take_along_axis(tangents[0], outs[1], p.get_int("axis"), {.mode = "promise_in_bounds"}), Array()};
}

Batched top_k_batch(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                    const BatchAxis&, const Params& p) {
  const int64_t bd = dims[0], axis = p.get_int("axis");
  Params q = p;
  q.set("axis", axis + (bd <= axis ? 1 : 0));
  return {bind(self, ins, q), {bd, bd}};
}

ir::ShardingRule top_k_sharding_rule(std::span<const Aval> ins, std::span<const Aval> outs, const Params& p) {
  return whole_along(ins, outs, p.get_int("axis"));
}

const ir::Primitive& top_k_p = ir::register_primitive({.name = "top_k",
                                                       .arity = {1, 1},
                                                       .abstract_eval = top_k_aval,
                                                       .cpu_kernel = top_k_kernel,
                                                       .jvp = top_k_jvp,
                                                       .batch = top_k_batch,
                                                       .sharding_rule = top_k_sharding_rule});

void check_operand(const char* op, const Array& x) {
  if (!x.valid())
    throw ValueError(std::string(op) + ": an argument is an empty Array (default-constructed)");
}

}  // namespace

const ir::Primitive& sort_p = ir::register_primitive({.name = "sort",
                                                      .arity = {1, -1},
                                                      .abstract_eval = sort_aval,
                                                      .cpu_kernel = sort_kernel,
                                                      .jvp_with_primals = sort_jvp,
                                                      .batch = sort_batch,
                                                      .sharding_rule = sort_sharding_rule});

std::vector<Array> bind_sort(const std::vector<Array>& operands, int64_t dimension, bool is_stable, int64_t num_keys) {
  return bind(sort_p, operands, sort_params(dimension, is_stable, num_keys));
}

std::pair<Array, Array> bind_top_k(const Array& x, int64_t k, int64_t axis) {
  std::vector<Array> r = bind(top_k_p, std::vector<Array>{x}, Params{{"k", k}, {"axis", axis}});
  return {r[0], r[1]};
}

}  // namespace tessel::ops

namespace tessel {

std::vector<Array> lax_sort(const std::vector<Array>& operands, int64_t dimension, bool is_stable, int64_t num_keys) {
  if (operands.empty()) throw ValueError("lax_sort: needs at least one operand");
  for (const Array& x : operands) ops::check_operand("lax_sort", x);
  if (operands[0].ndim() == 0)
    throw ShapeError("lax_sort: operands must have at least one dimension, got " +
                     shape_to_string(operands[0].shape()) + "; reshape a scalar to (1,)");
  const int64_t dim = ops::canonicalize_axis("lax_sort", dimension, operands[0].ndim());
  return ops::bind_sort(operands, dim, is_stable, num_keys);
}

std::pair<Array, Array> sort_key_val(const Array& keys, const Array& values, int64_t dimension, bool is_stable) {
  std::vector<Array> r = lax_sort({keys, values}, dimension, is_stable, 1);
  return {r[0], r[1]};
}

std::pair<Array, Array> top_k(const Array& operand, int64_t k, int64_t axis) {
  ops::check_operand("top_k", operand);
  if (operand.ndim() == 0)
    throw ShapeError("top_k: the operand must have at least one dimension, got shape ()");
  return ops::bind_top_k(operand, k, ops::canonicalize_axis("top_k", axis, operand.ndim()));
}

}  // namespace tessel
