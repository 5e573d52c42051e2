"""tessel.numpy.linalg (jax.numpy.linalg) over tessel/linalg.h: every function works eagerly
and under jit, grad and vmap (eig and the "raw" QR have no derivative, as in JAX). Results
of several arrays are named tuples with JAX's field names."""

from typing import NamedTuple

from ._tessel import Array
from ._tessel import numpy_linalg_functions as _fns

globals().update({n: getattr(_fns, n) for n in dir(_fns) if not n.startswith("_")})


class EighResult(NamedTuple):
    eigenvalues: Array
    eigenvectors: Array


class EigResult(NamedTuple):
    eigenvalues: Array
    eigenvectors: Array


class QRResult(NamedTuple):
    Q: Array
    R: Array


class SVDResult(NamedTuple):
    U: Array
    S: Array
    Vh: Array


class SlogdetResult(NamedTuple):
    sign: Array
    logabsdet: Array


def eigh(a, UPLO=None, symmetrize_input=True):
    """Eigenvalues (ascending) and eigenvectors of Hermitian matrices (..., n, n)."""
    return EighResult(*_fns.eigh(a, UPLO, symmetrize_input))


def eig(a):
    """Eigenvalues and right eigenvectors of general square matrices, complex (not differentiable)."""
    return EigResult(*_fns.eig(a))


def qr(a, mode="reduced"):
    """a = Q R; modes "reduced", "complete", "r" (R only) and "raw" ((h, tau) as NumPy's)."""
    r = _fns.qr(a, mode)
    return r if mode == "r" else QRResult(*r)


def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """a = U diag(S) Vh; only the singular values S without compute_uv."""
    r = _fns.svd(a, full_matrices, compute_uv, hermitian)
    return SVDResult(*r) if compute_uv else r


def slogdet(a):
    """Sign and log |det| of square matrices: det(a) = sign * exp(logabsdet)."""
    return SlogdetResult(*_fns.slogdet(a))
