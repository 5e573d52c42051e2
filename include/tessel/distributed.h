#pragma once
// Multi-process jobs (ARCHITECTURE.md "Processes"). Under `mpirun -np N prog` every process
// runs main (multi-controller, like mpi4jax) and joins the job with initialize().
#include "tessel/export.h"

namespace tessel::distributed {

/// Joins the job when the process was started by an MPI launcher (mpirun/mpiexec):
/// initializes MPI (MPI_THREAD_MULTIPLE; an MPI the program initialized itself is adopted
/// and left for it to finalize), sets process_index()/process_count(), and makes
/// ts::devices() list every process's devices (global ids in process order). Alone it is
/// a no-op. Calling it again does nothing. At exit tessel flushes every local device's
/// pending work and then finalizes MPI; an uncaught exception or a failed MPI call in one
/// process aborts the whole job with a message naming the rank, instead of leaving the
/// other processes waiting.
TESSEL_API void initialize();

/// True once initialize() joined a job under a launcher.
TESSEL_API bool is_initialized();

/// Flushes pending work and finalizes MPI now (what exit does). After it no
/// communication is possible.
TESSEL_API void shutdown();

}  // namespace tessel::distributed
