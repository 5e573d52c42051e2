"""tessel.numpy: jax.numpy's names over tessel's C++ functions (tessel/numpy.h, ops.h).

Python scalars are weakly typed as in JAX (`x_f32 * 2.0` stays float32); nested lists
take JAX's default dtypes (float32, int32); NumPy arrays keep their dtype."""

import builtins as _builtins

import numpy as _onp

from ._tessel import Array
from ._tessel import interop_functions as _interop
from ._tessel import numpy_functions as _fns

ndarray = Array

# The C++ functions, bound from tables (element-wise ones) or one by one.
_names = [n for n in dir(_fns) if not n.startswith("_")]
globals().update({n: getattr(_fns, n) for n in _names})

# jax.numpy's aliases.
absolute = _fns.abs
conjugate = _fns.conj
invert = _fns.bitwise_not
bitwise_invert = _fns.bitwise_not
bitwise_left_shift = _fns.left_shift
bitwise_right_shift = _fns.right_shift
pow = _fns.power
mod = _fns.remainder
amax = _fns.max
amin = _fns.min
asin, acos, atan = _fns.arcsin, _fns.arccos, _fns.arctan
asinh, acosh, atanh = _fns.arcsinh, _fns.arccosh, _fns.arctanh
atan2 = _fns.arctan2
concat = _fns.concatenate
permute_dims = _fns.transpose

# dtypes, as NumPy's scalar types (what jnp exposes as jnp.float32 etc.).
bool_ = _onp.bool_
int8, int16, int32, int64 = _onp.int8, _onp.int16, _onp.int32, _onp.int64
uint8, uint16, uint32, uint64 = _onp.uint8, _onp.uint16, _onp.uint32, _onp.uint64
float16, float32, float64 = _onp.float16, _onp.float32, _onp.float64
complex64, complex128 = _onp.complex64, _onp.complex128
dtype = _onp.dtype
pi, e, inf, nan, newaxis = _onp.pi, _onp.e, _onp.inf, _onp.nan, None


def array(object, dtype=None, copy=True):
    """An Array from a value (jnp.array): a copy of NumPy input unless copy=False or None
    (then as `asarray`)."""
    return asarray(object, dtype, copy=None if copy is not True else True)


def asarray(a, dtype=None, order=None, *, copy=None):
    """An Array from a value (jnp.asarray). A NumPy array (C-contiguous, aligned, of the
    asked dtype) is used without a copy: the Array holds a reference to it and reads its
    memory, so it must not be written while the Array (or anything computed from it
    lazily) is alive, as with JAX's zero-copy imports. copy=True always copies; copy=False
    raises a ValueError where a copy is needed."""
    if order not in (None, "C", "K", "A"):
        raise ValueError(f"asarray: order={order!r} is not supported; tessel arrays are row-major (order='C')")
    if copy is not True and type(a) is _onp.ndarray and (dtype is None or _onp.dtype(dtype) == a.dtype):
        out = _interop.wrap_numpy(a, copy is False)
        if out is not None:
            return out
    elif copy is False and not isinstance(a, Array):
        raise ValueError(f"asarray: copy=False, but a {type(a).__name__} of dtype {dtype} needs a copy to become "
                         f"an Array; pass copy=None to allow one")
    return _fns.asarray(a, dtype)


def arange(start, stop=None, step=None, dtype=None):
    """Evenly spaced values in [start, stop) (jnp.arange): int32 for int arguments, else float32."""
    integral = _builtins.all(isinstance(v, int) for v in (start, stop, step) if v is not None)
    return _fns.arange(start, stop, step, dtype, integral)


def round(a, decimals=0):
    """Rounds half to even (jnp.round); `decimals` shifts the rounding position."""
    if decimals == 0:
        return _fns.rint(a)
    scale = 10.0 ** decimals
    return _fns.rint(_fns.asarray(a) * scale) / scale


round_ = round
around = round


def empty(shape, dtype=None):
    """An array of `shape` (zeros: tessel has no uninitialized arrays)."""
    return _fns.zeros(shape, dtype)


def empty_like(a, dtype=None):
    return _fns.zeros_like(a, dtype)


def identity(n, dtype=None):
    return _fns.eye(n, None, 0, dtype)


def shape(a):
    return asarray(a).shape


def ndim(a):
    return asarray(a).ndim


def size(a):
    return asarray(a).size


def isscalar(x):
    return _onp.isscalar(x) or (isinstance(x, Array) and x.ndim == 0)


def iscomplexobj(x):
    return _onp.issubdtype(asarray(x).dtype, _onp.complexfloating)


def sort_complex(a):
    return sort(a)


from . import fft  # noqa: E402,F401  (jnp.fft)
from . import _numpy_linalg as linalg  # noqa: E402  (jnp.linalg)
import sys as _sys  # noqa: E402

# `import tessel.numpy.linalg` / `tessel.numpy.fft` as with jax.numpy's subpackages.
_sys.modules[__name__ + ".linalg"] = linalg
_sys.modules[__name__ + ".fft"] = fft
