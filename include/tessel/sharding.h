#pragma once
// Meshes, partition specs and shardings (jax.sharding): how a global array is laid out over
// devices. Partitioned programs (jit with shardings, with_sharding_constraint) are built by
// src/sharding/; docs/sharding.md explains the model.
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tessel/array.h"
#include "tessel/device.h"

namespace tessel {

namespace detail {
struct MeshImpl;
struct ShardingImpl;
}  // namespace detail

/// Devices arranged in an n-dimensional grid with named axes (jax.sharding.Mesh). Devices
/// are listed in row-major order of the grid. Cheap to copy; equal when the devices, shape
/// and axis names are equal.
class TESSEL_API Mesh {
 public:
  Mesh() = default;
  /// A mesh of `shape` (product = devices.size()) with one name per axis. Throws
  /// ValueError for repeated or empty names, a shape that does not match the devices, or a
  /// device listed twice.
  Mesh(std::vector<Device> devices, Shape shape, std::vector<std::string> axis_names);
  const Shape& shape() const;
  const std::vector<std::string>& axis_names() const;
  /// The devices, row-major over the grid.
  const std::vector<Device>& devices() const;
  /// Number of devices.
  int64_t size() const;
  /// The size of the axis called `name`; throws ValueError for an unknown name.
  int64_t axis_size(const std::string& name) const;
  /// The position of the axis called `name`; throws ValueError for an unknown name.
  int axis_index(const std::string& name) const;
  bool valid() const { return impl_ != nullptr; }
  /// "Mesh('x': 2, 'y': 4)"
  std::string to_string() const;
  bool operator==(const Mesh& o) const;
  bool operator!=(const Mesh& o) const { return !(*this == o); }
  const std::shared_ptr<const detail::MeshImpl>& impl() const { return impl_; }

 private:
  std::shared_ptr<const detail::MeshImpl> impl_;
};

/// A mesh of `shape` over `devices` (default: the first shape-product devices of
/// `ts::devices()`), like jax.make_mesh. Throws ValueError when there are too few devices.
TESSEL_API Mesh make_mesh(const Shape& shape, const std::vector<std::string>& axis_names,
                          std::vector<Device> devices = {});

/// One entry of a partition spec: the mesh axes that split one array dimension, major
/// first; no axes (`ts::none`) leaves the dimension whole (replicated).
class TESSEL_API SpecEntry {
 public:
  SpecEntry() = default;
  SpecEntry(std::nullopt_t) {}                                       // NOLINT: ts::none
  SpecEntry(const char* axis) : axes_{checked_name(axis)} {}         // NOLINT: "x"
  SpecEntry(std::string axis) : axes_{std::move(axis)} {}            // NOLINT
  SpecEntry(std::vector<std::string> axes) : axes_(std::move(axes)) {}  // NOLINT: several axes
  const std::vector<std::string>& axes() const { return axes_; }
  bool empty() const { return axes_.empty(); }
  bool operator==(const SpecEntry& o) const { return axes_ == o.axes_; }

 private:
  static std::string checked_name(const char* axis) {
    if (!axis) throw ValueError("PartitionSpec: a mesh axis name is a null pointer; name an axis (\"x\") or use ts::none");
    return axis;
  }
  std::vector<std::string> axes_;
};

/// Several mesh axes for one dimension: `ts::P(ts::axes("x", "y"), ts::none)`.
template <class... S> SpecEntry axes(const S&... names) { return SpecEntry(std::vector<std::string>{std::string(names)...}); }

/// How each dimension of an array is split over mesh axes (jax.sharding.PartitionSpec):
/// `ts::P("x", ts::none)` splits dimension 0 over axis x and keeps dimension 1 whole.
/// Dimensions beyond the spec's length are whole.
class TESSEL_API PartitionSpec {
 public:
  PartitionSpec() = default;
  template <class... E>
    requires(sizeof...(E) > 0 && (std::is_constructible_v<SpecEntry, const E&> && ...))
  PartitionSpec(const E&... entries) : entries_{SpecEntry(entries)...} {}  // NOLINT
  explicit PartitionSpec(std::vector<SpecEntry> entries) : entries_(std::move(entries)) {}
  const std::vector<SpecEntry>& entries() const { return entries_; }
  size_t size() const { return entries_.size(); }
  /// The entry of dimension `dim` (empty beyond the spec's length).
  const SpecEntry& operator[](size_t dim) const {
    static const SpecEntry whole;
    return dim < entries_.size() ? entries_[dim] : whole;
  }
  /// "P('x', None)", "P(('x', 'y'),)"
  std::string to_string() const;
  /// Equal as specs of an array of rank `ndim` (trailing `none` entries do not matter).
  bool equivalent(const PartitionSpec& o, size_t ndim) const;
  bool operator==(const PartitionSpec& o) const { return entries_ == o.entries_; }

