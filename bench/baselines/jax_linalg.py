"""JAX's figures for bench/linalg.cpp: seconds per call of jitted jnp.linalg functions on the
same float32 inputs as tessel's run (one 1024 x 1024 matrix, a batch of 4096 8 x 8 matrices).

Prints `name seconds s` lines: {cholesky,solve,eigh,svd,qr}_{1024,4096x8}. Each figure is the
best of several rounds after a compiling call, as bench/linalg.cpp measures tessel.
"""
import sys
import time

import numpy as np

import jax
import jax.numpy as jnp


def inputs(batch, n, seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (batch, n, n)).astype(np.float32)
    spd = x @ np.swapaxes(x, -1, -2) + n * np.eye(n, dtype=np.float32)
    if batch == 1:
        spd, x = spd[0], x[0]
    return jnp.asarray(spd), jnp.asarray(x)


def best_seconds(f, args, calls, rounds):
    jax.block_until_ready(f(*args))
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            jax.block_until_ready(f(*args))
        best = min(best, (time.perf_counter() - t0) / calls)
    return best


def main():
    fns = {
        "cholesky": lambda a, b: jnp.linalg.cholesky(a),
        "solve": lambda a, b: jnp.linalg.solve(a, b),
        "eigh": lambda a, b: jnp.linalg.eigh(a),
        "svd": lambda a, b: jnp.linalg.svd(b, full_matrices=False),
        "qr": lambda a, b: jnp.linalg.qr(b),
    }
    for label, batch, n, calls, rounds in (("1024", 1, 1024, 1, 3), ("4096x8", 4096, 8, 5, 5)):
        spd, x = inputs(batch, n, 1)
        rhs = x[..., 0] if batch == 1 else x
        for name, f in fns.items():
            args = (spd, rhs) if name == "solve" else (spd, x)
            s = best_seconds(jax.jit(f), args, calls, rounds)
            print(f"{name}_{label} {s:.6g} s", flush=True)


if __name__ == "__main__":
    sys.exit(main())
