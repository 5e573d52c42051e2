"""JAX's figures for bench/nn.cpp: jax.nn.softmax over f32[8,12,1024,1024] (the logits of a
12-head attention at sequence 1024, batch 8) and jax.nn.dot_product_attention on query, key
and value f32[8,1024,12,64] (XLA implementation), forward and forward+backward, on the
inputs bench/nn.cpp draws (jax_transformer.hashed_uniform, exact on both sides).

Usage: jax_nn.py [ROUNDS]. Prints `name value [unit]` lines:
  {softmax,attention}_fwd, {softmax,attention}_fwdbwd    seconds (best of ROUNDS rounds)
  {softmax,attention}_sq                                 mean of squares of the output
  {softmax,attention}_grad_sq                            sum of squares of all gradients
The forward+backward figure is jit(grad) of sum(f(args) * ct) over every argument.
"""
import sys

import numpy as np

import jax
import jax.numpy as jnp

from jax_linalg import best_seconds
from jax_transformer import hashed_uniform

SOFTMAX_SHAPE = (8, 12, 1024, 1024)
QKV_SHAPE = (8, 1024, 12, 64)


def hashed(shape, salt, bound):
    return jnp.asarray(hashed_uniform(int(np.prod(shape)), salt, bound).reshape(shape))


def measure(name, f, args, ct, rounds):
    fwd = jax.jit(f)
    out = fwd(*args)
    print(f"{name}_sq {float(jnp.mean(jnp.square(out))):.9g}", flush=True)
    del out
    print(f"{name}_fwd {best_seconds(fwd, args, 1, rounds):.6g} s", flush=True)
    argnums = tuple(range(1, len(args) + 1))
    g = jax.jit(jax.grad(lambda c, *a: jnp.sum(f(*a) * c), argnums=argnums))
    grads = g(ct, *args)
    print(f"{name}_grad_sq {float(sum(jnp.sum(x * x) for x in grads)):.9g}", flush=True)
    del grads
    print(f"{name}_fwdbwd {best_seconds(g, [ct] + list(args), 1, rounds):.6g} s", flush=True)


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    x = hashed(SOFTMAX_SHAPE, 200, 4.0)
    measure("softmax", jax.nn.softmax, [x], hashed(SOFTMAX_SHAPE, 201, 1.0), rounds)
    del x
    q, k, v = (hashed(QKV_SHAPE, 210 + i, 1.0) for i in range(3))
    measure("attention", jax.nn.dot_product_attention, [q, k, v], hashed(QKV_SHAPE, 213, 1.0), rounds)


if __name__ == "__main__":
    sys.exit(main())
