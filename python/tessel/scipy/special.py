"""tessel.scipy.special (jax.scipy.special) over tessel/scipy_special.h: element-wise
functions that broadcast their arguments and work eagerly and under jit, grad and vmap."""

from .._tessel import scipy_special_functions as _fns

globals().update({n: getattr(_fns, n) for n in dir(_fns) if not n.startswith("_")})
