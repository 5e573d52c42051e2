"""tessel.scipy.special and tessel.scipy.stats against Python's math module and closed forms
(and SciPy's values where SciPy is installed), eagerly and under jit, grad and vmap."""

import math

import numpy as np
import pytest

import tessel
import tessel.numpy as tnp
import tessel.scipy.special as sp
import tessel.scipy.stats as stats

X = np.array([0.3, 1.0, 2.5, 7.0])


def close(got, want, rtol=1e-10, atol=1e-12):
    got = np.asarray(got)
    if got.dtype == np.float32:  # Python scalars alone give float32, as in JAX
        rtol, atol = max(rtol, 3e-6), max(atol, 1e-6)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("name, ref", [("gammaln", math.lgamma), ("gamma", math.gamma), ("erf", math.erf),
                                       ("erfc", math.erfc), ("expit", lambda v: 1 / (1 + math.exp(-v))),
                                       ("ndtr", lambda v: 0.5 * math.erfc(-v / math.sqrt(2)))])
def test_special_against_math(name, ref):
    close(getattr(sp, name)(X), [ref(v) for v in X], rtol=1e-12)


def test_special_identities():
    close(sp.ndtri(sp.ndtr(X[:3])), X[:3], rtol=1e-9)  # ndtr(7) is 1 - 1e-12: no digits left to invert
    close(sp.erfinv(sp.erf(np.array([0.1, 0.5, 0.9]))), [0.1, 0.5, 0.9], rtol=1e-9)
    close(sp.betaln(2.0, X), [math.lgamma(2) + math.lgamma(v) - math.lgamma(2 + v) for v in X], rtol=1e-12)
    close(sp.gammainc(1.0, X), 1 - np.exp(-X), rtol=1e-12)  # P(1, x) = 1 - exp(-x)
    close(sp.xlogy(0.0, 0.0), 0.0)
    close(sp.xlogy(2.0, X), 2 * np.log(X))
    close(sp.logsumexp(X), math.log(np.exp(X).sum()))
    close(sp.logsumexp(X, b=np.array([1.0, 2.0, 0.5, 1.0])), math.log((np.exp(X) * [1, 2, 0.5, 1]).sum()))
    close(sp.softmax(X), np.exp(X) / np.exp(X).sum())
    close(sp.factorial(np.array([0.0, 4.0])), [1.0, 24.0])
    close(sp.comb(5.0, 2.0), 10.0, rtol=1e-12)
    close(sp.zeta(2.0, 1.0), math.pi ** 2 / 6, rtol=1e-12)
    si, ci = sp.sici(np.array([1.0]))
    close(si, [0.946083070367183], rtol=1e-12)
    close(sp.bernoulli(4), [1, -1 / 2, 1 / 6, 0, -1 / 30], rtol=1e-12)
    assert sp.gammaln(np.float32(2.5)).dtype == np.float32


def test_special_errors():
    with pytest.raises(ValueError, match="factorial"):
        sp.factorial(3.0, exact=True)


def test_special_derivatives_and_transformations():
    close(tessel.grad(sp.gammaln)(2.5), sp.digamma(2.5), rtol=1e-10)
    close(tessel.vmap(tessel.grad(sp.erf))(X), 2 / math.sqrt(math.pi) * np.exp(-X ** 2), rtol=1e-10)
    close(tessel.jit(sp.xlog1py)(X, X), X * np.log1p(X), rtol=1e-12)


def test_special_against_scipy_when_installed():
    ss = pytest.importorskip("scipy.special")
    a = np.array([0.5, 2.0, 3.0, 10.0])
    for name in ["i0e", "i1e", "i0", "i1", "spence", "expi", "exp1", "dawsn", "erfcx", "digamma", "entr"]:
        close(getattr(sp, name)(X), getattr(ss, name)(X), rtol=1e-8, atol=1e-14)
    for name in ["gammainc", "gammaincc", "poch", "xlog1py", "rel_entr", "kl_div", "expn", "owens_t", "polygamma"]:
        args = (np.array([1, 2, 3, 1]), X) if name in ("expn", "polygamma") else (a, X)
        close(getattr(sp, name)(*args), getattr(ss, name)(*args), rtol=1e-8, atol=1e-14)
    close(sp.betainc(a, 2.0, X / 8), ss.betainc(a, 2.0, X / 8), rtol=1e-8)
    close(sp.hyp1f1(a, 2.0, X), ss.hyp1f1(a, 2.0, X), rtol=1e-8)
    close(sp.log_ndtr(-X), ss.log_ndtr(-X), rtol=1e-10)


# ---- tessel.scipy.stats ----

def norm_logpdf(x, loc=0.0, scale=1.0):
    return -0.5 * ((x - loc) / scale) ** 2 - math.log(math.sqrt(2 * math.pi) * scale)


def test_distributions_are_modules():
    import tessel.scipy.stats.norm as norm
    assert norm is stats.norm
    from tessel.scipy.stats import t  # noqa: F401


