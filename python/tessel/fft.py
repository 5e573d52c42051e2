"""tessel.fft (jax.numpy.fft): transforms computed by FFTW (tessel/fft.h); every function
works eagerly and under jit, grad and vmap."""

from ._tessel import fft_functions as _fns

globals().update({n: getattr(_fns, n) for n in dir(_fns) if not n.startswith("_")})
