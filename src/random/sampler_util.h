#pragma once
// Shared checks and helpers of ts::random's samplers (src/random/*.cpp): key, dtype and
// shape validation with JAX's rules, finfo constants and the key split every sampler uses.
#include <array>
#include <cmath>
#include <numbers>
#include <optional>
#include <string>
#include <utility>

#include "core/dtype_check.h"
#include "core/shape_check.h"
#include "ops/op_util.h"
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

// The Lanczos approximation of the gamma function with g = 7 and 9 terms (XLA's).
inline constexpr double kLanczosG = 7.0;
inline constexpr double kLanczosBase = 0.99999999999980993227684700473478;
inline constexpr std::array<double, 8> kLanczosCoeffs = {
    676.520368121885098567009190444019, -1259.13921672240287047156078755283, 771.3234287776530788486528258894,
    -176.61502916214059906584551354,    12.507343278686904814458936853,      -0.13857109526572011689554707,
    9.984369578019570859563e-6,         1.50563273514931155834e-7};

// lgamma by the Lanczos approximation (g = 7, as XLA computes lax.lgamma), with Euler's
// reflection below 1/2.
inline Array lgamma_lanczos(const Array& x) {
  const DType dt = x.dtype();
  auto c = [dt](double v) { return constant(v, dt); };
  const auto& kCoeffs = kLanczosCoeffs;
  constexpr double g = kLanczosG;
  Array one = c(1.0), half = c(0.5);
  Array reflect = less(x, half);
  Array z = where(reflect, -x, x - one);
  Array acc = c(kLanczosBase);
  for (size_t i = 0; i < kCoeffs.size(); ++i) acc = acc + c(kCoeffs[i]) / ((z + c(double(i))) + one);
  Array tz = c(g + 0.5) + z;
  Array log_t = c(std::log(g + 0.5)) + log1p(z / c(g + 0.5));
  Array log_y = (c((std::numbers::ln2 + std::log(std::numbers::pi)) / 2) + ((z + half) - tz / log_t) * log_t) + log(acc);
  Array abs_x = abs(x);
  Array frac = abs_x - floor(abs_x);
  Array reduced = where(greater(frac, half), one - frac, frac);
  Array denom = log(sin(c(std::numbers::pi) * reduced));
  Array reflection = where(isfinite(denom), (c(std::log(std::numbers::pi)) - denom) - log_y, -denom);
  Array out = where(reflect, reflection, log_y);
  return where(isinf(x), c(INFINITY), out);
}

// digamma by differentiating the same Lanczos sum (as XLA computes lax.digamma), with the
// reflection psi(x) = psi(1 - x) - pi cot(pi x) below 1/2; NaN at the poles.
inline Array digamma_lanczos(const Array& x) {
  const DType dt = x.dtype();
  auto c = [dt](double v) { return constant(v, dt); };
  Array one = c(1.0), half = c(0.5), zero = c(0.0);
  Array reflect = less(x, half);
  Array z = where(reflect, -x, x - one);
  Array num = zero, den = c(kLanczosBase);
  for (size_t i = 0; i < kLanczosCoeffs.size(); ++i) {
    Array zi = (z + c(double(i))) + one;
    num = num - c(kLanczosCoeffs[i]) / (zi * zi);
    den = den + c(kLanczosCoeffs[i]) / zi;
  }
  Array tz = c(kLanczosG + 0.5) + z;
  Array log_t = c(std::log(kLanczosG + 0.5)) + log1p(z / c(kLanczosG + 0.5));
  Array y = (log_t + num / den) - c(kLanczosG) / tz;
  Array reduced = x + abs(floor(x + half));
  Array pi = c(std::numbers::pi);
  Array reflection = y - pi * cos(pi * reduced) / sin(pi * reduced);
  Array out = where(reflect, reflection, y);
  return where(logical_and(less_equal(x, zero), equal(x, floor(x))), c(NAN), out);
}

}  // namespace tessel::random::sampler
