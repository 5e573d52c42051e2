#pragma once
// Collective primitives over mesh axes, the communication of per-device programs (shard_map
// bodies and the partitioner's output):
//   all_reduce[axes, group_size, op]            every member gets the combination of all
//   all_gather[axes, dim, group_size, tiled]    the members' values concatenated (tiled) or
//                                               stacked on a new dimension `dim`
//   all_to_all[axes, concat_dim, group_size, split_dim]
//                                               block j of `split_dim` goes to member j; the
//                                               blocks received concatenate along `concat_dim`
//   reduce_scatter[axes, dim, group_size, op]   the combination, split along `dim`: member r
//                                               keeps block r
//   collective_permute[axes, group_size, pairs] member s sends to member d for each (s, d);
//                                               members that receive nothing get zeros
//   axis_index[axes, group_size]                this device's index along the axes (int32)
// The group of a device is the devices that share its coordinates on every mesh axis not in
// `axes`; members are numbered row-major over `axes` in the order given. `group_size` is
// fixed when the equation is made, from the mesh the program is traced for. Kernels run
// only inside a partitioned program (src/runtime/spmd_context.h), through the launch's
// CollectiveHub. All collectives are side-effecting: never removed, merged or folded.
#include <string>
#include <utility>
#include <vector>

#include "ir/params.h"
#include "ir/primitive.h"
#include "ir/sharding_rule.h"
#include "tessel/array.h"

namespace tessel::distributed {
class CollectiveGroup;
}

namespace tessel::detail {

// Builders (the partitioner's reshard planner and the public collectives use them). They
// read axis sizes from the mesh being traced for (current_trace_mesh) or, inside a running
// partitioned program, from its SpmdContext; elsewhere they throw a ValueError.

/// Combines `x` over the devices of `axes` (sum, prod, max or min); rank 0 works.
Array all_reduce(const Array& x, const std::vector<std::string>& axes, ir::Combine op);
/// The group's values concatenated along `dim` (tiled) or stacked on a new dimension `dim`.
Array all_gather(const Array& x, const std::vector<std::string>& axes, int64_t dim, bool tiled);
/// Tiled all-to-all: `split_dim` shrinks by the group size, `concat_dim` grows by it.
Array all_to_all(const Array& x, const std::vector<std::string>& axes, int64_t split_dim, int64_t concat_dim);
/// Tiled reduce-scatter along `dim` (divisible by the group size).
Array reduce_scatter(const Array& x, const std::vector<std::string>& axes, int64_t dim, ir::Combine op);
/// Sends `x` from group rank s to group rank d for each (s, d) in `pairs`; ranks that
/// receive nothing get zeros.
Array collective_permute(const Array& x, const std::vector<std::string>& axes,
                         const std::vector<std::pair<int64_t, int64_t>>& pairs);
/// This device's index over `axes` (row-major, first axis major): an int32 scalar.
Array axis_index(const std::vector<std::string>& axes);

/// The same builders with the name of the public function for errors ("psum", "pmax", ...).
Array all_reduce_named(const std::string& api, const Array& x, const std::vector<std::string>& axes, ir::Combine op);
Array all_gather_named(const std::string& api, const Array& x, const std::vector<std::string>& axes, int64_t dim,
                       bool tiled);
Array all_to_all_named(const std::string& api, const Array& x, const std::vector<std::string>& axes,
                       int64_t split_dim, int64_t concat_dim);
Array reduce_scatter_named(const std::string& api, const Array& x, const std::vector<std::string>& axes, int64_t dim,
                           ir::Combine op);
Array collective_permute_named(const std::string& api, const Array& x, const std::vector<std::string>& axes,
                               const std::vector<std::pair<int64_t, int64_t>>& pairs);
Array axis_index_named(const std::string& api, const std::vector<std::string>& axes);

/// The number of devices in a group over `axes` of the mesh being traced for (or of the
/// running partitioned program); ValueError naming `api` outside both, for an unknown axis
/// or an axis named twice.
int64_t collective_group_size(const std::string& api, const std::vector<std::string>& axes);

/// A collective_permute whose rows are posted (collective_permute_start) and whose output is
/// not yet written.
struct StartedPermute {
  distributed::CollectiveGroup* group = nullptr;
  int rank = 0;
  uint64_t ticket = 0;
  void* out = nullptr;
};
/// The collective_permute kernel in two halves (its primitive's `post` rule, which
/// compiler/executable.cpp uses to overlap halo exchanges with the rows that do not need
/// them): the start posts this device's rows (its input may be reused when it returns) and
/// zeros the output of a device that receives nothing; the done writes the received rows.
StartedPermute collective_permute_start(const ir::KernelCall& c);
void collective_permute_done(const StartedPermute& p);

/// The mesh axes of a collective equation (its "axes" parameter).
const std::vector<std::string>& collective_axes(const ir::Params& params);

}  // namespace tessel::detail
