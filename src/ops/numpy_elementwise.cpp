// jax.numpy-level element-wise functions and operators, composed from the primitives of
// elementwise.cpp: dtype promotion (to float for transcendental functions), divide,
// floor_divide, remainder, where, clip, isnan/isinf, logical_* and bitwise_*, complex parts.
#include <array>
#include <limits>
#include <numbers>

#include "ops/elementwise.h"

namespace tessel::ops {
namespace {

// ---- jax.numpy-level helpers ----

/// jnp's to_inexact_dtype: bool and integers up to 32 bits become the default float,
/// 64-bit integers float64.
DType to_inexact(DType d) {
  if (is_inexact(d)) return d;
  return d == DType::int64 || d == DType::uint64 ? DType::float64 : default_float;
}
Array inexact(const Array& x) { return convert(x, to_inexact(x.dtype()), x.weak_type()); }

Array unary(const Elementwise& e, const std::string& op, const Array& x) {
  check_class(op, x.dtype(), e.mask);
  return bind1(e.prim, {x});
}

/// How a binary function promotes its operands beyond jnp's result type.
enum class Promote {
  kAsIs,
  kNumeric,  // bool counts as the default int (jnp's promote_args_numeric: power, floor_divide, ...)
  kInexact   // integers and bool become floats (true division, atan2)
};

/// The operands promoted, checked against the dtype classes `mask` and broadcast.
// (In a std::array: every eager binary operation comes through here, and a vector would
// allocate.)
std::array<Array, 2> promoted(const std::string& op, const Array& a, const Array& b, Promote how, uint8_t mask) {
  PromotedType t = promote_types(a.dtype(), a.weak_type(), b.dtype(), b.weak_type());
  if (how == Promote::kInexact) t.dtype = to_inexact(t.dtype);
  if (how == Promote::kNumeric && is_bool(t.dtype)) t = {default_int, false};
  check_class(op, t.dtype, mask);
  std::array<Array, 2> xs{convert(a, t.dtype, t.weak), convert(b, t.dtype, t.weak)};
  // Equal shapes, or a scalar operand (the kernels take rank-0 operands as they are), need
  // no broadcast: the common small case skips the shape vectors broadcast_all builds.
  const Shape& sa = xs[0].shape();
  const Shape& sb = xs[1].shape();
  if (sa == sb || sa.empty() || sb.empty()) return xs;
  std::vector<Array> both = broadcast_all(op, {std::move(xs[0]), std::move(xs[1])});
  return {std::move(both[0]), std::move(both[1])};
}

Array binary(const Elementwise& e, const std::string& op, const Array& a, const Array& b,
             Promote how = Promote::kAsIs) {
  const std::array<Array, 2> xs = promoted(op, a, b, how, e.mask);
  return bind1(e.prim, std::span<const Array>(xs));
}

/// An integer divisor with its zeros replaced by 1: jnp.remainder and jnp.fmod give 0 there.
Array nonzero_divisor(const Array& y) { return is_integer(y.dtype()) ? where(y == 0, Array(1), y) : y; }

Array filled_like(const Array& x, Scalar v) { return broadcast_to(Array(v), x.shape()); }

}  // namespace
}  // namespace tessel::ops

