"""Meshes, shardings, device_put, jit with shardings, shard_map and the collectives, on the
8 virtual CPU devices the suite runs with (TESSEL_CPU_DEVICES=8)."""

import numpy as np
import pytest

import tessel
import tessel.numpy as tnp
from tessel import lax
from tessel.sharding import Mesh, NamedSharding, P, PartitionSpec, SingleDeviceSharding

pytestmark = pytest.mark.skipif(tessel.device_count() < 8, reason="needs TESSEL_CPU_DEVICES=8")


@pytest.fixture
def mesh():
    return Mesh(np.array(tessel.devices()[:8]).reshape(2, 4), ("x", "y"))


def test_devices_and_processes():
    ds = tessel.devices()
    assert len(ds) == tessel.device_count() >= 8
    assert [d.id for d in ds] == list(range(len(ds)))
    assert ds[0].platform == "cpu" and repr(ds[0]) == "CpuDevice(id=0)"
    assert tessel.local_devices() == ds and tessel.local_device_count() == len(ds)
    assert tessel.process_index() == 0 and tessel.process_count() == 1
    assert ds[3] == tessel.devices()[3] and hash(ds[3]) == 3 and ds[3] != ds[2]


def test_mesh(mesh):
    assert mesh.axis_names == ("x", "y")
    assert dict(mesh.shape) == {"x": 2, "y": 4} and mesh.size == 8
    assert mesh.devices.shape == (2, 4) and mesh.devices[1, 2] == tessel.devices()[6]
    assert mesh == Mesh(np.array(tessel.devices()[:8]).reshape(2, 4), ("x", "y"))
    assert tessel.make_mesh((2, 4), ("x", "y")) == mesh
    with pytest.raises(ValueError, match="axis name"):
        Mesh(np.array(tessel.devices()[:8]).reshape(2, 4), ("x",))
    with pytest.raises(TypeError, match="tessel devices"):
        Mesh(np.arange(4), ("x",))


def test_partition_spec():
    p = P("x", None, ("y", "z"))
    assert isinstance(p, tuple) and p == ("x", None, ("y", "z")) and P is PartitionSpec
    assert repr(p) == "PartitionSpec('x', None, ('y', 'z'))"
    with pytest.raises(TypeError, match="axis name"):
        P(3)


def test_device_put_and_sharding(mesh):
    x = np.arange(32, dtype=np.float32).reshape(8, 4)
    s = NamedSharding(mesh, P("x", "y"))
    y = tessel.device_put(x, s)
    assert y.sharding == s and isinstance(y.sharding, NamedSharding)
    assert y.sharding.spec == P("x", "y") and y.sharding.mesh == mesh
    assert s.shard_shape((8, 4)) == (4, 1)
    np.testing.assert_array_equal(np.asarray(y), x)
    shards = y.addressable_shards
    assert len(shards) == 8 and len(y.devices()) == 8
    for sh in shards:
        np.testing.assert_array_equal(np.asarray(sh.data), x[sh.index])
        assert sh.data.shape == (4, 1)
    idx = s.devices_indices_map((8, 4))
    assert idx[tessel.devices()[5]] == (slice(4, 8), slice(1, 2))
    # resharding and back to one device
    r = tessel.device_put(y, NamedSharding(mesh, P(None, "y")))
    assert r.sharding.spec == P(None, "y")
    np.testing.assert_array_equal(np.asarray(r), x)
    one = tessel.device_put(r, tessel.devices()[2])
    assert isinstance(one.sharding, SingleDeviceSharding) and one.sharding.device == tessel.devices()[2]
    np.testing.assert_array_equal(np.asarray(one), x)
    # a pytree with a prefix of shardings
    t = tessel.device_put({"a": x, "b": (x, x)}, {"a": s, "b": None})
    assert t["a"].sharding == s and isinstance(t["b"][0].sharding, SingleDeviceSharding)


def test_device_put_errors(mesh):
    with pytest.raises(ValueError, match="axis"):
        NamedSharding(mesh, P("z"))
    with pytest.raises(ValueError, match="mesh"):
        tessel.device_put(np.ones(8, np.float32), P("x"))  # a bare spec outside `with mesh:`
    with pytest.raises(TypeError, match="not a sharding"):
        tessel.device_put(np.ones(8, np.float32), "x")


