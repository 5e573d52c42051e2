# JAX baseline of bench/conv.cpp: a ResNet-style block (3x3 convolution, relu, 2x2 max-pool)
# forward and backward as one jit(value_and_grad) over the input and the kernel, float32,
# NHWC, batch 32, 64 channels, 56x56. Prints `conv.resnet_block_jax_s <seconds> s` (the
# best of the rounds). Run by the bench through $TESSEL_JAX_PYTHON.
import sys
import time

import jax
import jax.numpy as jnp
from jax import lax

batch = int(sys.argv[1]) if len(sys.argv) > 1 else 32
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5


def block(x, w):
    y = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    y = jnp.maximum(y, 0.0)
    y = lax.reduce_window(y, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    return jnp.sum(y)


step = jax.jit(jax.value_and_grad(block, argnums=(0, 1)))
kx, kw = jax.random.split(jax.random.PRNGKey(0))
x = jax.random.uniform(kx, (batch, 56, 56, 64), jnp.float32, -1.0, 1.0)
w = jax.random.uniform(kw, (3, 3, 64, 64), jnp.float32, -0.1, 0.1)
jax.block_until_ready(step(x, w))
best = 1e30
for _ in range(rounds):
    t0 = time.perf_counter()
    jax.block_until_ready(step(x, w))
    best = min(best, time.perf_counter() - t0)
print(f"conv.resnet_block_jax_s {best:.6g} s")
