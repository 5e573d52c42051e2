"""Host callbacks (jax.experimental.host_callback, seed host_callback.zh.md): device code calling
Python functions on the host. `id_tap`/`id_print` hand values over asynchronously (the device
goes on); `call` runs a function and returns its result into the computation; `barrier_wait`
waits for every callback issued so far and raises the last failure of an asynchronous one.

    from tessel import host as hcb
    hcb.id_print((x, y), what="x,x²")
    hcb.call(np.linalg.eigvals, m, result_shape=tessel.ShapeDtypeStruct(m.shape[:-1], m.dtype))
    hcb.barrier_wait()

Callbacks receive NumPy arrays (host copies) in the pytree structure of the argument, run on
tessel's threads with the GIL held only while they run, and may call tessel themselves. An
exception raised in a callback reaches the caller as the same exception object: at the read
of the call's result, or at the next barrier_wait for a tap.
"""

import atexit
import sys
import threading

import numpy as np

from . import _tessel
from .tree_util import tree_flatten, tree_unflatten

__all__ = ["id_tap", "id_print", "call", "barrier_wait", "CallbackDevice", "ShapeDtypeStruct", "CallbackException"]

_native = _tessel.host


class ShapeDtypeStruct:
    """A shape, a dtype and optionally a sharding (jax.ShapeDtypeStruct): what a callback's
    result must be, or a colocated function's output spec."""

    __slots__ = ("shape", "dtype", "sharding")

    def __init__(self, shape, dtype, sharding=None):
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.sharding = sharding

    @property
    def ndim(self):
        return len(self.shape)

    def __repr__(self):
        extra = "" if self.sharding is None else f", sharding={self.sharding!r}"
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{extra})"

    def __eq__(self, other):
        return isinstance(other, ShapeDtypeStruct) and ((self.shape, self.dtype, self.sharding) ==
                                                        (other.shape, other.dtype, other.sharding))

    def __hash__(self):
        return hash((self.shape, self.dtype))


class CallbackDevice:
    """The device a callback's values come from (passed with tap_with_device/call_with_device);
    prints as the seed shows devices, `cpu:0`."""

    __slots__ = ("id", "name")

    def __init__(self, id, name):
        self.id = id
        self.name = name

    def __str__(self):
        return self.name

    __repr__ = __str__

    def __eq__(self, other):
        return isinstance(other, CallbackDevice) and self.id == other.id

    def __hash__(self):
        return hash(self.id)


CallbackException = _tessel.TesselError
"""What barrier_wait raises when a tap failed with a tessel error (a Python exception raised in
a tap is raised again as itself)."""


def _transforms(pairs):
    """The seed's transforms: [('batch', {'batch_dims': (0, None)})]."""
    return [(name, {"batch_dims": dims}) for name, dims in pairs]


def _device(pair):
    return CallbackDevice(*pair)


def _tap(fn, arg, *, name, with_device, device_index, per_example=False, host_values=True):
    """Binds `fn(tree, transforms, device)` as an asynchronous tap of `arg`'s leaves (NumPy
    arrays with host_values, else tessel Arrays)."""
    leaves, treedef = tree_flatten(arg)

    def run(values, transforms, device):
        fn(tree_unflatten(treedef, values), _transforms(transforms), _device(device))

    _native.tap_leaves(run, leaves, name, bool(with_device), int(device_index), per_example, host_values)


def id_tap(tap_func, arg, *, result=None, tap_with_device=False, device_index=0):
    """Calls `tap_func(arg, transforms)` on the host — `tap_func(arg, transforms, device=dev)` with
    tap_with_device — and returns `arg` (or `result` when given). Asynchronous: runs on the
    device's receiver thread, in the order the device issued its callbacks. Under vmap one call
    with the batched values and a ('batch', {'batch_dims': ...}) transform; under jvp/grad only
    primal values reach it."""
    if tap_with_device:
        _tap(lambda a, t, d: tap_func(a, t, device=d), arg, name="id_tap", with_device=True,
             device_index=device_index)
    else:
        _tap(lambda a, t, d: tap_func(a, t), arg, name="id_tap", with_device=False, device_index=device_index)
    return arg if result is None else result


_print_lock = threading.Lock()


def _format(value, threshold):
    """id_print's value text: tuples `( a b )`, lists `[ a b ]`, dicts `{ k=a }`, arrays as NumPy."""
    if isinstance(value, tuple):
        return "( " + " ".join(_format(v, threshold) for v in value) + " )"
    if isinstance(value, list):
        return "[ " + " ".join(_format(v, threshold) for v in value) + " ]"
    if isinstance(value, dict):
        return "{ " + " ".join(f"{k}={_format(v, threshold)}" for k, v in sorted(value.items())) + " }"
    if isinstance(value, _tessel.Array):
        return _native.format_array(value, threshold)
    return str(value)


def id_print(arg, *, result=None, tap_with_device=False, device_index=0, output_stream=None, threshold=1024,
             what=None, **kwargs):
    """Like id_tap with a tap that prints `arg`: a header of sorted `key: value` pairs (device,
    transforms, what and the extra keyword arguments) when there are any, then the value, to
    `output_stream` (default sys.stdout). Returns `arg` (or `result`)."""
    header = {str(k): str(v) for k, v in kwargs.items()}
    if what is not None:
        header["what"] = str(what)

    def printer(value, transforms, device):
        kv = dict(header)
        if transforms:
            kv["transforms"] = repr(transforms)
        if tap_with_device:
            kv["device"] = str(device)
        text = " ".join(f"{k}: {v}" for k, v in sorted(kv.items()))
        text = (text + "\n" if text else "") + _format(value, threshold) + "\n"
        out = output_stream if output_stream is not None else sys.stdout
        with _print_lock:  # lines of different devices never interleave
            out.write(text)
            out.flush()

    _tap(printer, arg, name="id_print", with_device=tap_with_device, device_index=device_index, host_values=False)
    return arg if result is None else result


