"""Parity cases of jax.scipy.stats's truncnorm, vonmises, wrapcauchy, poisson.entropy, sem, mode
and rankdata (include/tessel/scipy_stats.h); the other distributions are in cases_stats.py."""
import jax.numpy as jnp
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

    order_statistics(s)


def as_default_dtypes(fn, floats=False):
    """fn with JAX's x64 default-dtype results as tessel's defaults: int64 counts as int32 and,
    when `floats`, float64 ranks as float32 (whole numbers and halves: exact either way)."""
    def wrapped(*args, **kw):
        r = fn(*args, **kw)
        one = not isinstance(r, (tuple, list))
        conv = {jnp.dtype("int64"): jnp.int32, **({jnp.dtype("float64"): jnp.float32} if floats else {})}
        r = [x.astype(conv[x.dtype]) if x.dtype in conv else x for x in ([r] if one else r)]
        return r[0] if one else tuple(r)
    return wrapped


def order_statistics(s):
    """mode and rankdata: many ties, NaNs (counted as one value by mode, making a slice's ranks
    NaN), -0.0 next to 0.0, scalars, empty slices; every axis and method."""
    mode = as_default_dtypes(lambda v, axis, keepdims: tuple(jst.mode(v, axis=axis, keepdims=keepdims)))
    rankdata = as_default_dtypes(lambda v, method, axis: jst.rankdata(v, method, axis=axis), floats=True)
    for dt in ["float32", "float64", "int32", "uint32"]:
        ties = rand((4, 7), "int32", 311, 0, 4).astype(dt)
        for axis in (0, 1, -1, None):
            for keepdims in (False, True):
                s.case("scipy.stats.mode", mode, [ties], {"axis": axis, "keepdims": keepdims})
            for method in ("average", "min", "max", "dense", "ordinal"):
                s.case("scipy.stats.rankdata", rankdata, [ties], {"method": method, "axis": axis})
        s.case("scipy.stats.mode", mode, [rand((3, 2, 5), dt, 312, 0, 2)], {"axis": 1, "keepdims": True},
               name=f"stats_mode_3d_{dt}")
        s.case("scipy.stats.rankdata", rankdata, [rand((3, 2, 5), dt, 313, 0, 3)], {"method": "average", "axis": 2},
               name=f"stats_rankdata_3d_{dt}")
    for dt in FLOATS:
        spec = np.array([[np.nan, 1.0, np.nan, 2.0, 2.0, np.nan],
                         [0.0, -0.0, -0.0, 3.0, np.inf, -np.inf],
                         [-np.inf, 5.0, -np.inf, 5.0, 1.5, 0.5]], dt)
        for axis in (0, 1, None):
            s.case("scipy.stats.mode", mode, [spec], {"axis": axis, "keepdims": False},
                   name=f"stats_mode_special_axis{axis}_{dt}")
            for method in ("average", "min", "max", "dense", "ordinal"):
                s.case("scipy.stats.rankdata", rankdata, [spec], {"method": method, "axis": axis},
                       name=f"stats_rankdata_special_{method}_axis{axis}_{dt}")
        # The mode's value is differentiable: the cotangent reaches the first of the modal elements.
        s.case("scipy.stats.mode", mode, [rand((4, 6), "int32", 314, 0, 3).astype(dt)],
               {"axis": 1, "keepdims": False}, grad=True, name=f"stats_mode_grad_{dt}")
    for axis in (0, None):
        s.case("scipy.stats.mode", mode, [np.array(3.5, np.float32)], {"axis": axis, "keepdims": False},
               name=f"stats_mode_scalar_axis{axis}")
    s.case("scipy.stats.rankdata", rankdata, [np.array(3.5, np.float32)], {"method": "average", "axis": None},
           name="stats_rankdata_scalar")
    # Complex numbers order by real part, then imaginary part.
    z = (rand((3, 6), "int32", 316, 0, 2) + 1j * rand((3, 6), "int32", 317, 0, 1)).astype("complex64")
    s.case("scipy.stats.mode", mode, [z], {"axis": 1, "keepdims": False}, name="stats_mode_complex64")
    s.case("scipy.stats.rankdata", rankdata, [z], {"method": "average", "axis": 1}, name="stats_rankdata_complex64")
    flags = np.array([[True, False, True, True], [False, False, True, False]])
    s.case("scipy.stats.mode", mode, [flags], {"axis": 1, "keepdims": False}, name="stats_mode_bool")
    s.case("scipy.stats.rankdata", rankdata, [flags], {"method": "dense", "axis": 1}, name="stats_rankdata_bool")
    # Empty slices: the mode is NaN with count 0 (float32); no slices: an empty result.
    for shape, axis in (((0,), 0), ((0, 3), 0), ((3, 0), 0), ((3, 0), 1), ((0,), None)):
        tag = "x".join(map(str, shape))
        s.case("scipy.stats.mode", mode, [np.zeros(shape, np.float32)], {"axis": axis, "keepdims": False},
               name=f"stats_mode_empty_{tag}_axis{axis}")
        s.case("scipy.stats.rankdata", rankdata, [np.zeros(shape, np.float32)], {"method": "min", "axis": axis},
               name=f"stats_rankdata_empty_{tag}_axis{axis}")
