# How the *_jax_values.py generators print a float for a C++ initializer: repr, with NaN and
# the infinities as the names the tests define for them (N, I, -I).
import numpy as np


def num(v):
    v = float(v)
    if np.isnan(v):
        return "N"
    if np.isinf(v):
        return "I" if v > 0 else "-I"
    return repr(v)
