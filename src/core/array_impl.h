#pragma once
// What an Array handle points to: a concrete value on a device, or a tracer.
#include <memory>

#include "core/buffer.h"
#include "core/device_impl.h"
#include "tessel/array.h"

namespace tessel::detail {

class Trace;

class ArrayImpl {
 public:
  explicit ArrayImpl(Aval aval) : aval(std::move(aval)) {}
  virtual ~ArrayImpl() = default;
  virtual bool is_tracer() const = 0;
  Aval aval;
};

/// A value held in a device buffer (possibly still being computed).
class ConcreteArray final : public ArrayImpl {
 public:
  ConcreteArray(Aval aval, DeviceImpl* device, std::shared_ptr<Buffer> buffer, bool committed)
      : ArrayImpl(std::move(aval)), device(device), buffer(std::move(buffer)), committed(committed) {}
  bool is_tracer() const override { return false; }
  DeviceImpl* device;
  std::shared_ptr<Buffer> buffer;
  /// Placed explicitly with device_put: operations never move it silently.
  bool committed;
};

/// A stand-in for a value during a transformation; it belongs to one trace.
class Tracer : public ArrayImpl {
 public:
  Tracer(Aval aval, Trace* trace, uint64_t trace_id) : ArrayImpl(std::move(aval)), trace(trace), trace_id(trace_id) {}
  bool is_tracer() const override { return true; }
  Trace* trace;
  uint64_t trace_id;
};

inline ConcreteArray* as_concrete(const Array& a) {
  return a.impl() && !a.impl()->is_tracer() ? static_cast<ConcreteArray*>(a.impl().get()) : nullptr;
}
inline Tracer* as_tracer(const Array& a) {
  return a.impl() && a.impl()->is_tracer() ? static_cast<Tracer*>(a.impl().get()) : nullptr;
}
/// Wraps a freshly allocated buffer as an array.
inline Array make_concrete(Aval aval, DeviceImpl* device, std::shared_ptr<Buffer> buffer, bool committed) {
  return Array(std::make_shared<ConcreteArray>(std::move(aval), device, std::move(buffer), committed));
}
/// A rank-0 array on the default device holding `value` (weak-typed if `weak`).
Array scalar_array(const Scalar& value, bool weak);
/// The concrete value of `a`, or a ConcretizationError naming `what` if it is a tracer.
ConcreteArray* require_concrete(const Array& a, const char* what);

}  // namespace tessel::detail
