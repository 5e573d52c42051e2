"""Parity cases of include/tessel/scipy_stats.h (jax.scipy.stats): every function of each
distribution on random points, support edges and invalid parameters, with jvp/vjp for the
continuous log densities and distribution functions."""
import jax.numpy as jnp
import numpy as np
from jax.scipy import stats as jst

from parity_lib import FLOATS, rand

# Compositions of the special functions (cases_special.py's tolerances).
TOL = {"float32": (1e-4, 1e-30), "float64": (1e-11, 1e-300)}
GTOL = {"float32": (1e-3, 1e-6), "float64": (1e-9, 1e-13)}
# log CDFs near 0 (log of 1 - tiny) carry the rounding of the 1 - tiny: an absolute floor.
LOC_SCALE_TOL = {"float32": (1e-4, 1e-7), "float64": (1e-11, 1e-15)}

LOC_SCALE = ["norm", "uniform", "expon", "laplace", "logistic", "cauchy", "gumbel_r", "gumbel_l"]
# Functions whose derivative JAX defines everywhere on the points below.
# (gumbel: JAX differentiates xlogy(-1, scale) with an integer tangent and fails)
NO_GRAD = {("gumbel_r", "logpdf"), ("gumbel_r", "pdf"), ("gumbel_r", "ppf"), ("gumbel_l", "logpdf"),
           ("gumbel_l", "pdf"), ("gumbel_l", "ppf"), ("uniform", "cdf"), ("uniform", "logpdf"), ("uniform", "pdf"), ("uniform", "ppf"), ("laplace", "cdf")}


def fns(mod):
    return [n for n in ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf", "logpmf", "pmf")
            if hasattr(mod, n)]


