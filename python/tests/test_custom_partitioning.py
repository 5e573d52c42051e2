"""custom_partitioning with Python rules on 8 virtual devices: the partition callback's
per-device code and layouts under a partitioned jit, static arguments, sharding_rule
strings, the plain function elsewhere (eager, grad, vmap), and bad rules."""

import numpy as np
import pytest

import tessel
import tessel.numpy as tnp
from tessel import custom_partitioning
from tessel.sharding import NamedSharding, P

pytestmark = pytest.mark.skipif(tessel.device_count() < 8, reason="needs TESSEL_CPU_DEVICES=8")


@pytest.fixture
def mesh():
    return tessel.make_mesh((8,), ("x",))


def test_partition_callback_runs_per_device(mesh):
    seen = {}

    @custom_partitioning
    def row_sums(x):
        return tnp.sum(x, axis=1)

    def partition(m, arg_shapes, result_shape):
        seen["args"] = [(a.shape, a.sharding.spec) for a in arg_shapes]
        seen["result"] = (result_shape.shape, result_shape.dtype)
        s_in = NamedSharding(m, P("x", None))
        return m, lambda piece: tnp.sum(piece, axis=1) * 1.0, NamedSharding(m, P("x")), (s_in,)

    row_sums.def_partition(partition=partition,
                           infer_sharding_from_operands=lambda m, args, res: NamedSharding(m, P("x")))
    x = np.arange(64, dtype=np.float32).reshape(16, 4)
    np.testing.assert_allclose(np.asarray(row_sums(x)), x.sum(1))  # eagerly: the function itself
    f = tessel.jit(row_sums, in_shardings=NamedSharding(mesh, P("x")), out_shardings=NamedSharding(mesh, P("x")))
    y = f(x)
    np.testing.assert_allclose(np.asarray(y), x.sum(1))
    assert y.sharding == NamedSharding(mesh, P("x"))
    assert seen["args"] == [((16, 4), P("x"))] and seen["result"] == ((16,), np.dtype(np.float32))
    assert "all_gather" not in f.lower(x).compile().as_text()
    # grad and vmap transform the function itself
    np.testing.assert_allclose(np.asarray(tessel.grad(lambda v: tnp.sum(row_sums(v)))(x)), np.ones_like(x))
    np.testing.assert_allclose(np.asarray(tessel.vmap(row_sums)(np.stack([x, x]))), np.stack([x.sum(1)] * 2))


def test_static_args_and_pytrees(mesh):
    got = []

    def scaled(x, factor):
        return {"y": x["a"] * factor}

    f = custom_partitioning(scaled, static_argnums=(1,))

    def partition(factor, m, arg_shapes, result_shape):
        got.append(factor)
        assert set(arg_shapes[0]) == {"a"} and set(result_shape) == {"y"}
        s = NamedSharding(m, P("x"))
        return m, lambda d: {"y": d["a"] * factor}, {"y": s}, ({"a": s},)

    f.def_partition(partition=partition)
    x = np.arange(16, dtype=np.float32)
    s = NamedSharding(mesh, P("x"))
    out = tessel.jit(lambda v: f({"a": v}, 3.0), in_shardings=s, out_shardings=s)(x)
    np.testing.assert_allclose(np.asarray(out["y"]), x * 3)
    assert got == [3.0]


def test_sharding_rule(mesh):
    @custom_partitioning
    def matvec(a, b):
        return a @ b

    matvec.def_partition(partition=lambda m, args, res: (m, lambda a, b: a @ b, res.sharding,
                                                          tuple(x.sharding for x in args)),
                         sharding_rule="i j, j -> i")
    a, b = np.ones((16, 4), np.float32), np.arange(4, dtype=np.float32)
    y = tessel.jit(matvec, in_shardings=(NamedSharding(mesh, P("x")), NamedSharding(mesh, P())))(a, b)
    np.testing.assert_allclose(np.asarray(y), a @ b)
    with pytest.raises(ValueError):
        custom_partitioning(lambda a: a).def_partition(partition=None, sharding_rule="i j -> (")


def test_bad_partition_results(mesh):
    f = custom_partitioning(lambda x: x * 2.0)
    f.def_partition(partition=lambda m, args, res: (m, lambda x: x * 2.0, [], ()))
    s = NamedSharding(mesh, P("x"))
    with pytest.raises(ValueError, match="returned 0 argument sharding"):
        tessel.jit(f, in_shardings=s, out_shardings=s)(np.ones(16, np.float32))
    g = custom_partitioning(lambda x: x)
    g.def_partition(partition=lambda m, args, res: "nonsense")
    with pytest.raises(TypeError, match="must return"):
        tessel.jit(g, in_shardings=s, out_shardings=s)(np.ones(16, np.float32))
    h = custom_partitioning(lambda x: x)
    with pytest.raises(IndexError, match="static_argnums"):
        custom_partitioning(lambda x: x, static_argnums=(2,))(np.ones(2, np.float32))
    h.def_partition(partition=lambda m, args, res: (m, lambda x: x, "x", ("x",)))
    with pytest.raises(TypeError, match="NamedShardings"):
        tessel.jit(h, in_shardings=s, out_shardings=s)(np.ones(16, np.float32))
