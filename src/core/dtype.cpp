#include "tessel/dtype.h"

#include <array>
#include <utility>
#include <cmath>
#include <sstream>

#include "core/dtype_check.h"
#include "tessel/error.h"

namespace tessel {
namespace {

struct DTypeInfo {
  const char* name;
  const char* short_name;
  size_t size;
};

constexpr std::array<DTypeInfo, kNumDTypes> kInfo = {{
    {"bool", "bool", 1},      {"int8", "i8", 1},        {"int16", "i16", 2},
    {"int32", "i32", 4},      {"int64", "i64", 8},      {"uint8", "u8", 1},
    {"uint16", "u16", 2},     {"uint32", "u32", 4},     {"uint64", "u64", 8},
    {"float16", "f16", 2},    {"bfloat16", "bf16", 2},  {"float32", "f32", 4},
    {"float64", "f64", 8},    {"complex64", "c64", 8},  {"complex128", "c128", 16},
}};

// JAX's type promotion lattice, with the weak kinds i*, f*, c* as extra nodes.
enum Node { b1, iw, u8n, u16n, u32n, u64n, i8n, i16n, i32n, i64n, fw, bf16n, f16n, f32n, f64n, cw, c64n, c128n, kNodes };

constexpr uint32_t bit(int n) { return 1u << n; }

// Direct successors of each node.
constexpr std::array<uint32_t, kNodes> kEdges = {
    bit(iw),                        // b1
    bit(u8n) | bit(i8n),            // i*
    bit(u16n) | bit(i16n),          // u8
    bit(u32n) | bit(i32n),          // u16
    bit(u64n) | bit(i64n),          // u32
    bit(fw),                        // u64
    bit(i16n),                      // i8
    bit(i32n),                      // i16
    bit(i64n),                      // i32
    bit(fw),                        // i64
    bit(bf16n) | bit(f16n) | bit(cw),  // f*
    bit(f32n),                      // bf16
    bit(f32n),                      // f16
    bit(f64n) | bit(c64n),          // f32
    bit(c128n),                     // f64
    bit(c64n),                      // c*
    bit(c128n),                     // c64
    0,                              // c128
};

std::array<uint32_t, kNodes> upper_sets() {
  std::array<uint32_t, kNodes> up{};
  for (int n = kNodes - 1; n >= 0; --n) {  // successors have larger indices except none
    uint32_t s = bit(n);
    for (int m = 0; m < kNodes; ++m)
      if (kEdges[n] & bit(m)) s |= up[m] ? up[m] : bit(m);
    up[n] = s;
  }
  // Iterate to a fixed point: the node order is not fully topological.
  for (bool changed = true; changed;) {
    changed = false;
    for (int n = 0; n < kNodes; ++n) {
      uint32_t s = up[n];
      for (int m = 0; m < kNodes; ++m)
        if (kEdges[n] & bit(m)) s |= up[m];
      if (s != up[n]) up[n] = s, changed = true;
    }
  }
  return up;
}

const std::array<uint32_t, kNodes>& kUp() {
  static const auto up = upper_sets();
  return up;
}

Node node_of(DType d, bool weak) {
  if (weak) {
    if (is_bool(d)) return b1;
    if (is_integer(d)) return iw;
    if (is_floating(d)) return fw;
    return cw;
  }
  switch (d) {
    case DType::bool_: return b1;
    case DType::int8: return i8n;
    case DType::int16: return i16n;
    case DType::int32: return i32n;
    case DType::int64: return i64n;
    case DType::uint8: return u8n;
    case DType::uint16: return u16n;
    case DType::uint32: return u32n;
    case DType::uint64: return u64n;
    case DType::float16: return f16n;
    case DType::bfloat16: return bf16n;
    case DType::float32: return f32n;
    case DType::float64: return f64n;
    case DType::complex64: return c64n;
    case DType::complex128: return c128n;
  }
  return f32n;
}

DType dtype_of_node(Node n) {
  switch (n) {
    case b1: return DType::bool_;
    case iw: return default_int;
    case u8n: return DType::uint8;
    case u16n: return DType::uint16;
    case u32n: return DType::uint32;
    case u64n: return DType::uint64;
    case i8n: return DType::int8;
    case i16n: return DType::int16;
    case i32n: return DType::int32;
    case i64n: return DType::int64;
    case fw: return default_float;
    case bf16n: return DType::bfloat16;
    case f16n: return DType::float16;
    case f32n: return DType::float32;
    case f64n: return DType::float64;
    case cw: return default_complex;
    case c64n: return DType::complex64;
    default: return DType::complex128;
  }
}

}  // namespace

namespace detail {

void throw_not_a_dtype(DType d, std::string_view op) {
  throw DTypeError(std::string(op) + ": DType(" + std::to_string(int(d)) + ") is not a dtype (an integer cast to DType?); use one "
                   "of the named dtypes, such as ts::f32, ts::i32 or ts::bool_, or dtype_from_name(\"float32\")");
}

void invalid_dtype(DType d) {
  checked_dtype(d, "visit_dtype");
  throw DTypeError("internal: invalid_dtype called for the valid dtype " + std::string(dtype_name(d)));
}

}  // namespace detail

namespace {
// The tables below are indexed by the dtype: an invalid value must not read past them.
const DTypeInfo& info(DType d, const char* op) { return kInfo[size_t(detail::checked_dtype(d, op))]; }
}  // namespace

size_t itemsize(DType d) { return info(d, "itemsize").size; }
const char* dtype_name(DType d) { return info(d, "dtype_name").name; }
const char* dtype_short_name(DType d) { return info(d, "dtype_short_name").short_name; }

DType dtype_from_name(std::string_view name) {
  for (int i = 0; i < kNumDTypes; ++i) {
    if (name == kInfo[i].name || name == kInfo[i].short_name) return DType(i);
  }
  if (name == "bool_") return DType::bool_;
  throw DTypeError("dtype_from_name: unknown dtype '" + std::string(name) +
                   "'; use a name such as float32 or f32, int64 or i64, bool");
}

bool is_bool(DType d) { return d == DType::bool_; }
bool is_signed_int(DType d) { return d >= DType::int8 && d <= DType::int64; }
bool is_unsigned_int(DType d) { return d >= DType::uint8 && d <= DType::uint64; }
bool is_integer(DType d) { return is_signed_int(d) || is_unsigned_int(d); }
bool is_floating(DType d) { return d >= DType::float16 && d <= DType::float64; }
bool is_complex(DType d) { return d == DType::complex64 || d == DType::complex128; }
bool is_inexact(DType d) { return is_floating(d) || is_complex(d); }

DType real_dtype(DType d) {
  if (d == DType::complex64) return DType::float32;
  if (d == DType::complex128) return DType::float64;
  return d;
}

DType complex_dtype(DType d) {
  if (d == DType::float64 || d == DType::complex128) return DType::complex128;
  return DType::complex64;
}

namespace {

// The join of two (dtype, weak) nodes in the lattice. Every binary operation promotes its
// operands, so promote_types reads a table of all 900 pairs made from this once (the walk
// costs about 300 instructions, a small eager operation about 2,000 in all).
PromotedType join_in_lattice(DType a, bool a_weak, DType b, bool b_weak) {
  const auto& up = kUp();
  Node na = node_of(a, a_weak);
  Node nb = node_of(b, b_weak);
  uint32_t common = up[na] & up[nb];
  for (int n = 0; n < kNodes; ++n) {
    if ((common & bit(n)) && up[n] == common) {
      bool weak_node = n == iw || n == fw || n == cw;
      if (weak_node && !a_weak && !b_weak) {
        // Two strong types that meet at a weak kind (u64 + i64): the widest of that kind.
        return {n == iw ? DType::int64 : n == fw ? DType::float64 : DType::complex128, false};
      }
      if (weak_node) {
        // A weak result is the kind's default dtype (`i32 * 2.5` is f32, as in JAX), except
        // between two weak values, which keep the wider one (C++ doubles are weak f64, so
        // `Array(2.0) * 3.0` stays exact).
        DType r = dtype_of_node(Node(n));
        if (a_weak && b_weak) {
          bool found = false;
          for (auto [d, w] : {std::pair{a, a_weak}, std::pair{b, b_weak}}) {
            if (node_of(d, true) == Node(n) && (!found || itemsize(d) > itemsize(r))) r = d, found = true;
          }
        }
        return {r, true};
      }
      return {dtype_of_node(Node(n)), n == b1 && a_weak && b_weak};
    }
  }
  return {DType::complex128, false};
}

}  // namespace

PromotedType promote_types(DType a, bool a_weak, DType b, bool b_weak) {
  constexpr int kSides = 2 * kNumDTypes;  // (dtype, weak) pairs
  static const auto table = [] {
    std::array<PromotedType, size_t(kSides) * kSides> t{};
    for (int i = 0; i < kSides; ++i)
      for (int j = 0; j < kSides; ++j)
        t[size_t(i * kSides + j)] = join_in_lattice(DType(i / 2), i % 2 == 1, DType(j / 2), j % 2 == 1);
    return t;
  }();
  const int i = 2 * int(detail::checked_dtype(a, "promote_types")) + int(a_weak);
  const int j = 2 * int(detail::checked_dtype(b, "promote_types")) + int(b_weak);
  return table[size_t(i * kSides + j)];
}

DType promote_types(DType a, DType b) { return promote_types(a, false, b, false).dtype; }

// float <-> half conversions with round-to-nearest-even.
float16_t::float16_t(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7fffffffu;
  uint16_t h;
  if (absx >= 0x7f800000u) {  // inf or nan
    h = uint16_t(0x7c00u | (absx > 0x7f800000u ? 0x200u | ((absx >> 13) & 0x3ffu) : 0));
  } else if (absx >= 0x477ff000u) {  // rounds to >= 65520: overflow to inf
    h = 0x7c00u;
  } else if (absx < 0x38800000u) {  // subnormal half or zero
    float af;
    std::memcpy(&af, &absx, 4);
    // Scale so that the half subnormal unit (2^-24) becomes 1, then round to nearest even.
    float scaled = af * 16777216.0f;
    h = uint16_t(std::nearbyint(scaled));
  } else {
    uint32_t mant = absx & 0x7fffffu;
    uint32_t exp = (absx >> 23) - 112;
    uint32_t hv = (exp << 10) | (mant >> 13);
    uint32_t rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (hv & 1u))) ++hv;
    h = uint16_t(hv);
  }
  bits = uint16_t(h | sign);
}

