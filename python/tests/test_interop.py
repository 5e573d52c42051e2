"""Zero-copy NumPy and DLPack interop: views share the array's buffer, are read-only and
outlive the Array; laid-out and bfloat16 arrays fall back to a copy. Imports wrap C-contiguous
aligned NumPy memory without a copy (tessel::wrap_host_memory) and copy the rest."""

import gc

import numpy as np
import pytest

import tessel
import tessel.numpy as tnp


def test_numpy_view_is_zero_copy_and_read_only():
    x = tnp.arange(12.0).reshape(3, 4)
    a, b = np.asarray(x), np.asarray(x)
    assert np.shares_memory(a, b) and not a.flags.writeable and a.flags.c_contiguous
    np.testing.assert_array_equal(a, np.arange(12.0).reshape(3, 4))
    with pytest.raises(ValueError):
        a[0, 0] = 5
    c = np.array(x)  # np.array copies by default
    assert not np.shares_memory(a, c) and c.flags.writeable
    assert np.asarray(x, dtype=np.float64).dtype == np.float64


def test_views_outlive_the_array():
    x = tnp.arange(1000.0) * 2.0
    a, d = np.asarray(x), np.from_dlpack(x)
    assert np.shares_memory(a, d)
    del x
    gc.collect()
    assert a.sum() == d.sum() == 2 * 999 * 1000 / 2


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int32, np.int64, np.float16, np.float64, np.complex64,
                                   np.bool_])
def test_dtypes_round_trip(dtype):
    src = (np.arange(6) % 2).astype(dtype).reshape(2, 3)
    x = tessel.from_dlpack(src)
    assert x.dtype == np.dtype(dtype) and isinstance(x, tessel.Array)
    np.testing.assert_array_equal(np.from_dlpack(x), src)
    np.testing.assert_array_equal(np.asarray(x), src)


def test_laid_out_and_bfloat16_arrays_are_copied():
    if tessel.device_count() < 8:
        pytest.skip("needs TESSEL_CPU_DEVICES=8")
    from tessel.sharding import NamedSharding, P
    s = tessel.device_put(np.arange(16, dtype=np.float32), NamedSharding(tessel.make_mesh((8,), ("x",)), P("x")))
    np.testing.assert_array_equal(np.from_dlpack(s), np.arange(16))
    np.testing.assert_array_equal(np.asarray(s), np.arange(16))
    bf = tnp.arange(4.0).astype("bfloat16")
    np.testing.assert_array_equal(np.asarray(bf, dtype=np.float32), [0, 1, 2, 3])


def test_dlpack_protocol_arguments():
    x = tnp.ones(3)
    assert x.__dlpack_device__() == (1, 0)
    with pytest.raises(BufferError, match="stream"):
        x.__dlpack__(stream=1)
    c = np.from_dlpack(x, copy=True)
    assert not np.shares_memory(c, np.asarray(x))


def _address(a):
    return np.asarray(a).__array_interface__["data"][0]


def _gone(ref):
    """Whether weakref `ref` died within a few seconds (the last reference to wrapped memory
    may be a finished computation's, dropped on its stream thread)."""
    import time
    for _ in range(400):
        gc.collect()
        if ref() is None:
            return True
        time.sleep(0.005)
    return False


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.bool_, np.complex128, np.uint8])
def test_asarray_wraps_numpy_memory_without_a_copy(dtype):
    import weakref
    a = (np.arange(12) % 3).astype(dtype).reshape(3, 4)
    want = a.copy()
    x = tnp.asarray(a)
    assert x.dtype == dtype and _address(x) == _address(a)  # the NumPy array's own memory
    np.testing.assert_array_equal(np.asarray(tnp.sum(x, axis=0)), want.sum(axis=0))
    ref = weakref.ref(a)
    del a
    assert not _gone(ref)  # x keeps the NumPy array alive
    np.testing.assert_array_equal(np.asarray(x), want)
    del x
    assert _gone(ref)  # and lets it go with the last Array


def test_asarray_copies_where_it_must_or_is_asked_to():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    strided = a[:, ::2]
    y = tnp.asarray(strided)  # not C-contiguous: copied
    assert _address(y) != _address(a)
    np.testing.assert_array_equal(np.asarray(y), strided)
    with pytest.raises(ValueError, match="not C-contiguous"):
        tnp.asarray(strided, copy=False)
    raw = np.frombuffer(bytearray(4 * 5 + 1), dtype=np.float32, offset=1)  # misaligned floats
    assert not raw.flags.aligned
    np.testing.assert_array_equal(np.asarray(tnp.asarray(raw)), np.zeros(5, np.float32))
    with pytest.raises(ValueError, match="not aligned"):
        tnp.asarray(raw, copy=False)
    with pytest.raises(ValueError, match="copy=False"):
        tnp.asarray([1.0, 2.0], copy=False)
    copied = tnp.array(a)  # jnp.array copies by default: later writes to `a` are not seen
    assert _address(copied) != _address(a)
    a[0, 0] = 100.0
    assert float(copied[0, 0]) == 0.0
    assert _address(tnp.asarray(a, dtype=np.float64)) != _address(a)  # another dtype: a converted copy


