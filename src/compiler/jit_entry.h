#pragma once
// What jit keeps per traced function and signature (src/compiler/jit.cpp traces and
// compiles it; src/sharding/dispatch.cpp runs it, partitioned or on one device).
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "compiler/executable.h"
#include "compiler/fusion.h"
#include "ir/program.h"
#include "ir/trace.h"
#include "tessel/jit.h"

namespace tessel::detail {

struct ProgramHolder {
  std::shared_ptr<const ir::Program> program;
};

struct JitEntry {
  std::shared_ptr<const ir::Program> traced;   // as traced
  // Closure-converted but not simplified: what transformations of a call see, since
  // simplification inlines custom_jvp/custom_vjp/checkpoint calls and would drop their rules.
  std::shared_ptr<const ir::Program> closed;
  std::shared_ptr<const ir::Program> lowered;  // closure-converted and simplified
  std::vector<Array> captured_tracers;         // leading arguments of `closed` and `lowered`
  std::vector<int> donated;                    // per input: donated argument index, or -1
  bool partitions = false;                     // has sharding constraints, shard_map, ...
  // Built (fused, kernels compiled) on the first concrete call: an entry used only under
  // transformations never pays for code generation.
  mutable std::once_flag exe_once;
  mutable std::shared_ptr<compiler::Executable> exe;
  const compiler::Executable& executable() const {
    std::call_once(exe_once, [this] {
      exe = std::make_shared<compiler::Executable>(std::make_shared<const ir::Program>(compiler::fuse(*lowered)),
                                                   donated);
    });
    return *exe;
  }
};

/// True when a trace is active or an argument is a tracer: the call is recorded, not run.
inline bool needs_trace(std::span<const Array> args) {
  if (tracing_active()) return true;
  for (const Array& a : args)
    if (a.is_tracer()) return true;
  return false;
}

/// The cached executable `run_program_sync` runs `program` with (compiled on first use).
std::shared_ptr<compiler::Executable> call_executable(const ir::ProgramRef& program);

/// Runs `program` synchronously on dense buffers of `device` with its cached executable
/// (control-flow bodies and calls inside a device task).
void run_program_sync(const ir::ProgramRef& program, std::span<const void* const> ins, std::span<void* const> outs,
                      DeviceImpl* device);

}  // namespace tessel::detail
