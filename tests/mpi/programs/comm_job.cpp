// Whole multi-process programs for the failure and shutdown paths of ts::comm, one per
// mode (run by CTest under mpirun, see tests/mpi/CMakeLists.txt):
//   bad_root      rank 1 passes a root outside the communicator: the job must end with a
//                 message naming the rank and the operation (not hang in rank 0's reduce)
//   dead_peer     rank 1 dies while rank 0 waits in an allreduce: the job must fail
//   frozen_peer   rank 1 stops (SIGSTOP: a hung node, its connections open, nothing for MPI
//                 to notice) while rank 0 waits in a recv from it: the heartbeats must end
//                 the job with a message naming the call and process 1
//   exit_pending  every rank queues communication and returns from main at once: the
//                 work is flushed before MPI_Finalize, the job exits 0
//   log           TESSEL_LOG=debug prints one line per call
//   idle_rank     (3 processes) rank 2 never communicates while ranks 0 and 1 exchange
//                 messages on comm.world and run a psum over a mesh of their own devices: nothing they do may wait for rank 2 (every collective set-up
//                 happens in distributed::initialize, or involves only the processes that
//                 take part)
//   uncaught      an error escapes main (run in a world of one process too): the job ends
//                 with `[tessel R] fatal error on rank R of N: <message>`, not a bare
//                 std::terminate
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tessel/comm.h"
#include "tessel/distributed.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace comm = tessel::comm;

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  ts::distributed::initialize();
  const int rank = ts::process_index();
  ts::Array x = ts::full({3}, float(rank + 1), ts::f32);
  if (mode == "bad_root") {
    // Rank 0 waits in the collective; rank 1's bad argument is an uncaught tessel::Error.
    ts::Array r = comm::reduce(x, comm::SUM, rank == 1 ? 5 : 0);
    r.block_until_ready();
    std::puts("bad_root: unexpected success");
    return 0;
  }
  if (mode == "dead_peer") {
    if (rank == 1) _exit(3);
    comm::allreduce(x, comm::SUM).block_until_ready();
    std::puts("dead_peer: unexpected success");
    return 0;
  }
  if (mode == "frozen_peer") {
    comm::barrier();
    if (rank == 1) raise(SIGSTOP);
    comm::recv(x, {.source = 1}).block_until_ready();
    std::puts("frozen_peer: unexpected success");
    return 0;
  }
  if (mode == "exit_pending") {
    for (int i = 0; i < 200; ++i) x = comm::allreduce(x, comm::MAX);  // queued, never awaited
    std::printf("exit_pending: rank %d returns with work queued\n", rank);
    return 0;
  }
  if (mode == "log") {
    comm::allreduce(x, comm::SUM).block_until_ready();
    return 0;
  }
  if (mode == "idle_rank") {
    if (rank >= 2) {
      std::printf("idle_rank: rank %d never communicates\n", rank);
      return 0;
    }
    const int peer = 1 - rank;
    ts::Array got = comm::sendrecv(x, x, peer, peer);
    comm::send(x * 10.0f, peer);
    ts::Array got10 = comm::recv(x, {.source = peer});
    // A mesh of the devices of processes 0 and 1 only: its communicator involves only them.
    std::vector<ts::Device> pair;
    for (const ts::Device& d : ts::devices())
      if (d.process_index() < 2) pair.push_back(d);
    ts::Mesh mesh(pair, {int64_t(pair.size())}, {"i"});
    ts::Array v = ts::device_put(ts::arange(int64_t(pair.size()), ts::f32), ts::NamedSharding(mesh, ts::P("i")));
    const float total =
        ts::shard_map([](const ts::Array& p) { return ts::psum(ts::sum(p), "i"); }, mesh, {ts::P("i")}, {ts::P()})(v)
            .item<float>();
    const float want_total = float(pair.size() * (pair.size() - 1) / 2);
    const bool ok = got.to_vector<float>() == std::vector<float>(3, float(peer + 1)) &&
                    got10.to_vector<float>() == std::vector<float>(3, float(10 * (peer + 1))) && total == want_total;
    std::printf("idle_rank: rank %d %s (received %g and %g from rank %d, psum %g)\n", rank, ok ? "ok" : "WRONG",
                double(got.to_vector<float>()[0]), double(got10.to_vector<float>()[0]), peer, double(total));
    return ok ? 0 : 1;
  }
  if (mode == "uncaught") {
    comm::allreduce(x, comm::SUM).block_until_ready();
    throw ts::ValueError("uncaught: an error escaping main on rank " + std::to_string(rank));
  }
  std::fprintf(stderr, "usage: comm_job bad_root|dead_peer|exit_pending|log|idle_rank|uncaught\n");
  return 2;
}
