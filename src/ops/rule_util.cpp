#include "ops/rule_util.h"

#include "ops/elementwise.h"

namespace tessel::ops {

Array add_tangents(const Array& a, const Array& b) {
  if (is_zero(a)) return b;
  if (is_zero(b)) return a;
  return bind1(add_p.prim, {a, b});
}

Array instantiate_zeros(const Array& t, const Aval& aval) {
  if (!is_zero(t)) return t;
  return zeros(aval.shape, aval.dtype);
}

Array scale_tangent(const Array& t, const Array& factor) {
  if (is_zero(t)) return t;
  return bind1(mul_p.prim, {t, convert(factor, t.dtype())});
}

Array sum_to_shape(const Array& ct, const Shape& shape) {
  if (is_zero(ct) || ct.shape() == shape) return ct;
  Array s = sum(ct);
  return shape.empty() ? s : broadcast_to(s, shape);
}

Array move_batch_dim(const Array& x, int64_t from, int64_t to, int64_t size) {
  if (from == kNotBatched) {
    Shape shape = x.shape();
    shape.insert(shape.begin() + to, size);
    Axes dims;
    for (int64_t i = 0; i < x.ndim(); ++i) dims.push_back(i < to ? i : i + 1);
    return broadcast_in_dim(x, shape, dims);
  }
  return from == to ? x : moveaxis(x, from, to);
}

std::vector<Array> jvp_linear(const ir::Primitive& self, std::span<const Array> primals,
                              std::span<const Array> tangents, std::span<const Array>, const Params& params) {
  std::vector<Array> ts;
  for (size_t i = 0; i < primals.size(); ++i) ts.push_back(instantiate_zeros(tangents[i], primals[i].aval()));
  return detail::bind(self, ts, params);
}

Batched batch_elementwise(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                          const BatchAxis& axis, const Params& params) {
  // The per-example shape: the largest unbatched rank among operands (others are rank 0).
  Shape example;
  for (size_t i = 0; i < ins.size(); ++i) {
    Shape s = ins[i].shape();
    if (dims[i] != kNotBatched) s.erase(s.begin() + dims[i]);
    if (s.size() > example.size()) example = s;
  }
  Shape full = example;
  full.insert(full.begin(), axis.size);
  std::vector<Array> args;
  for (size_t i = 0; i < ins.size(); ++i) {
    const Array& x = ins[i];
    if (dims[i] == kNotBatched) {
      args.push_back(x.ndim() == 0 ? x : move_batch_dim(x, kNotBatched, 0, axis.size));
      continue;
    }
    Array y = move_batch_dim(x, dims[i], 0, axis.size);
    if (y.ndim() == 1 && !example.empty()) y = broadcast_in_dim(y, full, {0});
    args.push_back(y);
  }
  std::vector<Array> outs = detail::bind(self, args, params);
  std::vector<int64_t> out_dims(outs.size(), 0);
  return {std::move(outs), std::move(out_dims)};
}

}  // namespace tessel::ops

namespace tessel::ops {

std::vector<Array> jvp_linear_in_first(size_t n_linear, const ir::Primitive& self, std::span<const Array> primals,
                                       std::span<const Array> tangents, const Params& params) {
  bool any = false;
  for (size_t i = 0; i < n_linear; ++i) any |= !is_zero(tangents[i]);
  if (!any) return {Array()};
  std::vector<Array> ins;
  for (size_t i = 0; i < primals.size(); ++i)
    ins.push_back(i < n_linear ? instantiate_zeros(tangents[i], primals[i].aval()) : primals[i]);
  return detail::bind(self, ins, params);
}

Array fit_tangent(const Array& t, const Aval& aval) {
  if (is_zero(t)) return t;
  Array r = t.shape() == aval.shape ? t : broadcast_to(t, aval.shape);
  return r.dtype() == aval.dtype ? r : convert(r, aval.dtype);
}

Array fit_cotangent(const Array& ct, const Aval& aval) {
  if (is_zero(ct)) return ct;
  Array r = sum_to_shape(ct, aval.shape);
  return r.dtype() == aval.dtype ? r : convert(r, aval.dtype);
}

Batched batch_vectorized(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                         const BatchAxis&, const Params& params) {
  std::vector<Array> outs = detail::bind(self, ins, params);
  std::vector<int64_t> out_dims(outs.size(), dims[0]);
  return {std::move(outs), std::move(out_dims)};
}

std::vector<Array> jvp_zero(const ir::Primitive&, std::span<const Array>, std::span<const Array>,
                            std::span<const Array> outs, const Params&) {
  return std::vector<Array>(outs.size());
}

int add_factor(ir::ShardingRule& r, ir::Combine c) {
  r.factors.push_back(c);
  return int(r.factors.size()) - 1;
}

int add_permutation_factor(ir::ShardingRule& r) {
  const int f = add_factor(r);
  r.permutes.resize(size_t(f) + 1, false);
  r.permutes[size_t(f)] = true;
  return f;
}

ir::ShardingRule aligned_sharding_rule(std::span<const Aval> ins, std::span<const Aval> outs,
                                       const std::vector<DimRule>& kinds) {
  ir::ShardingRule r;
  const size_t rank = outs[0].shape.size();
  std::vector<int> dims(rank, ir::kWhole);
  for (size_t d = 0; d < rank; ++d) {
    if (kinds[d] == DimRule::kPass) dims[d] = add_factor(r);
    if (kinds[d] == DimRule::kPermute) dims[d] = add_permutation_factor(r);
  }
  for (const Aval& a : ins) r.operands.push_back(a.shape.empty() ? std::vector<int>{} : dims);
  for (size_t i = 0; i < outs.size(); ++i) r.results.push_back(dims);
  return r;
}

}  // namespace tessel::ops
