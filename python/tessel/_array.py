"""The Python-level methods of tessel.Array: printing like jax.Array, NumPy's `__array__`,
iteration, `.at[...]` and the NumPy-style reduction and shape methods."""

import numpy as np

from ._tessel import Array
from ._tessel import interop_functions as _interop
from ._tessel import numpy_functions as _np_fns


def _repr(self):
    if self._is_tracer:
        return f"Traced<{self.dtype}{list(self.shape)}>"
    text = np.array2string(self._numpy(), separator=", ", prefix="Array(")
    weak = ", weak_type=True" if self.weak_type else ""
    return f"Array({text}, dtype={getattr(self.dtype, 'name', self.dtype)}{weak})"


def _str(self):
    if self._is_tracer:
        return _repr(self)
    return str(self._numpy())


def _array(self, dtype=None, copy=None):
    # Zero-copy: a read-only view of the array's buffer where there is one (tessel/host_view.h);
    # arrays laid out over devices and bfloat16 ones are copied.
    a = _interop.numpy_view(self)
    if a is None:
        a = self._numpy()
    elif copy:
        a = a.copy()
    return a if dtype is None else a.astype(dtype, copy=False)


def _iter(self):
    if self.ndim == 0:
        raise TypeError("iteration over a 0-d Array")
    for i in range(self.shape[0]):
        yield self[i]


class _AtIndexer:
    """`x.at`: `x.at[index].set(v)`, `.add`, `.multiply`, `.min`, `.max`, `.get` (jax.Array.at)."""

    __slots__ = ("_x",)

    def __init__(self, x):
        self._x = x

    def __getitem__(self, index):
        return _AtRef(self._x, index)


class _AtRef:
    __slots__ = ("_x", "_index")

    def __init__(self, x, index):
        self._x = x
        self._index = index

    def get(self, mode=None, fill_value=None):
        return self._x._at(self._index, "get", None, mode, fill_value)

    def set(self, values, mode=None):
        return self._x._at(self._index, "set", values, mode, None)

    def add(self, values, mode=None):
        return self._x._at(self._index, "add", values, mode, None)

    def multiply(self, values, mode=None):
        return self._x._at(self._index, "multiply", values, mode, None)

    mul = multiply

    def min(self, values, mode=None):
        return self._x._at(self._index, "min", values, mode, None)

    def max(self, values, mode=None):
        return self._x._at(self._index, "max", values, mode, None)


def _reduction(name):
    fn = getattr(_np_fns, name)

    def method(self, axis=None, dtype=None, keepdims=False):
        return fn(self, axis=axis, dtype=dtype, keepdims=keepdims)

    method.__name__ = name
    method.__doc__ = f"tessel.numpy.{name} of this array."
    return method


def _transpose(self, *axes):
    if len(axes) == 1 and not isinstance(axes[0], int):
        axes = axes[0]
    return _np_fns.transpose(self, axes if axes else None)


def _install():
    Array.__repr__ = _repr
    Array.__str__ = _str
    Array.__array__ = _array
    Array.__iter__ = _iter
    Array.__hash__ = None
    Array.__array_ufunc__ = None  # NumPy defers `ndarray + Array` to Array.__radd__
    Array.at = property(_AtIndexer, doc="Functional indexed updates: x.at[i].set(v) (jax.Array.at).")
    for name in ("sum", "prod", "max", "min", "mean", "any", "all", "ptp"):
        setattr(Array, name, _reduction(name))
    Array.var = lambda self, axis=None, dtype=None, ddof=0, keepdims=False: _np_fns.var(self, axis, dtype, ddof, keepdims)
    Array.std = lambda self, axis=None, dtype=None, ddof=0, keepdims=False: _np_fns.std(self, axis, dtype, ddof, keepdims)
    Array.argmax = lambda self, axis=None, keepdims=False: _np_fns.argmax(self, axis, keepdims)
    Array.argmin = lambda self, axis=None, keepdims=False: _np_fns.argmin(self, axis, keepdims)
    Array.cumsum = lambda self, axis=None, dtype=None: _np_fns.cumsum(self, axis, dtype)
    Array.cumprod = lambda self, axis=None, dtype=None: _np_fns.cumprod(self, axis, dtype)
    Array.ravel = lambda self: _np_fns.ravel(self)
    Array.flatten = Array.ravel
    Array.squeeze = lambda self, axis=None: _np_fns.squeeze(self, axis)
    Array.transpose = _transpose
    Array.swapaxes = lambda self, a, b: _np_fns.swapaxes(self, a, b)
    Array.clip = lambda self, min=None, max=None: _np_fns.clip(self, min, max)
    Array.conj = lambda self: _np_fns.conj(self)
    Array.conjugate = Array.conj
    Array.real = property(lambda self: _np_fns.real(self))
    Array.imag = property(lambda self: _np_fns.imag(self))
    Array.copy = lambda self: _np_fns.copy(self)
    Array.dot = lambda self, b: _np_fns.dot(self, b)
    Array.take = lambda self, indices, axis=None, mode=None: _np_fns.take(self, indices, axis, mode)
    Array.tolist = lambda self: self._numpy().tolist()
    Array.__round__ = lambda self, ndigits=None: round(self.item(), ndigits)


_install()
