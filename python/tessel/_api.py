"""Transformations over Python functions (jax.jit, grad, value_and_grad, jvp, vjp,
linearize, vmap, custom_jvp, custom_vjp, make_jaxpr): pytrees are flattened here and the
flat functions are traced by tessel's C++ tracer (tessel/jit.h, tessel/transforms.h)."""

import functools

from . import sharding as _sharding
from ._tessel import Array
from ._tessel import numpy_functions as _np_fns
from ._tessel import transform_functions as _t
from .tree_util import _LEAF, broadcast_prefix, tree_flatten, tree_leaves, tree_unflatten

__all__ = ["jit", "grad", "value_and_grad", "jvp", "vjp", "linearize", "vmap", "custom_jvp", "custom_vjp", "jacfwd",
           "jacrev", "hessian",
           "make_program", "make_jaxpr", "block_until_ready"]

_JIT_CACHE_LIMIT = 256
_avals_key = _t.avals_key
_mesh_context = _sharding._context
_jit_call = _t.jit_call
_jit_argument = _t.jit_argument


def _as_array(x):
    return x if isinstance(x, Array) else Array(x)


def _argnums_tuple(argnums, nargs, op, name="argnums", error=ValueError):
    """The positions `argnums` (an int or a sequence; negative ones count from the end) names
    for a call with `nargs` positional arguments; `error` naming `op` and `name` otherwise."""
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    out = []
    for i in nums:
        j = i + nargs if i < 0 else i
        if not 0 <= j < nargs:
            raise error(f"{op}: {name} lists argument {i} but the function is called with {nargs} "
                        f"positional arguments")
        out.append(j)
    return tuple(out)


def static_positions(static_argnums, nargs, who):
    """The set of argument positions `static_argnums` names; IndexError naming `who` for one
    out of range."""
    return set(_argnums_tuple(static_argnums, nargs, who, "static_argnums", IndexError))


class Lowered:
    """`jit(f).lower(*args)`: the simplified program for those arguments."""

    def __init__(self, entry, leaves):
        self._entry = entry
        self._leaves = leaves

    def as_text(self):
        """The program that will be compiled (after DCE, CSE and constant folding)."""
        return _t.jit_lowered_text(self._entry)

    def compile(self):
        """Builds the executable now (fusion, code generation): later calls only run it."""
        _t.jit_build(self._entry, self._leaves)
        return Compiled(self._entry, self._leaves)


class Compiled:
    """The executable of one signature (from `Lowered.compile`)."""

    def __init__(self, entry, leaves):
        self._entry = entry
        self._leaves = leaves

    def as_text(self):
        """What runs on each device: the executable's program with its buffer plan."""
        return _t.jit_compiled_text(self._entry, self._leaves)


