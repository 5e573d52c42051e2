"""mpi4jax's demo application (examples/shallow_water.py) on tessel: the non-linear shallow
water model of the mpi4jax paper, with the paper's domain decomposition ([nproc / 2, 2]
blocks, one halo cell) and its halo exchange by sendrecv inside the jitted step. Same grid,
constants, update order and names as mpi4jax's script; `jax` is tessel, `mpi4jax` is
tessel.comm, and tessel needs no tokens. Plots and animations are left out.

Usage:
    mpirun -np 2 python shallow_water.py                # 360 x 180, 10 model days
    python shallow_water.py --nx 1800 --ny 900 --benchmark --steps 100
    python shallow_water.py --backend jax ...            # the same model on JAX + mpi4jax
Rank 0 prints the run time and a summary of the final state (mean and extremes of h, the
sum of h), which is the same for every number of processes."""

import argparse
import time
from collections import namedtuple
from functools import partial

import numpy as np

parser = argparse.ArgumentParser()
parser.add_argument("--nx", type=int, default=360, help="interior cells in x (global)")
parser.add_argument("--ny", type=int, default=180, help="interior cells in y (global)")
parser.add_argument("--days", type=float, default=10.0, help="model days to simulate")
parser.add_argument("--steps", type=int, default=None, help="model steps to simulate (overrides --days)")
parser.add_argument("--multisteps", type=int, default=10, help="steps per jitted call (fori_loop)")
parser.add_argument("--benchmark", action="store_true", help="print only the time per step")
parser.add_argument("--backend", choices=("tessel", "jax"), default="tessel",
                    help="jax: the same model on JAX + mpi4jax + mpi4py (bench/python/bench_shallow_water.py)")
args = parser.parse_args()

if args.backend == "jax":
    from mpi4py import MPI

    import jax
    import jax.numpy as jnp
    import mpi4jax

    mpi_comm = MPI.COMM_WORLD
    SUM, MIN, MAX = MPI.SUM, MPI.MIN, MPI.MAX
else:
    import tessel as jax
    import tessel.comm as mpi4jax
    import tessel.numpy as jnp

    jax.distributed.initialize()
    mpi_comm = mpi4jax.world()  # tessel.comm also takes mpi4py's MPI.COMM_WORLD
    SUM, MIN, MAX = mpi4jax.SUM, mpi4jax.MIN, mpi4jax.MAX
mpi_rank = mpi_comm.Get_rank()
mpi_size = mpi_comm.Get_size()

#
# MPI setup
#

supported_nproc = (1, 2, 4, 6, 8, 16)
if mpi_size not in supported_nproc:
    raise RuntimeError(f"Got invalid number of MPI processes: {mpi_size}. Please choose one of these: "
                       f"{supported_nproc}.")

nproc_y = min(mpi_size, 2)
nproc_x = mpi_size // nproc_y

proc_idx = np.unravel_index(mpi_rank, (nproc_y, nproc_x))

#
# Grid setup
#

# 1 cell overlap on each side of the domain
nx_global = args.nx + 2
ny_global = args.ny + 2

# grid spacing in metres
dx = 5e3
dy = 5e3

# processes divide the domain evenly
assert (nx_global - 2) % nproc_x == 0
assert (ny_global - 2) % nproc_y == 0

nx_local = (nx_global - 2) // nproc_x + 2
ny_local = (ny_global - 2) // nproc_y + 2

x_global, y_global = (np.arange(-1, nx_global - 1) * dx, np.arange(-1, ny_global - 1) * dy)
yy_global, xx_global = np.meshgrid(y_global, x_global, indexing="ij")

length_x = x_global[-2] - x_global[1]
length_y = y_global[-2] - y_global[1]

# this process's block (with its halo) of a global array
local_slice = (
    slice((ny_local - 2) * proc_idx[0], (ny_local - 2) * proc_idx[0] + ny_local),
    slice((nx_local - 2) * proc_idx[1], (nx_local - 2) * proc_idx[1] + nx_local),
)

yy_local = yy_global[local_slice]

#
# Model parameters
#

GRAVITY = 9.81
DEPTH = 100.0
CORIOLIS_F = 2e-4
CORIOLIS_BETA = 2e-11
CORIOLIS_PARAM = jnp.asarray((CORIOLIS_F + yy_local * CORIOLIS_BETA).astype(np.float32))
LATERAL_VISCOSITY = 1e-3 * CORIOLIS_F * dx**2

