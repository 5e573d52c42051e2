#pragma once
// jax.scipy.stats: the log densities, distribution and quantile functions of SciPy's
// distributions as compositions of tessel's primitives and ts::scipy::special, so they work
// eagerly and under jit, grad and vmap. One namespace per distribution, as in JAX
// (jax/_src/scipy/stats/*.py, whose formulas and edge values they follow): arguments are
// promoted together to a floating dtype (integers to the default float), shape parameters
// precede loc and scale, and loc/scale default to 0 and 1.
//
//   namespace st = ts::scipy::stats;
//   ts::Array x = ts::linspace(-3.0, 3.0, 7);
//   ts::Array lp = st::norm::logpdf(x), c = st::t::pdf(x, ts::Array(4.0)), q = st::norm::ppf(st::norm::cdf(x));
#include <cstdint>
#include <optional>
#include <string>

#include "tessel/array.h"
#include "tessel/ops.h"

namespace tessel::scipy::stats {

/// The standard error of the mean, std(a, ddof) / sqrt(n), along `axis` (all of a when
/// nullopt). nan_policy "propagate" (NaNs propagate) or "omit" (NaNs are skipped and n counts
/// the others), as jax.scipy.stats.sem.
TESSEL_API Array sem(const Array& a, std::optional<int64_t> axis = 0, int64_t ddof = 1,
                     const std::string& nan_policy = "propagate", bool keepdims = false);

/// What mode returns (jax.scipy.stats.ModeResult).
struct ModeResult {
  Array mode;   ///< the most common value of each slice (a's dtype)
  Array count;  ///< how often it occurs (int32)
};
/// The most common value along `axis` (of the flattened a when nullopt) and its count, as
/// jax.scipy.stats.mode: ties go to the smallest value, NaNs count as equal to each other
/// (and sort last), -0.0 equals 0.0, a scalar is a 1-element vector. Along an axis of length
/// 0 the mode is NaN and the count 0, both float32 (JAX's empty result). nan_policy: only
/// "propagate" (JAX raises for "omit" and "raise" too). Differentiable in the mode's value.
TESSEL_API ModeResult mode(const Array& a, std::optional<int64_t> axis = 0, const std::string& nan_policy = "propagate",
                           bool keepdims = false);

/// The ranks, from 1, of a's elements along `axis` (of the flattened a when nullopt), as
/// float32, as jax.scipy.stats.rankdata. `method` ranks ties: "average" (the mean of their
/// positions), "min", "max", "dense" (1 + the number of smaller distinct values) or
/// "ordinal" (their order in a). A slice holding a NaN ranks as all NaN. nan_policy: only
/// "propagate" (JAX raises for "omit" and "raise" too).
TESSEL_API Array rankdata(const Array& a, const std::string& method = "average",
                          std::optional<int64_t> axis = std::nullopt, const std::string& nan_policy = "propagate");

/// jax.scipy.stats.norm: the normal distribution N(loc, scale^2).
namespace norm {
/// The log density.
TESSEL_API Array logpdf(const Array& x, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The density.
TESSEL_API Array pdf(const Array& x, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The cumulative distribution ndtr((x - loc) / scale).
TESSEL_API Array cdf(const Array& x, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The log of the CDF (log_ndtr: accurate far into the lower tail).
TESSEL_API Array logcdf(const Array& x, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The survival function 1 - cdf, as cdf(-x, -loc, scale).
TESSEL_API Array sf(const Array& x, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The log of the survival function.
TESSEL_API Array logsf(const Array& x, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The quantile function (the inverse of cdf), ndtri(q) scale + loc.
TESSEL_API Array ppf(const Array& q, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The inverse survival function ppf(1 - q).
TESSEL_API Array isf(const Array& q, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
}  // namespace norm

/// jax.scipy.stats.uniform: the uniform distribution on [loc, loc + scale].
namespace uniform {
/// The log density (-inf outside the support).
TESSEL_API Array logpdf(const Array& x, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The density.
TESSEL_API Array pdf(const Array& x, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The cumulative distribution.
TESSEL_API Array cdf(const Array& x, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The quantile function (NaN outside [0, 1]).
TESSEL_API Array ppf(const Array& q, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
}  // namespace uniform

/// jax.scipy.stats.expon: the exponential distribution with rate 1 / scale from loc.
namespace expon {
/// The log density.
TESSEL_API Array logpdf(const Array& x, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The density.
TESSEL_API Array pdf(const Array& x, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The cumulative distribution -expm1(-(x - loc) / scale).
TESSEL_API Array cdf(const Array& x, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The log of the CDF.
TESSEL_API Array logcdf(const Array& x, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The survival function.
TESSEL_API Array sf(const Array& x, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The log of the survival function.
TESSEL_API Array logsf(const Array& x, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The quantile function.
TESSEL_API Array ppf(const Array& q, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
}  // namespace expon

/// jax.scipy.stats.laplace: the Laplace distribution.
namespace laplace {
/// The log density.
TESSEL_API Array logpdf(const Array& x, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The density.
TESSEL_API Array pdf(const Array& x, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The cumulative distribution.
TESSEL_API Array cdf(const Array& x, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
}  // namespace laplace

/// jax.scipy.stats.logistic: the logistic distribution.
namespace logistic {
/// The log density.
TESSEL_API Array logpdf(const Array& x, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The density.
TESSEL_API Array pdf(const Array& x, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The cumulative distribution expit((x - loc) / scale).
TESSEL_API Array cdf(const Array& x, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The survival function.
TESSEL_API Array sf(const Array& x, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The quantile function logit(q) scale + loc.
TESSEL_API Array ppf(const Array& q, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The inverse survival function.
TESSEL_API Array isf(const Array& q, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
}  // namespace logistic

/// jax.scipy.stats.cauchy: the Cauchy distribution.
namespace cauchy {
/// The log density.
TESSEL_API Array logpdf(const Array& x, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The density.
TESSEL_API Array pdf(const Array& x, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The cumulative distribution.
TESSEL_API Array cdf(const Array& x, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The log of the CDF.
TESSEL_API Array logcdf(const Array& x, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The survival function.
TESSEL_API Array sf(const Array& x, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The log of the survival function.
TESSEL_API Array logsf(const Array& x, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The quantile function.
TESSEL_API Array ppf(const Array& q, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The inverse survival function.
TESSEL_API Array isf(const Array& q, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
}  // namespace cauchy

/// jax.scipy.stats.gumbel_r: the right-skewed Gumbel distribution (NaN for scale <= 0).
namespace gumbel_r {
/// The log density.
TESSEL_API Array logpdf(const Array& x, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The density.
TESSEL_API Array pdf(const Array& x, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The cumulative distribution.
TESSEL_API Array cdf(const Array& x, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The log of the CDF.
TESSEL_API Array logcdf(const Array& x, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The survival function.
TESSEL_API Array sf(const Array& x, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The log of the survival function.
TESSEL_API Array logsf(const Array& x, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The quantile function (NaN outside (0, 1)).
TESSEL_API Array ppf(const Array& q, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
}  // namespace gumbel_r

/// jax.scipy.stats.gumbel_l: the left-skewed Gumbel distribution (NaN for scale <= 0).
namespace gumbel_l {
/// The log density.
TESSEL_API Array logpdf(const Array& x, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The density.
TESSEL_API Array pdf(const Array& x, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The cumulative distribution.
TESSEL_API Array cdf(const Array& x, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The log of the CDF.
TESSEL_API Array logcdf(const Array& x, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The survival function.
TESSEL_API Array sf(const Array& x, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The log of the survival function.
TESSEL_API Array logsf(const Array& x, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The quantile function (NaN outside (0, 1)).
TESSEL_API Array ppf(const Array& q, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
}  // namespace gumbel_l
/// jax.scipy.stats.beta: the beta distribution on [loc, loc + scale] (NaN for a, b or scale <= 0).
namespace beta {
/// The log density.
TESSEL_API Array logpdf(const Array& x, const Array& a, const Array& b, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The density.
TESSEL_API Array pdf(const Array& x, const Array& a, const Array& b, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The cumulative distribution (betainc).
TESSEL_API Array cdf(const Array& x, const Array& a, const Array& b, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The log of the CDF.
TESSEL_API Array logcdf(const Array& x, const Array& a, const Array& b, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The survival function.
TESSEL_API Array sf(const Array& x, const Array& a, const Array& b, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The log of the survival function.
TESSEL_API Array logsf(const Array& x, const Array& a, const Array& b, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
}  // namespace beta

/// jax.scipy.stats.gamma: the gamma distribution with shape a.
namespace gamma {
/// The log density.
TESSEL_API Array logpdf(const Array& x, const Array& a, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The density.
TESSEL_API Array pdf(const Array& x, const Array& a, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The cumulative distribution (gammainc).
TESSEL_API Array cdf(const Array& x, const Array& a, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The log of the CDF.
TESSEL_API Array logcdf(const Array& x, const Array& a, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The survival function.
TESSEL_API Array sf(const Array& x, const Array& a, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The log of the survival function.
TESSEL_API Array logsf(const Array& x, const Array& a, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
}  // namespace gamma

/// jax.scipy.stats.chi2: the chi-squared distribution with df degrees of freedom.
namespace chi2 {
/// The log density.
TESSEL_API Array logpdf(const Array& x, const Array& df, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The density.
TESSEL_API Array pdf(const Array& x, const Array& df, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The cumulative distribution (gammainc(df / 2, x / 2)).
TESSEL_API Array cdf(const Array& x, const Array& df, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The log of the CDF.
TESSEL_API Array logcdf(const Array& x, const Array& df, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The survival function.
TESSEL_API Array sf(const Array& x, const Array& df, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The log of the survival function.
TESSEL_API Array logsf(const Array& x, const Array& df, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
}  // namespace chi2

/// jax.scipy.stats.t: Student's t distribution with df degrees of freedom.
namespace t {
/// The log density.
TESSEL_API Array logpdf(const Array& x, const Array& df, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The density.
TESSEL_API Array pdf(const Array& x, const Array& df, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
}  // namespace t

/// jax.scipy.stats.pareto: the Pareto distribution with shape b.
namespace pareto {
/// The log density.
TESSEL_API Array logpdf(const Array& x, const Array& b, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The density.
TESSEL_API Array pdf(const Array& x, const Array& b, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The cumulative distribution (1 - x^-b).
TESSEL_API Array cdf(const Array& x, const Array& b, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The log of the CDF.
TESSEL_API Array logcdf(const Array& x, const Array& b, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The survival function.
TESSEL_API Array sf(const Array& x, const Array& b, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The log of the survival function.
TESSEL_API Array logsf(const Array& x, const Array& b, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
/// The quantile function.
TESSEL_API Array ppf(const Array& q, const Array& b, const Array& loc = Array(0.0), const Array& scale = Array(1.0));
}  // namespace pareto

/// jax.scipy.stats.gennorm: the generalized normal distribution with shape beta.
namespace gennorm {
/// The log density.
TESSEL_API Array logpdf(const Array& x, const Array& beta);
/// The density.
TESSEL_API Array pdf(const Array& x, const Array& beta);
/// The cumulative distribution.
TESSEL_API Array cdf(const Array& x, const Array& beta);
}  // namespace gennorm

/// jax.scipy.stats.poisson: the Poisson distribution with mean mu.
namespace poisson {
/// The log probability mass (-inf off the non-negative integers).
TESSEL_API Array logpmf(const Array& k, const Array& mu, const Array& loc = Array(0.0));
/// The probability mass.
TESSEL_API Array pmf(const Array& k, const Array& mu, const Array& loc = Array(0.0));
/// The cumulative distribution gammaincc(floor(k - loc + 1), mu).
TESSEL_API Array cdf(const Array& k, const Array& mu, const Array& loc = Array(0.0));
/// The entropy: the sum of -p log p over the first 35 (mu < 10) or 250 (mu < 100) values,
/// the asymptotic 0.5 log(2 pi e mu) - 1 / (12 mu) beyond, 0 at mu = 0; broadcast with loc.
TESSEL_API Array entropy(const Array& mu, const Array& loc = Array(0.0));
}  // namespace poisson

/// jax.scipy.stats.bernoulli: the Bernoulli distribution with success probability p.
namespace bernoulli {
/// The log probability mass.
TESSEL_API Array logpmf(const Array& k, const Array& p, const Array& loc = Array(0.0));
/// The probability mass.
TESSEL_API Array pmf(const Array& k, const Array& p, const Array& loc = Array(0.0));
/// The cumulative distribution (NaN for p outside [0, 1]).
TESSEL_API Array cdf(const Array& k, const Array& p);
/// The quantile function.
TESSEL_API Array ppf(const Array& q, const Array& p);
}  // namespace bernoulli

/// jax.scipy.stats.geom: the geometric distribution (trials until the first success, from 1).
namespace geom {
/// The log probability mass.
TESSEL_API Array logpmf(const Array& k, const Array& p, const Array& loc = Array(0.0));
/// The probability mass.
TESSEL_API Array pmf(const Array& k, const Array& p, const Array& loc = Array(0.0));
}  // namespace geom

/// jax.scipy.stats.binom: the binomial distribution of n trials with success probability p.
namespace binom {
/// The log probability mass.
TESSEL_API Array logpmf(const Array& k, const Array& n, const Array& p, const Array& loc = Array(0.0));
/// The probability mass.
TESSEL_API Array pmf(const Array& k, const Array& n, const Array& p, const Array& loc = Array(0.0));
}  // namespace binom

/// jax.scipy.stats.nbinom: the negative binomial distribution (failures before the n-th success).
namespace nbinom {
/// The log probability mass.
TESSEL_API Array logpmf(const Array& k, const Array& n, const Array& p, const Array& loc = Array(0.0));
/// The probability mass.
TESSEL_API Array pmf(const Array& k, const Array& n, const Array& p, const Array& loc = Array(0.0));
}  // namespace nbinom

/// jax.scipy.stats.betabinom: the beta-binomial distribution.
namespace betabinom {
/// The log probability mass.
TESSEL_API Array logpmf(const Array& k, const Array& n, const Array& a, const Array& b, const Array& loc = Array(0.0));
/// The probability mass.
TESSEL_API Array pmf(const Array& k, const Array& n, const Array& a, const Array& b, const Array& loc = Array(0.0));
}  // namespace betabinom
/// jax.scipy.stats.multivariate_normal: the normal distribution of mean `mean` (..., n) and
/// covariance `cov` (..., n, n), through its Cholesky factor; a scalar mean (with scalar cov)
/// is the univariate case and a scalar cov with a vector mean is cov * identity.
namespace multivariate_normal {
/// The log density over the last axis of x.
TESSEL_API Array logpdf(const Array& x, const Array& mean, const Array& cov);
/// The density.
TESSEL_API Array pdf(const Array& x, const Array& mean, const Array& cov);
}  // namespace multivariate_normal

/// jax.scipy.stats.dirichlet: the Dirichlet distribution with concentration alpha (k): x is
/// (k, ...) or (k - 1, ...) (the last component is then 1 - sum); -inf off the simplex.
namespace dirichlet {
/// The log density.
TESSEL_API Array logpdf(const Array& x, const Array& alpha);
/// The density.
TESSEL_API Array pdf(const Array& x, const Array& alpha);
}  // namespace dirichlet

/// jax.scipy.stats.multinomial: counts x (..., k) of n integer trials with probabilities p (k).
namespace multinomial {
/// The log probability mass (-inf where the counts do not sum to n); x and n must be integers.
TESSEL_API Array logpmf(const Array& x, const Array& n, const Array& p);
/// The probability mass.
TESSEL_API Array pmf(const Array& x, const Array& n, const Array& p);
}  // namespace multinomial

/// jax.scipy.stats.truncnorm: the normal distribution N(loc, scale^2) truncated to
/// [loc + a scale, loc + b scale] (NaN where a >= b).
namespace truncnorm {
/// The log density (-inf outside [a, b] after standardizing).
TESSEL_API Array logpdf(const Array& x, const Array& a, const Array& b, const Array& loc = Array(0.0),
                        const Array& scale = Array(1.0));
/// The density.
TESSEL_API Array pdf(const Array& x, const Array& a, const Array& b, const Array& loc = Array(0.0),
                     const Array& scale = Array(1.0));
/// The log of the CDF, from the log Gaussian masses of [a, x] and [a, b] (log1p(-sf) near 1).
TESSEL_API Array logcdf(const Array& x, const Array& a, const Array& b, const Array& loc = Array(0.0),
                        const Array& scale = Array(1.0));
/// The cumulative distribution.
TESSEL_API Array cdf(const Array& x, const Array& a, const Array& b, const Array& loc = Array(0.0),
                     const Array& scale = Array(1.0));
/// The log of the survival function (logcdf of the mirrored distribution).
TESSEL_API Array logsf(const Array& x, const Array& a, const Array& b, const Array& loc = Array(0.0),
                       const Array& scale = Array(1.0));
/// The survival function.
TESSEL_API Array sf(const Array& x, const Array& a, const Array& b, const Array& loc = Array(0.0),
                    const Array& scale = Array(1.0));
}  // namespace truncnorm

/// jax.scipy.stats.vonmises: the von Mises distribution on the circle with concentration kappa.
namespace vonmises {
/// The log density kappa (cos x - 1) - log(2 pi i0e(kappa)) (NaN for kappa <= 0).
TESSEL_API Array logpdf(const Array& x, const Array& kappa);
/// The density.
TESSEL_API Array pdf(const Array& x, const Array& kappa);
}  // namespace vonmises

/// jax.scipy.stats.wrapcauchy: the wrapped Cauchy distribution on [0, 2 pi] with shape c.
namespace wrapcauchy {
/// The log density (-inf outside [0, 2 pi], NaN for c outside (0, 1)).
TESSEL_API Array logpdf(const Array& x, const Array& c);
/// The density.
TESSEL_API Array pdf(const Array& x, const Array& c);
}  // namespace wrapcauchy

}  // namespace tessel::scipy::stats
