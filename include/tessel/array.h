#pragma once
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <new>
#include <optional>
#include <ostream>
#include <string>
#include <variant>
#include <type_traits>
#include <vector>

#include "tessel/device.h"
#include "tessel/dtype.h"
#include "tessel/error.h"
#include "tessel/export.h"

namespace tessel {

/// Array dimensions, outermost first.
using Shape = std::vector<int64_t>;

/// Marks an absent value: an open slice bound, an unbatched vmap argument, a replicated
/// dimension of a partition spec.
inline constexpr std::nullopt_t none = std::nullopt;

TESSEL_API std::string shape_to_string(const Shape& s);  ///< "(3, 2)"
TESSEL_API int64_t shape_size(const Shape& s);

/// Shape, dtype and weak-typedness of an array, without data (jax.ShapeDtypeStruct; the
/// abstract value that tracing and abstract evaluation work with).
struct TESSEL_API ShapeDtype {
  Shape shape;
  DType dtype = DType::float32;
  /// True for values that came from C++ scalars: they take the dtype of what they meet.
  bool weak_type = false;
  ShapeDtype() = default;
  ShapeDtype(Shape s, DType d, bool weak = false) : shape(std::move(s)), dtype(d), weak_type(weak) {}
  int64_t ndim() const { return int64_t(shape.size()); }
  int64_t size() const { return shape_size(shape); }
  size_t nbytes() const { return size_t(size()) * itemsize(dtype); }
  /// "f32[3,2]"
  std::string to_string() const;
  bool operator==(const ShapeDtype& o) const {
    return shape == o.shape && dtype == o.dtype && weak_type == o.weak_type;
  }
  /// Same shape and dtype, ignoring weak_type.
  bool same_type(const ShapeDtype& o) const { return shape == o.shape && dtype == o.dtype; }
};
using Aval = ShapeDtype;

/// A Python-style slice `start:stop:step`; `ts::none` leaves a bound open. Negative
/// bounds count from the end.
struct Slice {
  std::optional<int64_t> start, stop, step;
  Slice(std::optional<int64_t> start_ = std::nullopt, std::optional<int64_t> stop_ = std::nullopt,
        std::optional<int64_t> step_ = std::nullopt)
      : start(start_), stop(stop_), step(step_) {}
};
/// Inserts a new axis of size 1 (numpy's `None` in an index).
struct NewAxis {};
inline constexpr NewAxis newaxis{};
/// Stands for as many full slices as needed (numpy's `...`).
struct Ellipsis {};
inline constexpr Ellipsis ellipsis{};

class Array;
class Sharding;
struct Shard;
namespace detail {
class ArrayImpl;
struct IndexItem;
}  // namespace detail

/// One item of an index expression: an integer, a Slice, newaxis, ellipsis, or an integer
/// (or boolean-free) index array for gather.
class TESSEL_API Index {
 public:
  Index(int v) : v_(int64_t(v)) {}  // NOLINT
  Index(int64_t v) : v_(v) {}       // NOLINT
  Index(Slice s) : v_(s) {}         // NOLINT
  Index(NewAxis) : v_(NewAxis{}) {} // NOLINT
  Index(Ellipsis) : v_(Ellipsis{}) {}  // NOLINT
  Index(const Array& a);            // NOLINT
  const auto& value() const { return v_; }

 private:
  std::variant<int64_t, Slice, NewAxis, Ellipsis, std::shared_ptr<detail::ArrayImpl>> v_;
};

/// What an indexing operation does with out-of-bounds indices: JAX's `mode=` and
/// `fill_value=` arguments of jnp.take, jnp.take_along_axis and `x.at[i]` (docs/arrays.md).
struct IndexOptions {
  /// "fill" (reads give fill_value, updates are dropped; "drop" is the same), "clip"
  /// (clamp into range), "wrap" (modulo the axis size) or "promise_in_bounds" (the caller
  /// guarantees the indices are in range). Empty picks the operation's JAX default.
  std::string mode = {};
  /// The value "fill" reads give. Default: NaN for floating and complex dtypes, the minimum
  /// for signed integers, the maximum for unsigned integers, true for bool (as JAX).
  std::optional<Scalar> fill_value = std::nullopt;
};

/// The proxy that `x.at(index)` returns: functional indexed updates like JAX's `x.at[i]`.
/// Negative indices count from the end. Out-of-bounds indices follow `options.mode`: by
/// default get() clamps them (like `x[index]`) and the updates drop them, as in JAX.
class TESSEL_API AtProxy {
 public:
  AtProxy(const Array& x, std::vector<Index> index);
  Array get(const IndexOptions& options = {}) const;                ///< x[index]
  Array set(const Array& v, const IndexOptions& options = {}) const;  ///< x with x[index] = v
  Array add(const Array& v, const IndexOptions& options = {}) const;  ///< x with x[index] += v
  Array mul(const Array& v, const IndexOptions& options = {}) const;  ///< x with x[index] *= v
  Array min(const Array& v, const IndexOptions& options = {}) const;  ///< x with x[index] = min(x[index], v)
  Array max(const Array& v, const IndexOptions& options = {}) const;  ///< x with x[index] = max(x[index], v)

