// Element-wise primitives (lax level): the table of rows, their kernels, abstract evaluation
// and transformation rules.
//
// A primitive is one table row: its name, the dtype classes it accepts, the rule for its
// output dtype and its scalar function, written once for every accepted C++ type (half
// types compute in float), and its transformation rules: derivatives (or linear maps and
// their transposes) written with Arrays. `define<Op>()` derives the abstract evaluation
// (dtype check, shapes equal or rank 0), the CPU kernel, the fusion kind, jvp, transpose
// and batching from the row. Primitives are strict about dtypes; the public functions
// (numpy_elementwise.cpp) do jax.numpy's promotion (e.g. sin of an int array converts it
// to float first).
//
// Where C++ leaves behaviour undefined, tessel defines it as XLA does on CPU, so programs
// never trap and eager agrees with compiled code:
//  - integer x / 0 = -1 (all bits set, so the maximum for unsigned), x rem 0 = x;
//    INT_MIN / -1 = INT_MIN and INT_MIN rem -1 = 0; add, sub, mul, neg, abs wrap modulo 2^bits.
//  - integer pow (and integer_pow) with a negative exponent truncates 1/x^n toward zero:
//    1 for base 1, +-1 for base -1, else 0 (0 for base 0 too).
//  - shifts by a negative amount or by >= the bit width give 0, except shift_right of a
//    negative signed value, which gives -1. shift_right is arithmetic for signed dtypes
//    and logical for unsigned ones.
//  - max/min propagate NaN; on complex numbers they compare lexicographically (real part,
//    then imaginary part) like jnp.maximum. lt/le/gt/ge reject complex.
//  - round rounds half to even, whatever the floating-point rounding mode.
#include <cmath>
#include <numbers>
#include <vector>

#include "ops/elementwise.h"
#include "ops/rule_util.h"
#include "ops/vector_kernel.h"
#include "backend/cpu/scalar.h"
#include "backend/cpu/vector_math.h"

