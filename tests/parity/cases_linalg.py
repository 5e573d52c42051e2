"""Parity cases of include/tessel/linalg.h: jax.numpy.linalg (keys `linalg.*`), jax.scipy.linalg
(`scipy.linalg.*`) and lax.linalg (`lax.linalg.*`). `func` keys the entries of
tests/parity/cases_linalg.cpp.

Factorizations whose factors are unique only up to a phase per column (QR's Q and R rows,
eigenvectors, singular vectors) are compared after the same gauge fix on both sides
(`fix_columns`, `fix_qr` here; the C++ entries apply the same formulas), so JAX's and
tessel's LAPACK paths need not choose the same signs. Eigenvalues of `eig` are compared in
LAPACK's order (both call geev).
"""
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np
from jax import lax

from parity_lib import rand

# LAPACK results of well-conditioned 3x3 to 5x5 matrices: float32 agrees to ~1e-6 relative,
# entries near zero (the other triangle, small vector components) need an absolute bound.
LINALG_TOL = {"float32": (2e-4, 2e-5), "float64": (1e-10, 1e-12),
              "complex64": (2e-4, 2e-5), "complex128": (1e-10, 1e-12)}
DTYPES = ["float32", "float64", "complex64"]


def int32_result(fn, k):
    """fn with its k-th result (a rank: JAX's default int) as tessel's int32."""
    def wrapped(*args, **kw):
        r = list(fn(*args, **kw))
        r[k] = r[k].astype(jnp.int32)
        return tuple(r)
    return wrapped


def fix_columns(v):
    """v with each column's phase chosen so its largest-magnitude entry is real positive."""
    idx = jnp.argmax(jnp.abs(v), axis=-2, keepdims=True)
    p = jnp.take_along_axis(v, idx, axis=-2)
    return v * (jnp.conj(p) / jnp.abs(p))


def column_phase(v):
    idx = jnp.argmax(jnp.abs(v), axis=-2, keepdims=True)
    p = jnp.take_along_axis(v, idx, axis=-2)
    return jnp.conj(p) / jnp.abs(p)


def fix_qr(q, r):
    """Q and R with R's diagonal real positive (the same product)."""
    d = jnp.diagonal(r, axis1=-2, axis2=-1)
    d = jnp.conj(d) / jnp.abs(d)
    return q * jnp.conj(d)[..., None, :], r * d[..., :, None]


def fix_r(r):
    """R alone, its rows' phases fixed as in fix_qr."""
    return fix_qr(jnp.zeros(r.shape[:-2] + (1, r.shape[-2]), r.dtype), r)[1]


def fix_svd(u, s, vh):
    c = column_phase(u)
    return u * c, s, vh * jnp.conj(jnp.swapaxes(c, -1, -2))


def general(shape, dt, seed):
    """A well-conditioned matrix (diagonally dominant)."""
    a = rand(shape, dt, seed, lo=-1, hi=1)
    n = shape[-1]
    return (a + n * np.eye(n, dtype=dt)).astype(dt)


def spd(shape, dt, seed):
    """A Hermitian positive definite matrix."""
    a = rand(shape, dt, seed, lo=-1, hi=1)
    h = a @ np.conj(np.swapaxes(a, -1, -2))
    return (h + shape[-1] * np.eye(shape[-1], dtype=dt)).astype(dt)


