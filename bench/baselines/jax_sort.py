"""JAX's sort and argsort of n random float32 (jit on CPU), for bench_sort's sort.vs_jax.

Usage: python jax_sort.py N REPEATS  (prints `jax_sort_s S` and `jax_argsort_s S`: the best
of REPEATS calls each, after a warm-up call that compiles)."""
import sys

import jax
import jax.numpy as jnp
import numpy as np

from jax_linalg import best_seconds  # the timing of bench/baselines/jax_linalg.py

n, repeats = int(sys.argv[1]), int(sys.argv[2])
x = jnp.asarray(np.random.default_rng(0).random(n, dtype=np.float32) * 2 - 1)
for name, fn in (("jax_sort_s", jax.jit(jnp.sort)), ("jax_argsort_s", jax.jit(jnp.argsort))):
    print(name, best_seconds(fn, (x,), 1, repeats), "s", flush=True)
