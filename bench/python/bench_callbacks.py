"""Python host callbacks: `python.io_callback_us`, the cost of one io_callback of a Python function
(f32[] in, f32[] out) per iteration of a jitted fori_loop, next to JAX's
jax.experimental.io_callback in the same loop, measured in the same run (through
$TESSEL_JAX_PYTHON, a Python with JAX; left out without it). The loop's own cost is measured
without the callback and subtracted, for both. Rounds alternate between tessel and JAX; the
figure is the median of the rounds. Goal: 10x cheaper than JAX."""

import os
import statistics
import subprocess
import sys

ITERS = 2000
ROUNDS = 5

# The timed code, the same text for both libraries.
TIMER = r'''
import time, numpy as np
def setup(lib, lax, io_callback, jnp):
    spec = lib.ShapeDtypeStruct((), np.float32)
    host = lambda v: v + np.float32(1)
    def with_cb(n, x):
        return lax.fori_loop(0, n, lambda i, c: io_callback(host, spec, c), x)
    def without(n, x):
        return lax.fori_loop(0, n, lambda i, c: c + 1.0, x)
    fs = lib.jit(with_cb), lib.jit(without)
    x = jnp.asarray(np.float32(0))
    for f in fs:
        f(jnp.asarray(np.int32(4)), x).block_until_ready()
    return fs, x, jnp
def per_call_us(fs, x, jnp, iters):
    n = jnp.asarray(np.int32(iters))
    t = []
    for f in fs:
        t0 = time.perf_counter()
        r = f(n, x)
        r.block_until_ready()
        t.append(time.perf_counter() - t0)
    assert float(r) == iters
    return (t[0] - t[1]) / iters * 1e6
'''

JAX_ROUND = TIMER + r'''
import sys, jax, jax.numpy as jnp
from jax.experimental import io_callback
fs, x, jnp = setup(jax, jax.lax, io_callback, jnp)
print(per_call_us(fs, x, jnp, int(sys.argv[1])), flush=True)
'''


def main():
    ns = {}
    exec(TIMER, ns)
    import tessel
    import tessel.numpy as tnp
    fs, x, jnp = ns["setup"](tessel, tessel.lax, tessel.io_callback, tnp)
    jax_python = os.environ.get("TESSEL_JAX_PYTHON")
    ours, theirs = [], []
    for _ in range(ROUNDS):
        ours.append(ns["per_call_us"](fs, x, jnp, ITERS))
        if jax_python:
            r = subprocess.run([jax_python, "-c", JAX_ROUND, str(ITERS)], capture_output=True, text=True,
                               env=dict(os.environ, JAX_PLATFORMS="cpu"))
            if r.returncode != 0:
                print(f"bench_callbacks: JAX failed: {r.stderr[-500:]}", file=sys.stderr)
                jax_python = None
                continue
            theirs.append(float(r.stdout.split()[-1]))
    med = statistics.median
    print(f"python.io_callback_us {med(ours):.3f} us")
    if theirs:
        print(f"python.io_callback_us_jax {med(theirs):.3f} us")
        print(f"python.io_callback_jax_over_tessel {med(theirs) / med(ours):.1f} ratio")


if __name__ == "__main__":
    main()
