"""Parity cases of the rest of jax.scipy.special (src/scipy/special_extra.cpp): dawsn, sici,
fresnel, owens_t, wofz, bessel_jn, hyp1f1, hyp2f1 and sph_harm_y, on random points and special
inputs, with jvp/vjp where JAX differentiates."""
import os

import numpy as np
import scipy.special as ss
from jax.scipy import special as js

from cases_special import N, both, grid, write_grids
from parity_lib import FLOATS, rand

# JAX's algorithms, rounded differently on the way (see cases_special.py).
TOL = {"float32": (1e-4, 1e-30), "float64": (1e-11, 1e-300), "complex64": (1e-4, 1e-30),
       "complex128": (1e-11, 1e-300)}
GTOL = {"float32": (1e-3, 1e-6), "float64": (1e-9, 1e-13), "complex64": (1e-3, 1e-6),
        "complex128": (1e-9, 1e-13)}
# The series of 1F1 and 2F1 sum up to 250 terms of alternating sign: rounding accumulates.
SERIES_TOL = {"float32": (2e-3, 1e-5), "float64": (1e-9, 1e-12)}
SERIES_GTOL = {"float32": (1e-2, 1e-4), "float64": (1e-7, 1e-10)}


def cases(s):
    for dt in FLOATS:
        x = rand((3, 7), dt, 101, -9.0, 9.0)
        special = np.array([0.0, -0.0, 1.0, -1.0, 3.25, 6.25, 4.0, 8.0, 1.6, 40.0, 1e5, 1e10, 4e4, np.inf, -np.inf,
                            np.nan], dt)
        s.case("scipy.special.dawsn", js.dawsn, [x], tol=TOL, grad=True, gtol=GTOL)
        s.case("scipy.special.dawsn", js.dawsn, [special], tol=TOL, name=f"dawsn_special_{dt}")
        s.case("scipy.special.sici", js.sici, [rand((3, 7), dt, 102, -20.0, 20.0)], tol=TOL, grad=True, gtol=GTOL)
        s.case("scipy.special.sici", js.sici, [special], tol=TOL, name=f"sici_special_{dt}")
        s.case("scipy.special.fresnel", js.fresnel, [rand((3, 7), dt, 103, -6.0, 6.0)], tol=TOL, grad=True,
               gtol=GTOL)
        s.case("scipy.special.fresnel", js.fresnel, [special], tol=TOL, name=f"fresnel_special_{dt}")
        h, a = rand((3, 6), dt, 104, -4.0, 4.0), rand((3, 6), dt, 105, -3.0, 3.0)
        s.case("scipy.special.owens_t", js.owens_t, [h, a], tol=TOL, grad=True, gtol=GTOL)
        s.case("scipy.special.owens_t", js.owens_t,
               [np.array([0.0, 0.5, 2.0, 0.3, 1.0, -1.0, np.nan, 0.0, 5.0], dt),
                np.array([0.5, 1.0, -1.0, 10.0, 0.0, 2.0, 1.0, np.nan, 1e3], dt)],
               tol=TOL, name=f"owens_t_special_{dt}")
        cdt = "complex64" if dt == "float32" else "complex128"
        z = rand((3, 5), cdt, 106, -5.0, 5.0)
        s.case("scipy.special.wofz", js.wofz, [z], tol=TOL, grad=True, gtol=GTOL)
        # On the real axis the real part is exp(-x^2), below the 32-term sum's rounding for |x| > 4.
        s.case("scipy.special.wofz", js.wofz, [rand((8,), dt, 107, -6.0, 6.0)],
               tol={"float32": (1e-4, 1e-6), "float64": (1e-11, 1e-14)}, name=f"wofz_real_{dt}")
        zb = rand((2, 5), dt, 108, 0.1, 20.0)
        for v in [0, 1, 4]:
            s.case("scipy.special.bessel_jn", lambda z, v: js.bessel_jn(z, v=v), [zb], {"v": v}, tol=TOL,
                   name=f"bessel_jn_{v}_{dt}")
        s.case("scipy.special.bessel_jn", lambda z, v, n_iter: js.bessel_jn(z, v=v, n_iter=n_iter),
               [rand((6,), dt, 109, -30.0, 30.0)], {"v": 3, "n_iter": 80}, tol=TOL, name=f"bessel_jn_iter_{dt}")
        a1, b1 = rand((2, 6), dt, 110, -3.0, 4.0), rand((2, 6), dt, 111, 0.2, 5.0)
        # (float32 stops at -4: below, the alternating series cancels to no correct digit in JAX too.)
        x1 = rand((2, 6), dt, 112, -4.0 if dt == "float32" else -10.0, 10.0)
        s.case("scipy.special.hyp1f1", js.hyp1f1, [a1, b1, x1], tol=SERIES_TOL, grad=True, gtol=SERIES_GTOL)
        s.case("scipy.special.hyp1f1", js.hyp1f1,
               [np.array([0.0, 2.0, 1.5, 0.5, 1.0, 2.5], dt), np.array([1.0, 2.0, 0.0, 1.5, 3.0, 4.0], dt),
                np.array([3.0, 0.5, 1.0, 120.0, -150.0, 0.0], dt)], tol=SERIES_TOL, name=f"hyp1f1_special_{dt}")
        a2, b2 = rand((2, 6), dt, 113, 0.1, 3.0), rand((2, 6), dt, 114, 0.1, 3.0)
        c2, x2 = rand((2, 6), dt, 115, 0.5, 6.0), rand((2, 6), dt, 116, -0.8, 0.85)
        s.case("scipy.special.hyp2f1", js.hyp2f1, [a2, b2, c2, x2], tol=SERIES_TOL, grad=True, gtol=SERIES_GTOL)
        # The branches: x = 0, a = 0, c = 0, a terminating series, c - a - b <= -1, x = 1, x > 1,
        # b = c, a = c, x near 1 with integer and non-integer c - a - b.
        s.case("scipy.special.hyp2f1", js.hyp2f1,
               [np.array([1.0, 0.0, 1.0, -3.0, 2.0, 0.5, 1.0, 1.5, 2.0, 1.0, 0.5, 1.5, -2.0], dt),
                np.array([2.0, 1.0, 1.0, 1.5, 2.5, 0.5, 1.0, 2.0, 0.5, 1.0, 1.5, 0.25, 2.0], dt),
                np.array([3.0, 2.0, 0.0, 2.0, 2.0, 3.0, 2.0, 2.0, 2.0, 4.0, 4.0, 3.5, 3.0], dt),
                np.array([0.0, 0.5, 0.5, 0.7, 0.3, 1.0, 1.5, 0.4, 0.6, 0.95, 0.93, 0.97, 0.5], dt)],
               tol=SERIES_TOL, name=f"hyp2f1_special_{dt}")
        n = np.array([0, 1, 2, 3, 5, 5, 4, 6], "int32")
        m = np.array([0, -1, 2, 1, -3, 4, -4, 0], "int32")
        theta = rand((8,), dt, 117, 0.0, np.pi)
        phi = rand((8,), dt, 118, 0.0, 2 * np.pi)
        s.case("scipy.special.sph_harm_y", lambda n, m, t, p, n_max: js.sph_harm_y(n, m, t, p, n_max=n_max),
               [n, m, theta, phi], {"n_max": 6}, tol=TOL, name=f"sph_harm_y_{dt}")
        s.case("scipy.special.sph_harm_y", lambda n, m, t, p, n_max: js.sph_harm_y(n, m, t, p, n_max=n_max),
               [n, m, theta, phi], {"n_max": 3}, tol=TOL, name=f"sph_harm_y_clipped_{dt}")
    write_accuracy()


