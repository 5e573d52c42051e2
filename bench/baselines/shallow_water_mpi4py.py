#!/usr/bin/env python3
"""NumPy + mpi4py baseline of the decomposed shallow-water model (issue 6).

The physics of shallow_water_numpy.py (imported, not repeated) on a domain split over the
MPI processes as in the mpi4jax paper: nproc_y = min(nproc, 2) rows of nproc_x = nproc /
nproc_y blocks, each block with one halo cell on every side, halos exchanged with
Sendrecv (periodic in x, walls in y). Rank 0 prints `seconds <t>` and `ms_per_step <v>`
for the time-stepping loop and can save the gathered interior height as .npy:

    mpirun -np 2 /usr/bin/python3 shallow_water_mpi4py.py --nx 1800 --ny 900 --steps 200
"""

import os
import sys
import time

import numpy as np
from mpi4py import MPI

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shallow_water_numpy as sw  # noqa: E402

COMM = MPI.COMM_WORLD
NPROC_Y = min(COMM.size, 2)
NPROC_X = COMM.size // NPROC_Y
PY, PX = divmod(COMM.rank, NPROC_X)


def rank_of(py, px):
    return py * NPROC_X + px % NPROC_X


WEST, EAST = rank_of(PY, PX - 1), rank_of(PY, PX + 1)
SOUTH = rank_of(PY - 1, PX) if PY > 0 else None
NORTH = rank_of(PY + 1, PX) if PY < NPROC_Y - 1 else None


def enforce_boundaries(arr, grid):
    """Halo exchange: x periodic over the process row, y between process rows only; the
    northern wall for v on the northernmost row. Updates `arr` in place."""
    recv = np.empty_like(arr[:, 0])
    COMM.Sendrecv(np.ascontiguousarray(arr[:, 1]), dest=WEST, recvbuf=recv, source=EAST)
    arr[:, -1] = recv
    COMM.Sendrecv(np.ascontiguousarray(arr[:, -2]), dest=EAST, recvbuf=recv, source=WEST)
    arr[:, 0] = recv
    row = np.empty_like(arr[0])
    if NORTH is not None:
        COMM.Sendrecv(np.ascontiguousarray(arr[-2]), dest=NORTH, recvbuf=row, source=NORTH)
        arr[-1] = row
    if SOUTH is not None:
        COMM.Sendrecv(np.ascontiguousarray(arr[1]), dest=SOUTH, recvbuf=row, source=SOUTH)
        arr[0] = row
    if grid == "v" and NORTH is None:
        arr[-2, :] = 0.0
    return arr


def refresh_block_halos(arr):
    """The single-process model leaves halos stale after the friction update; cells on a
    process boundary are interior cells there, so they are refreshed, keeping the periodic
    seam (px = 0 west, px = nproc_x - 1 east) stale as one process does."""
    west, east = arr[:, 0].copy(), arr[:, -1].copy()
    enforce_boundaries(arr, "h")
    if PX == 0:
        arr[:, 0] = west
    if PX == NPROC_X - 1:
        arr[:, -1] = east
    return arr


def main():
    args = sw.parse_arguments(__doc__, "save the gathered interior surface height (ny, nx) as .npy (rank 0)")
    if args.nx % NPROC_X or args.ny % NPROC_Y:
        sys.exit(f"the {args.ny}x{args.nx} grid does not split into {NPROC_Y}x{NPROC_X} blocks")
    nyl, nxl = args.ny // NPROC_Y, args.nx // NPROC_X

    # The global initial state (it needs a cumulative sum over y), cut into this block.
    state, coriolis = sw.initial_state(args.nx, args.ny, np.dtype(args.dtype))
    rows, cols = slice(PY * nyl, PY * nyl + nyl + 2), slice(PX * nxl, PX * nxl + nxl + 2)
    state = [np.ascontiguousarray(a[rows, cols]) for a in state]
    coriolis = np.ascontiguousarray(coriolis[PY * nyl:(PY + 1) * nyl, PX * nxl:(PX + 1) * nxl])
    sw.enforce_boundaries = enforce_boundaries  # the step's halo updates now communicate

    COMM.Barrier()
    start = time.perf_counter()
    for k in range(args.steps):
        state = sw.step(state, coriolis, k == 0)
        refresh_block_halos(state[1])
        refresh_block_halos(state[2])
    COMM.Barrier()
    seconds = time.perf_counter() - start
    blocks = COMM.gather(np.ascontiguousarray(state[0][1:-1, 1:-1]), root=0)
    if COMM.rank == 0:
        print(f"seconds {seconds:.4f}")
        print(f"ms_per_step {1e3 * seconds / args.steps:.4f}")
        print(f"processes {COMM.size}")
        if args.out:
            h = np.block([[blocks[rank_of(py, px)] for px in range(NPROC_X)] for py in range(NPROC_Y)])
            np.save(args.out, h)


if __name__ == "__main__":
    main()
