// host_view: the memory of a single-buffer array, kept alive by its Buffer; and
// wrap_host_memory: an array over memory owned elsewhere (Memory::foreign).
#include "tessel/host_view.h"

#include <cstdio>
#include <string>

#include "core/array_impl.h"
#include "core/buffer.h"
#include "core/device_impl.h"
#include "core/dtype_check.h"
#include "core/shape_check.h"

namespace tessel {

std::optional<HostView> host_view(const Array& x) {
  const detail::ConcreteArray* c = detail::as_concrete(x);
  if (!c || !c->on_one_local_device() || !c->buffer()) return std::nullopt;
  const std::shared_ptr<detail::Buffer>& b = c->buffer();
  b->check_not_donated();
  b->wait();
  return HostView{b->data(), x.shape(), x.dtype(), std::shared_ptr<const void>(b, b->data())};
}

namespace {

std::string address(const void* p) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", p);
  return text;
}

/// Why `byte_strides` are not the row-major strides of `shape` (empty when they are).
std::string stride_problem(const Shape& shape, DType dtype, const std::vector<int64_t>& byte_strides) {
  if (byte_strides.empty()) return "";
  if (byte_strides.size() != shape.size())
    return std::to_string(byte_strides.size()) + " strides were given for rank " + std::to_string(shape.size());
  int64_t expected = int64_t(itemsize(dtype));
  for (size_t k = shape.size(); k-- > 0;) {
    if (shape[k] != 1 && byte_strides[k] != expected)
      return "dimension " + std::to_string(k) + " has a stride of " + std::to_string(byte_strides[k]) +
             " bytes where row-major order needs " + std::to_string(expected);
    expected *= shape[k];
  }
  return "";
}

}  // namespace

Array wrap_host_memory(const void* data, const Shape& shape, DType dtype, std::function<void()> release,
                       const std::vector<int64_t>& byte_strides) {
  detail::checked_dtype(dtype, "wrap_host_memory");
  const size_t n = size_t(detail::checked_size("wrap_host_memory", shape, dtype)) * itemsize(dtype);
  // Named only in errors: jit wraps every NumPy argument, so the success path builds no text.
  auto what = [&] { return shape_to_string(shape) + " of " + dtype_name(dtype); };
  if (std::string why = stride_problem(shape, dtype, byte_strides); !why.empty())
    throw ValueError("wrap_host_memory: the memory of " + what() + " is not C-contiguous (" + why +
                     "); copy it into row-major order first (e.g. numpy.ascontiguousarray) and use Array::from_bytes");
  if (n == 0) {
    if (release) release();
    return Array::from_bytes(nullptr, shape, dtype);
  }
  if (!data)
    throw ValueError("wrap_host_memory: data is a null pointer for " + what() + "; pass the address of " +
                     std::to_string(shape_size(shape)) + " elements in row-major order");
  const size_t align = is_complex(dtype) ? itemsize(dtype) / 2 : itemsize(dtype);
  if (reinterpret_cast<uintptr_t>(data) % align != 0)
    throw ValueError("wrap_host_memory: data " + address(data) + " is not aligned to " + std::to_string(align) +
                     " bytes, as " + dtype_name(dtype) + " elements need; copy it with Array::from_bytes or " +
                     "allocate aligned memory");
  detail::DeviceImpl* dev = detail::default_device();
  auto buffer = detail::Buffer::deferred(n, dev);
  buffer->attach(detail::Memory::foreign(const_cast<void*>(data), std::move(release)));
  buffer->set_ready();
  return detail::make_concrete(Aval(shape, dtype, false), dev, std::move(buffer), false);
}

}  // namespace tessel
