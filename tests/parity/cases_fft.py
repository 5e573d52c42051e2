"""Parity cases of include/tessel/fft.h (jax.numpy.fft). `func` keys the entries of
tests/parity/cases_fft.cpp."""
import jax.numpy as jnp
from jax import lax

from parity_lib import SUM_TOL, rand

# Transforms sum n terms: SUM_TOL (FFTW and XLA's DUCC order the sums differently).
ONE_D = {"fft.fft": jnp.fft.fft, "fft.ifft": jnp.fft.ifft, "fft.rfft": jnp.fft.rfft, "fft.irfft": jnp.fft.irfft}
TWO_D = {"fft.fft2": jnp.fft.fft2, "fft.ifft2": jnp.fft.ifft2, "fft.rfft2": jnp.fft.rfft2,
         "fft.irfft2": jnp.fft.irfft2}
N_D = {"fft.fftn": jnp.fft.fftn, "fft.ifftn": jnp.fft.ifftn, "fft.rfftn": jnp.fft.rfftn,
       "fft.irfftn": jnp.fft.irfftn}


def cases(s):
    for name, fn in ONE_D.items():
        real_in = name == "fft.rfft"
        for dt in (["float32", "float64"] if real_in else ["complex64", "complex128", "float32"]):
            x = rand((3, 8), dt, seed=1)
            for norm in ["backward", "ortho", "forward"]:
                s.case(name, fn, [x], {"n": None, "axis": -1, "norm": norm}, tol=SUM_TOL, grad=True,
                       name=f"{name[4:]}_{dt}_{norm}")
            s.case(name, fn, [x], {"n": 5, "axis": 0, "norm": "backward"}, tol=SUM_TOL, grad=True,
                   name=f"{name[4:]}_{dt}_n5_axis0")
            s.case(name, fn, [x], {"n": 11, "axis": 1, "norm": "ortho"}, tol=SUM_TOL, grad=True,
                   name=f"{name[4:]}_{dt}_n11")
    for name, fn in TWO_D.items():
        dt = "float64" if name == "fft.rfft2" else "complex128"
        x = rand((2, 4, 6), dt, seed=2)
        s.case(name, fn, [x], {"s": None, "axes": (-2, -1), "norm": "backward"}, tol=SUM_TOL, grad=True)
        s.case(name, fn, [x], {"s": (3, 8), "axes": (0, 2), "norm": "ortho"}, tol=SUM_TOL, grad=True)
    for name, fn in N_D.items():
        dt = "float32" if name == "fft.rfftn" else "complex64"
        x = rand((2, 4, 6), dt, seed=3)
        s.case(name, fn, [x], {"s": None, "axes": None, "norm": "backward"}, tol=SUM_TOL, grad=True)
        s.case(name, fn, [x], {"s": (5, 4), "axes": (2, 0), "norm": "forward"}, tol=SUM_TOL, grad=True)
    s.case("fft.fftfreq", lambda n, d, dtype: jnp.fft.fftfreq(n, d, dtype=dtype), [],
           {"n": 7, "d": 0.5, "dtype": "float64"})
    s.case("fft.fftfreq", lambda n, d, dtype: jnp.fft.fftfreq(n, d, dtype=dtype), [],
           {"n": 8, "d": 1.0, "dtype": "float32"})
    s.case("fft.rfftfreq", lambda n, d, dtype: jnp.fft.rfftfreq(n, d, dtype=dtype), [],
           {"n": 9, "d": 0.25, "dtype": "float64"})
    for fft_type, dt, lengths in [("FFT", "complex64", (4, 6)), ("IFFT", "complex128", (6,)),
                                  ("RFFT", "float32", (4, 6)), ("IRFFT", "complex64", (4, 10))]:
        shape = (2,) + lengths[:-1] + ((lengths[-1] // 2 + 1) if fft_type == "IRFFT" else lengths[-1],)
        s.case("fft.lax_fft", lambda v, fft_type, fft_lengths: lax.fft(v, fft_type, fft_lengths),
               [rand(shape, dt, seed=5)], {"fft_type": fft_type, "fft_lengths": lengths}, tol=SUM_TOL, grad=True)
    x = rand((3, 5, 4), "float32", seed=4)
    s.case("fft.fftshift", jnp.fft.fftshift, [x], {"axes": None})
    s.case("fft.fftshift", jnp.fft.fftshift, [x], {"axes": (1,)})
    s.case("fft.ifftshift", jnp.fft.ifftshift, [x], {"axes": None})
    s.case("fft.ifftshift", jnp.fft.ifftshift, [x], {"axes": (0, 1)})
