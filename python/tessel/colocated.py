"""Colocated Python (jax.experimental.colocated_python, seed colocated_python.md): Python
functions and objects that run on the hosts owning a set of devices.

    from tessel import colocated as colocated_python
    cpu_devices = colocated_python.colocated_cpu_devices(tessel.devices())
    f = colocated_python.colocated_python(lambda x: x + 1)
    f = f.specialize(out_specs_fn=lambda x: x)          # calls become asynchronous

Alone (or in every process of a multi-controller job) the code runs in this process. On the
driver of a single-controller job (`mpirun -np 1+W python script.py`, rank 0 the driver), a
call on the workers' devices runs in the worker processes, which find the function (or class)
by its module and qualified name: every process runs the same script, so define colocated
functions and classes at module level, before `tessel.distributed.initialize(mode=
"single_controller")` (a worker serves from there and never reaches later definitions).
Functions and classes without such a name (lambdas, nested definitions) run on local devices
only; a call that needs a worker is a ValueError naming them.
"""

import atexit
import pickle
import sys
import threading
import weakref

from . import _tessel
from .host import ShapeDtypeStruct
from .tree_util import tree_flatten, tree_unflatten

__all__ = ["colocated_cpu_devices", "colocated_python", "colocated_python_class"]

_native = _tessel.colocated

# Tree structures travel between processes as pickled treedefs (hex); both ways cached.
_encoded, _decoded = {}, {}


def _encode(treedef):
    s = _encoded.get(treedef)
    if s is None:
        s = _encoded[treedef] = pickle.dumps(treedef).hex()
        _decoded[s] = treedef
    return s


def _decode(s):
    t = _decoded.get(s)
    if t is None:
        t = _decoded[s] = pickle.loads(bytes.fromhex(s))
    return t


def _outputs(result):
    leaves, treedef = tree_flatten(result)
    return leaves, _encode(treedef)


def colocated_cpu_devices(devices):
    """The CPU devices on the hosts of `devices`, in the same order: tessel's devices are CPU
    devices, so each is its own. Devices are objects with an `id` (tessel.devices()) or ids."""
    devices = list(devices)
    ids = _native.colocated_cpu_device_ids([d.id if hasattr(d, "id") else int(d) for d in devices])
    by_id = {(d.id if hasattr(d, "id") else int(d)): d for d in devices}
    return [by_id.get(i, i) for i in ids]


def _name_of(obj):
    """`module:qualname`, or None when a worker could not find it by that name."""
    qual = getattr(obj, "__qualname__", "")
    module = getattr(obj, "__module__", None)
    if not module or not qual or "<" in qual:
        return None
    return f"{module}:{qual}"


def _resolve(name):
    """What `module:qualname` names in this process (a worker)."""
    module, qual = name.split(":", 1)
    obj = sys.modules.get(module)
    if obj is None:
        raise ValueError(f"colocated_python: cannot find '{qual}' in module '{module}': the module is not imported in "
                         f"this worker process; every process must run the same script")
    for part in qual.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"colocated_python: cannot find '{qual}' in module '{module}' in this worker process; "
                             "define colocated functions and classes at module level, before "
                             "tessel.distributed.initialize(mode='single_controller')")
        obj = getattr(obj, part)
    return getattr(obj, "_colocated_target", obj)


def _unflatten_args(leaves, structure):
    args, kwargs = tree_unflatten(_decode(structure), list(leaves))
    return args, kwargs


def _run_registered(name, leaves, structures):
    args, kwargs = _unflatten_args(leaves, structures[0])
    return _outputs(_resolve(name)(*args, **kwargs))


def _make_registered(name, ctor_bytes):
    args, kwargs = pickle.loads(ctor_bytes)
    return _resolve(name)(*args, **kwargs)


def _call_registered_method(instance, leaves, structures):
    method = structures[0].split(":", 1)[1]
    args, kwargs = _unflatten_args(leaves, structures[1])
    return _outputs(getattr(instance, method)(*args, **kwargs))


_registered = set()
_registry_lock = threading.Lock()


def _register(name, is_class):
    with _registry_lock:
        if name in _registered:
            return  # a redefinition: the worker resolves the name when called
        _registered.add(name)
        if is_class:
            _native.register_class(name, _make_registered, _call_registered_method)
        else:
            _native.register_function(name, _run_registered)


_current = threading.local()  # the input treedef of the call in flight (for out_specs_fn)


def _spec_tree(flat_specs):
    return tree_unflatten(_current.in_tree, [ShapeDtypeStruct(shape, dtype, sharding=k)
                                             for shape, dtype, k in flat_specs])


_live = weakref.WeakSet()  # every colocated callable, to drop their C++ sites at exit


@atexit.register
def _drop_sites():
    # A site's out_specs_fn may refer back to the module holding the callable (a cycle through
    # C++ that Python's collector cannot see): cut it while the interpreter can still run.
    for c in list(_live):
        c._site = c._out_specs_fn = None


