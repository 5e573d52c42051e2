"""The colocated Python seed's cells (colocated_python.md) on tessel.colocated: colocated CPU
devices, a colocated function (with I/O), specialization (out_specs_fn, devices), a colocated
class made lazily, and concurrent calls from two threads. Run: python colocated_python.py
(alone; the functions and the class are at module level, so a single-controller worker finds
them by name as well)."""
import concurrent.futures
import os
import tempfile
import time

import numpy as np

import tessel as jax
import tessel.numpy as jnp
from tessel import colocated as colocated_python

FOO = os.path.join(tempfile.mkdtemp(), "foo")

# ## Colocated CPU devices
devices = jax.devices() if hasattr(jax, "devices") else list(range(8))  # tessel.devices() where bound
cpu_devices = colocated_python.colocated_cpu_devices(devices)
print(len(cpu_devices), "cpu devices")

x = jnp.asarray(np.int32(1))
y = jax.jit(lambda x: x + 1)(x)
print(y)


# ## Colocated Python function
def f(x):
  return x + 1


f = colocated_python.colocated_python(f)
y = f(x)
print(y)


# Since colocated Python runs normal Python code, you can also perform I/O:
def f_io(x):
  with open(FOO, 'w') as f:
    f.write(str(x))
  return x


f_io = colocated_python.colocated_python(f_io)
jax.block_until_ready(f_io(x))
print("wrote", open(FOO).read())

# ## Specialization
f = f.specialize(out_specs_fn=lambda x: x)
y = f(x)
print(y, "discoveries:", f.out_spec_discoveries)


def f_noarg():
  with open(FOO, 'w') as f:
    f.write('foo')
  return


f_noarg = colocated_python.colocated_python(f_noarg)
f_noarg = f_noarg.specialize(devices=cpu_devices[:1])
f_noarg()  # Would be an error if `f` is not specialized with ``devices``.
print("wrote", open(FOO).read())


# ## Colocated Python class
class Adder:
  def __init__(self, increment):
    print('Adder created')
    self.increment = increment

  def __del__(self):
    print('Adder destroyed')

  def add(self, x):
    return x + self.increment


Adder = colocated_python.colocated_python_class(Adder)
adder = Adder(1)
print("no Adder yet")
y = adder.add(x)
print(y)
del adder
import gc; gc.collect()  # noqa: E401,E702  (the real instance goes with the handle)


# ## Execution order and concurrency
def f_slow(x):
  time.sleep(0.3)
  return x + 1


f_slow = colocated_python.colocated_python(f_slow)
f_slow = f_slow.specialize(out_specs_fn=lambda x: x)  # Calls will be asynchronous.
t0 = time.time()
with concurrent.futures.ThreadPoolExecutor(2) as executor:
  fut1 = executor.submit(f_slow, x)
  fut2 = executor.submit(f_slow, x)
  # Will finish in approximately 0.3 seconds instead of 0.6 seconds.
  r = jax.block_until_ready([fut1.result(), fut2.result()])
print([int(v) for v in r], f"in {time.time() - t0:.2f} s")
