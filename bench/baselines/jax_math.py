"""JAX's tanh, exp, log and sin of n float32 (jit on CPU), for bench_math's math.<fn>_vs_jax.

Usage: python jax_math.py N REPEATS  (prints `jax_<fn>_s S`: the best of REPEATS calls each,
after a warm-up call that compiles; the inputs span the ranges bench/math.cpp uses)."""
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

n, repeats = int(sys.argv[1]), int(sys.argv[2])
u = np.random.default_rng(0).random(n, dtype=np.float32)
for name, fn, lo, hi in (("tanh", jnp.tanh, -5, 5), ("exp", jnp.exp, -20, 20), ("log", jnp.log, 1e-3, 1e3),
                         ("sin", jnp.sin, -100, 100)):
    x = jnp.asarray((u * (hi - lo) + lo).astype(np.float32))
    f = jax.jit(fn)
    f(x).block_until_ready()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        f(x).block_until_ready()
        best = min(best, time.perf_counter() - t0)
    print("jax_" + name + "_s", best, "s", flush=True)
