"""tessel.scipy.linalg (jax.scipy.linalg) over tessel/linalg.h. SciPy's `overwrite_*` and
`check_finite` arguments are accepted and ignored, as in JAX."""

from .._tessel import scipy_linalg_functions as _fns
from .. import _numpy_linalg as _np_linalg

globals().update({n: getattr(_fns, n) for n in dir(_fns) if not n.startswith("_")})

det = _np_linalg.det
inv = _np_linalg.inv


def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    """The Cholesky factor of Hermitian positive definite a: upper (a = U^H U) unless `lower`."""
    del overwrite_a, check_finite
    return _np_linalg.cholesky(a, upper=not lower)


def solve(a, b, lower=False, overwrite_a=False, overwrite_b=False, debug=False, check_finite=True,
          assume_a="gen"):
    """x with a x = b (through LU for every `assume_a`, so the result is the same)."""
    del lower, overwrite_a, overwrite_b, debug, check_finite, assume_a
    return _np_linalg.solve(a, b)


def eigh(a, b=None, lower=True, eigvals_only=False, overwrite_a=False, overwrite_b=False, type=1,
         check_finite=True, subset_by_index=None, subset_by_value=None, driver=None):
    """Eigenvalues (and eigenvectors unless eigvals_only) of Hermitian a, reading its `lower` triangle."""
    del overwrite_a, overwrite_b, type, check_finite, driver
    if b is not None or subset_by_index is not None or subset_by_value is not None:
        raise NotImplementedError("tessel.scipy.linalg.eigh: b, subset_by_index and subset_by_value are not "
                                  "supported (JAX neither); pass a alone")
    w, v = _np_linalg.eigh(a, "L" if lower else "U", False)
    return w if eigvals_only else (w, v)
