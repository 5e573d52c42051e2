"""lax.cond/switch/while_loop/fori_loop/scan, checkpoint and jacfwd/jacrev/hessian."""

import numpy as np
import pytest

import tessel
import tessel.lax as lax
import tessel.numpy as tnp


def test_cond_and_switch():
    f = lambda x: lax.cond(x > 0, lambda v: v * 2.0, lambda v: -v, x)  # noqa: E731
    assert float(f(tnp.asarray(3.0))) == 6.0 and float(f(tnp.asarray(-3.0))) == 3.0
    assert float(tessel.jit(f)(tnp.asarray(-1.5))) == 1.5
    assert float(tessel.grad(f)(tnp.asarray(3.0))) == 2.0
    branches = [lambda v: v + 1.0, lambda v: v * 10.0, lambda v: v - 1.0]
    assert [float(lax.switch(i, branches, tnp.asarray(2.0))) for i in range(3)] == [3.0, 20.0, 1.0]
    out = tessel.vmap(lambda p, v: lax.cond(p, lambda a: a, lambda a: -a, v))(np.array([True, False]),
                                                                               np.array([1.0, 1.0], np.float32))
    np.testing.assert_array_equal(np.asarray(out), [1.0, -1.0])


def test_while_and_fori():
    n = lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 2.0), (0, tnp.asarray(1.0)))
    assert int(n[0]) == 10 and float(n[1]) == 1024.0
    total = lax.fori_loop(0, 5, lambda i, acc: acc + i, tnp.asarray(0))
    assert int(total) == 10
    g = tessel.grad(lambda x: lax.fori_loop(0, 3, lambda i, v: v * x, tnp.asarray(1.0)))(tnp.asarray(2.0))
    assert float(g) == pytest.approx(12.0)  # d/dx x^3


def test_scan():
    xs = np.arange(5, dtype=np.float32)
    carry, ys = lax.scan(lambda c, x: (c + x, c * x), tnp.asarray(np.float32(0.0)), xs)
    assert float(carry) == 10.0
    np.testing.assert_array_equal(np.asarray(ys), np.concatenate([[0], np.cumsum(xs)[:-1]]) * xs)
    carry, ys = lax.scan(lambda c, _: (c * 2, c), tnp.asarray(1), None, length=4)
    assert int(carry) == 16 and np.asarray(ys).tolist() == [1, 2, 4, 8]
    _, rev = lax.scan(lambda c, x: (c, x), 0, xs, reverse=True)
    np.testing.assert_array_equal(np.asarray(rev), xs)


def test_checkpoint_gives_the_same_gradient():
    f = lambda x: tnp.sum(tnp.sin(tnp.sin(x)) ** 2)  # noqa: E731
    x = np.linspace(0, 1, 4).astype(np.float32)
    for policy in ("nothing_saveable", "dots_saveable", "everything_saveable"):
        np.testing.assert_allclose(np.asarray(tessel.grad(tessel.checkpoint(f, policy=policy))(x)),
                                   np.asarray(tessel.grad(f)(x)), rtol=1e-6)
    with pytest.raises(ValueError, match="policy"):
        tessel.checkpoint(f, policy="bogus")(x)


def test_jacobians():
    a = np.array([[1.0, 2.0, 0.5], [0.0, -1.0, 3.0]], np.float32)
    f = lambda x: tnp.tanh(tnp.matmul(a, x))  # noqa: E731
    x = np.array([0.1, 0.2, -0.3], np.float32)
    want = (1 - np.tanh(a @ x) ** 2)[:, None] * a
    np.testing.assert_allclose(np.asarray(tessel.jacfwd(f)(x)), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(tessel.jacrev(f)(x)), want, rtol=1e-5, atol=1e-6)
    h = tessel.hessian(lambda v: tnp.sum(v ** 3))(x)
    np.testing.assert_allclose(np.asarray(h), np.diag(6 * x), rtol=1e-5, atol=1e-6)