namespace tessel::ops {
namespace {

// ---- dtype classes ----
uint8_t class_of(DType d) {
  if (is_bool(d)) return kBool;
  if (is_signed_int(d)) return kSigned;
  if (is_unsigned_int(d)) return kUnsigned;
  return is_floating(d) ? kFloat : kComplex;
}
template <class T> constexpr uint8_t class_of() {
  if constexpr (std::is_same_v<T, bool>) return kBool;
  else if constexpr (std::is_integral_v<T>) return std::is_signed_v<T> ? kSigned : kUnsigned;
  else if constexpr (is_complex_v<T>) return kComplex;
  else return kFloat;
}

/// "a floating or complex dtype"
std::string describe(uint8_t mask) {
  std::vector<std::string> parts;
  if (mask & kBool) parts.push_back("boolean");
  if ((mask & kInt) == kInt) parts.push_back("integer");
  else if (mask & kSigned) parts.push_back("signed integer");
  else if (mask & kUnsigned) parts.push_back("unsigned integer");
  if (mask & kFloat) parts.push_back("floating");
  if (mask & kComplex) parts.push_back("complex");
  std::string s;
  for (size_t i = 0; i < parts.size(); ++i) s += (i == 0 ? "" : i + 1 == parts.size() ? " or " : ", ") + parts[i];
  return (s[0] == 'i' || s[0] == 'u' ? "an " : "a ") + s + " dtype";
}

}  // namespace

void check_class(const std::string& op, DType d, uint8_t mask) {
  if (!(class_of(d) & mask)) check_dtype(op, d, false, describe(mask).c_str());
}

namespace {

// ---- output dtype rules ----
enum class Out { kSame, kBool, kReal, kComplex };

DType out_dtype(Out rule, DType d) {
  switch (rule) {
    case Out::kSame: return d;
    case Out::kBool: return DType::bool_;
    case Out::kReal: return real_dtype(d);
    case Out::kComplex: break;
  }
  return complex_dtype(d);
}
template <class T, Out R> auto out_tag() {
  if constexpr (R == Out::kBool) return bool{};
  else if constexpr (R == Out::kReal && is_complex_v<T>) return typename T::value_type{};
  else if constexpr (R == Out::kComplex) return std::conditional_t<std::is_same_v<T, double>, complex128_t, complex64_t>{};
  else return T{};
}
template <class T, Out R> using out_t = decltype(out_tag<T, R>());

// ---- the definition machinery ----
/// The printed name; identifiers that would be C++ keywords (and_, not_) drop their '_'.
template <class Op> const std::string& name_of() {
  static const std::string& n = *[] {  // never destroyed: kernels may run during exit
    auto* s = new std::string(Op::name);
    if (s->back() == '_') s->pop_back();
    return s;
  }();
  return n;
}

template <class Op> std::vector<Aval> elementwise_eval(std::span<const Aval> ins, const Params&) {
  Aval out = elementwise_aval(name_of<Op>(), ins);
  check_class(name_of<Op>(), out.dtype, Op::mask);
  if constexpr (Op::out == Out::kBool) return {Aval(out.shape, DType::bool_)};
  out.dtype = out_dtype(Op::out, out.dtype);
  return {out};
}

/// Runs the row's vectorised block form (backend/cpu/vector_math.h) when it has one for T: the
/// transcendental functions on float and double, which then compute as generated kernels do
/// (rank-0 operands of a binary row are broadcast per chunk). False when the caller must loop
/// over Op::f.
template <class Op, class T> bool run_vector_form(const KernelCall& c) {
  if constexpr ((std::is_same_v<T, float> || std::is_same_v<T, double>) && Op::out == Out::kSame) {
    if constexpr (Op::arity == 1) {
      static const cpu::VectorUnaryFn<T> fn = cpu::vector_unary<T>(Op::name);
      return run_unary_block<T>(c, fn);
    } else {
      const int64_t n = c.out_avals[0].size();
      T* out = c.out<T>(0);
      static const cpu::VectorBinaryFn<T> fn = cpu::vector_binary<T>(Op::name);
      if (!fn) return false;
      const T *a = c.in<T>(0), *b = c.in<T>(1);
      const bool a_scalar = c.in_avals[0].size() != n, b_scalar = c.in_avals[1].size() != n;
      auto body = [&](int64_t lo, int64_t hi) {
        std::vector<T> fill(a_scalar || b_scalar ? size_t(hi - lo) : 0, a_scalar ? a[0] : b_scalar ? b[0] : T(0));
        fn(a_scalar ? fill.data() : a + lo, b_scalar ? fill.data() : b + lo, out + lo, hi - lo);
      };
      if (n <= kElementwiseGrain) body(0, n);
      else cpu::parallel_for(n, kElementwiseGrain, body);
    }
    return true;
  } else {
    (void)c;
    return false;
  }
}

template <class Op> void elementwise_kernel(const KernelCall& c) {
  visit_dtype(c.in_avals[0].dtype, [&](auto z) {
    using T = decltype(z);
    if constexpr ((class_of<T>() & Op::mask) != 0) {
      if (run_vector_form<Op, T>(c)) return;
      using C = compute_t<T>;
      using R = out_t<T, Op::out>;
      if constexpr (Op::arity == 1) map_elementwise<R, T>(c, [](T x) { return convert_value<R>(Op::f(C(x))); });
      else map_elementwise<R, T, T>(c, [](T a, T b) { return convert_value<R>(Op::f(C(a), C(b))); });
    }
  });
}

// ---- transformation rules from the row ----
[[noreturn]] void not_linear_in(const ir::Primitive& p, size_t operand) {
  throw Error("internal: transpose of '" + p.name + "' asked for the cotangent of operand " +
              std::to_string(operand) + ", in which it is not linear");
}

// A row states, per operand, either its derivative (jvp = tangent * derivative), its
// tangent contribution and, when linear, its transpose; or that its tangents are zero.
template <class Op, int I> constexpr bool has_jvp = I == 0 ? requires { &Op::j0; } : requires { &Op::j1; };
template <class Op, int I> constexpr bool has_transpose = I == 0 ? requires { &Op::t0; } : requires { &Op::t1; };
template <class Op> constexpr bool zero_tangent = requires { Op::zero_tangent; };
/// The row's work per element in a fused loop nest (COST), else a cheap operation's.
template <class Op> constexpr bool quotient_of() {
  if constexpr (requires { Op::quotient; }) return Op::quotient;
  else return false;
}

template <class Op> constexpr int point_cost_of() {
  if constexpr (requires { Op::point_cost; }) return Op::point_cost;
  else return ir::kCheapPointCost;
}

/// The output tangent contributed by operand I's tangent `t`, fitted to the output.
template <class Op, int I>
Array jvp_term(const Array& t, std::span<const Array> xs, const Array& y) {
  Array r;
  if constexpr (Op::arity == 1) r = Op::j0(t, xs[0], y);
  else if constexpr (I == 0) r = Op::j0(t, xs[0], xs[1], y);
  else r = Op::j1(t, xs[0], xs[1], y);
  return fit_tangent(r, y.aval());
}

template <class Op>
std::vector<Array> elementwise_jvp(const ir::Primitive&, std::span<const Array> xs, std::span<const Array> ts,
                                   std::span<const Array> outs, const Params&) {
  Array out;
  if constexpr (has_jvp<Op, 0>)
    if (!is_zero(ts[0])) out = jvp_term<Op, 0>(ts[0], xs, outs[0]);
  if constexpr (Op::arity == 2 && has_jvp<Op, 1>)
    if (!is_zero(ts[1])) out = add_tangents(out, jvp_term<Op, 1>(ts[1], xs, outs[0]));
  return {out};
}

/// The cotangent of operand I, in which the primitive must be linear.
template <class Op, int I>
Array transpose_term(const ir::Primitive& self, const Array& ct, std::span<const Array> args, const Aval& aval) {
  if constexpr (!has_transpose<Op, I>) not_linear_in(self, I);
  else if constexpr (Op::arity == 1) return fit_cotangent(Op::t0(ct, args[0]), aval);
  else if constexpr (I == 0) return fit_cotangent(Op::t0(ct, args[0], args[1]), aval);
  else return fit_cotangent(Op::t1(ct, args[0], args[1]), aval);
}

/// Cotangents of the operands the primitive is linear in (their `args` are empty).
template <class Op>
std::vector<Array> elementwise_transpose(const ir::Primitive& self, std::span<const Array> cts,
                                         std::span<const Array> args, std::span<const Aval> avals, const Params&) {
  std::vector<Array> res(args.size());
  if (is_zero(cts[0])) return res;
  if (is_zero(args[0])) res[0] = transpose_term<Op, 0>(self, cts[0], args, avals[0]);
  if constexpr (Op::arity == 2)
    if (is_zero(args[1])) res[1] = transpose_term<Op, 1>(self, cts[0], args, avals[1]);
  return res;
}

template <class Op>
std::string elementwise_codegen(std::span<const std::string> xs, std::span<const Aval> in_avals, const Aval& out,
                                const Params&) {
  return codegen_call(Op::name, xs, in_avals, out);
}

template <class Op> Elementwise define() {
  static_assert(zero_tangent<Op> != (has_jvp<Op, 0> || has_jvp<Op, 1>),
                "an element-wise row states its derivatives or ZERO_TANGENT");
  constexpr bool linear = has_transpose<Op, 0> || has_transpose<Op, 1>;
  return {ir::register_primitive({.name = name_of<Op>(),
                                  .arity = {Op::arity, Op::arity},
                                  .abstract_eval = elementwise_eval<Op>,
                                  .cpu_kernel = elementwise_kernel<Op>,
                                  .inplace = ir::inplace_elementwise,
                                  .fusion = ir::FusionKind::kElementwise,
                                  .codegen = elementwise_codegen<Op>,
                                  .point_cost = point_cost_of<Op>(),
                                  .jvp = elementwise_jvp<Op>,
                                  .transpose = linear ? elementwise_transpose<Op> : nullptr,
                                  .batch = Op::arity == 1 ? batch_vectorized : batch_elementwise,
                                  .sharding_rule = ir::elementwise_sharding_rule,
                                  .quotient = quotient_of<Op>()}),
          Op::mask};
}

// ---- derivatives used by the rows (JAX's rules, jax/_src/lax/lax.py) ----
/// x where x != 0, else 1 (keeps log and division finite where the result is multiplied by 0).
Array replace_zero(const Array& x) { return where(x == 0, Array(1), x); }

/// d max(x, y) / dx at z = max(x, y): 1 where x wins, 0 where it loses, 1/2 on ties.
Array balanced_eq(const Array& x, const Array& z, const Array& y) {
  return astype(x == z, z.dtype()) / (astype(y == z, z.dtype()) + 1);
}

/// d|x|: the sign (1 at 0) for real x; Re(t conj(x) / |x|) for complex x.
Array abs_jvp(const Array& t, const Array& x, const Array& y) {
  if (!is_complex(x.dtype())) return where(x >= 0, t, -t);
  return real(t * conj(x) / replace_zero(astype(y, x.dtype())));
}

/// x rounded toward zero.
Array trunc(const Array& x) { return sign(x) * floor(abs(x)); }

}  // namespace

// One row of the table: NAME_p, accepting the classes MASK, output dtype rule OUT, with the
// transformation RULES; its scalar function is scalar::NAME (backend/cpu/scalar.h, shared with
// generated code). The op struct is file-local; the handle NAME_p is declared in
// elementwise.h.
#define TESSEL_ELEMENTWISE(NAME, ARITY, MASK, OUT, RULES)                                \
  namespace {                                                                          \
  struct NAME##_op {                                                                   \
    static constexpr const char* name = #NAME;                                         \
    static constexpr int arity = ARITY;                                                \
    static constexpr uint8_t mask = MASK;                                              \
    static constexpr Out out = Out::OUT;                                               \
    RULES                                                                              \
    template <class... T> static auto f(T... v) { return scalar::NAME(v...); }         \
  };                                                                                   \
  }                                                                                    \
  const Elementwise NAME##_p = define<NAME##_op>()
