"""tessel.Array: construction, NumPy protocols, printing, weak types, operators, indexing."""

import numpy as np
import pytest

import tessel
import tessel.numpy as tnp


def test_from_numpy_keeps_dtype_and_values():
    for dt in [np.float32, np.float64, np.int32, np.int64, np.uint8, np.int8, np.float16, np.complex64, np.bool_]:
        a = (np.arange(6).reshape(2, 3) % 3).astype(dt)
        x = tessel.Array(a)
        assert x.dtype == np.dtype(dt)
        assert x.shape == (2, 3) and x.ndim == 2 and x.size == 6
        np.testing.assert_array_equal(np.asarray(x), a)


def test_non_contiguous_numpy_input():
    a = np.arange(12, dtype=np.float32).reshape(3, 4).T
    np.testing.assert_array_equal(np.asarray(tessel.Array(a)), a)


def test_lists_take_jax_default_dtypes():
    assert tnp.array([1.0, 2.0]).dtype == np.float32
    assert tnp.array([1, 2]).dtype == np.int32
    assert tnp.array([[True, False]]).dtype == np.bool_
    assert tnp.array([1.0, 2.0], dtype=tnp.float64).dtype == np.float64


def test_python_scalars_are_weak():
    assert tnp.asarray(1.0).weak_type and tnp.asarray(1.0).dtype == np.float32
    assert tnp.asarray(3).dtype == np.int32 and tnp.asarray(3).weak_type
    x16 = tnp.ones(3, dtype=tnp.float16)
    assert (x16 * 2.0).dtype == np.float16
    i8 = tnp.ones(3, dtype=tnp.int8)
    assert (i8 + 1).dtype == np.int8
    assert (tnp.ones(3, dtype=tnp.int32) * 0.5).dtype == np.float32
    x64 = tnp.ones(2, dtype=tnp.float64)
    np.testing.assert_array_equal(np.asarray(x64 * 0.1), np.full(2, 0.1))
    assert not (tnp.ones(3) + 1.0).weak_type


def test_repr_like_jax():
    assert repr(tnp.array([1.0, 2.0])) == "Array([1., 2.], dtype=float32)"
    assert repr(tnp.asarray(1.0)) == "Array(1., dtype=float32, weak_type=True)"
    assert repr(tnp.array([1, 2])) == "Array([1, 2], dtype=int32)"
    assert str(tnp.array([1.0, 2.0])) == "[1. 2.]"


def test_array_protocol_and_scalars():
    x = tnp.arange(3.0)
    assert np.asarray(x, dtype=np.float64).dtype == np.float64
    assert float(tnp.asarray(2.5)) == 2.5 and int(tnp.asarray(7)) == 7 and bool(tnp.asarray(True))
    assert tnp.asarray(2.5).item() == 2.5 and isinstance(tnp.asarray(4).item(), int)
    assert complex(tnp.asarray(1 + 2j)) == 1 + 2j
    assert len(x) == 3 and [float(v) for v in x] == [0.0, 1.0, 2.0]
    assert x.tolist() == [0.0, 1.0, 2.0]
    assert [10, 20, 30][tnp.asarray(1)] == 20  # __index__


@pytest.mark.parametrize("op", ["+", "-", "*", "/", "//", "%", "**", "<", "<=", ">", ">=", "==", "!="])
def test_binary_operators_broadcast_like_numpy(op):
    a = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    b = np.array([1.5, 2.0, 3.0], dtype=np.float32)
    expect = eval(f"a {op} b")
    got = eval(f"tessel.Array(a) {op} tessel.Array(b)")
    np.testing.assert_allclose(np.asarray(got), expect, rtol=1e-6)
    # with a NumPy operand on either side, and a scalar
    np.testing.assert_allclose(np.asarray(eval(f"a {op} tessel.Array(b)")), expect, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(eval(f"tessel.Array(a) {op} 2.0")), eval(f"a {op} np.float32(2.0)"),
                               rtol=1e-6)
    np.testing.assert_allclose(np.asarray(eval(f"2.0 {op} tessel.Array(a)")), eval(f"np.float32(2.0) {op} a"),
                               rtol=1e-6)


def test_integer_and_bitwise_operators():
    a, b = np.array([5, -3, 12], dtype=np.int32), np.array([2, 2, 5], dtype=np.int32)
    x, y = tessel.Array(a), tessel.Array(b)
    for got, want in [(x & y, a & b), (x | y, a | b), (x ^ y, a ^ b), (~x, ~a), (x << 1, a << 1), (x >> 1, a >> 1),
                      (-x, -a), (abs(x), np.abs(a)), (x // y, a // b), (x % y, a % b)]:
        np.testing.assert_array_equal(np.asarray(got), want)


def test_matmul_operator():
    a = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    b = np.random.default_rng(1).standard_normal((4, 2)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(tessel.Array(a) @ tessel.Array(b)), a @ b, rtol=1e-5, atol=1e-6)


def test_indexing():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = tessel.Array(a)
    for idx in [1, -1, (0, 2), (slice(None), 1), (Ellipsis, 2), (None, 0), (slice(1, None), slice(None, None, -1)),
                (0, slice(0, 3, 2), 1), np.array([1, 0]), (0, np.array([2, 0, 1]))]:
        np.testing.assert_array_equal(np.asarray(x[idx]), a[idx])


def test_at_updates():
    x = tnp.zeros(5)
    np.testing.assert_array_equal(np.asarray(x.at[1].set(3.0)), [0, 3, 0, 0, 0])
    np.testing.assert_array_equal(np.asarray(x.at[1:3].add(1.0)), [0, 1, 1, 0, 0])
    np.testing.assert_array_equal(np.asarray(tnp.ones(3).at[np.array([0, 0, 2])].add(1.0)), [3, 1, 2])
    np.testing.assert_array_equal(np.asarray(tnp.ones(3).at[0].multiply(4.0)), [4, 1, 1])
    np.testing.assert_array_equal(np.asarray(tnp.ones(3).at[2].max(7.0)), [1, 1, 7])
    assert np.isnan(float(tnp.ones(3).at[5].get(mode="fill")))


def test_methods():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = tessel.Array(a)
    np.testing.assert_allclose(np.asarray(x.sum(axis=0)), a.sum(axis=0))
    np.testing.assert_allclose(np.asarray(x.mean()), a.mean())
    np.testing.assert_allclose(np.asarray(x.max(axis=1, keepdims=True)), a.max(axis=1, keepdims=True))
    np.testing.assert_array_equal(np.asarray(x.T), a.T)
    np.testing.assert_array_equal(np.asarray(x.reshape(3, 2)), a.reshape(3, 2))
    np.testing.assert_array_equal(np.asarray(x.reshape((6,))), a.reshape(6))
    np.testing.assert_array_equal(np.asarray(x.astype(np.int32)), a.astype(np.int32))
    np.testing.assert_array_equal(np.asarray(x.transpose(1, 0)), a.T)
    assert x.block_until_ready() is not None and x.is_ready()


def test_arrays_are_unhashable():
    with pytest.raises(TypeError):
        hash(tnp.ones(2))


def test_numpy_scalars_stay_rank_0():
    for v in (np.float32(1.5), np.int64(3), np.bool_(True), np.array(2.0)):
        x = tessel.Array(v)
        assert x.shape == () and x.dtype == np.asarray(v).dtype and not x.weak_type
