// Counter-based PRNG (jax.random with raw uint32[2] keys). One new hashing primitive,
// `threefry2x32`; keys, bits and floats are composed from ordinary primitives the way JAX
// composes them (jax/_src/prng.py and jax/_src/random.py, threefry_partitionable mode), plus
// the lax primitive that composition needs, bitcast_convert_type (erf_inv, which normal and
// truncated_normal also use, is with the special functions in special.cpp).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/dtype_check.h"
#include "core/shape_check.h"
#include "ops/rule_util.h"
#include "ops/special.h"
#include "ops/strided.h"
#include "tessel/random.h"

namespace tessel::ops {
namespace {

// ---- threefry2x32 ----

std::vector<Aval> threefry_aval(std::span<const Aval> ins, const Params&) {
  for (const Aval& a : ins)
    if (a.dtype != DType::uint32)
      throw DTypeError("threefry2x32: all four operands must be uint32, got " + avals_to_string(ins) +
                       "; convert them with astype(uint32)");
  Aval out = elementwise_aval("threefry2x32", ins);
  out.weak_type = false;
  return {out, out};
}

inline uint32_t rotl32(uint32_t v, int r) { return (v << r) | (v >> (32 - r)); }

// Threefry-2x32 with 20 rounds (Salmon et al., SC'11): 5 groups of 4 mix rounds, a key
// injection after each group. The key schedule's third word is k0 ^ k1 ^ the Skein parity.
// Every loop has a fixed trip count, so it unrolls into straight-line code that the lane
// loop of threefry_lanes vectorizes.
inline void threefry_block(uint32_t k0, uint32_t k1, uint32_t& x0, uint32_t& x1) {
  static constexpr int kRot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  const uint32_t ks[3] = {k0, k1, k0 ^ k1 ^ 0x1BD11BDAu};
  x0 += ks[0];
  x1 += ks[1];
#pragma GCC unroll 5
  for (uint32_t g = 0; g < 5; ++g) {
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
      x0 += x1;
      x1 = rotl32(x1, kRot[g % 2][i]) ^ x0;
    }
    x0 += ks[(g + 1) % 3];
    x1 += ks[(g + 2) % 3] + g + 1;
  }
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
// One clone per ISA (the loader picks the widest the CPU has): the lane loop becomes 16-wide
// AVX-512 integer code (with its rotate instruction) instead of SSE2's 4 lanes.
#define TESSEL_THREEFRY_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define TESSEL_THREEFRY_CLONES
#endif

// Points per lane block: each block of operands is hashed by one vectorized loop.
constexpr int64_t kThreefryLanes = 64;

// One block of kThreefryLanes points: operands a, b (key words) and c, d (counter words)
// read lane by lane; a fixed trip count vectorizes without a masked epilogue. Inlined into
// each clone of threefry_lanes, so it takes the clone's instruction set.
[[gnu::always_inline]] inline void threefry_lane_block(const uint32_t* a, const uint32_t* b, const uint32_t* c,
                                                       const uint32_t* d, uint32_t* out0, uint32_t* out1) {
  for (int64_t j = 0; j < kThreefryLanes; ++j) {
    uint32_t x0 = c[j], x1 = d[j];
    threefry_block(a[j], b[j], x0, x1);
    out0[j] = x0;
    out1[j] = x1;
  }
}

// Hashes points [lo, hi): operand i of point j is in[i][j * step[i]] (step 0: rank-0, else 1).
// Contiguous operands are read in place and the results written in place; a rank-0 operand
// reads a block of its value; the last partial block goes through zero-padded copies.
TESSEL_THREEFRY_CLONES void threefry_lanes(const uint32_t* const* in, const int64_t* step, uint32_t* out0,
                                           uint32_t* out1, int64_t lo, int64_t hi) {
  uint32_t broadcast[4][kThreefryLanes];
  for (int i = 0; i < 4; ++i)
    if (step[i] == 0) std::fill_n(broadcast[i], kThreefryLanes, in[i][0]);
  auto operand = [&](int i, int64_t b) { return step[i] == 0 ? broadcast[i] : in[i] + b; };
  int64_t b = lo;
  for (; b + kThreefryLanes <= hi; b += kThreefryLanes)
    threefry_lane_block(operand(0, b), operand(1, b), operand(2, b), operand(3, b), out0 + b, out1 + b);
  if (b == hi) return;
  const int64_t m = hi - b;
  uint32_t tail[4][kThreefryLanes] = {}, tail_out[2][kThreefryLanes];
  for (int i = 0; i < 4; ++i) std::copy_n(operand(i, b), m, tail[i]);
  threefry_lane_block(tail[0], tail[1], tail[2], tail[3], tail_out[0], tail_out[1]);
  std::copy_n(tail_out[0], m, out0 + b);
  std::copy_n(tail_out[1], m, out1 + b);
}

// Points split over the intra-op arena (each point's hash is independent, so the bits do not
// depend on the split).
void threefry_kernel(const KernelCall& c) {
  const int64_t n = c.out_avals[0].size();
  const uint32_t* in[4];
  int64_t step[4];  // 0 for a broadcast rank-0 operand
  for (int i = 0; i < 4; ++i) {
    in[i] = c.in<uint32_t>(size_t(i));
    step[i] = c.in_avals[size_t(i)].shape.empty() ? 0 : 1;
  }
  uint32_t* out0 = c.out<uint32_t>(0);
  uint32_t* out1 = c.out<uint32_t>(1);
  auto body = [&](int64_t lo, int64_t hi) { threefry_lanes(in, step, out0, out1, lo, hi); };
  // A hash costs about 20 times an add: a smaller grain than the element-wise one pays.
  constexpr int64_t kGrain = kElementwiseGrain / 16;
  if (n <= kGrain) body(0, n);
  else cpu::parallel_for(n, kGrain, body);
}

// Not differentiable (uint32 operands only); batches and partitions element-wise (each
// device hashes its piece of the counters: random bits of a split result are drawn
// piece by piece).
const ir::Primitive& threefry_p = ir::register_primitive({
    .name = "threefry2x32", .arity = {4, 4}, .abstract_eval = threefry_aval, .cpu_kernel = threefry_kernel,
    .batch = batch_elementwise, .sharding_rule = ir::elementwise_sharding_rule});

// ---- bitcast_convert_type ----

void check_bitcast_dtype(DType d) {
  if (is_bool(d) || is_complex(d))
    throw DTypeError(std::string("bitcast_convert_type: dtype ") + dtype_name(d) +
                     " is not supported; expected an integer or floating dtype");
}

std::vector<Aval> bitcast_aval(std::span<const Aval> ins, const Params& p) {
  const DType to = p.get<DType>("new_dtype");
  check_bitcast_dtype(ins[0].dtype);
  check_bitcast_dtype(to);
  if (itemsize(ins[0].dtype) != itemsize(to))
    throw DTypeError(std::string("bitcast_convert_type: cannot reinterpret ") + dtype_name(ins[0].dtype) + " (" +
                     std::to_string(itemsize(ins[0].dtype)) + " bytes) as " + dtype_name(to) + " (" +
                     std::to_string(itemsize(to)) + " bytes); the dtypes must have the same width");
  return {Aval(ins[0].shape, to)};
}

void bitcast_kernel(const KernelCall& c) {
  if (c.outs[0] != c.ins[0]) parallel_memcpy(c.outs[0], c.ins[0], c.out_avals[0].nbytes());
}

// Reinterpreting bits has no useful derivative: zero tangents, as in JAX.
std::vector<Array> bitcast_jvp(const ir::Primitive&, std::span<const Array>, std::span<const Array>,
                               std::span<const Array>, const Params&) {
  return {Array()};
}

const ir::Primitive& bitcast_p = ir::register_primitive({
    .name = "bitcast_convert_type", .arity = {1, 1}, .abstract_eval = bitcast_aval, .cpu_kernel = bitcast_kernel,
    .fusion = ir::FusionKind::kElementwise, .jvp = bitcast_jvp, .batch = batch_vectorized,
    .sharding_rule = ir::elementwise_sharding_rule});

}  // namespace
}  // namespace tessel::ops

