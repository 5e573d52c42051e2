"""Parity cases of jax.scipy.stats's truncnorm, vonmises and wrapcauchy (include/tessel/scipy_stats.h);
the other distributions are in cases_stats.py."""
import numpy as np
from jax.scipy import stats as jst

from parity_lib import FLOATS, rand

TOL = {"float32": (1e-4, 1e-7), "float64": (1e-11, 1e-15)}
GTOL = {"float32": (1e-3, 1e-6), "float64": (1e-9, 1e-13)}


def cases(s):
    for dt in FLOATS:
        x = rand((3, 5), dt, 301, -3.0, 3.0)
        a = np.array([-1.0, -2.5, 0.5, -4.0, 1.0], dt)
        b = np.array([1.5, -0.5, 2.5, 4.0, 0.5], dt)  # the last is a >= b: NaN
        loc, scale = rand((5,), dt, 302, -0.5, 0.5), rand((5,), dt, 303, 0.5, 2.0)
        for f in ("logpdf", "pdf", "logcdf", "cdf", "logsf", "sf"):
            s.case(f"scipy.stats.truncnorm.{f}", getattr(jst.truncnorm, f), [x, a, b], tol=TOL)
            s.case(f"scipy.stats.truncnorm.{f}", getattr(jst.truncnorm, f), [x, a, b, loc, scale], tol=TOL,
                   name=f"stats_truncnorm_{f}_locscale_{dt}")
        theta = rand((3, 5), dt, 304, -1.0, 7.0)
        kappa = np.array([0.5, 2.0, 10.0, -1.0, 0.0], dt)
        c = np.array([0.1, 0.5, 0.9, 1.0, -0.2], dt)
        for f in ("logpdf", "pdf"):
            s.case(f"scipy.stats.vonmises.{f}", getattr(jst.vonmises, f), [theta, kappa], tol=TOL)
            s.case(f"scipy.stats.wrapcauchy.{f}", getattr(jst.wrapcauchy, f), [theta, c], tol=TOL)
        s.case("scipy.stats.vonmises.logpdf", jst.vonmises.logpdf, [theta[:, :3], kappa[:3]], tol=TOL, grad=True,
               gtol=GTOL, name=f"stats_vonmises_logpdf_grad_{dt}")
        mu = np.array([0.0, 0.5, 3.0, 9.9, 10.0, 50.0, 99.0, 100.0, 500.0], dt)
        s.case("scipy.stats.poisson.entropy", jst.poisson.entropy, [mu], tol=TOL)
        s.case("scipy.stats.poisson.entropy", jst.poisson.entropy, [mu[:3], np.zeros((2, 1), dt)], tol=TOL,
               name=f"stats_poisson_entropy_loc_{dt}")
        data = rand((4, 5), dt, 305, -2.0, 3.0)
        data_nan = data.copy()
        data_nan[1, 2] = np.nan
        for axis in (0, 1, None):
            for ddof in (0, 1):
                s.case("scipy.stats.sem", lambda v, axis, ddof: jst.sem(v, axis=axis, ddof=ddof), [data],
                       {"axis": axis, "ddof": ddof}, tol=TOL, grad=True, gtol=GTOL)
            s.case("scipy.stats.sem", lambda v, axis, nan_policy, keepdims: jst.sem(
                       v, axis=axis, nan_policy=nan_policy, keepdims=keepdims), [data_nan],
                   {"axis": axis, "nan_policy": "omit", "keepdims": True}, tol=TOL)