#define UNARY(NAME, MASK, OUT, RULES) TESSEL_ELEMENTWISE(NAME, 1, MASK, OUT, RULES)
#define BINARY(NAME, MASK, OUT, RULES) TESSEL_ELEMENTWISE(NAME, 2, MASK, OUT, RULES)

// The RULES of a row, written with Arrays: the operands `x` (unary) or `a`, `b` (binary),
// the output `y`, a tangent `t` of the operand, a cotangent `ct` of the output.
//  DX(d), DA(d), DB(d): the derivative d; the tangent is t * d.
//  JVP(e), JVP_A(e), JVP_B(e): the tangent e, when it reads better than t * d.
//  LIN(e, c), LIN_A(e, c), LIN_B(e, c): linear in the operand: tangent e, cotangent c.
//  ZERO_TANGENT: piecewise constant or integer-valued; tangents are zero.
//  QUOTIENT: the output is a / b (ir::Primitive::quotient: generated code may multiply by a
//  reciprocal computed once per row).
//  DIVISION, EXPENSIVE: the work of one element in a fused loop nest is a division's or a
//  transcendental function's (ir::kDivisionPointCost, ir::kExpensivePointCost), not an add's.
// Tangents of rank-0 operands broadcast to the output and cotangents sum back (define<Op>).
#define TESSEL_ARG [[maybe_unused]] const Array&
#define JVP(E) \
  static Array j0(TESSEL_ARG t, TESSEL_ARG x, TESSEL_ARG y) { return E; }