 private:
  std::vector<SpecEntry> entries_;
};
using P = PartitionSpec;

/// Where a global array's pieces live: a named sharding over a mesh, or a single device.
/// Cheap to copy; compares by value.
class TESSEL_API Sharding {
 public:
  Sharding() = default;
  bool valid() const { return impl_ != nullptr; }
  bool is_single_device() const;
  /// The mesh (a 1-device mesh with no axes for a single-device sharding).
  const Mesh& mesh() const;
  /// The partition spec (empty for a single-device sharding).
  const PartitionSpec& spec() const;
  /// The devices holding pieces, in mesh order.
  const std::vector<Device>& device_set() const;
  /// True when every device holds the whole array.
  bool is_fully_replicated() const;
  /// Shape of the piece on one device: each dimension divided by the number of its shards,
  /// rounded up (the last piece of a dimension that does not divide is smaller).
  Shape shard_shape(const Shape& global_shape) const;
  /// For each device of `device_set()`: the [start, stop) range it holds in each dimension.
  std::vector<std::vector<std::pair<int64_t, int64_t>>> device_indices(const Shape& global_shape) const;
  /// Throws ValueError (naming `what`) if the sharding cannot lay out an array of `rank`
  /// dimensions (a spec longer than the rank).
  void check_rank(size_t rank, const std::string& what) const;
  /// "NamedSharding(mesh=Mesh('x': 8), spec=P('x',))" or "SingleDeviceSharding(cpu:0)"
  std::string to_string() const;
  bool operator==(const Sharding& o) const;
  bool operator!=(const Sharding& o) const { return !(*this == o); }
  const std::shared_ptr<const detail::ShardingImpl>& impl() const { return impl_; }
  explicit Sharding(std::shared_ptr<const detail::ShardingImpl> impl) : impl_(std::move(impl)) {}

 private:
  std::shared_ptr<const detail::ShardingImpl> impl_;
};

/// A sharding over a mesh by partition spec (jax.sharding.NamedSharding). Throws
/// ValueError when the spec names an axis the mesh lacks or uses an axis twice.
class TESSEL_API NamedSharding : public Sharding {
 public:
  NamedSharding(const Mesh& mesh, const PartitionSpec& spec);
};

/// The whole array on one device (jax.sharding.SingleDeviceSharding).
class TESSEL_API SingleDeviceSharding : public Sharding {
 public:
  explicit SingleDeviceSharding(const Device& device);
};

TESSEL_API std::ostream& operator<<(std::ostream& os, const Sharding& s);
TESSEL_API std::ostream& operator<<(std::ostream& os, const Mesh& m);
TESSEL_API std::ostream& operator<<(std::ostream& os, const PartitionSpec& p);

/// One device's piece of an array (jax.Shard).
struct Shard {
  Device device;
  /// The [start, stop) range of the global array in each dimension.
  std::vector<std::pair<int64_t, int64_t>> index;
  /// The piece, an array on `device`.
  Array data;
};

/// Places `x` according to `sharding` (a copy per device holding a piece; pieces already in
/// place are shared). Works on single-device and sharded arrays (resharding); under a
/// transformation it is `with_sharding_constraint`.
TESSEL_API Array device_put(const Array& x, const Sharding& sharding);

/// Inside a traced function: requires `x` to be laid out by `sharding` at this point
/// (jax.lax.with_sharding_constraint); sharding propagation treats it as fixed. On concrete
/// arrays it is `device_put`.
TESSEL_API Array with_sharding_constraint(const Array& x, const Sharding& sharding);

/// The sharding of a concrete array (SingleDeviceSharding for a single-device array). Throws
/// for a tracer. Same as `x.sharding()`.
TESSEL_API Sharding sharding_of(const Array& x);

}  // namespace tessel
