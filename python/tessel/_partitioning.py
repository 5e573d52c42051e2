"""custom_partitioning (jax.experimental.custom_partitioning) with Python rules: the
function runs as written everywhere except under a partitioned jit, where its `partition`
callback gives the per-device code and the layouts it works in (tessel/custom_partitioning.h).
Callbacks get JAX's arguments: the mesh, ShapeDtypeStructs with `.shape`, `.dtype` and
`.sharding` (a NamedSharding) shaped like the arguments (a tuple) and the result (its
pytree), and, first, the static arguments when there are static_argnums."""

import functools

from ._tessel import Array
from ._tessel import partitioning_functions as _p
from . import sharding as _sharding
from ._api import static_positions
from .tree_util import tree_flatten, tree_leaves, tree_unflatten
from .host import ShapeDtypeStruct

__all__ = ["custom_partitioning", "ShapeDtypeStruct"]


def _structs(raw):
    return [ShapeDtypeStruct(shape, dtype, _sharding._wrap(s)) for shape, dtype, s in raw]


def _impls(what, shardings, callback):
    flat = tree_leaves(shardings, is_leaf=lambda s: isinstance(s, _sharding.Sharding))
    out = []
    for s in flat:
        if not isinstance(s, _sharding.Sharding):
            raise TypeError(f"custom_partitioning: the {callback} callback returned {s!r} among the {what} "
                            f"shardings; return NamedShardings")
        out.append(s._impl)
    return out


class _Call:
    """The static arguments and tree structures of one call, handed to the rules."""

    __slots__ = ("statics", "arg_tree", "out_tree")

    def __init__(self, statics, arg_tree):
        self.statics, self.arg_tree, self.out_tree = statics, arg_tree, None

    def args(self, raw):
        return tuple(tree_unflatten(self.arg_tree, _structs(raw)))

    def results(self, raw):
        return tree_unflatten(self.out_tree, _structs(raw))


class custom_partitioning:
    """A function with user-defined partitioning (jax.experimental.custom_partitioning):

        @custom_partitioning
        def my_fft(x): return fft(x)
        my_fft.def_partition(partition=partition, infer_sharding_from_operands=infer)

    `static_argnums` lists arguments passed to the function and, first, to the callbacks."""

    def __init__(self, fun, static_argnums=()):
        self.fun = fun
        self.static_argnums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
        self._rules = None
        self._name = getattr(fun, "__name__", "fn")
        functools.update_wrapper(self, fun, updated=())

    def def_partition(self, partition, propagate_user_sharding=None, infer_sharding_from_operands=None,
                      decode_shardings=True, sharding_rule=None):
        """Sets the rules. `partition(mesh, arg_shapes, result_shape)` returns (mesh,
        lower_fn, result_shardings, arg_shardings); `infer_sharding_from_operands(mesh,
        arg_shapes, result_shape)` the result sharding(s); `propagate_user_sharding(mesh,
        user_shape)` the sharding a result should have for its user. `sharding_rule` (a
        string such as "b i, i j -> b j") replaces the two inference callbacks."""
        del decode_shardings  # shardings are always NamedShardings in tessel
        name = self._name

        def with_statics(call, *rest):
            return (*call.statics, *rest)

        def part(call, mesh, raw_args, raw_results):
            out = partition(*with_statics(call, mesh, call.args(raw_args), call.results(raw_results)))
            if not (isinstance(out, (tuple, list)) and len(out) == 4):
                raise TypeError(f"custom_partitioning: the partition callback of '{name}' must return (mesh, "
                                f"lower_fn, result_shardings, arg_shardings); got {out!r}")
            out_mesh, lower_fn, result_shardings, arg_shardings = out

            def lower(pieces):
                res = lower_fn(*tree_unflatten(call.arg_tree, pieces))
                return tree_leaves(res)

            return (out_mesh, lower, _impls("result", result_shardings, "partition"),
                    _impls("argument", arg_shardings, "partition"))

        def infer(call, mesh, raw_args, raw_results):
            got = infer_sharding_from_operands(*with_statics(call, mesh, call.args(raw_args),
                                                             call.results(raw_results)))
            return _impls("result", got, "infer_sharding_from_operands")

        def propagate(call, mesh, raw_user):
            (user,) = _structs([raw_user])
            got = propagate_user_sharding(*with_statics(call, mesh, user))
            return _impls("result", got, "propagate_user_sharding")[0]

        self._rules = _p.make_rules(part if partition is not None else None,
                                    infer if infer_sharding_from_operands is not None else None,
                                    propagate if propagate_user_sharding is not None else None,
                                    sharding_rule or "", name)
        return self

    def __call__(self, *args):
        nargs = len(args)
        static = static_positions(self.static_argnums, nargs, f"custom_partitioning: '{self._name}'")
        dyn = tuple(a for i, a in enumerate(args) if i not in static)
        leaves, tree = tree_flatten(dyn)
        call = _Call(tuple(args[i] for i in sorted(static)), tree)

        def flat(xs):
            it = iter(tree_unflatten(tree, xs))
            full = [args[i] if i in static else next(it) for i in range(nargs)]
            out_leaves, call.out_tree = tree_flatten(self.fun(*full))
            return out_leaves

        outs = _p.call(flat, [x if isinstance(x, Array) else Array(x) for x in leaves], call, self._rules, self._name)
        return tree_unflatten(call.out_tree, outs)