namespace tessel {

Array bitcast_convert_type(const Array& x, DType dtype) {
  if (x.dtype() == detail::checked_dtype(dtype, "bitcast_convert_type")) return x;
  return ops::bind1(ops::bitcast_p, {x}, ops::Params{{"new_dtype", dtype}});
}

namespace random {
namespace {

Array u32(uint32_t v) { return Array(Scalar(v)); }

void check_key(const char* op, const Array& key) {
  if (key.dtype() != DType::uint32 || key.shape() != Shape{2})
    throw ValueError(std::string(op) + ": expected a PRNG key, a uint32 array of shape (2,), got " +
                     key.aval().to_string() + "; make keys with tessel::random::key(seed) or split");
}

// The key's two words as rank-0 arrays.
std::pair<Array, Array> key_words(const Array& key) {
  return {reshape(slice(key, {0}, {1}), {}), reshape(slice(key, {1}, {2}), {})};
}

// JAX's iota_2x32_shape: a 64-bit row-major counter over `shape` as (high, low) uint32 words.
std::pair<Array, Array> counters(const char* op, const Shape& shape) {
  const int64_t n = detail::checked_size(op, shape);
  if (n > int64_t(std::numeric_limits<uint32_t>::max()))
    throw ValueError(std::string(op) + ": shape " + shape_to_string(shape) + " has " + std::to_string(n) +
                     " elements; at most 2^32 - 1 random values can be drawn at once");
  return {u32(0), reshape(iota(DType::uint32, {n}), shape)};
}

// Threefry over the counters of `shape`: two words per element.
std::pair<Array, Array> hash_counters(const char* op, const Array& key, const Shape& shape) {
  check_key(op, key);
  auto [k0, k1] = key_words(key);
  auto [hi, lo] = counters(op, shape);
  return threefry2x32(k0, k1, hi, lo);
}

// One bit-width's worth of random bits (8, 16, 32 or 64), as JAX's partitionable
// random_bits: 64-bit values take both words, narrower ones fold them with xor.
Array random_bits(const char* op, const Array& key, const Shape& shape, int bit_width) {
  auto [b0, b1] = hash_counters(op, key, shape);
  switch (bit_width) {
    case 64: {
      Array hi = astype(b0, DType::uint64), lo = astype(b1, DType::uint64);
      return bitwise_or(left_shift(hi, Array(Scalar(uint64_t(32)))), lo);
    }
    case 32: return bitwise_xor(b0, b1);
    case 16: return astype(bitwise_xor(b0, b1), DType::uint16);
    default: return astype(bitwise_xor(b0, b1), DType::uint8);
  }
}

DType uint_of_width(int bits) {
  return bits == 8 ? DType::uint8 : bits == 16 ? DType::uint16 : bits == 32 ? DType::uint32 : DType::uint64;
}

void check_float(const char* op, DType dtype) {
  if (!is_floating(detail::checked_dtype(dtype, op)))
    throw DTypeError(std::string(op) + ": dtype must be a floating dtype (float16, bfloat16, float32, float64), got " +
                     dtype_name(dtype));
}

// Uniform floats in [0, 1): random mantissa bits under the exponent of 1.0 give [1, 2).
Array unit_uniform(const char* op, const Array& key, const Shape& shape, DType dtype) {
  const int nbits = int(itemsize(dtype)) * 8;
  const int nmant = dtype == DType::float16 ? 10 : dtype == DType::bfloat16 ? 7 : dtype == DType::float32 ? 23 : 52;
  const int rng_bits = nmant < 8 ? 8 : nbits;  // bfloat16 draws 8 bits, as JAX does
  const DType ut = uint_of_width(nbits);
  Array b = astype(random_bits(op, key, shape, rng_bits), ut);
  const uint64_t one_bits = visit_dtype(dtype, [&](auto z) -> uint64_t {
    using T = decltype(z);
    uint64_t u = 0;
    if constexpr (ops::is_float_v<T>) {
      T one = T(1.0f);
      std::memcpy(&u, &one, sizeof(T));  // little-endian: the low bytes hold the value
    }
    return u;
  });
  Array mant = right_shift(b, Array(Scalar(uint64_t(rng_bits - nmant), ut)));
  return bitcast_convert_type(bitwise_or(mant, Array(Scalar(one_bits, ut))), dtype) - 1.0;
}

Array normal_real(const Array& key, const Shape& shape, DType dtype) {
  // Uniform in (-1, 1): the lower bound is the float just above -1, so erf_inv stays finite.
  Scalar lo = visit_dtype(dtype, [&](auto z) -> Scalar {
    using T = decltype(z);
    if constexpr (std::is_floating_point_v<T>) {
      return Scalar(std::nextafter(T(-1), T(0)));
    } else if constexpr (ops::is_half_v<T>) {
      // -1 has an all-zero mantissa, so the next float towards zero has bits - 1.
      return Scalar(T::from_bits(uint16_t(T(-1.0f).bits - 1)));
    } else {
      return Scalar();
    }
  });
  Array u = uniform(key, shape, dtype, Array(lo), Array(Scalar(1.0, dtype)));
  return erf_inv(u) * Array(Scalar(std::sqrt(2.0), dtype));
}

}  // namespace

Array key(int64_t seed) {
  const uint64_t s = uint64_t(seed);
  return Array(std::vector<uint32_t>{uint32_t(s >> 32), uint32_t(s)});
}

std::pair<Array, Array> threefry2x32(const Array& key0, const Array& key1, const Array& x0, const Array& x1) {
  auto outs = ops::bind(ops::threefry_p, std::vector<Array>{key0, key1, x0, x1});
  return {outs[0], outs[1]};
}

Array threefry_2x32(const Array& key, const Array& count) {
  check_key("threefry_2x32", key);
  if (count.dtype() != DType::uint32)
    throw DTypeError("threefry_2x32: count must be uint32, got " + count.aval().to_string());
  const int64_t n = count.size();
  Array flat = reshape(count, {n});
  if (n % 2) flat = concatenate({flat, reshape(u32(0), {1})});
  const int64_t half = (n + 1) / 2;
  auto [k0, k1] = key_words(key);
  auto [o0, o1] = threefry2x32(k0, k1, slice(flat, {0}, {half}), slice(flat, {half}, {2 * half}));
  Array out = concatenate({o0, o1});
  if (n % 2) out = slice(out, {0}, {n});
  return reshape(out, count.shape());
}

Array split(const Array& key, int64_t num) {
  if (num < 0) throw ValueError("split: num must be >= 0, got " + std::to_string(num));
  auto [b0, b1] = hash_counters("split", key, {num});
  return stack({b0, b1}, 1);
}

Array fold_in(const Array& key, const Array& data) {
  check_key("fold_in", key);
  if (data.ndim() != 0 || !(is_integer(data.dtype()) || is_bool(data.dtype())))
    throw ValueError("fold_in: data must be a rank-0 integer, got " + data.aval().to_string());
  // JAX hashes the seed-like pair [0, uint32(data)] with the key.
  auto [k0, k1] = key_words(key);
  auto [o0, o1] = threefry2x32(k0, k1, u32(0), astype(data, DType::uint32));
  return stack({o0, o1});
}

Array bits(const Array& key, const Shape& shape, DType dtype) {
  detail::checked_dtype(dtype, "bits");
  if (dtype != DType::uint8 && dtype != DType::uint16 && dtype != DType::uint32 && dtype != DType::uint64)
    throw DTypeError(std::string("bits: dtype must be uint8, uint16, uint32 or uint64, got ") + dtype_name(dtype));
  detail::checked_size("bits", shape, dtype);
  return random_bits("bits", key, shape, int(itemsize(dtype)) * 8);
}

Array uniform(const Array& key, const Shape& shape, DType dtype, const Array& minval, const Array& maxval) {
  check_float("uniform", dtype);
  detail::checked_size("uniform", shape, dtype);
  if (ops::broadcast_shapes("uniform", {shape, minval.shape(), maxval.shape()}) != shape)
    throw ShapeError("uniform: minval " + shape_to_string(minval.shape()) + " and maxval " +
                     shape_to_string(maxval.shape()) + " must broadcast to the requested shape " +
                     shape_to_string(shape));
  Array lo = astype(minval, dtype), hi = astype(maxval, dtype);
  Array f = unit_uniform("uniform", key, shape, dtype);
  // XLA contracts JAX's f * (hi - lo) + lo into one fused multiply-add (one rounding) in
  // float32 and float64; half types compute each step in float32 and round it back.
  Array scaled = dtype == DType::float32 || dtype == DType::float64 ? ops::fma(f, hi - lo, lo) : f * (hi - lo) + lo;
  // The max guards against rounding below minval when (hi - lo) * f + lo is inexact.
  return broadcast_to(maximum(lo, scaled), shape);
}

Array normal(const Array& key, const Shape& shape, DType dtype) {
  detail::checked_size("normal", shape, detail::checked_dtype(dtype, "normal"));
  if (is_complex(dtype)) {
    Array ks = split(key, 2);
    const DType rt = real_dtype(dtype);
    Array re = normal_real(reshape(slice(ks, {0, 0}, {1, 2}), {2}), shape, rt);
    Array im = normal_real(reshape(slice(ks, {1, 0}, {2, 2}), {2}), shape, rt);
    // JAX divides re + i im by the constant sqrt(2); XLA turns that division into a product
    // with the reciprocal 1/sqrt(2) rounded to the part type (checked exactly on 5e4 draws).
    // The product is complex, as XLA's: jit then folds no literal of normal_real into it.
    Array inv_sqrt2 = Array(Scalar(1.0, rt)) / Array(Scalar(std::sqrt(2.0), rt));
    return complex(re, im) * inv_sqrt2.astype(dtype);
  }
  check_float("normal", dtype);
  return normal_real(key, shape, dtype);
}

}  // namespace random
}  // namespace tessel
