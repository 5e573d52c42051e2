#pragma once
// Tracing: the stack of active transformations, `bind`, and the trace that records a
// program (the only trace of the foundation; jvp and batching traces come later).
#include <concepts>
#include <functional>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/array_impl.h"
#include "ir/program.h"

namespace tessel::detail {

/// A transformation in progress. Tracers refer to their trace; operations on them go to
/// `process_primitive`.
class Trace {
 public:
  Trace();
  virtual ~Trace();
  int level() const { return level_; }
  uint64_t id() const { return id_; }
  virtual std::vector<Array> process_primitive(const ir::Primitive& p, std::span<const Array> ins,
                                               const ir::Params& params) = 0;
  /// Program-building traces record even operations without tracer inputs (like JAX's
  /// dynamic trace), so constants made inside a jitted function are staged, not computed.
  virtual bool is_dynamic() const { return false; }
  /// Pushes this trace on the thread's trace stack until the returned guard ends.
  class Scope {
   public:
    explicit Scope(Trace* t);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    Trace* t_;
  };

 private:
  friend class Scope;
  int level_ = -1;
  uint64_t id_;
};

/// Applies a primitive to arrays: to the innermost trace that owns one of the inputs (or
/// the innermost dynamic trace), else evaluates eagerly.
std::vector<Array> bind(const ir::Primitive& p, std::span<const Array> ins, const ir::Params& params = {});
Array bind1(const ir::Primitive& p, std::span<const Array> ins, const ir::Params& params = {});
/// Forwarding overloads that argument-dependent lookup prefers over std::bind (which an
/// unqualified `bind(p, std::vector<Array>{...}, params)` would otherwise find).
template <class Ins, class P>
  requires std::convertible_to<Ins, std::span<const Array>> && std::convertible_to<P, const ir::Params&>
std::vector<Array> bind(const ir::Primitive& p, Ins&& ins, P&& params) {
  return bind(p, std::span<const Array>(ins), static_cast<const ir::Params&>(params));
}
template <class Ins>
  requires std::convertible_to<Ins, std::span<const Array>>
std::vector<Array> bind(const ir::Primitive& p, Ins&& ins) {
  return bind(p, std::span<const Array>(ins), ir::Params{});
}
inline Array bind1(const ir::Primitive& p, std::initializer_list<Array> ins, const ir::Params& params = {}) {
  return bind1(p, std::span<const Array>(ins.begin(), ins.size()), params);
}

/// Evaluates on concrete arrays, ignoring active traces (compile-time constant folding),
/// through ir::evaluator() (ir/evaluator.h).
std::vector<Array> eval_eagerly(const ir::Primitive& p, std::span<const Array> ins, const ir::Params& params);
/// True when some trace is active on this thread.
bool tracing_active();
/// True when the trace with this id is on this thread's trace stack.
bool trace_is_live(uint64_t id);

/// Records the primitives applied to its tracers as equations of a program.
class ProgramTrace : public Trace {
 public:
  /// A dynamic trace (the default, for jit) also records operations without tracer inputs;
  /// a non-dynamic one (partial evaluation) records only operations on its own tracers.
  explicit ProgramTrace(bool dynamic = true) : dynamic_(dynamic) {}
  /// A fresh input of the program.
  Array new_arg(const Aval& aval);
  std::vector<Array> process_primitive(const ir::Primitive& p, std::span<const Array> ins,
                                       const ir::Params& params) override;
  /// Records one equation (no rules consulted) and returns its outputs as tracers.
  std::vector<Array> record(const ir::Primitive& p, std::span<const Array> ins, const ir::Params& params);
  bool is_dynamic() const override { return dynamic_; }
  /// True when `a` is a tracer of this trace.
  bool owns(const Array& a) const;
  /// Closes the program with `outs` as outputs.
  ir::Program finalize(std::span<const Array> outs, std::string name);

 private:
  ir::Atom to_atom(const Array& a);
  bool dynamic_;
  std::vector<ir::Var> invars_, constvars_;
  std::vector<Array> consts_;
  std::unordered_map<const ArrayImpl*, ir::Var> const_vars_;
  std::vector<ir::Equation> eqns_;
};

class ProgramTracer final : public Tracer {
 public:
  ProgramTracer(ir::Var var, Trace* trace) : Tracer(var->aval, trace, trace->id()), var(std::move(var)) {}
  ir::Var var;
};

/// Traces `fn` on fresh tracers of `in_avals` into a program.
ir::Program trace_to_program(const std::function<std::vector<Array>(std::span<const Array>)>& fn,
                             std::span<const Aval> in_avals, std::string name = "fn");

}  // namespace tessel::detail
