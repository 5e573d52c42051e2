#!/usr/bin/env python3
"""NumPy baseline of the shallow-water demo (examples/shallow_water).

The same physics as mpi4jax's examples/shallow_water.py on one process, in plain NumPy,
with the same initial state as the C++ demo (computed in float64, rounded once to the
model dtype). Prints `seconds <t>` and `ms_per_step <v>` for the time-stepping loop and
optionally saves the interior surface height as .npy, so the results can be compared:

    shallow_water_numpy.py --nx 360 --ny 180 --steps 100 --dtype float32 --out h_numpy.npy

How bench/shallow_water.cpp runs it (NumPy's best chance): with /usr/bin/python3 and glibc
malloc settings that keep the step's large temporaries (6.5 MB each at 1800x900) on the heap
instead of mmap'ing, zero-filling and unmapping them on every operation:

    MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=1073741824 \
    MALLOC_TOP_PAD_=268435456 /usr/bin/python3 shallow_water_numpy.py --nx 1800 --ny 900 ...

(32 MiB is the largest mmap threshold glibc accepts.) Measured on 2 cores at 1800x900:
10x fewer page faults and 5-15% faster steps than with the defaults. The script prints
`malloc_tuned 1` when they are in effect.
"""

import argparse
import math
import os
import time

import numpy as np

DX = DY = 5e3
GRAVITY = 9.81
DEPTH = 100.0
CORIOLIS_F = 2e-4
CORIOLIS_BETA = 2e-11
LATERAL_VISCOSITY = 1e-3 * CORIOLIS_F * DX**2
ADAMS_BASHFORTH_A = 1.5 + 0.1
ADAMS_BASHFORTH_B = -(0.5 + 0.1)
# A Python float (not np.float64), so float32 arrays stay float32 under any NumPy version.
DT = float(0.125 * min(DX, DY) / math.sqrt(GRAVITY * DEPTH))

I = slice(1, -1)  # interior
P = slice(2, None)  # one cell east / north
M = slice(None, -2)  # one cell west / south


def enforce_boundaries(arr, grid):
    """Single process: periodic in x, and the northern wall for v (arrays are updated in place)."""
    arr[:, -1] = arr[:, 1]
    arr[:, 0] = arr[:, -2]
    if grid == "v":
        arr[-2, :] = 0.0
    return arr


def initial_state(nx, ny, dtype):
    x = np.arange(-1, nx + 1) * DX
    y = np.arange(-1, ny + 1) * DY
    yy, xx = np.meshgrid(y, x, indexing="ij")
    length_x = x[-2] - x[1]
    length_y = y[-2] - y[1]
    u0 = 10 * np.exp(-((yy - 0.5 * length_y) ** 2) / (0.02 * length_x) ** 2)
    coriolis = CORIOLIS_F + yy * CORIOLIS_BETA
    h_geostrophy = np.cumsum(-DY * u0 * coriolis / GRAVITY, axis=0)
    h0 = (
        DEPTH
        + h_geostrophy
        - h_geostrophy.mean()
        + 0.2 * np.sin(xx / length_x * 10 * np.pi) * np.cos(yy / length_y * 8 * np.pi)
    )
    h = enforce_boundaries(h0.astype(dtype), "h")
    u = enforce_boundaries(u0.astype(dtype), "u")
    v = enforce_boundaries(np.zeros_like(u), "v")
    zeros = [np.zeros_like(u) for _ in range(3)]
    return [h, u, v, *zeros], coriolis[I, I].astype(dtype)