DAY_IN_SECONDS = 86_400
PERIODIC_BOUNDARY_X = True

ADAMS_BASHFORTH_A = 1.5 + 0.1
ADAMS_BASHFORTH_B = -(0.5 + 0.1)

# time step from the CFL condition
dt = 0.125 * min(dx, dy) / np.sqrt(GRAVITY * DEPTH)


def get_initial_conditions():
    """A horizontal jet in geostrophic balance (computed globally in NumPy, then cut)."""
    u0_global = 10 * np.exp(-((yy_global - 0.5 * length_y) ** 2) / (0.02 * length_x) ** 2)
    v0_global = np.zeros_like(u0_global)

    # approximate balance h_y = -(f/g)u
    coriolis_global = CORIOLIS_F + yy_global * CORIOLIS_BETA
    h_geostrophy = np.cumsum(-dy * u0_global * coriolis_global / GRAVITY, axis=0)
    h0_global = (
        DEPTH
        + h_geostrophy
        # centred around the depth
        - h_geostrophy.mean()
        # small perturbation to break symmetry
        + 0.2 * np.sin(xx_global / length_x * 10 * np.pi) * np.cos(yy_global / length_y * 8 * np.pi)
    )

    h0_local = jnp.asarray(h0_global[local_slice].astype(np.float32))
    u0_local = jnp.asarray(u0_global[local_slice].astype(np.float32))
    v0_local = jnp.asarray(v0_global[local_slice].astype(np.float32))

    h0_local = enforce_boundaries(h0_local, "h")
    u0_local = enforce_boundaries(u0_local, "u")
    v0_local = enforce_boundaries(v0_local, "v")
    return h0_local, u0_local, v0_local


@partial(jax.jit, static_argnums=(1,))
def enforce_boundaries(arr, grid):
    """The halo exchange between processes (where mpi4jax comes in): periodic in x, walls
    in y."""
    assert grid in ("h", "u", "v")

    # send west first, then clockwise; receive east first, then clockwise
    send_order = ("west", "north", "east", "south")
    recv_order = ("east", "south", "west", "north")

    overlap_slices_send = dict(
        south=(1, slice(None), Ellipsis),
        west=(slice(None), 1, Ellipsis),
        north=(-2, slice(None), Ellipsis),
        east=(slice(None), -2, Ellipsis),
    )
    overlap_slices_recv = dict(
        south=(0, slice(None), Ellipsis),
        west=(slice(None), 0, Ellipsis),
        north=(-1, slice(None), Ellipsis),
        east=(slice(None), -1, Ellipsis),
    )

    proc_neighbors = {
        "south": (proc_idx[0] - 1, proc_idx[1]) if proc_idx[0] > 0 else None,
        "west": (proc_idx[0], proc_idx[1] - 1) if proc_idx[1] > 0 else None,
        "north": (proc_idx[0] + 1, proc_idx[1]) if proc_idx[0] < nproc_y - 1 else None,
        "east": (proc_idx[0], proc_idx[1] + 1) if proc_idx[1] < nproc_x - 1 else None,
    }
    if PERIODIC_BOUNDARY_X:
        if proc_idx[1] == 0:
            proc_neighbors["west"] = (proc_idx[0], nproc_x - 1)
        if proc_idx[1] == nproc_x - 1:
            proc_neighbors["east"] = (proc_idx[0], 0)

    for send_dir, recv_dir in zip(send_order, recv_order):
        send_proc = proc_neighbors[send_dir]
        recv_proc = proc_neighbors[recv_dir]
        if send_proc is None and recv_proc is None:
            continue
        if send_proc is not None:
            send_proc = int(np.ravel_multi_index(send_proc, (nproc_y, nproc_x)))
        if recv_proc is not None:
            recv_proc = int(np.ravel_multi_index(recv_proc, (nproc_y, nproc_x)))

        recv_idx = overlap_slices_recv[recv_dir]
        recv_arr = jnp.empty_like(arr[recv_idx])
        send_idx = overlap_slices_send[send_dir]
        send_arr = arr[send_idx]

        if send_proc == mpi_rank and recv_proc == mpi_rank:
            # alone along this axis: the periodic copy needs no message
            arr = arr.at[recv_idx].set(send_arr)
        elif send_proc is None:
            recv_arr = mpi4jax.recv(recv_arr, source=recv_proc, comm=mpi_comm)
            arr = arr.at[recv_idx].set(recv_arr)
        elif recv_proc is None:
            mpi4jax.send(send_arr, dest=send_proc, comm=mpi_comm)
        else:
            recv_arr = mpi4jax.sendrecv(send_arr, recv_arr, source=recv_proc, dest=send_proc, comm=mpi_comm)
            arr = arr.at[recv_idx].set(recv_arr)

    if not PERIODIC_BOUNDARY_X and grid == "u" and proc_idx[1] == nproc_x - 1:
        arr = arr.at[:, -2].set(0.0)
    if grid == "v" and proc_idx[0] == nproc_y - 1:
        arr = arr.at[-2, :].set(0.0)
    return arr


