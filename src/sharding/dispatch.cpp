// The top of dispatch: where an eager operation or a jitted call on concrete arrays goes.
// Arrays that each live on one device take the fast path (runtime/eager.h for one primitive,
// the compiled executable for a jit call); arrays laid out over several devices, and
// programs that partition themselves, go to the SPMD partitioner (sharding/spmd.h). This
// file is also the one implementation of ir::Evaluator (ir/evaluator.h), through which the
// IR layer reaches eager dispatch and executables without depending on them.
#include "compiler/jit_entry.h"
#include "compiler/jit_primitive.h"
#include "core/array_impl.h"
#include "ir/evaluator.h"
#include "ir/trace.h"
#include "runtime/eager.h"
#include "sharding/spmd.h"

namespace tessel::detail {
namespace {

/// True when some array is laid out over several devices (needs the partitioner).
bool any_sharded(std::span<const Array> xs) {
  for (const Array& a : xs)
    if (as_sharded(a)) return true;
  return false;
}

/// True when `p` on `ins` runs through the partitioner: sharded inputs, a primitive that
/// partitions itself (unless it names no mesh and has its own eager path, as
/// custom_partitioning on single-device arrays does), or a call or control flow whose
/// programs have such equations (a with_sharding_constraint in a loop body).
bool partitions(const ir::Primitive& p, std::span<const Array> ins, const ir::Params& params) {
  if (any_sharded(ins)) return true;
  if (p.spmd) return (p.spmd->mesh && p.spmd->mesh(params)) || !p.eager_impl;
  return (p.inlinable_call || p.regions) && ir::has_spmd_programs(params);
}

class Dispatch final : public ir::Evaluator {
 public:
  std::vector<Array> eval_primitive(const ir::Primitive& p, std::span<const Array> ins,
                                    const ir::Params& params) const override {
    if (!partitions(p, ins, params)) return eager_eval(p, ins, params);
    if (p.inlinable_call) return spmd_run_program(params.get<ir::ProgramRef>("program"), ins);
    return spmd_eval_primitive(p, ins, params);
  }
  void run_program(const ir::ProgramRef& program, std::span<const void* const> ins, std::span<void* const> outs,
                   DeviceImpl* device) const override {
    run_program_sync(program, ins, outs, device);
  }
};

[[maybe_unused]] const bool installed = [] {
  static const Dispatch dispatch;
  ir::install_evaluator(dispatch);
  return true;
}();

}  // namespace

std::vector<Array> jit_call(const JitEntry& e, std::span<const Array> args) {
  if (e.captured_tracers.empty() && !needs_trace(args)) {
    for (const Array& a : args)
      if (!a.valid()) throw ValueError(e.lowered->name + ": an argument is an empty Array; give it a value");
    if (e.partitions || any_sharded(args)) return spmd_run_program(e.lowered, args, e.donated);
    return e.executable().run(args);
  }
  std::vector<Array> all = e.captured_tracers;
  all.insert(all.end(), args.begin(), args.end());
  return bind(compiler::jit_primitive(), all,
              ir::Params{{"name", e.lowered->name}, {"program", ir::ProgramRef(e.closed)}});
}

std::string jit_compiled_text(const JitEntry& e, std::span<const Array> args) {
  if (e.partitions || any_sharded(args)) {
    if (!e.captured_tracers.empty())
      throw ValueError(e.lowered->name + ": this program closes over values of an enclosing transformation; compile it outside");
    return spmd_program_text(e.lowered, args, e.donated);
  }
  return e.executable().to_text();
}

void jit_build(const JitEntry& e, std::span<const Array> args) {
  // A program closing over an enclosing transformation's values only runs under it.
  if (!e.captured_tracers.empty() || needs_trace(args)) return;
  if (e.partitions || any_sharded(args)) spmd_program_text(e.lowered, args, e.donated);  // prepares and caches
  else e.executable();
}

}  // namespace tessel::detail
