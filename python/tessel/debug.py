"""jax.debug over tessel's host callbacks: `print` and `callback` from inside jit, vmap (once per
example, as JAX does), grad (primal values) and control flow. Asynchronous, like id_tap:
tessel.host.barrier_wait() waits for them."""

import sys

from . import host as _host

__all__ = ["print", "callback"]

_builtin_print = print


def print(fmt, *args, ordered=False, **kwargs):  # noqa: A001 (jax.debug.print's name)
    """Prints `fmt.format(*args, **kwargs)` on the host, the values as NumPy arrays print.
    Taps keep the device's order, so `ordered` is accepted for JAX's signature."""
    del ordered

    def emit(tree, transforms, device):
        a, kw = tree
        with _host._print_lock:
            _builtin_print(fmt.format(*a, **kw), file=sys.stdout, flush=True)

    _host._tap(emit, (args, kwargs), name="debug.print", with_device=False, device_index=0, per_example=True)


def callback(callback, *args, ordered=False, **kwargs):
    """Calls `callback(*args, **kwargs)` on the host for its side effects (NumPy arrays in),
    asynchronously; under vmap once per example."""
    del ordered
    _host._tap(lambda tree, t, d: callback(*tree[0], **tree[1]), (args, kwargs), name="debug.callback",
               with_device=False, device_index=0, per_example=True)
