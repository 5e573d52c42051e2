"""The collectives over mesh axes for code inside shard_map (jax.lax.psum, pmean, pmax,
pmin, all_gather, all_to_all, ppermute, psum_scatter, axis_index); tessel/shard_map.h.
`axis_name` is one mesh axis name or a tuple of them (the group then spans all of them).
The reductions and all_gather take pytrees, as in JAX."""

from ._tessel import Array
from ._tessel import sharding_functions as _s
from .tree_util import tree_map

__all__ = ["psum", "pmean", "pmax", "pmin", "all_gather", "all_to_all", "ppermute", "psum_scatter", "axis_index"]


def _axes(axis_name):
    return axis_name if isinstance(axis_name, str) else list(axis_name)


def _arr(x):
    return x if isinstance(x, Array) else Array(x)


def psum(x, axis_name):
    """The sum of `x` over the devices of `axis_name`; every device gets it."""
    return tree_map(lambda v: _s.psum(_arr(v), _axes(axis_name)), x)


def pmean(x, axis_name):
    """The mean of `x` over the devices of `axis_name`."""
    return tree_map(lambda v: _s.pmean(_arr(v), _axes(axis_name)), x)


def pmax(x, axis_name):
    """The maximum of `x` over the devices of `axis_name`."""
    return tree_map(lambda v: _s.pmax(_arr(v), _axes(axis_name)), x)


def pmin(x, axis_name):
    """The minimum of `x` over the devices of `axis_name`."""
    return tree_map(lambda v: _s.pmin(_arr(v), _axes(axis_name)), x)


def all_gather(x, axis_name, *, axis=0, tiled=False):
    """Every device's `x` in group order: stacked on a new dimension `axis`, or
    concatenated along `axis` when `tiled`."""
    return tree_map(lambda v: _s.all_gather(_arr(v), _axes(axis_name), axis, tiled), x)


def all_to_all(x, axis_name, split_axis, concat_axis, *, tiled=False):
    """Block j of `x` along `split_axis` goes to device j; received blocks are concatenated
    along `concat_axis` in group order."""
    return _s.all_to_all(_arr(x), _axes(axis_name), split_axis, concat_axis, tiled)


def ppermute(x, axis_name, perm):
    """For each (source, destination) in `perm`, the destination receives source's `x`;
    devices that receive nothing get zeros."""
    return tree_map(lambda v: _s.ppermute(_arr(v), _axes(axis_name), [tuple(p) for p in perm]), x)


def psum_scatter(x, axis_name, *, scatter_dimension=0, tiled=False):
    """The sum over the devices of `axis_name`, each device keeping its part of
    `scatter_dimension`."""
    return _s.psum_scatter(_arr(x), _axes(axis_name), scatter_dimension, tiled)


def axis_index(axis_name):
    """This device's index along `axis_name` (an int32 scalar)."""
    return _s.axis_index(_axes(axis_name))
