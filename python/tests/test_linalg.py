"""tessel.numpy.linalg and tessel.scipy.linalg against NumPy's values (SciPy's where it is
installed), and under jit, grad and vmap."""

import math

import numpy as np
import pytest

import tessel
import tessel.numpy as tnp
import tessel.numpy.linalg as tla
import tessel.scipy.linalg as tsla

RNG = np.random.default_rng(1)
A = RNG.normal(size=(4, 4))
SPD = A @ A.T + 4 * np.eye(4)
B = RNG.normal(size=(4, 2))
RECT = RNG.normal(size=(5, 3))


def close(got, want, rtol=1e-9, atol=1e-9):
    np.testing.assert_allclose(np.asarray(got), want, rtol=rtol, atol=atol)


def test_tessel_numpy_linalg_is_importable_as_a_module():
    assert tnp.linalg is tla
    import tessel.numpy.fft as tfft
    assert tfft is tnp.fft


@pytest.mark.parametrize("name", ["inv", "det", "eigvalsh", "svdvals", "cholesky", "matrix_transpose"])
def test_functions_of_one_matrix_against_numpy(name):
    want = {"svdvals": lambda a: np.linalg.svd(a, compute_uv=False),
            "matrix_transpose": lambda a: a.T}.get(name, getattr(np.linalg, name, None))
    close(getattr(tla, name)(SPD), want(SPD))


def test_solve_slogdet_pinv_lstsq_rank_cond_against_numpy():
    close(tla.solve(A, B), np.linalg.solve(A, B))
    sign, logdet = tla.slogdet(A)
    want_sign, want_logdet = np.linalg.slogdet(A)
    close(sign, want_sign)
    close(logdet, want_logdet)
    assert tla.slogdet(A).logabsdet is not None  # a named tuple, as JAX's
    close(tla.pinv(RECT), np.linalg.pinv(RECT))
    x, resid, rank, s = tla.lstsq(RECT, RNG.normal(size=5))
    want = np.linalg.lstsq(RECT, np.asarray(RECT @ np.ones(3)), rcond=None)[0]
    close(tla.lstsq(RECT, RECT @ np.ones(3))[0], want)
    assert int(rank) == 3 and np.asarray(s).shape == (3,)
    assert int(tla.matrix_rank(np.outer(np.arange(3.0), np.arange(4.0)))) == 1
    close(tla.cond(A), np.linalg.cond(A), rtol=1e-8)
    close(tla.cond(A, "fro"), np.linalg.cond(A, "fro"), rtol=1e-8)


def test_decompositions_reconstruct_their_matrix():
    q, r = tla.qr(RECT)
    close(np.asarray(q) @ np.asarray(r), RECT)
    assert np.asarray(tla.qr(RECT, mode="r")).shape == (3, 3)
    u, s, vh = tla.svd(RECT, full_matrices=False)
    close(np.asarray(u) * np.asarray(s) @ np.asarray(vh), RECT)
    w, v = tla.eigh(SPD)
    close(w, np.linalg.eigvalsh(SPD))
    close(np.asarray(v) @ np.diag(np.asarray(w)) @ np.asarray(v).T, SPD)
    w, v = tla.eig(A)
    close(np.asarray(A) @ np.asarray(v), np.asarray(v) * np.asarray(w), atol=1e-8)
    close(np.sort_complex(np.asarray(tla.eigvals(A))), np.sort_complex(np.linalg.eigvals(A)), atol=1e-8)


@pytest.mark.parametrize("ord_, axis", [(None, None), (1, None), (np.inf, None), ("fro", None), ("nuc", None),
                                        (2, 1), (-np.inf, 0), (3, 1)])
def test_norm_against_numpy(ord_, axis):
    close(tla.norm(A, ord_, axis), np.linalg.norm(A, ord_, axis))


def test_composed_functions_against_numpy():
    close(tla.vector_norm(A, ord=1), np.abs(A).sum())
    close(tla.matrix_norm(A, ord=np.inf), np.linalg.norm(A, np.inf))
    close(tla.matrix_power(A, 3), np.linalg.matrix_power(A, 3))
    close(tla.matrix_power(A, -2), np.linalg.matrix_power(A, -2), rtol=1e-8)
    close(tla.multi_dot([A, B, B.T]), A @ B @ B.T)
    close(tla.cross(np.arange(3.0), np.ones(3)), np.cross(np.arange(3.0), np.ones(3)))
    close(tla.vecdot(A, A), (A * A).sum(-1))
    close(tla.trace(A, offset=1), np.trace(A, offset=1))
    close(tla.diagonal(A, offset=-1), np.diagonal(A, offset=-1))
    close(tla.outer(np.arange(3.0), np.arange(2.0)), np.outer(np.arange(3.0), np.arange(2.0)))
    close(tla.tensordot(A, B, axes=([1], [0])), np.tensordot(A, B, axes=([1], [0])))
    t = RNG.normal(size=(2, 3, 6))
    close(tla.tensorinv(t, ind=2), np.linalg.tensorinv(t, ind=2), rtol=1e-8)
    close(tla.tensorsolve(t, np.ones((2, 3))), np.linalg.tensorsolve(t, np.ones((2, 3))), rtol=1e-8)


def test_float32_stays_float32_and_python_scalars_are_weak():
    a32 = SPD.astype(np.float32)
    assert tla.inv(a32).dtype == np.float32
    assert tla.cross(np.ones(3, np.float32), [1.0, 2.0, 3.0]).dtype == np.float32


