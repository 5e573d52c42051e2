#!/usr/bin/env python3
"""Checks tessel's scalar::xla_rsqrt (src/backend/cpu/scalar.h) against XLA's CPU rsqrt, as JAX
0.10.2's jitted lax.rsqrt and the rewritten c / sqrt(x) (gamma's (1/3) / sqrt(d)) compute it.

Run with a Python that has JAX 0.10.2 and a C++ compiler on the path, from the repository root:
    /work/venv-jax/bin/python tests/parity/tools/rsqrt_vs_xla.py

XLA's x86 rsqrt is the processor's estimate (rsqrtss/rsqrtps in float32, AVX-512's rsqrt14 in
float64) refined by Newton steps; which estimate depends on the processor, so the figures hold
for the machine the script runs on. The script compiles scalar.h twice, as the library is
compiled and as generated kernels are (-march=native), and prints per dtype and array size how
many of JAX's results differ from each (NaNs of either sign count as equal). For contrast it
prints how many differ from the correctly rounded 1/sqrt(x). Inputs: every float32 in [0.5, 2)
(both exponent parities, so every estimate table entry), random magnitudes over the whole
range, specials, subnormals and negatives; half types go through float32, as XLA upcasts them.
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

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
PROBE = r"""
#include "backend/cpu/scalar.h"
extern "C" void rsqrt32(const float* x, float* r, long n) {
  for (long i = 0; i < n; ++i) r[i] = tessel::scalar::xla_rsqrt(x[i]); }
extern "C" void rsqrt64(const double* x, double* r, long n) {
  for (long i = 0; i < n; ++i) r[i] = tessel::scalar::xla_rsqrt(x[i]); }
"""
# The library's flags and the generated kernels' (src/compiler/kernel_cache.cpp).
BUILDS = {"library": ["-O2"], "kernel": ["-O3", "-march=native"]}


def library(flags):
    d = tempfile.mkdtemp()
    src, lib = os.path.join(d, "probe.cpp"), os.path.join(d, "probe.so")
    with open(src, "w") as f:
        f.write(PROBE)
    subprocess.check_call(["c++", "-std=c++20", *flags, "-ffp-contract=off", "-fno-math-errno", "-shared", "-fPIC",
                           "-I", os.path.join(ROOT, "src"), "-o", lib, src])
    return ctypes.CDLL(lib)


def call(fn, x):
    x = np.ascontiguousarray(x)
    r = np.empty_like(x)
    fn(x.ctypes.data_as(ctypes.c_void_p), r.ctypes.data_as(ctypes.c_void_p), ctypes.c_long(x.size))
    return r


def differing(a, b):
    u = {2: np.uint16, 4: np.uint32, 8: np.uint64}[a.itemsize]
    nan = np.isnan(a.astype(np.float64)) & np.isnan(b.astype(np.float64))
    return int(((a.view(u) != b.view(u)) & ~nan).sum())


def inputs(rng, dtype, n):
    info = np.finfo(dtype)
    tiny = float(info.tiny)
    specials = np.array([0.0, -0.0, 1.0, -1.0, 4.0, 0.25, tiny, tiny / 4, -tiny / 4, float(info.max), np.inf,
                         -np.inf, np.nan, 2 / 3, 1e-30, 1e30])
    lo, hi = np.log2(tiny), np.log2(float(info.max))
    parts = [specials, np.exp2(rng.uniform(lo, hi, n)), rng.uniform(2 / 3, 40, n), -rng.uniform(0, 10, n // 10),
             rng.uniform(0, tiny, n // 10)]
    if dtype == np.float32:
        parts.append(np.arange(0x3F000000, 0x40000000, dtype=np.uint32).view(np.float32))
    with np.errstate(over="ignore"):
        return np.concatenate([p.astype(dtype) for p in parts])


def main():
    libs = {name: library(flags) for name, flags in BUILDS.items()}
    rng = np.random.default_rng(29)
    jrsqrt = jax.jit(jax.lax.rsqrt)
    third = jax.jit(lambda x: (1 / 3) / jnp.sqrt(x))  # as jax.random.gamma writes c
    for dtype, fn in [(np.float32, "rsqrt32"), (np.float64, "rsqrt64")]:
        x = inputs(rng, dtype, 3_000_000)
        want = np.asarray(jrsqrt(x))
        mine = {name: call(getattr(lib, fn), x) for name, lib in libs.items()}
        with np.errstate(divide="ignore", invalid="ignore"):
            rounded = (1 / np.sqrt(x.astype(np.float64))).astype(dtype)
        print(f"{dtype.__name__} rsqrt, {x.size} inputs: " +
              ", ".join(f"{name} {differing(want, m)} differ" for name, m in mine.items()) +
              f" (correctly rounded 1/sqrt: {differing(want, rounded)} differ)")
        # XLA picks scalar or vector estimates by array size: check small arrays one by one.
        for size in [1, 3, 8, 17, 100, 1000, 4096]:
            chunk = x[rng.integers(0, x.size, 20 * size)].reshape(20, size)
            got = np.concatenate([np.asarray(jrsqrt(row)) for row in chunk])
            bad = sum(differing(got, call(getattr(lib, fn), chunk.ravel())) for lib in libs.values())
            print(f"  size {size}: {bad} differ")
        pos = x[(x > 0) & np.isfinite(x)]
        want_third = np.asarray(third(pos))
        mine_third = (dtype(1 / 3) * call(getattr(libs["library"], fn), pos)).astype(dtype)
        print(f"  (1/3)/sqrt(x) as jitted, {pos.size} inputs: {differing(want_third, mine_third)} differ")
    for half in [np.float16, ml_dtypes.bfloat16]:
        with np.errstate(over="ignore"):
            x = inputs(rng, np.float32, 1_000_000).astype(half)
        mine = call(libs["library"].rsqrt32, x.astype(np.float32)).astype(half)
        print(f"{np.dtype(half).name} rsqrt through float32, {x.size} inputs: "
              f"{differing(np.asarray(jrsqrt(x)), mine)} differ")


if __name__ == "__main__":
    main()
