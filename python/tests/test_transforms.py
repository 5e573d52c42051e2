"""jit, grad, value_and_grad, jvp, vjp, linearize, vmap and custom rules over pytrees of
Python functions; gradients against finite differences."""

from collections import namedtuple

import numpy as np
import pytest

import tessel
import tessel.numpy as tnp
from tessel.tree_util import register_pytree_node_class, tree_flatten, tree_map, tree_unflatten


def finite_difference(f, x, eps=1e-3):
    x = np.asarray(x, np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (float(f((x + d).astype(np.float32))) - float(f((x - d).astype(np.float32)))) / (2 * eps)
    return g


def test_jit_values_and_cache():
    calls = []

    def f(x, y):
        calls.append(1)
        return tnp.sin(x) * y + 1.0

    jf = tessel.jit(f)
    x, y = np.linspace(0, 1, 5).astype(np.float32), np.float32(2.0)
    np.testing.assert_allclose(np.asarray(jf(x, y)), np.sin(x) * 2 + 1, rtol=1e-6)
    jf(x + 1, y)
    assert len(calls) == 1 and jf._cache_size() == 1  # same avals: cached
    jf(np.ones(3, np.float32), y)
    assert len(calls) == 2  # new shape: traced again
    jf(x.astype(np.float64), y)
    assert len(calls) == 3  # new dtype
    jf(x, 2.0)
    assert len(calls) == 4  # a weak scalar is another signature than a float32 array


def test_jit_static_argnums_and_pytrees():
    traces = []

    @tessel.jit
    def g(params, batch):
        traces.append(1)
        return {"out": params["w"] * batch[0] + params["b"], "n": (batch[1], None)}

    params = {"w": tnp.ones(3), "b": tnp.zeros(3)}
    out = g(params, (tnp.arange(3.0), tnp.ones(2)))
    assert set(out) == {"n", "out"} and out["n"][1] is None
    np.testing.assert_allclose(np.asarray(out["out"]), [0, 1, 2])

    def h(x, n, mode="add"):
        traces.append(n)
        return x + n if mode == "add" else x * n

    jh = tessel.jit(h, static_argnums=1, static_argnames="mode")
    np.testing.assert_allclose(np.asarray(jh(tnp.ones(2), 3)), [4, 4])
    np.testing.assert_allclose(np.asarray(jh(tnp.ones(2), 3, mode="mul")), [3, 3])
    jh(tnp.ones(2), 3)
    jh(tnp.ones(2), 4)
    assert traces.count(3) == 2 and traces.count(4) == 1


def test_jit_lower_compile_and_make_program():
    f = tessel.jit(lambda x: tnp.sin(x) + x)
    lowered = f.lower(tnp.ones(3))
    assert "sin" in lowered.as_text()
    assert lowered.compile().as_text()
    text = tessel.make_program(lambda x, y: x * y + 1.0, tnp.ones(2), tnp.ones(2))
    assert "mul" in text and "f32[2]" in text
    assert tessel.make_jaxpr(tnp.cos)(tnp.ones(2)).count("cos") == 1


def test_jit_donation_invalidates():
    f = tessel.jit(lambda s: s * 2.0, donate_argnums=0)
    s = tnp.ones(4)
    out = f(s)
    np.testing.assert_allclose(np.asarray(out), 2.0)
    with pytest.raises(ValueError):
        np.asarray(s)


def test_grad_against_finite_differences():
    def f(x):
        return tnp.sum(tnp.tanh(x) ** 2 + tnp.sin(x * 3.0))

    x = np.array([0.1, -0.4, 0.7, 1.2], np.float32)
    np.testing.assert_allclose(np.asarray(tessel.grad(f)(x)), finite_difference(f, x), rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(np.asarray(tessel.jit(tessel.grad(f))(x)), finite_difference(f, x), rtol=2e-3,
                               atol=2e-3)


def test_grad_argnums_pytrees_and_aux():
    def loss(params, x, y):
        pred = x @ params["w"] + params["b"]
        return tnp.mean((pred - y) ** 2), pred

    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 3)).astype(np.float32)
    y = rng.standard_normal(5).astype(np.float32)
    params = {"w": tnp.zeros(3), "b": tnp.asarray(np.float32(0.5))}
    (value, pred), grads = tessel.value_and_grad(loss, has_aux=True)(params, x, y)
    assert set(grads) == {"w", "b"} and grads["w"].shape == (3,) and pred.shape == (5,)
    np.testing.assert_allclose(float(value), np.mean((0.5 - y) ** 2), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(grads["w"]), 2 * x.T @ (0.5 - y) / 5, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(float(grads["b"]), 2 * np.mean(0.5 - y), rtol=1e-5)
    gx, gy = tessel.grad(lambda a, b: tnp.sum(a * b), argnums=(0, 1))(tnp.arange(3.0), tnp.ones(3))
    np.testing.assert_allclose(np.asarray(gx), 1.0)
    np.testing.assert_allclose(np.asarray(gy), [0, 1, 2])


def test_higher_order_and_nesting():
    f = lambda x: x ** 3  # noqa: E731
    assert float(tessel.grad(tessel.grad(f))(2.0)) == pytest.approx(12.0)
    per_example = tessel.vmap(tessel.grad(lambda x: tnp.sum(x ** 2)))(tnp.arange(6.0).reshape(2, 3))
    np.testing.assert_allclose(np.asarray(per_example), 2 * np.arange(6.0).reshape(2, 3))


def test_jvp_vjp_linearize():
    f = lambda x, y: (tnp.sin(x) * y, x + y)  # noqa: E731
    x, y = tnp.asarray(np.float32(0.3)), tnp.asarray(np.float32(2.0))
    (o1, o2), (t1, t2) = tessel.jvp(f, (x, y), (tnp.asarray(np.float32(1.0)), tnp.asarray(np.float32(0.0))))
    assert float(t1) == pytest.approx(2 * np.cos(0.3), rel=1e-6) and float(t2) == pytest.approx(1.0)
    out, f_vjp = tessel.vjp(f, x, y)
    cx, cy = f_vjp((tnp.asarray(np.float32(1.0)), tnp.asarray(np.float32(0.0))))
    assert float(cx) == pytest.approx(2 * np.cos(0.3), rel=1e-6) and float(cy) == pytest.approx(np.sin(0.3), rel=1e-6)
    y0, f_jvp = tessel.linearize(tnp.exp, np.float32(1.0))
    assert float(f_jvp(np.float32(2.0))) == pytest.approx(2 * np.e, rel=1e-6)


def test_vmap_axes():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.arange(4, dtype=np.float32)
    np.testing.assert_allclose(np.asarray(tessel.vmap(tnp.dot, in_axes=(0, None))(a, b)), a @ b)
    np.testing.assert_allclose(np.asarray(tessel.vmap(lambda r: r * 2, in_axes=1, out_axes=1)(a)), a * 2)
    np.testing.assert_allclose(np.asarray(tessel.vmap(tnp.sum, in_axes=1)(a)), a.sum(0))
    out = tessel.vmap(lambda d: {"s": d["x"] + d["y"]}, in_axes=({"x": 0, "y": None},))({"x": a, "y": b})
    np.testing.assert_allclose(np.asarray(out["s"]), a + b)
    out = tessel.vmap(lambda r: (r, r.sum()), out_axes=(1, 0))(a)
    np.testing.assert_allclose(np.asarray(out[0]), a.T)
    with pytest.raises(ValueError, match="in_axes"):
        tessel.vmap(tnp.dot, in_axes=(0,))(a, b)


def test_custom_jvp_and_vjp():
    @tessel.custom_jvp
    def softclip(x):
        return tnp.tanh(x)

    @softclip.defjvp
    def softclip_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return softclip(x), t * 10.0

    assert float(tessel.grad(softclip)(0.5)) == pytest.approx(10.0)

    @tessel.custom_vjp
    def clip_gradient(x):
        return x

    def fwd(x):
        return x, None

    def bwd(_, g):
        return (tnp.clip(g, -1.0, 1.0),)

    clip_gradient.defvjp(fwd, bwd)
    assert float(tessel.grad(lambda x: 5.0 * clip_gradient(x))(2.0)) == pytest.approx(1.0)


Point = namedtuple("Point", ["x", "y"])


@register_pytree_node_class
class Pair:
    def __init__(self, a, b):
        self.a, self.b = a, b

    def tree_flatten(self):
        return (self.a, self.b), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


def test_pytrees():
    tree = {"b": [1, (2, None)], "a": Point(3, 4), "c": Pair(5, 6)}
    leaves, treedef = tree_flatten(tree)
    assert leaves == [3, 4, 1, 2, 5, 6]
    back = tree_unflatten(treedef, leaves)
    assert back["a"] == Point(3, 4) and back["b"] == [1, (2, None)] and back["c"].b == 6
    assert tree_map(lambda v: v * 10, tree)["a"] == Point(30, 40)
    g = tessel.grad(lambda p: p.x * p.y + p.x)(Point(tnp.asarray(2.0), tnp.asarray(3.0)))
    assert isinstance(g, Point) and float(g.x) == 4.0 and float(g.y) == 2.0
    out = tessel.jit(lambda p: Pair(p.b, p.a))(Pair(tnp.ones(1), tnp.zeros(1)))
    assert isinstance(out, Pair) and float(out.a[0]) == 0.0


def resident_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def test_memory_stable_over_100000_jitted_calls():
    f = tessel.jit(lambda x: x * 2.0 + 1.0)
    x = tnp.ones(16)
    for _ in range(1000):  # warm up allocator pools and caches
        y = f(x)
    y.block_until_ready()
    before = resident_mb()
    for _ in range(100_000):
        y = f(x)
    y.block_until_ready()
    assert f._cache_size() == 1
    np.testing.assert_allclose(np.asarray(y), 3.0)
    assert resident_mb() - before < 16, f"resident memory grew from {before:.1f} MB to {resident_mb():.1f} MB"


def test_transformations_of_jitted_functions_compose():
    def loss(params, x):
        return tnp.sum((x @ params["w"] + params["b"]) ** 2)

    params = {"w": tnp.ones(3), "b": tnp.asarray(np.float32(0.5))}
    x = np.ones((2, 3), np.float32)
    want = tessel.grad(loss)(params, x)
    for f in (tessel.jit(tessel.grad(tessel.jit(loss))), tessel.grad(tessel.jit(loss)), tessel.jit(tessel.grad(loss))):
        got = f(params, x)
        assert set(got) == {"w", "b"} and got["b"].shape == ()
        np.testing.assert_allclose(np.asarray(got["w"]), np.asarray(want["w"]))
        np.testing.assert_allclose(float(got["b"]), float(want["b"]))