def cases(s):
    for dt in FLOATS:
        x = rand((3, 5), dt, 201, -3.0, 3.0)
        xpos = rand((3, 5), dt, 202, 0.05, 4.0)
        q = rand((3, 5), dt, 203, 0.01, 0.99)
        loc, scale = rand((5,), dt, 204, -1.0, 1.0), rand((5,), dt, 205, 0.5, 2.0)
        for d in LOC_SCALE:
            mod = getattr(jst, d)
            for f in fns(mod):
                arg = q if f in ("ppf", "isf") else x
                s.case(f"scipy.stats.{d}.{f}", getattr(mod, f), [arg, loc, scale], tol=LOC_SCALE_TOL,
                       grad=(d, f) not in NO_GRAD, gtol=GTOL)
                s.case(f"scipy.stats.{d}.{f}", lambda v, f=f, mod=mod: getattr(mod, f)(v), [arg], tol=LOC_SCALE_TOL,
                       name=f"stats_{d}_{f}_default_{dt}")
        edge = np.array([-np.inf, -1.0, 0.0, 0.5, 1.0, 2.0, np.inf, np.nan], dt)
        for d in ["uniform", "expon", "norm", "cauchy"]:
            for f in fns(getattr(jst, d)):
                s.case(f"scipy.stats.{d}.{f}", lambda v, f=f, d=d: getattr(getattr(jst, d), f)(v), [edge], tol=TOL,
                       name=f"stats_{d}_{f}_edge_{dt}")
        a, b = rand((5,), dt, 206, 0.5, 4.0), rand((5,), dt, 207, 0.5, 4.0)
        x01 = rand((3, 5), dt, 208, 0.02, 0.98)
        for f in fns(jst.beta):
            s.case(f"scipy.stats.beta.{f}", getattr(jst.beta, f), [x01, a, b], tol=TOL, grad=f in ("logpdf", "pdf"),
                   gtol=GTOL)
        s.case("scipy.stats.beta.logpdf", jst.beta.logpdf,
               [np.array([-0.5, 0.0, 0.3, 1.0, 1.5, 0.5], dt), np.array([2.0, 2.0, -1.0, 1.0, 2.0, 0.5], dt),
                np.array([3.0, 1.0, 2.0, 1.0, 2.0, 0.5], dt)], tol=TOL, name=f"stats_beta_logpdf_edge_{dt}")
        for f in fns(jst.gamma):
            s.case(f"scipy.stats.gamma.{f}", getattr(jst.gamma, f), [xpos, a], tol=TOL, grad=f in ("logpdf", "pdf"),
                   gtol=GTOL)
            s.case(f"scipy.stats.gamma.{f}", getattr(jst.gamma, f), [x, a, loc, scale], tol=TOL,
                   name=f"stats_gamma_{f}_locscale_{dt}")
        for f in fns(jst.chi2):
            s.case(f"scipy.stats.chi2.{f}", getattr(jst.chi2, f), [xpos, a * 2], tol=TOL, grad=f in ("logpdf", "pdf"),
                   gtol=GTOL)
        for f in fns(jst.t):
            s.case(f"scipy.stats.t.{f}", getattr(jst.t, f), [x, a, loc, scale], tol=TOL, grad=True, gtol=GTOL)
        for f in fns(jst.pareto):
            arg = q if f == "ppf" else xpos + 1
            s.case(f"scipy.stats.pareto.{f}", getattr(jst.pareto, f), [arg, a], tol=TOL, grad=True, gtol=GTOL)
            s.case(f"scipy.stats.pareto.{f}", getattr(jst.pareto, f), [q if f == "ppf" else x, a, loc, scale], tol=TOL,
                   name=f"stats_pareto_{f}_locscale_{dt}")
        for f in fns(jst.gennorm):
            s.case(f"scipy.stats.gennorm.{f}", getattr(jst.gennorm, f), [x, a], tol=TOL, grad=True, gtol=GTOL)
        k = np.array([[0, 1, 2, 3, 5], [7, -1, 4, 2, 10], [0, 0, 1, 1, 3]], dt)
        kf = np.array([0.5, 2.0, 3.0, 1.5, 4.0], dt)
        mu = rand((5,), dt, 209, 0.1, 6.0)
        for f in fns(jst.poisson):
            s.case(f"scipy.stats.poisson.{f}", getattr(jst.poisson, f), [k, mu], tol=TOL)
            s.case(f"scipy.stats.poisson.{f}", getattr(jst.poisson, f), [kf, mu, np.array(1.0, dt)], tol=TOL,
                   name=f"stats_poisson_{f}_loc_{dt}")
        p = rand((5,), dt, 210, 0.05, 0.95)
        kb = np.array([[0, 1, 2, -1, 1], [1, 0, 0, 1, 0.5]], dt)
        for f in ("logpmf", "pmf"):
            s.case(f"scipy.stats.bernoulli.{f}", getattr(jst.bernoulli, f), [kb, p], tol=TOL)
            s.case(f"scipy.stats.geom.{f}", getattr(jst.geom, f), [k, p], tol=TOL)
            n = np.array([10.0, 3.0, 5.0, 8.0, 12.0], dt)
            s.case(f"scipy.stats.binom.{f}", getattr(jst.binom, f), [k, n, p], tol=TOL)
            s.case(f"scipy.stats.nbinom.{f}", getattr(jst.nbinom, f), [k, n, p], tol=TOL)
            s.case(f"scipy.stats.betabinom.{f}", getattr(jst.betabinom, f), [k, n, a, b], tol=TOL)
        s.case("scipy.stats.bernoulli.cdf", jst.bernoulli.cdf, [kb, np.array([0.3, 0.7, -0.1, 0.5, np.nan], dt)],
               tol=TOL)
        s.case("scipy.stats.bernoulli.ppf", jst.bernoulli.ppf,
               [np.array([[0.1, 0.5, 0.9, -0.1, 1.2], [0.3, 0.7, 0.2, 0.6, 0.0]], dt), p], tol=TOL)
        # multivariate normal: full covariance (batched x), scalar covariance, univariate.
        A = rand((4, 4), dt, 211, -1.0, 1.0)
        cov = (A @ A.T + 4 * np.eye(4)).astype(dt)
        mean = rand((4,), dt, 212, -1.0, 1.0)
        xm = rand((3, 4), dt, 213, -2.0, 2.0)
        for f in ("logpdf", "pdf"):
            s.case(f"scipy.stats.multivariate_normal.{f}", getattr(jst.multivariate_normal, f), [xm, mean, cov],
                   tol={"float32": (2e-4, 1e-30), "float64": (1e-10, 1e-300)}, grad=True, gtol=GTOL)
        s.case("scipy.stats.multivariate_normal.logpdf", jst.multivariate_normal.logpdf,
               [xm, mean, np.array(1.5, dt)], tol=TOL, name=f"stats_mvn_logpdf_scalar_cov_{dt}")
        s.case("scipy.stats.multivariate_normal.logpdf", jst.multivariate_normal.logpdf,
               [x, np.array(0.5, dt), np.array(2.0, dt)], tol=TOL, name=f"stats_mvn_logpdf_univariate_{dt}")
        alpha = np.array([1.5, 2.0, 0.8], dt)
        xs = np.array([[0.2, 0.5, 0.1], [0.3, 0.25, 0.6], [0.5, 0.25, 0.3]], dt)
        for f in ("logpdf", "pdf"):
            s.case(f"scipy.stats.dirichlet.{f}", getattr(jst.dirichlet, f), [xs, alpha], tol=TOL)
            s.case(f"scipy.stats.dirichlet.{f}", getattr(jst.dirichlet, f), [xs[:2], alpha], tol=TOL,
                   name=f"stats_dirichlet_{f}_short_{dt}")
        for f in ("logpmf", "pmf"):
            s.case(f"scipy.stats.multinomial.{f}", getattr(jst.multinomial, f),
                   [np.array([2, 3, 5], "int32"), np.array(10, "int32"), np.array([0.2, 0.3, 0.5], dt)], tol=TOL)
            s.case(f"scipy.stats.multinomial.{f}", getattr(jst.multinomial, f),
                   [np.array([2, 3, 4], "int32"), np.array(10, "int32"), np.array([0.2, 0.3, 0.5], dt)], tol=TOL,
                   name=f"stats_multinomial_{f}_off_{dt}")
