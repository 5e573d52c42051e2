"""Baseline for bench/dispatch.cpp: NumPy's per-call overhead on one-element arrays.

Prints `name value unit` lines."""
import timeit

import numpy as np

a = np.ones(1, np.float32)
b = np.ones(1, np.float32)
n = 200_000
t = min(timeit.repeat(lambda: np.add(a, b), number=n, repeat=5))
print(f"numpy.add_us {t / n * 1e6:.3f} us")


def f(x, y, z):
    return x * y + z


c = np.ones(1, np.float32)
t = min(timeit.repeat(lambda: f(a, b, c), number=n, repeat=5))
print(f"numpy.fn3_us {t / n * 1e6:.3f} us")
