// Network figures of a simulated cluster (scripts/cluster, docs/cluster.md): ping-pong
// latency, allreduce latency and bandwidth of ts::comm next to raw MPI on the same links,
// and the decomposed shallow-water demo with its 2 processes on 2 hosts against both on one
// host (TCP in both cases). Run as root; elsewhere it prints why it cannot and exits 0.
//
// Without MPI in the environment this program is the launcher: it runs itself under
// `scripts/cluster --hosts H run -np 2` for H = 1 and 2 and prints
//   cluster.pingpong_us_{1host,2hosts}, cluster.pingpong_mpi_us_{...}
//   cluster.allreduce_overhead_over_mpi   ts::comm allreduce of 8 bytes / MPI_Allreduce, 2 hosts
//   cluster.allreduce_bw_fraction         MPI_Allreduce time / ts::comm time at 4 MiB, 2 hosts
//   cluster.shallow_water_2hosts_over_1host
#include <mpi.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "bench_util.h"
#include "tessel/comm.h"
#include "tessel/distributed.h"
#include "tessel/tessel.h"

namespace ts = tessel;
using tessel::bench::report;
using tessel::bench::seconds_per_call;

namespace {

// One process of the measuring job: rank 0 prints `key value` lines.
int measure() {
  ts::distributed::initialize();
  const int rank = ts::process_index();
  MPI_Comm c;
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  const int peer = 1 - rank;
  std::map<std::string, double> out;
  // Ping-pong of 8 bytes: half the round trip.
  float small[2] = {1, 2};
  auto raw_pingpong = [&] {
    if (rank == 0) {
      MPI_Send(small, 2, MPI_FLOAT, peer, 0, c);
      MPI_Recv(small, 2, MPI_FLOAT, peer, 0, c, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(small, 2, MPI_FLOAT, peer, 0, c, MPI_STATUS_IGNORE);
      MPI_Send(small, 2, MPI_FLOAT, peer, 0, c);
    }
  };
  ts::Array x = ts::Array(std::vector<float>{1, 2}, {2});
  auto ts_pingpong = [&] {
    if (rank == 0) {
      ts::comm::send(x, peer);
      x = ts::comm::recv(x, {.source = peer});
    } else {
      x = ts::comm::recv(x, {.source = peer});
      ts::comm::send(x, peer);
    }
    x.block_until_ready();
  };
  out["pingpong_mpi_us"] = seconds_per_call(raw_pingpong, 200) / 2 * 1e6;
  out["pingpong_us"] = seconds_per_call(ts_pingpong, 200) / 2 * 1e6;
  // Allreduce: 8 bytes (latency) and 4 MiB (bandwidth).
  for (size_t n : {size_t(2), size_t(1) << 20}) {
    std::vector<float> in(n, 1.0f), res(n);
    ts::Array a = ts::Array(in, {int64_t(n)});
    auto raw = [&] { MPI_Allreduce(in.data(), res.data(), int(n), MPI_FLOAT, MPI_SUM, c); };
    auto mine = [&] { ts::comm::allreduce(a, ts::comm::SUM).block_until_ready(); };
    const int reps = n > 2 ? 10 : 200;
    const std::string tag = n > 2 ? "4mib" : "8b";
    out["allreduce_" + tag + "_mpi_us"] = seconds_per_call(raw, reps) * 1e6;
    out["allreduce_" + tag + "_us"] = seconds_per_call(mine, reps) * 1e6;
  }
  if (rank == 0)
    for (auto& [k, v] : out) std::printf("%s %.6g\n", k.c_str(), v);
  std::fflush(stdout);
  MPI_Comm_free(&c);
  return 0;
}

std::string dir_of_exe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  std::string p(buf, size_t(n > 0 ? n : 0));
  return p.substr(0, p.rfind('/'));
}

// Runs `cmd`, returns the `key value` lines it printed (other lines ignored).
std::map<std::string, double> run_lines(const std::string& cmd) {
  std::map<std::string, double> out;
  FILE* f = popen((cmd + " 2>/dev/null").c_str(), "r");
  if (!f) return out;
  char line[512];
  while (std::fgets(line, sizeof line, f)) {
    char key[256];
    double v;
    if (std::sscanf(line, "%255s %lf", key, &v) == 2) out[key] = v;
  }
  pclose(f);
  return out;
}

int launch() {
  const std::string exe_dir = dir_of_exe();
  const char* env_script = std::getenv("TESSEL_CLUSTER_SCRIPT");
  const std::string script = env_script ? env_script : exe_dir + "/../../scripts/cluster";
  if (std::system((script + " check >/dev/null 2>&1").c_str()) != 0) {
    std::printf("# cluster: skipped: `%s check` says namespaces cannot be made here (run as root)\n", script.c_str());
    return 0;
  }
  const std::string self = exe_dir + "/bench_cluster";
  const std::string sw = exe_dir + "/../examples/shallow_water/shallow_water";
  const char* steps_env = std::getenv("TESSEL_BENCH_SW_STEPS");
  const std::string steps = steps_env ? steps_env : "60";
  std::map<int, std::map<std::string, double>> by_hosts;
  std::map<int, double> sw_ms;
  for (int hosts : {1, 2}) {
    const std::string run = script + " --hosts " + std::to_string(hosts) + " run -np 2 -- ";
    by_hosts[hosts] = run_lines("TESSEL_CPU_DEVICES=1 " + run + self + " measure");
    auto s = run_lines("TESSEL_CPU_DEVICES=1 " + run + sw + " --nx 1800 --ny 900 --steps " + steps + " --no-progress");
    sw_ms[hosts] = s.count("ms_per_step") ? s["ms_per_step"] : 0;
  }
  for (int hosts : {1, 2}) {
    const std::string sfx = hosts == 1 ? "_1host" : "_2hosts";
    auto& m = by_hosts[hosts];
    report("cluster.pingpong_us" + sfx, m["pingpong_us"], "us");
    report("cluster.pingpong_mpi_us" + sfx, m["pingpong_mpi_us"], "us");
    report("cluster.allreduce_8b_us" + sfx, m["allreduce_8b_us"], "us");
    report("cluster.allreduce_8b_mpi_us" + sfx, m["allreduce_8b_mpi_us"], "us");
    report("cluster.allreduce_4mib_us" + sfx, m["allreduce_4mib_us"], "us");
    report("cluster.allreduce_4mib_mpi_us" + sfx, m["allreduce_4mib_mpi_us"], "us");
    report("cluster.shallow_water_ms_per_step" + sfx, sw_ms[hosts], "ms");
  }
  auto& two = by_hosts[2];
  if (two["allreduce_8b_mpi_us"] > 0) report("cluster.allreduce_overhead_over_mpi", two["allreduce_8b_us"] / two["allreduce_8b_mpi_us"], "x");
  if (two["allreduce_4mib_us"] > 0) report("cluster.allreduce_bw_fraction", two["allreduce_4mib_mpi_us"] / two["allreduce_4mib_us"], "x");
  if (two["pingpong_mpi_us"] > 0) report("cluster.pingpong_over_mpi", two["pingpong_us"] / two["pingpong_mpi_us"], "x");
  if (sw_ms[1] > 0) report("cluster.shallow_water_2hosts_over_1host", sw_ms[2] / sw_ms[1], "x");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "measure") return measure();
  return launch();
}
