#pragma once
// Liveness of the processes of a multi-process job across hosts (docs/cluster.md). A process
// killed on another host, a host that vanished or lost its link, sends no message and
// closes nothing that this process sees: MPI's waits on it never end. So every process
// sends a small UDP datagram (a heartbeat) to every other one each TESSEL_PEER_TIMEOUT_MS/5,
// from a thread of its own, on a side channel independent of MPI's progress; a process
// whose heartbeats stop for TESSEL_PEER_TIMEOUT_MS is dead. The waits of the single-
// controller channel and of mesh collectives across processes poll `silent` and throw;
// ts::comm's calls are blocking MPI calls that cannot be interrupted, so while one is in
// flight (BlockingCall) the heartbeat thread itself ends the job when a peer falls silent.
// A process that ends normally says so first, so its end is not taken for a death.
#include <mpi.h>

#include <string>

namespace tessel::distributed::liveness {

/// Starts the heartbeats (every process of `world` calls it, from joining the job: it
/// gathers each process's UDP port and addresses). Does nothing in a job of one process or
/// with TESSEL_PEER_TIMEOUT_MS=0.
void start(MPI_Comm world, int rank, int size);
/// Tells the other processes this one ends normally and stops the heartbeats (at finalize).
void stop() noexcept;
/// Why process `rank` is taken for dead ("no heartbeat for 3.1 s ..."), or "" while it is
/// alive (or heartbeats are off, or it ended normally).
std::string silent(int rank);
/// The first process of the job (other than this one) taken for dead, or -1.
int first_silent();
/// "process <rank> (pid <pid> on host <name>/<address>)": a process as errors name it.
std::string describe(int rank);
/// Throws Error "<op>: <describe(rank)> is gone: <why>; ..." when `rank` is silent.
void check(int rank, const char* op);
/// Throws Error as `check` does for the first silent process of the job.
void check_all(const char* op);

/// Marks a blocking MPI call of the calling thread in flight for its lifetime. A blocking
/// call waiting on a dead peer never returns and cannot throw, so while any is in flight the
/// heartbeat thread, on finding a process silent, prints "tessel: <prefix><op> on process
/// <r>: <describe(peer)> is gone: ..." and ends the job with MPI_Abort instead of letting it
/// hang. Both strings must outlive the call (literals).
class BlockingCall {
 public:
  BlockingCall(const char* prefix, const char* op) noexcept;
  ~BlockingCall();
  BlockingCall(const BlockingCall&) = delete;
  BlockingCall& operator=(const BlockingCall&) = delete;
};

}  // namespace tessel::distributed::liveness
