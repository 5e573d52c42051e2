// tessel's side of tests/parity/cases_special.py (include/tessel/special.h,
// include/tessel/scipy_special.h, jnp.i0 and jnp.kaiser).
#include "parity/parity.h"
#include "tessel/numpy.h"
#include "tessel/scipy_special.h"
#include "tessel/special.h"

namespace ts = tessel;
namespace sp = tessel::scipy::special;
using namespace tessel::parity;

namespace {
/// A static float parameter as a rank-0 array of `like`'s dtype.
Array scalar_like(double v, const Array& like) { return ts::full({}, Array(v), like.dtype()); }
}  // namespace

TESSEL_PARITY_CASES(special) {
  known_difference("scipy.special.betaln",
                   "JAX's betaln (jax/_src/third_party/scipy/betaln.py) is 2e-8 away from SciPy's on these points; "
                   "tessel's gammaln(a) + gammaln(b) - gammaln(a + b) agrees with SciPy to 1e-15");
  known_difference("scipy.special.beta", "exp(betaln): see scipy.special.betaln");
  known_difference("scipy.special.expi",
                   "JAX gives NaN at +-0 and +-inf; tessel gives SciPy's -inf, -inf, inf and 0 there");
  known_difference("scipy.special.spence",
                   "JAX's vjp is NaN above x = 1.5 (its piecewise branches take log(1 - x) of the other "
                   "branch's points); tessel's derivative is finite and matches finite differences");
  reg("lgamma", unary(ts::lgamma));
  reg("digamma", unary(ts::digamma));
  reg("bessel_i0e", unary(ts::bessel_i0e));
  reg("bessel_i1e", unary(ts::bessel_i1e));
  reg("igamma", binary(ts::igamma));
  reg("igammac", binary(ts::igammac));
  reg("igamma_grad_a", binary(ts::igamma_grad_a));
  reg("random_gamma_grad", binary(ts::random_gamma_grad));
  reg("zeta", binary(ts::zeta));
  // Three inputs, or x alone with a and b as parameters (JAX differentiates in x only).
  reg("betainc", [](const In& x, const Params& p) {
    if (x.size() == 3) return out(ts::betainc(x[0], x[1], x[2]));
    return out(ts::betainc(scalar_like(p.f("a"), x[0]), scalar_like(p.f("b"), x[0]), x[0]));
  });
  reg("polygamma", [](const In& x, const Params& p) {
    if (x.size() == 2) return out(ts::polygamma(x[0], x[1]));
    return out(ts::polygamma(scalar_like(double(p.i("n")), x[0]), x[0]));
  });
  for (auto [name, fn] : std::initializer_list<std::pair<const char*, Array (*)(const Array&)>>{
           {"scipy.special.gammaln", sp::gammaln}, {"scipy.special.loggamma", sp::loggamma},
           {"scipy.special.gammasgn", sp::gammasgn}, {"scipy.special.gamma", sp::gamma},
           {"scipy.special.digamma", sp::digamma}, {"scipy.special.erf", sp::erf},
           {"scipy.special.erfc", sp::erfc}, {"scipy.special.erfinv", sp::erfinv},
           {"scipy.special.erfcx", sp::erfcx}, {"scipy.special.ndtr", sp::ndtr},
           {"scipy.special.ndtri", sp::ndtri}, {"scipy.special.expit", sp::expit},
           {"scipy.special.logit", sp::logit}, {"scipy.special.entr", sp::entr},
           {"scipy.special.i0", sp::i0}, {"scipy.special.i0e", sp::i0e},
           {"scipy.special.i1", sp::i1}, {"scipy.special.i1e", sp::i1e},
           {"scipy.special.factorial", sp::factorial}, {"scipy.special.spence", sp::spence},
           {"scipy.special.expi", sp::expi}, {"scipy.special.exp1", sp::exp1}, {"i0", ts::i0}})
    reg(name, unary(fn));
  reg("scipy.special.log_ndtr", [](const In& x, const Params&) { return out(sp::log_ndtr(x[0])); });
  for (auto [name, fn] : std::initializer_list<std::pair<const char*, Array (*)(const Array&, const Array&)>>{
           {"scipy.special.betaln", sp::betaln}, {"scipy.special.beta", sp::beta},
           {"scipy.special.gammainc", sp::gammainc}, {"scipy.special.gammaincc", sp::gammaincc},
           {"scipy.special.xlogy", sp::xlogy}, {"scipy.special.xlog1py", sp::xlog1py},
           {"scipy.special.rel_entr", sp::rel_entr}, {"scipy.special.kl_div", sp::kl_div},
           {"scipy.special.boxcox", sp::boxcox}, {"scipy.special.boxcox1p", sp::boxcox1p},
           {"scipy.special.poch", sp::poch}, {"scipy.special.zeta", sp::zeta},
           {"scipy.special.polygamma", sp::polygamma}, {"scipy.special.expn", sp::expn}})
    reg(name, binary(fn));
  reg("scipy.special.comb", [](const In& x, const Params&) { return out(sp::comb(x[0], x[1])); });
  reg("scipy.special.betainc", [](const In& x, const Params&) { return out(sp::betainc(x[0], x[1], x[2])); });
  reg("scipy.special.multigammaln",
      [](const In& x, const Params& p) { return out(sp::multigammaln(x[0], p.i("d"))); });
  reg("scipy.special.logsumexp",
      [](const In& x, const Params& p) { return out(sp::logsumexp(x[0], p.ints("axis"))); });
  reg("scipy.special.softmax", [](const In& x, const Params& p) { return out(sp::softmax(x[0], p.ints("axis"))); });
  reg("scipy.special.log_softmax",
      [](const In& x, const Params& p) { return out(sp::log_softmax(x[0], p.ints("axis"))); });
  reg("scipy.special.bernoulli", [](const In&, const Params& p) { return out(sp::bernoulli(p.i("n"))); });
  reg("kaiser", [](const In&, const Params& p) { return out(ts::kaiser(p.i("m"), p.f("beta"))); });
}
