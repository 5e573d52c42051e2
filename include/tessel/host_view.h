#pragma once
// Zero-copy reads of an array's memory, for interoperation (NumPy's buffer protocol,
// DLPack): a read-only view of a computed array held as one buffer on one device of this
// process, with an owner that keeps the buffer alive.
#include <memory>
#include <optional>

#include "tessel/array.h"

namespace tessel {

/// The elements of an array in place: `shape` row-major elements of `dtype` at `data`
/// (C-contiguous, one byte per bool). `owner` keeps the memory alive; the elements never
/// change while the array is not donated (donating it to a jitted call lets that call
/// write into the memory: copy first).
struct HostView {
  const void* data = nullptr;
  Shape shape;
  DType dtype = DType::float32;
  std::shared_ptr<const void> owner;
};

/// Waits for `x` and returns a view of its memory, or nullopt when there is no single
/// buffer to view: a tracer, an empty handle, or an array laid out over several devices
/// or held by another process (read those with to_vector, which assembles a copy).
/// Rethrows the error of a failed computation and the error of a donated array.
TESSEL_API std::optional<HostView> host_view(const Array& x);

}  // namespace tessel
