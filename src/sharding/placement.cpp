// Placement: device_put (to a device, or laid out by a sharding), the device_put primitive,
// and the pieces of an array this process holds (addressable_shards). Laying a value out
// copies its pieces to the devices of this process (core/pieces.h); on the driver of a
// single-controller job the workers get theirs by message.
#include <cstring>

#include "core/array_impl.h"
#include "core/pieces.h"
#include "distributed/controller.h"
#include "ir/serialize.h"
#include "ir/trace.h"
#include "ops/rule_util.h"
#include "sharding/placement.h"
#include "tessel/distributed.h"
#include "tessel/ops.h"

namespace tessel {
namespace detail {
namespace {

using ir::Batched;
using ir::BatchAxis;
using ir::KernelCall;
using ir::Params;

// On the driver of a single-controller job: sends the value of `x` to the workers that own
// devices of `out`'s sharding; each keeps its own pieces under a fresh id.
void ship_pieces(const Array& x, ConcreteArray& out) {
  namespace ctl = distributed::controller;
  std::vector<int> procs = ctl::remote_processes(out.sharding().device_set());
  if (procs.empty()) return;
  const uint64_t id = ctl::new_id();
  ir::Writer w;
  w.u64(id);
  ir::write_sharding(w, out.sharding());
  ir::write_array(w, x);
  ctl::post(procs, "array.put", w.bytes());
  out.remote = ctl::make_ref(id, std::move(procs));
}

// ---- device_put[device]: eagerly a copy into the target device's memory, committed there;
// in a program an identity-like equation that records the placement ----

DeviceImpl* device_by_id(int64_t id) {
  for (auto* d : local_device_impls())
    if (d->id() == id) return d;
  throw ValueError("device_put: there is no local device with id " + std::to_string(id) + " (this process has " +
                   std::to_string(local_device_impls().size()) + "; see TESSEL_CPU_DEVICES)");
}

std::vector<Aval> device_put_aval(std::span<const Aval> ins, const Params& p) {
  device_by_id(p.get_int("device"));
  return {ins[0]};
}

void device_put_kernel(const KernelCall& c) {
  if (c.outs[0] != c.ins[0]) std::memcpy(c.outs[0], c.ins[0], c.out_avals[0].nbytes());
}

std::vector<Array> device_put_eager(std::span<const Array> ins, const Params& p) {
  const ConcreteArray* src = require_concrete(ins[0], "device_put");
  DeviceImpl* dev = device_by_id(p.get_int("device"));
  // Arrays are immutable, so an array already on the device shares its buffer.
  if (src->device() == dev) return {make_concrete(src->aval, dev, src->buffer(), true)};
  auto buf = Buffer::allocate(src->aval.nbytes(), dev, &src->aval);
  dev->stream().enqueue([in = src->buffer(), buf] {
    try {
      in->wait();
      if (buf->nbytes()) std::memcpy(buf->data(), in->data(), buf->nbytes());
      buf->set_ready();
    } catch (...) {
      buf->set_error(std::current_exception());
    }
  });
  return {make_concrete(src->aval, dev, std::move(buf), true)};
}

// Transformations see device_put as the identity: tangents are placed like the primal,
// cotangents pass through (they follow their consumers' placement), batching keeps the dim.
std::vector<Array> device_put_transpose(const ir::Primitive&, std::span<const Array> cts, std::span<const Array>,
                                        std::span<const Aval>, const Params&) {
  return {cts[0]};
}

Batched device_put_batch(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                         const BatchAxis&, const Params& p) {
  return {{bind1(self, {ins[0]}, p)}, {dims[0]}};
}

}  // namespace

const ir::Primitive& device_put_p = ir::register_primitive({
    .name = "device_put", .arity = {1, 1}, .abstract_eval = device_put_aval, .cpu_kernel = device_put_kernel,
    .eager_impl = device_put_eager, .jvp = ops::jvp_linear, .transpose = device_put_transpose,
    .batch = device_put_batch});

Array split_array(const Array& x, const Sharding& s) {
  Array out = split_into_pieces(x, s);
  if (distributed::controller::is_driver()) ship_pieces(x, *as_concrete(out));
  return out;
}

}  // namespace detail

std::vector<Shard> Array::addressable_shards() const {
  std::vector<Shard> r;
  const detail::ConcreteArray* s = detail::as_concrete(*this);
  if (!s) s = detail::require_concrete(*this, "addressable_shards");  // throws: empty or a tracer
  if (s->on_one_local_device()) {
    Shard one{device(), {}, *this};
    for (auto d : shape()) one.index.push_back({0, d});
    return {one};
  }
  auto indices = s->sharding().device_indices(shape());
  for (size_t pos = 0; pos < s->shards().size(); ++pos) {
    Device dev = s->sharding().device_set()[pos];
    if (!s->shards()[pos]) continue;  // a device of another process
    Array piece = detail::make_concrete(s->local_aval(), dev.impl(), s->shards()[pos], true);
    Shape start(size_t(ndim()), 0), limit;
    for (auto& [b, e] : indices[pos]) limit.push_back(e - b);
    if (limit != s->local_aval().shape) piece = slice(piece, start, limit);
    r.push_back(Shard{dev, indices[pos], piece});
  }
  return r;
}



Array device_put(const Array& x, const Device& device) {
  if (!device.valid()) throw ValueError("device_put: the target Device is empty (default-constructed)");
  // An array laid out over devices is assembled first (on the first device of its mesh).
  if (auto* s = detail::as_sharded(x)) {
    if (!device.impl()->is_local() && s->sharding() == SingleDeviceSharding(device)) return x;
    return device_put(detail::whole_value(x, "device_put"), device);
  }
  // The driver of a single-controller job places values on workers' devices by sending them.
  if (!device.impl()->is_local() && !x.is_tracer() && !detail::tracing_active() &&
      distributed::mode() == distributed::Mode::single_controller)
    return device_put(x, SingleDeviceSharding(device));
  return detail::bind1(detail::device_put_p, {x}, ir::Params{{"device", int64_t(device.id())}});
}

Array device_put(const Array& x, const Sharding& s) {
  if (!s.valid()) throw ValueError("device_put: the sharding is empty (default-constructed)");
  if (!x.valid()) throw ValueError("device_put: the Array is empty (default-constructed)");
  if (x.is_tracer() || detail::tracing_active()) return with_sharding_constraint(x, s);
  s.check_rank(size_t(x.ndim()), "device_put");
  if (s.is_single_device() && s.device_set()[0].impl()->is_local()) return device_put(x, s.device_set()[0]);
  if (auto* sh = detail::as_sharded(x)) {
    if (sh->sharding() == s) return x;
    if (sh->sharding().mesh() != s.mesh())  // another mesh: through one device
      return detail::split_array(detail::whole_value(x, "device_put"), s);
    return with_sharding_constraint(x, s);  // a partitioned program of one constraint: collectives
  }
  return detail::split_array(x, s);
}

}  // namespace tessel
