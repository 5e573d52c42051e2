#pragma once
// Shared checks and helpers of ts::random's samplers (src/random/*.cpp): key, dtype and
// shape validation with JAX's rules, finfo constants and the key split every sampler uses.
// The samplers take exp, log and log1p from ops::xla_exp/xla_log/xla_log1p (ops/special.h),
// which compute what XLA does, so that their draws equal JAX's bit for bit.
#include <cmath>
#include <numbers>
#include <optional>
#include <string>
#include <utility>

#include "core/dtype_check.h"
#include "core/shape_check.h"
#include "ops/op_util.h"
#include "ops/special.h"
#include "tessel/random.h"

namespace tessel::random::sampler {

inline void check_key(const char* op, const Array& key) {
  if (key.dtype() != DType::uint32 || key.shape() != Shape{2})
    throw ValueError(std::string(op) + ": expected a PRNG key, a uint32 array of shape (2,), got " +
                     key.aval().to_string() + "; make keys with tessel::random::key(seed) or split");
}

inline void check_float(const char* op, DType dtype) {
  if (!is_floating(detail::checked_dtype(dtype, op)))
    throw DTypeError(std::string(op) + ": dtype must be a floating dtype (float16, bfloat16, float32, float64), got " +
                     dtype_name(dtype));
}

inline void check_int(const char* op, DType dtype) {
  if (!is_integer(detail::checked_dtype(dtype, op)))
    throw DTypeError(std::string(op) + ": dtype must be an integer dtype (int8 ... uint64), got " + dtype_name(dtype));
}

// Row i of split(key, 2).
inline std::pair<Array, Array> split2(const Array& key) {
  Array ks = split(key, 2);
  return {reshape(slice(ks, {0, 0}, {1, 2}), {2}), reshape(slice(ks, {1, 0}, {2, 2}), {2})};
}

// JAX's shape rule for samplers: an explicit shape must be what the parameters broadcast to
// with it; no shape means the parameters' broadcast shape.
inline Shape sample_shape(const char* op, std::optional<Shape> shape, std::initializer_list<Shape> params) {
  std::vector<Shape> all(params);
  const Shape pshape = ops::broadcast_shapes(op, all);
  if (!shape) return pshape;
  all.push_back(*shape);
  if (ops::broadcast_shapes(op, all) != *shape)
    throw ShapeError(std::string(op) + ": parameter shapes broadcast to " + shape_to_string(pshape) +
                     ", which does not broadcast to the requested shape " + shape_to_string(*shape) +
                     "; pass a shape that ends with the parameters' shape");
  return *shape;
}

// finfo's constants of a floating dtype, as exact powers of two.
struct FloatInfo {
  int nmant, minexp;
  double eps() const { return std::ldexp(1.0, -nmant); }
  double epsneg() const { return std::ldexp(1.0, -nmant - 1); }
  double tiny() const { return std::ldexp(1.0, minexp); }
  double denorm_min() const { return std::ldexp(1.0, minexp - nmant); }
};

inline FloatInfo float_info(DType d) {
  switch (d) {
    case DType::float16: return {10, -14};
    case DType::bfloat16: return {7, -126};
    case DType::float32: return {23, -126};
    default: return {52, -1022};
  }
}

inline Array constant(double v, DType d) { return Array(Scalar(v, d)); }

// The parameter converted to the sample dtype and broadcast to the sample shape.
inline Array param(const Array& p, DType dtype, const Shape& shape) { return broadcast_to(astype(p, dtype), shape); }

}  // namespace tessel::random::sampler