class _Jitted:
    """A jitted function: traces once per signature (pytree structure, avals of the array
    leaves, values of the static arguments) and runs the cached executable afterwards."""

    def __init__(self, fun, static_argnums, static_argnames, donate_argnums, in_shardings=None, out_shardings=None):
        self._fun = fun
        self._in_shardings = in_shardings
        self._out_shardings = out_shardings
        self._static_argnums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
        self._static_argnames = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
        self._donate_argnums = (donate_argnums,) if isinstance(donate_argnums, int) else tuple(donate_argnums)
        self._cache = {}
        self._fast_cache = {}  # avals of positional Array arguments -> (entry, output treedef)
        self._name = getattr(fun, "__name__", "fn")
        functools.update_wrapper(self, fun, updated=())

    def __call__(self, *args, **kwargs):
        # Fast path: positional Array arguments only (no pytree to flatten, no statics), keyed
        # by their avals packed in one C++ call (None when an argument is not an Array).
        key = None if kwargs or self._static_argnums else _avals_key(*args)
        meshes = _mesh_context.meshes
        if key is not None and meshes:
            # Bare PartitionSpecs (in/out_shardings, shard_map without a mesh) resolve against
            # the `with mesh:` context at trace time: a program is only reused under its mesh.
            # Keyed by id (hashing a mesh costs microseconds); the entry holds the mesh, so
            # the id cannot be reused while it is cached.
            key = (id(meshes[-1]), key)
        if key is not None:
            hit = self._fast_cache.get(key)
            if hit is not None:
                outs = _jit_call(hit[0], args)
                return outs[0] if hit[1] is _LEAF else tree_unflatten(hit[1], outs)
        entry, out_tree, leaves = self._lookup(args, kwargs)
        if key is not None and not _t.jit_captures_tracers(entry):
            if len(self._fast_cache) >= _JIT_CACHE_LIMIT:
                self._fast_cache.pop(next(iter(self._fast_cache)))
            self._fast_cache[key] = (entry, out_tree, meshes[-1] if meshes else None)
        return tree_unflatten(out_tree, _t.jit_call(entry, leaves))

    def lower(self, *args, **kwargs):
        """The program for these arguments (print it with `.as_text()`)."""
        entry, _, leaves = self._lookup(args, kwargs)
        return Lowered(entry, leaves)

    def _cache_size(self):
        return len(self._cache)

    def clear_cache(self):
        """Forgets every traced signature (the next call traces again)."""
        self._cache.clear()
        self._fast_cache.clear()

    def _lookup(self, args, kwargs):
        nargs = len(args)
        static = static_positions(self._static_argnums, nargs, f"jit({self._name})")
        statics = tuple((i, args[i]) for i in sorted(static))
        static_kw = tuple(sorted((k, v) for k, v in kwargs.items() if k in self._static_argnames))
        dyn_args = [a for i, a in enumerate(args) if i not in static]
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in self._static_argnames}
        leaves, treedef = tree_flatten((dyn_args, dyn_kwargs))
        leaves = [_jit_argument(x) for x in leaves]  # NumPy arrays wrapped, not copied
        try:
            meshes = _mesh_context.meshes
            key = (treedef, statics, static_kw, tuple(x._aval_key for x in leaves), meshes[-1] if meshes else None)
            hit = self._cache.get(key)
        except TypeError as e:
            raise ValueError(f"jit({self._name}): static arguments must be hashable (they key the cache); "
                             f"got {statics + static_kw!r}") from e
        if hit is not None:
            return hit[0], hit[1], leaves
        out_trees = []

        def flat(tracers):
            d_args, d_kwargs = tree_unflatten(treedef, tracers)
            it = iter(d_args)
            full = [args[i] if i in static else next(it) for i in range(nargs)]
            if self._in_shardings is not None:
                full = _constrain_args(self._name, full, static, self._in_shardings)
            out = self._fun(*full, **d_kwargs, **dict(static_kw))
            if self._out_shardings is not None:
                out = _sharding.with_sharding_constraint(out, self._out_shardings)
            out_leaves, out_tree = tree_flatten(out)
            out_trees.append(out_tree)
            return out_leaves

        donated = self._donated_leaves(args, static)
        entry = _t.jit_compile(flat, leaves, self._name, donated)
        result = (entry, out_trees[-1])
        if not _t.jit_captures_tracers(entry):
            if len(self._cache) >= _JIT_CACHE_LIMIT:
                self._cache.pop(next(iter(self._cache)))
            self._cache[key] = result
        return entry, result[1], leaves

    def _donated_leaves(self, args, static):
        if not self._donate_argnums:
            return []
        nargs = len(args)
        donate = set()
        for i in self._donate_argnums:
            j = i + nargs if i < 0 else i
            if not 0 <= j < nargs or j in static:
                raise ValueError(f"jit({self._name}): donate_argnums lists argument {i}, which is "
                                 f"{'static' if j in static else 'not passed'}; donate array arguments only")
            donate.add(j)
        donated = []
        for i, a in enumerate(args):
            if i not in static:
                donated += [i if i in donate else -1] * len(tree_leaves(a))
        return donated  # keyword arguments' leaves follow and are never donated


