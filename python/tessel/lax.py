"""tessel.lax: jax.lax's primitives under their lax names (tessel/ops.h, lax_extra.h)."""

from ._tessel import lax_functions as _fns

globals().update({n: getattr(_fns, n) for n in dir(_fns) if not n.startswith("_")})

from ._control_flow import cond, fori_loop, scan, switch, while_loop  # noqa: E402,F401
from ._collectives import (all_gather, all_to_all, axis_index, pmax, pmean, pmin, ppermute, psum,  # noqa: E402,F401
                           psum_scatter)
from .sharding import with_sharding_constraint  # noqa: E402,F401
