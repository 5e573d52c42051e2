#pragma once
// Running programs partitioned over the devices of a mesh (src/sharding/spmd.cpp): the
// partitioner's entry points for src/sharding/dispatch.cpp.
#include <span>
#include <string>
#include <vector>

#include "ir/primitive.h"
#include "ir/program.h"
#include "tessel/array.h"

namespace tessel::detail {

/// Runs a (simplified) program on concrete arrays, partitioned over the mesh their layouts
/// (or its own equations) name; arrays of one device are laid out as the partitioner chooses.
/// `donated` (per argument: jit's donated argument number, or -1; empty: none) lets a run
/// on a mesh of one device reuse donated arguments' memory, as a plain jit does.
std::vector<Array> spmd_run_program(const ir::ProgramRef& program, std::span<const Array> args,
                                    std::span<const int> donated = {});
/// The per-device program `spmd_run_program` would run for these arguments, as text.
std::string spmd_program_text(const ir::ProgramRef& program, std::span<const Array> args,
                              std::span<const int> donated = {});
/// One primitive on concrete arrays, partitioned (a one-equation program, cached by signature).
std::vector<Array> spmd_eval_primitive(const ir::Primitive& p, std::span<const Array> ins, const ir::Params& params);

}  // namespace tessel::detail