float16_t::operator float() const {
  uint32_t sign = uint32_t(bits & 0x8000u) << 16;
  uint32_t exp = (bits >> 10) & 0x1fu;
  uint32_t mant = bits & 0x3ffu;
  uint32_t out;
  if (exp == 0) {
    float f = float(mant) * (1.0f / 16777216.0f);
    std::memcpy(&out, &f, 4);
    out |= sign;
  } else if (exp == 31) {
    out = sign | 0x7f800000u | (mant << 13);
  } else {
    out = sign | ((exp + 112) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &out, 4);
  return f;
}

bfloat16_t::bfloat16_t(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) {
    bits = uint16_t((x >> 16) | 0x40u);  // quiet nan
    return;
  }
  uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  bits = uint16_t((x + rounding) >> 16);
}

std::string Scalar::to_string() const {
  std::ostringstream os;
  os.precision(is_floating(dtype_) && itemsize(dtype_) <= 4 ? 8 : 17);
  visit_dtype(dtype_, [&](auto z) {
    using S = decltype(z);
    S s;
    std::memcpy(&s, bytes_, sizeof(S));
    if constexpr (std::is_same_v<S, bool>) os << (s ? "True" : "False");
    else if constexpr (std::is_same_v<S, int8_t> || std::is_same_v<S, uint8_t>) os << int(s);
    else if constexpr (std::is_same_v<S, complex64_t> || std::is_same_v<S, complex128_t>)
      os << s.real() << (s.imag() < 0 ? "-" : "+") << std::abs(s.imag()) << "j";
    else if constexpr (std::is_same_v<S, float16_t> || std::is_same_v<S, bfloat16_t>) os << float(s);
    else os << s;
  });
  std::string r = os.str();
  if (is_floating(dtype_) && r.find_first_of(".enai") == std::string::npos) r += ".0";
  return r;
}

size_t Scalar::hash() const {
  size_t h = size_t(dtype_) * 0x9e3779b97f4a7c15ull;
  for (size_t i = 0; i < itemsize(dtype_); ++i) h = (h ^ bytes_[i]) * 0x100000001b3ull;
  return h;
}

}  // namespace tessel
