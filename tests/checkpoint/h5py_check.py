"""Reads a tessel checkpoint with h5py and compares every array with raw bytes written beside
it (tests/checkpoint/checkpoint_test.cpp, CheckpointIo.H5pyReadsEveryArray).
Usage: h5py_check.py CHECKPOINT RAW_DIR   (RAW_DIR/<dtype>.bin: the leaf's bytes, row-major)
Prints "h5py_check: N arrays equal" or the differences, and exits non-zero on any."""
import pathlib
import sys

import h5py
import numpy as np

path, raw_dir = sys.argv[1], pathlib.Path(sys.argv[2])
bad, n = [], 0
with h5py.File(path, "r") as f:
    assert f.attrs["tessel_format"] == 1
    for name, ds in f.items():
        dtype = ds.attrs["tessel_dtype"].decode() if isinstance(ds.attrs["tessel_dtype"], bytes) else ds.attrs["tessel_dtype"]
        raw = (raw_dir / f"{dtype}.bin").read_bytes()
        if dtype == "bfloat16":  # h5py has no bfloat16: read through HDF5's conversion to float32
            got = ds.astype("f4")[()]
            want = (np.frombuffer(raw, np.uint16).astype(np.uint32) << 16).view(np.float32).reshape(ds.shape)
            same = np.array_equal(got, want, equal_nan=True)
        else:
            np_dtype = {"bool": np.bool_}.get(dtype, dtype)
            got = ds[()]
            want = np.frombuffer(raw, np_dtype).reshape(ds.shape)
            same = got.dtype == want.dtype and got.tobytes() == want.tobytes()
        n += 1
        if not same:
            bad.append(f"{name} ({dtype}): h5py reads {got.dtype} {got.ravel()[:4]}, tessel saved {want.ravel()[:4]}")
for b in bad:
    print(b)
print(f"h5py_check: {n} arrays {'equal' if not bad else 'checked, %d differ' % len(bad)}")
sys.exit(1 if bad else 0)
