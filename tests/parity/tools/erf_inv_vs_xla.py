#!/usr/bin/env python3
"""How far tessel's float32 erf_inv formula is from XLA's, over every value random.normal can
feed it (docs/random.md): the 2^23 uniform draws u = fma(f - 1, hi - lo, lo) for f in [1, 2).

Run with a Python that has JAX 0.10.2: /work/venv-jax/bin/python tests/parity/tools/erf_inv_vs_xla.py
It prints, for each way of evaluating w = -log1p(-u^2) (glibc's log1pf, XLA's log1p) and the
Horner steps (rounded one by one, or fused multiply-adds), the share of inputs whose result
differs from JAX's lax.erf_inv and the largest distance in ulp. The Horner coefficients are
Giles's (src/backend/cpu/scalar.h). The last line (XLA's log1p, fused steps) is what tessel's
erf_inv now computes, with XLA's log1p and float32 log reproduced in scalar.h (xla_log1p,
xla_log): 0 inputs differ.
"""
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

CENTRAL = [2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
           -0.00417768164, 0.246640727, 1.50140941]
TAIL = [-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
        0.00943887047, 1.00167406, 2.83297682]


def horner(coeffs, w, fused):
    p = np.full_like(w, np.float32(coeffs[0]))
    for c in coeffs[1:]:
        if fused:  # one rounding: the float32 product is exact in float64
            p = (p.astype(np.float64) * w.astype(np.float64) + np.float64(np.float32(c))).astype(np.float32)
        else:
            p = (np.float32(c) + p * w).astype(np.float32)
    return p


def main():
    lo, hi = np.nextafter(np.float32(-1), np.float32(1)), np.float32(1)
    f = (np.arange(1 << 23, dtype=np.uint32) | np.uint32(0x3F800000)).view(np.float32) - np.float32(1)
    u = np.maximum(lo, (f.astype(np.float64) * np.float64(hi - lo) + np.float64(lo)).astype(np.float32))
    drawn = np.asarray(jax.random.uniform(jax.random.PRNGKey(0), (1 << 16,), jnp.float32, lo, hi))
    assert np.isin(drawn, u).all(), "the input set misses some of JAX's uniform draws"
    want = np.asarray(jax.jit(lax.erf_inv)(u)).view(np.int32).astype(np.int64)
    y = (-u * u).astype(np.float32)
    for log1p_name, l in [("glibc log1pf", np.log1p(y)), ("XLA log1p", np.asarray(jax.jit(jnp.log1p)(y)))]:
        w = (-l).astype(np.float32)
        for fused in (False, True):
            p = np.where(w < 5, horner(CENTRAL, (w - np.float32(2.5)).astype(np.float32), fused),
                         horner(TAIL, (np.sqrt(w) - np.float32(3)).astype(np.float32), fused))
            got = (p * u).astype(np.float32).view(np.int32).astype(np.int64)
            d = np.abs(got - want)
            print(f"{log1p_name:12s} {'fused' if fused else 'rounded'} Horner: {np.mean(d != 0) * 100:.2f}% of "
                  f"{u.size} inputs differ, at most {d.max()} ulp")


if __name__ == "__main__":
    main()