#define JVP_A(E) \
  static Array j0(TESSEL_ARG t, TESSEL_ARG a, TESSEL_ARG b, TESSEL_ARG y) { return E; }
#define JVP_B(E) \
  static Array j1(TESSEL_ARG t, TESSEL_ARG a, TESSEL_ARG b, TESSEL_ARG y) { return E; }
#define DX(D) JVP(t * (D))
#define DA(D) JVP_A(t * (D))
#define DB(D) JVP_B(t * (D))
#define LIN(E, C) \
  JVP(E) static Array t0(TESSEL_ARG ct, TESSEL_ARG x) { return C; }
#define LIN_A(E, C) \
  JVP_A(E) static Array t0(TESSEL_ARG ct, TESSEL_ARG a, TESSEL_ARG b) { return C; }
#define LIN_B(E, C) \
  JVP_B(E) static Array t1(TESSEL_ARG ct, TESSEL_ARG a, TESSEL_ARG b) { return C; }
#define ZERO_TANGENT static constexpr bool zero_tangent = true;
#define QUOTIENT static constexpr bool quotient = true;
#define DIVISION static constexpr int point_cost = ir::kDivisionPointCost;
#define EXPENSIVE static constexpr int point_cost = ir::kExpensivePointCost;

// ---- the table ----
BINARY(add, kAll, kSame, LIN_A(t, ct) LIN_B(t, ct));
BINARY(sub, kNum, kSame, LIN_A(t, ct) LIN_B(-t, -ct));
BINARY(mul, kAll, kSame, LIN_A(t * b, ct * b) LIN_B(a * t, a * ct));
BINARY(div, kNum, kSame, LIN_A(t / b, ct / b) JVP_B(-(t * y) / b) DIVISION QUOTIENT);
BINARY(rem, kReal, kSame, JVP_A(t) DB(-trunc(a / b)) EXPENSIVE);
BINARY(pow, kNum, kSame, DA(b * pow(a, b - 1)) DB(log(replace_zero(a)) * y) EXPENSIVE);
BINARY(max, kAll, kSame, DA(balanced_eq(a, y, b)) DB(balanced_eq(b, y, a)));
BINARY(min, kAll, kSame, DA(balanced_eq(a, y, b)) DB(balanced_eq(b, y, a)));
BINARY(atan2, kFloat, kSame, DA(b / (a * a + b * b)) DB(-a / (a * a + b * b)) EXPENSIVE);

