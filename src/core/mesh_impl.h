#pragma once
// What Mesh and Sharding handles point to, and the layout arithmetic the partitioner uses.
#include <string>
#include <vector>

#include "tessel/sharding.h"

namespace tessel::detail {

struct MeshImpl {
  std::vector<Device> devices;
  Shape shape;
  std::vector<std::string> names;
};

struct ShardingImpl {
  bool single_device = false;
  Mesh mesh;
  PartitionSpec spec;
};

/// Number of pieces a dimension split over `axes` has (product of their sizes).
int64_t axes_size(const Mesh& mesh, const std::vector<std::string>& axes);
/// The size of one piece of a dimension of `n` elements split into `k` pieces: n / k
/// rounded up (0 stays 0).
inline int64_t piece_size(int64_t n, int64_t k) { return k <= 1 ? n : (n + k - 1) / k; }
/// The per-device shape of `global` laid out by spec over mesh (padded: pieces rounded up).
Shape local_shape(const Mesh& mesh, const PartitionSpec& spec, const Shape& global);
/// Position `pos`'s coordinate along mesh axis `axis`.
int64_t mesh_coordinate(const Mesh& mesh, int pos, int axis);
/// Index of position `pos` among the pieces of a dimension split over `axes` (row-major
/// over the axes, major first).
int64_t piece_index(const Mesh& mesh, int pos, const std::vector<std::string>& axes);
/// A named sharding that keeps every dimension whole on every device of `mesh`.
Sharding replicated_sharding(const Mesh& mesh);

}  // namespace tessel::detail