ModelState = namedtuple("ModelState", "h, u, v, dh, du, dv")


@partial(jax.jit, static_argnums=(1,))
def shallow_water_step(state, is_first_step):
    """One step of the shallow-water model; returns the new model state."""
    h, u, v, dh, du, dv = state

    hc = jnp.pad(h[1:-1, 1:-1], 1, "edge")
    hc = enforce_boundaries(hc, "h")

    fe = jnp.empty_like(u)
    fn = jnp.empty_like(u)

    fe = fe.at[1:-1, 1:-1].set(0.5 * (hc[1:-1, 1:-1] + hc[1:-1, 2:]) * u[1:-1, 1:-1])
    fn = fn.at[1:-1, 1:-1].set(0.5 * (hc[1:-1, 1:-1] + hc[2:, 1:-1]) * v[1:-1, 1:-1])
    fe = enforce_boundaries(fe, "u")
    fn = enforce_boundaries(fn, "v")

    dh_new = dh.at[1:-1, 1:-1].set(-(fe[1:-1, 1:-1] - fe[1:-1, :-2]) / dx - (fn[1:-1, 1:-1] - fn[:-2, 1:-1]) / dy)

    # nonlinear momentum equation
    q = jnp.empty_like(u)
    ke = jnp.empty_like(u)

    # planetary and relative vorticity
    q = q.at[1:-1, 1:-1].set(CORIOLIS_PARAM[1:-1, 1:-1]
                             + ((v[1:-1, 2:] - v[1:-1, 1:-1]) / dx - (u[2:, 1:-1] - u[1:-1, 1:-1]) / dy))
    # potential vorticity
    q = q.at[1:-1, 1:-1].multiply(1.0 / (0.25 * (hc[1:-1, 1:-1] + hc[1:-1, 2:] + hc[2:, 1:-1] + hc[2:, 2:])))
    q = enforce_boundaries(q, "h")

    du_new = du.at[1:-1, 1:-1].set(
        -GRAVITY * (h[1:-1, 2:] - h[1:-1, 1:-1]) / dx
        + 0.5 * (q[1:-1, 1:-1] * 0.5 * (fn[1:-1, 1:-1] + fn[1:-1, 2:])
                 + q[:-2, 1:-1] * 0.5 * (fn[:-2, 1:-1] + fn[:-2, 2:])))
    dv_new = dv.at[1:-1, 1:-1].set(
        -GRAVITY * (h[2:, 1:-1] - h[1:-1, 1:-1]) / dy
        - 0.5 * (q[1:-1, 1:-1] * 0.5 * (fe[1:-1, 1:-1] + fe[2:, 1:-1])
                 + q[1:-1, :-2] * 0.5 * (fe[1:-1, :-2] + fe[2:, :-2])))
    ke = ke.at[1:-1, 1:-1].set(0.5 * (0.5 * (u[1:-1, 1:-1] ** 2 + u[1:-1, :-2] ** 2)
                                      + 0.5 * (v[1:-1, 1:-1] ** 2 + v[:-2, 1:-1] ** 2)))
    ke = enforce_boundaries(ke, "h")

    du_new = du_new.at[1:-1, 1:-1].add(-(ke[1:-1, 2:] - ke[1:-1, 1:-1]) / dx)
    dv_new = dv_new.at[1:-1, 1:-1].add(-(ke[2:, 1:-1] - ke[1:-1, 1:-1]) / dy)

    if is_first_step:
        u = u.at[1:-1, 1:-1].add(dt * du_new[1:-1, 1:-1])
        v = v.at[1:-1, 1:-1].add(dt * dv_new[1:-1, 1:-1])
        h = h.at[1:-1, 1:-1].add(dt * dh_new[1:-1, 1:-1])
    else:
        u = u.at[1:-1, 1:-1].add(dt * (ADAMS_BASHFORTH_A * du_new[1:-1, 1:-1] + ADAMS_BASHFORTH_B * du[1:-1, 1:-1]))
        v = v.at[1:-1, 1:-1].add(dt * (ADAMS_BASHFORTH_A * dv_new[1:-1, 1:-1] + ADAMS_BASHFORTH_B * dv[1:-1, 1:-1]))
        h = h.at[1:-1, 1:-1].add(dt * (ADAMS_BASHFORTH_A * dh_new[1:-1, 1:-1] + ADAMS_BASHFORTH_B * dh[1:-1, 1:-1]))

    h = enforce_boundaries(h, "h")
    u = enforce_boundaries(u, "u")
    v = enforce_boundaries(v, "v")

    if LATERAL_VISCOSITY > 0:
        # lateral friction (the original's v-friction reads u, kept as written)
        fe = fe.at[1:-1, 1:-1].set(LATERAL_VISCOSITY * (u[1:-1, 2:] - u[1:-1, 1:-1]) / dx)
        fn = fn.at[1:-1, 1:-1].set(LATERAL_VISCOSITY * (u[2:, 1:-1] - u[1:-1, 1:-1]) / dy)
        fe = enforce_boundaries(fe, "u")
        fn = enforce_boundaries(fn, "v")
        u = u.at[1:-1, 1:-1].add(dt * ((fe[1:-1, 1:-1] - fe[1:-1, :-2]) / dx + (fn[1:-1, 1:-1] - fn[:-2, 1:-1]) / dy))

        fe = fe.at[1:-1, 1:-1].set(LATERAL_VISCOSITY * (v[1:-1, 2:] - u[1:-1, 1:-1]) / dx)
        fn = fn.at[1:-1, 1:-1].set(LATERAL_VISCOSITY * (v[2:, 1:-1] - u[1:-1, 1:-1]) / dy)
        fe = enforce_boundaries(fe, "u")
        fn = enforce_boundaries(fn, "v")
        v = v.at[1:-1, 1:-1].add(dt * ((fe[1:-1, 1:-1] - fe[1:-1, :-2]) / dx + (fn[1:-1, 1:-1] - fn[:-2, 1:-1]) / dy))

    return ModelState(h, u, v, dh_new, du_new, dv_new)


