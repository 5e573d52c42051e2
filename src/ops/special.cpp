// Special functions (lax level): lgamma, digamma, polygamma, zeta, igamma, igammac,
// igamma_grad_a, random_gamma_grad, betainc, bessel_i0e, bessel_i1e and erf_inv (whose scalar
// function is in scalar.h), scipy's expi, exp1 and expn, and the random samplers' xla_exp,
// xla_log, xla_log1p, xla_erf, xla_pow, xla_tan, xla_rsqrt and fma (scalar.h). Each is an
// element-wise primitive on floating operands of one dtype (or rank 0) whose scalar function
// is scalar::<name> (backend/cpu/scalar_special.h, shared with generated code, so they fuse);
// float32 and float64 run the vectorised block form where the function has one. Half types
// compute in float32, as XLA upcasts them. The derivatives are JAX's (jax/_src/lax/special.py);
// where JAX defines none (igamma_grad_a, random_gamma_grad, polygamma in n, betainc in a and
// b, zeta in x) differentiation throws a ValueError naming the operand.
#include <cmath>
#include <numbers>

#include "ops/special.h"
#include "ops/rule_util.h"
#include "ops/vector_kernel.h"
#include "backend/cpu/scalar_special.h"
#include "tessel/random.h"
#include "tessel/special.h"

