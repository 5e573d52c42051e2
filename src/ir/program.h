#pragma once
// The typed SSA program (like a closed jaxpr): input vars, constants, equations
// `outs = prim[params](ins)` and outputs.
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ir/params.h"
#include "ir/primitive.h"
#include "tessel/array.h"

namespace tessel::ir {

struct VarNode {
  Aval aval;
  uint64_t id;  // unique in the process; printers renumber
};
using Var = std::shared_ptr<VarNode>;
Var new_var(Aval aval);

/// An equation input: a variable or an inline scalar literal (`2.0:f32[]`).
class Atom {
 public:
  Atom(Var v) : var_(std::move(v)) {}  // NOLINT
  Atom(Scalar value, bool weak) : lit_(value), weak_(weak) {}
  bool is_literal() const { return var_ == nullptr; }
  const Var& var() const { return var_; }
  const Scalar& literal() const { return lit_; }
  Aval aval() const { return var_ ? var_->aval : Aval({}, lit_.dtype(), weak_); }
  bool operator==(const Atom& o) const {
    return var_ ? var_ == o.var_ : (!o.var_ && lit_ == o.lit_ && weak_ == o.weak_);
  }

 private:
  Var var_;
  Scalar lit_;
  bool weak_ = false;
};

struct Equation {
  const Primitive* prim;
  std::vector<Atom> inputs;
  std::vector<Var> outputs;
  Params params;
  /// The primitive's effects and those of the programs in its params (loop bodies, calls).
  uint32_t effects() const;
};

/// A closed program: `consts` are the values of `constvars` (concrete arrays, or tracers of
/// an outer trace when a traced function captured them).
struct Program {
  std::vector<Var> invars;
  std::vector<Var> constvars;
  std::vector<Array> consts;
  std::vector<Equation> eqns;
  std::vector<Atom> outvars;
  std::string name = "fn";

  std::vector<Aval> in_avals() const;
  std::vector<Aval> out_avals() const;
};

/// Effects of any equation of the program (recursively).
uint32_t program_effects(const Program& p);
/// Calls f(const Program&) for every (non-null) program in `params`: a call's program, a
/// loop's cond and body, cond's branches.
template <class F> void for_each_program(const Params& params, F&& f) {
  for (const auto& [key, v] : params.items()) {
    if (auto* r = std::get_if<ProgramRef>(&v); r && *r) f(**r);
    if (auto* rs = std::get_if<std::vector<ProgramRef>>(&v))
      for (const auto& q : *rs)
        if (q) f(*q);
  }
}

/// Closure conversion: constants of `p` that are tracers of an enclosing transformation
/// become leading inputs (appended to `captured`, in order), so that calling the program
/// under that transformation passes them explicitly.
Program hoist_tracer_consts(const Program& p, std::vector<Array>& captured);

/// Readable text, like jax.make_jaxpr:
///   { lambda ; a:f32[3]. let
///       b:f32[3] = sin a
///       c:f32[3] = mul b 2.0:f32[]
///     in (c,) }
std::string print_program(const Program& p);
/// A note on an equation, printed at the end of its line as "  # <note>" (nothing when
/// empty); nested programs' equations get notes too.
using EquationNote = std::function<std::string(const Equation&)>;
/// print_program with a note per equation (the partitioned program's bytes per collective).
std::string print_program(const Program& p, const EquationNote& note);
/// Type-checks every equation (re-running abstract evaluation), checks that variables are
/// defined once before use. Throws tessel::Error naming the equation.
void verify_program(const Program& p);
/// Evaluates the program by binding every equation: on concrete arrays it computes, on
/// tracers it records into their trace (so transformations nest).
std::vector<Array> eval_program(const Program& p, std::span<const Array> args);
/// True when the program has an equation that partitions itself (a sharding constraint,
/// shard_map, custom_partitioning), here or in a nested program (a loop body, a call): it
/// runs through the SPMD partitioner.
bool has_spmd_equations(const Program& p);
/// True when a program in `params` (a call's, a loop body, cond's branches) has such equations.
bool has_spmd_programs(const Params& params);

}  // namespace tessel::ir
