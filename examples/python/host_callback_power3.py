"""host_callback seed, behaviour under autodiff and vmap: id_print of primal values under jvp,
grad, checkpoint and vmap; tangents and cotangents printed from custom_jvp/custom_vjp rules.
Run: python host_callback_power3.py"""
import numpy as np

import tessel as jax
from tessel import host as hcb


def power3(x):
  y = x * x
  # Print both 'x' and 'x²'. Must pack as a tuple.
  hcb.id_print((x, y), what="x,x²")
  return y * x


def step(title):
  hcb.barrier_wait()
  print(f"# {title}", flush=True)


power3(3.)
step("power3(3.)")
jax.jvp(power3, (3.,), (0.1,))
step("jvp")
jax.grad(power3)(3.)
step("grad")
jax.grad(lambda x: power3(jax.checkpoint(power3)(x)))(3.)
step("grad of checkpoint")
jax.vmap(power3)(np.array([2., 3.], np.float32))
step("vmap")


@jax.custom_jvp
def print_tangents(arg):
  return None

@print_tangents.defjvp
def print_tangents_jvp(primals, tangents):
  arg_dot, = tangents
  hcb.id_print(arg_dot, what="tangents")
  # the primal output is None, and so is its tangent (the seed returns `primals, tangents`,
  # which tessel's custom_jvp refuses: they do not match the output None)
  return None, None

def power3_with_tangents(x):
  y = x * x
  # Print both 'x' and 'x²'. Must pack as a tuple.
  hcb.id_print((x, y), what="x,x²")
  print_tangents((x, y))
  return y * x

jax.jvp(power3_with_tangents, (3.,), (0.1,))
step("jvp with tangents")


@jax.custom_vjp
def print_cotangents(arg):
  # Must return the argument for which we want the cotangent.
  return arg

# f_fwd: a -> (b, residual)
def print_cotangents_fwd(arg):
  return print_cotangents(arg), None
# f_bwd: (residual, CT b) -> [CT a]
def print_cotangents_bwd(residual, ct_b):
  hcb.id_print(ct_b, what="cotangents")
  return ct_b,

print_cotangents.defvjp(print_cotangents_fwd, print_cotangents_bwd)

def power3_with_cotangents(x):
  y = x * x
  # Print both 'x' and 'x²'. Must pack as a tuple.
  hcb.id_print((x, y), what="x,x²")
  (x1, y1) = print_cotangents((x, y))
  # Must use the output of print_cotangents
  return y1 * x1

jax.grad(power3_with_cotangents)(3.)
step("grad with cotangents")