UNARY(neg, kNum, kSame, LIN(-t, -ct));
UNARY(abs, kNum, kReal, JVP(abs_jvp(t, x, y)));
UNARY(sign, kNum, kSame, ZERO_TANGENT);
UNARY(floor, kFloat, kSame, ZERO_TANGENT);
UNARY(ceil, kFloat, kSame, ZERO_TANGENT);
UNARY(round, kFloat, kSame, ZERO_TANGENT);
UNARY(is_finite, kFloat, kBool, ZERO_TANGENT);

UNARY(exp, kInexact, kSame, DX(y) EXPENSIVE);
UNARY(exp2, kInexact, kSame, DX(y * std::numbers::ln2) EXPENSIVE);
UNARY(expm1, kInexact, kSame, DX(y + 1) EXPENSIVE);
UNARY(log, kInexact, kSame, JVP(t / x) EXPENSIVE);
UNARY(log1p, kInexact, kSame, JVP(t / (x + 1)) EXPENSIVE);
UNARY(sqrt, kInexact, kSame, JVP(t / (y * 2)) DIVISION);
UNARY(rsqrt, kInexact, kSame, DX(y / x * -0.5) DIVISION);
UNARY(cbrt, kFloat, kSame, DX(reciprocal(y * y) / 3) EXPENSIVE);
UNARY(sin, kInexact, kSame, DX(cos(x)) EXPENSIVE);
UNARY(cos, kInexact, kSame, DX(-sin(x)) EXPENSIVE);
UNARY(tan, kInexact, kSame, DX(y * y + 1) EXPENSIVE);
UNARY(asin, kInexact, kSame, DX(rsqrt(1 - x * x)) EXPENSIVE);
UNARY(acos, kInexact, kSame, DX(-rsqrt(1 - x * x)) EXPENSIVE);
UNARY(atan, kInexact, kSame, JVP(t / (x * x + 1)) EXPENSIVE);
UNARY(sinh, kInexact, kSame, DX(cosh(x)) EXPENSIVE);
UNARY(cosh, kInexact, kSame, DX(sinh(x)) EXPENSIVE);
UNARY(tanh, kInexact, kSame, DX(1 - y * y) EXPENSIVE);
UNARY(asinh, kInexact, kSame, DX(rsqrt(x * x + 1)) EXPENSIVE);
UNARY(acosh, kInexact, kSame, DX(rsqrt((x - 1) * (x + 1))) EXPENSIVE);
UNARY(atanh, kInexact, kSame, JVP(t / ((1 - x) * (1 + x))) EXPENSIVE);
UNARY(erf, kFloat, kSame, DX(exp(-(x * x)) * (2 * std::numbers::inv_sqrtpi)) EXPENSIVE);
UNARY(erfc, kFloat, kSame, DX(exp(-(x * x)) * (-2 * std::numbers::inv_sqrtpi)) EXPENSIVE);
UNARY(logistic, kInexact, kSame, DX(y * (1 - y)) EXPENSIVE);

