"""JAX's figures for bench/grad_mlp.cpp: the same 4-layer MLP (batch 256, width 512, float32,
tanh or relu between layers, mean-squared-error loss), jit of the loss and jit of
value_and_grad of the loss on CPU.

Prints `name seconds s` lines: forward, value_and_grad, relu_forward, relu_value_and_grad.
Each figure is the best of several rounds after a compiling call (bench/baselines/jax_linalg.py's
timing), as bench/grad_mlp.cpp measures tessel.
"""
import sys

import numpy as np

import jax
import jax.numpy as jnp

from jax_linalg import best_seconds

BATCH, WIDTH, LAYERS = 256, 512, 4


def mlp(params, x, activation):
    h = x
    for i, (w, b) in enumerate(params):
        h = h @ w + b
        if i + 1 < LAYERS:
            h = activation(h)
    return h


def main():
    rng = np.random.default_rng(0)
    params = [(jnp.asarray((rng.standard_normal((WIDTH, WIDTH)) / np.sqrt(WIDTH)).astype(np.float32)),
               jnp.zeros((WIDTH,), jnp.float32)) for _ in range(LAYERS)]
    x = jnp.asarray(rng.standard_normal((BATCH, WIDTH)).astype(np.float32))
    y = jnp.asarray(rng.standard_normal((BATCH, WIDTH)).astype(np.float32))
    calls, rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20, 5
    for prefix, activation in (("", jnp.tanh), ("relu_", lambda h: jnp.maximum(h, 0.0))):
        def loss(p, x, y, activation=activation):
            return jnp.mean(jnp.square(mlp(p, x, activation) - y))
        fwd = best_seconds(jax.jit(loss), (params, x, y), calls, rounds)
        print(f"{prefix}forward {fwd:.6g} s", flush=True)
        vg = best_seconds(jax.jit(jax.value_and_grad(loss)), (params, x, y), calls, rounds)
        print(f"{prefix}value_and_grad {vg:.6g} s", flush=True)


if __name__ == "__main__":
    sys.exit(main())
