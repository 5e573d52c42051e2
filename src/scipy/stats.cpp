// jax.scipy.stats over tessel's primitives and ts::scipy::special (include/tessel/scipy_stats.h).
// Each function follows JAX's formula (jax/_src/scipy/stats/<distribution>.py), edge values
// included: -inf off the support for log densities, NaN for invalid parameters where JAX
// gives it.
#include "tessel/scipy_stats.h"

#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "scipy/special_util.h"
#include "tessel/error.h"
#include "tessel/linalg.h"
#include "tessel/nn.h"
#include "tessel/numpy.h"
#include "tessel/ops.h"
#include "tessel/scipy_special.h"
#include "tessel/special.h"

namespace tessel::scipy::stats {
namespace {

namespace sp = tessel::scipy::special;
constexpr double kPi = std::numbers::pi;

/// The arguments promoted together to one real floating dtype (promote_args_inexact).
std::vector<Array> promote(const char* fn, std::vector<Array> xs) {
  return scipy::detail::real_inexact_all(std::string("stats::") + fn, std::move(xs));
}
Array neg_inf_like(const Array& x) { return full_like(x, Scalar(-INFINITY)); }
Array nan_like(const Array& x) { return full_like(x, Scalar(NAN)); }
/// f(-x, -loc, scale): the survival side of a distribution symmetric about loc.
Array mirrored(const char* fn, Array (*f)(const Array&, const Array&, const Array&), const Array& x, const Array& loc,
               const Array& scale) {
  auto v = promote(fn, {x, loc, scale});
  return f(-v[0], -v[1], v[2]);
}

}  // namespace

Array sem(const Array& a0, std::optional<int64_t> axis, int64_t ddof, const std::string& nan_policy, bool keepdims) {
  Array a = scipy::detail::real_inexact("stats::sem", a0);
  Axes axes;
  if (axis) {
    if (*axis < -a.ndim() || *axis >= a.ndim())
      throw ValueError("scipy::stats::sem: axis " + std::to_string(*axis) + " is out of range for an array of shape " +
                       shape_to_string(a.shape()));
    axes = {*axis};
  }
  if (nan_policy == "propagate") {
    const int64_t n = axis ? a.dim(*axis < 0 ? *axis + a.ndim() : *axis) : a.size();
    return tessel::std(a, axes, keepdims, double(ddof)) / Array(std::sqrt(double(n))).astype(a.dtype());
  }
  if (nan_policy == "omit") {
    Array count = sum((!isnan(a)).astype(a.dtype()), axes, keepdims);
    return nanstd(a, axes, keepdims, double(ddof)) / sqrt(count);
  }
  throw ValueError("scipy::stats::sem: nan_policy '" + nan_policy + "' is not supported; use \"propagate\" or \"omit\"");
}

// ---- continuous distributions with loc and scale ----

namespace norm {
Array logpdf(const Array& x0, const Array& loc0, const Array& scale0) {
  auto v = promote("norm::logpdf", {x0, loc0, scale0});
  const Array &x = v[0], &loc = v[1], &scale = v[2];
  Array scale2 = square(scale);
  Array log_normalizer = log(Array(2 * kPi) * scale2);
  Array quadratic = square(x - loc) / scale2;
  return (log_normalizer + quadratic) / Array(-2.0);
}
Array pdf(const Array& x, const Array& loc, const Array& scale) { return exp(logpdf(x, loc, scale)); }
Array cdf(const Array& x0, const Array& loc0, const Array& scale0) {
  auto v = promote("norm::cdf", {x0, loc0, scale0});
  return sp::ndtr((v[0] - v[1]) / v[2]);
}
Array logcdf(const Array& x0, const Array& loc0, const Array& scale0) {
  auto v = promote("norm::logcdf", {x0, loc0, scale0});
  return sp::log_ndtr((v[0] - v[1]) / v[2]);
}
Array sf(const Array& x, const Array& loc, const Array& scale) { return mirrored("norm::sf", cdf, x, loc, scale); }
Array logsf(const Array& x, const Array& loc, const Array& scale) { return mirrored("norm::logsf", logcdf, x, loc, scale); }
Array ppf(const Array& q0, const Array& loc0, const Array& scale0) {
  auto v = promote("norm::ppf", {q0, loc0, scale0});
  return sp::ndtri(v[0]) * v[2] + v[1];
}
Array isf(const Array& q0, const Array& loc0, const Array& scale0) {
  auto v = promote("norm::isf", {q0, loc0, scale0});
  return ppf(Array(1.0) - v[0], v[1], v[2]);
}
}  // namespace norm

namespace uniform {
Array logpdf(const Array& x0, const Array& loc0, const Array& scale0) {
  auto v = promote("uniform::logpdf", {x0, loc0, scale0});
  const Array &x = v[0], &loc = v[1], &scale = v[2];
  Array log_probs = -log(scale);
  Array outside = (x > loc + scale) | (x < loc);
  return where(outside, neg_inf_like(log_probs), broadcast_to(log_probs, broadcast_shapes({x.shape(), log_probs.shape()})));
}
Array pdf(const Array& x, const Array& loc, const Array& scale) { return exp(logpdf(x, loc, scale)); }
Array cdf(const Array& x0, const Array& loc0, const Array& scale0) {
  auto v = promote("uniform::cdf", {x0, loc0, scale0});
  const Array &x = v[0], &loc = v[1], &scale = v[2];
  Array inside = (x - loc) / scale;
  Array below = x < loc, above = x > loc + scale;
  return where(below, zeros_like(inside), where(above, ones_like(inside), where((x >= loc) & (x <= loc + scale), inside, zeros_like(inside))));
}
Array ppf(const Array& q0, const Array& loc0, const Array& scale0) {
  auto v = promote("uniform::ppf", {q0, loc0, scale0});
  const Array &q = v[0], &loc = v[1], &scale = v[2];
  Array value = loc + scale * q;
  return where(isnan(q) | (q < Array(0.0)) | (q > Array(1.0)), nan_like(value), value);
}
}  // namespace uniform

namespace expon {
Array logpdf(const Array& x0, const Array& loc0, const Array& scale0) {
  auto v = promote("expon::logpdf", {x0, loc0, scale0});
  const Array &x = v[0], &loc = v[1], &scale = v[2];
  Array log_probs = -((x - loc) / scale + log(scale));
  return where(x < loc, neg_inf_like(log_probs), log_probs);
}
Array pdf(const Array& x, const Array& loc, const Array& scale) { return exp(logpdf(x, loc, scale)); }
Array cdf(const Array& x0, const Array& loc0, const Array& scale0) {
  auto v = promote("expon::cdf", {x0, loc0, scale0});
  const Array &x = v[0], &loc = v[1], &scale = v[2];
  Array neg_scaled = (loc - x) / scale;
  return where(x < loc, zeros_like(neg_scaled), -expm1(neg_scaled));
}
Array logsf(const Array& x0, const Array& loc0, const Array& scale0) {
  auto v = promote("expon::logsf", {x0, loc0, scale0});
  const Array &x = v[0], &loc = v[1], &scale = v[2];
  Array neg_scaled = (loc - x) / scale;
  return where(x < loc, zeros_like(neg_scaled), neg_scaled);
}
Array sf(const Array& x, const Array& loc, const Array& scale) { return exp(logsf(x, loc, scale)); }
Array logcdf(const Array& x, const Array& loc, const Array& scale) { return log1p(-sf(x, loc, scale)); }
Array ppf(const Array& q0, const Array& loc0, const Array& scale0) {
  auto v = promote("expon::ppf", {q0, loc0, scale0});
  const Array &q = v[0], &loc = v[1], &scale = v[2];
  Array value = loc - scale * log1p(-q);
  return where(isnan(q) | (q < Array(0.0)) | (q > Array(1.0)), nan_like(value), value);
}
}  // namespace expon

namespace laplace {
Array logpdf(const Array& x0, const Array& loc0, const Array& scale0) {
  auto v = promote("laplace::logpdf", {x0, loc0, scale0});
  return -(abs(v[0] - v[1]) / v[2] + log(Array(2.0) * v[2]));
}
Array pdf(const Array& x, const Array& loc, const Array& scale) { return exp(logpdf(x, loc, scale)); }
Array cdf(const Array& x0, const Array& loc0, const Array& scale0) {
  auto v = promote("laplace::cdf", {x0, loc0, scale0});
  Array diff = (v[0] - v[1]) / v[2];
  return where(diff <= Array(0.0), Array(0.5) * exp(diff), Array(1.0) - Array(0.5) * exp(-diff));
}
}  // namespace laplace

namespace logistic {
Array logpdf(const Array& x0, const Array& loc0, const Array& scale0) {
  auto v = promote("logistic::logpdf", {x0, loc0, scale0});
  Array x = (v[0] - v[1]) / v[2];
  Array half = x / Array(2.0);
  return Array(-2.0) * logaddexp(half, -half) - log(v[2]);
}
Array pdf(const Array& x, const Array& loc, const Array& scale) { return exp(logpdf(x, loc, scale)); }
Array cdf(const Array& x0, const Array& loc0, const Array& scale0) {
  auto v = promote("logistic::cdf", {x0, loc0, scale0});
  return sp::expit((v[0] - v[1]) / v[2]);
}
Array sf(const Array& x0, const Array& loc0, const Array& scale0) {
  auto v = promote("logistic::sf", {x0, loc0, scale0});
  return sp::expit(-((v[0] - v[1]) / v[2]));
}
Array ppf(const Array& q0, const Array& loc0, const Array& scale0) {
  auto v = promote("logistic::ppf", {q0, loc0, scale0});
  return sp::logit(v[0]) * v[2] + v[1];
}
Array isf(const Array& q0, const Array& loc0, const Array& scale0) {
  auto v = promote("logistic::isf", {q0, loc0, scale0});
  return -sp::logit(v[0]) * v[2] + v[1];
}
}  // namespace logistic

namespace cauchy {
Array logpdf(const Array& x0, const Array& loc0, const Array& scale0) {
  auto v = promote("cauchy::logpdf", {x0, loc0, scale0});
  Array scaled = (v[0] - v[1]) / v[2];
  return -(log(Array(kPi) * v[2]) + log1p(scaled * scaled));
}
Array pdf(const Array& x, const Array& loc, const Array& scale) { return exp(logpdf(x, loc, scale)); }
Array cdf(const Array& x0, const Array& loc0, const Array& scale0) {
  auto v = promote("cauchy::cdf", {x0, loc0, scale0});
  return Array(0.5) + Array(1.0 / kPi) * arctan((v[0] - v[1]) / v[2]);
}
Array logcdf(const Array& x, const Array& loc, const Array& scale) { return log(cdf(x, loc, scale)); }
Array sf(const Array& x, const Array& loc, const Array& scale) { return mirrored("cauchy::sf", cdf, x, loc, scale); }
Array logsf(const Array& x, const Array& loc, const Array& scale) { return mirrored("cauchy::logsf", logcdf, x, loc, scale); }
Array ppf(const Array& q0, const Array& loc0, const Array& scale0) {
  auto v = promote("cauchy::ppf", {q0, loc0, scale0});
  return tan(Array(kPi) * v[0] - Array(kPi / 2)) * v[2] + v[1];
}
Array isf(const Array& q0, const Array& loc0, const Array& scale0) {
  auto v = promote("cauchy::isf", {q0, loc0, scale0});
  return tan(Array(kPi / 2) - Array(kPi) * v[0]) * v[2] + v[1];
}
}  // namespace cauchy

namespace gumbel_r {
Array logpdf(const Array& x0, const Array& loc0, const Array& scale0) {
  auto v = promote("gumbel_r::logpdf", {x0, loc0, scale0});
  Array z = (v[0] - v[1]) / v[2];
  Array value = sp::xlogy(Array(-1.0), v[2]) + -(z + exp(-z));
  return where(v[2] > Array(0.0), value, nan_like(value));
}
Array pdf(const Array& x, const Array& loc, const Array& scale) { return exp(logpdf(x, loc, scale)); }
Array logcdf(const Array& x0, const Array& loc0, const Array& scale0) {
  auto v = promote("gumbel_r::logcdf", {x0, loc0, scale0});
  Array value = -exp(-((v[0] - v[1]) / v[2]));
  return where(v[2] > Array(0.0), value, nan_like(value));
}
Array cdf(const Array& x, const Array& loc, const Array& scale) { return exp(logcdf(x, loc, scale)); }
Array ppf(const Array& p0, const Array& loc0, const Array& scale0) {
  auto v = promote("gumbel_r::ppf", {p0, loc0, scale0});
  const Array& p = v[0];
  Array value = v[1] - v[2] * log(sp::xlogy(Array(-1.0), p));
  return where((p > Array(0.0)) & (p < Array(1.0)), value, nan_like(value));
}
Array sf(const Array& x0, const Array& loc0, const Array& scale0) {
  auto v = promote("gumbel_r::sf", {x0, loc0, scale0});
  Array value = Array(1.0) - exp(-exp((v[1] - v[0]) / v[2]));
  return where(v[2] > Array(0.0), value, nan_like(value));
}
Array logsf(const Array& x0, const Array& loc0, const Array& scale0) {
  auto v = promote("gumbel_r::logsf", {x0, loc0, scale0});
  Array value = nn::log1mexp(exp((v[1] - v[0]) / v[2]));
  return where(v[2] > Array(0.0), value, nan_like(value));
}
}  // namespace gumbel_r

namespace gumbel_l {
Array logpdf(const Array& x0, const Array& loc0, const Array& scale0) {
  auto v = promote("gumbel_l::logpdf", {x0, loc0, scale0});
  Array z = (v[0] - v[1]) / v[2];
  Array value = sp::xlogy(Array(-1.0), v[2]) + (z - exp(z));
  return where(v[2] > Array(0.0), value, nan_like(value));
}
Array pdf(const Array& x, const Array& loc, const Array& scale) { return exp(logpdf(x, loc, scale)); }
Array logcdf(const Array& x0, const Array& loc0, const Array& scale0) {
  auto v = promote("gumbel_l::logcdf", {x0, loc0, scale0});
  Array value = log(-expm1(-exp((v[0] - v[1]) / v[2])));
  return where(v[2] > Array(0.0), value, nan_like(value));
}
Array cdf(const Array& x, const Array& loc, const Array& scale) { return exp(logcdf(x, loc, scale)); }
Array ppf(const Array& p0, const Array& loc0, const Array& scale0) {
  auto v = promote("gumbel_l::ppf", {p0, loc0, scale0});
  const Array& p = v[0];
  Array value = v[1] + v[2] * log(sp::xlog1py(Array(-1.0), -p));
  return where((p > Array(0.0)) & (p < Array(1.0)), value, nan_like(value));
}
Array logsf(const Array& x0, const Array& loc0, const Array& scale0) {
  auto v = promote("gumbel_l::logsf", {x0, loc0, scale0});
  Array value = -exp((v[0] - v[1]) / v[2]);
  return where(v[2] > Array(0.0), value, nan_like(value));
}
Array sf(const Array& x, const Array& loc, const Array& scale) { return exp(logsf(x, loc, scale)); }
}  // namespace gumbel_l

// ---- continuous distributions with shape parameters ----

namespace beta {
Array logpdf(const Array& x0, const Array& a0, const Array& b0, const Array& loc0, const Array& scale0) {
  auto v = promote("beta::logpdf", {x0, a0, b0, loc0, scale0});
  const Array &x = v[0], &a = v[1], &b = v[2], &loc = v[3], &scale = v[4];
  Array y = (x - loc) / scale;
  Array log_linear = sp::xlogy(a - Array(1.0), y) + sp::xlog1py(b - Array(1.0), -y);
  Array log_probs = -sp::betaln(a, b) + log_linear - log(scale);
  Array result = where((x > loc + scale) | (x < loc), neg_inf_like(log_probs), log_probs);
  return where((a <= Array(0.0)) | (b <= Array(0.0)) | (scale <= Array(0.0)), nan_like(result), result);
}
Array pdf(const Array& x, const Array& a, const Array& b, const Array& loc, const Array& scale) {
  return exp(logpdf(x, a, b, loc, scale));
}
Array cdf(const Array& x0, const Array& a0, const Array& b0, const Array& loc0, const Array& scale0) {
  auto v = promote("beta::cdf", {x0, a0, b0, loc0, scale0});
  return sp::betainc(v[1], v[2], clamp(Array(0.0), (v[0] - v[3]) / v[4], Array(1.0)));
}
Array logcdf(const Array& x, const Array& a, const Array& b, const Array& loc, const Array& scale) {
  return log(cdf(x, a, b, loc, scale));
}
Array sf(const Array& x0, const Array& a0, const Array& b0, const Array& loc0, const Array& scale0) {
  auto v = promote("beta::sf", {x0, a0, b0, loc0, scale0});
  return sp::betainc(v[2], v[1], Array(1.0) - clamp(Array(0.0), (v[0] - v[3]) / v[4], Array(1.0)));
}
Array logsf(const Array& x, const Array& a, const Array& b, const Array& loc, const Array& scale) {
  return log(sf(x, a, b, loc, scale));
}
}  // namespace beta

namespace gamma {
Array logpdf(const Array& x0, const Array& a0, const Array& loc0, const Array& scale0) {
  auto v = promote("gamma::logpdf", {x0, a0, loc0, scale0});
  const Array &x = v[0], &a = v[1], &loc = v[2], &scale = v[3];
  Array ok = x >= loc;
  Array y = where(ok, (x - loc) / scale, ones_like(x));
  Array log_probs = (sp::xlogy(a - Array(1.0), y) - y) - (sp::gammaln(a) + log(scale));
  return where(ok, log_probs, neg_inf_like(log_probs));
}
Array pdf(const Array& x, const Array& a, const Array& loc, const Array& scale) { return exp(logpdf(x, a, loc, scale)); }
Array cdf(const Array& x0, const Array& a0, const Array& loc0, const Array& scale0) {
  auto v = promote("gamma::cdf", {x0, a0, loc0, scale0});
  return sp::gammainc(v[1], clamp(Array(0.0), (v[0] - v[2]) / v[3], Array(INFINITY)));
}
Array logcdf(const Array& x, const Array& a, const Array& loc, const Array& scale) { return log(cdf(x, a, loc, scale)); }
Array sf(const Array& x0, const Array& a0, const Array& loc0, const Array& scale0) {
  auto v = promote("gamma::sf", {x0, a0, loc0, scale0});
  Array y = (v[0] - v[2]) / v[3];
  Array q = sp::gammaincc(v[1], y);
  return where(y < Array(0.0), ones_like(q), q);
}
Array logsf(const Array& x, const Array& a, const Array& loc, const Array& scale) { return log(sf(x, a, loc, scale)); }
}  // namespace gamma

namespace chi2 {
Array logpdf(const Array& x0, const Array& df0, const Array& loc0, const Array& scale0) {
  auto v = promote("chi2::logpdf", {x0, df0, loc0, scale0});
  const Array &x = v[0], &df = v[1], &loc = v[2], &scale = v[3];
  Array y = (x - loc) / scale;
  Array half_df = df / Array(2.0);
  Array kernel = (half_df - Array(1.0)) * log(y) - y / Array(2.0);
  Array normalizer = -(tessel::lgamma(half_df) + Array(std::log(2.0)) * df / Array(2.0));
  Array log_probs = normalizer - log(scale) + kernel;
  return where(x < loc, neg_inf_like(log_probs), log_probs);
}
Array pdf(const Array& x, const Array& df, const Array& loc, const Array& scale) { return exp(logpdf(x, df, loc, scale)); }
Array cdf(const Array& x0, const Array& df0, const Array& loc0, const Array& scale0) {
  auto v = promote("chi2::cdf", {x0, df0, loc0, scale0});
  return sp::gammainc(v[1] / Array(2.0), clamp(Array(0.0), (v[0] - v[2]) / (v[3] * Array(2.0)), Array(INFINITY)));
}
Array logcdf(const Array& x, const Array& df, const Array& loc, const Array& scale) { return log(cdf(x, df, loc, scale)); }
Array sf(const Array& x0, const Array& df0, const Array& loc0, const Array& scale0) {
  auto v = promote("chi2::sf", {x0, df0, loc0, scale0});
  return sp::gammaincc(v[1] / Array(2.0), clamp(Array(0.0), (v[0] - v[2]) / (v[3] * Array(2.0)), Array(INFINITY)));
}
Array logsf(const Array& x, const Array& df, const Array& loc, const Array& scale) { return log(sf(x, df, loc, scale)); }
}  // namespace chi2

namespace t {
Array logpdf(const Array& x0, const Array& df0, const Array& loc0, const Array& scale0) {
  auto v = promote("t::logpdf", {x0, df0, loc0, scale0});
  const Array &x = v[0], &df = v[1], &loc = v[2], &scale = v[3];
  Array scaled = (x - loc) / scale;
  Array half_df = df / Array(2.0);
  Array half_df_plus = half_df + Array(0.5);
  Array normalize = tessel::lgamma(half_df) + log(scale * scale * Array(kPi) * df) / Array(2.0) - tessel::lgamma(half_df_plus);
  return -(normalize + half_df_plus * log1p(scaled * scaled / df));
}
Array pdf(const Array& x, const Array& df, const Array& loc, const Array& scale) { return exp(logpdf(x, df, loc, scale)); }
}  // namespace t

namespace pareto {
Array logpdf(const Array& x0, const Array& b0, const Array& loc0, const Array& scale0) {
  auto v = promote("pareto::logpdf", {x0, b0, loc0, scale0});
  const Array &x = v[0], &b = v[1], &loc = v[2], &scale = v[3];
  Array scaled = (x - loc) / scale;
  Array log_probs = -(log(scale / b) + (b + Array(1.0)) * log(scaled));
  return where(x < loc + scale, neg_inf_like(log_probs), log_probs);
}
Array pdf(const Array& x, const Array& b, const Array& loc, const Array& scale) { return exp(logpdf(x, b, loc, scale)); }
Array cdf(const Array& x0, const Array& b0, const Array& loc0, const Array& scale0) {
  auto v = promote("pareto::cdf", {x0, b0, loc0, scale0});
  Array value = Array(1.0) - pow((v[0] - v[2]) / v[3], -v[1]);
  return where(v[0] < v[2] + v[3], zeros_like(value), value);
}
Array logcdf(const Array& x0, const Array& b0, const Array& loc0, const Array& scale0) {
  auto v = promote("pareto::logcdf", {x0, b0, loc0, scale0});
  Array value = log1p(-pow((v[0] - v[2]) / v[3], -v[1]));
  return where(v[0] < v[2] + v[3], neg_inf_like(value), value);
}
Array logsf(const Array& x0, const Array& b0, const Array& loc0, const Array& scale0) {
  auto v = promote("pareto::logsf", {x0, b0, loc0, scale0});
  Array value = -(v[1] * log((v[0] - v[2]) / v[3]));
  return where(v[0] < v[2] + v[3], zeros_like(value), value);
}
Array sf(const Array& x, const Array& b, const Array& loc, const Array& scale) { return exp(logsf(x, b, loc, scale)); }
Array ppf(const Array& q0, const Array& b0, const Array& loc0, const Array& scale0) {
  auto v = promote("pareto::ppf", {q0, b0, loc0, scale0});
  const Array& q = v[0];
  Array value = v[2] + v[3] * pow(Array(1.0) - q, -(Array(1.0) / v[1]));
  return where(isnan(q) | (q < Array(0.0)) | (q > Array(1.0)), nan_like(value), value);
}
}  // namespace pareto

namespace gennorm {
Array logpdf(const Array& x0, const Array& beta0) {
  auto v = promote("gennorm::logpdf", {x0, beta0});
  return log(Array(0.5) * v[1]) - tessel::lgamma(Array(1.0) / v[1]) - pow(abs(v[0]), v[1]);
}
Array pdf(const Array& x, const Array& beta) { return exp(logpdf(x, beta)); }
Array cdf(const Array& x0, const Array& beta0) {
  auto v = promote("gennorm::cdf", {x0, beta0});
  return Array(0.5) * (Array(1.0) + sign(v[0]) * tessel::igamma(Array(1.0) / v[1], pow(abs(v[0]), v[1])));
}
}  // namespace gennorm

// ---- discrete distributions ----

namespace poisson {
Array logpmf(const Array& k0, const Array& mu0, const Array& loc0) {
  auto v = promote("poisson::logpmf", {k0, mu0, loc0});
  const Array &k = v[0], &mu = v[1];
  Array x = k - v[2];
  Array log_probs = sp::xlogy(x, mu) - sp::gammaln(x + Array(1.0)) - mu;
  return where((x < Array(0.0)) | (round(k) != k), neg_inf_like(log_probs), log_probs);
}
Array pmf(const Array& k, const Array& mu, const Array& loc) { return exp(logpmf(k, mu, loc)); }
Array cdf(const Array& k0, const Array& mu0, const Array& loc0) {
  auto v = promote("poisson::cdf", {k0, mu0, loc0});
  Array x = v[0] - v[2];
  Array p = sp::gammaincc(floor(Array(1.0) + x), v[1]);
  return where(x < Array(0.0), zeros_like(p), p);
}
namespace {
/// The entropy of Poisson(mu) by summing -p log p over k < min(k_max, bound(mu)).
Array entropy_by_sum(const Array& mu, int64_t k_max, const Array& bound) {
  Shape k_shape(size_t(mu.ndim()) + 1, 1);
  k_shape[0] = k_max;
  Array k = reshape(arange(0.0, double(k_max), 1.0, mu.dtype()), k_shape);
  Array probs = pmf(k, expand_dims(mu, {0}), Array(0.0));
  Array masked = where(k < expand_dims(ceil(bound), {0}), probs, zeros_like(probs));
  return sum(sp::entr(masked), {0});
}
}  // namespace
Array entropy(const Array& mu0, const Array& loc0) {
  auto v = promote("poisson::entropy", {mu0, loc0});
  const Array& mu = v[0];
  Array small = entropy_by_sum(mu, 35, mu + Array(20.0));
  Array medium = entropy_by_sum(mu, 250, mu + Array(10.0) * sqrt(mu) + Array(20.0));
  Array large = Array(0.5) * log(Array(2 * kPi * std::numbers::e) * mu) - Array(1.0) / (Array(12.0) * mu);
  Array result = where(mu == Array(0.0), zeros_like(mu),
                       where(mu < Array(10.0), small, where(mu < Array(100.0), medium, large)));
  return broadcast_to(result, broadcast_shapes({mu.shape(), v[1].shape()}));
}
}  // namespace poisson

namespace bernoulli {
Array logpmf(const Array& k0, const Array& p0, const Array& loc0) {
  auto v = promote("bernoulli::logpmf", {k0, p0, loc0});
  const Array& p = v[1];
  Array x = v[0] - v[2];
  Array log_probs = sp::xlogy(x, p) + sp::xlog1py(Array(1.0) - x, -p);
  return where((x < Array(0.0)) | (x > Array(1.0)), neg_inf_like(log_probs), log_probs);
}
Array pmf(const Array& k, const Array& p, const Array& loc) { return exp(logpmf(k, p, loc)); }
Array cdf(const Array& k0, const Array& p0) {
  auto v = promote("bernoulli::cdf", {k0, p0});
  std::vector<Array> b = broadcast_arrays(v);
  const Array &k = b[0], &p = b[1];
  Array invalid = isnan(k) | isnan(p) | (p < Array(0.0)) | (p > Array(1.0));
  Array one = ones_like(k);
  return where(invalid, nan_like(k),
               where(k < Array(0.0), zeros_like(k), where(k < Array(1.0), one - p, where(k >= Array(1.0), one, zeros_like(k)))));
}
Array ppf(const Array& q0, const Array& p0) {
  auto v = promote("bernoulli::ppf", {q0, p0});
  std::vector<Array> b = broadcast_arrays(v);
  const Array &q = b[0], &p = b[1];
  Array invalid = isnan(q) | isnan(p) | (p < Array(0.0)) | (p > Array(1.0)) | (q < Array(0.0)) | (q > Array(1.0));
  return where(invalid, nan_like(q), where(q <= Array(1.0) - p, zeros_like(q), ones_like(q)));
}
}  // namespace bernoulli

namespace geom {
Array logpmf(const Array& k0, const Array& p0, const Array& loc0) {
  auto v = promote("geom::logpmf", {k0, p0, loc0});
  Array x = v[0] - v[2];
  Array log_probs = sp::xlog1py(x - Array(1.0), -v[1]) + log(v[1]);
  return where(x <= Array(0.0), neg_inf_like(log_probs), log_probs);
}
Array pmf(const Array& k, const Array& p, const Array& loc) { return exp(logpmf(k, p, loc)); }
}  // namespace geom

namespace binom {
Array logpmf(const Array& k0, const Array& n0, const Array& p0, const Array& loc0) {
  auto v = promote("binom::logpmf", {k0, n0, p0, loc0});
  const Array &k = v[0], &n = v[1], &p = v[2], &loc = v[3];
  Array y = k - loc;
  Array comb_term = sp::gammaln(n + Array(1.0)) - (sp::gammaln(y + Array(1.0)) + sp::gammaln(n - y + Array(1.0)));
  Array log_linear = sp::xlogy(y, p) + sp::xlog1py(n - y, -p);
  Array log_probs = comb_term + log_linear;
  Array certain = ((y == Array(0.0)) & (n == Array(0.0))) | (log_linear == Array(0.0));
  log_probs = where(certain, zeros_like(log_probs), log_probs);
  return where((k >= loc) & (k < loc + n + Array(1.0)), log_probs, neg_inf_like(log_probs));
}
Array pmf(const Array& k, const Array& n, const Array& p, const Array& loc) { return exp(logpmf(k, n, p, loc)); }
}  // namespace binom

namespace nbinom {
Array logpmf(const Array& k0, const Array& n0, const Array& p0, const Array& loc0) {
  auto v = promote("nbinom::logpmf", {k0, n0, p0, loc0});
  const Array &k = v[0], &n = v[1], &p = v[2], &loc = v[3];
  Array y = k - loc;
  Array comb_term = sp::gammaln(y + n) - sp::gammaln(n) - sp::gammaln(y + Array(1.0));
  Array log_probs = comb_term + (sp::xlogy(n, p) + sp::xlogy(y, Array(1.0) - p));
  return where(k < loc, neg_inf_like(log_probs), log_probs);
}
Array pmf(const Array& k, const Array& n, const Array& p, const Array& loc) { return exp(logpmf(k, n, p, loc)); }
}  // namespace nbinom

namespace betabinom {
Array logpmf(const Array& k0, const Array& n0, const Array& a0, const Array& b0, const Array& loc0) {
  auto v = promote("betabinom::logpmf", {k0, n0, a0, b0, loc0});
  const Array &n = v[1], &a = v[2], &b = v[3], &loc = v[4];
  Array y = floor(v[0]) - loc;
  Array one = Array(1.0), zero = Array(0.0);
  Array combiln = -(log1p(n) + sp::betaln(n - y + one, y + one));
  Array log_probs = combiln + (sp::betaln(y + a, n - y + b) - sp::betaln(a, b));
  log_probs = where((y == zero) & (n == zero), zeros_like(log_probs), log_probs);
  log_probs = where((y < -loc) | (y > n) | (y + a <= zero), neg_inf_like(log_probs), log_probs);
  return where((n < zero) | (a <= zero) | (b <= zero), nan_like(log_probs), log_probs);
}
Array pmf(const Array& k, const Array& n, const Array& a, const Array& b, const Array& loc) {
  return exp(logpmf(k, n, a, b, loc));
}
}  // namespace betabinom

// ---- multivariate distributions ----

namespace multivariate_normal {
Array logpdf(const Array& x0, const Array& mean0, const Array& cov0) {
  std::vector<Array> v = scipy::detail::real_inexact_all("stats::multivariate_normal::logpdf", {x0, mean0, cov0});
  const Array &x = v[0], &mean = v[1], &cov = v[2];
  const double log_2pi = std::log(2 * kPi);
  if (mean.ndim() == 0) return Array(-0.5) * square(x - mean) / cov - Array(0.5) * (Array(log_2pi) + log(cov));
  const int64_t n = mean.shape().back();
  if (cov.ndim() == 0) {
    Array y = x - mean;
    return Array(-0.5) * sum(y * y, {-1}) / cov - Array(double(n) / 2) * (Array(log_2pi) + log(cov));
  }
  if (cov.ndim() < 2 || cov.shape()[cov.ndim() - 1] != n || cov.shape()[cov.ndim() - 2] != n)
    throw ShapeError("scipy::stats::multivariate_normal::logpdf: cov must be (..., " + std::to_string(n) + ", " +
                     std::to_string(n) + ") for a mean of " + std::to_string(n) + " components, got " +
                     shape_to_string(cov.shape()));
  Array L = lax::linalg::cholesky(cov);
  // y = L^-1 (x - mean) over broadcast batch dimensions.
  Array d = x - mean;
  Shape d_batch(d.shape().begin(), d.shape().end() - 1), l_batch(L.shape().begin(), L.shape().end() - 2);
  Shape batch = broadcast_shapes({d_batch, l_batch});
  Shape l_shape = batch, d_shape = batch;
  l_shape.insert(l_shape.end(), {n, n});
  d_shape.insert(d_shape.end(), {n, 1});
  Array y = scipy::linalg::solve_triangular(broadcast_to(L, l_shape),
                                            broadcast_to(expand_dims(d, {-1}), d_shape), 0, /*lower=*/true);
  y = squeeze(y, Axes{-1});
  return Array(-0.5) * sum(y * y, {-1}) - Array(double(n) / 2 * log_2pi) -
         sum(log(diagonal(L, 0, -2, -1)), {-1});
}
Array pdf(const Array& x, const Array& mean, const Array& cov) { return exp(logpdf(x, mean, cov)); }
}  // namespace multivariate_normal

namespace dirichlet {
Array logpdf(const Array& x0, const Array& alpha0) {
  std::vector<Array> v = scipy::detail::real_inexact_all("stats::dirichlet::logpdf", {x0, alpha0});
  Array x = v[0], alpha = v[1];
  if (alpha.ndim() != 1)
    throw ShapeError("scipy::stats::dirichlet::logpdf: alpha must be one-dimensional, got " + shape_to_string(alpha.shape()));
  const int64_t k = alpha.shape()[0];
  if (x.ndim() == 0 || (x.shape()[0] != k && x.shape()[0] != k - 1))
    throw ShapeError("scipy::stats::dirichlet::logpdf: x must have " + std::to_string(k) + " or " +
                     std::to_string(k - 1) + " entries along its first axis for alpha of " + std::to_string(k) +
                     ", got " + shape_to_string(x.shape()));
  if (x.shape()[0] != k) x = concatenate({x, Array(1.0) - sum(x, {0}, true)}, 0);
  Array normalize = sum(sp::gammaln(alpha)) - sp::gammaln(sum(alpha));
  Shape a_shape(size_t(x.ndim()), 1);
  a_shape[0] = k;
  Array a = reshape(alpha, a_shape);
  Array log_probs = sum(sp::xlogy(a - Array(1.0), x), {0}) - normalize;
  Array simplex = all(x > Array(0.0), {0}) & (abs(sum(x, {0}) - Array(1.0)) < Array(1e-6));
  return where(simplex, log_probs, neg_inf_like(log_probs));
}
Array pdf(const Array& x, const Array& alpha) { return exp(logpdf(x, alpha)); }
}  // namespace dirichlet

namespace multinomial {
Array logpmf(const Array& x0, const Array& n0, const Array& p0) {
  if (!is_integer(x0.dtype()) || !is_integer(n0.dtype()))
    throw DTypeError(std::string("scipy::stats::multinomial::logpmf: x and n must be integer arrays, got ") +
                     dtype_name(x0.dtype()) + " and " + dtype_name(n0.dtype()));
  Array p = scipy::detail::real_inexact("stats::multinomial::logpmf", p0);
  Array x = astype(x0, p.dtype()), n = astype(n0, p.dtype());
  Array log_probs = sp::gammaln(n + Array(1.0)) + sum(sp::xlogy(x, p) - sp::gammaln(x + Array(1.0)), {-1});
  // (JAX compares the total of all of x with n.)
  return where(sum(x) == n, log_probs, neg_inf_like(log_probs));
}
Array pmf(const Array& x, const Array& n, const Array& p) { return exp(logpmf(x, n, p)); }
}  // namespace multinomial

namespace truncnorm {
namespace {
/// log(e^x - e^y) for x >= y, as JAX's logsumexp with weights (1, -1) computes it.
Array log_diff(const Array& x, const Array& y) {
  Array m = maximum(x, y);
  Array safe_m = where(isfinite(m), m, zeros_like(m));
  return log(exp(x - safe_m) - exp(y - safe_m)) + safe_m;
}
/// log of the standard normal mass of [a, b], through the tail nearer to 0.
Array log_gauss_mass(const Array& a0, const Array& b0) {
  std::vector<Array> ab = broadcast_arrays({a0, b0});
  const Array &a = ab[0], &b = ab[1];
  Array left = b <= Array(0.0), right = a > Array(0.0);
  Array central = (!left) & (!right);
  Array a_tail = where(right, -b, a), b_tail = where(right, -a, b);
  Array tail = log_diff(sp::log_ndtr(b_tail), sp::log_ndtr(a_tail));
  Array middle = log1p(-sp::ndtr(a) - sp::ndtr(-b));
  return where(central, middle, tail);
}
}  // namespace

Array logpdf(const Array& x0, const Array& a0, const Array& b0, const Array& loc0, const Array& scale0) {
  auto v = promote("truncnorm::logpdf", {x0, a0, b0, loc0, scale0});
  const Array &x = v[0], &a = v[1], &b = v[2], &loc = v[3], &scale = v[4];
  Array val = norm::logpdf(x, loc, scale) - log_gauss_mass(a, b);
  Array xs = (x - loc) / scale;
  val = where((xs < a) | (xs > b), neg_inf_like(val), val);
  return where(a >= b, nan_like(val), val);
}
Array pdf(const Array& x, const Array& a, const Array& b, const Array& loc, const Array& scale) {
  return exp(logpdf(x, a, b, loc, scale));
}
Array logcdf(const Array& x0, const Array& a0, const Array& b0, const Array& loc0, const Array& scale0) {
  auto v = promote("truncnorm::logcdf", {x0, a0, b0, loc0, scale0});
  std::vector<Array> xab = broadcast_arrays({v[0], v[1], v[2]});
  const Array x = (xab[0] - v[3]) / v[4];
  const Array &a = xab[1], &b = xab[2];
  Array lgm_ab = log_gauss_mass(a, b);
  Array lcdf = log_gauss_mass(a, x) - lgm_ab;
  Array lsf = log_gauss_mass(x, b) - lgm_ab;
  Array result = where(x >= b, zeros_like(lcdf),
                 where(x <= a, neg_inf_like(lcdf),
                 where(lcdf > Array(-0.1), log1p(-exp(lsf)), where(x > a, lcdf, zeros_like(lcdf)))));
  return where(a >= b, nan_like(result), result);
}
Array cdf(const Array& x, const Array& a, const Array& b, const Array& loc, const Array& scale) {
  return exp(logcdf(x, a, b, loc, scale));
}
Array logsf(const Array& x0, const Array& a0, const Array& b0, const Array& loc0, const Array& scale0) {
  auto v = promote("truncnorm::logsf", {x0, a0, b0, loc0, scale0});
  return logcdf(-v[0], -v[2], -v[1], -v[3], v[4]);
}
Array sf(const Array& x, const Array& a, const Array& b, const Array& loc, const Array& scale) {
  return exp(logsf(x, a, b, loc, scale));
}
}  // namespace truncnorm

namespace vonmises {
Array logpdf(const Array& x0, const Array& kappa0) {
  auto v = promote("vonmises::logpdf", {x0, kappa0});
  const Array &x = v[0], &kappa = v[1];
  Array value = kappa * (cos(x) - Array(1.0)) - log(Array(2 * kPi) * tessel::bessel_i0e(kappa));
  return where(kappa > Array(0.0), value, nan_like(value));
}
Array pdf(const Array& x, const Array& kappa) { return exp(logpdf(x, kappa)); }
}  // namespace vonmises

namespace wrapcauchy {
Array logpdf(const Array& x0, const Array& c0) {
  auto v = promote("wrapcauchy::logpdf", {x0, c0});
  const Array &x = v[0], &c = v[1];
  Array value = log(Array(1.0) - c * c) - Array(std::log(2 * kPi)) - log(Array(1.0) + c * c - Array(2.0) * c * cos(x));
  Array inside = where((x >= Array(0.0)) & (x <= Array(2 * kPi)), value, neg_inf_like(value));
  return where((c > Array(0.0)) & (c < Array(1.0)), inside, nan_like(inside));
}
Array pdf(const Array& x, const Array& c) { return exp(logpdf(x, c)); }
}  // namespace wrapcauchy

}  // namespace tessel::scipy::stats
