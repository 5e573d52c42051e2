"""Parity cases of structured control flow and the other jax.lax functions over callables:
cond, switch, while_loop, fori_loop, scan, stop_gradient, composite, custom_linear_solve,
custom_root and empty. The bodies and branches are fixed functions, named by a parameter;
tests/parity/cases_control.cpp defines the same ones under the same names.

while_loop (and fori_loop with array bounds, which JAX runs as a while_loop) has no reverse
derivative in JAX; those cases record values only, the other loops their jvp and vjp too.
"""
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from parity_lib import FLOATS, MATH_TOL, SUM_TOL, rand

# A loop's floating-point error grows with its steps: both sides evaluate the same formulas,
# but libm's sin and tessel's differ by an ulp now and then.
LOOP_TOL = {"float32": (2e-5, 1e-6), "float64": (1e-13, 1e-15)}

# Five steps of c * 0.9 + sin(c) * i with i up to 5 amplify an ulp of sin by up to 5^5 near a
# cancellation (one element of fori_loop_dynamic lands 3e-5 relative apart in float32).
AMPLIFIED_TOL = {"float32": (1e-4, 1e-5), "float64": (1e-12, 1e-13)}

BRANCHES = [lambda x, y: jnp.sin(x) * y, lambda x, y: jnp.cos(x) + y, lambda x, y: x * x - y]


def conds(s):
    for dt in FLOATS:
        x, y = rand((3, 4), dt, 1), rand((3, 4), dt, 2)
        for pred in [True, False]:
            s.case("cond", lambda p, a, b: lax.cond(p, BRANCHES[0], BRANCHES[1], a, b), [np.array(pred), x, y],
                   tol=MATH_TOL, grad=True)
        # An integer predicate: nonzero is true.
        for pred in [0, 3]:
            s.case("cond", lambda p, a, b: lax.cond(p, BRANCHES[0], BRANCHES[1], a, b),
                   [np.array(pred, np.int32), x, y], tol=MATH_TOL, grad=True)
        # Out-of-range indices clamp.
        for index in [-1, 0, 1, 2, 7]:
            s.case("switch_", lambda i, a, b: lax.switch(i, BRANCHES, a, b), [np.array(index, np.int32), x, y],
                   tol=MATH_TOL, grad=True)
    # Branches returning a tree (a pair) of mixed dtypes.
    s.case("cond", lambda p, a: lax.cond(p, lambda v: (jnp.sum(v), jnp.argmax(v).astype(jnp.int32)),
                                         lambda v: (jnp.prod(v), jnp.argmin(v).astype(jnp.int32)), a),
           [np.array(False), rand((5,), "float32", 3)], {}, tol=SUM_TOL, grad=True, name="cond_tree")


def while_loops(s):
    # The trip count depends on the values: under vmap each element runs its own count.
    for dt in FLOATS:
        x = rand((6,), dt, 10, lo=0.1, hi=3)
        s.case("while_loop", lambda v, body, limit: lax.while_loop(lambda c: c[1] < limit,
                                                            lambda c: (c[0] + 1, c[1] * 1.5 + 0.25),
                                                            (jnp.int32(0), jnp.sum(v)))[0:2],
               [x], {"body": "count", "limit": 100.0}, tol=LOOP_TOL)
        s.case("while_loop", lambda v, body, limit: lax.while_loop(lambda c: jnp.max(c) < limit,
                                                            lambda c: c * 1.5 + jnp.sin(c), v),
               [x], {"body": "elementwise", "limit": 50.0}, tol=LOOP_TOL, name=f"while_loop_elementwise_{dt}")
    s.case("while_loop", lambda v, body, limit: lax.while_loop(lambda c: jnp.min(c[0]) < limit, lambda c: (c[0] * 2, c[1] + c[0]),
                                                        (v, jnp.zeros_like(v))),
           [np.array([1, 3, 7, 100], np.int32)], {"body": "doubling", "limit": 50}, name="while_loop_int32")


def fori_loops(s):
    for dt in FLOATS:
        x = rand((2, 3), dt, 20)
        for lo, hi in [(0, 5), (2, 7), (3, 3), (4, 1)]:
            s.case("fori_loop", lambda v, lower, upper: lax.fori_loop(lower, upper,
                                                                     lambda i, c: c * 0.9 + jnp.sin(c) * i, v),
                   [x], {"lower": lo, "upper": hi}, tol=LOOP_TOL, grad=True)
        # Bounds as arrays: JAX runs a while_loop (values only).
        s.case("fori_loop", lambda lower, upper, v: lax.fori_loop(lower, upper,
                                                                 lambda i, c: c * 0.9 + jnp.sin(c) * i, v),
               [np.array(1, np.int32), np.array(6, np.int32), x], tol=AMPLIFIED_TOL, name=f"fori_loop_dynamic_{dt}")


