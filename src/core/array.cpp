#include <cmath>
#include <cstring>
#include <sstream>

#include "core/array_format.h"
#include "core/array_impl.h"
#include "core/dtype_check.h"
#include "core/shape_check.h"
#include "tessel/array.h"

namespace tessel {
namespace detail {

ConcreteArray::ConcreteArray(Aval aval, DeviceImpl* device, std::shared_ptr<Buffer> buffer, bool committed)
    : ArrayImpl(std::move(aval), Kind::kConcrete), committed(committed), device_(device), one_(std::move(buffer)) {}

ConcreteArray::ConcreteArray(Aval global, Sharding sharding, Aval local_aval, std::vector<std::shared_ptr<Buffer>> shards)
    : ArrayImpl(std::move(global), Kind::kConcrete), committed(true) {
  if (sharding.is_single_device()) device_ = sharding.device_set()[0].impl();
  if (device_ && shards.at(0)) {  // whole on a local device: kept like a value made there
    one_ = std::move(shards[0]);
    return;
  }
  laid_out_ = std::make_unique<LaidOut>();
  laid_out_->sharding = std::move(sharding);
  laid_out_->local_aval = std::move(local_aval);
  laid_out_->shards = std::move(shards);
}

const ConcreteArray* require_concrete(const Array& a, const char* what) {
  if (!a.valid()) throw ValueError(std::string(what) + ": the Array is empty (default-constructed)");
  if (auto* c = as_concrete(a)) {
    if (!c->on_one_local_device()) return c->gathered(what);
    c->buffer()->check_not_donated();  // (the common case, kept out of the call above)
    return c;
  }
  throw ConcretizationError(std::string(what) + ": the array " + a.aval().to_string() +
                            " is abstract here (it is traced by jit or another transformation), so its value is "
                            "not known yet. Compute with it as an Array, or move the use outside the traced "
                            "function (or mark the argument static).");
}

Array scalar_array(const Scalar& value, bool weak) {
  auto buf = Buffer::allocate(itemsize(value.dtype()), default_device());
  value.store(buf->data());
  buf->set_ready();
  return make_concrete(Aval({}, value.dtype(), weak), default_device(), std::move(buf), false);
}

}  // namespace detail

std::string shape_to_string(const Shape& s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + (s.size() == 1 ? ",)" : ")");
}

int64_t shape_size(const Shape& s) {
  int64_t n = 1;
  for (auto d : s)
    if (__builtin_mul_overflow(n, d, &n))  // (shapes that entered through detail::checked_size never do)
      throw ShapeError("shape_size: the sizes of shape " + shape_to_string(s) + " multiply to more than a 64-bit count holds");
  return n;
}

std::string ShapeDtype::to_string() const {
  std::string s = dtype_short_name(dtype);
  s += "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]" + (weak_type ? "{weak}" : "");
}

std::ostream& operator<<(std::ostream& os, const ShapeDtype& a) { return os << a.to_string(); }

Array::Array(double v) : Array(detail::scalar_array(Scalar(v), true)) {}
Array::Array(float v) : Array(detail::scalar_array(Scalar(v), true)) {}
Array::Array(int v) : Array(detail::scalar_array(Scalar(v), true)) {}
Array::Array(int64_t v) : Array(detail::scalar_array(Scalar(v), true)) {}
Array::Array(bool v) : Array(detail::scalar_array(Scalar(v), true)) {}
Array::Array(complex64_t v) : Array(detail::scalar_array(Scalar(v), true)) {}
Array::Array(Scalar v) : Array(detail::scalar_array(v, false)) {}

Array Array::from_host(const void* data, const Shape& shape, DType dtype, bool weak) {
  size_t n = size_t(detail::checked_size("Array", shape, dtype)) * itemsize(dtype);
  auto* dev = detail::default_device();
  const Aval aval(shape, dtype, weak);
  auto buf = detail::Buffer::allocate(n, dev, &aval);
  if (n) std::memcpy(buf->data(), data, n);
  buf->set_ready();
  return detail::make_concrete(Aval(shape, dtype, weak), dev, std::move(buf), false);
}

Array Array::from_bytes(const void* data, const Shape& shape, DType dtype) {
  detail::checked_dtype(dtype, "Array::from_bytes");
  detail::checked_size("Array", shape, dtype);
  if (!data && shape_size(shape) != 0)
    throw ValueError("Array::from_bytes: data is a null pointer for shape " + shape_to_string(shape) + " of " +
                     dtype_name(dtype) + "; pass the address of " + std::to_string(shape_size(shape)) +
                     " elements in row-major order");
  return from_host(data, shape, dtype, false);
}

static const detail::ArrayImpl& checked(const std::shared_ptr<detail::ArrayImpl>& p) {
  if (!p) throw ValueError("Array: this Array is empty (default-constructed); assign it a value first");
  return *p;
}

const Shape& Array::shape() const { return checked(impl_).aval.shape; }
DType Array::dtype() const { return checked(impl_).aval.dtype; }
bool Array::weak_type() const { return checked(impl_).aval.weak_type; }
ShapeDtype Array::aval() const { return checked(impl_).aval; }
const ShapeDtype& Array::aval_ref() const { return checked(impl_).aval; }
bool Array::is_tracer() const { return checked(impl_).is_tracer(); }

int64_t Array::dim(int64_t axis) const {
  int64_t n = ndim();
  if (axis < -n || axis >= n)
    throw IndexError("dim: axis " + std::to_string(axis) + " is out of range for an array of rank " +
                     std::to_string(n));
  return shape()[size_t(axis < 0 ? axis + n : axis)];
}

// A concrete value, or a ConcretizationError naming `what`: the handle accessors that need
// no whole copy (devices, readiness) work on its pieces.
static detail::ConcreteArray* value_of(const Array& a, const char* what) {
  if (auto* c = detail::as_concrete(a)) {
    if (c->on_one_local_device()) c->buffer()->check_not_donated();
    return c;
  }
  return const_cast<detail::ConcreteArray*>(detail::require_concrete(a, what));  // throws: empty or a tracer
}

Sharding sharding_of(const Array& x) { return value_of(x, "sharding")->sharding(); }
Sharding Array::sharding() const { return sharding_of(*this); }
std::vector<Device> Array::devices() const { return sharding_of(*this).device_set(); }

Device Array::device() const {
  const detail::ConcreteArray* c = value_of(*this, "device");
  if (!c->sharding().is_single_device())
    throw ValueError("device: the array " + aval().to_string() + " is laid out over " +
                     std::to_string(c->shards().size()) + " devices (" + c->sharding().to_string() +
                     "); use sharding(), devices() or addressable_shards()");
  return Device(c->device());
}

const Array& Array::block_until_ready() const {
  const detail::ConcreteArray* c = value_of(*this, "block_until_ready");
  for (auto& b : c->shards())
    if (b) b->wait();  // null: a device of another process
  if (const detail::RemotePieces* r = c->remote ? detail::remote_pieces() : nullptr) r->wait(*c);
  return *this;
}

bool Array::is_ready() const {
  const detail::ConcreteArray* c = value_of(*this, "is_ready");
  for (auto& b : c->shards())
    if (b && !b->ready()) return false;
  return true;
}

void Array::read(DType as, void* out) const {
  const auto* c = detail::require_concrete(*this, "to_vector");
  c->buffer()->wait();
  const void* src = c->buffer()->data();
  size_t n = size_t(size());
  if (as == dtype()) {
    std::memcpy(out, src, n * itemsize(as));
    return;
  }
  visit_dtype(dtype(), [&](auto zs) {
    using S = decltype(zs);
    visit_dtype(as, [&](auto zd) {
      using D = decltype(zd);
      const S* s = static_cast<const S*>(src);
      D* d = static_cast<D*>(out);
      for (size_t i = 0; i < n; ++i) d[i] = convert_value<D>(s[i]);
    });
  });
}

void Array::host_out_of_memory(const char* op, size_t item_bytes) const {
  throw ResourceExhaustedError(std::string(op) + ": out of host memory for a copy of the array " + aval().to_string() +
                               " (" + std::to_string(size_t(size()) * item_bytes) +
                               " bytes); read a slice of it at a time, or free memory you no longer need");
}

Scalar Array::scalar() const {
  if (size() != 1)
    throw ShapeError("scalar: the array has shape " + shape_to_string(shape()) + "; a scalar needs exactly one element");
  const auto* c = detail::require_concrete(*this, "item");
  c->buffer()->wait();
  return Scalar::load(dtype(), c->buffer()->data());
}

std::string Array::to_string() const { return detail::array_to_string(*this, 1000); }

std::ostream& operator<<(std::ostream& os, const Array& a) { return os << a.to_string(); }

}  // namespace tessel