def numpy_linalg(s):
    T = LINALG_TOL
    for i, dt in enumerate(DTYPES):
        a, p = general((2, 4, 4), dt, i), spd((2, 4, 4), dt, 10 + i)
        b = rand((2, 4, 3), dt, 20 + i)
        s.case("linalg.cholesky", lambda x, upper: jnp.linalg.cholesky(x, upper=upper), [p], {"upper": False},
               tol=T, grad=True)
        s.case("linalg.cholesky", lambda x, upper: jnp.linalg.cholesky(x, upper=upper), [p], {"upper": True}, tol=T)
        s.case("linalg.solve", jnp.linalg.solve, [a, b], tol=T, grad=True)
        s.case("linalg.inv", jnp.linalg.inv, [a], tol=T, grad=True)
        s.case("linalg.det", jnp.linalg.det, [a], tol=T, grad=True)
        s.case("linalg.slogdet", jnp.linalg.slogdet, [a], tol=T, grad=True)
        s.case("linalg.eigvalsh", jnp.linalg.eigvalsh, [p], tol=T, grad=True)
        s.case("linalg.eigh", lambda x: (lambda w, v: (w, fix_columns(v)))(*jnp.linalg.eigh(x)), [p], tol=T,
               grad=True)
        s.case("linalg.svdvals", jnp.linalg.svdvals, [a], tol=T, grad=True)
        tall = rand((2, 5, 3), dt, 30 + i)
        s.case("linalg.svd", lambda x: fix_svd(*jnp.linalg.svd(x, full_matrices=False)), [tall], tol=T, grad=True)
        for mode in ["reduced", "complete", "r"]:
            fn = (lambda x, mode: fix_r(jnp.linalg.qr(x, mode))) if mode == "r" else \
                (lambda x, mode: fix_qr(*jnp.linalg.qr(x, mode)))
            m = tall if mode != "complete" else np.swapaxes(tall, -1, -2)  # complete: Q of a tall one is not unique
            s.case("linalg.qr", fn, [m], {"mode": mode}, tol=T, grad=mode == "reduced",
                   name=f"linalg_qr_{dt}_{mode}")
        s.case("linalg.pinv", jnp.linalg.pinv, [tall], tol=T, grad=True)
        s.case("linalg.matrix_rank", lambda x: jnp.linalg.matrix_rank(x).astype(jnp.int32), [tall])
        s.case("linalg.cond", jnp.linalg.cond, [a], tol=T)
        s.case("linalg.lstsq", int32_result(jnp.linalg.lstsq, 2), [tall[0], rand((5, 2), dt, 40 + i)], tol=T)
        s.case("linalg.matrix_power", jnp.linalg.matrix_power, [a], {"n": 3}, tol=T, grad=True)
        s.case("linalg.matrix_power", jnp.linalg.matrix_power, [a], {"n": -2}, tol=T)
        s.case("linalg.eigvals", jnp.linalg.eigvals, [a[0]], tol=T)
        s.case("linalg.eig", lambda x: (lambda w, v: (w, fix_columns(v)))(*jnp.linalg.eig(x)), [a[0]], tol=T)
        x = rand((3, 4), dt, 50 + i)
        s.case("linalg.vector_norm", lambda v, ord, axis, keepdims: jnp.linalg.vector_norm(v, axis=axis,
                                                                                          keepdims=keepdims, ord=ord),
               [x], {"ord": 2, "axis": None, "keepdims": False}, tol=T, grad=True)
        s.case("linalg.vector_norm", lambda v, ord, axis, keepdims: jnp.linalg.vector_norm(v, axis=axis,
                                                                                          keepdims=keepdims, ord=ord),
               [x], {"ord": 1, "axis": (1,), "keepdims": True}, tol=T, grad=True)
        for ord in ["fro", "nuc", 1, -1, 2, "inf"]:
            o = float("inf") if ord == "inf" else ord
            s.case("linalg.matrix_norm", lambda v, ord, _o=o: jnp.linalg.matrix_norm(v, ord=_o), [a], {"ord": ord},
                   tol=T, name=f"linalg_matrix_norm_{dt}_{ord}")
        s.case("linalg.norm", lambda v: jnp.linalg.norm(v), [x], tol=T, grad=True)
        s.case("linalg.cross", jnp.linalg.cross, [rand((4, 3), dt, 60 + i), rand((4, 3), dt, 61 + i)], tol=T,
               grad=True)
        s.case("linalg.multi_dot", lambda p_, q_, r_: jnp.linalg.multi_dot([p_, q_, r_]),
               [rand((2, 5), dt, 62), rand((5, 3), dt, 63), rand((3, 4), dt, 64)], tol=T, grad=True)
        s.case("linalg.diagonal", jnp.linalg.diagonal, [tall], {"offset": 1}, grad=True)
        s.case("linalg.matrix_transpose", jnp.linalg.matrix_transpose, [tall], grad=True)
        s.case("linalg.vecdot", jnp.linalg.vecdot, [x, rand((3, 4), dt, 65)], {"axis": -1}, tol=T, grad=True)
        s.case("linalg.outer", jnp.linalg.outer, [x[0], x[1]], grad=True)
        p3, q3 = rand((2, 3, 4), dt, 66), rand((3, 4, 5), dt, 67)
        s.case("linalg.tensordot", lambda p_, q_, axes: jnp.linalg.tensordot(p_, q_, axes=axes), [p3, q3],
               {"axes": 2}, tol=T, grad=True)
        s.case("tensordot", lambda p_, q_, a_axes, b_axes: jnp.tensordot(p_, q_, axes=(a_axes, b_axes)),
               [p3, rand((4, 2, 6), dt, 68)], {"a_axes": [2, 0], "b_axes": [0, -2]}, tol=T, grad=True)
        s.case("linalg.trace", jnp.linalg.trace, [tall], {"offset": -1}, tol=T, grad=True)
    t = general((6, 6), "float64", 71).reshape(2, 3, 6)
    s.case("linalg.tensorsolve", jnp.linalg.tensorsolve, [t, rand((2, 3), "float64", 72)], tol=LINALG_TOL)
    s.case("linalg.tensorinv", jnp.linalg.tensorinv, [general((6, 6), "float64", 73).reshape(6, 2, 3)],
           {"ind": 1}, tol=LINALG_TOL)


