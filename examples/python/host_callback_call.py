"""host_callback seed, `call()`: a host function (NumPy's eigvals) called from jitted device
code, its result returned into the computation. Run: python host_callback_call.py"""
import numpy as np

import tessel as jax
from tessel import host as hcb


# This function runs on the host
def host_eig(m: np.ndarray) -> np.ndarray:
  return np.linalg.eigvals(m).real.astype(m.dtype)


# This function is used in tessel
def device_fun(m):
  # We send "m" to the host, asking it to call "host_eig" and return the result.
  # We have to specify the result shape and dtype, either in the form of an
  # example return value or any object that has `shape` and `dtype` attributes,
  # e.g., a NumPy array or a `tessel.ShapeDtypeStruct`.
  return hcb.call(host_eig, m,
                  # Given an input of shape (..., d, d), eig output has shape (..., d)
                  result_shape=jax.ShapeDtypeStruct(m.shape[:-1], m.dtype))


m = np.array([[2., 1.], [1., 2.]], dtype=np.float32)
print("eigvals:", np.sort(np.asarray(jax.jit(device_fun)(m))))


def host_sin(x, *, device):
  # The ``device`` argument is passed due to ``call_with_device=True`` below.
  print(f"Invoking host_sin with {x.shape} on {device}")
  return np.sin(x)


# vmap stands in for the seed's pmap: the host is called once per example
print(jax.vmap(lambda x: hcb.call(host_sin, x,
                                  result_shape=x,
                                  # Ask that the `host_sin` function be passed `device=dev`
                                  call_with_device=True))(
      np.ones((2, 4), dtype=np.float32)).shape)
