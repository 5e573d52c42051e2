// tessel's side of tests/parity/cases_stats.py (include/tessel/scipy_stats.h).
#include <string>

#include "parity/parity.h"
#include "tessel/scipy_stats.h"

namespace st = tessel::scipy::stats;
using namespace tessel::parity;

namespace {
using LocScale = Array (*)(const Array&, const Array&, const Array&);
using Shape1 = Array (*)(const Array&, const Array&, const Array&, const Array&);
using Shape2 = Array (*)(const Array&, const Array&, const Array&, const Array&, const Array&);
/// An entry for f(x, loc, scale): x alone uses the defaults.
Fn loc_scale(LocScale f) {
  return [f](const In& x, const Params&) {
    return out(x.size() == 1 ? f(x[0], Array(0.0), Array(1.0)) : f(x.at(0), x.at(1), x.at(2)));
  };
}
/// An entry for f(x, shape, loc, scale) or f(k, n, p, loc): omitted trailing arguments default.
Fn one_shape(Shape1 f, double last_default = 1.0) {
  return [f, last_default](const In& x, const Params&) {
    Array loc = x.size() > 2 ? x[2] : Array(0.0), last = x.size() > 3 ? x[3] : Array(last_default);
    return out(f(x.at(0), x.at(1), loc, last));
  };
}
Fn two_shapes(Shape2 f) {
  return [f](const In& x, const Params&) {
    Array loc = x.size() > 3 ? x[3] : Array(0.0), scale = x.size() > 4 ? x[4] : Array(1.0);
    return out(f(x.at(0), x.at(1), x.at(2), loc, scale));
  };
}
/// An entry for f(k, n, a, b, loc) (betabinom).
Fn three_shapes_loc(Shape2 f) {
  return [f](const In& x, const Params&) {
    return out(f(x.at(0), x.at(1), x.at(2), x.at(3), x.size() > 4 ? x[4] : Array(0.0)));
  };
}
/// An entry for f(k, param, loc).
Fn with_loc(LocScale f) {
  return [f](const In& x, const Params&) { return out(f(x.at(0), x.at(1), x.size() > 2 ? x[2] : Array(0.0))); };
}
}  // namespace

