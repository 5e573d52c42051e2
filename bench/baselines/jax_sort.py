"""JAX's sort and argsort of n random float32 (jit on CPU), for bench_sort's sort.vs_jax.

Usage: python jax_sort.py N REPEATS  (prints `jax_sort_s S` and `jax_argsort_s S`: the best
of REPEATS calls each, after a warm-up call that compiles)."""
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

n, repeats = int(sys.argv[1]), int(sys.argv[2])
x = jnp.asarray(np.random.default_rng(0).random(n, dtype=np.float32) * 2 - 1)
for name, fn in (("jax_sort_s", jax.jit(jnp.sort)), ("jax_argsort_s", jax.jit(jnp.argsort))):
    fn(x).block_until_ready()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(x).block_until_ready()
        best = min(best, time.perf_counter() - t0)
    print(name, best, "s", flush=True)
