// The mpi4jax paper's exchange_data in C++: inside one jitted function, rank 0 sends then
// receives while rank 1 receives then sends. Were the compiler free to reorder the two
// calls, both processes could wait for each other forever; tessel runs communication in
// program order (an ordered effect), so the example needs no tokens — the paper's second,
// token-threading version is not needed.
//
// Run: mpirun -np 2 mpi4jax_exchange [--size N]
// (any even number of processes: ranks 2k and 2k+1 exchange). Prints
// `mpi4jax_exchange: ok (...)` on rank 0 when every process received its partner's array.
#include <cstdio>
#include <cstdlib>
#include <string>

#include <tessel/comm.h>
#include <tessel/distributed.h>
#include <tessel/tessel.h>

namespace ts = tessel;
namespace comm = tessel::comm;

int main(int argc, char** argv) try {
  ts::distributed::initialize();
  int64_t size = int64_t(1) << 20;  // 4 MiB of float32: well beyond MPI's eager limit
  for (int i = 1; i + 1 < argc; i += 2)
    if (std::string(argv[i]) == "--size") size = std::atoll(argv[i + 1]);
  const int rank = comm::world().rank(), nproc = comm::world().size();
  if (nproc % 2 != 0) {
    std::fprintf(stderr, "mpi4jax_exchange: run with an even number of processes (mpirun -np 2), got %d\n", nproc);
    return 2;
  }
  const int other = rank ^ 1;

  // `rank` is a C++ value when the function is traced, as in the paper: each process
  // traces its own branch.
  auto exchange_data = ts::jit([&](const ts::Array& arr) {
    ts::Array newarr;
    if (rank % 2 == 0) {
      // rank 0 sends, then receives
      comm::send(arr, other);
      newarr = comm::recv(arr, {.source = other});
    } else {
      // rank 1 receives, then sends
      newarr = comm::recv(arr, {.source = other});
      comm::send(arr, other);
    }
    return newarr;
  });

  ts::Array arr = ts::full({size}, float(rank), ts::f32);
  ts::Array newarr = exchange_data(arr);
  const bool ok = ts::all(ts::equal(newarr, float(other))).item<bool>();
  // Every process must have succeeded.
  const bool all_ok = comm::allreduce(ts::Array(ok), comm::LAND).item<bool>();
  if (rank == 0) {
    if (all_ok)
      std::printf("mpi4jax_exchange: ok (%d processes exchanged %lld float32 values in pairs inside jit)\n", nproc,
                  (long long)size);
    else
      std::printf("mpi4jax_exchange: FAILED (a process received the wrong values)\n");
  }
  return all_ok ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "mpi4jax_exchange: error: %s\n", e.what());
  return 1;
}
