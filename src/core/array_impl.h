#pragma once
// What an Array handle points to: a concrete value (on one device or laid out over several), or a tracer.
#include <memory>
#include <mutex>
#include <span>

#include "core/buffer.h"
#include "core/device_impl.h"
#include "core/remote.h"
#include "tessel/array.h"
#include "tessel/error.h"
#include "tessel/sharding.h"

namespace tessel::detail {

class Trace;

class ArrayImpl {
 public:
  enum class Kind { kConcrete, kTracer };
  ArrayImpl(Aval aval, Kind kind) : aval(std::move(aval)), kind(kind) {}
  virtual ~ArrayImpl() = default;
  bool is_tracer() const { return kind == Kind::kTracer; }
  Aval aval;
  const Kind kind;
};

/// `h` mixed with the shape, dtype and weak type of `av` (keys of caches made of avals).
inline size_t hash_aval(size_t h, const Aval& av) {
  h = h * 31 + size_t(av.dtype) * 2 + size_t(av.weak_type);
  for (auto d : av.shape) h = h * 1000003 + size_t(d);
  return h * 17 + av.shape.size();
}

/// A value (possibly still being computed): its global aval, its sharding, and one buffer
/// per device of the sharding's device set, in the order of `sharding.device_set()`. A value
/// on one device has a SingleDeviceSharding and one buffer holding all of it (the common
/// case, which eager dispatch and jit run without the partitioner). A value laid out over a
/// mesh holds each device's piece in the padded local layout (every piece has `local_aval`'s
/// shape: dimensions that do not divide are rounded up, and the padding of the last pieces
/// holds unspecified values); the buffers of other processes' devices are null.
class ConcreteArray final : public ArrayImpl {
 public:
  /// A value on one device.
  ConcreteArray(Aval aval, DeviceImpl* device, std::shared_ptr<Buffer> buffer, bool committed);
  /// A value laid out by `sharding` (committed: operations keep its layout).
  ConcreteArray(Aval global, Sharding sharding, Aval local_aval, std::vector<std::shared_ptr<Buffer>> shards);

  /// The layout: the device's SingleDeviceSharding for a value on one device.
  const Sharding& sharding() const { return laid_out_ ? laid_out_->sharding : device_->sharding(); }
  /// The shape of every piece (the global aval for a value on one device).
  const Aval& local_aval() const { return laid_out_ ? laid_out_->local_aval : aval; }
  /// The piece buffers by position in `sharding().device_set()`; null for devices of other
  /// processes.
  std::span<const std::shared_ptr<Buffer>> shards() const {
    return laid_out_ ? std::span(laid_out_->shards) : std::span<const std::shared_ptr<Buffer>>(&one_, 1);
  }
  /// True when the whole value is one buffer on one device of this process: eager dispatch
  /// and jit take their single-device path.
  bool on_one_local_device() const { return laid_out_ == nullptr; }
  /// The device of a value on one device (of this process or another); null when laid out.
  DeviceImpl* device() const { return device_; }
  /// The buffer of a value on one local device.
  const std::shared_ptr<Buffer>& buffer() const { return one_; }
  /// Gives the buffer of a value on one local device away, leaving `replacement` (donation).
  std::shared_ptr<Buffer> exchange_buffer(std::shared_ptr<Buffer> replacement) {
    std::swap(one_, replacement);
    return replacement;
  }
  /// The whole value as one buffer on one local device: itself when it is one, else an
  /// assembled copy on the first device of the mesh in this process (made once, on first
  /// use: reading values, printing, concretizing). Throws ValueError naming `what` when this
  /// process's pieces do not make up the whole value (a mesh over processes); on the driver
  /// of a single-controller job the missing pieces are fetched from the workers.
  const ConcreteArray* gathered(const char* what = "reading the value") const;

  /// Placed explicitly (device_put, or laid out over a mesh): operations never move it silently.
  bool committed;
  /// On the driver of a single-controller job: where the pieces of other processes' devices
  /// are kept (their `shards()` entries are null). Null otherwise.
  std::shared_ptr<const RemoteRef> remote;

 private:
  friend Array whole_value(const Array& a, const char* what);
  // A value on one local device keeps only its device and buffer (the common case, made by
  // every eager operation: nothing more to build or free); any other its layout beside.
  struct LaidOut {
    Sharding sharding;
    Aval local_aval;
    std::vector<std::shared_ptr<Buffer>> shards;
    std::once_flag gathered_once;
    std::shared_ptr<ConcreteArray> gathered;
  };
  DeviceImpl* device_ = nullptr;
  std::shared_ptr<Buffer> one_;
  std::unique_ptr<LaidOut> laid_out_;
};

/// A stand-in for a value during a transformation; it belongs to one trace.
class Tracer : public ArrayImpl {
 public:
  Tracer(Aval aval, Trace* trace, uint64_t trace_id)
      : ArrayImpl(std::move(aval), Kind::kTracer), trace(trace), trace_id(trace_id) {}
  Trace* trace;
  uint64_t trace_id;
};

inline ConcreteArray* as_concrete(const Array& a) {
  return a.impl() && a.impl()->kind == ArrayImpl::Kind::kConcrete ? static_cast<ConcreteArray*>(a.impl().get()) : nullptr;
}
/// The value of `a` when it is not on one local device (laid out over several devices, or
/// held by another process): what the partitioner runs; else null.
inline ConcreteArray* as_sharded(const Array& a) {
  ConcreteArray* c = as_concrete(a);
  return c && !c->on_one_local_device() ? c : nullptr;
}
inline Tracer* as_tracer(const Array& a) {
  return a.impl() && a.impl()->is_tracer() ? static_cast<Tracer*>(a.impl().get()) : nullptr;
}
/// The piece buffers of a concrete array by position in its sharding's device set: one for a
/// single-device array; null for devices of other processes.
inline std::vector<std::shared_ptr<Buffer>> piece_buffers(const Array& a) {
  if (auto* c = as_concrete(a)) return {c->shards().begin(), c->shards().end()};
  throw ConcretizationError("piece_buffers: the array is a tracer, not a concrete value");
}
/// Wraps a freshly allocated buffer as an array.
inline Array make_concrete(Aval aval, DeviceImpl* device, std::shared_ptr<Buffer> buffer, bool committed) {
  return Array(std::make_shared<ConcreteArray>(std::move(aval), device, std::move(buffer), committed));
}
/// A rank-0 array on the default device holding `value` (weak-typed if `weak`).
Array scalar_array(const Scalar& value, bool weak);
/// The whole value of `a` on one local device (a laid-out array's assembled copy, see
/// ConcreteArray::gathered), or a ConcretizationError naming `what` if it is a tracer.
const ConcreteArray* require_concrete(const Array& a, const char* what);
/// The same as an Array: `a` itself when it is on one local device.
Array whole_value(const Array& a, const char* what);

}  // namespace tessel::detail