def _constrain_args(name, full, static, in_shardings):
    """jit's in_shardings on the traced positional arguments: one entry (a sharding, a
    PartitionSpec under `with mesh:`, None, or a tree prefix) per argument, per dynamic
    argument, or one for all."""
    dynamic = [i for i in range(len(full)) if i not in static]
    if _sharding._is_spec_leaf(in_shardings):
        entries = {i: in_shardings for i in dynamic}
    elif len(in_shardings) == len(full):
        entries = {i: in_shardings[i] for i in dynamic}
    elif len(in_shardings) == len(dynamic):
        entries = dict(zip(dynamic, in_shardings))
    else:
        raise ValueError(f"jit({name}): in_shardings has {len(in_shardings)} entries but the function is called "
                         f"with {len(full)} positional arguments ({len(dynamic)} not static); give one per "
                         f"argument, or one sharding for all")
    return [_sharding.with_sharding_constraint(a, entries[i]) if entries.get(i) is not None else a
            for i, a in enumerate(full)]


def jit(fun=None, *, static_argnums=(), static_argnames=(), donate_argnums=(), in_shardings=None,
        out_shardings=None):
    """Compiles `fun` (jax.jit): traced once per signature, then the cached executable runs.

    `in_shardings` / `out_shardings` fix the layouts of the arguments (one entry per
    positional argument, or one for all) and results (a tree prefix of the result): each
    entry a NamedSharding, a PartitionSpec inside `with mesh:`, or None (the partitioner
    decides). Arguments laid out otherwise are resharded inside the program.

    Usable as `jit(f, static_argnums=...)` or as a decorator `@jit` / `@partial(jit, ...)`."""
    if fun is None:
        return lambda f: jit(f, static_argnums=static_argnums, static_argnames=static_argnames,
                             donate_argnums=donate_argnums, in_shardings=in_shardings, out_shardings=out_shardings)
    return _Jitted(fun, static_argnums, static_argnames, donate_argnums, in_shardings, out_shardings)


def _grad_core(op, fun, argnums, has_aux, args, kwargs):
    nums = _argnums_tuple(argnums, len(args), op)
    diff_args = [args[i] for i in nums]
    leaves, tree = tree_flatten(diff_args)
    leaves = [_as_array(x) for x in leaves]
    pos = 0
    for i, a in zip(nums, diff_args):
        for _ in range(len(tree_leaves(a))):
            _t.check_differentiable(op, leaves[pos], i)
            pos += 1
    boxes = {}

    def flat(xs):
        full = list(args)
        for i, v in zip(nums, tree_unflatten(tree, xs)):
            full[i] = v
        out = fun(*full, **kwargs)
        if has_aux:
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise TypeError(f"{op}: has_aux=True needs the function to return a pair (output, aux); "
                                f"got {type(out).__name__}")
            out, aux = out
            aux_leaves, boxes["aux"] = tree_flatten(aux)
        else:
            aux_leaves = []
        out_leaves, boxes["out"] = tree_flatten(out)
        boxes["n_out"] = len(out_leaves)
        return out_leaves + aux_leaves

    outs, linear = _t.linearize(flat, leaves)
    n_out = boxes["n_out"]
    if n_out != 1:
        _t.check_grad_output(op, outs[0], n_out)
    _t.check_grad_output(op, outs[0], 1)
    cts = [_np_fns.ones_like(outs[0])] + [None] * (len(outs) - 1)
    grads = tree_unflatten(tree, _t.linear_transpose(linear, cts, op))
    grads = grads[0] if isinstance(argnums, int) else tuple(grads)
    value = tree_unflatten(boxes["out"], outs[:1])
    aux = tree_unflatten(boxes["aux"], outs[1:]) if has_aux else None
    return value, aux, grads


