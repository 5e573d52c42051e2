"""host_callback seed, `id_tap()`: Python functions called on the host with device values,
asynchronously; `barrier_wait()` waits for them. Run: python host_callback_id_tap.py"""
import functools

import tessel as jax
import tessel.numpy as jnp
from tessel.host import barrier_wait, id_tap


def host_func(arg, transforms, *, what="", device=None):
  # ...do something with arg...
  print(f"host_func({arg}, {transforms}" + (f", device={device}" if device else "") +
        (f", what={what!r}" if what else "") + ")")


x = jnp.asarray(1.5)
y = jnp.asarray(-1.0)

# calls host_func(2x, []) on host
id_tap(host_func, 2 * x)
# calls host_func((2x, 3x), [])
id_tap(host_func, (2 * x, 3 * x))  # The argument can be a pytree
# calls host_func(2x, [], device=jax.devices()[0])
id_tap(host_func, 2 * x, tap_with_device=True)  # Pass the device to the tap
# calls host_func(2x, [], what='activation')
id_tap(functools.partial(host_func, what='activation'), 2 * x)
# calls host_func(dict(x=x, y=y), what='data')
id_tap(lambda tap, transforms: host_func(tap, transforms, what='data'), dict(x=x, y=y))
barrier_wait()

accumulator = []
def host_log(arg, transforms):
  # We just record the arguments in a list
  accumulator.append(float(arg))

def device_fun(x):
  id_tap(host_log, x)
  id_tap(host_log, 2. * x)

jax.jit(device_fun)(1.)
jax.jit(device_fun)(1.)

# At this point, we have started two computations, each with two
# taps, but they may not have yet executed.
barrier_wait()
# Now we know that all the computations started before `barrier_wait`
# on all devices, have finished, and all the callbacks have finished
# executing.
print("accumulator:", accumulator)
