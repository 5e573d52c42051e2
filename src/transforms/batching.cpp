#include "transforms/batching.h"

#include "ops/rule_util.h"
#include "tessel/error.h"

namespace tessel::detail {
namespace {
Aval batched_aval(const Aval& a, int64_t dim, int64_t size) {
  Aval r = a;
  if (dim != ir::kNotBatched) r.shape.erase(r.shape.begin() + dim);
  (void)size;
  return r;
}
}  // namespace

BatchTracer::BatchTracer(Array v, int64_t d, Trace* trace)
    : Tracer(batched_aval(v.aval(), d, 0), trace, trace->id()), value(std::move(v)), dim(d) {}

Array BatchTrace::pack(const Array& value, int64_t dim) {
  if (dim == ir::kNotBatched) return value;
  return Array(std::make_shared<BatchTracer>(value, dim, this));
}

std::pair<Array, int64_t> BatchTrace::unpack(const Array& x) const {
  if (const Tracer* t = as_tracer(x); t && t->trace_id == id()) {
    auto* b = static_cast<const BatchTracer*>(t);
    return {b->value, b->dim};
  }
  return {x, ir::kNotBatched};
}

std::vector<Array> BatchTrace::process_primitive(const ir::Primitive& p, std::span<const Array> ins,
                                                 const ir::Params& params) {
  std::vector<Array> vals;
  std::vector<int64_t> dims;
  bool any = false;
  for (const Array& x : ins) {
    auto [v, d] = unpack(x);
    any |= d != ir::kNotBatched;
    vals.push_back(std::move(v));
    dims.push_back(d);
  }
  if (!any) return bind(p, vals, params);
  if (!p.batch)
    throw NotImplementedError("vmap: the batching rule of primitive '" + p.name +
                              "' is not implemented, so vmap cannot pass through it; use a loop (fori_loop/scan) "
                              "over the batch instead");
  ir::Batched r = p.batch(p, vals, dims, axis_, params);
  std::vector<Array> outs;
  for (size_t i = 0; i < r.outs.size(); ++i) outs.push_back(pack(r.outs[i], r.dims[i]));
  return outs;
}

std::vector<Array> vmap_eval(const std::function<std::vector<Array>(std::span<const Array>)>& fn,
                             std::span<const Array> args, std::span<const int64_t> in_dims,
                             std::span<const std::optional<int64_t>> out_dims, const ir::BatchAxis& axis,
                             const std::string& op) {
  BatchTrace trace(axis);
  std::vector<Array> outs;
  {
    Trace::Scope scope(&trace);
    std::vector<Array> ins;
    for (size_t i = 0; i < args.size(); ++i) ins.push_back(trace.pack(args[i], in_dims[i]));
    outs = fn(ins);
  }
  if (out_dims.size() > 1 && out_dims.size() != outs.size())
    throw ValueError(op + ": out_axes has " + std::to_string(out_dims.size()) + " entries but the function returns " +
                     std::to_string(outs.size()) + " arrays; give one per output array, or one for all");
  std::vector<Array> result;
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!outs[i].valid()) throw ValueError(op + ": the function returned an empty Array");
    auto [v, d] = trace.unpack(outs[i]);
    const std::optional<int64_t> want = out_dims.empty() ? std::optional<int64_t>(0) : out_dims[out_dims.size() == 1 ? 0 : i];
    if (!want) {
      if (d != ir::kNotBatched)
        throw ValueError(op + ": output " + std::to_string(i) + " has out_axes none but depends on the mapped " +
                         "inputs; give it an out axis (e.g. 0)");
      result.push_back(v);
      continue;
    }
    int64_t rank = v.ndim() + (d == ir::kNotBatched ? 1 : 0);
    int64_t to = *want < 0 ? *want + rank : *want;
    if (to < 0 || to >= rank)
      throw IndexError(op + ": out_axes " + std::to_string(*want) + " is out of range for output " +
                       std::to_string(i) + " of rank " + std::to_string(rank - 1) + " (plus the mapped axis)");
    result.push_back(ops::move_batch_dim(v, d, to, axis.size));
  }
  return result;
}

std::vector<Array> batch_at_front(const std::function<std::vector<Array>(std::span<const Array>)>& fn,
                                  std::span<const Array> args, const ir::BatchAxis& axis) {
  std::vector<int64_t> front(args.size(), 0);
  if (!axis.trace || !trace_is_live(axis.trace_id))
    return vmap_eval(fn, args, front, std::vector<std::optional<int64_t>>{0}, axis, "custom rule under vmap");
  auto* trace = static_cast<BatchTrace*>(axis.trace);
  std::vector<Array> ins, result;
  for (const Array& a : args) ins.push_back(trace->pack(a, 0));
  for (const Array& o : fn(ins)) {
    auto [v, d] = trace->unpack(o);
    result.push_back(ops::move_batch_dim(v, d, 0, axis.size));
  }
  return result;
}

BatchedProgram batch_program(const ir::Program& p, const std::vector<int64_t>& in_dims, const ir::BatchAxis& axis,
                             const std::vector<bool>& force, bool force_all) {
  std::vector<Aval> avals;
  for (size_t i = 0; i < p.invars.size(); ++i) {
    Aval a = p.invars[i]->aval;
    if (in_dims[i] != ir::kNotBatched) a.shape.insert(a.shape.begin() + in_dims[i], axis.size);
    avals.push_back(a);
  }
  BatchedProgram r;
  auto fn = [&](std::span<const Array> args) {
    BatchTrace trace(axis);
    std::vector<Array> outs, result;
    {
      Trace::Scope scope(&trace);
      std::vector<Array> ins;
      for (size_t i = 0; i < args.size(); ++i) ins.push_back(trace.pack(args[i], in_dims[i]));
      outs = ir::eval_program(p, ins);
    }
    for (size_t i = 0; i < outs.size(); ++i) {
      auto [v, d] = trace.unpack(outs[i]);
      if (d != ir::kNotBatched || force_all || (i < force.size() && force[i])) {
        result.push_back(ops::move_batch_dim(v, d, 0, axis.size));
        r.out_dims.push_back(0);
      } else {
        result.push_back(v);
        r.out_dims.push_back(ir::kNotBatched);
      }
    }
    return result;
  };
  r.program = std::make_shared<const ir::Program>(trace_to_program(fn, avals, "batched_" + p.name));
  return r;
}

}  // namespace tessel::detail