def value_and_grad(fun, argnums=0, has_aux=False):
    """A function returning (fun(*args), gradient w.r.t. `argnums`) (jax.value_and_grad);
    with has_aux, ((value, aux), gradient). `fun` must return a scalar float array."""

    @functools.wraps(fun, updated=())
    def value_and_grad_fun(*args, **kwargs):
        value, aux, grads = _grad_core("value_and_grad", fun, argnums, has_aux, args, kwargs)
        return ((value, aux), grads) if has_aux else (value, grads)

    return value_and_grad_fun


def grad(fun, argnums=0, has_aux=False):
    """The gradient of a scalar-valued `fun` w.r.t. `argnums` (jax.grad); with has_aux,
    (gradient, aux). The gradient has the structure of the argument(s)."""

    @functools.wraps(fun, updated=())
    def grad_fun(*args, **kwargs):
        _, aux, grads = _grad_core("grad", fun, argnums, has_aux, args, kwargs)
        return (grads, aux) if has_aux else grads

    return grad_fun


def _flat_call(fun, treedef, boxes):
    def flat(xs):
        out = fun(*tree_unflatten(treedef, xs))
        out_leaves, boxes["out"] = tree_flatten(out)
        return out_leaves

    return flat


def jvp(fun, primals, tangents):
    """(fun(*primals), the derivative at primals applied to tangents) (jax.jvp). `primals`
    and `tangents` are tuples (or lists) of pytrees of the same structure."""
    p_leaves, p_tree = tree_flatten(tuple(primals))
    t_leaves, t_tree = tree_flatten(tuple(tangents))
    if p_tree != t_tree:
        raise ValueError(f"jvp: primals and tangents have different structures: {p_tree} and {t_tree}")
    boxes = {}
    outs, touts = _t.jvp(_flat_call(fun, p_tree, boxes), [_as_array(x) for x in p_leaves],
                         [_as_array(x) for x in t_leaves])
    return tree_unflatten(boxes["out"], outs), tree_unflatten(boxes["out"], touts)


def linearize(fun, *primals):
    """(fun(*primals), f_jvp): f_jvp(*tangents) applies the derivative at primals, replaying
    only the linear part (jax.linearize)."""
    leaves, tree = tree_flatten(primals)
    boxes = {}
    outs, linear = _t.linearize(_flat_call(fun, tree, boxes), [_as_array(x) for x in leaves])
    out_tree = boxes["out"]

    def f_jvp(*tangents):
        return tree_unflatten(out_tree, _t.linear_apply(linear, [_as_array(x) for x in tree_leaves(tangents)]))

    return tree_unflatten(out_tree, outs), f_jvp


def vjp(fun, *primals, has_aux=False):
    """(fun(*primals), f_vjp) where f_vjp(cotangent) returns a tuple of the cotangents of
    the primals (jax.vjp); with has_aux, (out, f_vjp, aux)."""
    leaves, tree = tree_flatten(primals)
    boxes = {}

    def flat(xs):
        out = fun(*tree_unflatten(tree, xs))
        aux_leaves = []
        if has_aux:
            out, aux = out
            aux_leaves, boxes["aux"] = tree_flatten(aux)
        out_leaves, boxes["out"] = tree_flatten(out)
        boxes["n_out"] = len(out_leaves)
        return out_leaves + aux_leaves

    outs, linear = _t.linearize(flat, [_as_array(x) for x in leaves])
    n_out, out_tree = boxes["n_out"], boxes["out"]
    n_aux = len(outs) - n_out

    def f_vjp(ct):
        ct_leaves, ct_tree = tree_flatten(ct)
        if ct_tree != out_tree:
            raise ValueError(f"vjp: the cotangent has structure {ct_tree}, the output {out_tree}")
        cts = [_as_array(x) for x in ct_leaves] + [None] * n_aux
        return tree_unflatten(tree, _t.linear_transpose(linear, cts, "vjp"))

    out = tree_unflatten(out_tree, outs[:n_out])
    if has_aux:
        return out, f_vjp, tree_unflatten(boxes["aux"], outs[n_out:])
    return out, f_vjp


