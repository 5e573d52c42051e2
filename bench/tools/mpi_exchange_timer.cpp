// A PMPI interposer for bench_shallow_water_mpi (loaded with LD_PRELOAD into each process of
// the decomposed demo): times every MPI_Sendrecv and MPI_Waitall (the demo's halo exchange:
// blocking, or the wait for a posted one; either includes the wait for the neighbour) and
// prints, at MPI_Finalize, three lines per process r:
//   mpi_exchange_seconds_rank<r>  seconds spent in them
//   mpi_span_seconds_rank<r>      seconds from the start of the first exchange to the end of the last
//   mpi_exchanges_rank<r>         how many exchanges
// so the benchmark can split each process's step into compute and exchange-plus-wait. No
// tessel code: it sits between tessel and the MPI library.
#include <mpi.h>

#include <chrono>
#include <cstdio>

namespace {
double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
double g_in_exchange = 0, g_first = -1, g_last = 0;
long g_exchanges = 0;
}  // namespace

extern "C" int MPI_Sendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                            void* recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm,
                            MPI_Status* status) {
  const double t0 = now();
  if (g_first < 0) g_first = t0;
  const int r = PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source,
                              recvtag, comm, status);
  g_last = now();
  g_in_exchange += g_last - t0;
  ++g_exchanges;
  return r;
}

// The compiled step posts its exchange (MPI_Isend/MPI_Irecv, which return at once) and
// waits for it with MPI_Waitall after the rows that do not need it (docs/sharding.md,
// "Overlapping the exchange"): the wait is the exchange's cost there.
extern "C" int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  const double t0 = now();
  if (g_first < 0) g_first = t0;
  const int r = PMPI_Waitall(count, requests, statuses);
  g_last = now();
  g_in_exchange += g_last - t0;
  ++g_exchanges;
  return r;
}

extern "C" int MPI_Finalize() {
  int rank = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::printf("mpi_exchange_seconds_rank%d %.6f\nmpi_span_seconds_rank%d %.6f\nmpi_exchanges_rank%d %ld\n", rank,
              g_in_exchange, rank, g_first < 0 ? 0.0 : g_last - g_first, rank, g_exchanges);
  std::fflush(stdout);
  return PMPI_Finalize();
}
