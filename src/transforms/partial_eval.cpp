#include "transforms/partial_eval.h"

#include <set>
#include <unordered_map>

#include "transforms/jvp.h"
#include "tessel/ops.h"

namespace tessel::detail {

std::vector<Array> PartialEvalTrace::process_primitive(const ir::Primitive& p, std::span<const Array> ins,
                                                       const ir::Params& params) {
  if (p.partial_eval) return p.partial_eval(p, *this, ins, params);
  return record(p, ins, params);
}

namespace {

// Remat: residuals produced by known equations that `save` rejects are recomputed by the
// unknown program from the values they depend on, which become the residuals instead.
void rematerialize(SplitProgram& s, bool (*save)(const ir::Equation&)) {
  ir::Program k = *s.known, u = *s.unknown;
  const size_t n_out = k.outvars.size() - s.num_residuals;
  std::unordered_map<const ir::VarNode*, size_t> producer;
  for (size_t i = 0; i < k.eqns.size(); ++i)
    for (auto& o : k.eqns[i].outputs) producer[o.get()] = i;
  std::set<size_t> recompute;
  std::vector<ir::Var> residuals;
  std::set<const ir::VarNode*> is_residual;
  std::function<void(const ir::Var&)> need = [&](const ir::Var& v) {
    auto it = producer.find(v.get());
    if (it != producer.end() && !save(k.eqns[it->second])) {
      if (!recompute.insert(it->second).second) return;
      for (auto& a : k.eqns[it->second].inputs)
        if (!a.is_literal()) need(a.var());
      return;
    }
    if (is_residual.insert(v.get()).second) residuals.push_back(v);
  };
  std::unordered_map<const ir::VarNode*, ir::Atom> subst;
  for (size_t j = 0; j < s.num_residuals; ++j) {
    const ir::Atom& a = k.outvars[n_out + j];
    subst.emplace(u.invars[j].get(), a);
    if (!a.is_literal()) need(a.var());
  }
  // Effects that belong to the function's evaluation (a host tap) happen again where it is
  // recomputed, whatever the policy saves.
  for (size_t i = 0; i < k.eqns.size(); ++i)
    if ((k.eqns[i].effects() & ir::kRematReplay) && recompute.insert(i).second)
      for (auto& a : k.eqns[i].inputs)
        if (!a.is_literal()) need(a.var());
  auto sub = [&](const ir::Atom& a) {
    if (a.is_literal()) return a;
    auto it = subst.find(a.var().get());
    return it == subst.end() ? a : it->second;
  };
  ir::Program nu;
  nu.name = u.name;
  // K's constants the recomputation reads stay constants of U.
  std::set<const ir::VarNode*> kconst;
  for (size_t i = 0; i < k.constvars.size(); ++i) kconst.insert(k.constvars[i].get());
  std::vector<ir::Var> res_in;
  for (auto& v : residuals) {
    if (kconst.count(v.get())) {
      for (size_t i = 0; i < k.constvars.size(); ++i)
        if (k.constvars[i] == v) {
          nu.constvars.push_back(v);
          nu.consts.push_back(k.consts[i]);
        }
    } else {
      res_in.push_back(v);
    }
  }
  nu.invars = res_in;
  nu.invars.insert(nu.invars.end(), u.invars.begin() + long(s.num_residuals), u.invars.end());
  nu.constvars.insert(nu.constvars.end(), u.constvars.begin(), u.constvars.end());
  nu.consts.insert(nu.consts.end(), u.consts.begin(), u.consts.end());
  for (size_t i : recompute) nu.eqns.push_back(k.eqns[i]);
  for (auto e : u.eqns) {
    for (auto& a : e.inputs) a = sub(a);
    nu.eqns.push_back(std::move(e));
  }
  for (auto& a : u.outvars) nu.outvars.push_back(sub(a));
  k.outvars.erase(k.outvars.begin() + long(n_out), k.outvars.end());
  for (auto& v : res_in) k.outvars.push_back(v);
  s.num_residuals = res_in.size();
  s.known = std::make_shared<const ir::Program>(std::move(k));
  s.unknown = std::make_shared<const ir::Program>(std::move(nu));
}

}  // namespace

SplitProgram partial_eval_program(const ir::Program& p, const std::vector<bool>& unknown_in,
                                  bool (*save)(const ir::Equation&), const std::vector<bool>& force_unknown) {
  SplitProgram r;
  std::vector<Aval> known_avals;
  for (size_t i = 0; i < p.invars.size(); ++i)
    if (!unknown_in[i]) known_avals.push_back(p.invars[i]->aval);
  auto fn = [&](std::span<const Array> kargs) {
    PartialEvalTrace pe;
    Trace::Scope scope(&pe);
    std::vector<Array> args;
    for (size_t i = 0, k = 0; i < p.invars.size(); ++i)
      args.push_back(unknown_in[i] ? pe.new_arg(p.invars[i]->aval) : kargs[k++]);
    std::vector<Array> outs = ir::eval_program(p, args), known, unknown;
    for (size_t i = 0; i < outs.size(); ++i) {
      bool u = pe.owns(outs[i]) || (i < force_unknown.size() && force_unknown[i]);
      r.out_unknown.push_back(u);
      (u ? unknown : known).push_back(outs[i]);
    }
    ir::Program up = pe.finalize(unknown, p.name + "_unknown");
    // Residuals (known values the unknown part reads) become its leading inputs.
    std::vector<Array> residuals;
    ir::Program u = ir::hoist_tracer_consts(up, residuals);
    r.num_residuals = residuals.size();
    known.insert(known.end(), residuals.begin(), residuals.end());
    r.unknown = std::make_shared<const ir::Program>(std::move(u));
    return known;
  };
  r.known = std::make_shared<const ir::Program>(trace_to_program(fn, known_avals, p.name + "_known"));
  if (save) rematerialize(r, save);
  return r;
}

std::pair<std::vector<Array>, ir::ProgramRef> linearize_eval(
    const std::function<std::vector<Array>(std::span<const Array>)>& fn, std::span<const Array> primals) {
  PartialEvalTrace pe;
  std::vector<Array> outs, touts;
  {
    Trace::Scope scope(&pe);
    std::vector<Array> tangents;
    for (const Array& x : primals) tangents.push_back(pe.new_arg(x.aval()));
    auto [po, to] = jvp_eval(fn, primals, tangents);
    for (size_t i = 0; i < po.size(); ++i)
      touts.push_back(to[i].valid() ? to[i] : zeros(po[i].shape(), po[i].dtype()));
    outs = std::move(po);
  }
  return {outs, std::make_shared<const ir::Program>(pe.finalize(touts, "linear"))};
}

}  // namespace tessel::detail