def test_continuous_distributions_against_closed_forms():
    close(stats.norm.logpdf(X), norm_logpdf(X))
    close(stats.norm.logpdf(X, 1.0, scale=2.0), norm_logpdf(X, 1.0, 2.0))
    close(stats.norm.pdf(X, loc=1.0), np.exp(norm_logpdf(X, 1.0)))
    close(stats.norm.cdf(0.0), 0.5)
    close(stats.norm.ppf(stats.norm.cdf(X[:3])), X[:3], rtol=1e-9)
    close(stats.expon.cdf(X, scale=2.0), 1 - np.exp(-X / 2))
    close(stats.uniform.pdf(X, 0.0, 3.0), np.where(X <= 3.0, 1 / 3, 0.0))
    close(stats.laplace.logpdf(X), -np.abs(X) - math.log(2))
    close(stats.cauchy.cdf(X), 0.5 + np.arctan(X) / math.pi)
    close(stats.gamma.logpdf(X, 2.0), math.log(1.0) + np.log(X) - X - math.lgamma(2.0))
    close(stats.chi2.cdf(X, 2.0), 1 - np.exp(-X / 2))
    close(stats.beta.pdf(np.array([0.25, 0.5]), 2.0, 2.0), 6 * np.array([0.25, 0.5]) * (1 - np.array([0.25, 0.5])))
    close(stats.t.pdf(0.0, 1.0), 1 / math.pi)  # t with one degree of freedom is Cauchy
    close(stats.logistic.cdf(X), 1 / (1 + np.exp(-X)))


def test_discrete_distributions_against_closed_forms():
    k = np.array([0.0, 1.0, 3.0])
    close(stats.poisson.pmf(k, 2.0), [math.exp(-2) * 2 ** int(v) / math.factorial(int(v)) for v in k], rtol=1e-12)
    close(stats.bernoulli.pmf(k[:2], 0.3), [0.7, 0.3])
    close(stats.binom.pmf(k, 3.0, 0.5), [math.comb(3, int(v)) / 8 for v in k], rtol=1e-12)
    close(stats.geom.pmf(np.array([1.0, 2.0]), 0.25), [0.25, 0.75 * 0.25])


def test_multivariate_and_summary_statistics():
    cov = np.array([[2.0, 0.3], [0.3, 1.0]])
    x = np.array([0.5, -0.2])
    d = x @ np.linalg.solve(cov, x)
    close(stats.multivariate_normal.logpdf(x, np.zeros(2), cov),
          -0.5 * d - 0.5 * math.log(np.linalg.det(2 * math.pi * cov)), rtol=1e-12)
    a = np.array([[1.0, 2.0, 2.0], [3.0, 3.0, 1.0]])
    close(stats.sem(a, axis=1), a.std(axis=1, ddof=1) / math.sqrt(3))
    m, c = stats.mode(a, axis=1)
    close(m, [2.0, 3.0])
    close(c, [2, 2])
    close(stats.rankdata(np.array([3.0, 1.0, 3.0, 2.0])), [3.5, 1.0, 3.5, 2.0])


def test_stats_under_grad_jit_vmap():
    # d/dx norm.logpdf(x, loc, scale) = -(x - loc) / scale^2
    g = tessel.grad(lambda x: stats.norm.logpdf(x, 1.0, 2.0))(0.5)
    close(g, -(0.5 - 1.0) / 4.0)
    gs = tessel.grad(lambda s: tnp.sum(stats.norm.logpdf(X, 0.0, s)))(np.float64(1.5))
    close(gs, (X ** 2 / 1.5 ** 3 - 1 / 1.5).sum(), rtol=1e-10)
    close(tessel.jit(stats.t.logpdf)(X, 3.0), tessel.vmap(lambda v: stats.t.logpdf(v, 3.0))(X))


def test_stats_against_scipy_when_installed():
    ss = pytest.importorskip("scipy.stats")
    close(stats.t.logpdf(X, 3.5, 0.5, 2.0), ss.t.logpdf(X, 3.5, 0.5, 2.0), rtol=1e-10)
    close(stats.gamma.cdf(X, 2.5), ss.gamma.cdf(X, 2.5), rtol=1e-9)
    close(stats.beta.logcdf(X / 8, 2.0, 3.0), ss.beta.logcdf(X / 8, 2.0, 3.0), rtol=1e-9)
    close(stats.truncnorm.logpdf(X / 4, -1.0, 2.0), ss.truncnorm.logpdf(X / 4, -1.0, 2.0), rtol=1e-9)
    close(stats.nbinom.logpmf(np.array([0.0, 2.0]), 3.0, 0.4), ss.nbinom.logpmf([0, 2], 3, 0.4), rtol=1e-10)
    close(stats.gumbel_r.ppf(np.array([0.1, 0.9])), ss.gumbel_r.ppf([0.1, 0.9]), rtol=1e-10)
    close(stats.pareto.sf(X + 1, 2.0), ss.pareto.sf(X + 1, 2.0), rtol=1e-10)
    close(stats.vonmises.logpdf(X, 2.0), ss.vonmises.logpdf(X, 2.0), rtol=1e-9)