 private:
  std::shared_ptr<detail::ArrayImpl> x_;
  std::vector<Index> index_;
};

/// An immutable n-dimensional array. Concrete arrays live on a device and are computed
/// asynchronously (operations return at once; `block_until_ready` waits); under a
/// transformation the same type is a tracer, so user functions are written once.
class TESSEL_API Array {
 public:
  /// An empty handle (no value); most operations on it throw.
  Array() = default;
  /// A rank-0 weak-typed array from a C++ scalar: `double` gives weak float64, `float` weak
  /// float32, `int` weak int32, `int64_t` weak int64. Weak values take the dtype of the
  /// arrays they meet (`x_f32 * 2.0` is float32), as Python scalars do in JAX.
  Array(double v);   // NOLINT: implicit so that `x * 2.0` reads naturally
  Array(float v);    // NOLINT
  Array(int v);      // NOLINT
  Array(int64_t v);  // NOLINT
  Array(bool v);     // NOLINT
  Array(complex64_t v);  // NOLINT
  /// A rank-0 array of a given dtype (strong type).
  Array(Scalar v);  // NOLINT
  /// A 1-D array of the initializer's element type (numbers, not arrays: a braced list of
  /// arrays stays a list, so that block({{a, b}, {c, d}}) picks its nested overload).
  template <class V>
    requires(!std::is_same_v<V, Array>)
  Array(std::initializer_list<V> values) : Array(std::vector<V>(values)) {}
  /// A 2-D array from nested initializer lists (rows must have equal length).
  template <class V>
    requires(!std::is_same_v<V, Array>)
  Array(std::initializer_list<std::initializer_list<V>> rows);
  /// An array of `shape` (default: 1-D of values.size()) holding `values` in row-major order.
  template <class V> explicit Array(const std::vector<V>& values, Shape shape = {});
  /// An array of shape/dtype from raw row-major bytes of that dtype.
  static Array from_bytes(const void* data, const Shape& shape, DType dtype);

  const Shape& shape() const;
  DType dtype() const;
  bool weak_type() const;
  ShapeDtype aval() const;
  /// The aval without a copy (valid while the array lives).
  const ShapeDtype& aval_ref() const;
  int64_t ndim() const { return int64_t(shape().size()); }
  int64_t size() const { return shape_size(shape()); }
  /// Size of dimension `axis` (negative counts from the end).
  int64_t dim(int64_t axis) const;
  size_t nbytes() const { return size_t(size()) * itemsize(dtype()); }
  bool valid() const { return impl_ != nullptr; }
  /// True when this array is a tracer of a transformation (no concrete value).
  bool is_tracer() const;

  /// The device holding the array (throws for tracers and for arrays laid out over
  /// several devices).
  Device device() const;
  /// How the array is laid out over devices (include tessel/sharding.h). Throws for tracers.
  Sharding sharding() const;
  /// The devices holding a piece of the array, in mesh order.
  std::vector<Device> devices() const;
  /// The pieces held by this process's devices (jax.Array.addressable_shards).
  std::vector<Shard> addressable_shards() const;
  /// Waits until the value is computed; rethrows an error the computation raised.
  const Array& block_until_ready() const;
  /// True when the value is computed (never blocks).
  bool is_ready() const;
  /// The elements in row-major order, converted to V.
  template <class V> std::vector<V> to_vector() const;
  /// The single element of a size-1 array, converted to V.
  template <class V> V item() const;
  /// The single element as a Scalar of the array's dtype.
  Scalar scalar() const;
  /// NumPy-style text: `[[1. 2.]\n [3. 4.]]`.
  std::string to_string() const;

