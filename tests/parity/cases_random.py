"""Parity cases of include/tessel/random.h (jax.random with raw uint32[2] keys). Random bits,
keys and integer draws are exact; floats made from them get a tolerance where the recipe
goes through a transcendental function (normal: erf_inv)."""
import jax
import jax.extend.random
import numpy as np

from parity_lib import MATH_TOL

KEYS = [0, 42, 2**32 - 1, -1]


def cases(s):
    for seed in KEYS:
        # tessel reads the seed as 64 bits (a negative seed's high word is all ones), as JAX with x64.
        s.case("random.key", lambda seed: jax.random.PRNGKey(seed), [], {"seed": seed}, x64=True)
    key = np.asarray(jax.random.PRNGKey(7))
    for num in [2, 3, 5]:
        s.case("random.split", lambda k, num: jax.random.split(k, num), [key], {"num": num})
    for data in [0, 1, 12345, 2**31 - 1]:
        s.case("random.fold_in", jax.random.fold_in, [key, np.uint32(data)])
    for dtype, shape in [("uint32", (3, 5)), ("uint8", (7,)), ("uint16", (2, 3)), ("uint64", (4,)),
                         ("uint32", ()), ("uint32", (0, 2)), ("uint32", (1025,))]:
        s.case("random.bits", lambda k, shape, dtype: jax.random.bits(k, shape, dtype), [key],
               {"shape": shape, "dtype": dtype})
    for dtype in ["float32", "float64"]:
        s.case("random.uniform", lambda k, shape, dtype: jax.random.uniform(k, shape, dtype), [key],
               {"shape": (4, 5), "dtype": dtype})
        s.case("random.uniform", lambda k, lo, hi, shape, dtype: jax.random.uniform(k, shape, dtype, lo, hi),
               [key, np.array(-2.0, dtype), np.array([1.0, 3.0, 5.0], dtype)], {"shape": (2, 3), "dtype": dtype},
               name=f"random_uniform_{dtype}_bounds")
        # normal = sqrt(2) * erf_inv(uniform in (-1, 1)): erf_inv's polynomial, within a few ulp.
        s.case("random.normal", lambda k, shape, dtype: jax.random.normal(k, shape, dtype), [key],
               {"shape": (3, 7), "dtype": dtype}, tol=MATH_TOL)
    s.case("random.normal", lambda k, shape, dtype: jax.random.normal(k, shape, dtype), [key],
           {"shape": (5,), "dtype": "complex64"}, tol=MATH_TOL)
    for k2 in [jax.random.PRNGKey(0), jax.random.PRNGKey(3)]:
        count = np.arange(6, dtype=np.uint32).reshape(2, 3)
        s.case("random.threefry_2x32", jax.extend.random.threefry_2x32, [np.asarray(k2), count])
    s.case("random.threefry_2x32", jax.extend.random.threefry_2x32, [key, np.arange(5, dtype=np.uint32)],
           name="random_threefry_2x32_odd")
