"""tessel.nn: jax.nn's activations and normalizations (tessel/nn.h)."""

from ._tessel import nn_functions as _fns

globals().update({n: getattr(_fns, n) for n in dir(_fns) if not n.startswith("_")})