namespace tessel::ops {
namespace {

constexpr const char* kFloatDtypes =
    "a floating dtype (float16, bfloat16, float32, float64); convert integer arguments with astype(float32)";

template <class Op> std::vector<Aval> special_eval(std::span<const Aval> ins, const Params&) {
  Aval out = elementwise_aval(Op::name, ins);
  check_dtype(Op::name, out.dtype, is_floating(out.dtype), kFloatDtypes);
  return {out};
}

/// Runs the unary block form of scalar::<name> (vector_math.h), or fma's, on float/double;
/// false when there is none.
template <class Op, class T> bool run_block(const KernelCall& c) {
  if constexpr (Op::arity == 1 && (std::is_same_v<T, float> || std::is_same_v<T, double>)) {
    static const cpu::VectorUnaryFn<T> block = cpu::vector_unary<T>(Op::name);
    return run_unary_block<T>(c, block);
  } else if constexpr (requires { Op::fma_block; } && (std::is_same_v<T, float> || std::is_same_v<T, double>)) {
    run_fma_block<T>(c);
    return true;
  } else {
    (void)c;
    return false;
  }
}

template <class Op> void special_kernel(const KernelCall& c) {
  visit_dtype(c.out_avals[0].dtype, [&](auto z) {
    using T = decltype(z);
    if constexpr (is_float_v<T>) {
      if (run_block<Op, T>(c)) return;
      using C = compute_t<T>;
      if constexpr (Op::arity == 1) map_elementwise<T, T>(c, [](T x) { return T(Op::f(C(x))); });
      else if constexpr (Op::arity == 2)
        map_elementwise<T, T, T>(c, [](T a, T b) { return T(Op::f(C(a), C(b))); });
      else map_elementwise<T, T, T, T>(c, [](T a, T b, T x) { return T(Op::f(C(a), C(b), C(x))); });
    }
  });
}

template <class Op>
std::string special_codegen(std::span<const std::string> xs, std::span<const Aval> in_avals, const Aval& out,
                            const Params&) {
  return codegen_call(Op::name, xs, in_avals, out);
}

/// The tangent of operand `i` has no rule (as in JAX): differentiating through it is an error.
[[noreturn]] void no_derivative(const char* op, const char* operand) {
  throw ValueError(std::string(op) + ": the derivative with respect to " + operand +
                   " is not defined (JAX defines none either); stop its gradient with stop_gradient, or "
                   "differentiate with respect to the other operands only");
}

/// jvp = sum over operands with a tangent of t_i * Op::d(i, xs, y) (fitted to the output).
template <class Op>
std::vector<Array> special_jvp(const ir::Primitive&, std::span<const Array> xs, std::span<const Array> ts,
                               std::span<const Array> outs, const Params&) {
  Array out;
  for (size_t i = 0; i < xs.size(); ++i)
    if (!is_zero(ts[i])) out = add_tangents(out, fit_tangent(scale_tangent(ts[i], Op::d(i, xs, outs[0])), outs[0].aval()));
  return {out};
}

/// Work per element in a fused loop nest: a transcendental function's, or (kIterative) that
/// of a loop of series or continued-fraction terms, so that the fusion pass stores such a
/// value rather than recompute it for each offset a consumer reads.
constexpr int kIterativePointCost = 8 * ir::kExpensivePointCost;
template <class Op> constexpr int point_cost_of() {
  if constexpr (requires { Op::point_cost; }) return Op::point_cost;
  else if constexpr (requires { Op::iterative; }) return kIterativePointCost;
  else return ir::kExpensivePointCost;
}

template <class Op> const ir::Primitive& define() {
  return ir::register_primitive({.name = Op::name,
                                 .arity = {Op::arity, Op::arity},
                                 .abstract_eval = special_eval<Op>,
                                 .cpu_kernel = special_kernel<Op>,
                                 .inplace = ir::inplace_elementwise,
                                 .fusion = ir::FusionKind::kElementwise,
                                 .codegen = special_codegen<Op>,
                                 .point_cost = point_cost_of<Op>(),
                                 .jvp = special_jvp<Op>,
                                 .batch = Op::arity == 1 ? batch_vectorized : batch_elementwise,
                                 .sharding_rule = ir::elementwise_sharding_rule});
}

using Xs = std::span<const Array>;
Array c_like(double v, const Array& like) { return full_like(like, Scalar(v)); }
/// The machine epsilon of a floating dtype (finfo.eps).
double epsilon_of(DType d) {
  return d == DType::float16 ? 0x1p-10 : d == DType::bfloat16 ? 0x1p-7 : d == DType::float32 ? 0x1p-23 : 0x1p-52;
}

// ---- the primitives: name, arity, scalar function, derivative per operand ----
struct lgamma_op {
  static constexpr const char* name = "lgamma";
  static constexpr int arity = 1;
  template <class T> static T f(T x) { return scalar::lgamma(x); }
  static Array d(size_t, Xs xs, const Array&) { return digamma(xs[0]); }
};
struct digamma_op {
  static constexpr const char* name = "digamma";
  static constexpr int arity = 1;
  template <class T> static T f(T x) { return scalar::digamma(x); }
  static Array d(size_t, Xs xs, const Array&) { return polygamma(c_like(1, xs[0]), xs[0]); }
};
struct polygamma_op {
  static constexpr const char* name = "polygamma";
  static constexpr bool iterative = true;
  static constexpr int arity = 2;
  template <class T> static T f(T n, T x) { return scalar::polygamma(n, x); }
  static Array d(size_t i, Xs xs, const Array&) {
    if (i == 0) no_derivative(name, "n (the order)");
    return polygamma(xs[0] + c_like(1, xs[0]), xs[1]);
  }
};
struct zeta_op {
  static constexpr const char* name = "zeta";
  static constexpr bool iterative = true;
  static constexpr int arity = 2;
  template <class T> static T f(T x, T q) { return scalar::zeta(x, q); }
  // d zeta(x, q) / dq = -x zeta(x + 1, q).
  static Array d(size_t i, Xs xs, const Array&) {
    if (i == 0) no_derivative(name, "x (the exponent)");
    return -xs[0] * zeta(xs[0] + c_like(1, xs[0]), xs[1]);
  }
};
/// d P(a, x) / dx = x^(a-1) e^-x / Gamma(a).
Array igamma_dx(const Array& a, const Array& x) { return exp((-x + (a - c_like(1, a)) * log(x)) - lgamma(a)); }
struct igamma_op {
  static constexpr const char* name = "igamma";
  static constexpr bool iterative = true;
  static constexpr int arity = 2;
  template <class T> static T f(T a, T x) { return scalar::igamma(a, x); }
  static Array d(size_t i, Xs xs, const Array&) { return i == 0 ? igamma_grad_a(xs[0], xs[1]) : igamma_dx(xs[0], xs[1]); }
};
struct igammac_op {
  static constexpr const char* name = "igammac";
  static constexpr bool iterative = true;
  static constexpr int arity = 2;
  template <class T> static T f(T a, T x) { return scalar::igammac(a, x); }
  static Array d(size_t i, Xs xs, const Array&) {
    return -(i == 0 ? igamma_grad_a(xs[0], xs[1]) : igamma_dx(xs[0], xs[1]));
  }
};
struct igamma_grad_a_op {
  static constexpr const char* name = "igamma_grad_a";
  static constexpr bool iterative = true;
  static constexpr int arity = 2;
  template <class T> static T f(T a, T x) { return scalar::igamma_grad_a(a, x); }
  static Array d(size_t i, Xs, const Array&) { no_derivative(name, i == 0 ? "a" : "x"); }
};
struct random_gamma_grad_op {
  static constexpr const char* name = "random_gamma_grad";
  static constexpr bool iterative = true;
  static constexpr int arity = 2;
  template <class T> static T f(T a, T x) { return scalar::random_gamma_grad(a, x); }
  static Array d(size_t i, Xs, const Array&) { no_derivative(name, i == 0 ? "a" : "x"); }
};
struct betainc_op {
  static constexpr const char* name = "betainc";
  static constexpr bool iterative = true;
  static constexpr int arity = 3;
  template <class T> static T f(T a, T b, T x) { return scalar::betainc(a, b, x); }
  // d I_x(a, b) / dx = x^(a-1) (1-x)^(b-1) / B(a, b).
  static Array d(size_t i, Xs xs, const Array&) {
    if (i < 2) no_derivative(name, i == 0 ? "a" : "b");
    const Array &a = xs[0], &b = xs[1], &x = xs[2];
    const Array one = c_like(1, a);
    Array lbeta = (lgamma(a) + lgamma(b)) - lgamma(a + b);
    return exp(((b - one) * log1p(-x) + (a - one) * log(x)) - lbeta);
  }
};
struct erf_inv_op {
  static constexpr const char* name = "erf_inv";
  static constexpr int arity = 1;
  template <class T> static T f(T x) { return scalar::erf_inv(x); }
  // d erfinv(x) = sqrt(pi)/2 exp(erfinv(x)^2).
  static Array d(size_t, Xs, const Array& y) { return exp(y * y) * (std::sqrt(std::numbers::pi) / 2); }
};
// exp, log, log1p and erf as XLA's CPU backend computes them (scalar.h: xla_exp, xla_log,
// xla_log1p, xla_erf): the random samplers use them so that their draws equal JAX's bit for
// bit. The exp/log/log1p/erf primitives keep libm's (libmvec's) vectorised functions.
struct xla_exp_op {
  static constexpr const char* name = "xla_exp";
  static constexpr int arity = 1;
  template <class T> static T f(T x) { return scalar::xla_exp(x); }
  static Array d(size_t, Xs, const Array& y) { return y; }
};
struct xla_log_op {
  static constexpr const char* name = "xla_log";
  static constexpr int arity = 1;
  template <class T> static T f(T x) { return scalar::xla_log(x); }
  static Array d(size_t, Xs xs, const Array&) { return c_like(1, xs[0]) / xs[0]; }
};
struct xla_log1p_op {
  static constexpr const char* name = "xla_log1p";
  static constexpr int arity = 1;
  template <class T> static T f(T x) { return scalar::xla_log1p(x); }
  static Array d(size_t, Xs xs, const Array&) { return c_like(1, xs[0]) / (c_like(1, xs[0]) + xs[0]); }
};
struct xla_erf_op {
  static constexpr const char* name = "xla_erf";
  static constexpr int arity = 1;
  template <class T> static T f(T x) { return scalar::xla_erf(x); }
  // d erf(x) = 2/sqrt(pi) exp(-x^2).
  static Array d(size_t, Xs xs, const Array&) {
    return xla_exp(-(xs[0] * xs[0])) * (2 / std::sqrt(std::numbers::pi));
  }
};
// pow and tan as XLA's CPU backend computes them (scalar.h: glibc's powf/pow and tanf/tan with
// subnormals flushed, as XLA's kernels run): gamma's boost for alpha < 1, weibull_min,
// generalized_normal, ball and cauchy. Derivatives as jax.lax.pow's and tan's.
struct xla_pow_op {
  static constexpr const char* name = "xla_pow";
  static constexpr int arity = 2;
  template <class T> static T f(T x, T y) { return scalar::xla_pow(x, y); }
  static Array d(size_t i, Xs xs, const Array& y) {
    const Array &a = xs[0], &b = xs[1];
    if (i == 0) return b * xla_pow(a, b - c_like(1, b));
    return xla_log(where(a == c_like(0, a), c_like(1, a), a)) * y;  // log(x) with 0 replaced by 1, as JAX
  }
};
struct xla_tan_op {
  static constexpr const char* name = "xla_tan";
  static constexpr int arity = 1;
  template <class T> static T f(T x) { return scalar::xla_tan(x); }
  static Array d(size_t, Xs, const Array& y) { return y * y + c_like(1, y); }
};
// 1/sqrt(x) as XLA's CPU backend computes it (scalar.h: the processor's estimate and Newton
// steps): gamma's c = (1/3) / sqrt(d), which XLA rewrites into (1/3) * rsqrt(d). Derivative as
// lax.rsqrt's, -y / (2 x).
struct xla_rsqrt_op {
  static constexpr const char* name = "xla_rsqrt";
  static constexpr int arity = 1;
  template <class T> static T f(T x) { return scalar::xla_rsqrt(x); }
  static Array d(size_t, Xs xs, const Array& y) { return y / xs[0] * c_like(-0.5, y); }
};
// a * b + c with one rounding (std::fma), as XLA contracts JAX's multiply-adds. It costs
// the fusion pass what the product and the sum it replaces cost (jit contracts them:
// compiler::contract_multiply_adds), so contracting leaves the loop nests' schedules as they were.
struct fma_op {
  static constexpr const char* name = "fma";
  static constexpr int arity = 3;
  static constexpr int point_cost = 2 * ir::kCheapPointCost;
  static constexpr bool fma_block = true;  // unfused: cpu::fma_block (the FMA instructions)
  template <class T> static T f(T a, T b, T c) { return scalar::fma(a, b, c); }
  static Array d(size_t i, Xs xs, const Array& y) { return i == 0 ? xs[1] : i == 1 ? xs[0] : c_like(1, y); }
};
struct bessel_i0e_op {
  static constexpr const char* name = "bessel_i0e";
  static constexpr int arity = 1;
  template <class T> static T f(T x) { return scalar::bessel_i0e(x); }
  static Array d(size_t, Xs xs, const Array& y) { return bessel_i1e(xs[0]) - sign(xs[0]) * y; }
};
struct bessel_i1e_op {
  static constexpr const char* name = "bessel_i1e";
  static constexpr int arity = 1;
  template <class T> static T f(T x) { return scalar::bessel_i1e(x); }
  // i0e(x) - y (sign(x) + 1/x), with its limit 1/2 where |x| is below the dtype's epsilon.
  static Array d(size_t, Xs xs, const Array& y) {
    const Array& x = xs[0];
    const Array eps = c_like(epsilon_of(x.dtype()), x);
    Array not_tiny = abs(x) > eps;
    Array safe_x = where(not_tiny, x, eps);
    return where(not_tiny, bessel_i0e(safe_x) - y * (sign(safe_x) + c_like(1, x) / safe_x), c_like(0.5, x));
  }
};

// The exponential integrals of scipy.special: iterative series and continued fractions per
// element, far cheaper as a kernel than as a composition of whole-array loops.
struct expi_op {
  static constexpr const char* name = "expi";
  static constexpr bool iterative = true;
  static constexpr int arity = 1;
  template <class T> static T f(T x) { return scalar::expi(x); }
  static Array d(size_t, Xs xs, const Array&) { return exp(xs[0]) / xs[0]; }
};
struct exp1_op {
  static constexpr const char* name = "exp1";
  static constexpr bool iterative = true;
  static constexpr int arity = 1;
  template <class T> static T f(T x) { return scalar::exp1(x); }
  static Array d(size_t, Xs xs, const Array&) { return -exp(-xs[0]) / xs[0]; }
};
struct expn_op {
  static constexpr const char* name = "expn";
  static constexpr bool iterative = true;
  static constexpr int arity = 2;
  template <class T> static T f(T n, T x) { return scalar::expn(n, x); }
  // d E_n(x) / dx = -E_{n-1}(x).
  static Array d(size_t i, Xs xs, const Array&) {
    if (i == 0) no_derivative(name, "n (the order)");
    return -expn(xs[0] - c_like(1, xs[0]), xs[1]);
  }
};

const ir::Primitive& lgamma_p = define<lgamma_op>();
const ir::Primitive& digamma_p = define<digamma_op>();
const ir::Primitive& polygamma_p = define<polygamma_op>();
const ir::Primitive& zeta_p = define<zeta_op>();
const ir::Primitive& igamma_p = define<igamma_op>();
const ir::Primitive& igammac_p = define<igammac_op>();
const ir::Primitive& igamma_grad_a_p = define<igamma_grad_a_op>();
const ir::Primitive& random_gamma_grad_p = define<random_gamma_grad_op>();
const ir::Primitive& betainc_p = define<betainc_op>();
const ir::Primitive& erf_inv_p = define<erf_inv_op>();
const ir::Primitive& xla_exp_p = define<xla_exp_op>();
const ir::Primitive& xla_log_p = define<xla_log_op>();
const ir::Primitive& xla_log1p_p = define<xla_log1p_op>();
const ir::Primitive& xla_erf_p = define<xla_erf_op>();
const ir::Primitive& xla_tan_p = define<xla_tan_op>();
const ir::Primitive& xla_rsqrt_p = define<xla_rsqrt_op>();
const ir::Primitive& bessel_i0e_p = define<bessel_i0e_op>();
const ir::Primitive& bessel_i1e_p = define<bessel_i1e_op>();
const ir::Primitive& expi_p = define<expi_op>();
const ir::Primitive& exp1_p = define<exp1_op>();
const ir::Primitive& expn_p = define<expn_op>();

/// Binds an n-ary special primitive after jax.numpy promotion (weak C++ scalars take the
/// array's dtype) and broadcasting; the primitive rejects non-floating dtypes.
Array bind_special(const ir::Primitive& p, std::vector<Array> xs) {
  return bind1(p, promote_broadcast(p.name, std::move(xs)));
}

}  // namespace

const ir::Primitive& fma_p = define<fma_op>();
const ir::Primitive& xla_pow_p = define<xla_pow_op>();

Array expi(const Array& x) { return bind1(expi_p, {x}); }
Array exp1(const Array& x) { return bind1(exp1_p, {x}); }
Array expn(const Array& n, const Array& x) { return bind_special(expn_p, {n, x}); }
Array xla_exp(const Array& x) { return bind1(xla_exp_p, {x}); }
Array xla_log(const Array& x) { return bind1(xla_log_p, {x}); }
Array xla_log1p(const Array& x) { return bind1(xla_log1p_p, {x}); }
Array xla_erf(const Array& x) { return bind1(xla_erf_p, {x}); }
Array xla_pow(const Array& x, const Array& y) { return bind_special(xla_pow_p, {x, y}); }
Array xla_tan(const Array& x) { return bind1(xla_tan_p, {x}); }
Array xla_rsqrt(const Array& x) { return bind1(xla_rsqrt_p, {x}); }
Array fma(const Array& a, const Array& b, const Array& c) { return bind_special(fma_p, {a, b, c}); }

}  // namespace tessel::ops

