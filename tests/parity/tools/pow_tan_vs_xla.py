#!/usr/bin/env python3
"""Checks what tessel's ops::xla_pow and ops::xla_tan compute (src/backend/cpu/scalar.h) against
XLA's CPU pow and tan, as JAX 0.10.2's jitted functions compute them, on millions of inputs.

Run with a Python that has JAX 0.10.2 and a C compiler on the path:
    /work/venv-jax/bin/python tests/parity/tools/pow_tan_vs_xla.py

XLA calls glibc's scalar powf/pow and tanf/tan with the SSE control bits flush-to-zero and
denormals-are-zero set. tessel's functions call them without the bits and flush a subnormal
result, except for a subnormal operand, where they set the bits around the call. This script
builds both forms in a small C library and prints, per dtype, how many of JAX's results differ
from each (0 everywhere is the claim of docs/random.md), and, for contrast, how many differ from
the plain calls (subnormal results and subnormal bases) and, for tan, from sin/cos. Half types
go through float32, as XLA upcasts them.
"""
import ctypes
import os
import subprocess
import tempfile

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np

jax.config.update("jax_enable_x64", True)

C_SOURCE = r"""
#include <math.h>
#include <xmmintrin.h>
static unsigned enter(int ftz) { unsigned c = _mm_getcsr(); if (ftz) _mm_setcsr(c | 0x8040u); return c; }
void pow32(const float* x, const float* y, float* r, long n, int ftz) {
  unsigned c = enter(ftz); for (long i = 0; i < n; ++i) r[i] = powf(x[i], y[i]); _mm_setcsr(c); }
void pow64(const double* x, const double* y, double* r, long n, int ftz) {
  unsigned c = enter(ftz); for (long i = 0; i < n; ++i) r[i] = pow(x[i], y[i]); _mm_setcsr(c); }
void tan32(const float* x, float* r, long n, int ftz) {
  unsigned c = enter(ftz); for (long i = 0; i < n; ++i) r[i] = tanf(x[i]); _mm_setcsr(c); }
void tan64(const double* x, double* r, long n, int ftz) {
  unsigned c = enter(ftz); for (long i = 0; i < n; ++i) r[i] = tan(x[i]); _mm_setcsr(c); }
void sincos32(const float* x, float* r, long n, int ftz) {
  unsigned c = enter(ftz); for (long i = 0; i < n; ++i) r[i] = sinf(x[i]) / cosf(x[i]); _mm_setcsr(c); }
"""


def library():
    d = tempfile.mkdtemp()
    src, lib = os.path.join(d, "libm_calls.c"), os.path.join(d, "libm_calls.so")
    with open(src, "w") as f:
        f.write(C_SOURCE)
    subprocess.check_call(["cc", "-O2", "-fno-builtin", "-shared", "-fPIC", "-o", lib, src, "-lm"])
    return ctypes.CDLL(lib)


def call(fn, *xs, ftz=True):
    xs = [np.ascontiguousarray(x) for x in xs]
    r = np.empty_like(xs[0])
    ptr = lambda a: a.ctypes.data_as(ctypes.c_void_p)
    fn(*[ptr(x) for x in xs], ptr(r), ctypes.c_long(r.size), ctypes.c_int(int(ftz)))
    return r


def differing(a, b):
    """How many elements differ in their bits (NaNs of either sign count as equal)."""
    u = {2: np.uint16, 4: np.uint32, 8: np.uint64}[a.itemsize]
    nan = np.isnan(a.astype(np.float64)) & np.isnan(b.astype(np.float64))
    return int(((a.view(u) != b.view(u)) & ~nan).sum())


def subnormal(v):
    return (v != 0) & (np.abs(v) < np.finfo(v.dtype).tiny)


def tessel_form(fn, *xs):
    """Plain call, subnormal results flushed; with the control bits for subnormal operands."""
    plain = call(fn, *xs, ftz=False)
    plain = np.where(subnormal(plain), np.copysign(np.zeros_like(plain), plain), plain)
    odd = np.logical_or.reduce([subnormal(x) for x in xs])
    return np.where(odd, call(fn, *xs), plain)


def inputs(rng, dtype, n):
    """Bases (every sign and magnitude, specials and subnormals) and exponents (integers and
    fractions), and angles (small, large, subnormal)."""
    info = np.finfo(dtype)
    specials = np.array([0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 3.0, -3.0, float(info.tiny) / 4,
                         -float(info.tiny) / 4, float(info.tiny), np.inf, -np.inf, np.nan, 1e30, -1e30])
    grid_x, grid_y = (v.ravel() for v in np.meshgrid(specials, specials))
    big = 700.0 if dtype == np.float64 else 87.0
    with np.errstate(over="ignore"):
        x = np.concatenate([grid_x, rng.uniform(-4, 4, n), np.exp(rng.uniform(-big, big, n)),
                            rng.uniform(0, 1, n)]).astype(dtype)
        y = np.concatenate([grid_y, np.round(rng.uniform(-30, 30, n)), rng.uniform(-3, 3, n),
                            1 / rng.uniform(0.01, 1, n)]).astype(dtype)
        t = np.concatenate([specials, rng.uniform(-1e4, 1e4, n), rng.standard_normal(n) * float(info.tiny) / 2,
                            rng.uniform(-np.pi / 2, np.pi / 2, n)]).astype(dtype)
    return x, y, t


def main():
    lib = library()
    rng = np.random.default_rng(29)
    n = 1_000_000
    jpow, jtan = jax.jit(jax.lax.pow), jax.jit(jnp.tan)
    for dtype, powf, tanf in [(np.float32, lib.pow32, lib.tan32), (np.float64, lib.pow64, lib.tan64)]:
        x, y, t = inputs(rng, dtype, n)
        want_pow, want_tan = np.asarray(jpow(x, y)), np.asarray(jtan(t))
        print(f"{dtype.__name__} pow, {x.size} inputs: {differing(want_pow, call(powf, x, y))} differ, "
              f"tessel's form {differing(want_pow, tessel_form(powf, x, y))} "
              f"(without FTZ/DAZ: {differing(want_pow, call(powf, x, y, ftz=False))})")
        print(f"{dtype.__name__} tan, {t.size} inputs: {differing(want_tan, call(tanf, t))} differ, "
              f"tessel's form {differing(want_tan, tessel_form(tanf, t))} "
              f"(without FTZ/DAZ: {differing(want_tan, call(tanf, t, ftz=False))})")
        if dtype == np.float32:
            print(f"  float32 tan as sinf/cosf: {differing(want_tan, call(lib.sincos32, t))} differ")
    for half in [np.float16, ml_dtypes.bfloat16]:
        x, y, t = (v.astype(half) for v in inputs(rng, np.float32, n))
        mine_pow = call(lib.pow32, x.astype(np.float32), y.astype(np.float32)).astype(half)
        mine_tan = call(lib.tan32, t.astype(np.float32)).astype(half)
        print(f"{np.dtype(half).name} pow through float32: {differing(np.asarray(jpow(x, y)), mine_pow)} differ; "
              f"tan: {differing(np.asarray(jtan(t)), mine_tan)} differ")


if __name__ == "__main__":
    main()