# ---------------------------------------------------------------------------------------------
# Accuracy grids (as cases_special.py's): SciPy's float64 values on float32-representable points,
# read by tests/ops/special_accuracy_test.cpp for docs/special.md's table.
ACCURACY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "accuracy", "special_extra.txt")


def write_accuracy():
    rng = np.random.default_rng(1)

    def uniform(lo, hi, n=N):
        return rng.uniform(lo, hi, n).astype(np.float32).astype(np.float64)

    dx = both(grid(-10, 10, N), grid(10, 1e4, N // 2, log=True))
    sx = grid(1e-3, 1e3, N, log=True)
    si, ci = ss.sici(sx)
    fx = grid(-10, 10, N)
    fs, fc = ss.fresnel(fx)
    oh, oa = uniform(0.01, 5.0), both(uniform(0.01, 1.0, N // 2), uniform(1.0, 10.0, N // 2))
    jz = grid(0.1, 30, N)
    ha, hb, hx = uniform(0.1, 5.0), uniform(0.1, 5.0), uniform(-10.0, 10.0)
    ga, gb, gc, gx = uniform(0.1, 3.0), uniform(0.1, 3.0), uniform(0.5, 6.0), uniform(-0.9, 0.9)
    entries = [("dawsn", [dx], ss.dawsn(dx)), ("sici_si", [sx], si), ("sici_ci", [sx], ci),
               ("fresnel_s", [fx], fs), ("fresnel_c", [fx], fc), ("owens_t", [oh, oa], ss.owens_t(oh, oa)),
               ("hyp1f1", [ha, hb, hx], ss.hyp1f1(ha, hb, hx)), ("hyp2f1", [ga, gb, gc, gx], ss.hyp2f1(ga, gb, gc, gx))]
    for v in [0, 1, 3]:
        entries.append((f"bessel_jn_{v}", [jz], ss.jv(v, jz)))
    write_grids(ACCURACY, entries, "tests/parity/cases_special_extra.py")
