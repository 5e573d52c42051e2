"""Python dispatch cost: `python.eager_add_us` (x + y on two f32[8] arrays, eagerly),
`python.jit_call_us` (a jitted function of two f32[8] arrays called again) and
`python.jit_numpy_call_us` (the same function called with two NumPy f32[8] arrays, which
tessel wraps without a copy and JAX transfers), each next to
JAX's same calls measured in the same run (through $TESSEL_JAX_PYTHON, a Python with JAX;
left out without it). Rounds alternate between tessel and JAX; the figure is the median of
the rounds' per-call means. Goal: at most half of JAX's."""

import os
import statistics
import subprocess
import sys
import time

CALLS = 2000
ROUNDS = 7

# The timed code, the same text for both libraries (`lib` is tessel or jax).
TIMER = r'''
import time, numpy as np
def setup(lib, jnp):
    x = jnp.asarray(np.arange(8, dtype=np.float32)); y = jnp.asarray(np.ones(8, np.float32))
    f = lib.jit(lambda a, b: a * b + a)
    f(x, y).block_until_ready()
    (x + y).block_until_ready()
    f(np.asarray(x), np.asarray(y)).block_until_ready()
    return x, y, f
def eager_add(x, y, f, calls):
    t = time.perf_counter()
    for _ in range(calls):
        z = x + y
    z.block_until_ready()
    return (time.perf_counter() - t) / calls * 1e6
def jit_call(x, y, f, calls, numpy=False):
    if numpy:
        x, y = np.array(x), np.array(y)
    t = time.perf_counter()
    for _ in range(calls):
        z = f(x, y)
    z.block_until_ready()
    return (time.perf_counter() - t) / calls * 1e6
'''

JAX_ROUND = TIMER + r'''
import sys, jax, jax.numpy as jnp
x, y, f = setup(jax, jnp)
calls, rounds = int(sys.argv[1]), int(sys.argv[2])
for _ in range(rounds):
    print(eager_add(x, y, f, calls), jit_call(x, y, f, calls), jit_call(x, y, f, calls, True), flush=True)
'''


def main():
    ns = {}
    exec(TIMER, ns)
    import tessel
    import tessel.numpy as tnp
    x, y, f = ns["setup"](tessel, tnp)
    jax_python = os.environ.get("TESSEL_JAX_PYTHON")
    t_add, t_jit, t_np, j_add, j_jit, j_np = [], [], [], [], [], []
    for _ in range(ROUNDS):
        t_add.append(ns["eager_add"](x, y, f, CALLS))
        t_jit.append(ns["jit_call"](x, y, f, CALLS))
        t_np.append(ns["jit_call"](x, y, f, CALLS, True))
        if jax_python:
            r = subprocess.run([jax_python, "-c", JAX_ROUND, str(CALLS), "1"], capture_output=True, text=True,
                               env=dict(os.environ, JAX_PLATFORMS="cpu"))
            if r.returncode != 0:
                print(f"bench_dispatch: JAX failed: {r.stderr[-500:]}", file=sys.stderr)
                jax_python = None
                continue
            a, j, n = map(float, r.stdout.split())
            j_add.append(a)
            j_jit.append(j)
            j_np.append(n)
    med = statistics.median
    print(f"python.eager_add_us {med(t_add):.3f} us")
    print(f"python.jit_call_us {med(t_jit):.3f} us")
    print(f"python.jit_numpy_call_us {med(t_np):.3f} us")
    if j_add:
        print(f"python.eager_add_us_jax {med(j_add):.3f} us")
        print(f"python.jit_call_us_jax {med(j_jit):.3f} us")
        print(f"python.eager_add_vs_jax {med(t_add) / med(j_add):.3f} ratio")
        print(f"python.jit_call_vs_jax {med(t_jit) / med(j_jit):.3f} ratio")
        print(f"python.jit_numpy_call_us_jax {med(j_np):.3f} us")
        print(f"python.jit_numpy_call_vs_jax {med(t_np) / med(j_np):.3f} ratio")


if __name__ == "__main__":
    main()
