#pragma once
// Zero-copy interoperation (NumPy's buffer protocol, DLPack) both ways: a read-only view of
// a computed array held as one buffer on one device of this process, with an owner that
// keeps the buffer alive; and an array over memory owned elsewhere, with a release callback.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

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

/// An array over memory owned elsewhere (a NumPy array, another library's tensor), without a
/// copy: `shape` row-major elements of `dtype` at `data` on the default device. `release`
/// runs once, on any thread, when the last array or view using the memory is gone (keep
/// the owner alive until then; it must not throw); an empty one means the memory outlives
/// every array. tessel arrays are immutable: the caller must not write to the memory while
/// it is wrapped (computations may read it at any time until `release`). tessel never
/// writes to it either: donating such an array to a jitted call releases it instead of
/// reusing it for a result.
///
/// `byte_strides` (empty: row-major) must be the row-major strides (dimensions of size 1
/// may have any stride) and `data` aligned to the element's size (to its components' for
/// complex dtypes), else a tessel::ValueError says so: copy those with Array::from_bytes
/// after making them contiguous. A null `data` is allowed for zero elements only (release
/// then runs at once). Memory aligned to 64 bytes (as tessel's own buffers) runs the
/// vectorized kernels at their best.
TESSEL_API Array wrap_host_memory(const void* data, const Shape& shape, DType dtype, std::function<void()> release,
                                  const std::vector<int64_t>& byte_strides = {});

}  // namespace tessel
