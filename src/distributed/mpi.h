#pragma once
// The MPI layer of the runtime: start and end of MPI, error checking, dtype mapping and
// element counts beyond MPI's int. Used by ts::comm (src/comm/) and the multi-process
// collective backend.
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "tessel/dtype.h"

namespace tessel::distributed::mpi {

/// True when this process was started by an MPI launcher (mpirun sets its environment).
bool launched_by_mpirun();
/// Makes sure MPI is initialized (thread level MPI_THREAD_MULTIPLE): joins the job under a
/// launcher, else starts a single-process ("singleton") MPI so ts::comm works alone too.
/// Throws tessel::Error once MPI was finalized.
void ensure_initialized();
/// True once MPI is initialized and this process joined MPI_COMM_WORLD.
bool joined();
/// Flushes every local device's pending work, then finalizes MPI if tessel initialized
/// it (registered at exit; distributed::shutdown calls it early).
void flush_and_finalize();
/// tessel's own duplicate of MPI_COMM_WORLD (errors return instead of aborting), the world
/// communicator of ts::comm. Made while joining (ensure_initialized), where every process
/// of the job takes part, never later on a first use: a process that never communicates
/// must not hold up the others' first messages. MPI_COMM_NULL before joining.
MPI_Comm world_comm();
/// This process's rank and the job size in MPI_COMM_WORLD (after ensure_initialized).
int world_rank();
int world_size();

/// Throws tessel::Error "<op>: <call> failed on rank <r> of <n>: <MPI's message>" unless
/// `err` is MPI_SUCCESS. Communicators made by tessel return errors instead of aborting.
void check(int err, const char* call, const std::string& op);

/// The MPI datatype moving elements of `dtype`: the native type where MPI has one,
/// otherwise one of the same size (float16 and bfloat16 travel as 16-bit integers; their
/// reductions use tessel's own MPI_Ops: src/comm/ for ts::comm, mpi_hub.cpp for meshes).
MPI_Datatype datatype(DType dtype);

/// The largest element count passed to one MPI call: INT_MAX, or TESSEL_MPI_MAX_COUNT
/// (for tests of the chunked paths).
int64_t max_count();

/// A contiguous block of `n` elements of `type` as one MPI (datatype, count) pair with
/// count <= max_count(): the element type itself when n fits, else a derived contiguous
/// type describing all n elements with count 1. Owns the derived type.
class Block {
 public:
  Block(MPI_Datatype type, int64_t n);
  ~Block();
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;
  MPI_Datatype type() const { return type_; }
  int count() const { return count_; }

 private:
  MPI_Datatype type_;
  int count_;
  bool derived_ = false;
};

/// Runs f(offset, count) over consecutive chunks of `n` elements, each at most max_count()
/// (element-wise operations such as reductions, which MPI defines only on its own types).
template <class F> void for_each_chunk(int64_t n, F f) {
  // n == 0 still makes one call: collectives must match on every process.
  const int64_t step = max_count();
  int64_t off = 0;
  do {
    const int64_t count = std::min(step, n - off);
    f(off, int(count));
    off += count;
  } while (off < n);
}

}  // namespace tessel::distributed::mpi
