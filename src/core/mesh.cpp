// Mesh, PartitionSpec and Sharding: validation, printing and layout arithmetic.
#include <algorithm>
#include <ostream>
#include <set>

#include "core/device_impl.h"
#include "core/shape_check.h"
#include "core/mesh_impl.h"
#include "tessel/error.h"

namespace tessel {

namespace detail {

int64_t axes_size(const Mesh& mesh, const std::vector<std::string>& axes) {
  int64_t k = 1;
  for (const auto& a : axes) k *= mesh.axis_size(a);
  return k;
}

Shape local_shape(const Mesh& mesh, const PartitionSpec& spec, const Shape& global) {
  Shape s = global;
  for (size_t d = 0; d < s.size(); ++d) s[d] = piece_size(s[d], axes_size(mesh, spec[d].axes()));
  return s;
}

int64_t mesh_coordinate(const Mesh& mesh, int pos, int axis) {
  const Shape& sh = mesh.shape();
  int64_t stride = 1;
  for (size_t a = sh.size(); a-- > size_t(axis) + 1;) stride *= sh[a];
  return (pos / stride) % sh[size_t(axis)];
}

int64_t piece_index(const Mesh& mesh, int pos, const std::vector<std::string>& axes) {
  int64_t idx = 0;
  for (const auto& a : axes) idx = idx * mesh.axis_size(a) + mesh_coordinate(mesh, pos, mesh.axis_index(a));
  return idx;
}

Sharding replicated_sharding(const Mesh& mesh) { return NamedSharding(mesh, PartitionSpec()); }

}  // namespace detail

namespace {
std::string quoted_list(const std::vector<std::string>& v) {
  std::string r;
  for (size_t i = 0; i < v.size(); ++i) r += (i ? ", '" : "'") + v[i] + "'";
  return r;
}

void check_axis_sizes(const Shape& shape, const char* op) {
  for (auto d : shape)
    if (d < 1)
      throw ValueError(std::string(op) + ": axis sizes must be positive, got shape " + shape_to_string(shape) +
                       "; give every mesh axis at least one device");
}

// Comparing and printing an empty Mesh or Sharding works; its accessors name the mistake.
const detail::MeshImpl& checked(const std::shared_ptr<const detail::MeshImpl>& impl, const char* accessor) {
  if (!impl)
    throw ValueError(std::string("Mesh::") + accessor +
                     ": this Mesh is empty (default-constructed); make one with make_mesh(shape, axis_names)");
  return *impl;
}
const detail::ShardingImpl& checked(const std::shared_ptr<const detail::ShardingImpl>& impl, const char* accessor) {
  if (!impl)
    throw ValueError(std::string("Sharding::") + accessor +
                     ": this Sharding is empty (default-constructed); make a NamedSharding(mesh, spec) or a "
                     "SingleDeviceSharding(device)");
  return *impl;
}
}  // namespace

Mesh::Mesh(std::vector<Device> devices, Shape shape, std::vector<std::string> axis_names) {
  if (shape.size() != axis_names.size())
    throw ValueError("Mesh: shape " + shape_to_string(shape) + " has " + std::to_string(shape.size()) +
                     " axes but " + std::to_string(axis_names.size()) + " names were given (" +
                     quoted_list(axis_names) + "); give one name per axis");
  std::set<std::string> seen;
  for (const auto& n : axis_names) {
    if (n.empty()) throw ValueError("Mesh: an axis name is empty; name every axis (\"x\", \"y\", ...)");
    if (!seen.insert(n).second)
      throw ValueError("Mesh: the axis name '" + n + "' is used twice in (" + quoted_list(axis_names) +
                       "); give every axis its own name");
  }
  check_axis_sizes(shape, "Mesh");
  detail::checked_size("Mesh", shape);
  if (int64_t(devices.size()) != shape_size(shape))
    throw ValueError("Mesh: shape " + shape_to_string(shape) + " needs " + std::to_string(shape_size(shape)) +
                     " devices but " + std::to_string(devices.size()) + " were given");
  for (size_t i = 0; i < devices.size(); ++i) {
    if (!devices[i].valid()) throw ValueError("Mesh: device " + std::to_string(i) + " is empty (default-constructed)");
    for (size_t j = 0; j < i; ++j)
      if (devices[j] == devices[i])
        throw ValueError("Mesh: device " + devices[i].to_string() + " is listed twice; every device may appear once");
  }
  impl_ = std::make_shared<const detail::MeshImpl>(detail::MeshImpl{std::move(devices), std::move(shape), std::move(axis_names)});
}

const Shape& Mesh::shape() const { return checked(impl_, "shape").shape; }
const std::vector<std::string>& Mesh::axis_names() const { return checked(impl_, "axis_names").names; }
const std::vector<Device>& Mesh::devices() const { return checked(impl_, "devices").devices; }
int64_t Mesh::size() const { return int64_t(checked(impl_, "size").devices.size()); }
int Mesh::axis_index(const std::string& name) const {
  const auto& n = checked(impl_, "axis_index").names;
  auto it = std::find(n.begin(), n.end(), name);
  if (it == n.end())
    throw ValueError("unknown mesh axis '" + name + "': the mesh " + to_string() + " has axes (" + quoted_list(n) +
                     "); use one of them");
  return int(it - n.begin());
}
int64_t Mesh::axis_size(const std::string& name) const { return shape()[size_t(axis_index(name))]; }
std::string Mesh::to_string() const {
  if (!impl_) return "Mesh(<empty>)";
  std::string r = "Mesh(";
  for (size_t i = 0; i < axis_names().size(); ++i)
    r += (i ? ", '" : "'") + axis_names()[i] + "': " + std::to_string(shape()[i]);
  return r + ")";
}
bool Mesh::operator==(const Mesh& o) const {
  if (impl_ == o.impl_) return true;
  if (!impl_ || !o.impl_) return false;
  return impl_->devices == o.impl_->devices && impl_->shape == o.impl_->shape && impl_->names == o.impl_->names;
}

Mesh make_mesh(const Shape& shape, const std::vector<std::string>& axis_names, std::vector<Device> devs) {
  check_axis_sizes(shape, "make_mesh");
  int64_t n = shape_size(shape);
  if (devs.empty()) {
    std::vector<Device> all = devices();
    if (int64_t(all.size()) < n)
      throw ValueError("make_mesh: shape " + shape_to_string(shape) + " needs " + std::to_string(n) +
                       " devices but the job has " + std::to_string(all.size()) +
                       "; start more (TESSEL_CPU_DEVICES=" + std::to_string(n) + ") or use a smaller mesh");
    devs.assign(all.begin(), all.begin() + n);
  }
  return Mesh(std::move(devs), shape, axis_names);
}

std::string PartitionSpec::to_string() const {
  std::string r = "P(";
  for (size_t i = 0; i < entries_.size(); ++i) {
    const auto& a = entries_[i].axes();
    r += i ? ", " : "";
    if (a.empty()) r += "None";
    else if (a.size() == 1) r += "'" + a[0] + "'";
    else r += "(" + quoted_list(a) + ")";
  }
  return r + (entries_.size() == 1 ? ",)" : ")");
}

bool PartitionSpec::equivalent(const PartitionSpec& o, size_t ndim) const {
  for (size_t d = 0; d < std::max({ndim, size(), o.size()}); ++d)
    if (!((*this)[d] == o[d])) return false;
  return true;
}

NamedSharding::NamedSharding(const Mesh& mesh, const PartitionSpec& spec)
    : Sharding(std::make_shared<const detail::ShardingImpl>(detail::ShardingImpl{false, mesh, spec})) {
  if (!mesh.valid()) throw ValueError("NamedSharding: the mesh is empty (default-constructed); make one with make_mesh");
  std::set<std::string> used;
  for (const auto& e : spec.entries())
    for (const auto& a : e.axes()) {
      mesh.axis_index(a);  // throws for an unknown axis
      if (!used.insert(a).second)
        throw ValueError("NamedSharding: the mesh axis '" + a + "' is used twice in " + spec.to_string() +
                         "; an axis can split only one dimension, once");
    }
}

SingleDeviceSharding::SingleDeviceSharding(const Device& device)
    : Sharding(std::make_shared<const detail::ShardingImpl>(
          detail::ShardingImpl{true, Mesh({device}, {}, {}), PartitionSpec()})) {}

bool Sharding::is_single_device() const { return checked(impl_, "is_single_device").single_device; }
const Mesh& Sharding::mesh() const { return checked(impl_, "mesh").mesh; }
const PartitionSpec& Sharding::spec() const { return checked(impl_, "spec").spec; }
const std::vector<Device>& Sharding::device_set() const { return checked(impl_, "device_set").mesh.devices(); }
bool Sharding::is_fully_replicated() const {
  for (const auto& e : checked(impl_, "is_fully_replicated").spec.entries())
    if (detail::axes_size(mesh(), e.axes()) > 1) return false;
  return true;
}
void Sharding::check_rank(size_t rank, const std::string& what) const {
  if (checked(impl_, "check_rank").spec.size() > rank)
    throw ValueError(what + ": the sharding " + to_string() + " has " + std::to_string(spec().size()) +
                     " entries but the array has rank " + std::to_string(rank) +
                     "; give at most one entry per dimension");
}
Shape Sharding::shard_shape(const Shape& global) const {
  check_rank(global.size(), "shard_shape");
  return detail::local_shape(mesh(), spec(), global);
}
std::vector<std::vector<std::pair<int64_t, int64_t>>> Sharding::device_indices(const Shape& global) const {
  check_rank(global.size(), "device_indices");
  std::vector<std::vector<std::pair<int64_t, int64_t>>> r(size_t(mesh().size()));
  for (int pos = 0; pos < int(r.size()); ++pos)
    for (size_t d = 0; d < global.size(); ++d) {
      const auto& axes = spec()[d].axes();
      int64_t L = detail::piece_size(global[d], detail::axes_size(mesh(), axes));
      int64_t start = std::min(global[d], detail::piece_index(mesh(), pos, axes) * L);
      r[size_t(pos)].push_back({start, std::min(global[d], start + L)});
    }
  return r;
}
std::string Sharding::to_string() const {
  if (!impl_) return "Sharding(<empty>)";
  if (impl_->single_device) return "SingleDeviceSharding(" + mesh().devices()[0].to_string() + ")";
  return "NamedSharding(mesh=" + mesh().to_string() + ", spec=" + spec().to_string() + ")";
}
bool Sharding::operator==(const Sharding& o) const {
  if (impl_ == o.impl_) return true;
  if (!impl_ || !o.impl_) return false;
  if (impl_->single_device != o.impl_->single_device || impl_->mesh != o.impl_->mesh) return false;
  size_t n = std::max(spec().size(), o.spec().size());
  return spec().equivalent(o.spec(), n);
}

std::ostream& operator<<(std::ostream& os, const Sharding& s) { return os << s.to_string(); }
std::ostream& operator<<(std::ostream& os, const Mesh& m) { return os << m.to_string(); }
std::ostream& operator<<(std::ostream& os, const PartitionSpec& p) { return os << p.to_string(); }

}  // namespace tessel