namespace tessel {

Array lgamma(const Array& x) { return ops::bind1(ops::lgamma_p, {x}); }
Array digamma(const Array& x) { return ops::bind1(ops::digamma_p, {x}); }
Array polygamma(const Array& n, const Array& x) { return ops::bind_special(ops::polygamma_p, {n, x}); }
Array zeta(const Array& x, const Array& q) { return ops::bind_special(ops::zeta_p, {x, q}); }
Array igamma(const Array& a, const Array& x) { return ops::bind_special(ops::igamma_p, {a, x}); }
Array igammac(const Array& a, const Array& x) { return ops::bind_special(ops::igammac_p, {a, x}); }
Array igamma_grad_a(const Array& a, const Array& x) { return ops::bind_special(ops::igamma_grad_a_p, {a, x}); }
Array random_gamma_grad(const Array& a, const Array& x) { return ops::bind_special(ops::random_gamma_grad_p, {a, x}); }
Array betainc(const Array& a, const Array& b, const Array& x) { return ops::bind_special(ops::betainc_p, {a, b, x}); }
Array bessel_i0e(const Array& x) { return ops::bind1(ops::bessel_i0e_p, {x}); }
Array erf_inv(const Array& x) { return ops::bind1(ops::erf_inv_p, {x}); }
Array bessel_i1e(const Array& x) { return ops::bind1(ops::bessel_i1e_p, {x}); }

}  // namespace tessel
