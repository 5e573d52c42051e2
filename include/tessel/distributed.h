#pragma once
// Multi-process jobs (ARCHITECTURE.md "Processes"). Under `mpirun -np N prog` every process
// runs main (multi-controller, like mpi4jax) and joins the job with initialize().
#include <vector>

#include "tessel/device.h"
#include "tessel/export.h"

namespace tessel::distributed {

/// How the processes of a job divide the work.
enum class Mode {
  /// Every process runs main and takes part in every computation on its devices (like
  /// mpi4jax): the default.
  multi_controller,
  /// Rank 0 runs main as the driver and controls the devices of ranks 1..W, which serve
  /// (see docs/single_controller.md): arrays, programs and colocated calls travel over MPI.
  single_controller,
};

struct InitOptions {
  Mode mode = Mode::multi_controller;
};

/// Joins the job when the process was started by an MPI launcher (mpirun/mpiexec):
/// initializes MPI (MPI_THREAD_MULTIPLE; an MPI the program initialized itself is adopted
/// and left for it to finalize), sets process_index()/process_count(), and makes
/// ts::devices() list every process's devices (global ids in process order). Alone it is
/// a no-op. Calling it again does nothing. At exit tessel flushes every local device's
/// pending work and then finalizes MPI; an uncaught exception or a failed MPI call in one
/// process aborts the whole job with a message naming the rank, instead of leaving the
/// other processes waiting.
///
/// With `{.mode = Mode::single_controller}` under `mpirun -np 1+W`: rank 0 returns and runs
/// the rest of main as the driver (ts::devices() lists every process's devices, each with
/// its process_index; arrays and jit calls on workers' devices run there). On ranks 1..W
/// initialize does not return: the worker serves the driver's requests until the driver
/// ends, then the process exits with status 0. Every process must register the same
/// colocated functions (TESSEL_REGISTER_COLOCATED), which static initializers do.
TESSEL_API void initialize(InitOptions options = {});

/// The mode the job was joined in (multi_controller alone).
TESSEL_API Mode mode();

/// The devices of the worker processes (ranks 1..W) of a single-controller job, in global id
/// order; empty elsewhere.
TESSEL_API std::vector<Device> worker_devices();

/// True once initialize() joined a job under a launcher.
TESSEL_API bool is_initialized();

/// Flushes pending work and finalizes MPI now (what exit does). After it no
/// communication is possible.
TESSEL_API void shutdown();

}  // namespace tessel::distributed
