"""jax.lax's structured control flow over Python functions and pytrees: cond, switch,
while_loop, fori_loop, scan (tessel/control_flow.h), and jax.checkpoint."""

import functools

from ._tessel import Array
from ._tessel import numpy_functions as _np_fns
from ._tessel import transform_functions as _t
from .tree_util import tree_flatten, tree_unflatten


def _arrays(leaves):
    return [x if isinstance(x, Array) else Array(x) for x in leaves]


def _branch(fun, treedef, boxes):
    def flat(xs):
        out_leaves, boxes["out"] = tree_flatten(fun(*tree_unflatten(treedef, xs)))
        return out_leaves

    return flat


def switch(index, branches, *operands):
    """Runs branches[index](*operands) (jax.lax.switch); the index is clamped into range.
    Every branch must return the same structure, shapes and dtypes."""
    leaves, treedef = tree_flatten(operands)
    boxes = {}
    idx = _np_fns.asarray(index).astype("int32")
    outs = _t.cond(idx, [_branch(b, treedef, boxes) for b in branches], _arrays(leaves))
    return tree_unflatten(boxes["out"], outs)


def cond(pred, true_fun, false_fun, *operands):
    """true_fun(*operands) if pred else false_fun(*operands), traced both ways (jax.lax.cond)."""
    return switch(_np_fns.asarray(pred).astype("int32"), [false_fun, true_fun], *operands)


def while_loop(cond_fun, body_fun, init_val):
    """while cond_fun(val): val = body_fun(val) (jax.lax.while_loop). Forward-mode
    differentiable; reverse mode needs fori_loop with int bounds or scan."""
    leaves, treedef = tree_flatten(init_val)

    def c(xs):
        return [cond_fun(tree_unflatten(treedef, xs))]

    def b(xs):
        out_leaves, out_tree = tree_flatten(body_fun(tree_unflatten(treedef, xs)))
        if out_tree != treedef:
            raise TypeError(f"while_loop: body_fun must return the structure of init_val {treedef}, got {out_tree}")
        return out_leaves

    return tree_unflatten(treedef, _t.while_loop(c, b, _arrays(leaves)))


def scan(f, init, xs=None, length=None, reverse=False):
    """f(carry, x) -> (carry, y) over the leading axis of xs; returns (carry, stacked ys) (jax.lax.scan)."""
    c_leaves, c_tree = tree_flatten(init)
    x_leaves, x_tree = tree_flatten(xs)
    nc = len(c_leaves)
    boxes = {}

    def body(v):
        carry = tree_unflatten(c_tree, v[:nc])
        x = tree_unflatten(x_tree, v[nc:])
        new_carry, y = f(carry, x)
        carry_leaves, carry_tree = tree_flatten(new_carry)
        if carry_tree != c_tree:
            raise TypeError(f"scan: f must return a carry of the structure of init {c_tree}, got {carry_tree}")
        y_leaves, boxes["y"] = tree_flatten(y)
        return carry_leaves + y_leaves

    outs = _t.scan(body, _arrays(c_leaves), _arrays(x_leaves), length, reverse)
    return tree_unflatten(c_tree, outs[:nc]), tree_unflatten(boxes["y"], outs[nc:])


def fori_loop(lower, upper, body_fun, init_val):
    """val = body_fun(i, val) for i in [lower, upper) (jax.lax.fori_loop). With Python int
    bounds it is a scan (reverse-mode differentiable), else a while_loop."""
    if isinstance(lower, int) and isinstance(upper, int):
        def step(carry, _):
            i, val = carry
            return (i + 1, body_fun(i, val)), None

        (_, val), _ = scan(step, (_np_fns.asarray(lower, "int32"), init_val), None,
                           length=max(upper - lower, 0))
        return val
    lo, hi = _np_fns.asarray(lower), _np_fns.asarray(upper)
    dtype = _np_fns.result_type(lo, hi)
    _, val = while_loop(lambda c: c[0] < hi, lambda c: (c[0] + 1, body_fun(c[0], c[1])),
                        (lo.astype(dtype), init_val))
    return val


def checkpoint(fun, policy="nothing_saveable"):
    """jax.checkpoint (remat): fun, but reverse mode keeps only what `policy` saves
    ("nothing_saveable", "dots_saveable", "everything_saveable") and recomputes the rest."""

    @functools.wraps(fun, updated=())
    def remat_fun(*args):
        leaves, treedef = tree_flatten(args)
        boxes = {}
        outs = _t.checkpoint(_branch(fun, treedef, boxes), _arrays(leaves), policy)
        return tree_unflatten(boxes["out"], outs)

    return remat_fun


remat = checkpoint
