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
  Array cc = c(1.0 / 3.0) / sqrt(d);

  using State = std::tuple<Array, Array, Array, Array>;  // key, X = x^2, V = v^3, U
  auto rejected = [&](const State& s) {
    const auto& [k, X, V, U] = s;
    Array squeeze = greater_equal(U, one - c(0.0331) * (X * X));
    Array exact = greater_equal(log(U), X * c(0.5) + d * ((one - V) + log(V)));
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
                               return Inner{next, x, one + x * cc};
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
    return (log(d) + log(V)) + log_boost;
  }
  Array samples = one - uniform(subkey, {}, dt);
  Array boost = where(boost_mask, one, pow(samples, one / alpha));
  return (d * V) * boost;
}

// d sample / d alpha of a gamma sample x at fixed CDF value (lax.random_gamma_grad: implicit
// reparameterization, -(dP(a, x)/da) / (dP(a, x)/dx)), by the series of the lower
// incomplete gamma function for x <= max(1, a) and the continued fraction of the upper one
// above, each a while_loop over the whole array that stops updating converged elements.
Array igamma_series_sample_grad(const Array& x, const Array& a, const Array& enabled0) {
  const DType dt = a.dtype();
  auto c = [dt](double v) { return constant(v, dt); };
  Array eps = c(float_info(dt).eps());
  using State = std::tuple<Array, Array, Array, Array, Array, Array>;  // enabled, r, c, ans, dc_da, dans_da
  State init{enabled0, a, full_like(a, Scalar(1.0)), full_like(a, Scalar(1.0)), zeros_like(a), zeros_like(a)};
  State done = while_loop([](const State& s) { return any(std::get<0>(s)); },
                          [&](const State& s) {
                            const auto& [on, r0, c0, ans0, dc0, dans0] = s;
                            Array r = r0 + c(1.0);
                            Array dc_da = dc0 * (x / r) - (c0 * x) / (r * r);
                            Array dans_da = dans0 + dc_da;
                            Array cc = c0 * (x / r);
                            Array ans = ans0 + cc;
                            Array more = logical_and(on, greater(abs(dc_da / dans_da), eps));
                            return State{more, where(on, r, r0), where(on, cc, c0), where(on, ans, ans0),
                                         where(on, dc_da, dc0), where(on, dans_da, dans0)};
                          },
                          init);
  const Array& ans = std::get<3>(done);
  const Array& dans_da = std::get<5>(done);
  Array dlogax_da = log(x) - digamma_lanczos(a + c(1.0));
  return (-(dans_da + ans * dlogax_da) * x) / a;
}

Array igammac_fraction_sample_grad(const Array& x, const Array& a, const Array& enabled0) {
  const DType dt = a.dtype();
  auto c = [dt](double v) { return constant(v, dt); };
  const double eps_d = float_info(dt).eps();
  Array eps = c(eps_d), big = c(1.0 / eps_d);
  Array y0 = c(1.0) - a;
  Array z0 = (x + y0) + c(1.0);
  Array pkm1_0 = x + c(1.0), qkm1_0 = z0 * x;
  Array ans0 = pkm1_0 / qkm1_0;
  Array dqkm1_0 = -x;
  Array dans0 = (zeros_like(x) - ans0 * dqkm1_0) / qkm1_0;
  // enabled, ans, t, y, z, count, pkm1, qkm1, pkm2, qkm2, dpkm2, dqkm2, dpkm1, dqkm1, dans_da
  using State = std::vector<Array>;
  State init{enabled0, ans0, full_like(x, Scalar(1.0)), y0, z0, c(0.0), pkm1_0, qkm1_0, full_like(x, Scalar(1.0)),
             x, zeros_like(x), zeros_like(x), zeros_like(x), dqkm1_0, dans0};
  State done = while_loop(
      [&](const State& s) { return logical_and(less(s[5], c(2000.0)), any(s[0])); },
      [&](const State& s) {
        const Array& on = s[0];
        Array count = s[5] + c(1.0), y = s[3] + c(1.0), z = s[4] + c(2.0);
        Array yc = y * count;
        const Array &pkm1 = s[6], &qkm1 = s[7], &pkm2 = s[8], &qkm2 = s[9];
        const Array &dpkm2 = s[10], &dqkm2 = s[11], &dpkm1 = s[12], &dqkm1 = s[13];
        Array pk = pkm1 * z - pkm2 * yc, qk = qkm1 * z - qkm2 * yc;
        Array nonzero = not_equal(qk, c(0.0));
        Array r = pk / qk;
        Array t = where(nonzero, abs((s[1] - r) / r), c(1.0));
        Array ans = where(nonzero, r, s[1]);
        Array dpk = ((dpkm1 * z - pkm1) - dpkm2 * yc) + pkm2 * count;
        Array dqk = ((dqkm1 * z - qkm1) - dqkm2 * yc) + qkm2 * count;
        Array dans = where(nonzero, (dpk - ans * dqk) / qk, s[14]);
        Array grad_change = where(nonzero, abs(dans - s[14]), c(1.0));
        // Shift the recurrences, rescaling all terms when they grow past 1/eps.
        Array rescale = greater(abs(pk), big);
        auto scaled = [&](const Array& v) { return where(rescale, v * eps, v); };
        std::vector<Array> next{scaled(pk), scaled(qk), scaled(pkm1), scaled(qkm1),
                                scaled(dpkm1), scaled(dqkm1), scaled(dpk), scaled(dqk)};
        Array more = logical_and(on, greater(grad_change, eps));
        State out{more, where(on, ans, s[1]), where(on, t, s[2]), where(on, y, s[3]), where(on, z, s[4]), count};
        for (size_t i = 0; i < next.size(); ++i) out.push_back(where(on, next[i], s[6 + i]));
        out.push_back(where(on, dans, s[14]));
        return out;
      },
      init);
  Array dlogax_da = log(x) - digamma_lanczos(a);
  return -(done[14] + done[1] * dlogax_da) * x;
}

