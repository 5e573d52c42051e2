#include "transforms/transpose.h"

#include <unordered_map>
#include <unordered_set>

#include "ops/rule_util.h"
#include "tessel/error.h"

namespace tessel::detail {

std::vector<Array> backward_pass(const ir::Program& p, std::span<const Array> args, std::span<const Array> cts) {
  std::unordered_map<const ir::VarNode*, Array> value, ct;
  std::unordered_set<const ir::VarNode*> linear;
  for (size_t i = 0; i < p.constvars.size(); ++i) value[p.constvars[i].get()] = p.consts[i];
  for (size_t i = 0; i < p.invars.size(); ++i) {
    if (args[i].valid()) value[p.invars[i].get()] = args[i];
    else linear.insert(p.invars[i].get());
  }
  auto read = [&](const ir::Atom& a) -> Array {
    if (a.is_literal()) return scalar_array(a.literal(), a.aval().weak_type);
    auto it = value.find(a.var().get());
    return it == value.end() ? Array() : it->second;
  };
  auto is_linear = [&](const ir::Atom& a) { return !a.is_literal() && linear.count(a.var().get()); };
  auto accumulate = [&](const ir::Var& v, Array c) {
    if (!c.valid()) return;
    if (c.shape() != v->aval.shape)
      throw Error("internal: transpose produced a cotangent " + c.aval().to_string() + " for a value " +
                  v->aval.to_string());
    if (c.dtype() != v->aval.dtype) c = astype(c, v->aval.dtype);
    Array& slot = ct[v.get()];
    slot = ops::add_tangents(slot, c);
  };
  // Forward: evaluate what does not depend on the linear inputs (residual computations).
  std::vector<bool> eqn_linear(p.eqns.size());
  for (size_t i = 0; i < p.eqns.size(); ++i) {
    const ir::Equation& e = p.eqns[i];
    bool lin = false;
    for (auto& a : e.inputs) lin |= is_linear(a);
    eqn_linear[i] = lin;
    if (lin) {
      for (auto& o : e.outputs) linear.insert(o.get());
      continue;
    }
    std::vector<Array> ins;
    for (auto& a : e.inputs) ins.push_back(read(a));
    auto outs = bind(*e.prim, ins, e.params);
    for (size_t k = 0; k < outs.size(); ++k) value[e.outputs[k].get()] = outs[k];
  }
  for (size_t i = 0; i < p.outvars.size(); ++i)
    if (is_linear(p.outvars[i])) accumulate(p.outvars[i].var(), cts[i]);
  for (size_t i = p.eqns.size(); i-- > 0;) {
    if (!eqn_linear[i]) continue;
    const ir::Equation& e = p.eqns[i];
    std::vector<Array> out_cts;
    bool any = false;
    for (auto& o : e.outputs) {
      auto it = ct.find(o.get());
      out_cts.push_back(it == ct.end() ? Array() : it->second);
      any |= out_cts.back().valid();
      if (it != ct.end()) ct.erase(it);
    }
    if (!any) {
      // Ordered effects (ts::comm) run alike on every process: other processes may have
      // nonzero cotangents and wait for this one's part of the transposed communication,
      // so such an equation is transposed with zero cotangents rather than skipped.
      if (!(e.prim->effects & ir::kOrdered) || !e.prim->transpose) continue;
      for (size_t k = 0; k < out_cts.size(); ++k)
        out_cts[k] = ops::instantiate_zeros(out_cts[k], e.outputs[k]->aval);
    }
    if (!e.prim->transpose)
      throw NotImplementedError("transpose: the reverse-mode rule (transpose) of primitive '" + e.prim->name +
                                "' is not implemented, so grad/vjp cannot pass through it; use jvp (forward mode) "
                                "or give the function a custom_vjp");
    std::vector<Array> eargs;
    std::vector<Aval> avals;
    for (auto& a : e.inputs) {
      eargs.push_back(is_linear(a) ? Array() : read(a));
      avals.push_back(a.aval());
    }
    std::vector<Array> in_cts = e.prim->transpose(*e.prim, out_cts, eargs, avals, e.params);
    for (size_t k = 0; k < e.inputs.size() && k < in_cts.size(); ++k)
      if (is_linear(e.inputs[k])) accumulate(e.inputs[k].var(), in_cts[k]);
  }
  std::vector<Array> result;
  for (auto& v : p.invars) {
    auto it = ct.find(v.get());
    result.push_back(linear.count(v.get()) && it != ct.end() ? it->second : Array());
  }
  return result;
}

ir::ProgramRef transpose_program(const ir::Program& p, const std::vector<bool>& linear_in) {
  std::vector<Aval> avals;
  for (size_t i = 0; i < p.invars.size(); ++i)
    if (!linear_in[i]) avals.push_back(p.invars[i]->aval);
  for (auto& a : p.outvars) avals.push_back(a.aval());
  auto fn = [&](std::span<const Array> xs) {
    std::vector<Array> args(p.invars.size());
    size_t k = 0;
    for (size_t i = 0; i < p.invars.size(); ++i)
      if (!linear_in[i]) args[i] = xs[k++];
    std::vector<Array> cts(xs.begin() + long(k), xs.end());
    std::vector<Array> in_cts = backward_pass(p, args, cts), outs;
    for (size_t i = 0; i < p.invars.size(); ++i)
      if (linear_in[i]) outs.push_back(ops::instantiate_zeros(in_cts[i], p.invars[i]->aval));
    return outs;
  };
  return std::make_shared<const ir::Program>(trace_to_program(fn, avals, "transpose_" + p.name));
}

}  // namespace tessel::detail
