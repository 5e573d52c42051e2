#pragma once
// The per-device view of a partitioned (SPMD) program while it runs: which mesh, where this
// device sits in it, and the collective groups of the launch. Set on the device's thread
// for the duration of its part of the launch; collective and axis_index kernels read it.
#include <memory>
#include <string>
#include <vector>

#include "distributed/collectives.h"
#include "tessel/sharding.h"

namespace tessel::detail {

struct SpmdContext {
  Mesh mesh;
  /// This device's position in the mesh (row-major index into mesh.devices()).
  int position = 0;
  /// The collective groups of this launch (shared by its devices).
  distributed::CollectiveHub* hub = nullptr;
};

/// The context of the partitioned program running on this thread, or null.
const SpmdContext* current_spmd_context();

/// Installs `ctx` on this thread for the scope's lifetime (restores the previous one).
class ScopedSpmdContext {
 public:
  explicit ScopedSpmdContext(const SpmdContext* ctx);
  ~ScopedSpmdContext();
  ScopedSpmdContext(const ScopedSpmdContext&) = delete;
  ScopedSpmdContext& operator=(const ScopedSpmdContext&) = delete;

 private:
  const SpmdContext* prev_;
};

/// The devices that share this device's coordinates on every mesh axis except `axes`, as
/// mesh positions ordered row-major over `axes` (in the order given), and this device's
/// rank among them. Throws ValueError naming `op` for an axis the mesh lacks.
struct AxisGroup {
  std::vector<int> members;
  int rank = 0;
};
AxisGroup axis_group(const SpmdContext& ctx, const std::vector<std::string>& axes, const std::string& op);

/// The mesh whose axes collectives name while a per-device program is traced (shard_map
/// bodies, the partitioner's output): collectives read axis sizes from it at trace time.
const Mesh* current_trace_mesh();
class ScopedTraceMesh {
 public:
  explicit ScopedTraceMesh(const Mesh* mesh);
  ~ScopedTraceMesh();
  ScopedTraceMesh(const ScopedTraceMesh&) = delete;
  ScopedTraceMesh& operator=(const ScopedTraceMesh&) = delete;

 private:
  const Mesh* prev_;
};

/// The current context, or an Error naming `op` ("psum can only run inside shard_map or a
/// partitioned jit").
const SpmdContext& require_spmd_context(const std::string& op);

}  // namespace tessel::detail
