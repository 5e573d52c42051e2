#include "runtime/spmd_context.h"

#include "core/mesh_impl.h"
#include "tessel/error.h"

namespace tessel::detail {
namespace {
thread_local const SpmdContext* current = nullptr;
thread_local const Mesh* trace_mesh = nullptr;
}  // namespace

const Mesh* current_trace_mesh() { return trace_mesh; }
ScopedTraceMesh::ScopedTraceMesh(const Mesh* mesh) : prev_(trace_mesh) { trace_mesh = mesh; }
ScopedTraceMesh::~ScopedTraceMesh() { trace_mesh = prev_; }

const SpmdContext* current_spmd_context() { return current; }

ScopedSpmdContext::ScopedSpmdContext(const SpmdContext* ctx) : prev_(current) { current = ctx; }
ScopedSpmdContext::~ScopedSpmdContext() { current = prev_; }

const SpmdContext& require_spmd_context(const std::string& op) {
  if (!current)
    throw ValueError(op + ": collectives over mesh axes run only inside shard_map or a jit with shardings, where "
                     "every device runs its part of the program; call it inside ts::shard_map");
  return *current;
}

AxisGroup axis_group(const SpmdContext& ctx, const std::vector<std::string>& axes, const std::string& op) {
  const Mesh& mesh = ctx.mesh;
  std::vector<int> ax;
  for (const auto& a : axes) {
    try {
      ax.push_back(mesh.axis_index(a));
    } catch (const ValueError& e) {
      throw ValueError(op + ": " + e.what());
    }
  }
  // Strides of the mesh's row-major layout.
  const Shape& shape = mesh.shape();
  std::vector<int64_t> stride(shape.size(), 1);
  for (size_t a = shape.size(); a-- > 1;) stride[a - 1] = stride[a] * shape[a];
  int base = ctx.position;
  for (int a : ax) base -= int(mesh_coordinate(mesh, ctx.position, a) * stride[size_t(a)]);
  AxisGroup g;
  int64_t count = 1;
  for (int a : ax) count *= shape[size_t(a)];
  for (int64_t i = 0; i < count; ++i) {
    int64_t rem = i, pos = base;
    for (size_t k = ax.size(); k-- > 0;) {
      int64_t sz = shape[size_t(ax[k])];
      pos += (rem % sz) * stride[size_t(ax[k])];
      rem /= sz;
    }
    if (pos == ctx.position) g.rank = int(i);
    g.members.push_back(int(pos));
  }
  return g;
}

}  // namespace tessel::detail
