#include "transforms/jvp.h"

#include <algorithm>

#include "tessel/error.h"
#include "tessel/ops.h"

namespace tessel::detail {

bool has_tangent_space(DType d) { return is_inexact(d); }

Array JvpTrace::pack(const Array& primal, const Array& tangent) {
  if (!tangent.valid()) return primal;
  return Array(std::make_shared<JvpTracer>(primal, tangent, this));
}

std::pair<Array, Array> JvpTrace::unpack(const Array& x) const {
  if (const Tracer* t = as_tracer(x); t && t->trace_id == id()) {
    auto* j = static_cast<const JvpTracer*>(t);
    return {j->primal, j->tangent};
  }
  return {x, Array()};
}

std::vector<Array> JvpTrace::process_primitive(const ir::Primitive& p, std::span<const Array> ins,
                                               const ir::Params& params) {
  std::vector<Array> primals, tangents;
  bool any = false;
  for (const Array& x : ins) {
    auto [pr, t] = unpack(x);
    any |= t.valid();
    primals.push_back(std::move(pr));
    tangents.push_back(std::move(t));
  }
  if (!any) return bind(p, primals, params);
  std::vector<Array> outs, touts;
  if (p.jvp_with_primals) {
    std::vector<Array> both = p.jvp_with_primals(p, primals, tangents, params);
    size_t n = both.size() / 2;
    outs.assign(both.begin(), both.begin() + long(n));
    touts.assign(both.begin() + long(n), both.end());
  } else if (p.jvp) {
    outs = bind(p, primals, params);
    touts = p.jvp(p, primals, tangents, outs, params);
  } else if (outs = bind(p, primals, params); std::none_of(outs.begin(), outs.end(), [](const Array& o) {
               return has_tangent_space(o.dtype());
             })) {
    touts.resize(outs.size());  // integer/bool outputs carry no tangent: no rule needed
  } else {
    throw NotImplementedError("jvp: the differentiation rule (jvp) of primitive '" + p.name +
                              "' is not implemented, so grad/jvp cannot pass through it; wrap the computation "
                              "in stop_gradient or give it a custom_jvp");
  }
  if (touts.size() != outs.size())
    throw Error("internal: the jvp rule of '" + p.name + "' returned " + std::to_string(touts.size()) +
                " tangents for " + std::to_string(outs.size()) + " outputs");
  std::vector<Array> result;
  for (size_t i = 0; i < outs.size(); ++i) {
    Array t = has_tangent_space(outs[i].dtype()) ? touts[i] : Array();
    if (t.valid() && (t.shape() != outs[i].shape() || t.dtype() != outs[i].dtype()))
      throw Error("internal: the jvp rule of '" + p.name + "' gave a tangent " + t.aval().to_string() +
                  " for an output " + outs[i].aval().to_string());
    result.push_back(pack(outs[i], t));
  }
  return result;
}

std::pair<std::vector<Array>, std::vector<Array>> jvp_eval(
    const std::function<std::vector<Array>(std::span<const Array>)>& fn, std::span<const Array> primals,
    std::span<const Array> tangents) {
  JvpTrace trace;
  Trace::Scope scope(&trace);
  std::vector<Array> ins;
  for (size_t i = 0; i < primals.size(); ++i)
    ins.push_back(has_tangent_space(primals[i].dtype()) ? trace.pack(primals[i], tangents[i]) : primals[i]);
  std::vector<Array> outs = fn(ins), po, to;
  for (const Array& o : outs) {
    if (!o.valid()) throw ValueError("jvp: the function returned an empty Array");
    auto [p, t] = trace.unpack(o);
    po.push_back(std::move(p));
    to.push_back(std::move(t));
  }
  return {po, to};
}

JvpProgram jvp_program(const ir::Program& p, const std::vector<bool>& nonzero_in,
                       const std::vector<bool>& instantiate) {
  std::vector<Aval> avals = p.in_avals();
  for (size_t i = 0; i < nonzero_in.size(); ++i)
    if (nonzero_in[i]) avals.push_back(p.invars[i]->aval);
  JvpProgram r;
  auto fn = [&](std::span<const Array> args) {
    size_t n = p.invars.size(), k = n;
    std::vector<Array> tangents(n);
    for (size_t i = 0; i < n; ++i)
      if (nonzero_in[i]) tangents[i] = args[k++];
    auto [outs, touts] = jvp_eval([&](std::span<const Array> xs) { return ir::eval_program(p, xs); },
                                  args.subspan(0, n), tangents);
    for (size_t i = 0; i < touts.size(); ++i) {
      Array& t = touts[i];
      if (!t.valid() && i < instantiate.size() && instantiate[i] && has_tangent_space(outs[i].dtype()))
        t = zeros(outs[i].shape(), outs[i].dtype());
      r.out_nonzero.push_back(t.valid());
      if (t.valid()) outs.push_back(t);
    }
    return outs;
  };
  r.program = std::make_shared<const ir::Program>(trace_to_program(fn, avals, "jvp_" + p.name));
  return r;
}

}  // namespace tessel::detail