BINARY(eq, kAll, kBool, ZERO_TANGENT);
BINARY(ne, kAll, kBool, ZERO_TANGENT);
BINARY(lt, kOrderable, kBool, ZERO_TANGENT);
BINARY(le, kOrderable, kBool, ZERO_TANGENT);
BINARY(gt, kOrderable, kBool, ZERO_TANGENT);
BINARY(ge, kOrderable, kBool, ZERO_TANGENT);

// Logical on bool, bitwise on integers (like lax).
BINARY(and_, kLogic, kSame, ZERO_TANGENT);
BINARY(or_, kLogic, kSame, ZERO_TANGENT);
BINARY(xor_, kLogic, kSame, ZERO_TANGENT);
UNARY(not_, kLogic, kSame, ZERO_TANGENT);
BINARY(shift_left, kInt, kSame, ZERO_TANGENT);
BINARY(shift_right, kInt, kSame, ZERO_TANGENT);

UNARY(real, kComplex, kReal, LIN(real(t), complex(ct, 0)));
UNARY(imag, kComplex, kReal, LIN(imag(t), complex(0, -ct)));
UNARY(conj, kComplex, kSame, LIN(conj(t), conj(ct)));
BINARY(complex, kFloat, kComplex, LIN_A(complex(t, 0), real(ct)) LIN_B(complex(0, t), -imag(ct)));

#undef UNARY
#undef BINARY
#undef TESSEL_ELEMENTWISE
#undef TESSEL_ARG
#undef JVP
#undef JVP_A
#undef JVP_B
#undef DX
#undef DA
#undef DB
#undef LIN
#undef LIN_A
#undef LIN_B
#undef ZERO_TANGENT
#undef QUOTIENT
#undef DIVISION
#undef EXPENSIVE

// ---- primitives with parameters or mixed operand dtypes ----

namespace {

// integer_pow[y]: x^y for a static integer y (jnp.square, jnp.reciprocal).
std::vector<Aval> integer_pow_eval(std::span<const Aval> ins, const Params&) {
  check_class("integer_pow", ins[0].dtype, kNum);
  return {ins[0]};
}
void integer_pow_kernel(const KernelCall& c) {
  const int64_t y = c.params.get<int64_t>("y");
  visit_dtype(c.in_avals[0].dtype, [&](auto z) {
    using T = decltype(z);
    if constexpr (!std::is_same_v<T, bool>)
      map_elementwise<T, T>(c, [y](T x) { return convert_value<T>(scalar::integer_pow(compute_t<T>(x), y)); });
  });
}

std::string integer_pow_codegen(std::span<const std::string> xs, std::span<const Aval> in_avals, const Aval& out,
                               const Params& p) {
  if (out.dtype == DType::bool_) return "";
  return codegen_call("integer_pow_static<" + std::to_string(p.get<int64_t>("y")) + "LL>", xs, in_avals, out);
}

// d x^y = y x^(y-1).
std::vector<Array> integer_pow_jvp(const ir::Primitive& self, std::span<const Array> xs, std::span<const Array> ts,
                                   std::span<const Array>, const Params& params) {
  const int64_t y = params.get<int64_t>("y");
  if (y == 0) return {Array()};
  if (y == 1) return {ts[0]};
  Array d = bind1(self, {xs[0]}, Params{{"y", y - 1}}) * Array(y);
  return {scale_tangent(ts[0], d)};
}

}  // namespace