@partial(jax.jit, static_argnums=(1,))
def do_multistep(state, num_steps):
    """Several model steps back-to-back."""
    return jax.lax.fori_loop(0, num_steps, lambda _, s: shallow_water_step(s, False), state)


def solve_shallow_water(num_steps, num_multisteps):
    """Iterates the model `num_steps` steps forward; returns (final state, seconds)."""
    h, u, v = get_initial_conditions()
    du, dv, dh = (jnp.zeros((ny_local, nx_local), dtype=jnp.float32) for _ in range(3))
    state = ModelState(h, u, v, dh, du, dv)
    state = shallow_water_step(state, True)
    # compile before timing
    jax.block_until_ready(do_multistep(state, num_multisteps))
    steps = 1
    start = time.perf_counter()
    while steps + num_multisteps <= num_steps:
        state = do_multistep(state, num_multisteps)
        steps += num_multisteps
    while steps < num_steps:
        state = shallow_water_step(state, False)
        steps += 1
    state[0].block_until_ready()
    return state, time.perf_counter() - start


def main():
    num_steps = args.steps if args.steps is not None else int(np.ceil(args.days * DAY_IN_SECONDS / dt))
    state, seconds = solve_shallow_water(num_steps, args.multisteps)
    interior = np.asarray(state.h)[1:-1, 1:-1]
    stats = jnp.asarray(np.array([interior.sum(), interior.min(), interior.max()], dtype=np.float64))
    total = mpi4jax.allreduce(stats[:1], op=SUM, comm=mpi_comm)
    lo = mpi4jax.allreduce(stats[1:2], op=MIN, comm=mpi_comm)
    hi = mpi4jax.allreduce(stats[2:], op=MAX, comm=mpi_comm)
    timed = max(num_steps - 1, 1)
    if mpi_rank == 0:
        print(f"shallow_water: {args.nx}x{args.ny} on {mpi_size} process(es), {num_steps} steps: "
              f"{seconds:.3f} s, {seconds / timed * 1e3:.3f} ms/step")
        if not args.benchmark:
            n = args.nx * args.ny
            print(f"final h: mean {float(total[0]) / n:.4f} min {float(lo[0]):.4f} max {float(hi[0]):.4f}")


if __name__ == "__main__":
    main()
