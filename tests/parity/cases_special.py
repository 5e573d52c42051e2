"""Parity cases of include/tessel/special.h (the lax special functions), include/tessel/scipy_special.h
(jax.scipy.special) and jnp.i0 / jnp.kaiser: values against JAX on random points and on special
inputs (0, poles, negative, large, nan, inf), jvp/vjp where JAX differentiates.

It also writes tests/parity/accuracy/special.txt: dense grids with SciPy's float64 values, from
which tests/ops/special_accuracy_test.cpp measures each function's maximum error in ulp in float32
and float64 (the table of docs/special.md)."""
import os

import jax.numpy as jnp
import numpy as np
import scipy
import scipy.special as ss
from jax import lax
from jax.scipy import special as js

from parity_lib import FLOATS, fmt_float, rand

# XLA's and tessel's special functions run the same algorithms (Lanczos, Cephes, the same series
# and continued fractions) but round differently on the way: a few ulp apart in float32, where
# the iterative ones (incomplete gamma and beta) stop after different numbers of terms.
SPECIAL_TOL = {"float32": (1e-4, 1e-30), "float64": (1e-11, 1e-300)}
# Derivatives go through exp(log ...) of the values: relative errors grow with the exponent.
SPECIAL_GTOL = {"float32": (1e-3, 1e-6), "float64": (1e-9, 1e-13)}


def positive(shape, dtype, seed, lo=0.05, hi=8.0):
    return rand(shape, dtype, seed, lo, hi)