def test_jit_with_shardings(mesh):
    x = np.arange(64, dtype=np.float32).reshape(8, 8)
    s_rows = NamedSharding(mesh, P("x", "y"))
    s_cols = NamedSharding(mesh, P(None, "x"))
    f = tessel.jit(lambda a: tnp.sin(a) * 2.0 + a.T, in_shardings=s_rows, out_shardings=s_cols)
    y = f(x)
    np.testing.assert_allclose(np.asarray(y), np.sin(x) * 2 + x.T, rtol=1e-6)
    assert y.sharding == s_cols
    # an argument laid out otherwise is resharded inside the program
    y2 = f(tessel.device_put(x, NamedSharding(mesh, P("y"))))
    np.testing.assert_allclose(np.asarray(y2), np.asarray(y))
    text = f.lower(x).compile().as_text()
    assert "cpu:" in text or "device" in text


def test_jit_sum_shows_collective(mesh):
    s = NamedSharding(mesh, P(("x", "y")))
    f = tessel.jit(lambda a: tnp.sum(a), in_shardings=(s,))
    x = np.arange(64, dtype=np.float32)
    assert float(f(x)) == float(x.sum())
    compiled = f.lower(x).compile().as_text()
    assert "psum" in compiled or "all_reduce" in compiled or "allreduce" in compiled, compiled


def test_with_sharding_constraint_in_jit(mesh):
    s = NamedSharding(mesh, P("y"))

    @tessel.jit
    def f(a):
        b = lax.with_sharding_constraint(a * 2.0, s)
        return b + 1.0

    x = np.arange(16, dtype=np.float32)
    np.testing.assert_allclose(np.asarray(f(x)), x * 2 + 1)
    assert "sharding" in tessel.make_program(f, x) or "constraint" in tessel.make_program(f, x)


def test_context_mesh_and_bare_specs(mesh):
    x = np.arange(32, dtype=np.float32).reshape(8, 4)
    with mesh:
        y = tessel.jit(lambda a: a, out_shardings=P("x"))(x)
        z = tessel.jit(lambda a: a * 3.0, in_shardings=P("x"), out_shardings=P("x", "y"))(y)
    assert y.sharding == NamedSharding(mesh, P("x"))
    assert z.sharding == NamedSharding(mesh, P("x", "y"))
    np.testing.assert_allclose(np.asarray(z), x * 3)


def test_jit_shardings_errors(mesh):
    s = NamedSharding(mesh, P("x"))
    f = tessel.jit(lambda a, b: a + b, in_shardings=(s, s, s))
    with pytest.raises(ValueError, match="in_shardings has 3 entries"):
        f(np.ones(8, np.float32), np.ones(8, np.float32))


def test_shard_map_psum(mesh):
    m = tessel.make_mesh((8,), ("i",))
    total = tessel.shard_map(lambda x: lax.psum(tnp.sum(x), "i"), mesh=m, in_specs=(P("i"),), out_specs=P())
    x = np.arange(64, dtype=np.float32)
    assert float(total(x)) == 2016.0
    assert float(tessel.jit(total)(x)) == 2016.0


def test_shard_map_collectives(mesh):
    x = np.arange(16, dtype=np.float32).reshape(2, 8)

    def body(a):  # a: (1, 2) per device
        g = lax.all_gather(a, "y", axis=1, tiled=True)  # (1, 8)
        i = lax.axis_index("y").astype(np.float32)
        shifted = lax.ppermute(a, "y", [(j, (j + 1) % 4) for j in range(4)])
        return g, shifted, a * 0 + i, lax.pmax(a, ("x", "y"))

    f = tessel.shard_map(body, mesh=mesh, in_specs=P("x", "y"), out_specs=(P("x"), P("x", "y"), P("x", "y"), P()))
    g, shifted, idx, mx = f(x)
    np.testing.assert_array_equal(np.asarray(g), x)
    np.testing.assert_array_equal(np.asarray(shifted), np.roll(x.reshape(2, 4, 2), 1, axis=1).reshape(2, 8))
    np.testing.assert_array_equal(np.asarray(idx), np.repeat(np.arange(4), 2)[None].repeat(2, 0).astype(np.float32))
    np.testing.assert_array_equal(np.asarray(mx), np.array([[14.0, 15.0]]))


