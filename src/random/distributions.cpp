// jax.random's samplers as compositions over ts::random's bits and floats (no kernels of
// their own): each follows the sequence of operations of jax/_src/random/core.py (which
// bits, which key split, which float construction) so draws equal JAX's for the same key.
#include <cmath>
#include <numbers>
#include <string>

#include "random/sampler_util.h"
#include "tessel/lax_extra.h"
#include "tessel/sort.h"
#include "tessel/transforms.h"

namespace tessel::random {
using namespace sampler;
namespace {

DType int_of_width(size_t bytes) {
  return bytes == 2 ? DType::int16 : bytes == 4 ? DType::int32 : DType::int64;
}

// lax.nextafter(x, +inf) (up) or (x, -inf), composed from the float's bits: adding 1 to the
// bits as a signed integer moves a float away from zero, subtracting 1 towards it.
Array next_float(const Array& x, bool up) {
  const DType d = x.dtype(), it = int_of_width(itemsize(d));
  Array i = bitcast_convert_type(x, it);
  Array zero = constant(0.0, d), one = Array(Scalar(1, it));
  Array grow = up ? greater(x, zero) : less(x, zero);
  Array stepped = bitcast_convert_type(where(grow, i + one, i - one), d);
  const double tiny = float_info(d).denorm_min();
  Array from_zero = constant(up ? tiny : -tiny, d);
  Array limit = constant(up ? INFINITY : -INFINITY, d);
  Array out = where(equal(x, zero), from_zero, stepped);
  return where(logical_or(isnan(x), equal(x, limit)), x, out);
}

// iinfo(d).min / max as doubles are inexact for 64-bit types, so they are kept as Scalars.
std::pair<Scalar, Scalar> int_range(DType d) {
  return visit_dtype(d, [&](auto z) -> std::pair<Scalar, Scalar> {
    using T = decltype(z);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
      return {Scalar(std::numeric_limits<T>::min()), Scalar(std::numeric_limits<T>::max())};
    else
      return {Scalar(0), Scalar(0)};
  });
}

// JAX's _convert_and_clip_integer: val (an integer array) converted to `to`, clipped to the
// range both dtypes share instead of wrapping.
Array convert_and_clip(const Array& val, DType to) {
  auto [tlo, thi] = int_range(to);
  auto [vlo, vhi] = int_range(val.dtype());
  // The shared range: distinct integer dtypes' bounds differ by far more than a double's
  // rounding, so comparing them as doubles orders them correctly.
  auto as_d = [](const Scalar& v) { return v.to<double>(); };
  const Scalar lo = as_d(tlo) > as_d(vlo) ? tlo : vlo;
  const Scalar hi = as_d(thi) < as_d(vhi) ? thi : vhi;
  return astype(clip(val, Array(lo.astype(val.dtype())), Array(hi.astype(val.dtype()))), to);
}

DType uint_of_bytes(size_t bytes) {
  return bytes == 1 ? DType::uint8 : bytes == 2 ? DType::uint16 : bytes == 4 ? DType::uint32 : DType::uint64;
}

Array randint_impl(const Array& key, const Shape& shape, Array minval, Array maxval, DType dtype) {
  if (!is_integer(minval.dtype())) minval = astype(minval, DType::int32);
  if (!is_integer(maxval.dtype())) maxval = astype(maxval, DType::int32);
  const auto [dlo, dhi] = int_range(dtype);
  Array maxval_out_of_range = greater(maxval, convert_and_clip(Array(dhi), maxval.dtype()));
  minval = convert_and_clip(minval, dtype);
  maxval = convert_and_clip(maxval, dtype);
  const int nbits = int(itemsize(dtype)) * 8;
  const DType ut = uint_of_bytes(itemsize(dtype));
  auto [k1, k2] = split2(key);
  Array higher = bits(k1, shape, ut), lower = bits(k2, shape, ut);
  Array span = astype(maxval - minval, ut);
  Array one = Array(Scalar(1, ut));
  span = where(less_equal(maxval, minval), one, span);
  span = where(logical_and(maxval_out_of_range, greater(maxval, minval)), span + one, span);
  // 2^nbits mod span, as (2^(nbits/2) mod span)^2 mod span, in the unsigned dtype.
  Array half = Array(Scalar(uint64_t(1) << (nbits / 2), ut));
  Array multiplier = rem(half, span);
  multiplier = rem(multiplier * multiplier, span);
  Array offset = rem(rem(higher, span) * multiplier + rem(lower, span), span);
  return broadcast_to(minval + astype(offset, dtype), shape);
}


}  // namespace

Array randint(const Array& key, const Shape& shape, const Array& minval, const Array& maxval, DType dtype) {
  check_key("randint", key);
  check_int("randint", dtype);
  sample_shape("randint", shape, {minval.shape(), maxval.shape()});
  if (is_bool(minval.dtype()) || is_complex(minval.dtype()) || is_bool(maxval.dtype()) || is_complex(maxval.dtype()))
    throw DTypeError("randint: minval and maxval must be integer or real arrays, got " + minval.aval().to_string() +
                     " and " + maxval.aval().to_string());
  if (itemsize(dtype) < 4) {
    // Narrow dtypes sample at int32 over the clipped range, then convert (as JAX does).
    auto [lo, hi] = int_range(dtype);
    Array mn = clip(astype(minval, DType::int32), Array(lo.astype(DType::int32)), Array(hi.astype(DType::int32)));
    Array mx = clip(astype(maxval, DType::int32), Array(lo.astype(DType::int32)),
                    Array(hi.astype(DType::int32)) + Array(Scalar(1, DType::int32)));
    return astype(randint_impl(key, shape, mn, mx, DType::int32), dtype);
  }
  return randint_impl(key, shape, minval, maxval, dtype);
}

namespace {
// x[i] along the first axis.
Array leading(const Array& x, int64_t i) { return lax::index_in_dim(x, i, 0, false); }

// Two uniform draws per element of `shape`, as JAX's mode "high" draws them: one uniform
// array of shape (2,) + shape, split along its first axis.
std::pair<Array, Array> uniform_pair(const Array& key, const Shape& shape, DType dtype) {
  Shape s2 = shape;
  s2.insert(s2.begin(), 2);
  Array u = uniform(key, s2, dtype);
  return {leading(u, 0), leading(u, 1)};
}
}  // namespace

Array bernoulli(const Array& key, const Array& p, std::optional<Shape> shape, Mode mode) {
  check_key("bernoulli", key);
  if (!is_floating(p.dtype()))
    throw DTypeError("bernoulli: the probability p must have a floating dtype, got " + p.aval().to_string() +
                     "; convert it with astype(float32)");
  if (mode == Mode::highest)
    throw ValueError("bernoulli: mode must be Mode::low or Mode::high (JAX's 'low' and 'high'), got Mode::highest");
  // A weak float (a C++ double) samples as float32, JAX's default float.
  const DType dtype = p.aval().weak_type ? DType::float32 : p.dtype();
  const Shape s = sample_shape("bernoulli", shape, {p.shape()});
  if (mode == Mode::low) return less(uniform(key, s, dtype), astype(p, dtype));
  // The second uniform refines the first below its resolution, 2^-nmant (the dtype's epsilon).
  auto [u1, u2] = uniform_pair(key, s, dtype);
  return less(u2 * constant(float_info(dtype).eps(), dtype), astype(p, dtype) - u1);
}

Array categorical(const Array& key, const Array& logits, int64_t axis, std::optional<Shape> shape, bool replace,
                  Mode mode) {
  check_key("categorical", key);
  if (!is_floating(logits.dtype()))
    throw DTypeError("categorical: logits must be a floating array, got " + logits.aval().to_string());
  const int64_t nd = logits.ndim();
  if (nd == 0 || axis < -nd || axis >= nd)
    throw ValueError("categorical: axis " + std::to_string(axis) + " is out of range for logits of shape " +
                     shape_to_string(logits.shape()) + "; logits need at least one dimension");
  const int64_t ax = axis < 0 ? axis + nd : axis;
  Shape batch = logits.shape();
  batch.erase(batch.begin() + ax);
  const Shape s = shape ? *shape : batch;
  if (s.size() < batch.size() || !std::equal(batch.begin(), batch.end(), s.end() - int64_t(batch.size())))
    throw ShapeError("categorical: shape " + shape_to_string(s) + " must end with the logits' batch shape " +
                     shape_to_string(batch) + " (logits " + shape_to_string(logits.shape()) + " without axis " +
                     std::to_string(axis) + ")");
  const Shape prefix(s.begin(), s.end() - int64_t(batch.size()));
  if (replace) {
    // Gumbel-max: one Gumbel draw per (sample, category), argmax over the categories.
    Shape gshape = prefix;
    Shape lshape = batch;
    lshape.insert(lshape.begin() + ax, logits.shape()[size_t(ax)]);
    gshape.insert(gshape.end(), lshape.begin(), lshape.end());
    Array lg = logits;
    for (size_t i = 0; i < prefix.size(); ++i) lg = expand_dims(lg, {0});
    return argmax(gumbel(key, gshape, logits.dtype(), mode) + lg, int64_t(prefix.size()) + ax);
  }
  int64_t k = 1;
  for (int64_t d : prefix) k *= d;
  const int64_t ncat = logits.shape()[size_t(ax)];
  if (k > ncat)
    throw ValueError("categorical: " + std::to_string(k) + " samples without replacement exceed the " +
                     std::to_string(ncat) + " categories along axis " + std::to_string(axis));
  Array perturbed = logits + gumbel(key, logits.shape(), logits.dtype(), mode);
  Array idx = top_k(moveaxis(perturbed, ax, -1), k).second;  // batch + (k,)
  // The k draws lead: (k,) + batch, then the prefix's own shape.
  return reshape(moveaxis(idx, -1, 0), s);
}

Array truncated_normal(const Array& key, const Array& lower, const Array& upper, std::optional<Shape> shape,
                       DType dtype) {
  check_key("truncated_normal", key);
  check_float("truncated_normal", dtype);
  const Shape s = sample_shape("truncated_normal", shape, {lower.shape(), upper.shape()});
  Array sqrt2 = constant(std::numbers::sqrt2, dtype);
  Array lo = astype(lower, dtype), hi = astype(upper, dtype);
  // jax.random divides by sqrt(2); XLA rewrites a division by a constant into a product with
  // the constant's reciprocal (rounded), and so does this, so the bounds equal JAX's.
  Array inv_sqrt2 = constant(1.0, dtype) / sqrt2;
  Array a = ops::xla_erf(lo * inv_sqrt2), b = ops::xla_erf(hi * inv_sqrt2);
  Array out = sqrt2 * erf_inv(uniform(key, s, dtype, a, b));
  // Rounding (or u landing on a) could reach the bounds: clamp into the open interval.
  return clip(out, next_float(stop_gradient(lo), true), next_float(stop_gradient(hi), false));
}

// JAX's uniform(minval = tiny, maxval = 1) as XLA compiles it: the bounds are constants, 1 - tiny
// rounds to 1, so XLA drops the product and folds (f - 1) + tiny into f + (-1 + tiny) = f - 1:
// max(tiny, the [0, 1) uniform). Only in float16 is tiny (6.1e-5) large enough for this to
// differ from rounding (f - 1) + tiny; the other dtypes get the same values either way.
namespace {
Array uniform_from_tiny(const Array& key, const Shape& shape, DType dtype) {
  return maximum(constant(float_info(dtype).tiny(), dtype), uniform(key, shape, dtype));
}
}  // namespace

namespace {
// 64 random bits per element (bits[0] high, bits[1] low: uint32[2, ...]) as the float32 in (0, 1)
// they spell in fixed point, without rounding small values to 0: the leading one's position
// gives the exponent, the 23 bits after it the mantissa (JAX's _safe_int_to_float).
Array fixed_point_to_float32(const Array& bits) {
  auto u32 = [](uint32_t v) { return Array(Scalar(v, DType::uint32)); };
  const FloatInfo f32 = float_info(DType::float32);
  const uint32_t nmant = uint32_t(f32.nmant);
  const Array zeros = lax::clz(bits);
  const Array hi = leading(bits, 0), lo = leading(bits, 1), hi_zeros = leading(zeros, 0), lo_zeros = leading(zeros, 1);
  const Array hi_empty = equal(hi_zeros, u32(32));
  Array mantissa = bitwise_or(left_shift(hi, hi_zeros),
                              where(hi_empty, left_shift(lo, lo_zeros), lax::shift_right_logical(lo, u32(32) - hi_zeros)));
  mantissa = bitwise_and(lax::shift_right_logical(mantissa, u32(32 - nmant - 1)), u32((1u << nmant) - 1));
  Array exponent = left_shift(u32(uint32_t(-f32.minexp)) - where(hi_empty, u32(32) + lo_zeros, hi_zeros), u32(nmant));
  exponent = bitwise_and(exponent, u32((1u << 30) - (1u << 22)));
  return bitcast_convert_type(bitwise_or(exponent, mantissa), DType::float32);
}

// Mode::highest in float32 (JAX's gumbel "highest"): u from 64 bits; below 1/2 -log(-log1p(-u)),
// above it 1 - u (64-bit two's complement of the bits) through -log(-log(1 - u)), so neither
// end of (0, 1) loses precision.
Array gumbel_highest(const Array& key, const Shape& shape) {
  Shape s2 = shape;
  s2.insert(s2.begin(), 2);
  const Array b = bits(key, s2, DType::uint32);
  Array neg = bitwise_not(b);
  const Array lo = leading(neg, 1);
  const Array carry = astype(equal(lo, Array(Scalar(~uint32_t(0), DType::uint32))), DType::uint32);
  neg = neg + stack({carry, ones_like(lo)});
  const Array flip = less(leading(b, 0), Array(Scalar(uint32_t(1) << 31, DType::uint32)));
  const Array x = fixed_point_to_float32(where(broadcast_to(flip, s2), b, neg));
  return where(flip, -ops::xla_log(-ops::xla_log1p(-x)), -ops::xla_log(-ops::xla_log(x)));
}
}  // namespace

Array gumbel(const Array& key, const Shape& shape, DType dtype, Mode mode) {
  check_float("gumbel", dtype);
  if (mode == Mode::low) return -ops::xla_log(-ops::xla_log(uniform_from_tiny(key, shape, dtype)));
  if (mode == Mode::highest && dtype == DType::float32) return gumbel_highest(key, shape);
  // high (and highest outside float32, as in JAX): below 1/2 the second uniform fills in the
  // bits under the first one's resolution; tiny keeps u off 0.
  auto [high, low] = uniform_pair(key, shape, dtype);
  const FloatInfo info = float_info(dtype);
  Array x = where(greater_equal(high, constant(0.5, dtype)), high,
                  high + constant(info.eps(), dtype) * low + constant(info.tiny(), dtype));
  return -ops::xla_log(-ops::xla_log1p(-x));
}

Array exponential(const Array& key, const Shape& shape, DType dtype) {
  check_float("exponential", dtype);
  return -ops::xla_log1p(-uniform(key, shape, dtype));
}

Array laplace(const Array& key, const Shape& shape, DType dtype) {
  check_float("laplace", dtype);
  Array u = uniform(key, shape, dtype, constant(-1.0 + float_info(dtype).epsneg(), dtype), constant(1.0, dtype));
  return sign(u) * ops::xla_log1p(-abs(u));
}

Array logistic(const Array& key, const Shape& shape, DType dtype) {
  check_float("logistic", dtype);
  Array x = uniform_from_tiny(key, shape, dtype);
  return ops::xla_log(x) - ops::xla_log1p(-x);
}

Array cauchy(const Array& key, const Shape& shape, DType dtype) {
  check_float("cauchy", dtype);
  Array u = uniform(key, shape, dtype, constant(float_info(dtype).eps(), dtype), constant(1.0, dtype));
  return ops::xla_tan(constant(std::numbers::pi, dtype) * (u - constant(0.5, dtype)));
}

Array rademacher(const Array& key, const Shape& shape, DType dtype) {
  detail::checked_dtype(dtype, "rademacher");
  if (is_bool(dtype) || is_complex(dtype))
    throw DTypeError(std::string("rademacher: dtype must be an integer or floating dtype, got ") + dtype_name(dtype));
  // JAX's p = 0.5 is a Python float: float32, or float64 where JAX runs with x64, which a
  // 64-bit dtype needs (then the draw compares float64 uniforms).
  const DType p_dtype = itemsize(dtype) == 8 ? DType::float64 : DType::float32;
  Array b = astype(bernoulli(key, Array(Scalar(0.5, p_dtype)), shape), dtype);
  return Array(Scalar(2, dtype)) * b - Array(Scalar(1, dtype));
}

Array lognormal(const Array& key, const Array& sigma, std::optional<Shape> shape, DType dtype) {
  check_key("lognormal", key);
  check_float("lognormal", dtype);
  const Shape s = sample_shape("lognormal", shape, {sigma.shape()});
  return ops::xla_exp(normal(key, s, dtype) * astype(sigma, dtype));
}

Array pareto(const Array& key, const Array& b, std::optional<Shape> shape, DType dtype) {
  check_key("pareto", key);
  check_float("pareto", dtype);
  const Shape s = sample_shape("pareto", shape, {b.shape()});
  return ops::xla_exp(exponential(key, s, dtype) / astype(b, dtype));
}

Array weibull_min(const Array& key, const Array& scale, const Array& concentration, const Shape& shape,
                  DType dtype) {
  check_key("weibull_min", key);
  check_float("weibull_min", dtype);
  sample_shape("weibull_min", shape, {scale.shape(), concentration.shape()});
  Array u = uniform(key, shape, dtype);
  Array c = astype(concentration, dtype);
  return broadcast_to(ops::xla_pow(-ops::xla_log1p(-u), constant(1.0, dtype) / c) * astype(scale, dtype), shape);
}

Array rayleigh(const Array& key, const Array& scale, std::optional<Shape> shape, DType dtype) {
  check_key("rayleigh", key);
  check_float("rayleigh", dtype);
  const Shape s = sample_shape("rayleigh", shape, {scale.shape()});
  Array u = uniform(key, s, dtype);
  return param(scale, dtype, s) * sqrt(ops::xla_log(u) * constant(-2.0, dtype));
}

Array maxwell(const Array& key, const Shape& shape, DType dtype) {
  check_float("maxwell", dtype);
  Shape s3 = shape;
  s3.push_back(3);
  Array n = normal(key, s3, dtype);
  // JAX's norm of the 3 components as XLA's CPU code sums them for up to 1000 rows: a chain of
  // fused multiply-adds, from x1^2 in float32 and from x0^2 in float64; half types add float32
  // squares in float32 (rounded to float16 first in float16, not in bfloat16, as XLA's fused
  // kernels do) and round the sum. Checked on 1000-row draws. From about 2000 rows XLA's code
  // differs (float32/float64: (x0^2 + x2^2) + x1^2 unfused), so larger draws differ from JAX's
  // in the last bit on about 12% of rows (docs/random.md).
  const int64_t last = int64_t(s3.size()) - 1;
  auto component = [&](int64_t i) { return lax::index_in_dim(n, i, last, false); };
  const Array x0 = component(0), x1 = component(1), x2 = component(2);
  if (dtype == DType::float16 || dtype == DType::bfloat16) {
    auto square = [dtype](const Array& x) {
      if (dtype == DType::float16) return astype(x * x, DType::float32);
      Array w = astype(x, DType::float32);
      return w * w;
    };
    return sqrt(astype((square(x1) + square(x0)) + square(x2), dtype));
  }
  const bool f32 = dtype == DType::float32;
  const Array& first = f32 ? x1 : x0;
  const Array& second = f32 ? x0 : x1;
  return sqrt(ops::fma(x2, x2, ops::fma(second, second, first * first)));
}

Array double_sided_maxwell(const Array& key, const Array& loc, const Array& scale, const Shape& shape,
                           DType dtype) {
  check_key("double_sided_maxwell", key);
  check_float("double_sided_maxwell", dtype);
  const Shape pshape = ops::broadcast_shapes("double_sided_maxwell", {loc.shape(), scale.shape()});
  Shape s = shape.empty() ? pshape : shape;
  s.insert(s.end(), pshape.begin(), pshape.end());
  auto [mkey, rkey] = split2(key);
  Array m = maxwell(mkey, s, dtype);
  Array sgn = rademacher(rkey, s, dtype);
  return sgn * m * astype(scale, dtype) + astype(loc, dtype);
}

Array triangular(const Array& key, const Array& left, const Array& mode, const Array& right,
                 std::optional<Shape> shape, DType dtype) {
  check_key("triangular", key);
  check_float("triangular", dtype);
  const Shape s = sample_shape("triangular", shape, {left.shape(), mode.shape(), right.shape()});
  Array l = param(left, dtype, s), r = param(right, dtype, s), m = param(mode, dtype, s);
  Array fc = (m - l) / (r - l);
  Array u = uniform(key, s, dtype);
  Array out1 = l + sqrt(u * (r - l) * (m - l));
  Array out2 = r - sqrt((constant(1.0, dtype) - u) * (r - l) * (r - m));
  return where(less(u, fc), out1, out2);
}

Array wald(const Array& key, const Array& mean, std::optional<Shape> shape, DType dtype) {
  check_key("wald", key);
  check_float("wald", dtype);
  const Shape s = sample_shape("wald", shape, {mean.shape()});
  auto [k1, k2] = split2(key);
  Array mu = param(mean, dtype, s);
  Array v = normal(k1, s, dtype);
  Array z = uniform(k2, s, dtype);
  Array y = v * v;
  Array y_sq = y * y;
  Array mu_sq = mu * mu;
  Array root = sqrt(constant(4.0, dtype) * mu * y + mu_sq * y_sq);
  Array two = constant(2.0, dtype);
  Array x = mu + mu_sq * y / two - mu / two * root;
  return where(less_equal(z, mu / (mu + x)), x, mu_sq / x);
}

Array geometric(const Array& key, const Array& p, std::optional<Shape> shape, DType dtype) {
  check_key("geometric", key);
  check_int("geometric", dtype);
  if (is_complex(p.dtype()) || is_bool(p.dtype()))
    throw DTypeError("geometric: p must be a real array, got " + p.aval().to_string());
  const DType pd = is_floating(p.dtype()) && !p.aval().weak_type ? p.dtype() : DType::float32;
  const Shape s = sample_shape("geometric", shape, {p.shape()});
  Array u = uniform(key, s, pd);
  // u = 0 maps to 1 (JAX keeps its samples for a key while avoiding log(0)).
  u = where(equal(u, constant(0.0, pd)), constant(1.0, pd), u);
  Array g = floor(ops::xla_log(u) / broadcast_to(ops::xla_log1p(-astype(p, pd)), s)) + constant(1.0, pd);
  return astype(g, dtype);
}

Array key_data(const Array& keys) {
  if (keys.dtype() != DType::uint32 || keys.ndim() == 0 || keys.shape().back() != 2)
    throw ValueError("key_data: expected keys, a uint32 array of shape (..., 2), got " + keys.aval().to_string());
  return keys;
}

Array wrap_key_data(const Array& key_bits) {
  if (key_bits.dtype() != DType::uint32 || key_bits.ndim() == 0 || key_bits.shape().back() != 2)
    throw ValueError("wrap_key_data: threefry key data must be a uint32 array of shape (..., 2), got " +
                     key_bits.aval().to_string());
  return key_bits;
}

Array clone(const Array& key) {
  key_data(key);
  return key;
}

}  // namespace tessel::random