def _broadcast_prefix(prefix, tree, what):
    """One value per leaf of `tree` from a prefix tree of ints/None (vmap's in_axes)."""
    return broadcast_prefix(prefix, tree, lambda p: p is None or isinstance(p, int), lambda p, t: ValueError(
        f"vmap: {what} {prefix!r} does not match the structure of the arguments (at {p!r} against "
        f"{type(t).__name__}); give an int or None per argument, or a tree prefix of the arguments"))


def vmap(fun, in_axes=0, out_axes=0, axis_size=None):
    """Vectorizes `fun` over an axis of its arguments (jax.vmap). `in_axes`: an int or None
    for all arguments, or a tuple with one entry (int, None or a pytree prefix) per argument.
    `out_axes`: an int or None for all outputs, or a pytree prefix of the output (ints)."""

    @functools.wraps(fun, updated=())
    def vmapped(*args):
        if isinstance(in_axes, (tuple, list)) and len(in_axes) != len(args):
            raise ValueError(f"vmap: in_axes has {len(in_axes)} entries but the function is called with "
                             f"{len(args)} arguments")
        leaves, tree = tree_flatten(args)
        axes = _broadcast_prefix(tuple(in_axes) if isinstance(in_axes, list) else in_axes, args, "in_axes")
        boxes = {}
        uniform = out_axes is None or isinstance(out_axes, int)
        outs = _t.vmap(_flat_call(fun, tree, boxes), [_as_array(x) for x in leaves], axes,
                       [out_axes] if uniform else [0], axis_size)
        out = tree_unflatten(boxes["out"], outs)
        if uniform:
            return out
        per_leaf = _broadcast_prefix(out_axes, out, "out_axes")
        if any(a is None for a in per_leaf):
            raise NotImplementedError("vmap: None inside an out_axes tree is not supported yet; "
                                      "pass out_axes=None for all outputs")
        return tree_unflatten(boxes["out"], [_np_fns.moveaxis(x, 0, a) for x, a in zip(outs, per_leaf)])

    return vmapped


class custom_jvp:
    """A function with a user-defined forward-mode rule (jax.custom_jvp):

        @custom_jvp
        def f(x): ...
        @f.defjvp
        def f_jvp(primals, tangents): return f(*primals), tangent_out
    """

    def __init__(self, fun):
        self.fun = fun
        self.jvp = None
        functools.update_wrapper(self, fun, updated=())

    def defjvp(self, jvp):
        self.jvp = jvp
        return jvp

    def __call__(self, *args):
        if self.jvp is None:
            raise TypeError(f"custom_jvp {getattr(self.fun, '__name__', '')}: no rule; define one with @f.defjvp")
        leaves, tree = tree_flatten(args)
        boxes = {}

        def rule(primals, tangents):
            out, t_out = self.jvp(tree_unflatten(tree, primals), tree_unflatten(tree, tangents))
            out_leaves, boxes["out"] = tree_flatten(out)
            return out_leaves + tree_leaves(t_out)

        outs = _t.custom_jvp(_flat_call(self.fun, tree, boxes), rule, [_as_array(x) for x in leaves])
        return tree_unflatten(boxes["out"], outs)


