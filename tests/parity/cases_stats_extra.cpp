// tessel's side of tests/parity/cases_stats_extra.py (truncnorm, vonmises, wrapcauchy, poisson.entropy,
// sem, mode, rankdata).
#include "parity/parity.h"
#include "tessel/scipy_stats.h"

namespace st = tessel::scipy::stats;
using namespace tessel::parity;

namespace {
using Truncated = Array (*)(const Array&, const Array&, const Array&, const Array&, const Array&);
/// An entry for f(x, a, b, loc, scale), loc and scale defaulting to 0 and 1.
Fn truncated(Truncated f) {
  return [f](const In& x, const Params&) {
    return out(f(x.at(0), x.at(1), x.at(2), x.size() > 3 ? x[3] : Array(0.0), x.size() > 4 ? x[4] : Array(1.0)));
  };
}
}  // namespace

TESSEL_PARITY_CASES(stats_extra) {
  reg("scipy.stats.truncnorm.logpdf", truncated(st::truncnorm::logpdf));
  reg("scipy.stats.truncnorm.pdf", truncated(st::truncnorm::pdf));
  reg("scipy.stats.truncnorm.logcdf", truncated(st::truncnorm::logcdf));
  reg("scipy.stats.truncnorm.cdf", truncated(st::truncnorm::cdf));
  reg("scipy.stats.truncnorm.logsf", truncated(st::truncnorm::logsf));
  reg("scipy.stats.truncnorm.sf", truncated(st::truncnorm::sf));
  reg("scipy.stats.vonmises.logpdf", binary(st::vonmises::logpdf));
  reg("scipy.stats.vonmises.pdf", binary(st::vonmises::pdf));
  reg("scipy.stats.wrapcauchy.logpdf", binary(st::wrapcauchy::logpdf));
  reg("scipy.stats.wrapcauchy.pdf", binary(st::wrapcauchy::pdf));
  reg("scipy.stats.poisson.entropy",
      [](const In& x, const Params&) { return out(st::poisson::entropy(x.at(0), x.size() > 1 ? x[1] : Array(0.0))); });
  reg("scipy.stats.sem", [](const In& x, const Params& p) {
    return out(st::sem(x.at(0), p.opt_i("axis"), p.has("ddof") ? p.i("ddof") : 1,
                       p.has("nan_policy") ? p.s("nan_policy") : "propagate", p.has("keepdims") && p.flag("keepdims")));
  });
  reg("scipy.stats.mode", [](const In& x, const Params& p) {
    st::ModeResult r = st::mode(x.at(0), p.opt_i("axis"), "propagate", p.flag("keepdims"));
    return Out{r.mode, r.count};
  });
  reg("scipy.stats.rankdata",
      [](const In& x, const Params& p) { return out(st::rankdata(x.at(0), p.s("method"), p.opt_i("axis"))); });
}
