"""The mpi4jax paper's exchange_data on tessel: inside one jitted function rank 0 sends
then receives while rank 1 receives then sends. tessel runs communication in program
order (an ordered effect), so the paper's first, token-free version is safe as written.

Run: mpirun -np 2 python mpi4jax_exchange.py [--size N]
(any even number of processes: ranks 2k and 2k+1 exchange). Prints
"mpi4jax_exchange: ok (...)" on rank 0 when every process got its partner's array."""

import argparse

import tessel as jax
import tessel.comm as mpi4jax
import tessel.numpy as jnp

jax.distributed.initialize()
rank, nproc = mpi4jax.world().rank, mpi4jax.world().size
other = rank ^ 1


@jax.jit
def exchange_data(arr):
    if rank % 2 == 0:
        # rank 0 sends, then receives
        mpi4jax.send(arr, dest=other)
        newarr = mpi4jax.recv(arr, source=other)
    else:
        # rank 1 receives, then sends
        newarr = mpi4jax.recv(arr, source=other)
        mpi4jax.send(arr, dest=other)
    return newarr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=1 << 20)  # 4 MiB of float32: beyond MPI's eager limit
    size = ap.parse_args().size
    if nproc % 2:
        raise SystemExit(f"mpi4jax_exchange: run with an even number of processes (mpirun -np 2), got {nproc}")
    arr = jnp.full((size,), float(rank), dtype=jnp.float32)
    newarr = exchange_data(arr)
    ok = bool(jnp.all(newarr == float(other)))
    all_ok = bool(mpi4jax.allreduce(jnp.asarray(ok), op=mpi4jax.LAND))
    if rank == 0:
        print(f"mpi4jax_exchange: ok ({nproc} processes exchanged {size} float32 values in pairs inside jit)"
              if all_ok else "mpi4jax_exchange: FAILED (a process received the wrong values)")
    raise SystemExit(0 if all_ok else 1)


if __name__ == "__main__":
    main()