Array random_gamma_grad(const Array& a, const Array& x) {
  const DType dt = a.dtype();
  auto c = [dt](double v) { return constant(v, dt); };
  const FloatInfo fi = float_info(dt);
  const double max_finite = (2.0 - fi.eps()) * std::ldexp(1.0, -fi.minexp + 1);
  Array is_nan = logical_or(isnan(a), isnan(x));
  Array x_is_zero = equal(x, c(0.0));
  Array domain_error = logical_or(less(x, c(0.0)), less_equal(a, c(0.0)));
  Array use_fraction = logical_and(greater(x, c(1.0)), greater(x, a));
  Array log_ax = (a * log(x) - x) - lgamma_lanczos(a);
  Array underflow = less(log_ax, c(-std::log(max_finite)));
  Array enabled = logical_not(logical_or(logical_or(x_is_zero, domain_error), logical_or(underflow, is_nan)));
  Array out = where(use_fraction,
                    -igammac_fraction_sample_grad(x, a, logical_and(enabled, use_fraction)),
                    igamma_series_sample_grad(x, a, logical_and(enabled, logical_not(use_fraction))));
  out = where(x_is_zero, c(0.0), out);
  return where(logical_or(domain_error, is_nan), c(NAN), out);
}

// JAX's jvp of random_gamma_p: tangent * d sample / d alpha (log space: divided by the sample,
// with an underflowed exp(log sample) replaced by the smallest normal float).
Array gamma_tangent(const Array& sample, const Array& a, bool log_space) {
  if (!log_space) return random_gamma_grad(a, sample);
  const DType dt = a.dtype();
  Array s = exp(sample);
  s = where(equal(s, constant(0.0, dt)), constant(float_info(dt).tiny(), dt), s);
  return random_gamma_grad(a, s) / s;
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

// |g|^p as jnp.power computes it: an integer p by square-and-multiply (lax.integer_pow),
// anything else by pow.
Array power_of(const Array& x, double p) {
  if (p != std::floor(p) || p < 1 || p > 64) return pow(x, constant(p, x.dtype()));
  auto n = int64_t(p);
  std::optional<Array> acc;
  Array base = x;
  while (n > 0) {
    if (n & 1) acc = acc ? *acc * base : base;
    n >>= 1;
    if (n > 0) base = base * base;
  }
  return *acc;
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
  Array ga = exp(log_gamma_a - log_max), gb = exp(log_gamma_b - log_max);
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
  // Gamma draws in log space (small alphas underflow otherwise), normalized by a softmax.
  return nn::softmax(loggamma(key, astype(alpha, dtype), s, dtype), {-1});
}

Array chisquare(const Array& key, const Array& df, std::optional<Shape> shape, DType dtype) {
  check_key("chisquare", key);
  check_float("chisquare", dtype);
  const Shape s = sample_shape("chisquare", shape, {df.shape()});
  Array two = constant(2.0, dtype);
  Array half_df = astype(df, dtype) / two;
  return exp(loggamma(key, half_df, s, dtype)) * two;
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
  return (chi2_num / num_df) / (chi2_den / den_df);
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
  return r * pow(g, inv_p);
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
  Array norm = pow(sum(power_of(abs(g), p), {-1}) + e, constant(1.0 / p, dtype));
  return g / expand_dims(norm, {-1});
}

}  // namespace tessel::random
