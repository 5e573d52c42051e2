"""tessel.random: jax.random's keys and distributions (tessel/random.h). Keys are uint32
arrays of shape (2,) as JAX's raw keys; the same seed gives JAX's bits."""

from ._tessel import random_functions as _fns

globals().update({n: getattr(_fns, n) for n in dir(_fns) if not n.startswith("_")})