def test_from_dlpack_wraps_without_a_copy_and_donation_never_writes_the_memory():
    a = np.arange(256, dtype=np.float32)
    x = tessel.from_dlpack(a)
    assert _address(x) == _address(a)
    assert _address(tessel.from_dlpack(a, copy=True)) != _address(a)
    step = tessel.jit(lambda v: v * 3.0 + 1.0, donate_argnums=0)
    y = step(tnp.asarray(a))
    np.testing.assert_array_equal(np.asarray(y), a * 3 + 1)
    np.testing.assert_array_equal(a, np.arange(256, dtype=np.float32))  # donated, released, not overwritten
    assert _address(y) != _address(a)


# ---- jit's NumPy arguments: wrapped, not copied (python/src/numpy_api.cpp) ----

_copied = tessel._tessel.transform_functions.numpy_copy_bytes


def _refcount_returns_to(a, want):
    """Waits (briefly) for the runtime to drop its references to `a` (`want`: the caller's
    sys.getrefcount(a) before the calls): an argument may be released by the device's thread
    just after the result is ready."""
    import sys
    import time
    for _ in range(200):
        gc.collect()
        if sys.getrefcount(a) == want + 1:  # + this frame's reference
            return True
        time.sleep(0.005)
    return False


def test_jit_numpy_arguments_are_not_copied():
    import sys
    f = tessel.jit(lambda x, y: x * 2.0 + y)
    a = np.arange(256 * 1024, dtype=np.float32)  # 1 MiB
    b = np.ones(256 * 1024, dtype=np.float32)
    refs = sys.getrefcount(a)
    before = _copied()
    for _ in range(3):  # the tracing call, then the cached fast path
        y = f(a, b)
        np.testing.assert_array_equal(np.asarray(y), a * 2 + 1)
    assert _copied() == before, f"jit copied {_copied() - before} bytes of NumPy arguments"
    assert _refcount_returns_to(a, refs), "the wrapped argument was never released"
    # The same program serves tessel arrays of the same avals.
    np.testing.assert_array_equal(np.asarray(f(tnp.asarray(b), b)), 3.0)
    assert f._cache_size() == 1


def test_jit_copies_numpy_arguments_it_cannot_wrap():
    f = tessel.jit(lambda x: x + 1)
    strided = np.arange(64, dtype=np.float32)[::2]  # not C-contiguous
    before = _copied()
    np.testing.assert_array_equal(np.asarray(f(strided)), strided + 1)
    assert _copied() - before == strided.nbytes
    unaligned = np.ndarray((8,), np.float32, buffer=np.zeros(40, np.uint8), offset=1)  # misaligned
    assert not unaligned.flags.aligned
    before = _copied()
    np.testing.assert_array_equal(np.asarray(f(unaligned)), 1.0)
    assert _copied() - before == unaligned.nbytes
    # Python scalars keep their weak default types; NumPy scalars their own.
    assert np.asarray(f(1.5)).dtype == np.float32
    assert np.asarray(f(np.float64(1.5))).dtype == np.float64


def test_jit_donated_numpy_argument_is_never_written():
    a = np.full(1024, 3.0, dtype=np.float32)
    y = tessel.jit(lambda x: x * 2.0, donate_argnums=0)(a)
    np.testing.assert_array_equal(np.asarray(y), 6.0)
    np.testing.assert_array_equal(a, 3.0)


def test_memory_stable_over_100000_jitted_calls_with_numpy_arguments():
    import sys
    from test_transforms import resident_mb
    f = tessel.jit(lambda x: x * 2.0 + 1.0)
    x = np.ones(16, dtype=np.float32)
    for _ in range(1000):  # warm up allocator pools and caches
        y = f(x)
    y.block_until_ready()
    refs = sys.getrefcount(x)
    before, copied = resident_mb(), _copied()
    for _ in range(100_000):
        y = f(x)
    y.block_until_ready()
    np.testing.assert_allclose(np.asarray(y), 3.0)
    assert _copied() == copied
    assert _refcount_returns_to(x, refs)
    assert resident_mb() - before < 16, f"resident memory grew from {before:.1f} MB to {resident_mb():.1f} MB"
