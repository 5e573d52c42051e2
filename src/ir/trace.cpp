#include "ir/trace.h"

#include <atomic>

#include "core/shape_check.h"
#include "ir/abstract_eval.h"
#include "ir/evaluator.h"
#include "tessel/error.h"

namespace tessel::detail {
namespace {

thread_local std::vector<Trace*> t_stack;

std::atomic<uint64_t>& trace_counter() {
  static std::atomic<uint64_t> c{1};
  return c;
}

// Checks by id, never through t->trace: the trace of a leaked tracer is gone.
bool is_live(const Tracer* t) {
  for (Trace* s : t_stack)
    if (s->id() == t->trace_id) return true;
  return false;
}

[[noreturn]] void escaped(const ir::Primitive& p, const Tracer* t) {
  throw Error(p.name + ": an array " + t->aval.to_string() +
              " traced by a transformation that has already ended was used (a leaked tracer: it was stored "
              "outside the traced function, e.g. in a global or a by-reference capture). Return it from the "
              "function instead.");
}

}  // namespace

Trace::Trace() : id_(trace_counter().fetch_add(1)) {}
Trace::~Trace() = default;

Trace::Scope::Scope(Trace* t) : t_(t) {
  t->level_ = int(t_stack.size());
  t_stack.push_back(t);
}

Trace::Scope::~Scope() { t_stack.pop_back(); }

bool tracing_active() { return !t_stack.empty(); }
bool trace_is_live(uint64_t id) {
  for (Trace* s : t_stack)
    if (s->id() == id) return true;
  return false;
}

std::vector<Array> eval_eagerly(const ir::Primitive& p, std::span<const Array> ins, const ir::Params& params) {
  return ir::evaluator().eval_primitive(p, ins, params);
}

std::vector<Array> bind(const ir::Primitive& p, std::span<const Array> ins, const ir::Params& params) {
  Trace* best = nullptr;
  if (!t_stack.empty()) {
    for (auto it = t_stack.rbegin(); it != t_stack.rend(); ++it)
      if ((*it)->is_dynamic()) {
        best = *it;
        break;
      }
  }
  for (const Array& a : ins) {
    if (!a.valid()) throw ValueError(p.name + ": an argument is an empty Array (default-constructed); give it a value");
    if (const Tracer* t = as_tracer(a)) {
      if (!is_live(t)) escaped(p, t);
      if (!best || t->trace->level() > best->level()) best = t->trace;
    }
  }
  if (best) return best->process_primitive(p, ins, params);
  return ir::evaluator().eval_primitive(p, ins, params);
}

Array bind1(const ir::Primitive& p, std::span<const Array> ins, const ir::Params& params) {
  auto outs = bind(p, ins, params);
  if (outs.size() != 1) throw Error("internal: " + p.name + " returned " + std::to_string(outs.size()) + " results");
  return std::move(outs[0]);
}

Array ProgramTrace::new_arg(const Aval& aval) {
  checked_size("trace", aval);  // (avals given by the caller, e.g. to make_program or lower)
  ir::Var v = ir::new_var(aval);
  invars_.push_back(v);
  return Array(std::make_shared<ProgramTracer>(v, this));
}

ir::Atom ProgramTrace::to_atom(const Array& a) {
  if (const Tracer* t = as_tracer(a); t && t->trace_id == id()) return static_cast<const ProgramTracer*>(t)->var;
  if (const ConcreteArray* c = as_concrete(a); c && c->aval.shape.empty()) return ir::Atom(a.scalar(), c->aval.weak_type);
  auto it = const_vars_.find(a.impl().get());
  if (it != const_vars_.end()) return it->second;
  ir::Var v = ir::new_var(a.aval());
  constvars_.push_back(v);
  consts_.push_back(a);
  const_vars_.emplace(a.impl().get(), v);
  return v;
}

bool ProgramTrace::owns(const Array& a) const {
  const Tracer* t = as_tracer(a);
  return t && t->trace_id == id();
}

std::vector<Array> ProgramTrace::process_primitive(const ir::Primitive& p, std::span<const Array> ins,
                                                   const ir::Params& params) {
  return record(p, ins, params);
}

std::vector<Array> ProgramTrace::record(const ir::Primitive& p, std::span<const Array> ins, const ir::Params& params) {
  ir::Equation e{&p, {}, {}, params};
  std::vector<Aval> in_avals;
  in_avals.reserve(ins.size());
  for (const Array& a : ins) {
    e.inputs.push_back(to_atom(a));
    in_avals.push_back(e.inputs.back().aval());
  }
  std::vector<Aval> out_avals = ir::abstract_eval(p, in_avals, params);
  std::vector<Array> outs;
  for (auto& av : out_avals) {
    ir::Var v = ir::new_var(av);
    e.outputs.push_back(v);
    outs.push_back(Array(std::make_shared<ProgramTracer>(v, this)));
  }
  eqns_.push_back(std::move(e));
  return outs;
}

ir::Program ProgramTrace::finalize(std::span<const Array> outs, std::string name) {
  ir::Program p;
  for (const Array& a : outs) {
    if (!a.valid()) throw ValueError(name + ": the traced function returned an empty Array");
    if (const Tracer* t = as_tracer(a); t && t->trace_id != id() && !is_live(t))
      throw Error(name + ": the traced function returned a tracer of a transformation that has ended");
    p.outvars.push_back(to_atom(a));
  }
  p.invars = std::move(invars_);
  p.constvars = std::move(constvars_);
  p.consts = std::move(consts_);
  p.eqns = std::move(eqns_);
  p.name = std::move(name);
  const_vars_.clear();
  return p;
}

ir::Program trace_to_program(const std::function<std::vector<Array>(std::span<const Array>)>& fn,
                             std::span<const Aval> in_avals, std::string name) {
  ProgramTrace trace;
  std::vector<Array> outs;
  {
    Trace::Scope scope(&trace);
    std::vector<Array> args;
    for (auto& av : in_avals) args.push_back(trace.new_arg(av));
    outs = fn(args);
  }
  return trace.finalize(outs, std::move(name));
}

}  // namespace tessel::detail