def test_det_gradient_is_det_times_inverse_transpose():
    g = tessel.grad(tla.det)(A)
    close(g, np.linalg.det(A) * np.linalg.inv(A).T, rtol=1e-8)
    g = tessel.jit(tessel.grad(lambda a: tla.slogdet(a).logabsdet))(A)
    close(g, np.linalg.inv(A).T, rtol=1e-8)


def test_solve_gradient_against_finite_differences():
    f = lambda a: tnp.sum(tla.solve(a, B) ** 2)  # noqa: E731
    g = np.asarray(tessel.grad(f)(A))
    eps = 1e-6
    for i, j in [(0, 0), (1, 3), (3, 2)]:
        d = np.zeros_like(A)
        d[i, j] = eps
        fd = (float(f(A + d)) - float(f(A - d))) / (2 * eps)
        assert abs(g[i, j] - fd) < 1e-5 * max(1.0, abs(fd))


def test_jit_and_vmap_match_eager():
    batch = np.stack([SPD, 2 * SPD, SPD + np.eye(4)])
    close(tessel.vmap(tla.det)(batch), np.linalg.det(batch), rtol=1e-9)
    close(tessel.jit(tla.inv)(SPD), np.linalg.inv(SPD))
    close(tessel.jit(lambda a: tla.eigh(a).eigenvalues)(SPD), np.linalg.eigvalsh(SPD))


def test_errors_name_the_operation():
    with pytest.raises(ValueError, match="qr"):
        tla.qr(A, mode="bogus")
    with pytest.raises(ValueError, match="solve_triangular"):
        tsla.solve_triangular(np.triu(A), B, trans="X")
    with pytest.raises(ValueError):
        tla.inv(np.ones((2, 3)))


# ---- tessel.scipy.linalg ----

def test_triangular_cholesky_and_lu_solves():
    upper = np.triu(A) + 4 * np.eye(4)
    close(np.asarray(upper) @ np.asarray(tsla.solve_triangular(upper, B)), B)
    close(np.asarray(upper).T @ np.asarray(tsla.solve_triangular(upper, B, trans="T")), B)
    c = tsla.cho_factor(SPD)
    close(tsla.cho_solve(c, B), np.linalg.solve(SPD, B))
    close(tsla.cholesky(SPD), np.linalg.cholesky(SPD).T)
    close(tsla.cholesky(SPD, lower=True), np.linalg.cholesky(SPD))
    p, l, u = tsla.lu(A)
    close(np.asarray(p) @ np.asarray(l) @ np.asarray(u), A)
    lu_piv = tsla.lu_factor(A)
    close(tsla.lu_solve(lu_piv, B), np.linalg.solve(A, B))
    close(tsla.lu_solve(lu_piv, B, trans=1), np.linalg.solve(A.T, B))
    q, r = tsla.qr(RECT)
    assert np.asarray(q).shape == (5, 5)
    close(np.asarray(q) @ np.asarray(r), RECT)
    assert len(tsla.qr(RECT, mode="r")) == 1
    close(tsla.det(A), np.linalg.det(A))
    w, v = tsla.eigh(SPD)
    close(w, np.linalg.eigvalsh(SPD))


def test_structured_matrices():
    c, r = np.array([1.0, 2.0, 3.0]), np.array([1.0, 5.0, 6.0, 7.0])
    want = np.array([[1, 5, 6, 7], [2, 1, 5, 6], [3, 2, 1, 5]], float)
    close(tsla.toeplitz(c, r), want)
    close(tsla.hankel(c), np.array([[1, 2, 3], [2, 3, 0], [3, 0, 0]], float))
    close(tsla.circulant(c), np.array([[1, 3, 2], [2, 1, 3], [3, 2, 1]], float))
    close(tsla.block_diag(np.ones((1, 2)), 3.0), np.array([[1, 1, 0], [0, 0, 3]], float))


def test_matrix_functions():
    t = 0.7
    close(tsla.expm(np.array([[0.0, -t], [t, 0.0]])), np.array([[math.cos(t), -math.sin(t)], [math.sin(t), math.cos(t)]]))
    x = np.asarray(tsla.sqrtm(SPD))
    close(x @ x, SPD, atol=1e-8)
    tt, z = tsla.schur(A)
    close(np.asarray(z) @ np.asarray(tt) @ np.asarray(z).T, A, atol=1e-8)
    u, p = tsla.polar(A)
    close(np.asarray(u) @ np.asarray(p), A, atol=1e-8)
    d, e = np.array([2.0, 3.0, 4.0]), np.array([0.5, 0.25])
    dense = np.diag(d) + np.diag(e, 1) + np.diag(e, -1)
    close(tsla.eigh_tridiagonal(d, e, eigvals_only=True), np.linalg.eigvalsh(dense))
    # expm is differentiable: d/dt expm(t A) at t = 0 is A
    g = tessel.jacfwd(lambda s: tsla.expm(s * A))(0.0)
    close(g, A, rtol=1e-6, atol=1e-8)


def test_against_scipy_when_installed():
    sl = pytest.importorskip("scipy.linalg")
    close(tsla.expm(A), sl.expm(A), rtol=1e-8)
    close(tsla.toeplitz(np.arange(1.0, 5.0)), sl.toeplitz(np.arange(1.0, 5.0)))
    close(np.abs(np.asarray(tsla.svd(A)[1])), sl.svd(A)[1])
