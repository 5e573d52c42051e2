// Count-valued samplers of jax.random as compositions: poisson (Knuth's product of uniforms
// for small rates, Hormann's transformed rejection above 10), binomial (geometric inversion
// for small means, BTRS above) and multinomial (a scan of conditional binomials). Each
// rejection sampler is one while_loop over the whole sample with one key split per round,
// as JAX runs it, so the draws equal JAX's.
#include <tuple>

#include "random/sampler_util.h"
#include "tessel/control_flow.h"
#include "tessel/special.h"

namespace tessel::random {
using namespace sampler;
namespace {

Array split_row(const Array& ks, int64_t i) { return reshape(slice(ks, {i, 0}, {i + 1, 2}), {2}); }

// The whole-sample rejection loop JAX runs for poisson and binomial: each round splits the
// key in three (next key, u's, v's), draws two uniforms of the sample's shape, and
// `propose(u, v) -> (k, accepted)` keeps each element's first accepted k; the loop ends
// when every element has one.
template <class Propose>
Array rejection_loop(const Array& key, const Shape& shape, DType ft, DType dtype, const Propose& propose) {
  Array max_iters = Array(Scalar(std::numeric_limits<int32_t>::max()));
  using State = std::tuple<Array, Array, Array, Array>;  // round, k, accepted, key
  State init{Array(Scalar(0, DType::int32)), full(shape, Scalar(-1.0, ft)), full(shape, Scalar(false)), key};
  State done = while_loop(
      [&](const State& s) {
        return logical_and(any(logical_not(std::get<2>(s))), less(std::get<0>(s), max_iters));
      },
      [&](const State& s) {
        const auto& [i, k_out, accepted, rng] = s;
        Array ks = split(rng, 3);
        auto [k, accept] = propose(uniform(split_row(ks, 1), shape, ft), uniform(split_row(ks, 2), shape, ft));
        return State{i + Array(Scalar(1, DType::int32)), where(accept, k, k_out), logical_or(accepted, accept),
                     split_row(ks, 0)};
      },
      init);
  return astype(std::get<1>(done), dtype);
}

// Knuth: multiply uniforms until the product drops below exp(-lam); k counts the factors.
Array poisson_knuth(const Array& key, const Array& lam, const Shape& shape, DType dtype) {
  using State = std::tuple<Array, Array, Array, Array>;  // round, k, key, log of the product
  Array neg_lam = -lam;
  Array max_iters = Array(Scalar(std::numeric_limits<int32_t>::max()));
  State init{Array(Scalar(0, DType::int32)), zeros(shape, dtype), key, zeros(shape, DType::float32)};
  State done = while_loop(
      [&](const State& s) {
        return logical_and(any(greater(std::get<3>(s), neg_lam)), less(std::get<0>(s), max_iters));
      },
      [&](const State& s) {
        const auto& [i, k, rng, log_prod] = s;
        auto [next, sub] = split2(rng);
        Array k2 = where(greater(log_prod, neg_lam), k + Array(Scalar(1, dtype)), k);
        Array u = uniform(sub, shape, DType::float32);
        return State{i + Array(Scalar(1, DType::int32)), k2, next, log_prod + ops::xla_log(u)};
      },
      init);
  return std::get<1>(done) - Array(Scalar(1, dtype));
}

// Hormann's transformed rejection (PTRS) for rates of 10 and more.
Array poisson_rejection(const Array& key, const Array& lam, const Shape& shape, DType dtype) {
  const DType ft = lam.dtype();
  auto c = [ft](double v) { return constant(v, ft); };
  Array log_lam = ops::xla_log(lam);
  Array b = c(0.931) + c(2.53) * sqrt(lam);
  Array a = c(-0.059) + c(0.02483) * b;
  Array inv_alpha = c(1.1239) + c(1.1328) / (b - c(3.4));
  Array v_r = c(0.9277) - c(3.6224) / (b - c(2.0));
  return rejection_loop(key, shape, ft, dtype, [&](const Array& u_draw, const Array& v) {
    Array u = u_draw - c(0.5);
    Array us = c(0.5) - abs(u);
    Array k = floor((((c(2.0) * a) / us + b) * u + lam) + c(0.43));
    Array s_ = ops::xla_log((v * inv_alpha) / (a / (us * us) + b));
    Array t_ = ((-lam) + k * log_lam) - lgamma(k + c(1.0));
    Array accept1 = logical_and(greater_equal(us, c(0.07)), less_equal(v, v_r));
    Array reject = logical_or(less(k, c(0.0)), logical_and(less(us, c(0.013)), greater(v, us)));
    return std::pair(k, logical_or(accept1, logical_and(logical_not(reject), less_equal(s_, t_))));
  });
}

// Stirling's series tail log(k!) - [(k + 1/2) log(k + 1) - (k + 1) + log(2 pi)/2], tabulated
// for k <= 9 (JAX clamps k to [0, 9] before the series, kept for equal draws).
Array stirling_tail(const Array& k) {
  const DType dt = k.dtype();
  auto c = [dt](double v) { return constant(v, dt); };
  static const std::vector<double> kTail = {0.0810614667953272,  0.0413406959554092,  0.0276779256849983,
                                            0.02079067210376509, 0.0166446911898211,  0.0138761288230707,
                                            0.0118967099458917,  0.0104112652619720,  0.00925546218271273,
                                            0.00833056343336287};
  Array use_table = less_equal(k, c(9.0));
  Array kc = clip(k, c(0.0), c(9.0));
  Array kp1sq = (kc + c(1.0)) * (kc + c(1.0));
  Array approx = (c(1.0 / 12) - (c(1.0 / 360) - c(1.0 / 1260) / kp1sq) / kp1sq) / (kc + c(1.0));
  Array table = astype(Array(kTail), dt);
  Array looked_up = take(table, astype(floor(kc), DType::int32), 0);
  return where(use_table, looked_up, approx);
}

// Counting geometric waiting times until they pass `count` (small count * prob).
Array binomial_inversion(const Array& key, const Array& count, const Array& prob, const Shape& shape, DType dtype) {
  const DType ft = prob.dtype();
  Array log1m = ops::xla_log1p(-prob);
  Array max_iters = Array(Scalar(std::numeric_limits<int32_t>::max()));
  using State = std::tuple<Array, Array, Array, Array>;  // round, number of geometrics, their sum, key
  State init{Array(Scalar(0, DType::int32)), zeros(shape, ft), zeros(shape, ft), key};
  State done = while_loop(
      [&](const State& s) {
        return logical_and(any(less_equal(std::get<2>(s), count)), less(std::get<0>(s), max_iters));
      },
      [&](const State& s) {
        const auto& [i, num, total, rng] = s;
        auto [sub, next] = split2(rng);  // JAX takes the first key as the subkey here
        Array num2 = where(less_equal(total, count), num + constant(1.0, ft), num);
        Array u = uniform(sub, shape, ft);
        Array geom = ceil(ops::xla_log(u) / log1m);
        return State{i + Array(Scalar(1, DType::int32)), num2, total + geom, next};
      },
      init);
  return astype(std::get<1>(done) - constant(1.0, ft), dtype);
}

// Kachitvichyanukul and Schmeiser's BTRS transformed rejection.
Array binomial_btrs(const Array& key, const Array& count, const Array& prob, const Shape& shape, DType dtype) {
  const DType ft = prob.dtype();
  auto c = [ft](double v) { return constant(v, ft); };
  Array one = c(1.0);
  Array stddev = sqrt(count * prob * (one - prob));
  Array b = c(1.15) + c(2.53) * stddev;
  Array a = (c(-0.0873) + c(0.0248) * b) + c(0.01) * prob;
  Array cc = count * prob + c(0.5);
  Array v_r = c(0.92) - c(4.2) / b;
  Array r = prob / (one - prob);
  Array alpha = (c(2.83) + c(5.1) / b) * stddev;
  Array m = floor((count + one) * prob);
  return rejection_loop(key, shape, ft, dtype, [&](const Array& u_draw, const Array& v) {
    Array u = u_draw - c(0.5);
    Array us = c(0.5) - abs(u);
    Array accept1 = logical_and(greater_equal(us, c(0.07)), less_equal(v, v_r));
    Array k = floor(((c(2.0) * a) / us + b) * u + cc);
    Array reject = logical_or(less(k, c(0.0)), greater(k, count));
    Array lv = ops::xla_log((v * alpha) / (a / (us * us) + b));
    Array ub = (m + c(0.5)) * ops::xla_log((m + one) / (r * ((count - m) + one))) +
               (count + one) * ops::xla_log(((count - m) + one) / ((count - k) + one)) +
               (k + c(0.5)) * ops::xla_log((r * ((count - k) + one)) / (k + one)) + stirling_tail(m) +
               stirling_tail(count - m) - stirling_tail(k) - stirling_tail(count - k);
    return std::pair(k, logical_or(accept1, logical_and(logical_not(reject), less_equal(lv, ub))));
  });
}

}  // namespace

Array poisson(const Array& key, const Array& lam, std::optional<Shape> shape, DType dtype) {
  check_key("poisson", key);
  check_int("poisson", dtype);
  if (is_complex(lam.dtype()) || is_bool(lam.dtype()))
    throw DTypeError("poisson: the rate lam must be a real array, got " + lam.aval().to_string());
  const Shape s = shape ? *shape : lam.shape();
  sample_shape("poisson", s, {lam.shape()});
  Array rate = astype(broadcast_to(lam, s), DType::float32);
  auto c = [](double v) { return constant(v, DType::float32); };
  Array use_knuth = logical_or(isnan(rate), less(rate, c(10.0)));
  Array lam_knuth = where(use_knuth, rate, c(0.0));
  // Rejection's acceptance tops out near 89% as lam grows; 1e5 keeps its unused lanes cheap.
  Array lam_rejection = where(use_knuth, c(1e5), rate);
  Array result = where(use_knuth, poisson_knuth(key, lam_knuth, s, dtype),
                       poisson_rejection(key, lam_rejection, s, dtype));
  return where(equal(rate, c(0.0)), zeros(s, dtype), result);
}

Array binomial(const Array& key, const Array& n, const Array& p, std::optional<Shape> shape, DType dtype) {
  check_key("binomial", key);
  check_float("binomial", dtype);
  if (is_complex(p.dtype()) || is_bool(p.dtype()) || is_complex(n.dtype()) || is_bool(n.dtype()))
    throw DTypeError("binomial: n and p must be real arrays, got " + n.aval().to_string() + " and " +
                     p.aval().to_string());
  const Shape s = sample_shape("binomial", shape, {n.shape(), p.shape()});
  const DType ft = is_floating(p.dtype()) && !p.aval().weak_type ? p.dtype() : DType::float32;
  auto c = [ft](double v) { return constant(v, ft); };
  Array prob = broadcast_to(astype(p, ft), s);
  Array count = broadcast_to(astype(n, ft), s);
  Array p_lt_half = less(prob, c(0.5));
  Array q = where(p_lt_half, prob, c(1.0) - prob);
  Array count_nan_or_neg = logical_or(isnan(count), less(count, c(0.0)));
  Array count_inf = isinf(count);
  Array q_is_nan = isnan(q);
  Array q_lt_0 = less(q, c(0.0));
  q = where(logical_or(q_is_nan, q_lt_0), c(0.01), q);
  Array use_inversion = logical_or(count_nan_or_neg, less_equal(count * q, c(10.0)));
  count = floor(count);
  Array count_inv = where(use_inversion, count, c(0.0));
  Array count_btrs = where(use_inversion, c(1e4), count);
  Array q_btrs = where(use_inversion, c(0.5), q);
  Array samples = where(use_inversion, binomial_inversion(key, count_inv, q, s, dtype),
                        binomial_btrs(key, count_btrs, q_btrs, s, dtype));
  Array invalid = logical_or(logical_or(q_lt_0, q_is_nan), count_nan_or_neg);
  samples = where(invalid, constant(NAN, dtype), samples);
  samples = where(logical_and(count_inf, logical_not(invalid)), constant(INFINITY, dtype), samples);
  // Sampling used min(p, 1 - p): successes of 1 - p are failures of p.
  Array kept = logical_or(logical_or(p_lt_half, count_nan_or_neg), logical_or(q_is_nan, count_inf));
  return where(kept, samples, astype(count, dtype) - samples);
}

Array multinomial(const Array& key, const Array& n, const Array& p, std::optional<Shape> shape, DType dtype) {
  check_key("multinomial", key);
  check_float("multinomial", dtype);
  if (p.ndim() < 1)
    throw ValueError("multinomial: p must have at least one dimension (the outcomes), got " + p.aval().to_string());
  const DType ft = is_floating(p.dtype()) && !p.aval().weak_type ? p.dtype() : DType::float32;
  const Shape s = shape ? *shape : p.shape();
  if (s.empty() || s.back() != p.shape().back())
    throw ShapeError("multinomial: shape " + shape_to_string(s) + " must end with the number of outcomes " +
                     std::to_string(p.shape().back()) + " (p.shape[-1])");
  const Shape batch(s.begin(), s.end() - 1);
  sample_shape("multinomial", s, {p.shape()});
  sample_shape("multinomial", batch, {n.shape()});
  Array trials = broadcast_to(astype(n, ft), batch);
  Array probs = moveaxis(broadcast_to(astype(p, ft), s), -1, 0);
  Array remaining = cumsum(probs, 0, true);
  Array ratios = probs / where(equal(remaining, constant(0.0, ft)), constant(1.0, ft), remaining);
  Array keys = split(key, probs.shape()[0]);
  // Outcome j gets Binomial(remaining trials, p_j / (p_j + ... + p_last)).
  auto step = [&](const Array& remainder, const std::pair<Array, Array>& x) {
    Array count = binomial(x.second, remainder, clip(x.first, constant(0.0, ft), constant(1.0, ft)), std::nullopt, ft);
    return std::make_pair(remainder - count, count);
  };
  auto [left, counts] = scan(step, trials, std::make_pair(ratios, keys));
  return astype(moveaxis(counts, 0, -1), dtype);
}

}  // namespace tessel::random
