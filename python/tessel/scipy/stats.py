"""tessel.scipy.stats (jax.scipy.stats) over tessel/scipy_stats.h: one submodule per
distribution (`tessel.scipy.stats.norm.logpdf(x, loc=0, scale=1)`), plus sem, mode and
rankdata. Everything works eagerly and under jit, grad and vmap."""

import sys as _sys
from typing import NamedTuple

from .._tessel import Array
from .._tessel import scipy_stats_functions as _fns

_distributions = [n for n in dir(_fns) if not n.startswith("_") and n not in ("sem", "mode", "rankdata")]
for _name in _distributions:
    globals()[_name] = getattr(_fns, _name)
    _sys.modules[f"{__name__}.{_name}"] = getattr(_fns, _name)  # `import tessel.scipy.stats.norm`
sem = _fns.sem
rankdata = _fns.rankdata


class ModeResult(NamedTuple):
    mode: Array
    count: Array


def mode(a, axis=0, nan_policy="propagate", keepdims=False):
    """The most common value along `axis` (the smallest on ties) and its count."""
    return ModeResult(*_fns.mode(a, axis, nan_policy, keepdims))
