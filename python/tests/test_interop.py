"""Zero-copy NumPy and DLPack interop: views share the array's buffer, are read-only and
outlive the Array; laid-out and bfloat16 arrays fall back to a copy; imports copy once."""

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
