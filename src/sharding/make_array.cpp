// make_array_from_single_device_arrays (include/tessel/make_array.h; docs/sharding.md): a
// global array from the pieces this process holds, as jax.make_array_from_single_device_arrays.
#include <map>

#include "core/array_impl.h"
#include "core/device_impl.h"
#include "distributed/controller.h"
#include "tessel/make_array.h"
#include "tessel/ops.h"

namespace tessel {

Array make_array_from_single_device_arrays(const Shape& shape, const Sharding& sharding,
                                           const std::vector<Array>& arrays) {
  const std::string op = "make_array_from_single_device_arrays";
  if (!sharding.valid()) throw ValueError(op + ": the sharding is empty (default-constructed)");
  for (int64_t d : shape)
    if (d < 0) throw ShapeError(op + ": negative dimension in shape " + shape_to_string(shape));
  sharding.check_rank(shape.size(), op);
  const std::vector<Device>& devices = sharding.device_set();
  const auto indices = sharding.device_indices(shape);
  const Shape local = sharding.shard_shape(shape);

  // The piece of each device of this process, by its position in the device set.
  std::map<int, size_t> position;  // device id -> position
  for (size_t pos = 0; pos < devices.size(); ++pos) position[devices[pos].id()] = pos;
  std::vector<const Array*> piece_at(devices.size(), nullptr);
  std::optional<DType> dtype;
  for (size_t k = 0; k < arrays.size(); ++k) {
    const Array& a = arrays[k];
    const std::string which = op + ": array " + std::to_string(k);
    if (!a.valid()) throw ValueError(which + " is empty (default-constructed)");
    if (a.is_tracer())
      throw ValueError(which + " is a tracer; assemble concrete arrays outside jit/grad/vmap (inside, use "
                       "with_sharding_constraint)");
    if (detail::as_sharded(a) && a.devices().size() != 1)
      throw ValueError(which + " is laid out over " + std::to_string(a.devices().size()) +
                       " devices; each piece is a single-device array (take them from addressable_shards())");
    const Device dev = a.devices()[0];
    auto it = position.find(dev.id());
    if (it == position.end())
      throw ValueError(which + " is on " + dev.to_string() + ", which is not a device of " + sharding.to_string() +
                       "; pass one array per device of the sharding held by this process");
    if (piece_at[it->second])
      throw ValueError(which + " is a second piece for " + dev.to_string() + "; pass one array per device");
    if (dtype && a.dtype() != *dtype)
      throw DTypeError(which + " has dtype " + dtype_name(a.dtype()) + " but array 0 has " + dtype_name(*dtype) +
                       "; the pieces of one array share its dtype");
    dtype = a.dtype();
    Shape want;
    for (auto& [b, e] : indices[it->second]) want.push_back(e - b);
    if (a.shape() != want)
      throw ShapeError(which + " on " + dev.to_string() + " has shape " + shape_to_string(a.shape()) + ", but " +
                       sharding.to_string() + " gives that device the piece " + shape_to_string(want) +
                       " of the global shape " + shape_to_string(shape));
    piece_at[it->second] = &a;
  }
  const bool driver = distributed::controller::is_driver();
  for (size_t pos = 0; pos < devices.size(); ++pos) {
    const bool local_device = devices[pos].impl()->is_local();
    if (local_device && !piece_at[pos])
      throw ValueError(op + ": no array for " + devices[pos].to_string() + ", a device of " + sharding.to_string() +
                       " in this process; pass one array per device of the sharding that this process holds");
    if (!local_device && driver)
      throw ValueError(op + ": " + devices[pos].to_string() + " belongs to a worker process; on the driver of a "
                       "single-controller job, device_put the whole array with the sharding instead");
  }
  if (!dtype) throw ValueError(op + ": no arrays given and this process holds no device of " + sharding.to_string() +
                               ", so the dtype is unknown");

  // Share each piece's buffer; an uneven last piece is padded to the local shape first.
  std::vector<std::shared_ptr<detail::Buffer>> shards(devices.size());
  for (size_t pos = 0; pos < devices.size(); ++pos) {
    if (!piece_at[pos]) continue;
    Array piece = *piece_at[pos];
    if (piece.shape() != local) {
      std::vector<std::pair<int64_t, int64_t>> widths;
      for (size_t d = 0; d < local.size(); ++d) widths.push_back({0, local[d] - piece.shape()[d]});
      piece = pad(piece, widths);
    }
    shards[pos] = detail::piece_buffers(piece).at(0);
  }
  if (sharding.is_single_device()) return *piece_at[0];
  return Array(std::make_shared<detail::ConcreteArray>(Aval(shape, *dtype), sharding, Aval(local, *dtype),
                                                      std::move(shards)));
}

}  // namespace tessel
