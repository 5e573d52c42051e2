"""DLPack both ways (`np.from_dlpack(x)`, `tessel.from_dlpack(t)`) and the buffer protocol
for tessel.Array. Exports are zero-copy read-only views of the array's buffer when it is
one buffer on one device of this process (tessel/host_view.h); arrays laid out over
devices are assembled into a copy first. Imports wrap C-contiguous aligned memory without
a copy (tessel::wrap_host_memory) and copy the rest once."""

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
    tensor of another library in CPU memory): without a copy when the memory is
    C-contiguous and aligned (the Array keeps the exporter alive; do not write to the memory
    while the Array is alive), else copied once. copy=True always copies; copy=False raises
    a ValueError where a copy is needed."""
    a = np.from_dlpack(x) if hasattr(x, "__dlpack__") else np.asarray(x)
    out = None if copy else _i.wrap_numpy(a, copy is False)
    if out is None:
        out = Array(a)
    if device is not None:
        from .sharding import device_put
        out = device_put(out, device)
    return out