class custom_vjp:
    """A function with a user-defined reverse-mode rule (jax.custom_vjp): `f.defvjp(fwd, bwd)`
    with fwd(*args) -> (out, residuals) and bwd(residuals, out_cotangent) -> a tuple with
    one cotangent per argument (None for a zero one)."""

    def __init__(self, fun):
        self.fun = fun
        self.fwd = self.bwd = None
        functools.update_wrapper(self, fun, updated=())

    def defvjp(self, fwd, bwd):
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args):
        if self.fwd is None:
            raise TypeError(f"custom_vjp {getattr(self.fun, '__name__', '')}: no rule; define one with f.defvjp(fwd, bwd)")
        leaves, tree = tree_flatten(args)
        boxes = {}

        def fwd(xs):
            out, res = self.fwd(*tree_unflatten(tree, xs))
            out_leaves, boxes["out"] = tree_flatten(out)
            res_leaves, boxes["res"] = tree_flatten(res)
            return out_leaves + res_leaves

        def bwd(res, cts):
            ct_args = self.bwd(tree_unflatten(boxes["res"], res), tree_unflatten(boxes["out"], cts))
            if not isinstance(ct_args, (tuple, list)) or len(ct_args) != len(args):
                raise TypeError(f"custom_vjp: bwd must return a tuple with one cotangent per argument "
                                f"({len(args)}); got {ct_args!r}")
            flat = []
            for a, c in zip(args, ct_args):
                n = len(tree_leaves(a))
                flat += [None] * n if c is None else tree_leaves(c)
            return flat

        outs = _t.custom_vjp(_flat_call(self.fun, tree, boxes), fwd, bwd, [_as_array(x) for x in leaves])
        return tree_unflatten(boxes["out"], outs)


def make_program(fun, *args, **kwargs):
    """The program of `fun` traced on `args`, printed like a jaxpr (jax.make_jaxpr(f)(*args))."""
    leaves, tree = tree_flatten((args, kwargs))

    def flat(xs):
        a, kw = tree_unflatten(tree, xs)
        return tree_leaves(fun(*a, **kw))

    return _t.make_program(flat, [_as_array(x) for x in leaves], getattr(fun, "__name__", "fn"))


def make_jaxpr(fun):
    """jax.make_jaxpr's calling convention: make_jaxpr(f)(*args) returns the printed program."""
    return lambda *args, **kwargs: make_program(fun, *args, **kwargs)


def block_until_ready(tree):
    """Waits for every array leaf of `tree`; returns `tree`."""
    for x in tree_leaves(tree):
        if isinstance(x, Array):
            x.block_until_ready()
    return tree




def _jacobian_arg(op, args, argnums):
    if not isinstance(argnums, int):
        raise NotImplementedError(f"{op}: argnums must be one int here (tuples of arguments are not supported yet)")
    x = args[argnums]
    if not isinstance(x, Array):
        x = Array(x)
    if len(tree_leaves(x)) != 1:
        raise NotImplementedError(f"{op}: the differentiated argument must be one array (pytrees are not supported yet)")
    return x


def _with_arg(fun, args, argnums):
    return lambda xi: fun(*args[:argnums], xi, *args[argnums + 1:])


def jacfwd(fun, argnums=0):
    """The Jacobian by forward mode (jax.jacfwd): shape out.shape + x.shape; one array argument."""

    @functools.wraps(fun, updated=())
    def jacobian(*args):
        x = _jacobian_arg("jacfwd", args, argnums)
        f = _with_arg(fun, args, argnums)
        basis = _np_fns.eye(x.size, None, 0, x.dtype).reshape((x.size,) + x.shape)
        cols = vmap(lambda t: jvp(f, (x,), (t,))[1])(basis)  # (x.size, *out.shape)
        out_shape = cols.shape[1:]
        return _np_fns.moveaxis(cols.reshape((x.size, -1) if out_shape else (x.size, 1)), 0, -1).reshape(
            out_shape + x.shape)

    return jacobian


def jacrev(fun, argnums=0):
    """The Jacobian by reverse mode (jax.jacrev): shape out.shape + x.shape; one array argument."""

    @functools.wraps(fun, updated=())
    def jacobian(*args):
        x = _jacobian_arg("jacrev", args, argnums)
        y, f_vjp = vjp(_with_arg(fun, args, argnums), x)
        basis = _np_fns.eye(y.size, None, 0, y.dtype).reshape((y.size,) + y.shape)
        rows = vmap(lambda ct: f_vjp(ct)[0])(basis)  # (y.size, *x.shape)
        return rows.reshape(y.shape + x.shape)

    return jacobian


def hessian(fun, argnums=0):
    """The Hessian of a scalar function: jacfwd(jacrev(fun)) (jax.hessian)."""
    return jacfwd(jacrev(fun, argnums), argnums)
