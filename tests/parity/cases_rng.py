"""Parity cases of lax.rng_bit_generator with RandomAlgorithm.RNG_THREE_FRY (the default, Philox,
is in cases_lax.py): bits and new key, bit for bit, for several keys, shapes (odd, even, scalar,
rank 3) and both 32- and 64-bit outputs."""
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

KEYS = [np.array([1, 2, 3, 4], np.uint32), np.array([0xDEADBEEF, 7, 0xFFFFFFFF, 0xFFFFFFFF], np.uint32),
        np.array([0, 0, 0, 0], np.uint32), np.array([0x9E3779B9, 0x12345678, 5, 0], np.uint32)]
SHAPES = [(8,), (3, 5), (), (2, 3, 4), (5,), (1, 7), (4, 1, 3)]


def cases(s):
    for i, key in enumerate(KEYS):
        for shape in SHAPES:
            for dtype in ("uint32", "uint64"):
                s.case("threefry.rng_bit_generator",
                       lambda k, shape, dtype: list(lax.rng_bit_generator(
                           k, shape, jnp.dtype(dtype), algorithm=lax.RandomAlgorithm.RNG_THREE_FRY)),
                       [key], {"shape": shape, "dtype": dtype},
                       name=f"threefry_{i}_{'x'.join(map(str, shape)) or 'scalar'}_{dtype}")