const ir::Primitive& integer_pow_p = ir::register_primitive({
    .name = "integer_pow", .arity = {1, 1}, .abstract_eval = integer_pow_eval, .cpu_kernel = integer_pow_kernel,
    .inplace = ir::inplace_elementwise,
    .fusion = ir::FusionKind::kElementwise, .codegen = integer_pow_codegen, .jvp = integer_pow_jvp,
    .batch = batch_vectorized, .sharding_rule = ir::elementwise_sharding_rule});

namespace {

// select_n(pred, on_false, on_true), as lax.select_n with two cases.
std::vector<Aval> select_n_eval(std::span<const Aval> ins, const Params&) {
  if (ins[0].dtype != DType::bool_)
    throw DTypeError("select_n: the predicate must have dtype bool, got " + std::string(dtype_name(ins[0].dtype)) +
                     "; compare it first (x != 0)");
  Aval out = elementwise_aval("select_n", ins.subspan(1));
  if (!ins[0].shape.empty()) {
    if (out.shape.empty()) out.shape = ins[0].shape;
    else if (out.shape != ins[0].shape)
      throw ShapeError("select_n: predicate and cases have different shapes " + avals_to_string(ins) +
                       "; broadcast them first (where does this)");
  }
  return {out};
}
void select_n_kernel(const KernelCall& c) {
  visit_dtype(c.out_avals[0].dtype, [&](auto z) {
    using T = decltype(z);
    map_elementwise<T, bool, T, T>(c, [](bool p, T f, T t) { return scalar::select_n(p, f, t); });
  });
}

std::string select_n_codegen(std::span<const std::string> xs, std::span<const Aval> in_avals, const Aval& out,
                            const Params&) {
  return codegen_call("select_n", xs, in_avals, out);
}

// The tangent selects the cases' tangents (a zero one instantiated when the other is not).
std::vector<Array> select_n_jvp(const ir::Primitive& self, std::span<const Array> xs, std::span<const Array> ts,
                                std::span<const Array>, const Params& params) {
  return {bind1(self, {xs[0], instantiate_zeros(ts[1], xs[1].aval()), instantiate_zeros(ts[2], xs[2].aval())}, params)};
}

// Linear in the cases: each case's cotangent is the output's where it was selected, else 0.
std::vector<Array> select_n_transpose(const ir::Primitive& self, std::span<const Array> cts,
                                      std::span<const Array> args, std::span<const Aval> avals, const Params& params) {
  std::vector<Array> res(3);
  if (is_zero(cts[0])) return res;
  if (is_zero(args[0])) throw Error("internal: transpose of 'select_n' with a linear predicate");
  const Array zero = zeros({}, cts[0].dtype());
  for (size_t i = 1; i < 3; ++i)
    if (is_zero(args[i]))
      res[i] = fit_cotangent(bind1(self, {args[0], i == 1 ? cts[0] : zero, i == 2 ? cts[0] : zero}, params), avals[i]);
  return res;
}

}  // namespace

const ir::Primitive& select_n_p = ir::register_primitive({
    .name = "select_n", .arity = {2, -1}, .abstract_eval = select_n_eval, .cpu_kernel = select_n_kernel,
    .inplace = ir::inplace_elementwise,
    .fusion = ir::FusionKind::kElementwise, .codegen = select_n_codegen, .jvp = select_n_jvp,
    .transpose = select_n_transpose,
    .batch = batch_elementwise,
    .sharding_rule = ir::elementwise_sharding_rule});

}  // namespace tessel::ops
