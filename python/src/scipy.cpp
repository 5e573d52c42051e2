// tessel.scipy.special and tessel.scipy.stats: the C++ functions of tessel/scipy_special.h
// and tessel/scipy_stats.h with jax.scipy's signatures. Functions of arrays only are bound
// from tables (one row per name); each distribution of scipy.stats is a submodule, as in JAX.
#include <initializer_list>
#include <string>
#include <string_view>

#include "common.h"
#include "tessel/scipy_special.h"
#include "tessel/scipy_stats.h"

namespace tessel::python {
namespace {

namespace sp = tessel::scipy::special;
namespace st = tessel::scipy::stats;

using Fn1 = Array (*)(const Array&);
using Fn2 = Array (*)(const Array&, const Array&);
using Fn3 = Array (*)(const Array&, const Array&, const Array&);
using Fn4 = Array (*)(const Array&, const Array&, const Array&, const Array&);
using Fn5 = Array (*)(const Array&, const Array&, const Array&, const Array&, const Array&);

const std::pair<const char*, Fn1> kSpecial1[] = {
    {"gammaln", &sp::gammaln}, {"loggamma", &sp::loggamma}, {"gammasgn", &sp::gammasgn}, {"gamma", &sp::gamma},
    {"digamma", &sp::digamma}, {"psi", &sp::digamma}, {"erf", &sp::erf}, {"erfc", &sp::erfc},
    {"erfinv", &sp::erfinv}, {"erfcx", &sp::erfcx}, {"ndtr", &sp::ndtr}, {"ndtri", &sp::ndtri},
    {"expit", &sp::expit}, {"logit", &sp::logit}, {"entr", &sp::entr}, {"i0", &sp::i0}, {"i0e", &sp::i0e},
    {"i1", &sp::i1}, {"i1e", &sp::i1e}, {"spence", &sp::spence}, {"expi", &sp::expi}, {"exp1", &sp::exp1},
    {"dawsn", &sp::dawsn}, {"wofz", &sp::wofz},
};
const std::pair<const char*, Fn2> kSpecial2[] = {
    {"polygamma", &sp::polygamma}, {"betaln", &sp::betaln}, {"beta", &sp::beta}, {"gammainc", &sp::gammainc},
    {"gammaincc", &sp::gammaincc}, {"poch", &sp::poch}, {"zeta", &sp::zeta}, {"xlogy", &sp::xlogy},
    {"xlog1py", &sp::xlog1py}, {"rel_entr", &sp::rel_entr}, {"kl_div", &sp::kl_div}, {"boxcox", &sp::boxcox},
    {"boxcox1p", &sp::boxcox1p}, {"expn", &sp::expn}, {"owens_t", &sp::owens_t},
};
const std::pair<const char*, Fn3> kSpecial3[] = {{"betainc", &sp::betainc}, {"hyp1f1", &sp::hyp1f1}};

template <class Fn, size_t N> void def_table(nb::module_& m, const std::pair<const char*, Fn> (&table)[N]) {
  for (auto [name, fn] : table) def_arrays(m, name, fn);
}

void bind_special(nb::module_& m) {
  def_table(m, kSpecial1);
  def_table(m, kSpecial2);
  def_table(m, kSpecial3);
  def_arrays(m, "hyp2f1", &sp::hyp2f1, nb::arg("a"), nb::arg("b"), nb::arg("c"), nb::arg("x"));
  m.def("multigammaln", [](nb::handle a, int64_t d) { return sp::multigammaln(to_array(a), d); }, nb::arg("a"),
        nb::arg("d"));
  m.def("factorial", [](nb::handle n, bool exact) {
    if (exact) throw ValueError("factorial: exact=True is not supported (as in JAX); pass exact=False");
    return sp::factorial(to_array(n));
  }, nb::arg("n"), nb::arg("exact") = false);
  m.def("comb", [](nb::handle n, nb::handle k, bool exact, bool repetition) {
    if (exact) throw ValueError("comb: exact=True is not supported (as in JAX); pass exact=False");
    auto [a, b] = to_arrays_like(n, k);
    return sp::comb(a, b, repetition);
  }, nb::arg("N"), nb::arg("k"), nb::arg("exact") = false, nb::arg("repetition") = false);
  m.def("bernoulli", [](int64_t n) { return sp::bernoulli(n); }, nb::arg("n"));
  m.def("log_ndtr", [](nb::handle x, int series_order) { return sp::log_ndtr(to_array(x), series_order); },
        nb::arg("x"), nb::arg("series_order") = 3);
  m.def("logsumexp", [](nb::handle a, nb::handle axis, nb::handle b, bool keepdims) {
    std::optional<Array> weights;
    Array x = to_array(a);
    if (!b.is_none()) weights = to_array_like(b, x);
    return sp::logsumexp(x, to_axes(axis).value_or(Axes{}), keepdims, weights);
  }, nb::arg("a"), nb::arg("axis").none() = nb::none(), nb::arg("b").none() = nb::none(),
     nb::arg("keepdims") = false);
  m.def("softmax", [](nb::handle x, nb::handle axis) { return sp::softmax(to_array(x), *to_axes(axis)); },
        nb::arg("x"), nb::arg("axis") = -1);
  m.def("log_softmax", [](nb::handle x, nb::handle axis) { return sp::log_softmax(to_array(x), *to_axes(axis)); },
        nb::arg("x"), nb::arg("axis") = -1);
  m.def("sici", [](nb::handle x) {
    auto [si, ci] = sp::sici(to_array(x));
    return nb::make_tuple(si, ci);
  }, nb::arg("x"));
  m.def("fresnel", [](nb::handle x) {
    auto [s, c] = sp::fresnel(to_array(x));
    return nb::make_tuple(s, c);
  }, nb::arg("x"));
  m.def("bessel_jn", [](nb::handle z, int64_t v, int64_t n_iter) { return sp::bessel_jn(to_array(z), v, n_iter); },
        nb::arg("z"), nb::arg("v") = 0, nb::arg("n_iter") = 50);
  m.def("sph_harm_y", [](nb::handle n, nb::handle mm, nb::handle theta, nb::handle phi, int64_t diff_n,
                         std::optional<int64_t> n_max) {
    if (diff_n != 0) throw ValueError("sph_harm_y: diff_n=" + std::to_string(diff_n) + " is not supported; pass 0");
    auto [t, p] = to_arrays_like(theta, phi);
    return sp::sph_harm_y(to_array(n), to_array(mm), t, p, n_max);
  }, nb::arg("n"), nb::arg("m"), nb::arg("theta"), nb::arg("phi"), nb::arg("diff_n") = 0,
     nb::arg("n_max").none() = nb::none());
}

/// The first argument's name: scipy calls it q for quantile functions.
const char* first_arg(const char* fn, const char* name) {
  std::string_view f(fn);
  return f == "ppf" || f == "isf" ? "q" : name;
}

/// One distribution's submodule of functions f(x, <shape>..., loc=0, scale=1) (or without
/// loc/scale when `loc_scale` is false; discrete ones have loc only).
/// The submodule `name` of `parent`, made on first use.
nb::module_ submodule(nb::module_& parent, const char* name) {
  if (nb::hasattr(parent, name)) return nb::borrow<nb::module_>(parent.attr(name));
  return parent.def_submodule(name);
}

template <class Fn, class... Extra>
void def_dist(nb::module_& stats, const char* dist, std::initializer_list<std::pair<const char*, Fn>> fns,
              const char* first, const Extra&... extra) {
  nb::module_ d = submodule(stats, dist);
  for (auto [name, fn] : fns) def_arrays(d, name, fn, nb::arg(first_arg(name, first)), extra...);
}

void bind_stats(nb::module_& m) {
  auto loc = nb::arg("loc") = 0.0;
  auto scale = nb::arg("scale") = 1.0;
  def_dist<Fn3>(m, "norm", {{"logpdf", &st::norm::logpdf}, {"pdf", &st::norm::pdf}, {"cdf", &st::norm::cdf},
                            {"logcdf", &st::norm::logcdf}, {"sf", &st::norm::sf}, {"logsf", &st::norm::logsf},
                            {"ppf", &st::norm::ppf}, {"isf", &st::norm::isf}}, "x", loc, scale);
  def_dist<Fn3>(m, "uniform", {{"logpdf", &st::uniform::logpdf}, {"pdf", &st::uniform::pdf},
                               {"cdf", &st::uniform::cdf}, {"ppf", &st::uniform::ppf}}, "x", loc, scale);
  def_dist<Fn3>(m, "expon", {{"logpdf", &st::expon::logpdf}, {"pdf", &st::expon::pdf}, {"cdf", &st::expon::cdf},
                             {"logcdf", &st::expon::logcdf}, {"sf", &st::expon::sf}, {"logsf", &st::expon::logsf},
                             {"ppf", &st::expon::ppf}}, "x", loc, scale);
  def_dist<Fn3>(m, "laplace", {{"logpdf", &st::laplace::logpdf}, {"pdf", &st::laplace::pdf},
                               {"cdf", &st::laplace::cdf}}, "x", loc, scale);
  def_dist<Fn3>(m, "logistic", {{"logpdf", &st::logistic::logpdf}, {"pdf", &st::logistic::pdf},
                                {"cdf", &st::logistic::cdf}, {"sf", &st::logistic::sf},
                                {"ppf", &st::logistic::ppf}, {"isf", &st::logistic::isf}}, "x", loc, scale);
  def_dist<Fn3>(m, "cauchy", {{"logpdf", &st::cauchy::logpdf}, {"pdf", &st::cauchy::pdf},
                              {"cdf", &st::cauchy::cdf}, {"logcdf", &st::cauchy::logcdf}, {"sf", &st::cauchy::sf},
                              {"logsf", &st::cauchy::logsf}, {"ppf", &st::cauchy::ppf}, {"isf", &st::cauchy::isf}},
                "x", loc, scale);
  def_dist<Fn3>(m, "gumbel_r", {{"logpdf", &st::gumbel_r::logpdf}, {"pdf", &st::gumbel_r::pdf},
                                {"cdf", &st::gumbel_r::cdf}, {"logcdf", &st::gumbel_r::logcdf},
                                {"sf", &st::gumbel_r::sf}, {"logsf", &st::gumbel_r::logsf},
                                {"ppf", &st::gumbel_r::ppf}}, "x", loc, scale);
  def_dist<Fn3>(m, "gumbel_l", {{"logpdf", &st::gumbel_l::logpdf}, {"pdf", &st::gumbel_l::pdf},
                                {"cdf", &st::gumbel_l::cdf}, {"logcdf", &st::gumbel_l::logcdf},
                                {"sf", &st::gumbel_l::sf}, {"logsf", &st::gumbel_l::logsf},
                                {"ppf", &st::gumbel_l::ppf}}, "x", loc, scale);
  def_dist<Fn4>(m, "gamma", {{"logpdf", &st::gamma::logpdf}, {"pdf", &st::gamma::pdf}, {"cdf", &st::gamma::cdf},
                             {"logcdf", &st::gamma::logcdf}, {"sf", &st::gamma::sf}, {"logsf", &st::gamma::logsf}},
                "x", nb::arg("a"), loc, scale);
  def_dist<Fn4>(m, "chi2", {{"logpdf", &st::chi2::logpdf}, {"pdf", &st::chi2::pdf}, {"cdf", &st::chi2::cdf},
                            {"logcdf", &st::chi2::logcdf}, {"sf", &st::chi2::sf}, {"logsf", &st::chi2::logsf}},
                "x", nb::arg("df"), loc, scale);
  def_dist<Fn4>(m, "t", {{"logpdf", &st::t::logpdf}, {"pdf", &st::t::pdf}}, "x", nb::arg("df"), loc, scale);
  def_dist<Fn4>(m, "pareto", {{"logpdf", &st::pareto::logpdf}, {"pdf", &st::pareto::pdf},
                              {"cdf", &st::pareto::cdf}, {"logcdf", &st::pareto::logcdf}, {"sf", &st::pareto::sf},
                              {"logsf", &st::pareto::logsf}, {"ppf", &st::pareto::ppf}}, "x", nb::arg("b"), loc, scale);
  def_dist<Fn5>(m, "beta", {{"logpdf", &st::beta::logpdf}, {"pdf", &st::beta::pdf}, {"cdf", &st::beta::cdf},
                            {"logcdf", &st::beta::logcdf}, {"sf", &st::beta::sf}, {"logsf", &st::beta::logsf}},
                "x", nb::arg("a"), nb::arg("b"), loc, scale);
  def_dist<Fn5>(m, "truncnorm", {{"logpdf", &st::truncnorm::logpdf}, {"pdf", &st::truncnorm::pdf},
                                 {"logcdf", &st::truncnorm::logcdf}, {"cdf", &st::truncnorm::cdf},
                                 {"logsf", &st::truncnorm::logsf}, {"sf", &st::truncnorm::sf}},
                "x", nb::arg("a"), nb::arg("b"), loc, scale);
  def_dist<Fn2>(m, "gennorm", {{"logpdf", &st::gennorm::logpdf}, {"pdf", &st::gennorm::pdf},
                               {"cdf", &st::gennorm::cdf}}, "x", nb::arg("beta"));
  def_dist<Fn2>(m, "vonmises", {{"logpdf", &st::vonmises::logpdf}, {"pdf", &st::vonmises::pdf}}, "x",
                nb::arg("kappa"));
  def_dist<Fn2>(m, "wrapcauchy", {{"logpdf", &st::wrapcauchy::logpdf}, {"pdf", &st::wrapcauchy::pdf}}, "x",
                nb::arg("c"));
  def_dist<Fn2>(m, "dirichlet", {{"logpdf", &st::dirichlet::logpdf}, {"pdf", &st::dirichlet::pdf}}, "x",
                nb::arg("alpha"));
  def_dist<Fn3>(m, "multivariate_normal", {{"logpdf", &st::multivariate_normal::logpdf},
                                           {"pdf", &st::multivariate_normal::pdf}}, "x", nb::arg("mean"),
                nb::arg("cov"));
  def_dist<Fn3>(m, "multinomial", {{"logpmf", &st::multinomial::logpmf}, {"pmf", &st::multinomial::pmf}}, "x",
                nb::arg("n"), nb::arg("p"));
  def_dist<Fn3>(m, "poisson", {{"logpmf", &st::poisson::logpmf}, {"pmf", &st::poisson::pmf},
                               {"cdf", &st::poisson::cdf}}, "k", nb::arg("mu"), loc);
  nb::module_ poisson = submodule(m, "poisson");
  def_arrays(poisson, "entropy", &st::poisson::entropy, nb::arg("mu"), loc);
  def_dist<Fn3>(m, "bernoulli", {{"logpmf", &st::bernoulli::logpmf}, {"pmf", &st::bernoulli::pmf}}, "k",
                nb::arg("p"), loc);
  def_dist<Fn2>(m, "bernoulli", {{"cdf", &st::bernoulli::cdf}, {"ppf", &st::bernoulli::ppf}}, "k", nb::arg("p"));
  def_dist<Fn3>(m, "geom", {{"logpmf", &st::geom::logpmf}, {"pmf", &st::geom::pmf}}, "k", nb::arg("p"), loc);
  def_dist<Fn4>(m, "binom", {{"logpmf", &st::binom::logpmf}, {"pmf", &st::binom::pmf}}, "k", nb::arg("n"),
                nb::arg("p"), loc);
  def_dist<Fn4>(m, "nbinom", {{"logpmf", &st::nbinom::logpmf}, {"pmf", &st::nbinom::pmf}}, "k", nb::arg("n"),
                nb::arg("p"), loc);
  def_dist<Fn5>(m, "betabinom", {{"logpmf", &st::betabinom::logpmf}, {"pmf", &st::betabinom::pmf}}, "k",
                nb::arg("n"), nb::arg("a"), nb::arg("b"), loc);

  m.def("sem", [](nb::handle a, std::optional<int64_t> axis, int64_t ddof, const std::string& nan_policy,
                  bool keepdims) { return st::sem(to_array(a), axis, ddof, nan_policy, keepdims); },
        nb::arg("a"), nb::arg("axis").none() = 0, nb::arg("ddof") = 1, nb::arg("nan_policy") = "propagate",
        nb::arg("keepdims") = false);
  m.def("mode", [](nb::handle a, std::optional<int64_t> axis, const std::string& nan_policy, bool keepdims) {
    st::ModeResult r = st::mode(to_array(a), axis, nan_policy, keepdims);
    return nb::make_tuple(r.mode, r.count);
  }, nb::arg("a"), nb::arg("axis").none() = 0, nb::arg("nan_policy") = "propagate", nb::arg("keepdims") = false);
  m.def("rankdata", [](nb::handle a, const std::string& method, std::optional<int64_t> axis,
                       const std::string& nan_policy) { return st::rankdata(to_array(a), method, axis, nan_policy); },
        nb::arg("a"), nb::arg("method") = "average", nb::arg("axis").none() = nb::none(),
        nb::arg("nan_policy") = "propagate");
}

}  // namespace

void bind_scipy(nb::module_& m) {
  nb::module_ special = m.def_submodule("scipy_special_functions", "C++ functions behind tessel.scipy.special");
  bind_special(special);
  nb::module_ stats = m.def_submodule("scipy_stats_functions", "C++ functions behind tessel.scipy.stats");
  bind_stats(stats);
}

}  // namespace tessel::python