TESSEL_PARITY_CASES(stats) {
  known_difference("scipy.stats.betabinom.logpmf",
                   "a sum of betaln terms: JAX's betaln is 1e-7 away from SciPy's on these points (see "
                   "scipy.special.betaln); tessel's agrees with scipy.stats.betabinom to 1e-15");
  known_difference("scipy.stats.betabinom.pmf", "exp(logpmf): see scipy.stats.betabinom.logpmf");
#define TS_LOC_SCALE(d, f) reg("scipy.stats." #d "." #f, loc_scale(st::d::f))
  TS_LOC_SCALE(norm, logpdf); TS_LOC_SCALE(norm, pdf); TS_LOC_SCALE(norm, cdf); TS_LOC_SCALE(norm, logcdf);
  TS_LOC_SCALE(norm, sf); TS_LOC_SCALE(norm, logsf); TS_LOC_SCALE(norm, ppf); TS_LOC_SCALE(norm, isf);
  TS_LOC_SCALE(uniform, logpdf); TS_LOC_SCALE(uniform, pdf); TS_LOC_SCALE(uniform, cdf); TS_LOC_SCALE(uniform, ppf);
  TS_LOC_SCALE(expon, logpdf); TS_LOC_SCALE(expon, pdf); TS_LOC_SCALE(expon, cdf); TS_LOC_SCALE(expon, logcdf);
  TS_LOC_SCALE(expon, sf); TS_LOC_SCALE(expon, logsf); TS_LOC_SCALE(expon, ppf);
  TS_LOC_SCALE(laplace, logpdf); TS_LOC_SCALE(laplace, pdf); TS_LOC_SCALE(laplace, cdf);
  TS_LOC_SCALE(logistic, logpdf); TS_LOC_SCALE(logistic, pdf); TS_LOC_SCALE(logistic, cdf);
  TS_LOC_SCALE(logistic, sf); TS_LOC_SCALE(logistic, ppf); TS_LOC_SCALE(logistic, isf);
  TS_LOC_SCALE(cauchy, logpdf); TS_LOC_SCALE(cauchy, pdf); TS_LOC_SCALE(cauchy, cdf); TS_LOC_SCALE(cauchy, logcdf);
  TS_LOC_SCALE(cauchy, sf); TS_LOC_SCALE(cauchy, logsf); TS_LOC_SCALE(cauchy, ppf); TS_LOC_SCALE(cauchy, isf);
  TS_LOC_SCALE(gumbel_r, logpdf); TS_LOC_SCALE(gumbel_r, pdf); TS_LOC_SCALE(gumbel_r, cdf);
  TS_LOC_SCALE(gumbel_r, logcdf); TS_LOC_SCALE(gumbel_r, sf); TS_LOC_SCALE(gumbel_r, logsf);
  TS_LOC_SCALE(gumbel_r, ppf);
  TS_LOC_SCALE(gumbel_l, logpdf); TS_LOC_SCALE(gumbel_l, pdf); TS_LOC_SCALE(gumbel_l, cdf);
  TS_LOC_SCALE(gumbel_l, logcdf); TS_LOC_SCALE(gumbel_l, sf); TS_LOC_SCALE(gumbel_l, logsf);
  TS_LOC_SCALE(gumbel_l, ppf);
#undef TS_LOC_SCALE
#define TS_ONE(d, f) reg("scipy.stats." #d "." #f, one_shape(st::d::f))
  TS_ONE(gamma, logpdf); TS_ONE(gamma, pdf); TS_ONE(gamma, cdf); TS_ONE(gamma, logcdf); TS_ONE(gamma, sf);
  TS_ONE(gamma, logsf);
  TS_ONE(chi2, logpdf); TS_ONE(chi2, pdf); TS_ONE(chi2, cdf); TS_ONE(chi2, logcdf); TS_ONE(chi2, sf);
  TS_ONE(chi2, logsf);
  TS_ONE(t, logpdf); TS_ONE(t, pdf);
  TS_ONE(pareto, logpdf); TS_ONE(pareto, pdf); TS_ONE(pareto, cdf); TS_ONE(pareto, logcdf); TS_ONE(pareto, sf);
  TS_ONE(pareto, logsf); TS_ONE(pareto, ppf);
#undef TS_ONE
#define TS_TWO(d, f) reg("scipy.stats." #d "." #f, two_shapes(st::d::f))
  TS_TWO(beta, logpdf); TS_TWO(beta, pdf); TS_TWO(beta, cdf); TS_TWO(beta, logcdf); TS_TWO(beta, sf);
  TS_TWO(beta, logsf);
#undef TS_TWO
  reg("scipy.stats.betabinom.logpmf", three_shapes_loc(st::betabinom::logpmf));
  reg("scipy.stats.betabinom.pmf", three_shapes_loc(st::betabinom::pmf));
  reg("scipy.stats.binom.logpmf", one_shape(st::binom::logpmf, 0.0));
  reg("scipy.stats.binom.pmf", one_shape(st::binom::pmf, 0.0));
  reg("scipy.stats.nbinom.logpmf", one_shape(st::nbinom::logpmf, 0.0));
  reg("scipy.stats.nbinom.pmf", one_shape(st::nbinom::pmf, 0.0));
  reg("scipy.stats.poisson.logpmf", with_loc(st::poisson::logpmf));
  reg("scipy.stats.poisson.pmf", with_loc(st::poisson::pmf));
  reg("scipy.stats.poisson.cdf", with_loc(st::poisson::cdf));
  reg("scipy.stats.bernoulli.logpmf", with_loc(st::bernoulli::logpmf));
  reg("scipy.stats.bernoulli.pmf", with_loc(st::bernoulli::pmf));
  reg("scipy.stats.bernoulli.cdf", binary(st::bernoulli::cdf));
  reg("scipy.stats.bernoulli.ppf", binary(st::bernoulli::ppf));
  reg("scipy.stats.geom.logpmf", with_loc(st::geom::logpmf));
  reg("scipy.stats.geom.pmf", with_loc(st::geom::pmf));
  reg("scipy.stats.gennorm.logpdf", binary(st::gennorm::logpdf));
  reg("scipy.stats.gennorm.pdf", binary(st::gennorm::pdf));
  reg("scipy.stats.gennorm.cdf", binary(st::gennorm::cdf));
  reg("scipy.stats.dirichlet.logpdf", binary(st::dirichlet::logpdf));
  reg("scipy.stats.dirichlet.pdf", binary(st::dirichlet::pdf));
  reg("scipy.stats.multivariate_normal.logpdf",
      [](const In& x, const Params&) { return out(st::multivariate_normal::logpdf(x.at(0), x.at(1), x.at(2))); });
  reg("scipy.stats.multivariate_normal.pdf",
      [](const In& x, const Params&) { return out(st::multivariate_normal::pdf(x.at(0), x.at(1), x.at(2))); });
  reg("scipy.stats.multinomial.logpmf",
      [](const In& x, const Params&) { return out(st::multinomial::logpmf(x.at(0), x.at(1), x.at(2))); });
  reg("scipy.stats.multinomial.pmf",
      [](const In& x, const Params&) { return out(st::multinomial::pmf(x.at(0), x.at(1), x.at(2))); });
}