  /// Indexed read `x[i, 1:3]` → `x.index({i, Slice(1, 3)})`. Out-of-bounds integers and
  /// index-array entries are clamped into range, as in JAX (`x.at(i).get` picks other modes).
  Array operator[](std::vector<Index> index) const;
  Array index(std::vector<Index> index) const { return (*this)[std::move(index)]; }
  /// Functional indexed update: `x.at({Slice(1, -1)}).set(y)`.
  AtProxy at(std::vector<Index> index) const { return AtProxy(*this, std::move(index)); }
  /// Element-type conversion (jnp's astype).
  Array astype(DType d) const;
  Array reshape(Shape s) const;
  /// Transpose (reverses the axes, like NumPy's `.T`).
  Array T() const;

  /// Internal handle (for the runtime and transformations).
  const std::shared_ptr<detail::ArrayImpl>& impl() const { return impl_; }
  explicit Array(std::shared_ptr<detail::ArrayImpl> impl) : impl_(std::move(impl)) {}

 private:
  void read(DType as, void* out) const;
  /// Throws ResourceExhaustedError: no host memory for `op`'s copy of this array.
  [[noreturn]] void host_out_of_memory(const char* op, size_t item_bytes) const;
  static Array from_host(const void* data, const Shape& shape, DType dtype, bool weak);
  std::shared_ptr<detail::ArrayImpl> impl_;
};

TESSEL_API std::ostream& operator<<(std::ostream& os, const Array& a);
TESSEL_API std::ostream& operator<<(std::ostream& os, const ShapeDtype& a);

template <class V> Array::Array(const std::vector<V>& values, Shape shape) {
  if constexpr (std::is_same_v<V, bool>) {
    std::vector<uint8_t> b(values.begin(), values.end());
    *this = Array(b, shape).astype(DType::bool_);
  } else {
    if (shape.empty()) shape = {int64_t(values.size())};
    if (shape_size(shape) != int64_t(values.size()))
      throw ShapeError("Array: " + std::to_string(values.size()) + " values cannot fill shape " +
                       shape_to_string(shape) + "; pass a shape whose sizes multiply to " +
                       std::to_string(values.size()));
    using S = std::conditional_t<std::is_same_v<V, long long>, int64_t,
                                 std::conditional_t<std::is_same_v<V, unsigned long long>, uint64_t, V>>;
    *this = from_host(values.data(), shape, dtype_of<S>(), false);
  }
}

template <class V>
  requires(!std::is_same_v<V, Array>)
Array::Array(std::initializer_list<std::initializer_list<V>> rows) {
  std::vector<V> flat;
  int64_t ncols = rows.size() ? int64_t(rows.begin()->size()) : 0;
  for (const auto& r : rows) {
    if (int64_t(r.size()) != ncols)
      throw ShapeError("Array: nested initializer rows have different lengths (" + std::to_string(ncols) +
                       " and " + std::to_string(r.size()) + "); every row needs the same length");
    flat.insert(flat.end(), r.begin(), r.end());
  }
  *this = Array(flat, Shape{int64_t(rows.size()), ncols});
}

template <class V> std::vector<V> Array::to_vector() const {
  std::vector<V> out;
  std::vector<uint8_t> b;
  try {
    out.resize(static_cast<size_t>(size()));
    if constexpr (std::is_same_v<V, bool>) b.resize(out.size());
  } catch (const std::bad_alloc&) {
    host_out_of_memory("to_vector", sizeof(V));
  }
  if constexpr (std::is_same_v<V, bool>) {
    read(DType::bool_, b.data());
    for (size_t i = 0; i < b.size(); ++i) out[i] = b[i] != 0;
  } else {
    read(dtype_of<V>(), out.data());
  }
  return out;
}

template <class V> V Array::item() const {
  if (size() != 1)
    throw ShapeError("item: the array has shape " + shape_to_string(shape()) +
                     " with " + std::to_string(size()) + " elements; item() needs exactly one");
  return scalar().to<V>();
}

}  // namespace tessel
