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

    distributions(s, key)


def distributions(s, key):
    """jax.random's samplers (include/tessel/random_distributions.h). Integer and boolean
    draws are exact; floats through log/tan/erf_inv/pow get MATH_TOL."""
    keys = [key, np.asarray(jax.random.PRNGKey(0)), np.asarray(jax.random.PRNGKey(2**31 + 5))]
    f32 = lambda v: np.asarray(v, np.float32)
    for i, k in enumerate(keys):
        s.case("random.randint", lambda k, lo, hi, shape, dtype: jax.random.randint(k, shape, lo, hi, dtype),
               [k, np.int32(-5), np.array([3, 10, 1000, 2**31 - 1, -7], np.int32)], {"shape": (3, 5), "dtype": "int32"},
               name=f"random_randint_int32_{i}")
    for dtype, lo, hi in [("int8", -100, 100), ("uint8", 0, 255), ("int16", -3, 30000), ("uint32", 0, 2**31 - 1)]:
        s.case("random.randint", lambda k, lo, hi, shape, dtype: jax.random.randint(k, shape, lo, hi, dtype),
               [key, np.int32(lo), np.int32(hi)], {"shape": (17,), "dtype": dtype})
    s.case("random.randint", lambda k, lo, hi, shape, dtype: jax.random.randint(k, shape, lo, hi, dtype),
           [key, np.int64(-2**40), np.int64(2**50)], {"shape": (6,), "dtype": "int64"}, name="random_randint_int64")
    for i, k in enumerate(keys):
        s.case("random.bernoulli", lambda k, p, shape: jax.random.bernoulli(k, p, shape),
               [k, f32([0.0, 0.3, 0.5, 0.9, 1.0])], {"shape": (4, 5)}, name=f"random_bernoulli_{i}")
    s.case("random.bernoulli", lambda k, p, shape: jax.random.bernoulli(k, p, shape),
           [key, np.array(0.25, np.float64)], {"shape": (9,)}, name="random_bernoulli_float64")
    logits = rand_logits = np.log(np.array([[0.1, 0.2, 0.3, 0.4, 1e-3], [1, 1, 1, 1, 1],
                                            [5, 0.1, 0.1, 0.1, 3]], np.float32))
    s.case("random.categorical", lambda k, l, axis, shape, replace: jax.random.categorical(k, l, axis, shape, replace),
           [key, logits], {"axis": -1, "shape": None, "replace": True}, name="random_categorical_last")
    s.case("random.categorical", lambda k, l, axis, shape, replace: jax.random.categorical(k, l, axis, shape, replace),
           [key, rand_logits], {"axis": 0, "shape": (7, 5), "replace": True}, name="random_categorical_axis0")
    s.case("random.categorical", lambda k, l, axis, shape, replace: jax.random.categorical(k, l, axis, shape, replace),
           [keys[1], logits], {"axis": 1, "shape": (4, 3), "replace": False}, name="random_categorical_noreplace")
    for dtype in ["float32", "float64"]:
        lo = np.asarray(-1.5, dtype)
        hi = np.asarray([0.5, 2.0, np.inf], dtype)
        s.case("random.truncated_normal", lambda k, lo, hi, shape, dtype: jax.random.truncated_normal(k, lo, hi, shape, dtype),
               [key, lo, hi], {"shape": (4, 3), "dtype": dtype}, tol=MATH_TOL)
        for name in ["gumbel", "exponential", "laplace", "logistic", "cauchy", "maxwell"]:
            fn = getattr(jax.random, name)
            s.case(f"random.{name}", lambda k, shape, dtype, fn=fn: fn(k, shape, dtype), [key],
                   {"shape": (3, 7), "dtype": dtype}, tol=MATH_TOL)
    for name in ["gumbel", "exponential", "laplace", "logistic", "cauchy"]:
        fn = getattr(jax.random, name)
        for i, k in enumerate(keys[1:]):
            s.case(f"random.{name}", lambda k, shape, dtype, fn=fn: fn(k, shape, dtype), [k],
                   {"shape": (64,), "dtype": "float32"}, tol=MATH_TOL, name=f"random_{name}_key{i}")
    for dtype in ["int32", "float32", "int8"]:
        s.case("random.rademacher", lambda k, shape, dtype: jax.random.rademacher(k, shape, dtype), [key],
               {"shape": (11,), "dtype": dtype})
    sig = f32([0.5, 1.0, 2.0])
    s.case("random.lognormal", lambda k, sg, shape, dtype: jax.random.lognormal(k, sg, shape, dtype), [key, sig],
           {"shape": (2, 3), "dtype": "float32"}, tol=MATH_TOL)
    s.case("random.pareto", lambda k, b, shape, dtype: jax.random.pareto(k, b, shape, dtype), [key, sig],
           {"shape": (2, 3), "dtype": "float32"}, tol=MATH_TOL)
    s.case("random.weibull_min", lambda k, sc, c, shape, dtype: jax.random.weibull_min(k, sc, c, shape, dtype),
           [key, f32(2.0), sig], {"shape": (4, 3), "dtype": "float32"}, tol=MATH_TOL)
    s.case("random.rayleigh", lambda k, sc, shape, dtype: jax.random.rayleigh(k, sc, shape, dtype), [key, sig],
           {"shape": (2, 3), "dtype": "float32"}, tol=MATH_TOL)
    s.case("random.wald", lambda k, m, shape, dtype: jax.random.wald(k, m, shape, dtype), [key, sig],
           {"shape": (4, 3), "dtype": "float32"}, tol=MATH_TOL)
    s.case("random.triangular", lambda k, l, m, r, shape, dtype: jax.random.triangular(k, l, m, r, shape, dtype),
           [key, f32(-1.0), f32([0.0, 0.5]), f32(2.0)], {"shape": (3, 2), "dtype": "float32"}, tol=MATH_TOL)
    s.case("random.double_sided_maxwell",
           lambda k, loc, sc, shape, dtype: jax.random.double_sided_maxwell(k, loc, sc, shape, dtype),
           [key, f32([0.0, 1.0]), f32(2.0)], {"shape": (3,), "dtype": "float32"}, tol=MATH_TOL)
    s.case("random.geometric", lambda k, p, shape, dtype: jax.random.geometric(k, p, shape, dtype),
           [key, f32([0.05, 0.5, 0.99])], {"shape": (5, 3), "dtype": "int32"})
    s.case("random.key_data", jax.random.key_data, [key])
    s.case("random.wrap_key_data", lambda d: jax.random.key_data(jax.random.wrap_key_data(d)),
           [np.asarray(jax.random.split(jax.random.PRNGKey(1), 3))])
    s.case("random.clone", lambda k: jax.random.key_data(jax.random.clone(jax.random.wrap_key_data(k))), [key])