def cases(s):
    for dt in FLOATS:
        x = rand((3, 7), dt, 1, -6.0, 8.0)
        xp = positive((3, 7), dt, 2)
        special = np.array([0.0, -0.0, 1.0, 2.0, -1.0, -2.5, 0.5, 1e-8, 30.0, 170.5, np.inf, -np.inf, np.nan], dt)
        for name, fn in [("lgamma", lax.lgamma), ("digamma", lax.digamma)]:
            s.case(name, fn, [x], tol=SPECIAL_TOL, grad=True, gtol=SPECIAL_GTOL)
            s.case(name, fn, [special], tol=SPECIAL_TOL, name=f"{name}_special_{dt}")
        for name, fn in [("bessel_i0e", lax.bessel_i0e), ("bessel_i1e", lax.bessel_i1e)]:
            s.case(name, fn, [rand((3, 7), dt, 3, -20.0, 20.0)], tol=SPECIAL_TOL, grad=True, gtol=SPECIAL_GTOL)
            s.case(name, fn, [np.array([0.0, 8.0, -8.0, 1e-30, 700.0, np.inf, np.nan], dt)], tol=SPECIAL_TOL,
                   name=f"{name}_special_{dt}")
        a, xa = positive((4, 5), dt, 4, 0.1, 10.0), positive((4, 5), dt, 5, 0.01, 15.0)
        for name, fn in [("igamma", lax.igamma), ("igammac", lax.igammac)]:
            s.case(name, fn, [a, xa], tol=SPECIAL_TOL, grad=True, gtol=SPECIAL_GTOL)
            edge_a = np.array([0.0, 0.0, 1.0, 1.0, -1.0, 2.0, 3.0, np.nan, 1e-3, 50.0], dt)
            edge_x = np.array([0.0, 2.0, 0.0, np.inf, 1.0, -1.0, np.nan, 1.0, 1e-3, 45.0], dt)
            s.case(name, fn, [edge_a, edge_x], tol=SPECIAL_TOL, name=f"{name}_special_{dt}")
        s.case("igamma_grad_a", lax.igamma_grad_a, [a, xa], tol=SPECIAL_TOL)
        s.case("random_gamma_grad", lax.random_gamma_grad, [a, xa], tol=SPECIAL_TOL)
        bx = positive((4, 5), dt, 6, 0.0, 1.0)
        ba, bb = positive((4, 5), dt, 7, 0.2, 12.0), positive((4, 5), dt, 8, 0.2, 12.0)
        s.case("betainc", lax.betainc, [ba, bb, bx], tol=SPECIAL_TOL)
        s.case("betainc", lambda x, a, b: lax.betainc(jnp.asarray(a, x.dtype), jnp.asarray(b, x.dtype), x), [bx],
               {"a": 2.5, "b": 0.75}, tol=SPECIAL_TOL, grad=True, gtol=SPECIAL_GTOL, name=f"betainc_dx_{dt}")
        s.case("betainc", lax.betainc,
               [np.array([0.0, 1.0, 1.0, 2.0, -1.0, 0.0, np.inf], dt), np.array([1.0, 0.0, 1.0, 2.0, 1.0, 0.0, 1.0], dt),
                np.array([0.5, 0.5, 1.0, 0.0, 0.5, 0.5, 0.5], dt)], tol=SPECIAL_TOL, name=f"betainc_special_{dt}")
        n = np.array([[0, 1, 2], [3, 4, 1]], dt)
        s.case("polygamma", lax.polygamma, [n, positive((2, 3), dt, 9, 0.2, 6.0)], tol=SPECIAL_TOL)
        s.case("polygamma", lambda x, n: lax.polygamma(jnp.asarray(n, x.dtype), x), [positive((2, 3), dt, 10)],
               {"n": 2}, tol=SPECIAL_TOL, grad=True, gtol=SPECIAL_GTOL, name=f"polygamma_dx_{dt}")
        zx, zq = positive((3, 4), dt, 11, 1.2, 8.0), positive((3, 4), dt, 12, 0.1, 6.0)
        s.case("zeta", lax.zeta, [zx, zq], tol=SPECIAL_TOL)
        s.case("zeta", lax.zeta, [np.array([1.0, 0.5, 2.0, 2.0, 3.0, 2.0], dt), np.array([1.0, 1.0, 0.0, -1.0, -1.5, np.inf], dt)],
               tol=SPECIAL_TOL, name=f"zeta_special_{dt}")

        # jax.scipy.special
        unary = {
            "gammaln": (js.gammaln, x, True), "loggamma": (js.loggamma, x, False), "gammasgn": (js.gammasgn, x, False),
            "gamma": (js.gamma, rand((3, 7), dt, 13, -4.5, 6.0), True), "digamma": (js.digamma, x, True),
            "erf": (js.erf, x, True), "erfc": (js.erfc, x, True),
            "erfinv": (js.erfinv, rand((3, 7), dt, 14, -0.99, 0.99), True),
            "erfcx": (js.erfcx, rand((3, 7), dt, 15, -3.0, 40.0), True),
            "ndtr": (js.ndtr, x, True), "ndtri": (js.ndtri, rand((3, 7), dt, 16, 1e-6, 1.0), True),
            "log_ndtr": (js.log_ndtr, rand((3, 7), dt, 17, -40.0, 12.0), True),
            "expit": (js.expit, x, True), "logit": (js.logit, rand((3, 7), dt, 18, 0.01, 0.99), True),
            "entr": (js.entr, positive((3, 7), dt, 19, 0.0, 3.0), True),
            "i0": (js.i0, x, True), "i0e": (js.i0e, x, True), "i1": (js.i1, x, True), "i1e": (js.i1e, x, True),
            "factorial": (js.factorial, rand((3, 7), dt, 20, -2.0, 12.0), False),
            "spence": (js.spence, positive((3, 7), dt, 21, 0.01, 6.0), True),
            "expi": (js.expi, rand((3, 7), dt, 22, -20.0, 40.0), True),
            "exp1": (js.exp1, positive((3, 7), dt, 23, 0.05, 30.0), True),
        }
        for name, (fn, v, grad) in unary.items():
            s.case(f"scipy.special.{name}", fn, [v], tol=SPECIAL_TOL, grad=grad, gtol=SPECIAL_GTOL)
        for name, fn in [("gammaln", js.gammaln), ("gamma", js.gamma), ("gammasgn", js.gammasgn), ("i0", js.i0),
                         ("ndtri", js.ndtri), ("spence", js.spence), ("erfcx", js.erfcx), ("expi", js.expi),
                         ("log_ndtr", js.log_ndtr), ("entr", js.entr)]:
            v = np.array([0.0, -0.0, 1.0, -1.0, 0.5, 2.0, -3.5, 1e-6, 40.0, np.inf, -np.inf, np.nan], dt)
            if name == "ndtri":
                v = np.array([0.0, 1.0, 0.5, 1e-20, 1 - 1e-7, np.exp(-2), 0.999, np.nan], dt)
            s.case(f"scipy.special.{name}", fn, [v], tol=SPECIAL_TOL, name=f"scipy_special_{name}_special_{dt}")
        a2, b2 = positive((3, 5), dt, 24, 0.1, 9.0), positive((3, 5), dt, 25, 0.1, 9.0)
        binary = {
            "betaln": (js.betaln, [a2, b2], True), "beta": (js.beta, [a2, b2], True),
            "gammainc": (js.gammainc, [a2, b2], True), "gammaincc": (js.gammaincc, [a2, b2], True),
            "xlogy": (js.xlogy, [rand((3, 5), dt, 26, -2.0, 2.0), b2], True),
            "xlog1py": (js.xlog1py, [rand((3, 5), dt, 27, -2.0, 2.0), b2], True),
            "rel_entr": (js.rel_entr, [rand((3, 5), dt, 28, -0.5, 2.0), rand((3, 5), dt, 29, -0.5, 2.0)], False),
            "kl_div": (js.kl_div, [a2, b2], True),
            "boxcox": (js.boxcox, [b2, rand((3, 5), dt, 30, -2.0, 2.0)], True),
            "boxcox1p": (js.boxcox1p, [b2, rand((3, 5), dt, 31, -2.0, 2.0)], True),
            "poch": (js.poch, [a2, rand((3, 5), dt, 32, 0.0, 4.0)], True),
            "comb": (js.comb, [np.floor(a2 * 2), np.floor(b2)], False),
            "zeta": (js.zeta, [zx, zq], False),
        }
        for name, (fn, v, grad) in binary.items():
            s.case(f"scipy.special.{name}", fn, v, tol=SPECIAL_TOL, grad=grad, gtol=SPECIAL_GTOL)
        s.case("scipy.special.xlogy", js.xlogy, [np.array([0.0, 0.0, 1.0, 2.0], dt), np.array([0.0, np.nan, 0.0, 3.0], dt)],
               tol=SPECIAL_TOL, name=f"scipy_special_xlogy_special_{dt}")
        s.case("scipy.special.betainc", js.betainc, [ba, bb, bx], tol=SPECIAL_TOL)
        s.case("scipy.special.polygamma", js.polygamma, [np.array([0, 1, 2, 3, 4], "int32"),
                                                           positive((5,), dt, 33, 0.2, 6.0)], tol=SPECIAL_TOL)
        s.case("scipy.special.expn", js.expn, [np.array([0, 1, 2, 5, 3, 1], dt), positive((6,), dt, 34, 0.1, 8.0)],
               tol=SPECIAL_TOL)
        s.case("scipy.special.multigammaln", js.multigammaln, [positive((5,), dt, 35, 3.0, 9.0)], {"d": 3},
               tol=SPECIAL_TOL, grad=True, gtol=SPECIAL_GTOL)
        s.case("scipy.special.logsumexp", js.logsumexp, [x], {"axis": (1,)}, tol=SPECIAL_TOL, grad=True,
               gtol=SPECIAL_GTOL)
        s.case("scipy.special.softmax", js.softmax, [x], {"axis": (1,)}, tol=SPECIAL_TOL, grad=True, gtol=SPECIAL_GTOL)
        s.case("scipy.special.log_softmax", js.log_softmax, [x], {"axis": (1,)}, tol=SPECIAL_TOL, grad=True,
               gtol=SPECIAL_GTOL)
        s.case("i0", jnp.i0, [x], tol=SPECIAL_TOL, grad=True, gtol=SPECIAL_GTOL, name=f"jnp_i0_{dt}")
    for m in [0, 1, 2, 7, 12]:
        s.case("kaiser", lambda m, beta: jnp.kaiser(m, beta), [], {"m": m, "beta": 3.5}, tol=SPECIAL_TOL,
               name=f"kaiser_{m}")
    s.case("scipy.special.bernoulli", lambda n: js.bernoulli(n).astype("float32"), [], {"n": 12}, tol=SPECIAL_TOL)
    write_accuracy()


