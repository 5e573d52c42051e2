#pragma once
// What an Array handle points to: a concrete value on a device, or a tracer.
#include <memory>
#include <mutex>

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
  enum class Kind { kConcrete, kSharded, kTracer };
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

/// A value held in a device buffer (possibly still being computed).
class ConcreteArray final : public ArrayImpl {
 public:
  ConcreteArray(Aval aval, DeviceImpl* device, std::shared_ptr<Buffer> buffer, bool committed)
      : ArrayImpl(std::move(aval), Kind::kConcrete), device(device), buffer(std::move(buffer)), committed(committed) {}
  DeviceImpl* device;
  std::shared_ptr<Buffer> buffer;
  /// Placed explicitly with device_put: operations never move it silently.
  bool committed;
};

/// A value split (or replicated) over the devices of a mesh: one buffer per mesh device,
/// row-major over the mesh, each holding that device's piece in the padded local layout
/// (every piece has `local_aval`'s shape: dimensions that do not divide are rounded up, and
/// the padding of the last pieces holds unspecified values). On a mesh that spans
/// processes, the buffers of other processes' devices are null. src/sharding/ makes them.
class ShardedArray final : public ArrayImpl {
 public:
  ShardedArray(Aval global, Sharding sharding, Aval local_aval, std::vector<std::shared_ptr<Buffer>> shards)
      : ArrayImpl(std::move(global), Kind::kSharded), sharding(std::move(sharding)), local_aval(std::move(local_aval)),
        shards(std::move(shards)) {}
  Sharding sharding;
  Aval local_aval;
  std::vector<std::shared_ptr<Buffer>> shards;
  /// On the driver of a single-controller job: where the pieces of other processes' devices
  /// are kept (their `shards` entries are null). Null otherwise.
  std::shared_ptr<const RemoteRef> remote;
  /// The whole array assembled on the first device of the mesh in this process (made once,
  /// on first use: reading values, printing, concretizing). Throws ValueError naming `what`
  /// when this process's pieces do not make up the whole value (a mesh over processes); on
  /// the driver of a single-controller job the missing pieces are fetched from the workers.
  ConcreteArray* gathered(const char* what = "reading the value") const;

 private:
  mutable std::once_flag gathered_once_;
  mutable std::shared_ptr<ConcreteArray> gathered_;
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
inline ShardedArray* as_sharded(const Array& a) {
  return a.impl() && a.impl()->kind == ArrayImpl::Kind::kSharded ? static_cast<ShardedArray*>(a.impl().get()) : nullptr;
}
inline Tracer* as_tracer(const Array& a) {
  return a.impl() && a.impl()->is_tracer() ? static_cast<Tracer*>(a.impl().get()) : nullptr;
}
/// The piece buffers of a concrete array by position in its sharding's device set: one for a
/// single-device array; null for devices of other processes.
inline std::vector<std::shared_ptr<Buffer>> piece_buffers(const Array& a) {
  if (auto* s = as_sharded(a)) return s->shards;
  if (auto* c = as_concrete(a)) return {c->buffer};
  throw ConcretizationError("piece_buffers: the array is a tracer, not a concrete value");
}
/// Wraps a freshly allocated buffer as an array.
inline Array make_concrete(Aval aval, DeviceImpl* device, std::shared_ptr<Buffer> buffer, bool committed) {
  return Array(std::make_shared<ConcreteArray>(std::move(aval), device, std::move(buffer), committed));
}
/// A rank-0 array on the default device holding `value` (weak-typed if `weak`).
Array scalar_array(const Scalar& value, bool weak);
/// The concrete value of `a` (a sharded array's assembled copy), or a ConcretizationError
/// naming `what` if it is a tracer.
ConcreteArray* require_concrete(const Array& a, const char* what);
/// `a` as a plain single-device array when it is a sharded array held whole by one local
/// device (what a worker keeps, so that operations on it take the single-device path);
/// otherwise `a` itself.
Array plain_if_single_device(const Array& a);

}  // namespace tessel::detail
