// tessel's side of tests/parity/cases_random.py (include/tessel/random.h).
#include "parity/parity.h"
#include "tessel/random.h"

namespace ts = tessel;
using namespace tessel::parity;

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
  // Samplers (include/tessel/random_distributions.h).
  reg("random.randint", [](const In& x, const Params& p) {
    return out(ts::random::randint(x[0], p.ints("shape"), x[1], x[2], p.dtype("dtype")));
  });
  reg("random.bernoulli", [](const In& x, const Params& p) {
    return out(ts::random::bernoulli(x[0], x[1], p.ints("shape")));
  });
  reg("random.categorical", [](const In& x, const Params& p) {
    return out(ts::random::categorical(x[0], x[1], p.i("axis"), p.opt_ints("shape"), p.flag("replace")));
  });
  reg("random.truncated_normal", [](const In& x, const Params& p) {
    return out(ts::random::truncated_normal(x[0], x[1], x[2], p.ints("shape"), p.dtype("dtype")));
  });
  using Sampler = ts::Array (*)(const ts::Array&, const ts::Shape&, ts::DType);
  for (auto [name, fn] : std::initializer_list<std::pair<const char*, Sampler>>{
           {"random.gumbel", ts::random::gumbel}, {"random.exponential", ts::random::exponential},
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
  reg("random.key_data", unary(ts::random::key_data));
  reg("random.wrap_key_data", unary(ts::random::wrap_key_data));
  reg("random.clone", unary(ts::random::clone));
}