def test_shard_map_grad_and_vmap(mesh):
    m = tessel.make_mesh((8,), ("i",))
    f = tessel.shard_map(lambda x: lax.psum(tnp.sum(x * x), "i"), mesh=m, in_specs=P("i"), out_specs=P())
    x = np.arange(16, dtype=np.float32)
    np.testing.assert_allclose(np.asarray(tessel.grad(f)(x)), 2 * x)
    batched = tessel.vmap(f)(np.stack([x, 2 * x]))
    np.testing.assert_allclose(np.asarray(batched), [np.sum(x * x), np.sum(4 * x * x)])


def test_shard_map_pytrees_and_errors(mesh):
    m = tessel.make_mesh((8,), ("i",))
    f = tessel.shard_map(lambda d: {"s": d["a"] + d["b"]}, mesh=m, in_specs=({"a": P("i"), "b": P("i")},),
                         out_specs={"s": P("i")})
    x = np.arange(8, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(f({"a": x, "b": x})["s"]), 2 * x)
    bad = tessel.shard_map(lambda a: (a, a), mesh=m, in_specs=P("i"), out_specs=(P("i"),))
    with pytest.raises(ValueError, match="out_specs"):
        bad(x)
    with pytest.raises(ValueError):
        tessel.shard_map(lambda a: a, mesh=m, in_specs=P("i"), out_specs=P("i"))(np.arange(6, dtype=np.float32))


def test_shard_map_out_specs_is_a_tree_prefix_of_the_result():
    m = tessel.make_mesh((8,), ("i",))
    x = np.arange(16, dtype=np.float32)

    def body(a):
        return (a * 2, a + 1), {"total": lax.psum(tnp.sum(a), "i"), "first": a[:1]}

    # (P("i"), {...}) covers both leaves of the inner tuple with one spec, as JAX allows.
    f = tessel.shard_map(body, mesh=m, in_specs=P("i"), out_specs=(P("i"), {"total": P(), "first": P("i")}))
    for g in (f, tessel.jit(f)):
        (doubled, plus_one), d = g(x)
        np.testing.assert_array_equal(np.asarray(doubled), 2 * x)
        np.testing.assert_array_equal(np.asarray(plus_one), x + 1)
        assert float(d["total"]) == float(x.sum())
        np.testing.assert_array_equal(np.asarray(d["first"]), x[::2])
    grads = tessel.grad(lambda v: tnp.sum(f(v)[0][0]) + f(v)[1]["total"])(x)
    np.testing.assert_allclose(np.asarray(grads), np.full(16, 3.0))  # d sum(2x)/dx + d psum(sum(x))/dx
    bad = tessel.shard_map(body, mesh=m, in_specs=P("i"), out_specs=(P("i"), {"other": P()}))
    with pytest.raises(ValueError, match="out_specs"):
        bad(x)


def test_jit_cache_keys_on_the_context_mesh():
    x = np.arange(8, dtype=np.float32)
    eight = tessel.make_mesh((8,), ("i",))
    four = tessel.make_mesh((4,), ("i",), tessel.devices()[:4])
    f = tessel.jit(lambda a: a * 2, out_shardings=P("i"))  # a bare spec: resolved against `with mesh:`
    per_device = tessel.jit(tessel.shard_map(lambda a: a * 0 + a.shape[0], in_specs=P("i"), out_specs=P("i")))
    for mesh, n in [(eight, 8), (four, 4), (eight, 8), (four, 4)]:
        with mesh:
            y = f(x)
            assert len(y.sharding.device_set) == n
            np.testing.assert_array_equal(np.asarray(y), 2 * x)
            np.testing.assert_array_equal(np.asarray(per_device(x)), np.full(8, 8 // n))  # shard size
            assert len(f(a=x).sharding.device_set) == n  # the keyword path keys on the mesh too
    assert f._cache_size() == 4  # (positional, keyword) x (two meshes)
    with pytest.raises(ValueError, match="mesh"):
        f(x)  # no context mesh for the bare spec
