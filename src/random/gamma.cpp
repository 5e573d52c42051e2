// The gamma family of jax.random as compositions: gamma and loggamma draw one
// Marsaglia–Tsang rejection loop per element (a while_loop vmapped over per-element keys, as
// JAX lowers random_gamma_p), and beta, dirichlet, chisquare, t, f, generalized_normal and
// ball are built on them with JAX's key splits.
#include <optional>
#include <tuple>
#include <vector>

#include "random/sampler_util.h"
#include "tessel/control_flow.h"
#include "tessel/nn.h"
#include "tessel/special.h"
#include "tessel/transforms.h"

namespace tessel::random {
using namespace sampler;
namespace {

// One Marsaglia–Tsang draw for a scalar alpha with its own key (JAX's _gamma_one): alpha < 1
// is boosted to alpha + 1 and corrected by u^(1/alpha) (in log space: -exponential / alpha).
Array gamma_one(const Array& key, const Array& alpha, bool log_space) {
  const DType dt = alpha.dtype();
  auto c = [dt](double v) { return constant(v, dt); };
  Array zero = c(0.0), one = c(1.0);
  Array boost_mask = greater_equal(alpha, one);
  Array a = where(boost_mask, alpha, alpha + one);
  Array d = a - c(1.0 / 3.0);
  // XLA rewrites JAX's (1/3) / sqrt(d) into (1/3) * rsqrt(d), with its own rsqrt, and contracts
  // v = 1 + x c into one fused multiply-add (vfmadd in its loop kernel, float32 and float64).
  Array cc = c(1.0 / 3.0) * ops::xla_rsqrt(d);

  using State = std::tuple<Array, Array, Array, Array>;  // key, X = x^2, V = v^3, U
  auto rejected = [&](const State& s) {
    const auto& [k, X, V, U] = s;
    Array squeeze = greater_equal(U, one - c(0.0331) * (X * X));
    Array exact = greater_equal(ops::xla_log(U), X * c(0.5) + d * ((one - V) + ops::xla_log(V)));
    return logical_and(squeeze, exact);
  };
  auto propose = [&](const State& s) {
    Array ks = split(std::get<0>(s), 3);
    auto row = [&](int64_t i) { return reshape(slice(ks, {i, 0}, {i + 1, 2}), {2}); };
    using Inner = std::tuple<Array, Array, Array>;  // key, x, v = 1 + c x
    Inner drawn = while_loop([&](const Inner& t) { return less_equal(std::get<2>(t), zero); },
                             [&](const Inner& t) {
                               auto [next, sub] = split2(std::get<0>(t));
                               Array x = normal(sub, {}, dt);
                               return Inner{next, x, ops::fma(x, cc, one)};
                             },
                             Inner{row(1), zero, c(-1.0)});
    const Array& x = std::get<1>(drawn);
    const Array& v = std::get<2>(drawn);
    return State{row(0), x * x, v * v * v, uniform(row(2), {}, dt)};
  };
  auto [loop_key, subkey] = split2(key);
  // The initial state is rejected, so the body runs at least once.
  Array V = std::get<2>(while_loop(rejected, propose, State{loop_key, zero, one, c(2.0)}));
  if (log_space) {
    Array log_samples = -exponential(subkey, {}, dt);
    Array log_boost =
        where(logical_or(boost_mask, equal(log_samples, zero)), zero, log_samples * (one / alpha));
    return (ops::xla_log(d) + ops::xla_log(V)) + log_boost;
  }
  Array samples = one - uniform(subkey, {}, dt);
  Array boost = where(boost_mask, one, ops::xla_pow(samples, one / alpha));
  return (d * V) * boost;
}

// JAX's jvp of random_gamma_p: tangent * d sample / d alpha (log space: divided by the sample,
// with an underflowed exp(log sample) replaced by the smallest normal float).
Array gamma_tangent(const Array& sample, const Array& a, bool log_space) {
  if (!log_space) return tessel::random_gamma_grad(a, sample);
  const DType dt = a.dtype();
  Array s = ops::xla_exp(sample);
  s = where(equal(s, constant(0.0, dt)), constant(float_info(dt).tiny(), dt), s);
  return tessel::random_gamma_grad(a, s) / s;
}

// JAX's random_gamma_p: one key per element (split(key, a.size)), one rejection loop per
// element, run together as a vmapped while_loop.
Array gamma_draws_raw(const Array& key, const Array& a, bool log_space) {
  const int64_t n = a.size();
  if (n == 0) return a;
  Array keys = split(key, n);
  auto one = [log_space](const Array& k, const Array& alpha) { return gamma_one(k, alpha, log_space); };
  return reshape(vmap(one)(keys, reshape(a, {n})), a.shape());
}

Array gamma_draws(const Array& key, const Array& a, bool log_space) {
  auto draw = custom_jvp([log_space](const Array& k, const Array& alpha) { return gamma_draws_raw(k, alpha, log_space); },
                         [log_space](const std::tuple<Array, Array>& p, const std::tuple<Array, Array>& t) {
                           const auto& [k, alpha] = p;
                           Array out = gamma_draws_raw(k, alpha, log_space);
                           return std::pair(out, std::get<1>(t) * gamma_tangent(out, alpha, log_space));
                         });
  return draw(key, a);
}

Array gamma_impl(const char* op, const Array& key, const Array& a, std::optional<Shape> shape, DType dtype,
                 bool log_space) {
  check_key(op, key);
  check_float(op, dtype);
  if (is_complex(a.dtype()) || is_bool(a.dtype()))
    throw DTypeError(std::string(op) + ": the shape parameter a must be a real array, got " + a.aval().to_string());
  const Shape s = sample_shape(op, shape, {a.shape()});
  return gamma_draws(key, param(a, dtype, s), log_space);
}

}  // namespace

Array gamma(const Array& key, const Array& a, std::optional<Shape> shape, DType dtype) {
  return gamma_impl("gamma", key, a, shape, dtype, false);
}

Array loggamma(const Array& key, const Array& a, std::optional<Shape> shape, DType dtype) {
  return gamma_impl("loggamma", key, a, shape, dtype, true);
}

Array beta(const Array& key, const Array& a, const Array& b, std::optional<Shape> shape, DType dtype) {
  check_key("beta", key);
  check_float("beta", dtype);
  const Shape s = sample_shape("beta", shape, {a.shape(), b.shape()});
  auto [key_a, key_b] = split2(key);
  Array log_gamma_a = loggamma(key_a, param(a, dtype, s), s, dtype);
  Array log_gamma_b = loggamma(key_b, param(b, dtype, s), s, dtype);
  // a / (a + b) from the logs without overflow: scale both by the larger.
  Array log_max = maximum(log_gamma_a, log_gamma_b);
  Array ga = ops::xla_exp(log_gamma_a - log_max), gb = ops::xla_exp(log_gamma_b - log_max);
  return ga / (ga + gb);
}

Array dirichlet(const Array& key, const Array& alpha, std::optional<Shape> shape, DType dtype) {
  check_key("dirichlet", key);
  check_float("dirichlet", dtype);
  if (alpha.ndim() < 1)
    throw ValueError("dirichlet: alpha must have at least one dimension (the categories), got " +
                     alpha.aval().to_string());
  const Shape batch(alpha.shape().begin(), alpha.shape().end() - 1);
  Shape s = sample_shape("dirichlet", shape, {batch});
  s.push_back(alpha.shape().back());
  // Gamma draws in log space (small alphas underflow otherwise), normalized by a softmax as XLA
  // computes JAX's: its own exp, and the division by the row sum turned into a product with the
  // sum's reciprocal (fused_computation "reduce_divide" then "broadcast_multiply").
  Array log_g = loggamma(key, astype(alpha, dtype), s, dtype);
  Array e = ops::xla_exp(log_g - stop_gradient(max(log_g, {-1}, true)));
  return e * (constant(1.0, dtype) / sum(e, {-1}, true));
}

Array chisquare(const Array& key, const Array& df, std::optional<Shape> shape, DType dtype) {
  check_key("chisquare", key);
  check_float("chisquare", dtype);
  const Shape s = sample_shape("chisquare", shape, {df.shape()});
  Array two = constant(2.0, dtype);
  Array half_df = astype(df, dtype) / two;
  return ops::xla_exp(loggamma(key, half_df, s, dtype)) * two;
}

Array t(const Array& key, const Array& df, std::optional<Shape> shape, DType dtype) {
  check_key("t", key);
  check_float("t", dtype);
  const Shape s = sample_shape("t", shape, {df.shape()});
  auto [key_n, key_g] = split2(key);
  Array n = normal(key_n, s, dtype);
  Array half_df = astype(df, dtype) / constant(2.0, dtype);
  Array g = gamma(key_g, half_df, s, dtype);
  return n * sqrt(half_df / g);
}

Array f(const Array& key, const Array& dfnum, const Array& dfden, std::optional<Shape> shape, DType dtype) {
  check_key("f", key);
  check_float("f", dtype);
  const Shape s = sample_shape("f", shape, {dfnum.shape(), dfden.shape()});
  Array num_df = astype(dfnum, dtype), den_df = astype(dfden, dtype);
  auto [key_dfd, key_dfn] = split2(key);
  Array chi2_num = chisquare(key_dfn, num_df, s, dtype);
  Array chi2_den = chisquare(key_dfd, den_df, s, dtype);
  // JAX's (chi2_num / num_df) / (chi2_den / den_df) as XLA's simplifier rewrites it
  // (A / (B / C) -> (A * C) / B, then (A / B) / C -> A / (B * C)), so the draws equal JAX's.
  return (chi2_num * den_df) / (num_df * chi2_den);
}

Array generalized_normal(const Array& key, double p, const Shape& shape, DType dtype) {
  check_key("generalized_normal", key);
  check_float("generalized_normal", dtype);
  if (!(p > 0))
    throw ValueError("generalized_normal: the exponent p must be positive, got " + std::to_string(p));
  auto [key_g, key_r] = split2(key);
  // JAX computes 1/p in double precision (Python floats) and then converts.
  Array inv_p = constant(1.0 / p, dtype);
  Array g = gamma(key_g, inv_p, shape, dtype);
  Array r = rademacher(key_r, shape, dtype);
  return r * ops::xla_pow(g, inv_p);
}

Array ball(const Array& key, int64_t d, double p, const Shape& shape, DType dtype) {
  check_key("ball", key);
  check_float("ball", dtype);
  if (d < 1) throw ValueError("ball: the dimension d must be at least 1, got " + std::to_string(d));
  auto [k1, k2] = split2(key);
  Shape gshape = shape;
  gshape.push_back(d);
  Array g = generalized_normal(k1, p, gshape, dtype);
  Array e = exponential(k2, shape, dtype);
  // p is a traced argument of JAX's jitted _ball, so |g|^p is lax.pow for every p (never
  // integer_pow). XLA folds the division g / s^(1/p) into the product g * s^(-(1/p)).
  Array inv_norm =
      ops::xla_pow(sum(ops::xla_pow(abs(g), constant(p, dtype)), {-1}) + e, -constant(1.0 / p, dtype));
  return g * expand_dims(inv_norm, {-1});
}

}  // namespace tessel::random
