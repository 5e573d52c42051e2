"""JAX's figures for bench/linalg_composed.cpp: seconds per call of jitted jnp.linalg and
jax.scipy.linalg compositions on the inputs tessel's run uses (float32 pseudo-random matrices from the
same linear congruential sequence, plus a multiple of the identity).

Prints `name seconds s` lines, one per case of CASES. Each figure is the best of several
rounds after a compiling call, as bench/linalg_composed.cpp measures tessel.
"""
import numpy as np

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl

from jax_linalg import best_seconds  # the timing of bench/baselines/jax_linalg.py


def matrices(batch, n, diag):
    total = batch * n * n
    v = np.empty(total, np.float64)
    s = 1
    for k in range(total):  # the linear congruential sequence of bench/linalg_composed.cpp
        s = (1103515245 * s + 12345) % (1 << 31)
        v[k] = s / (1 << 31) * 2 - 1
    x = v.astype(np.float32).reshape(batch, n, n) + diag * np.eye(n, dtype=np.float32)
    return jnp.asarray(x[0] if batch == 1 else x)


CASES = {
    "expm_128": (lambda a: jsl.expm(a * 0.05), lambda: matrices(1, 128, 0.0)),
    "expm_4096x8": (lambda a: jsl.expm(a), lambda: matrices(4096, 8, 0.0)),
    "pinv_256": (lambda a: jnp.linalg.pinv(a), lambda: matrices(1, 256, 16.0)),
    "eig_256": (lambda a: jnp.linalg.eig(a), lambda: matrices(1, 256, 0.0)),
    "norm_nuc_256": (lambda a: jnp.linalg.norm(a, "nuc"), lambda: matrices(1, 256, 0.0)),
    "multi_dot_256": (lambda a: jnp.linalg.multi_dot([a[:, :32], a[:32], a, a[:, :8]]), lambda: matrices(1, 256, 0.0)),
    "vector_norm_3_4096x64": (lambda a: jnp.linalg.vector_norm(a, ord=3, axis=-1), lambda: matrices(4096, 64, 0.0)[:, 0]),
}


def main():
    for name, (fn, make) in CASES.items():
        print(f"{name} {best_seconds(jax.jit(fn), (make(),), 5, 5)} s", flush=True)


if __name__ == "__main__":
    main()
