// jax.numpy's element-wise functions composed of primitives (include/tessel/numpy.h). Each
// follows jnp's formula (ufuncs.py, lax_numpy.py) so that values agree bit for bit where the
// primitives do; the bit-level ones (signbit, nextafter, frexp) work on the float's bits.
#include <cmath>
#include <limits>
#include <numbers>

#include "numpy/numpy_util.h"
#include "tessel/control_flow.h"
#include "tessel/error.h"
#include "tessel/numpy.h"
#include "tessel/ops.h"
#include "tessel/random.h"
#include "tessel/transforms.h"

namespace tessel {

namespace numpy {

std::vector<Array> promote_inexact(std::vector<Array> xs) {
  xs = ops::promote_all(std::move(xs));
  for (Array& x : xs) x = ops::to_inexact(x);
  return xs;
}

FloatLayout float_layout(const std::string& op, DType d) {
  switch (d) {
    case DType::float16: return {10, 5, -14, DType::int16, 65504.0, 6.103515625e-05};
    case DType::bfloat16: return {7, 8, -126, DType::int16, 3.3895313892515355e38, 1.1754943508222875e-38};
    case DType::float32:
      return {23, 8, -126, DType::int32, double(std::numeric_limits<float>::max()),
              double(std::numeric_limits<float>::min())};
    case DType::float64:
      return {52, 11, -1022, DType::int64, std::numeric_limits<double>::max(), std::numeric_limits<double>::min()};
    default:
      throw DTypeError(op + ": dtype " + dtype_name(d) +
                       " is not supported; expected a floating dtype (float16, bfloat16, float32, float64)");
  }
}

void check_real(const std::string& op, const Array& x) {
  if (is_complex(x.dtype()))
    throw DTypeError(op + ": complex inputs (" + dtype_name(x.dtype()) +
                     ") are not supported; pass real values, e.g. abs(x) or real(x)");
}

}  // namespace numpy

using numpy::check_real;
using numpy::promote_inexact;

namespace {

/// A constant of x's dtype.
Array like(const Array& x, double v) { return full_like(x, Scalar(v)); }

/// The integer bits of a floating x (bitcast to the signed integer of its width).
Array float_bits(const Array& x, const numpy::FloatLayout& l) { return bitcast_convert_type(x, l.bits); }

/// A signed-integer constant of x's dtype.
Array int_like(const Array& x, int64_t v) { return full_like(x, Scalar(v)); }

/// x where it is not +inf, else 0 (JAX's guard in logaddexp's derivative).
Array replace_posinf(const Array& x) { return where(isposinf(x), zeros_like(x), x); }

Array logaddexp_value(const Array& x1, const Array& x2) {
  const Array amax = maximum(x1, x2);
  const Array delta = x1 - x2;
  return where(isnan(delta), x1 + x2, amax + log1p(exp(-abs(delta))));
}

// jnp.logaddexp's rule: d/dx1 = exp(x1 - out), d/dx2 = exp(x2 - out), +inf guarded.
const auto logaddexp_fn = custom_jvp(
    [](const Array& x1, const Array& x2) { return logaddexp_value(x1, x2); },
    [](const std::tuple<Array, Array>& p, const std::tuple<Array, Array>& t) {
      const auto& [x1, x2] = p;
      const Array out = logaddexp_value(x1, x2);
      const Array o = replace_posinf(out);
      return std::pair(out, std::get<0>(t) * exp(replace_posinf(x1) - o) + std::get<1>(t) * exp(replace_posinf(x2) - o));
    });

}  // namespace

Array hypot(const Array& a, const Array& b) {
  auto xs = promote_inexact({a, b});
  check_real("hypot", xs[0]);
  Array x1 = abs(xs[0]), x2 = abs(xs[1]);
  const Array idx_inf = logical_or(isposinf(x1), isposinf(x2));
  const Array hi = maximum(x1, x2), lo = minimum(x1, x2);
  const Array hi_zero = hi == Array(0);
  const Array r = where(hi_zero, hi, hi * sqrt(Array(1) + square(lo / where(hi_zero, ones_like(hi), hi))));
  return where(idx_inf, like(r, INFINITY), r);
}

Array copysign(const Array& a, const Array& b) {
  auto xs = promote_inexact({a, b});
  check_real("copysign", xs[0]);
  return where(signbit(xs[1]), -abs(xs[0]), abs(xs[0]));
}

Array signbit(const Array& x) {
  const DType d = x.dtype();
  if (is_integer(d)) return x < Array(0);
  if (is_bool(d)) return zeros_like(x).astype(DType::bool_);
  const numpy::FloatLayout l = numpy::float_layout("signbit", d);
  return float_bits(x, l) < Array(0);
}

Array nextafter(const Array& a, const Array& b) {
  auto xs = promote_inexact({a, b});
  check_real("nextafter", xs[0]);
  const Array &x = xs[0], &y = xs[1];
  const numpy::FloatLayout l = numpy::float_layout("nextafter", x.dtype());
  const Array ix = float_bits(x, l);
  // Away from zero the magnitude bits grow by one; towards zero they shrink by one.
  const Array away = (y > x) == (x > Array(0));
  const Array stepped = bitcast_convert_type(where(away, ix + int_like(ix, 1), ix - int_like(ix, 1)), x.dtype());
  // From zero: the smallest subnormal with y's sign.
  const Array smallest = bitcast_convert_type(int_like(ix, 1), x.dtype());
  const Array from_zero = where(signbit(y), -smallest, smallest);
  Array r = where(x == Array(0), from_zero, stepped);
  r = where(x == y, y, r);
  return where(logical_or(isnan(x), isnan(y)), x + y, r);
}

Array spacing(const Array& x0) {
  const Array x = promote_inexact({x0})[0];
  check_real("spacing", x);
  const Array inf = like(x, INFINITY);
  if (x.dtype() == DType::float16) return nextafter(x, inf) - x;
  const Array r = nextafter(x, copysign(inf, x)) - x;
  const Array smallest = bitcast_convert_type(int_like(float_bits(x, numpy::float_layout("spacing", x.dtype())), 1),
                                              x.dtype());
  return where(r == Array(0), copysign(smallest, x), r);
}

std::pair<Array, Array> frexp(const Array& x0) {
  const Array x = promote_inexact({x0})[0];
  check_real("frexp", x);
  const numpy::FloatLayout l = numpy::float_layout("frexp", x.dtype());
  const int64_t mask = (int64_t(1) << l.nexp) - 1;
  const int64_t bias = 1 - l.minexp;
  // Denormals are scaled into the normal range first, their exponent corrected after.
  const Array denormal = abs(x) < like(x, l.tiny);
  Array bits = float_bits(where(denormal, x * like(x, std::ldexp(1.0, l.nmant)), x), l);
  Array e = where(denormal, int_like(bits, -l.nmant), zeros_like(bits));
  e = e + (right_shift(bits, int_like(bits, l.nmant)) & int_like(bits, mask)) - int_like(bits, bias - 1);
  bits = bits & int_like(bits, ~(mask << l.nmant));
  bits = bits | int_like(bits, (bias - 1) << l.nmant);
  const Array m = bitcast_convert_type(bits, x.dtype());
  const Array special = logical_or(logical_or(isinf(x), isnan(x)), x == Array(0));
  return {where(special, x, m), where(special, zeros_like(e), e).astype(DType::int32)};
}

Array ldexp(const Array& x1, const Array& x2) {
  if (is_complex(x1.dtype()) || is_inexact(x2.dtype()))
    throw DTypeError(std::string("ldexp: inputs (") + dtype_name(x1.dtype()) + ", " + dtype_name(x2.dtype()) +
                     ") are not supported; x1 must be real and x2 an integer");
  const Array x = promote_inexact({x1})[0];
  // The exponent is split off first so that a small x1 and a large x2 do not overflow.
  auto [m, e0] = frexp(x);
  Array e = (e0.astype(x2.dtype()) + x2).astype(x.dtype());
  const Array up = e > Array(0);
  m = where(up, m * Array(2), m);
  e = where(up, e - Array(1), e);
  const Array r = m * pow(like(m, 2.0), e);
  return where(logical_or(isinf(x), x == Array(0)), x, r);
}

std::pair<Array, Array> modf(const Array& x0) {
  const Array x = promote_inexact({x0})[0];
  const Array whole = where(x >= Array(0), floor(x), ceil(x));
  return {x - whole, whole};
}

std::pair<Array, Array> divmod(const Array& x1, const Array& x2) { return {floor_divide(x1, x2), remainder(x1, x2)}; }

Array logaddexp(const Array& a, const Array& b) {
  auto xs = promote_inexact({a, b});
  check_real("logaddexp", xs[0]);
  return logaddexp_fn(xs[0], xs[1]);
}

Array logaddexp2(const Array& a, const Array& b) {
  auto xs = promote_inexact({a, b});
  check_real("logaddexp2", xs[0]);
  const Array &x1 = xs[0], &x2 = xs[1];
  const Array amax = maximum(x1, x2);
  const Array delta = x1 - x2;
  return where(isnan(delta), x1 + x2, amax + like(amax, 1 / std::numbers::ln2) * log1p(exp2(-abs(delta))));
}

Array sinc(const Array& x0) {
  const Array x = promote_inexact({x0})[0];
  const Array zero = x == Array(0);
  // The safe argument keeps 0/0 out of the unused branch and out of its derivative.
  const Array safe = where(zero, ones_like(x), like(x, std::numbers::pi) * x);
  return where(zero, ones_like(x), sin(safe) / safe);
}

Array deg2rad(const Array& x) { return promote_inexact({x})[0] * Array(std::numbers::pi / 180); }
Array radians(const Array& x) { return deg2rad(x); }
Array rad2deg(const Array& x) { return promote_inexact({x})[0] * Array(180 / std::numbers::pi); }
Array degrees(const Array& x) { return rad2deg(x); }

Array heaviside(const Array& a, const Array& b) {
  auto xs = promote_inexact({a, b});
  const Array &x1 = xs[0], &x2 = xs[1];
  const Array zero = zeros_like(x1);
  return where(x1 < zero, zero, where(x1 > zero, ones_like(x1), where(isnan(x1), x1, x2)));
}

Array gcd(const Array& a, const Array& b) {
  auto xs = ops::promote_all({a, b});
  if (!is_integer(xs[0].dtype()))
    throw DTypeError(std::string("gcd: dtype ") + dtype_name(xs[0].dtype()) + " is not supported; expected integers");
  const Shape s = broadcast_shapes({xs[0].shape(), xs[1].shape()});
  using Pair = std::tuple<Array, Array>;
  // Euclid's algorithm on every element at once, until every remainder is 0.
  const Pair out = while_loop([](const Pair& p) { return any(std::get<1>(p) != Array(0)); },
                              [](const Pair& p) {
                                const auto& [x1, x2] = p;
                                const Array nz = x2 != Array(0);
                                const Array safe = where(nz, x2, ones_like(x2));
                                return Pair{where(nz, x2, x1), where(nz, rem(x1, safe), zeros_like(x2))};
                              },
                              Pair{broadcast_to(abs(xs[0]), s), broadcast_to(abs(xs[1]), s)});
  return std::get<0>(out);
}

Array lcm(const Array& a, const Array& b) {
  auto xs = ops::promote_all({a, b});
  if (!is_integer(xs[0].dtype()))
    throw DTypeError(std::string("lcm: dtype ") + dtype_name(xs[0].dtype()) + " is not supported; expected integers");
  const Array x1 = abs(xs[0]), x2 = abs(xs[1]);
  const Array d = gcd(x1, x2);
  const Array zero = d == Array(0);
  return where(zero, zeros_like(d), x1 * floor_divide(x2, where(zero, ones_like(d), d)));
}

Array float_power(const Array& a, const Array& b) {
  auto xs = promote_inexact({a, b});
  return pow(xs[0], xs[1]);
}

Array trunc(const Array& x) {
  if (!is_inexact(x.dtype())) return x;
  return where(x < Array(0), ceil(x), floor(x));
}

Array fix(const Array& x) {
  if (!is_inexact(x.dtype())) return x;
  return where(x >= Array(0), floor(x), ceil(x));
}

Array rint(const Array& x) {
  const DType d = x.dtype();
  if (is_bool(d) || is_integer(d)) return x.astype(default_float);
  if (is_complex(d)) return complex(rint(real(x)), rint(imag(x)));
  return round(x);
}

Array fabs(const Array& x0) {
  const Array x = promote_inexact({x0})[0];
  check_real("fabs", x);
  return abs(x);
}

Array positive(const Array& x) {
  if (is_bool(x.dtype())) throw DTypeError("positive: bool inputs are not supported; convert to a numeric dtype first");
  return x;
}

Array fmax(const Array& x1, const Array& x2) { return where(logical_or(x1 > x2, isnan(x2)), x1, x2); }
Array fmin(const Array& x1, const Array& x2) { return where(logical_or(x1 < x2, isnan(x2)), x1, x2); }

Array nan_to_num(const Array& x, const NanToNumOptions& o) {
  const DType d = x.dtype();
  if (!is_inexact(d)) return x;
  if (is_complex(d)) return complex(nan_to_num(real(x), o), nan_to_num(imag(x), o));
  const numpy::FloatLayout l = numpy::float_layout("nan_to_num", d);
  Array r = where(isnan(x), like(x, o.nan), x);
  r = where(isposinf(r), like(x, o.posinf.value_or(l.max)), r);
  return where(isneginf(r), like(x, o.neginf.value_or(-l.max)), r);
}

Array angle(const Array& z, bool deg) {
  const Array x = promote_inexact({z})[0];
  const Array re = is_complex(x.dtype()) ? real(x) : x;
  const Array im = is_complex(x.dtype()) ? imag(x) : zeros_like(x);
  const Array a = atan2(im, re);
  return deg ? rad2deg(a) : a;
}

Array isclose(const Array& a0, const Array& b0, const CloseOptions& o) {
  auto xs = promote_inexact({a0, b0});
  const Array &a = xs[0], &b = xs[1];
  const DType real_d = real_dtype(a.dtype());
  const Array rtol = Array(o.rtol).astype(real_d), atol = Array(o.atol).astype(real_d);
  const Array in_range = abs(a - b) <= atol + rtol * abs(b);
  Array r = logical_or(a == b, logical_and(isfinite(b), in_range));
  if (o.equal_nan) r = logical_or(r, logical_and(isnan(a), isnan(b)));
  return r;
}

Array allclose(const Array& a, const Array& b, const CloseOptions& o) { return all(isclose(a, b, o)); }

Array array_equal(const Array& a1, const Array& a2, bool equal_nan) {
  if (a1.shape() != a2.shape()) return Array(false).astype(DType::bool_);
  Array eq = a1 == a2;
  if (equal_nan) eq = logical_or(eq, logical_and(isnan(a1), isnan(a2)));
  return all(eq);
}

Array array_equiv(const Array& a1, const Array& a2) {
  try {
    (void)broadcast_shapes({a1.shape(), a2.shape()});
  } catch (const ShapeError&) {
    return Array(false).astype(DType::bool_);
  }
  return all(a1 == a2);
}

namespace {
Array is_signed_inf(const std::string& op, const Array& x, double inf) {
  if (is_complex(x.dtype())) throw DTypeError(op + ": complex inputs are not supported (infinity has no sign there)");
  if (!is_floating(x.dtype())) return zeros_like(x).astype(DType::bool_);
  return x == like(x, inf);
}
}  // namespace

Array isneginf(const Array& x) { return is_signed_inf("isneginf", x, -INFINITY); }
Array isposinf(const Array& x) { return is_signed_inf("isposinf", x, INFINITY); }

Array isreal(const Array& x) {
  return is_complex(x.dtype()) ? imag(x) == Array(0) : ones_like(x).astype(DType::bool_);
}
Array iscomplex(const Array& x) {
  return is_complex(x.dtype()) ? imag(x) != Array(0) : zeros_like(x).astype(DType::bool_);
}
bool iscomplexobj(const Array& x) { return is_complex(x.dtype()); }
bool isrealobj(const Array& x) { return !is_complex(x.dtype()); }

Array bitwise_count(const Array& x) {
  const DType d = x.dtype();
  if (!is_integer(d) && !is_bool(d))
    throw DTypeError(std::string("bitwise_count: dtype ") + dtype_name(d) + " is not supported; expected integers or bool");
  if (is_bool(d)) return x.astype(DType::uint8);
  // Population count of |x| by the usual halving sums, on the unsigned type of x's width.
  const size_t bytes = itemsize(d);
  const DType u = bytes == 1 ? DType::uint8 : bytes == 2 ? DType::uint16 : bytes == 4 ? DType::uint32 : DType::uint64;
  Array v = bitcast_convert_type(abs(x), u);
  const auto c = [&](uint64_t m) { return full_like(v, Scalar(m)); };
  const auto sh = [&](const Array& a, int64_t n) { return right_shift(a, full_like(a, Scalar(uint64_t(n)))); };
  v = v - (sh(v, 1) & c(0x5555555555555555ull));
  v = (v & c(0x3333333333333333ull)) + (sh(v, 2) & c(0x3333333333333333ull));
  v = (v + sh(v, 4)) & c(0x0f0f0f0f0f0f0f0full);
  for (size_t width = 8; width < bytes * 8; width *= 2) v = v + sh(v, int64_t(width));
  return (v & c(0xff)).astype(DType::uint8);
}

}  // namespace tessel
