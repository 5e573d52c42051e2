#pragma once
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <ostream>
#include <string>
#include <string_view>

#include "tessel/export.h"

namespace tessel {

/// Element types, as in jax.numpy (all of them, the 64-bit ones included).
enum class DType : uint8_t {
  bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
  float16, bfloat16, float32, float64, complex64, complex128,
};
inline constexpr int kNumDTypes = 15;

inline constexpr DType bool_ = DType::bool_;
inline constexpr DType int8 = DType::int8, i8 = DType::int8;
inline constexpr DType int16 = DType::int16, i16 = DType::int16;
inline constexpr DType int32 = DType::int32, i32 = DType::int32;
inline constexpr DType int64 = DType::int64, i64 = DType::int64;
inline constexpr DType uint8 = DType::uint8, u8 = DType::uint8;
inline constexpr DType uint16 = DType::uint16, u16 = DType::uint16;
inline constexpr DType uint32 = DType::uint32, u32 = DType::uint32;
inline constexpr DType uint64 = DType::uint64, u64 = DType::uint64;
inline constexpr DType float16 = DType::float16, f16 = DType::float16;
inline constexpr DType bfloat16 = DType::bfloat16, bf16 = DType::bfloat16;
inline constexpr DType float32 = DType::float32, f32 = DType::float32;
inline constexpr DType float64 = DType::float64, f64 = DType::float64;
inline constexpr DType complex64 = DType::complex64, c64 = DType::complex64;
inline constexpr DType complex128 = DType::complex128, c128 = DType::complex128;

/// Default dtypes of untyped C++ values (as jax.numpy without x64: int32, float32, complex64).
inline constexpr DType default_int = DType::int32;
inline constexpr DType default_float = DType::float32;
inline constexpr DType default_complex = DType::complex64;

TESSEL_API size_t itemsize(DType d);
/// Full name: "float32".
TESSEL_API const char* dtype_name(DType d);
/// Short name used in programs: "f32".
TESSEL_API const char* dtype_short_name(DType d);
/// Parses "float32" or "f32"; throws DTypeError otherwise.
TESSEL_API DType dtype_from_name(std::string_view name);
TESSEL_API bool is_bool(DType d);
TESSEL_API bool is_signed_int(DType d);
TESSEL_API bool is_unsigned_int(DType d);
TESSEL_API bool is_integer(DType d);   ///< signed or unsigned integer (not bool)
TESSEL_API bool is_floating(DType d);  ///< f16, bf16, f32, f64
TESSEL_API bool is_complex(DType d);
TESSEL_API bool is_inexact(DType d);   ///< floating or complex
/// The real dtype of a complex dtype (c64 -> f32); other dtypes map to themselves.
TESSEL_API DType real_dtype(DType d);
/// The complex dtype holding a real one (f32 -> c64, f64 -> c128).
TESSEL_API DType complex_dtype(DType d);

/// Type promotion as jax.numpy documents it: the join on JAX's promotion lattice. A weak
/// operand (a C++ scalar) only contributes its kind (int, float, complex), so `f32 * 2.0`
/// stays f32 and `i8 + 1` stays i8. Returns the dtype and whether the result is weak.
struct PromotedType {
  DType dtype;
  bool weak;
};
TESSEL_API PromotedType promote_types(DType a, bool a_weak, DType b, bool b_weak);
/// Promotion of two strong dtypes.
TESSEL_API DType promote_types(DType a, DType b);

inline std::ostream& operator<<(std::ostream& os, DType d) { return os << dtype_name(d); }

/// IEEE half precision, stored as bits; arithmetic happens in float.
struct TESSEL_API float16_t {
  uint16_t bits = 0;
  float16_t() = default;
  float16_t(float f);  // NOLINT: implicit like a built-in float type
  operator float() const;
  static float16_t from_bits(uint16_t b) {
    float16_t h;
    h.bits = b;
    return h;
  }
};

/// bfloat16 (the top half of a float32), stored as bits; arithmetic happens in float.
struct TESSEL_API bfloat16_t {
  uint16_t bits = 0;
  bfloat16_t() = default;
  bfloat16_t(float f);  // NOLINT
  operator float() const {
    uint32_t u = uint32_t(bits) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  static bfloat16_t from_bits(uint16_t b) {
    bfloat16_t h;
    h.bits = b;
    return h;
  }
};

using complex64_t = std::complex<float>;
using complex128_t = std::complex<double>;

/// The C++ storage type of a dtype.
template <DType D> struct dtype_traits;
#define TESSEL_DTYPE_TRAIT(D, T) \
  template <> struct dtype_traits<DType::D> { using type = T; };
TESSEL_DTYPE_TRAIT(bool_, bool)
TESSEL_DTYPE_TRAIT(int8, int8_t)
TESSEL_DTYPE_TRAIT(int16, int16_t)
TESSEL_DTYPE_TRAIT(int32, int32_t)
TESSEL_DTYPE_TRAIT(int64, int64_t)
TESSEL_DTYPE_TRAIT(uint8, uint8_t)
TESSEL_DTYPE_TRAIT(uint16, uint16_t)
TESSEL_DTYPE_TRAIT(uint32, uint32_t)
TESSEL_DTYPE_TRAIT(uint64, uint64_t)
TESSEL_DTYPE_TRAIT(float16, float16_t)
TESSEL_DTYPE_TRAIT(bfloat16, bfloat16_t)
TESSEL_DTYPE_TRAIT(float32, float)
TESSEL_DTYPE_TRAIT(float64, double)
TESSEL_DTYPE_TRAIT(complex64, complex64_t)
TESSEL_DTYPE_TRAIT(complex128, complex128_t)
#undef TESSEL_DTYPE_TRAIT

/// The dtype of a C++ storage type.
template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<bool>() { return DType::bool_; }
template <> constexpr DType dtype_of<int8_t>() { return DType::int8; }
template <> constexpr DType dtype_of<int16_t>() { return DType::int16; }
template <> constexpr DType dtype_of<int32_t>() { return DType::int32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::int64; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::uint8; }
template <> constexpr DType dtype_of<uint16_t>() { return DType::uint16; }
template <> constexpr DType dtype_of<uint32_t>() { return DType::uint32; }
template <> constexpr DType dtype_of<uint64_t>() { return DType::uint64; }
template <> constexpr DType dtype_of<float16_t>() { return DType::float16; }
template <> constexpr DType dtype_of<bfloat16_t>() { return DType::bfloat16; }
template <> constexpr DType dtype_of<float>() { return DType::float32; }
template <> constexpr DType dtype_of<double>() { return DType::float64; }
template <> constexpr DType dtype_of<complex64_t>() { return DType::complex64; }
template <> constexpr DType dtype_of<complex128_t>() { return DType::complex128; }

/// Converts one value between storage types with C++ semantics, extended to the half types
/// and complex numbers (complex -> real keeps the real part, anything -> bool is `!= 0`).
template <class To, class From> inline To convert_value(From v) {
  constexpr bool from_complex = std::is_same_v<From, complex64_t> || std::is_same_v<From, complex128_t>;
  constexpr bool to_complex = std::is_same_v<To, complex64_t> || std::is_same_v<To, complex128_t>;
  constexpr bool from_half = std::is_same_v<From, float16_t> || std::is_same_v<From, bfloat16_t>;
  constexpr bool to_half = std::is_same_v<To, float16_t> || std::is_same_v<To, bfloat16_t>;
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (from_complex) {
    if constexpr (to_complex) return To(v);
    else if constexpr (std::is_same_v<To, bool>) return v != From(0);
    else return convert_value<To>(v.real());
  } else if constexpr (from_half) {
    return convert_value<To>(float(v));
  } else if constexpr (to_complex) {
    return To(typename To::value_type(v), 0);
  } else if constexpr (to_half) {
    return To(float(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    // Out-of-range and NaN conversions are undefined in C++; saturate like XLA on CPU.
    if (!(v == v)) return To(0);
    if (v <= From(std::numeric_limits<To>::lowest())) return std::numeric_limits<To>::lowest();
    if (v >= From(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

namespace detail {
/// Throws DTypeError for a value that is not a DType enumerator (an integer cast to DType).
[[noreturn]] TESSEL_API void invalid_dtype(DType d);
}  // namespace detail

/// Calls `f(T{})` with T the storage type of `d`; throws DTypeError when `d` is not a dtype.
template <class F> decltype(auto) visit_dtype(DType d, F&& f) {
  switch (d) {
    case DType::bool_: return f(bool{});
    case DType::int8: return f(int8_t{});
    case DType::int16: return f(int16_t{});
    case DType::int32: return f(int32_t{});
    case DType::int64: return f(int64_t{});
    case DType::uint8: return f(uint8_t{});
    case DType::uint16: return f(uint16_t{});
    case DType::uint32: return f(uint32_t{});
    case DType::uint64: return f(uint64_t{});
    case DType::float16: return f(float16_t{});
    case DType::bfloat16: return f(bfloat16_t{});
    case DType::float32: return f(float{});
    case DType::float64: return f(double{});
    case DType::complex64: return f(complex64_t{});
    case DType::complex128: return f(complex128_t{});
  }
  detail::invalid_dtype(d);
}

/// A single value of any dtype (a literal in a program, a fill value, `item()`), stored in
/// the dtype's own storage type.
class TESSEL_API Scalar {
 public:
  Scalar() : Scalar(0.0f) {}
  /// A value of the dtype of its C++ type (`long` and `long long` are int64).
  template <class T>
  Scalar(T v)  // NOLINT: implicit, scalars convert like C++ numbers
    requires(std::is_arithmetic_v<T> || std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t> ||
             std::is_same_v<T, complex64_t> || std::is_same_v<T, complex128_t>)
      : Scalar(v, cpp_dtype<T>()) {}
  /// `v` converted to `dtype`.
  template <class T> Scalar(T v, DType dtype) : dtype_(dtype) {
    visit_dtype(dtype, [&](auto z) {
      using S = decltype(z);
      S s = convert_value<S>(canonical(v));
      std::memcpy(bytes_, &s, sizeof(S));
    });
  }
  DType dtype() const { return dtype_; }
  /// The value converted to T.
  template <class T> T to() const {
    return visit_dtype(dtype_, [&](auto z) -> T {
      using S = decltype(z);
      S s;
      std::memcpy(&s, bytes_, sizeof(S));
      return convert_value<T>(s);
    });
  }
  /// Reads one element of `dtype` from memory.
  static Scalar load(DType dtype, const void* p) {
    Scalar s;
    s.dtype_ = dtype;
    std::memcpy(s.bytes_, p, itemsize(dtype));
    return s;
  }
  /// Writes the value as one element of its dtype.
  void store(void* p) const { std::memcpy(p, bytes_, itemsize(dtype_)); }
  const void* data() const { return bytes_; }
  /// The same value converted to another dtype.
  Scalar astype(DType d) const {
    return visit_dtype(dtype_, [&](auto z) {
      using S = decltype(z);
      S s;
      std::memcpy(&s, bytes_, sizeof(S));
      return Scalar(s, d);
    });
  }
  std::string to_string() const;
  bool operator==(const Scalar& o) const {
    return dtype_ == o.dtype_ && std::memcmp(bytes_, o.bytes_, itemsize(dtype_)) == 0;
  }
  size_t hash() const;

 private:
  template <class T> static constexpr DType cpp_dtype() {
    if constexpr (std::is_same_v<T, long> || std::is_same_v<T, long long>) return DType::int64;
    else if constexpr (std::is_same_v<T, unsigned long> || std::is_same_v<T, unsigned long long>) return DType::uint64;
    else if constexpr (std::is_same_v<T, char>) return DType::int8;
    else return dtype_of<T>();
  }
  template <class T> static auto canonical(T v) {
    if constexpr (std::is_same_v<T, long> || std::is_same_v<T, long long>) return int64_t(v);
    else if constexpr (std::is_same_v<T, unsigned long> || std::is_same_v<T, unsigned long long>) return uint64_t(v);
    else if constexpr (std::is_same_v<T, char>) return int8_t(v);
    else return v;
  }
  DType dtype_ = DType::float32;
  alignas(16) unsigned char bytes_[16] = {};
};

}  // namespace tessel
