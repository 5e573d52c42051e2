"""JAX's figures for bench/random.cpp: jax.jit of one jax.random draw of N float32 (int32
for randint, uint32 for bits; N / 16 for gamma, whose rejection loop is slow) samples from
jax.random.PRNGKey(42) (the default threefry, partitionable as JAX 0.10.2's default), in
nanoseconds per sample, with a few of
the drawn values' bits for bench/random.cpp to compare.

Usage: jax_random.py N [ROUNDS]. Prints `name value [unit]` lines:
  <name>_ns        nanoseconds per sample (best of ROUNDS rounds of 3 calls)
  <name>_at_<i>    the bits of sample i (uint32, as an integer) at 17 indices i spread over the
                   M samples (sample_indices), for bench/random.cpp to compare
for name in bits, uniform, normal, randint, truncated_normal, gamma.
"""
import sys
import time

import numpy as np

import jax
import jax.numpy as jnp


def sample_indices(m):
    """The samples whose bits are compared: 16 spread over [0, m) and the last (as bench/random.cpp)."""
    return [k * (m // 16) + k for k in range(16)] + [m - 1]


def draws(n):
    """name -> function of the key drawing n samples (the same draws as bench/random.cpp)."""
    return {
        "bits": lambda k: jax.random.bits(k, (n,), jnp.uint32),
        "uniform": lambda k: jax.random.uniform(k, (n,), jnp.float32),
        "normal": lambda k: jax.random.normal(k, (n,), jnp.float32),
        "randint": lambda k: jax.random.randint(k, (n,), 0, 1000, jnp.int32),
        "truncated_normal": lambda k: jax.random.truncated_normal(k, -2.0, 2.0, (n,), jnp.float32),
        "gamma": lambda k: jax.random.gamma(k, 2.5, (n // 16,), jnp.float32),
    }


def main():
    n = int(sys.argv[1])
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    key = jax.random.PRNGKey(42)
    for name, f in draws(n).items():
        g = jax.jit(f)
        out = np.asarray(jax.block_until_ready(g(key)))
        words, m = out.view(np.uint32), out.size
        for i in sample_indices(m):
            print(f"{name}_at_{i} {int(words[i])}", flush=True)
        best = float("inf")
        for _ in range(rounds):
            t0 = time.perf_counter()
            for _ in range(3):
                jax.block_until_ready(g(key))
            best = min(best, (time.perf_counter() - t0) / 3)
        print(f"{name}_ns {best / m * 1e9:.6g} ns", flush=True)


if __name__ == "__main__":
    sys.exit(main())