def scipy_linalg(s):
    T = LINALG_TOL
    for i, dt in enumerate(DTYPES):
        a, p = general((2, 4, 4), dt, 100 + i), spd((2, 4, 4), dt, 110 + i)
        b = rand((2, 4, 3), dt, 120 + i)
        tri = np.tril(a)
        for trans in [0, 1, 2]:
            s.case("scipy.linalg.solve_triangular", jsl.solve_triangular, [tri, b],
                   {"trans": trans, "lower": True, "unit_diagonal": False}, tol=T, grad=True)
        s.case("scipy.linalg.solve_triangular", jsl.solve_triangular, [np.triu(a), b],
               {"trans": 0, "lower": False, "unit_diagonal": True}, tol=T, grad=True)
        s.case("scipy.linalg.cho_factor", lambda x, lower: jsl.cho_factor(x, lower)[0], [p], {"lower": True}, tol=T)
        s.case("scipy.linalg.cho_solve", lambda x, y, lower: jsl.cho_solve(jsl.cho_factor(x, lower), y), [p, b],
               {"lower": False}, tol=T, grad=True)
        s.case("scipy.linalg.lu", jsl.lu, [a[0]], tol=T, grad=True)  # JAX: 2-D only
        s.case("scipy.linalg.lu_factor", jsl.lu_factor, [a], tol=T)
        for trans in [0, 1]:
            s.case("scipy.linalg.lu_solve", lambda x, y, trans: jsl.lu_solve(jsl.lu_factor(x), y, trans), [a, b],
                   {"trans": trans}, tol=T, grad=True)
        tall = rand((5, 3), dt, 130 + i)
        s.case("scipy.linalg.qr", lambda x, mode: fix_qr(*jsl.qr(x, mode=mode)), [tall], {"mode": "economic"},
               tol=T, grad=True)
        s.case("scipy.linalg.svd", lambda x: fix_svd(*jsl.svd(x, full_matrices=False)), [tall], tol=T)
        s.case("scipy.linalg.expm", jsl.expm, [rand((3, 3), dt, 140 + i, lo=-1, hi=1)], tol=T, grad=True)
        s.case("scipy.linalg.polar", lambda x, side: jsl.polar(x, side), [general((4, 4), dt, 150 + i)],
               {"side": "right"}, tol=T)
        c, r = rand((4,), dt, 160 + i), rand((3,), dt, 161 + i)
        s.case("scipy.linalg.toeplitz", jsl.toeplitz, [c, r], grad=True)
        s.case("scipy.linalg.toeplitz", jsl.toeplitz, [c], grad=True)
        s.case("scipy.linalg.hankel", jsl.hankel, [c, r], grad=True)
        s.case("scipy.linalg.circulant", jsl.circulant, [c], grad=True)
        s.case("scipy.linalg.block_diag", jsl.block_diag, [rand((2, 3), dt, 162), rand((1, 1), dt, 163)], grad=True)


