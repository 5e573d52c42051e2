"""Multi-process jobs (jax.distributed; tessel/distributed.h). Under `mpirun -np N python
script.py` every process runs the script and joins the job with `initialize()`; alone it
does nothing."""

from ._tessel import sharding_functions as _s

__all__ = ["initialize", "is_initialized", "shutdown"]


def initialize(coordinator_address=None, num_processes=None, process_id=None, *, mode="multi_controller"):
    """Joins the job when started by an MPI launcher: initializes MPI, sets
    process_index()/process_count() and makes devices() list every process's devices.
    JAX's coordinator arguments are accepted and ignored (MPI's launcher gives them).
    `mode="single_controller"`: rank 0 returns as the driver; the other ranks serve it and
    exit when it ends (docs/single_controller.md)."""
    del coordinator_address, num_processes, process_id
    _s.distributed_initialize(mode)


def is_initialized():
    """True once initialize() joined a job under a launcher."""
    return _s.distributed_is_initialized()


def shutdown():
    """Flushes pending work and finalizes MPI now (what exit does)."""
    _s.distributed_shutdown()
