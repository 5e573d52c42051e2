#pragma once
// Where eager dispatch and jit hand over to the SPMD partitioner (src/sharding/spmd.cpp
// installs it; the layers below do not depend on the partitioner): operations on arrays laid
// out over several devices, and primitives that partition themselves.
#include <span>
#include <string>
#include <vector>

#include "core/array_impl.h"
#include "ir/program.h"

namespace tessel::detail {

struct SpmdDispatch {
  /// Evaluates one primitive on concrete arrays, partitioned.
  std::vector<Array> (*eval_primitive)(const ir::Primitive& p, std::span<const Array> ins, const ir::Params& params);
  /// Runs a (simplified) program on concrete arrays, partitioned.
  std::vector<Array> (*run_program)(const ir::ProgramRef& program, std::span<const Array> args);
  /// The per-device program `run_program` would run for these arguments, as text.
  std::string (*program_text)(const ir::ProgramRef& program, std::span<const Array> args);
};
void set_spmd_dispatch(SpmdDispatch d);
const SpmdDispatch& spmd_dispatch();

/// True when some array is laid out over devices (needs the partitioner).
inline bool any_sharded(std::span<const Array> xs) {
  for (const Array& a : xs)
    if (a.impl() && a.impl()->kind == ArrayImpl::Kind::kSharded) return true;
  return false;
}
/// True when the program has an equation that partitions itself (a sharding constraint,
/// shard_map, custom_partitioning): it runs through the partitioner.
bool has_spmd_equations(const ir::Program& p);

}  // namespace tessel::detail