def lax_linalg(s):
    T = LINALG_TOL
    for i, dt in enumerate(DTYPES):
        a, p = general((2, 4, 4), dt, 200 + i), spd((2, 4, 4), dt, 210 + i)
        s.case("lax.linalg.cholesky", lax.linalg.cholesky, [p], tol=T, grad=True)
        for left, lower, ta in [(True, True, False), (False, False, True)]:
            b = rand((2, 4, 3) if left else (2, 3, 4), dt, 220 + i)
            s.case("lax.linalg.triangular_solve", lax.linalg.triangular_solve, [np.tril(a) if lower else np.triu(a), b],
                   {"left_side": left, "lower": lower, "transpose_a": ta, "conjugate_a": False,
                    "unit_diagonal": False}, tol=T, grad=True)
        s.case("lax.linalg.lu", lax.linalg.lu, [a], tol=T)
        if i == 0:
            s.case("lax.linalg.lu_pivots_to_permutation", lax.linalg.lu_pivots_to_permutation,
                   [np.array([[2, 2, 3], [1, 3, 3]], np.int32)], {"permutation_size": 4})
        tall = rand((5, 3), dt, 230 + i)
        s.case("lax.linalg.qr", lambda x, full_matrices: fix_qr(*lax.linalg.qr(x, full_matrices=full_matrices)),
               [tall], {"full_matrices": False}, tol=T, grad=True)
        s.case("lax.linalg.eigh", lambda x: (lambda v, w: (fix_columns(v), w))(*lax.linalg.eigh(x)), [p], tol=T,
               grad=True)
        s.case("lax.linalg.svd", lambda x, compute_uv: fix_svd(*lax.linalg.svd(x, full_matrices=False)), [tall],
               {"compute_uv": True}, tol=T)
        s.case("lax.linalg.svd", lambda x, compute_uv: lax.linalg.svd(x, compute_uv=False), [tall],
               {"compute_uv": False}, tol=T, name=f"lax_linalg_svd_{dt}_values")


def tridiagonal_and_roots(s):
    T = LINALG_TOL
    for i, dt in enumerate(["float32", "float64"]):
        d = rand((2, 5), dt, 300 + i, lo=3, hi=4)
        dl, du = rand((2, 5), dt, 301 + i), rand((2, 5), dt, 302 + i)
        dl[:, 0] = 0  # JAX's convention: dl[0] and du[-1] lie outside the matrix
        du[:, -1] = 0
        s.case("lax.linalg.tridiagonal_solve", lax.linalg.tridiagonal_solve, [dl, d, du, rand((2, 5, 3), dt, 303 + i)],
               tol=T, grad=True)
        # JAX computes eigenvalues only (bisection); tessel through the dense eigh.
        s.case("scipy.linalg.eigh_tridiagonal", lambda dd, ee, eigvals_only: jsl.eigh_tridiagonal(dd, ee, eigvals_only=True),
               [d[0], rand((4,), dt, 304 + i)], {"eigvals_only": True}, tol=T)
        # The principal square root of a positive definite matrix is unique; JAX's is complex.
        s.case("scipy.linalg.sqrtm", jsl.sqrtm, [spd((4, 4), dt, 305 + i)], tol=T)


def fix_schur(t, z):
    """T and Z with each Schur vector's phase fixed as in fix_columns (T -> D^H T D)."""
    d = column_phase(z)[..., 0, :]
    return jnp.conj(d)[..., :, None] * t * d[..., None, :], z * d[..., None, :]


def eig_and_schur(s):
    """lax.linalg.eig with both eigenvector sets, and the Schur decompositions of lax.linalg
    and jax.scipy.linalg (gees on both sides; vectors compared after the phase fix)."""
    T = LINALG_TOL
    for i, dt in enumerate(DTYPES):
        a = rand((4, 4), dt, 400 + i)
        s.case("lax.linalg.eig", lambda x: (lambda w, vl, vr: (w, fix_columns(vl), fix_columns(vr)))(
            *lax.linalg.eig(x)), [a], tol=T)
        s.case("lax.linalg.eig", lambda x, compute_left_eigenvectors: lax.linalg.eig(
            x, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0], [rand((2, 3, 3), dt, 410 + i)],
            {"compute_left_eigenvectors": False}, tol=T)
        s.case("lax.linalg.schur", lambda x: fix_schur(*lax.linalg.schur(x)), [a], tol=T)
        for output in ["real", "complex"]:
            if output == "real" or dt != "complex64":
                s.case("scipy.linalg.schur", lambda x, output: fix_schur(*jsl.schur(x, output=output)),
                       [rand((2, 4, 4), dt, 420 + i)], {"output": output}, tol=T)


def cases(s):
    numpy_linalg(s)
    scipy_linalg(s)
    lax_linalg(s)
    tridiagonal_and_roots(s)
    eig_and_schur(s)
