// tessel's side of tests/parity/cases_random.py (include/tessel/random.h).
#include "ops/special.h"
#include "parity/parity.h"
#include "tessel/nn_initializers.h"
#include "tessel/random.h"

namespace ts = tessel;
using namespace tessel::parity;

namespace {
// The case's `mode` parameter ("low" when absent), as JAX names it.
ts::random::Mode mode_of(const Params& p) {
  const std::string m = p.has("mode") ? p.s("mode") : "low";
  if (m == "high") return ts::random::Mode::high;
  if (m == "highest") return ts::random::Mode::highest;
  return ts::random::Mode::low;
}
}  // namespace

TESSEL_PARITY_CASES(random) {
  reg("random.key", [](const In&, const Params& p) { return out(ts::random::key(p.i("seed"))); });
  reg("random.split", [](const In& x, const Params& p) { return out(ts::random::split(x[0], p.i("num"))); });
  reg("random.fold_in", binary(ts::random::fold_in));
  reg("random.bits", [](const In& x, const Params& p) {
    return out(ts::random::bits(x[0], p.ints("shape"), p.dtype("dtype")));
  });
  reg("random.uniform", [](const In& x, const Params& p) {
    if (x.size() == 3) return out(ts::random::uniform(x[0], p.ints("shape"), p.dtype("dtype"), x[1], x[2]));
    return out(ts::random::uniform(x[0], p.ints("shape"), p.dtype("dtype")));
  });
  reg("random.normal", [](const In& x, const Params& p) {
    return out(ts::random::normal(x[0], p.ints("shape"), p.dtype("dtype")));
  });
  reg("random.threefry_2x32", binary(ts::random::threefry_2x32));
  // exp, log, log1p, erf, pow, tan and multiply-add as XLA computes them (src/ops/special.h), for the samplers.
  reg("ops.xla_exp", unary(ts::ops::xla_exp));
  reg("ops.xla_log", unary(ts::ops::xla_log));
  reg("ops.xla_log1p", unary(ts::ops::xla_log1p));
  reg("ops.xla_erf", unary(ts::ops::xla_erf));
  reg("ops.xla_pow", binary(ts::ops::xla_pow));
  reg("ops.xla_tan", unary(ts::ops::xla_tan));
  reg("ops.xla_rsqrt", unary(ts::ops::xla_rsqrt));
  reg("ops.fma", [](const In& x, const Params&) { return out(ts::ops::fma(x[0], x[1], x[2])); });
  // Samplers (include/tessel/random_distributions.h).
  reg("random.randint", [](const In& x, const Params& p) {
    return out(ts::random::randint(x[0], p.ints("shape"), x[1], x[2], p.dtype("dtype")));
  });
  reg("random.bernoulli", [](const In& x, const Params& p) {
    return out(ts::random::bernoulli(x[0], x[1], p.ints("shape"), mode_of(p)));
  });
  reg("random.categorical", [](const In& x, const Params& p) {
    return out(ts::random::categorical(x[0], x[1], p.i("axis"), p.opt_ints("shape"), p.flag("replace"), mode_of(p)));
  });
  reg("random.gumbel", [](const In& x, const Params& p) {
    return out(ts::random::gumbel(x[0], p.ints("shape"), p.dtype("dtype"), mode_of(p)));
  });
  reg("random.truncated_normal", [](const In& x, const Params& p) {
    return out(ts::random::truncated_normal(x[0], x[1], x[2], p.ints("shape"), p.dtype("dtype")));
  });
  using Sampler = ts::Array (*)(const ts::Array&, const ts::Shape&, ts::DType);
  for (auto [name, fn] : std::initializer_list<std::pair<const char*, Sampler>>{
           {"random.exponential", ts::random::exponential},
           {"random.laplace", ts::random::laplace}, {"random.logistic", ts::random::logistic},
           {"random.cauchy", ts::random::cauchy}, {"random.maxwell", ts::random::maxwell},
           {"random.rademacher", ts::random::rademacher}})
    reg(name, [fn](const In& x, const Params& p) { return out(fn(x[0], p.ints("shape"), p.dtype("dtype"))); });
  using ParamSampler = ts::Array (*)(const ts::Array&, const ts::Array&, std::optional<ts::Shape>, ts::DType);
  for (auto [name, fn] : std::initializer_list<std::pair<const char*, ParamSampler>>{
           {"random.lognormal", ts::random::lognormal}, {"random.pareto", ts::random::pareto},
           {"random.rayleigh", ts::random::rayleigh}, {"random.wald", ts::random::wald},
           {"random.geometric", ts::random::geometric}})
    reg(name, [fn](const In& x, const Params& p) { return out(fn(x[0], x[1], p.ints("shape"), p.dtype("dtype"))); });
  reg("random.weibull_min", [](const In& x, const Params& p) {
    return out(ts::random::weibull_min(x[0], x[1], x[2], p.ints("shape"), p.dtype("dtype")));
  });
  reg("random.double_sided_maxwell", [](const In& x, const Params& p) {
    return out(ts::random::double_sided_maxwell(x[0], x[1], x[2], p.ints("shape"), p.dtype("dtype")));
  });
  reg("random.triangular", [](const In& x, const Params& p) {
    return out(ts::random::triangular(x[0], x[1], x[2], x[3], p.ints("shape"), p.dtype("dtype")));
  });
  // The gamma family (src/random/gamma.cpp).
  using GammaSampler = ts::Array (*)(const ts::Array&, const ts::Array&, std::optional<ts::Shape>, ts::DType);
  for (auto [name, fn] : std::initializer_list<std::pair<const char*, GammaSampler>>{
           {"random.gamma", ts::random::gamma}, {"random.loggamma", ts::random::loggamma},
           {"random.dirichlet", ts::random::dirichlet}, {"random.chisquare", ts::random::chisquare},
           {"random.t", ts::random::t}})
    reg(name, [fn](const In& x, const Params& p) {
      if (!p.has("dtype")) return out(fn(x[0], x[1], std::nullopt, ts::DType::float32));
      return out(fn(x[0], x[1], p.opt_ints("shape"), p.dtype("dtype")));
    });
  reg("random.beta", [](const In& x, const Params& p) {
    return out(ts::random::beta(x[0], x[1], x[2], p.opt_ints("shape"), p.dtype("dtype")));
  });
  reg("random.f", [](const In& x, const Params& p) {
    return out(ts::random::f(x[0], x[1], x[2], p.opt_ints("shape"), p.dtype("dtype")));
  });
  reg("random.generalized_normal", [](const In& x, const Params& p) {
    return out(ts::random::generalized_normal(x[0], p.f("p"), p.ints("shape"), p.dtype("dtype")));
  });
  reg("random.ball", [](const In& x, const Params& p) {
    return out(ts::random::ball(x[0], p.i("d"), p.f("p"), p.ints("shape"), p.dtype("dtype")));
  });
  // Shuffles (src/random/permutation.cpp).
  reg("random.permutation", [](const In& x, const Params& p) {
    if (x.size() == 1) return out(ts::random::permutation(x[0], p.i("n")));
    return out(ts::random::permutation(x[0], x[1], p.i("axis"), p.flag("independent")));
  });
  reg("random.choice", [](const In& x, const Params& p) {
    if (x.size() == 1) {
      std::optional<ts::Array> probs;
      if (p.has("pp")) {
        std::vector<double> v = p.floats("pp");
        probs = ts::astype(ts::Array(v), ts::DType::float32);
      }
      return out(ts::random::choice(x[0], ts::Array(int32_t(p.i("n"))), p.ints("shape"), p.flag("replace"), probs, 0,
                                    mode_of(p)));
    }
    std::optional<ts::Array> probs;
    if (x.size() == 3) probs = x[2];
    return out(ts::random::choice(x[0], x[1], p.ints("shape"), p.flag("replace"), probs, p.i("axis")));
  });
  // Counts and matrices (src/random/counts.cpp, matrices.cpp).
  reg("random.poisson", [](const In& x, const Params& p) {
    return out(ts::random::poisson(x[0], x[1], p.opt_ints("shape"), p.dtype("dtype")));
  });
  reg("random.binomial", [](const In& x, const Params& p) {
    return out(ts::random::binomial(x[0], x[1], x[2], p.opt_ints("shape"), p.dtype("dtype")));
  });
  reg("random.multinomial", [](const In& x, const Params& p) {
    return out(ts::random::multinomial(x[0], x[1], x[2], p.opt_ints("shape"), p.dtype("dtype")));
  });
  reg("random.multivariate_normal", [](const In& x, const Params& p) {
    return out(ts::random::multivariate_normal(x[0], x[1], x[2], p.opt_ints("shape"), std::nullopt, p.s("method")));
  });
  reg("random.orthogonal", [](const In& x, const Params& p) {
    return out(ts::random::orthogonal(x[0], p.i("n"), p.ints("shape"), ts::DType::float32, p.opt_i("m")));
  });
  // jax.nn.initializers (include/tessel/nn_initializers.h).
  namespace init = ts::nn::initializers;
  reg("nn.initializers.zeros", [](const In& x, const Params& p) { return out(init::zeros(x[0], p.ints("shape"))); });
  reg("nn.initializers.ones", [](const In& x, const Params& p) { return out(init::ones(x[0], p.ints("shape"))); });
  reg("nn.initializers.constant", [](const In& x, const Params& p) {
    return out(init::constant(ts::Array(p.f("v")))(x[0], p.ints("shape")));
  });
  using ScaleInit = init::Initializer (*)(double, ts::DType);
  for (auto [name, fn] : std::initializer_list<std::pair<const char*, ScaleInit>>{
           {"nn.initializers.uniform", init::uniform}, {"nn.initializers.normal", init::normal}})
    reg(name, [fn](const In& x, const Params& p) { return out(fn(p.f("v"), ts::DType::float32)(x[0], p.ints("shape"))); });
  reg("nn.initializers.truncated_normal", [](const In& x, const Params& p) {
    return out(init::truncated_normal(p.f("v"))(x[0], p.ints("shape")));
  });
  using FanInit = init::Initializer (*)(const init::FanAxes&, ts::DType);
  for (auto [name, fn] : std::initializer_list<std::pair<const char*, FanInit>>{
           {"nn.initializers.glorot_uniform", init::glorot_uniform}, {"nn.initializers.glorot_normal", init::glorot_normal},
           {"nn.initializers.lecun_uniform", init::lecun_uniform}, {"nn.initializers.lecun_normal", init::lecun_normal},
           {"nn.initializers.he_uniform", init::he_uniform}, {"nn.initializers.he_normal", init::he_normal},
           {"nn.initializers.xavier_uniform", init::xavier_uniform}, {"nn.initializers.xavier_normal", init::xavier_normal},
           {"nn.initializers.kaiming_uniform", init::kaiming_uniform},
           {"nn.initializers.kaiming_normal", init::kaiming_normal}})
    reg(name, [fn](const In& x, const Params& p) { return out(fn({}, ts::DType::float32)(x[0], p.ints("shape"))); });
  reg("nn.initializers.variance_scaling", [](const In& x, const Params& p) {
    init::FanAxes axes{p.ints("in_axis"), p.ints("out_axis"), p.ints("batch_axis")};
    return out(init::variance_scaling(p.f("scale"), p.s("mode"), p.s("dist"), axes)(x[0], p.ints("shape")));
  });
  reg("nn.initializers.orthogonal", [](const In& x, const Params& p) {
    return out(init::orthogonal(p.f("scale"), p.i("col"))(x[0], p.ints("shape")));
  });
  reg("nn.initializers.delta_orthogonal", [](const In& x, const Params& p) {
    return out(init::delta_orthogonal(p.f("scale"))(x[0], p.ints("shape")));
  });
  reg("random.key_data", unary(ts::random::key_data));
  reg("random.wrap_key_data", unary(ts::random::wrap_key_data));
  reg("random.clone", unary(ts::random::clone));
}