def _result_spec(result_shape, name):
    """The leaves (as ShapeDtypeStruct) and the structure text of a result_shape pytree."""
    if result_shape is None:
        return [], None, ""
    leaves, treedef = tree_flatten(result_shape)
    specs = []
    for leaf in leaves:
        if not (hasattr(leaf, "shape") and hasattr(leaf, "dtype")):
            raise TypeError(f"{name}: every leaf of result_shape needs .shape and .dtype (a ShapeDtypeStruct, a "
                            f"NumPy or tessel array); got {type(leaf).__name__} {leaf!r}")
        specs.append(ShapeDtypeStruct(leaf.shape, leaf.dtype))
    return specs, treedef, repr(treedef)


_ARRAY_TYPES = (np.ndarray, np.generic, _tessel.Array)


def _bind_call(fn, arg, result_shape, *, name, kind, with_device=False, device_index=0, direct=None):
    """One definition for call, pure_callback and io_callback: binds `fn(tree, device)` on
    `arg`'s leaves and checks its result against `result_shape` (a pytree, or None). With
    `direct`, `arg` is a flat sequence of leaves and the runtime calls `direct(*leaves)`
    itself (fn unused), handing its result here only when it is not a single NumPy leaf."""
    specs, out_treedef, structure = _result_spec(result_shape, name)
    leaves, treedef = tree_flatten(arg)
    one_leaf = out_treedef is not None and out_treedef.node_type is None

    def finish(r):
        if one_leaf and isinstance(r, _ARRAY_TYPES):  # without flattening
            return [r], structure
        if out_treedef is None:
            if r is not None:
                raise TypeError(f"{name}: the callback returned {type(r).__name__} but result_shape is None; "
                                "return None or give result_shape")
            return [], ""
        out_leaves, got = tree_flatten(r)
        if got != out_treedef:
            return out_leaves, repr(got)  # the runtime reports both structures
        # Python scalars and lists take the dtype asked for (NumPy arrays keep theirs, checked).
        out_leaves = [x if hasattr(x, "dtype") else np.asarray(x, dtype=s.dtype) for x, s in zip(out_leaves, specs)]
        return out_leaves, structure

    def run(values, device):
        return finish(fn(tree_unflatten(treedef, values), _device(device) if with_device else None))

    outs = _native.call_leaves(run, leaves, specs, structure, name, bool(with_device), int(device_index), kind,
                               direct, finish)
    return None if out_treedef is None else tree_unflatten(out_treedef, outs)


def call(callback_func, arg, *, result_shape=None, call_with_device=False, device_index=0):
    """Calls `callback_func(arg)` on the host — `callback_func(arg, device=dev)` with
    call_with_device — and returns its result into the computation. The result must match
    `result_shape` (a pytree of objects with .shape and .dtype; None when the function returns
    None). Synchronous and ordered; under vmap once per example; under jvp/grad an error (use
    custom_jvp/custom_vjp around it). A failure raises where the result is read."""
    if call_with_device:
        fn = lambda a, d: callback_func(a, device=d)  # noqa: E731
    else:
        fn = lambda a, d: callback_func(a)  # noqa: E731
    return _bind_call(fn, arg, result_shape, name="call", kind="ordered", with_device=call_with_device,
                      device_index=device_index)


def _bind_args(callback, result_shape_dtypes, args, kwargs, *, name, kind):
    """pure_callback's and io_callback's `callback(*args, **kwargs)`; positional leaves alone
    skip the rebuilding of the argument tree."""
    if not kwargs and all(tree_flatten(a)[1].node_type is None for a in args):
        return _bind_call(None, list(args), result_shape_dtypes, name=name, kind=kind, direct=callback)
    return _bind_call(lambda a, d: callback(*a[0], **a[1]), (args, kwargs), result_shape_dtypes, name=name, kind=kind)


def pure_callback(callback, result_shape_dtypes, *args, **kwargs):
    """jax.pure_callback: `callback(*args, **kwargs)` on the host (NumPy arrays in), returning
    results shaped like `result_shape_dtypes`. Pure: removed when its results are unused."""
    if result_shape_dtypes is None:
        raise ValueError("pure_callback: result_shape_dtypes is None, so the call would be removed as unused; "
                         "use io_callback for a callback run for its side effects")
    return _bind_args(callback, result_shape_dtypes, args, kwargs, name="pure_callback", kind="pure")


def io_callback(callback, result_shape_dtypes, *args, ordered=False, **kwargs):
    """jax.experimental.io_callback: `callback(*args, **kwargs)` on the host for its side effects
    and its results (shaped like `result_shape_dtypes`, or None); runs even when unused.
    `ordered=True` keeps program order with the device's other ordered effects."""
    return _bind_args(callback, result_shape_dtypes, args, kwargs, name="io_callback",
                      kind="ordered" if ordered else "unordered")


def barrier_wait(logging_name=None):
    """Waits until every callback issued so far on every local device has run (the device work
    before it included). Raises the exception of a tap that failed since the last barrier (the
    original Python exception when the tap raised one)."""
    _native.barrier_wait(logging_name or "")


@atexit.register
def _barrier_at_exit():
    # Runs the callbacks still queued while Python can run them; reports a failure as the
    # C++ runtime does at its own exit.
    try:
        _native.barrier_wait("at_exit")
    except BaseException as e:  # noqa: BLE001 (reported, exit goes on)
        print(f"tessel: a host callback failed before exit: {type(e).__name__}: {e}", file=sys.stderr)
    _native.release_python_objects()
