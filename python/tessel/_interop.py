"""DLPack both ways (`np.from_dlpack(x)`, `tessel.from_dlpack(t)`) and the buffer protocol
for tessel.Array. Exports are zero-copy read-only views of the array's buffer when it is
one buffer on one device of this process (tessel/host_view.h); arrays laid out over
devices are assembled into a copy first. Imports copy once (tessel owns its buffers)."""

import numpy as np

from ._tessel import Array
from ._tessel import interop_functions as _i

__all__ = ["from_dlpack"]

_KDLCPU = 1


def _capsule(x):
    """A DLPack capsule over x's buffer (over an assembled copy for a laid-out array)."""
    v = _i.dlpack_view(x)
    return v if v is not None else _i.dlpack_view(Array(x._numpy()))


def _dlpack(self, *, stream=None, max_version=None, dl_device=None, copy=None):
    if stream is not None and stream != -1:
        raise BufferError("tessel.Array.__dlpack__: tessel arrays live in CPU memory; there is no stream to "
                          "synchronize with (pass stream=None)")
    if dl_device is not None and tuple(dl_device) != (_KDLCPU, 0):
        raise BufferError(f"tessel.Array.__dlpack__: the array is in CPU memory, not on device {dl_device}")
    if copy:
        return np.array(np.asarray(self)).__dlpack__()
    return _capsule(self)


def _dlpack_device(self):
    return (_KDLCPU, 0)


Array.__dlpack__ = _dlpack
Array.__dlpack_device__ = _dlpack_device


def from_dlpack(x, device=None, copy=None):
    """An Array from any object exporting DLPack or NumPy's protocols (a NumPy array, a
    tensor of another library in CPU memory), copied once into tessel's memory."""
    del copy  # tessel always copies on import
    a = np.from_dlpack(x) if hasattr(x, "__dlpack__") else np.asarray(x)
    out = Array(a)
    if device is not None:
        from .sharding import device_put
        out = device_put(out, device)
    return out