def scans(s):
    for dt in FLOATS:
        xs = rand((5, 3), dt, 30)
        c0 = rand((3,), dt, 31)
        for reverse in [False, True]:
            s.case("scan", lambda c, x, reverse: lax.scan(lambda a, b: (a * jnp.cos(b) + b, a * b), c, x,
                                                          reverse=reverse),
                   [c0, xs], {"reverse": reverse}, tol=LOOP_TOL, grad=True)
        # No xs: a length.
        s.case("scan", lambda c, length: lax.scan(lambda a, _: (jnp.sin(a) + 1.0, a * 2.0), c, None, length=length),
               [c0], {"length": 4}, tol=LOOP_TOL, grad=True, name=f"scan_length_{dt}")
        # A carry of two arrays and two outputs per step.
        s.case("scan", lambda c, d, x: jax.tree.leaves(lax.scan(
            lambda cd, b: ((cd[0] + b, cd[1] * b), (cd[0] - b, jnp.sum(cd[1]))), (c, d), x)),
               [c0, rand((3,), dt, 32), xs], {}, tol=LOOP_TOL, grad=True, name=f"scan_pairs_{dt}")
    s.case("scan", lambda c, x: lax.scan(lambda a, b: (a + b, a * b), c, x),
           [np.array(1, np.int32), np.arange(1, 7, dtype=np.int32)], {}, name="scan_int32")


def others(s):
    for dt in FLOATS:
        x = rand((3, 4), dt, 40)
        # stop_gradient is the identity on values; its derivative is zero (x * sg(x): dx * x).
        s.case("stop_gradient", lambda v: v * lax.stop_gradient(v) + lax.stop_gradient(jnp.sin(v)), [x],
               tol=MATH_TOL, grad=True)
        # Values only: JAX 0.10.2 has no JVP rule for composite (tessel differentiates the
        # decomposition; tests/numpy/lax_extra_test.cpp checks that).
        s.case("lax.composite", lambda v: lax.composite(lambda u: jnp.log1p(jnp.exp(u)) * 2.0, name="my.softplus2")(v),
               [x], tol=MATH_TOL)
        s.case("lax.empty", lambda shape, dtype: jnp.zeros_like(lax.empty(shape, dtype)), [],
               {"shape": (2, 3), "dtype": dt}, name=f"lax_empty_{dt}")
    s.case("lax.empty", lambda shape, dtype: jnp.zeros_like(lax.empty(shape, dtype)), [],
           {"shape": (4,), "dtype": "int32"}, name="lax_empty_int32")
    for dt in FLOATS:
        a = rand((4, 4), dt, 41) + 4.0 * np.eye(4, dtype=dt)
        b = rand((4,), dt, 42)

        def dense_solve(matvec, r):
            """Solves through matvec alone: the matrix from its columns, then LU (tessel's solvers
            may not capture the differentiated matrix, so both sides solve this way)."""
            cols = jnp.stack([matvec(e) for e in jnp.eye(r.shape[0], dtype=r.dtype)], axis=1)
            return jnp.linalg.solve(cols, r)

        def solve(m, v, symmetric):
            return lax.custom_linear_solve(lambda u: m @ u, v, dense_solve, dense_solve, symmetric=symmetric)
        s.case("lax.custom_linear_solve", lambda m, v, symmetric: solve(m, v, symmetric), [a, b],
               {"symmetric": False}, tol={"float32": (1e-5, 1e-6), "float64": (1e-13, 1e-15)}, grad=True)
        spd = a @ a.T
        s.case("lax.custom_linear_solve", lambda m, v, symmetric: solve(m, v, symmetric), [spd, b],
               {"symmetric": True}, tol={"float32": (1e-5, 1e-6), "float64": (1e-13, 1e-15)}, grad=True)

        # custom_root: the positive square root of p by 8 Newton steps from 1; derivatives by
        # the implicit function theorem (tangent_solve divides by f'(x)).
        def sqrt_root(p):
            def f(x):
                return x * x - p

            def newton(g, x0):
                return lax.fori_loop(0, 8, lambda i, x: x - g(x) / (2.0 * x), x0)
            return lax.custom_root(f, jnp.ones_like(p), newton, lambda g, y: y / g(jnp.ones_like(y)))
        p = rand((5,), dt, 43, lo=0.5, hi=3.0)
        s.case("lax.custom_root", sqrt_root, [p], tol={"float32": (1e-5, 1e-6), "float64": (1e-13, 1e-15)},
               grad=True)


def cases(s):
    conds(s)
    while_loops(s)
    fori_loops(s)
    scans(s)
    others(s)