class _Callable:
    """What colocated functions and methods share: a call site, specialize, and the call."""

    def __init__(self, site, display, out_specs_fn=None):
        self._site = site
        self._display = display
        self._out_specs_fn = out_specs_fn
        _live.add(self)

    def _call(self, run_here, args, kwargs, extra_structures=()):
        leaves, in_tree = tree_flatten((args, kwargs))
        fixed = ""
        if self._out_specs_fn is not None:
            # the output structure, from the specs of the inputs (run again on the flat specs by
            # the runtime, which needs the specs themselves)
            specs = [ShapeDtypeStruct(x.shape, x.dtype, sharding=k) for k, x in enumerate(leaves)]
            a, kw = tree_unflatten(in_tree, specs)
            fixed = _encode(tree_flatten(self._out_specs_fn(*a, **kw))[1])
        _current.in_tree = in_tree
        try:
            out_leaves, structure = _native.call(self._site, run_here, leaves,
                                                 list(extra_structures) + [_encode(in_tree)], fixed)
        except _tessel.TesselError as e:
            if "it is not registered" not in str(e):
                raise
            raise ValueError(f"colocated_python: {self._display} must run in a worker process, which finds colocated "
                             "functions and classes by module and qualified name, but it has none (a lambda or a "
                             "nested definition): define it at module level, before tessel.distributed.initialize("
                             "mode='single_controller')") from e
        return tree_unflatten(_decode(structure), out_leaves)

    def _specialized(self, out_specs_fn, in_specs, devices):
        flat_out = None
        if out_specs_fn is not None:
            def flat_out(flat_specs):
                a, kw = _spec_tree(flat_specs)
                return tree_flatten(out_specs_fn(*a, **kw))[0]
        flat_in = None if in_specs is None else tree_flatten(in_specs)[0]
        ids = None if devices is None else [d.id if hasattr(d, "id") else int(d) for d in devices]
        return _native.specialize(self._site, flat_out, flat_in, ids)

    @property
    def out_spec_discoveries(self):
        """How many calls ran synchronously to learn their output specs."""
        return _native.discoveries(self._site)


class ColocatedFunction(_Callable):
    """A colocated Python function: call it with arrays (pytrees of them); it runs on the hosts of
    their devices and returns arrays on the same devices."""

    def __init__(self, fn, site=None, out_specs_fn=None):
        self._colocated_target = getattr(fn, "_colocated_target", fn)
        fn = self._colocated_target
        name = _name_of(fn)
        if name is not None:
            _register(name, is_class=False)
        display = getattr(fn, "__qualname__", repr(fn))
        super().__init__(site or _native.function_site(display, name or ""), display, out_specs_fn)
        self.__wrapped__ = fn
        self.__name__ = getattr(fn, "__name__", display)
        self.__qualname__ = getattr(fn, "__qualname__", display)
        self.__module__ = getattr(fn, "__module__", None)

    def __call__(self, *args, **kwargs):
        fn = self._colocated_target
        return self._call(lambda: _outputs(fn(*args, **kwargs)), args, kwargs)

    def specialize(self, out_specs_fn=None, in_specs=None, devices=None):
        """The same function with more knowledge: `out_specs_fn(*in_specs) -> out specs` (calls then
        return at once and run asynchronously), `in_specs` (every call's inputs must match), or
        `devices` (needed by a function that takes no arrays)."""
        site = self._specialized(out_specs_fn, in_specs, devices)
        return ColocatedFunction(self._colocated_target, site,
                                 out_specs_fn if out_specs_fn is not None else self._out_specs_fn)


def colocated_python(fn):
    """Wraps `fn` for colocated calls (jax.experimental.colocated_python.colocated_python)."""
    return ColocatedFunction(fn)


class ColocatedObject:
    """An instance of a colocated class: made lazily on each host that sees a method call, kept
    until this handle goes."""

    def __init__(self, cls, name, args, kwargs):
        holder = {}

        def make():
            obj = cls(*args, **kwargs)
            holder["obj"] = obj
            return obj

        display = cls.__qualname__
        self._state = _native.object_state(display, name or "", make, lambda: pickle.dumps((args, kwargs)))
        self._holder, self._display, self._methods = holder, display, {}

    def __getattr__(self, method):
        if method.startswith("_"):
            raise AttributeError(method)
        m = self._methods.get(method)
        if m is None:
            m = self._methods[method] = _BoundMethod(self, method)
        return m


class _BoundMethod(_Callable):
    def __init__(self, obj, name, out_specs_fn=None, site=None):
        _Callable.__init__(self, site or _native.method_site(obj._state, name), f"{obj._display}.{name}",
                           out_specs_fn)
        self._obj, self._name = obj, name

    def __call__(self, *args, **kwargs):
        obj, name = self._obj, self._name

        def run_here():
            _native.make_local(obj._state)  # makes the instance once, in this process
            return _outputs(getattr(obj._holder["obj"], name)(*args, **kwargs))

        return self._call(run_here, args, kwargs, extra_structures=[f"method:{name}"])

    def specialize(self, out_specs_fn=None, in_specs=None, devices=None):
        site = self._specialized(out_specs_fn, in_specs, devices)
        return _BoundMethod(self._obj, self._name, out_specs_fn if out_specs_fn is not None else self._out_specs_fn,
                            site)


class ColocatedClass:
    """A colocated class: calling it records the constructor's arguments and returns a
    ColocatedObject; nothing is constructed until a method is called."""

    def __init__(self, cls):
        self._colocated_target = cls
        self._name = _name_of(cls)
        if self._name is not None:
            _register(self._name, is_class=True)
        self.__wrapped__ = cls
        self.__name__, self.__qualname__, self.__module__ = cls.__name__, cls.__qualname__, cls.__module__

    def __call__(self, *args, **kwargs):
        return ColocatedObject(self._colocated_target, self._name, args, kwargs)


def colocated_python_class(cls):
    """Wraps class `cls` for colocated objects (jax.experimental.colocated_python's
    colocated_python_class)."""
    return ColocatedClass(cls)
