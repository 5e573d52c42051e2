"""JAX's tanh, exp, log and sin of n float32 (jit on CPU), for bench_math's math.<fn>_vs_jax.

Usage: python jax_math.py N REPEATS  (prints `jax_<fn>_s S`: the best of REPEATS calls each,
after a warm-up call that compiles; the inputs span the ranges bench/math.cpp uses)."""
import sys

import jax
import jax.numpy as jnp
import numpy as np

from jax_linalg import best_seconds  # the timing of bench/baselines/jax_linalg.py

n, repeats = int(sys.argv[1]), int(sys.argv[2])
u = np.random.default_rng(0).random(n, dtype=np.float32)
for name, fn, lo, hi in (("tanh", jnp.tanh, -5, 5), ("exp", jnp.exp, -20, 20), ("log", jnp.log, 1e-3, 1e3),
                         ("sin", jnp.sin, -100, 100)):
    x = jnp.asarray((u * (hi - lo) + lo).astype(np.float32))
    print("jax_" + name + "_s", best_seconds(jax.jit(fn), (x,), 1, repeats), "s", flush=True)