def step(state, coriolis, first_step):
    h, u, v, dh, du, dv = state
    hc = enforce_boundaries(np.pad(h[I, I], 1, "edge"), "h")

    fe = np.zeros_like(u)
    fn = np.zeros_like(u)
    fe[I, I] = 0.5 * (hc[I, I] + hc[I, P]) * u[I, I]
    fn[I, I] = 0.5 * (hc[I, I] + hc[P, I]) * v[I, I]
    enforce_boundaries(fe, "u")
    enforce_boundaries(fn, "v")

    dh_new = dh.copy()
    dh_new[I, I] = -(fe[I, I] - fe[I, M]) / DX - (fn[I, I] - fn[M, I]) / DY

    q = np.zeros_like(u)
    ke = np.zeros_like(u)
    q[I, I] = coriolis + ((v[I, P] - v[I, I]) / DX - (u[P, I] - u[I, I]) / DY)
    q[I, I] *= 1.0 / (0.25 * (hc[I, I] + hc[I, P] + hc[P, I] + hc[P, P]))
    enforce_boundaries(q, "h")

    du_new = du.copy()
    dv_new = dv.copy()
    du_new[I, I] = -GRAVITY * (h[I, P] - h[I, I]) / DX + 0.5 * (
        q[I, I] * 0.5 * (fn[I, I] + fn[I, P]) + q[M, I] * 0.5 * (fn[M, I] + fn[M, P])
    )
    dv_new[I, I] = -GRAVITY * (h[P, I] - h[I, I]) / DY - 0.5 * (
        q[I, I] * 0.5 * (fe[I, I] + fe[P, I]) + q[I, M] * 0.5 * (fe[I, M] + fe[P, M])
    )
    ke[I, I] = 0.5 * (0.5 * (u[I, I] ** 2 + u[I, M] ** 2) + 0.5 * (v[I, I] ** 2 + v[M, I] ** 2))
    enforce_boundaries(ke, "h")

    du_new[I, I] += -(ke[I, P] - ke[I, I]) / DX
    dv_new[I, I] += -(ke[P, I] - ke[I, I]) / DY

    h, u, v = h.copy(), u.copy(), v.copy()
    if first_step:
        u[I, I] += DT * du_new[I, I]
        v[I, I] += DT * dv_new[I, I]
        h[I, I] += DT * dh_new[I, I]
    else:
        u[I, I] += DT * (ADAMS_BASHFORTH_A * du_new[I, I] + ADAMS_BASHFORTH_B * du[I, I])
        v[I, I] += DT * (ADAMS_BASHFORTH_A * dv_new[I, I] + ADAMS_BASHFORTH_B * dv[I, I])
        h[I, I] += DT * (ADAMS_BASHFORTH_A * dh_new[I, I] + ADAMS_BASHFORTH_B * dh[I, I])
    enforce_boundaries(h, "h")
    enforce_boundaries(u, "u")
    enforce_boundaries(v, "v")

    # Lateral friction; the v part differences v against u, mirroring upstream.
    fe[I, I] = LATERAL_VISCOSITY * (u[I, P] - u[I, I]) / DX
    fn[I, I] = LATERAL_VISCOSITY * (u[P, I] - u[I, I]) / DY
    enforce_boundaries(fe, "u")
    enforce_boundaries(fn, "v")
    u[I, I] += DT * ((fe[I, I] - fe[I, M]) / DX + (fn[I, I] - fn[M, I]) / DY)

    fe[I, I] = LATERAL_VISCOSITY * (v[I, P] - u[I, I]) / DX
    fn[I, I] = LATERAL_VISCOSITY * (v[P, I] - u[I, I]) / DY
    enforce_boundaries(fe, "u")
    enforce_boundaries(fn, "v")
    v[I, I] += DT * ((fe[I, I] - fe[I, M]) / DX + (fn[I, I] - fn[M, I]) / DY)

    return [h, u, v, dh_new, du_new, dv_new]


def parse_arguments(description, out_help):
    """The command line of both baselines: grid, steps, dtype and an optional .npy output."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nx", type=int, default=360)
    parser.add_argument("--ny", type=int, default=180)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    parser.add_argument("--out", help=out_help)
    return parser.parse_args()


def main():
    args = parse_arguments(__doc__, "save the interior surface height (ny, nx) as .npy")

    state, coriolis = initial_state(args.nx, args.ny, np.dtype(args.dtype))
    start = time.perf_counter()
    for k in range(args.steps):
        state = step(state, coriolis, k == 0)
    seconds = time.perf_counter() - start
    print(f"seconds {seconds:.4f}")
    print(f"ms_per_step {1e3 * seconds / args.steps:.4f}")
    print(f"malloc_tuned {int('MALLOC_MMAP_THRESHOLD_' in os.environ)}")
    if args.out:
        np.save(args.out, state[0][I, I])


if __name__ == "__main__":
    main()
