// Partitioning control flow: the nested programs of cond, while and scan (ir/regions.h) are
// partitioned like the program around them, each by a Lowerer of its own, so a loop body
// runs on every device's pieces with its collectives inside.
//
// The layouts of loop carries are a fixed point: they start as the initial values'
// layouts; propagation through the body gives the layouts the body returns; each carry
// keeps the mesh axes both agree on (a dimension they split differently is carried whole),
// and this repeats until nothing changes. A with_sharding_constraint on a returned carry
// decides its layout (the initial value is resharded to it), unless the initial value is
// constrained too, differently: that is an error naming both. cond's branches are lowered
// to one common layout per result.
#include <algorithm>

#include "compiler/loop_blocking.h"
#include "compiler/passes.h"
#include "core/cache.h"
#include "core/log.h"
#include "ir/loop_steps.h"
#include "ir/trace.h"
#include "sharding/lowering.h"
#include "sharding/reshard.h"
#include "sharding/wide_halo.h"
#include "tessel/error.h"

namespace tessel::sharding {
namespace {

using Dims = std::vector<Axes>;
using MaybeDims = std::optional<Dims>;

// Calls inside a region (nested jit, checkpoint, custom_jvp/vjp) are inlined so that the
// partitioner sees through them, as it does at the top level. Not folded: folding would
// evaluate on a device while the caller is tracing.
ir::ProgramRef simplified(const ir::ProgramRef& p) {
  using Key = detail::IdentityKey<ir::Program>;
  static auto* cache = new detail::Cache<Key, ir::ProgramRef>("spmd.regions", 256);
  const Key key(p);
  if (auto hit = cache->find(key)) return *hit;
  cache->erase_if([](const Key& k, const auto&) { return k.expired(); });
  return cache->insert(key, std::make_shared<const ir::Program>(compiler::simplify(*p, /*fold=*/false)));
}

MaybeDims meet(const MaybeDims& a, const MaybeDims& b) {
  if (!a) return b;
  if (!b) return a;
  Dims r(a->size());
  for (size_t d = 0; d < r.size(); ++d)
    if ((*a)[d] == (*b)[d]) r[d] = (*a)[d];
  return r;
}

Dims without_leading(const Dims& d) { return Dims(d.begin() + 1, d.end()); }
Dims with_leading(const Dims& d) {
  Dims r{Axes{}};
  r.insert(r.end(), d.begin(), d.end());
  return r;
}

std::string layout_text(const MaybeDims& d) { return d ? Layout{*d, {}, ir::Combine::kNone}.to_string() : "{?}"; }

/// What is decided about an equation with regions: layouts of operands, carries, region
/// inputs and results, and the propagation inside each region.
struct Plan {
  ir::Regions regions;
  std::vector<ir::ProgramRef> programs;  // the regions' programs, simplified
  std::vector<MaybeDims> operands, carries, results;
  std::vector<std::vector<MaybeDims>> region_in;
  std::vector<Hints> inside;
  std::vector<std::string> notes;  // carries split less than their initial values (TESSEL_LOG=info)
};

std::string loop_name(const ir::Equation& e) {
  return e.prim->name == "while" ? "while_loop" : e.prim->name;
}

MaybeDims out_hint(const Hints& h, const ir::Atom& a, bool* fixed = nullptr) {
  if (a.is_literal()) return Dims{};
  auto it = h.find(a.var().get());
  if (it == h.end() || !it->second.known) return std::nullopt;
  if (fixed) *fixed = it->second.fixed;
  return it->second.dims;
}

// `operands`: the operands' layouts (unset: unknown); `operand_fixed`: those a constraint
// decided (in_shardings, with_sharding_constraint, laid-out arguments).
Plan plan_nested(const ir::Equation& e, const Mesh& mesh, std::vector<MaybeDims> operands,
                 const std::vector<bool>& operand_fixed) {
  Plan p;
  p.regions = e.prim->regions(e.inputs.size(), e.params);
  for (auto& r : p.regions.regions) p.programs.push_back(simplified(r.program));
  p.operands = std::move(operands);
  // A scanned operand is whole along its scanned dimension.
  for (const auto& r : p.regions.regions)
    for (const ir::Port& port : r.inputs)
      if (port.kind == ir::Port::kOperandSlice && p.operands[port.index] && !p.operands[port.index]->empty())
        (*p.operands[port.index])[0].clear();
  const size_t nc = p.regions.carries.size();
  // A carry starts as its initial value is laid out when that splits something or a user
  // constraint says so; an initial value that is whole only because nothing decided
  // otherwise (a constant, zeros) lets the body decide, since cutting a whole value into
  // pieces moves nothing.
  for (auto& c : p.regions.carries) {
    const MaybeDims& d = p.operands[c.init];
    const bool splits = d && std::any_of(d->begin(), d->end(), [](const Axes& a) { return !a.empty(); });
    p.carries.push_back(splits || operand_fixed[c.init] ? d : std::nullopt);
  }
  std::vector<bool> carry_constrained(nc, false);
  auto in_layouts = [&](size_t r) {
    std::vector<std::optional<Layout>> in;
    p.region_in[r].clear();
    for (const ir::Port& port : p.regions.regions[r].inputs) {
      MaybeDims d;
      if (port.kind == ir::Port::kOperand) d = p.operands[port.index];
      else if (port.kind == ir::Port::kCarry) d = p.carries[port.index];
      else if (port.kind == ir::Port::kOperandSlice && p.operands[port.index]) d = without_leading(*p.operands[port.index]);
      p.region_in[r].push_back(d);
      in.push_back(d ? std::optional<Layout>(Layout{*d, {}, ir::Combine::kNone}) : std::nullopt);
    }
    return in;
  };
  p.region_in.resize(p.regions.regions.size());
  p.inside.resize(p.regions.regions.size());
  constexpr int kMaxRounds = 16;
  for (int round = 0;; ++round) {
    for (size_t r = 0; r < p.programs.size(); ++r) p.inside[r] = propagate(*p.programs[r], mesh, in_layouts(r));
    bool changed = false;
    for (size_t r = 0; r < p.programs.size(); ++r) {
      const auto& outs = p.regions.regions[r].outputs;
      for (size_t k = 0; k < outs.size(); ++k) {
        if (outs[k].kind != ir::Port::kCarry) continue;
        const size_t j = outs[k].index;
        bool fixed = false;
        MaybeDims got = out_hint(p.inside[r], p.programs[r]->outvars[k], &fixed), next;
        if (fixed && got) {
          const size_t init = p.regions.carries[j].init;
          if (operand_fixed[init] && p.operands[init] && *p.operands[init] != *got)
            throw ValueError(loop_name(e) + ": carry " + std::to_string(j) + " (" +
                             e.inputs[init].aval().to_string() + ") enters the loop laid out as " +
                             layout_text(p.operands[init]) + " but a with_sharding_constraint in the body lays it out as " +
                             layout_text(got) + "; constrain both the same way (or drop one of the constraints)");
          next = got;
          carry_constrained[j] = true;
        } else {
          next = carry_constrained[j] ? p.carries[j] : meet(p.carries[j], got);
        }
        if (next != p.carries[j]) {
          if (p.carries[j] && next && *next != *p.carries[j] && !carry_constrained[j])
            p.notes.push_back(loop_name(e) + " carry " + std::to_string(j) + " enters as " + layout_text(p.carries[j]) +
                              " and the body returns it as " + layout_text(got) + "; carrying it as " +
                              layout_text(next));
          p.carries[j] = next;
          changed = true;
        }
      }
    }
    if (!changed) break;
    if (round == kMaxRounds) {  // cannot happen with meets alone; stay correct if it does
      for (auto& c : p.carries)
        if (c) c = Dims(c->size());
      for (size_t r = 0; r < p.programs.size(); ++r) p.inside[r] = propagate(*p.programs[r], mesh, in_layouts(r));
      break;
    }
  }
  // Results: a loop's final carries; cond's outputs (one layout for all branches); scan's
  // stacked outputs, whole along the scanned dimension.
  p.results.assign(e.outputs.size(), std::nullopt);
  std::vector<bool> seen(e.outputs.size(), false);
  for (size_t j = 0; j < nc; ++j) {
    p.results[p.regions.carries[j].result] = p.carries[j];
    seen[p.regions.carries[j].result] = true;
  }
  for (size_t r = 0; r < p.programs.size(); ++r) {
    const auto& outs = p.regions.regions[r].outputs;
    for (size_t k = 0; k < outs.size(); ++k) {
      const size_t j = outs[k].index;
      if (outs[k].kind != ir::Port::kResult && outs[k].kind != ir::Port::kResultSlice) continue;
      MaybeDims got = out_hint(p.inside[r], p.programs[r]->outvars[k]);
      if (!got) got = Dims(p.programs[r]->outvars[k].aval().shape.size());
      if (outs[k].kind == ir::Port::kResultSlice) got = with_leading(*got);
      p.results[j] = seen[j] ? meet(p.results[j], got) : got;
      seen[j] = true;
    }
  }
  return p;
}

// Laid out by a with_sharding_constraint (in_shardings are constraints too). The program's
// own inputs and constants are fixed for propagation, but their layout is the caller's (or
// whole), not a constraint.
bool user_constrained(const Lowerer& l, const ir::Atom& a) {
  const Hint* h = l.hint(a);
  if (!h || !h->fixed || a.is_literal()) return false;
  const auto& p = l.program();
  auto in = [&](const std::vector<ir::Var>& vs) { return std::find(vs.begin(), vs.end(), a.var()) != vs.end(); };
  return !in(p.invars) && !in(p.constvars);
}

Layout layout(const MaybeDims& d, size_t rank) { return Layout{d ? *d : Dims(rank), {}, ir::Combine::kNone}; }

/// The most equations of a blocked body.
constexpr size_t kMaxBlockedEquations = 512;

/// A loop of known steps (a forward scan) over carries only (no scanned operands or stacked
/// results) whose body fits a wide-halo lowering (wide_halo.cpp): the body runs `steps`
/// times per iteration (the largest divisor of the length up to compiler::kLoopBlockSteps,
/// else once; see compiler/loop_blocking.h) after one exchange of the halos of all of them.
/// False when it does not fit: lowered as usual.
bool lower_scan_blocked(Lowerer& l, const ir::Equation& e, const Plan& p, const std::vector<Array>& local_ins) {
  const ir::LoopSteps* loop = ir::loop_steps(*e.prim);
  if (!loop || loop->steps(e.params) < 0 || p.programs.size() != 1) return false;
  const ir::Program& body = *p.programs[0];
  const ir::Region& ports = p.regions.regions[0];
  for (const ir::Port& port : ports.inputs)
    if (port.kind != ir::Port::kOperand && port.kind != ir::Port::kCarry) return false;
  for (const ir::Port& port : ports.outputs)
    if (port.kind != ir::Port::kCarry) return false;
  std::vector<Layout> in;
  std::vector<Aval> local_in;
  for (size_t k = 0; k < body.invars.size(); ++k) {
    const Aval& g = body.invars[k]->aval;
    in.push_back(layout(p.region_in[0][k], g.shape.size()));
    local_in.push_back(Aval(local_dims_shape(l.mesh(), in.back().dims, g.shape), g.dtype, g.weak_type));
  }
  std::vector<std::optional<Layout>> out;
  for (size_t k = 0; k < body.outvars.size(); ++k)
    out.push_back(layout(p.carries[ports.outputs[k].index], body.outvars[k].aval().shape.size()));
  const int64_t length = loop->steps(e.params);
  int64_t steps = 1;
  for (int64_t t = std::min(compiler::kLoopBlockSteps, length); t > 1 && steps == 1; --t)
    if (length % t == 0 && body.eqns.size() * size_t(t) <= kMaxBlockedEquations) steps = t;
  for (int64_t t : {steps, int64_t(1)}) {
    const ir::Program program = t == 1 ? body : compiler::unrolled_steps(body, ports, t);
    bool lowered = false;
    ir::Program local = detail::trace_to_program(
        [&](std::span<const Array> args) {
          std::optional<WideHaloResult> w = lower_wide_halo(program, l.mesh(), l.position(), args, in, out);
          lowered = w.has_value();
          return w ? w->outputs : std::vector<Array>(args.begin(), args.begin() + ptrdiff_t(body.outvars.size()));
        },
        local_in, body.name);
    if (!lowered) continue;
    ir::Params params = p.regions.with_programs(
        e.params, {std::make_shared<const ir::Program>(compiler::simplify(local, /*fold=*/false))});
    params = loop->with_steps(params, length / t);
    std::vector<Array> res = detail::bind(*e.prim, local_ins, params);
    for (size_t j = 0; j < e.outputs.size(); ++j)
      l.set(e.outputs[j], Local{res[j], layout(p.results[j], e.outputs[j]->aval.shape.size())});
    TESSEL_DEBUG_LOG("partition '" + l.program().name + "': scan body lowered with wide halos, " + std::to_string(t) +
                     " steps per exchange");
    return true;
  }
  return false;
}

}  // namespace

std::vector<std::optional<std::vector<Axes>>> propagate_nested(const ir::Equation& e, const Mesh& mesh,
                                                               const std::vector<const Hint*>& operand_hints) {
  std::vector<MaybeDims> ops;
  std::vector<bool> fixed;
  for (const Hint* h : operand_hints) {
    ops.push_back(h && h->known ? MaybeDims(h->dims) : std::nullopt);
    fixed.push_back(false);  // constraints are checked when the loop is lowered
  }
  return plan_nested(e, mesh, std::move(ops), fixed).results;
}

void lower_nested(Lowerer& l, const ir::Equation& e) {
  const Mesh& mesh = l.mesh();
  std::vector<MaybeDims> ops;
  std::vector<bool> fixed;
  for (const ir::Atom& a : e.inputs) {
    Dims dims = l.get(a).layout.dims;  // a literal's are empty
    ops.push_back(dims.size() == a.aval().shape.size() ? dims : Dims(a.aval().shape.size()));
    fixed.push_back(user_constrained(l, a));
  }
  Plan p = plan_nested(e, mesh, ops, fixed);
  for (const std::string& note : p.notes) TESSEL_INFO_LOG("partition '" + l.program().name + "': " + note);

  // The operands as the per-device equation takes them: carries' initial values laid out
  // as the carries are.
  std::vector<Layout> want;
  for (size_t i = 0; i < e.inputs.size(); ++i) want.push_back(layout(p.operands[i], e.inputs[i].aval().shape.size()));
  for (size_t j = 0; j < p.carries.size(); ++j) {
    const size_t init = p.regions.carries[j].init;
    want[init] = layout(p.carries[j], e.inputs[init].aval().shape.size());
  }
  std::vector<Array> local_ins;
  for (size_t i = 0; i < e.inputs.size(); ++i) local_ins.push_back(l.to_layout(e.inputs[i], want[i]));

  if (lower_scan_blocked(l, e, p, local_ins)) return;

  // Each region partitioned with its inputs' layouts, returning what the equation needs.
  std::vector<ir::ProgramRef> local_programs;
  for (size_t r = 0; r < p.programs.size(); ++r) {
    const ir::Program& prog = *p.programs[r];
    const auto& ports = p.regions.regions[r];
    std::vector<Layout> in;
    std::vector<Aval> local_in;
    for (size_t k = 0; k < prog.invars.size(); ++k) {
      const Aval& g = prog.invars[k]->aval;
      in.push_back(layout(p.region_in[r][k], g.shape.size()));
      local_in.push_back(Aval(local_dims_shape(mesh, in.back().dims, g.shape), g.dtype, g.weak_type));
    }
    std::vector<std::optional<Layout>> out;
    for (size_t k = 0; k < prog.outvars.size(); ++k) {
      const ir::Port& port = ports.outputs[k];
      const size_t rank = prog.outvars[k].aval().shape.size();
      if (port.kind == ir::Port::kCarry) out.push_back(layout(p.carries[port.index], rank));
      else if (port.kind == ir::Port::kResult) out.push_back(layout(p.results[port.index], rank));
      else if (port.kind == ir::Port::kResultSlice) out.push_back(layout(without_leading(*p.results[port.index]), rank));
      else out.push_back(Layout{Dims(rank), {}, ir::Combine::kNone});  // the predicate: the same on every device
    }
    Lowerer inner(prog, mesh, p.inside[r], l.position());
    ir::Program local = detail::trace_to_program(
        [&](std::span<const Array> args) { return inner.run(args, in, out); }, local_in, prog.name);
    local_programs.push_back(std::make_shared<const ir::Program>(compiler::simplify(local, /*fold=*/false)));
  }
  std::vector<Array> res = detail::bind(*e.prim, local_ins, p.regions.with_programs(e.params, local_programs));
  for (size_t j = 0; j < e.outputs.size(); ++j)
    l.set(e.outputs[j], Local{res[j], layout(p.results[j], e.outputs[j]->aval.shape.size())});
}

}  // namespace tessel::sharding