namespace tessel {
using namespace ops;  // NOLINT: the primitives of elementwise.cpp

Array add(const Array& a, const Array& b) { return binary(add_p, "add", a, b); }
Array subtract(const Array& a, const Array& b) { return binary(sub_p, "subtract", a, b); }
Array multiply(const Array& a, const Array& b) { return binary(mul_p, "multiply", a, b); }
Array divide(const Array& a, const Array& b) { return binary(div_p, "divide", a, b, Promote::kInexact); }
Array true_divide(const Array& a, const Array& b) { return binary(div_p, "true_divide", a, b, Promote::kInexact); }
Array rem(const Array& a, const Array& b) { return binary(rem_p, "rem", a, b); }
Array pow(const Array& a, const Array& b) { return binary(pow_p, "pow", a, b, Promote::kNumeric); }
Array maximum(const Array& a, const Array& b) { return binary(max_p, "maximum", a, b); }
Array minimum(const Array& a, const Array& b) { return binary(min_p, "minimum", a, b); }
Array atan2(const Array& a, const Array& b) { return binary(atan2_p, "atan2", a, b, Promote::kInexact); }

// Python floor division, composed as jnp does.
Array floor_divide(const Array& a, const Array& b) {
  auto xs = promoted("floor_divide", a, b, Promote::kNumeric, kReal);
  const Array &x = xs[0], &y = xs[1];
  if (is_unsigned_int(x.dtype())) return bind1(div_p.prim, {x, y});
  if (is_signed_int(x.dtype())) {
    Array q = bind1(div_p.prim, {x, y});
    return where((sign(x) != sign(y)) & (rem(x, y) != 0), q - 1, q);
  }
  // Floats: CPython's float_divmod; by zero it is x / 0 (+-inf, or NaN for 0 / 0).
  Array mod = rem(x, y);
  Array q = where(y == 0, x, x - mod) / y;
  return round(where((mod != 0) & (sign(y) != sign(mod)), q - 1, q));
}

// The remainder takes the divisor's sign (Python %), from the truncated one.
Array remainder(const Array& a, const Array& b) {
  auto xs = promoted("remainder", a, b, Promote::kNumeric, kReal);
  const Array y = nonzero_divisor(xs[1]);
  Array r = rem(xs[0], y);
  return where(((r < 0) != (y < 0)) & (r != 0), r + y, r);
}

Array fmod(const Array& a, const Array& b) {
  // jnp.fmod replaces zero divisors only for integer operands: two bools divide as int32 by
  // lax.rem (x rem 0 = x).
  const bool bools = is_bool(result_type({a, b}).dtype);
  auto xs = promoted("fmod", a, b, Promote::kNumeric, kReal);
  return bind1(rem_p.prim, {xs[0], bools ? xs[1] : nonzero_divisor(xs[1])});
}

Array negative(const Array& x) { return unary(neg_p, "negative", x); }
Array abs(const Array& x) {
  if (is_bool(x.dtype()) || is_unsigned_int(x.dtype())) return x;
  return unary(abs_p, "abs", x);
}
Array sign(const Array& x) { return unary(sign_p, "sign", x); }
// floor, ceil and round leave integers as they are (as jnp does).
Array floor(const Array& x) { return is_inexact(x.dtype()) ? unary(floor_p, "floor", x) : x; }
Array ceil(const Array& x) { return is_inexact(x.dtype()) ? unary(ceil_p, "ceil", x) : x; }
Array round(const Array& x) {
  if (is_complex(x.dtype())) return complex(round(real(x)), round(imag(x)));
  return is_floating(x.dtype()) ? unary(round_p, "round", x) : x;
}

// Transcendental functions convert integer and bool arguments to float (jnp semantics).
#define TESSEL_FLOAT_FN(FN, PRIM) \
  Array FN(const Array& x) { return unary(PRIM##_p, #FN, inexact(x)); }
TESSEL_FLOAT_FN(exp, exp)
TESSEL_FLOAT_FN(exp2, exp2)
TESSEL_FLOAT_FN(expm1, expm1)
TESSEL_FLOAT_FN(log, log)
TESSEL_FLOAT_FN(log1p, log1p)
TESSEL_FLOAT_FN(sqrt, sqrt)
TESSEL_FLOAT_FN(rsqrt, rsqrt)
TESSEL_FLOAT_FN(cbrt, cbrt)
TESSEL_FLOAT_FN(sin, sin)
TESSEL_FLOAT_FN(cos, cos)
TESSEL_FLOAT_FN(tan, tan)
TESSEL_FLOAT_FN(arcsin, asin)
TESSEL_FLOAT_FN(arccos, acos)
TESSEL_FLOAT_FN(arctan, atan)
TESSEL_FLOAT_FN(sinh, sinh)
TESSEL_FLOAT_FN(cosh, cosh)
TESSEL_FLOAT_FN(tanh, tanh)
TESSEL_FLOAT_FN(arcsinh, asinh)
TESSEL_FLOAT_FN(arccosh, acosh)
TESSEL_FLOAT_FN(arctanh, atanh)
TESSEL_FLOAT_FN(erf, erf)
TESSEL_FLOAT_FN(erfc, erfc)
TESSEL_FLOAT_FN(logistic, logistic)
#undef TESSEL_FLOAT_FN

namespace {
/// log(x) / log(base); a complex logarithm is divided part by part (a complex division of
/// log(0) = -inf + 0i would make the imaginary part NaN).
Array log_base(const Array& x, double ln_base) {
  const Array l = log(x);
  if (is_complex(l.dtype())) return complex(real(l) / Array(ln_base), imag(l) / Array(ln_base));
  return l / Array(ln_base);
}
}  // namespace
Array log2(const Array& x) { return log_base(x, std::numbers::ln2); }
Array log10(const Array& x) { return log_base(x, std::numbers::ln10); }
// Bool squares as the default int (jnp.square).
Array square(const Array& x) {
  const Array y = is_bool(x.dtype()) ? convert(x, default_int) : x;
  check_class("square", y.dtype(), kNum);
  return bind1(integer_pow_p, {y}, Params{{"y", int64_t(2)}});
}
Array reciprocal(const Array& x) {
  Array y = inexact(x);
  return bind1(integer_pow_p, {y}, Params{{"y", int64_t(-1)}});
}

Array equal(const Array& a, const Array& b) { return binary(eq_p, "equal", a, b); }
Array not_equal(const Array& a, const Array& b) { return binary(ne_p, "not_equal", a, b); }
Array less(const Array& a, const Array& b) { return binary(lt_p, "less", a, b); }
Array less_equal(const Array& a, const Array& b) { return binary(le_p, "less_equal", a, b); }
Array greater(const Array& a, const Array& b) { return binary(gt_p, "greater", a, b); }
Array greater_equal(const Array& a, const Array& b) { return binary(ge_p, "greater_equal", a, b); }

// logical_* treat any nonzero value as true.
Array logical_and(const Array& a, const Array& b) { return binary(and__p, "logical_and", astype(a, bool_), astype(b, bool_)); }
Array logical_or(const Array& a, const Array& b) { return binary(or__p, "logical_or", astype(a, bool_), astype(b, bool_)); }
Array logical_xor(const Array& a, const Array& b) { return binary(xor__p, "logical_xor", astype(a, bool_), astype(b, bool_)); }
Array logical_not(const Array& x) { return unary(not__p, "logical_not", astype(x, bool_)); }
Array bitwise_and(const Array& a, const Array& b) { return binary(and__p, "bitwise_and", a, b); }
Array bitwise_or(const Array& a, const Array& b) { return binary(or__p, "bitwise_or", a, b); }
Array bitwise_xor(const Array& a, const Array& b) { return binary(xor__p, "bitwise_xor", a, b); }
Array bitwise_not(const Array& x) { return unary(not__p, "bitwise_not", x); }
Array left_shift(const Array& a, const Array& b) { return binary(shift_left_p, "left_shift", a, b, Promote::kNumeric); }
Array right_shift(const Array& a, const Array& b) {
  return binary(shift_right_p, "right_shift", a, b, Promote::kNumeric);
}

Array where(const Array& pred, const Array& a, const Array& b) {
  if (!is_bool(pred.dtype()))
    throw DTypeError(std::string("where: the condition must have dtype bool, got ") + dtype_name(pred.dtype()) +
                     "; compare it first (x != 0) or convert with astype(bool)");
  PromotedType t = result_type({a, b});
  auto xs = broadcast_all("where", {pred, convert(a, t.dtype, t.weak), convert(b, t.dtype, t.weak)});
  return bind1(select_n_p, {xs[0], xs[2], xs[1]});
}
Array select(const Array& pred, const Array& a, const Array& b) { return where(pred, a, b); }
Array clip(const Array& x, const Array& lo, const Array& hi) { return minimum(maximum(x, lo), hi); }
Array clamp(const Array& lo, const Array& x, const Array& hi) { return minimum(maximum(x, lo), hi); }

Array isnan(const Array& x) { return is_inexact(x.dtype()) ? x != x : filled_like(x, Scalar(false)); }
Array isinf(const Array& x) {
  if (is_complex(x.dtype())) return isinf(real(x)) | isinf(imag(x));
  if (is_floating(x.dtype())) return abs(x) == Array(std::numeric_limits<double>::infinity());
  return filled_like(x, Scalar(false));
}
Array isfinite(const Array& x) {
  if (is_complex(x.dtype())) return isfinite(real(x)) & isfinite(imag(x));
  if (is_floating(x.dtype())) return unary(is_finite_p, "isfinite", x);
  return filled_like(x, Scalar(true));
}

Array real(const Array& x) { return is_complex(x.dtype()) ? unary(real_p, "real", x) : x; }
Array imag(const Array& x) {
  return is_complex(x.dtype()) ? unary(imag_p, "imag", x) : filled_like(x, Scalar(0, x.dtype()));
}
Array conj(const Array& x) { return is_complex(x.dtype()) ? unary(conj_p, "conj", x) : x; }
Array complex(const Array& re, const Array& im) {
  PromotedType t = result_type({re, im});
  if (is_complex(t.dtype))
    throw DTypeError(std::string("complex: the real and imaginary parts must be real, got ") +
                     dtype_name(re.dtype()) + " and " + dtype_name(im.dtype()) + "; take real() and imag() first");
  // complex64 holds float32 parts: half-precision and integer parts widen to float32.
  DType d = to_inexact(t.dtype) == DType::float64 ? DType::float64 : DType::float32;
  return binary(complex_p, "complex", convert(re, d, t.weak), convert(im, d, t.weak));
}

Array operator+(const Array& a, const Array& b) { return add(a, b); }
Array operator-(const Array& a, const Array& b) { return subtract(a, b); }
Array operator*(const Array& a, const Array& b) { return multiply(a, b); }
Array operator/(const Array& a, const Array& b) { return true_divide(a, b); }
Array operator%(const Array& a, const Array& b) { return remainder(a, b); }
Array operator-(const Array& x) { return negative(x); }
Array operator<(const Array& a, const Array& b) { return less(a, b); }
Array operator<=(const Array& a, const Array& b) { return less_equal(a, b); }
Array operator>(const Array& a, const Array& b) { return greater(a, b); }
Array operator>=(const Array& a, const Array& b) { return greater_equal(a, b); }
Array operator==(const Array& a, const Array& b) { return equal(a, b); }
Array operator!=(const Array& a, const Array& b) { return not_equal(a, b); }
Array operator&(const Array& a, const Array& b) { return bitwise_and(a, b); }
Array operator|(const Array& a, const Array& b) { return bitwise_or(a, b); }
Array operator^(const Array& a, const Array& b) { return bitwise_xor(a, b); }
Array operator~(const Array& x) { return bitwise_not(x); }
Array operator!(const Array& x) { return logical_not(x); }

}  // namespace tessel