# ---------------------------------------------------------------------------------------------
# Accuracy grids: float32-representable points (so one grid serves both dtypes) and SciPy's
# float64 values at them.
ACCURACY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "accuracy", "special.txt")
N = 400


def grid(lo, hi, n=N, log=False):
    v = np.geomspace(lo, hi, n) if log else np.linspace(lo, hi, n)
    return v.astype(np.float32).astype(np.float64)


def both(*grids):
    return np.concatenate(grids)


def write_accuracy():
    rng = np.random.default_rng(0)

    def pairs(lo1, hi1, lo2, hi2, log=True):
        u = rng.uniform(size=(2, N))
        f = (lambda lo, hi, t: np.exp(np.log(lo) + t * (np.log(hi) - np.log(lo)))) if log else \
            (lambda lo, hi, t: lo + t * (hi - lo))
        return [f(lo1, hi1, u[0]).astype(np.float32).astype(np.float64),
                f(lo2, hi2, u[1]).astype(np.float32).astype(np.float64)]

    neg = -grid(0.01, 9.99, N // 2)
    neg = neg[np.abs(neg - np.round(neg)) > 1e-3]  # off the poles
    lg = both(grid(1e-3, 100, N, log=True), neg)
    entries = [
        ("lgamma", [lg], ss.gammaln(lg)),
        ("digamma", [lg], ss.digamma(lg)),
        ("gamma", [both(grid(0.01, 30, N // 2, log=True), neg)], ss.gamma(both(grid(0.01, 30, N // 2, log=True), neg))),
    ]
    for n in [1, 2, 3]:
        xs = grid(0.05, 50, N, log=True)
        entries.append((f"polygamma_{n}", [np.full_like(xs, n), xs], ss.polygamma(n, xs)))
    zx, zq = pairs(1.1, 30.0, 0.05, 50.0)
    entries.append(("zeta", [zx, zq], ss.zeta(zx, zq)))
    ga, gx = pairs(0.05, 100.0, 0.01, 150.0)
    entries.append(("igamma", [ga, gx], ss.gammainc(ga, gx)))
    entries.append(("igammac", [ga, gx], ss.gammaincc(ga, gx)))
    ba, bb = pairs(0.1, 50.0, 0.1, 50.0)
    bx = rng.uniform(size=N).astype(np.float32).astype(np.float64)
    entries.append(("betainc", [ba, bb, bx], ss.betainc(ba, bb, bx)))
    bz = both(grid(0.0, 8.0, N // 2), grid(8.0, 700.0, N // 2, log=True))
    bz = both(bz, -bz[::7])
    entries += [("bessel_i0e", [bz], ss.i0e(bz)), ("bessel_i1e", [bz], ss.i1e(bz))]
    bs = both(grid(-80, 80, N))
    entries += [("i0", [bs], ss.i0(bs)), ("i1", [bs], ss.i1(bs))]
    ex = both(grid(-5, 5, N // 2), grid(5, 1e4, N // 2, log=True))
    entries.append(("erfcx", [ex], ss.erfcx(ex)))
    nx = grid(-37, 8, N)
    entries.append(("ndtr", [nx], ss.ndtr(nx)))
    p = both(grid(1e-30, 0.1, N // 2, log=True), grid(0.1, 0.99, N // 2))
    entries.append(("ndtri", [p], ss.ndtri(p)))
    lx = both(grid(-1e3, -20, N // 2), grid(-20, 30, N // 2))
    entries.append(("log_ndtr", [lx], ss.log_ndtr(lx)))
    ix = both(-grid(0.01, 600, N // 2, log=True), grid(0.01, 700, N // 2, log=True))
    entries.append(("expi", [ix], ss.expi(ix)))
    e1 = grid(1e-3, 700, N, log=True)
    entries.append(("exp1", [e1], ss.exp1(e1)))
    for n in [2, 5]:
        entries.append((f"expn_{n}", [np.full_like(e1, n), e1], ss.expn(n, e1)))
    sx = grid(1e-3, 100, N, log=True)
    entries.append(("spence", [sx], ss.spence(sx)))
    ei = grid(-0.999, 0.999, N)
    entries.append(("erfinv", [ei], ss.erfinv(ei)))
    write_grids(ACCURACY, entries, "tests/parity/cases_special.py")


def write_grids(path, entries, writer):
    """Writes accuracy grids: `acc <function> <inputs> <points>`, the inputs' lines, the references'."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(f"# SciPy {scipy.__version__} float64 values on float32-representable points, written by "
                f"{writer}; do not edit by hand.\n")
        f.write("# acc <function> <inputs> <points>, then one line per input and one of references (hex floats)\n")
        for name, ins, ref in entries:
            f.write(f"acc {name} {len(ins)} {len(ref)}\n")
            for v in ins:
                f.write(" ".join(fmt_float(t) for t in v) + "\n")
            f.write(" ".join(fmt_float(t) for t in ref) + "\n")
    print(f"{path}: {len(entries)} functions")
