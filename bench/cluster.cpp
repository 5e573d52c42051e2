// Network figures of a simulated cluster (scripts/cluster, docs/cluster.md): ping-pong
// latency, allreduce latency and bandwidth of ts::comm next to raw MPI on the same links,
// and the decomposed shallow-water demo with its 2 processes on 2 hosts against both on one
// host (TCP in both cases). Run as root; elsewhere it prints why it cannot and exits 0.
//
// Without MPI in the environment this program is the launcher: it runs itself and the demo
// under `scripts/cluster --hosts H run -np 2`, for H = 1 and 2 alternately,
// TESSEL_BENCH_CLUSTER_REPEATS times (default 5), and prints the best figures:
//   cluster.pingpong_us_{1host,2hosts}, cluster.pingpong_mpi_us_{...}
//   cluster.halo_173kb[_mpi]_us_{...}     the demo's halo exchange (one sendrecv of 172,800 B each way)
//   cluster.allreduce_{8b,1kib,64kib,4mib}[_jit]_us_{...} and _mpi_us_{...}
//   cluster.allreduce_[jit_]over_mpi_<size>  ts::comm allreduce (eager, jitted) / MPI_Allreduce, 2 hosts:
//                                         the median over all rounds of the two's times in one round
//   cluster.allreduce_[jit_]best_over_mpi_<size>  the same from each side's best time
//   cluster.allreduce_[jit_]overhead_over_mpi  the ratio for 8 bytes (the fixed cost per call), the
//                                         median over the quietest quarter of the rounds
//   cluster.allreduce_[jit_]bw_fraction   MPI_Allreduce time / ts::comm time at 4 MiB, 2 hosts (the same)
//   cluster.shallow_water_[steady_]2hosts_over_1host  whole runs (and their fastest 10 steps), best times
//   cluster.shallow_water_2hosts_over_1host_median   the median over repeats of 2-host / 1-host run just before
// Within a job, tessel and raw MPI are timed in alternating rounds (paired_seconds_per_call).
#include <mpi.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bench_util.h"
#include "tessel/comm.h"
#include "tessel/distributed.h"
#include "tessel/tessel.h"

namespace ts = tessel;
using tessel::bench::report;
using tessel::bench::seconds_per_call;

namespace {

// What paired_seconds_per_call measured: each side's best seconds per call, and the median
// over rounds of b's time over a's within the round.
struct Paired {
  double best_a = 1e30, best_b = 1e30;
  std::vector<double> ratios;  // b / a, one per round
  std::vector<double> totals;  // a + b, one per round (how quiet the round was)
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// `a` and `b` timed in alternating rounds of `n` calls each (a first in even rounds, b first
// in odd ones), both sides measured the same way: a ratio of the two then carries no drift
// of the shared machine's load and no advantage of going first. The median of the rounds'
// ratios is robust to a round in which the other jobs preempted one side. Every process of
// the job calls them in the same order (they are collectives).
template <class A, class B>
Paired paired_seconds_per_call(A&& a, B&& b, int n, int rounds) {
  Paired p;
  for (int r = 0; r < rounds; ++r) {
    double ta, tb;
    if (r % 2 == 0) {
      ta = seconds_per_call(a, n, 1);
      tb = seconds_per_call(b, n, 1);
    } else {
      tb = seconds_per_call(b, n, 1);
      ta = seconds_per_call(a, n, 1);
    }
    p.best_a = std::min(p.best_a, ta);
    p.best_b = std::min(p.best_b, tb);
    p.ratios.push_back(tb / ta);
    p.totals.push_back(ta + tb);
  }
  return p;
}

// The allreduce sizes measured, their tags, calls per round and rounds: small messages show
// the fixed cost per call, large ones the bandwidth. A 4 MiB call takes milliseconds, in
// which the shared cores' other jobs often preempt it: many rounds of 2 calls.
struct Size {
  size_t floats;
  const char* tag;
  int calls, rounds;
};
constexpr Size kSizes[] = {
    {2, "8b", 50, 32}, {256, "1kib", 50, 16}, {16384, "64kib", 10, 16}, {size_t(1) << 20, "4mib", 2, 48}};

// One process of the measuring job: rank 0 prints `key value` lines (microseconds).
int measure() {
  ts::distributed::initialize();
  const int rank = ts::process_index();
  MPI_Comm c;
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  const int peer = 1 - rank;
  std::map<std::string, double> out;
  std::vector<std::pair<std::string, double>> ratios;
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
  const int rounds = 16;
  const Paired pp = paired_seconds_per_call(raw_pingpong, ts_pingpong, 50, rounds);
  out["pingpong_mpi_us"] = pp.best_a / 2 * 1e6;
  out["pingpong_us"] = pp.best_b / 2 * 1e6;
  // The decomposed demo's halo exchange on 2 processes: one sendrecv of 4 rows of 6 fields
  // of 1800 float32 each way (172,800 bytes, above TCP's default eager limit of 64 KiB).
  {
    const int n = 4 * 6 * 1800;
    std::vector<float> hs(n, 1.0f), hr(n);
    ts::Array h = ts::Array(hs, {int64_t(n)});
    auto raw = [&] {
      MPI_Sendrecv(hs.data(), n, MPI_FLOAT, peer, 7, hr.data(), n, MPI_FLOAT, peer, 7, c, MPI_STATUS_IGNORE);
    };
    auto tessel = [&] { ts::comm::sendrecv(h, h, peer, peer).block_until_ready(); };
    const Paired halo = paired_seconds_per_call(raw, tessel, 5, rounds);
    out["halo_mpi_us"] = halo.best_a * 1e6;
    out["halo_us"] = halo.best_b * 1e6;
  }
  // Allreduce of each size: raw MPI, eager ts::comm, and ts::comm inside a jitted program.
  auto jitted = ts::jit([](const ts::Array& a) { return ts::comm::allreduce(a, ts::comm::SUM); });
  for (const Size& size : kSizes) {
    const size_t n = size.floats;
    // MPI's buffers aligned as tessel's (64 bytes): the reduction's vector loop and the
    // copies then run on the same alignment on both sides.
    const size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
    std::unique_ptr<float, decltype(&std::free)> in(static_cast<float*>(std::aligned_alloc(64, bytes)), &std::free),
        res(static_cast<float*>(std::aligned_alloc(64, bytes)), &std::free);
    std::fill_n(in.get(), n, 1.0f);
    std::fill_n(res.get(), n, 0.0f);
    ts::Array a = ts::Array(std::vector<float>(n, 1.0f), {int64_t(n)});
    auto raw = [&] { MPI_Allreduce(in.get(), res.get(), int(n), MPI_FLOAT, MPI_SUM, c); };
    auto eager = [&] { ts::comm::allreduce(a, ts::comm::SUM).block_until_ready(); };
    auto jit = [&] { jitted(a).block_until_ready(); };
    jit();  // compiles
    const Paired eager_p = paired_seconds_per_call(raw, eager, size.calls, size.rounds);
    const Paired jit_p = paired_seconds_per_call(raw, jit, size.calls, size.rounds);
    const std::string tag = size.tag;
    out["allreduce_" + tag + "_mpi_us"] = std::min(eager_p.best_a, jit_p.best_a) * 1e6;
    out["allreduce_" + tag + "_us"] = eager_p.best_b * 1e6;
    out["allreduce_jit_" + tag + "_us"] = jit_p.best_b * 1e6;
    // Per round: tessel's time over MPI's in that round, and the two's sum (the launcher
    // takes medians).
    for (size_t r = 0; r < eager_p.ratios.size(); ++r) {
      const std::string round = "_" + std::to_string(r);
      ratios.push_back({"ratio_" + tag + round, eager_p.ratios[r]});
      ratios.push_back({"total_" + tag + round, eager_p.totals[r]});
      ratios.push_back({"ratio_jit_" + tag + round, jit_p.ratios[r]});
      ratios.push_back({"total_jit_" + tag + round, jit_p.totals[r]});
    }
  }
  if (rank == 0) {
    for (auto& [k, v] : out) std::printf("%s %.6g\n", k.c_str(), v);
    for (auto& [k, v] : ratios) std::printf("%s %.6g\n", k.c_str(), v);
  }
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

// The smaller of `m[key]` and `v` (a key not yet in `m` takes `v`).
void keep_min(std::map<std::string, double>& m, const std::string& key, double v) {
  auto [it, fresh] = m.emplace(key, v);
  if (!fresh) it->second = std::min(it->second, v);
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
  const char* repeats_env = std::getenv("TESSEL_BENCH_CLUSTER_REPEATS");
  const int repeats = std::max(1, repeats_env ? std::atoi(repeats_env) : 5);
  const double load = tessel::bench::load_average();
  // The jobs on 1 host and on 2 hosts alternate, `repeats` times each; every figure is the
  // best over the repeats (and over the rounds within a job), so the 1-host and the 2-host
  // figures, and tessel's and MPI's, have the same chances on the shared cores.
  std::map<int, std::map<std::string, double>> best;  // hosts -> key -> best microseconds
  // hosts -> "<jit_>tag" -> {the two's time in the round, tessel's over MPI's} of each
  // round of every job
  std::map<int, std::map<std::string, std::vector<std::pair<double, double>>>> rounds;
  std::vector<double> demo_pairs;  // per repeat: the 2-host run's ms per step over the 1-host run's just before
  double one_host_ms = 0;
  for (int r = 0; r < repeats; ++r)
    for (int hosts : {1, 2}) {
      const std::string run = "TESSEL_CPU_DEVICES=1 " + script + " --hosts " + std::to_string(hosts) + " run -np 2 -- ";
      auto job = run_lines(run + self + " measure");
      for (auto& [k, v] : job) {
        if (v <= 0 || k.rfind("total_", 0) == 0) continue;
        if (k.rfind("ratio_", 0) != 0) {
          keep_min(best[hosts], k, v);
          continue;
        }
        const std::string round = k.substr(6);  // "<jit_>tag_r"
        if (job.count("total_" + round))
          rounds[hosts][round.substr(0, round.rfind('_'))].push_back({job["total_" + round], v});
      }
      auto s = run_lines(run + sw + " --nx 1800 --ny 900 --steps " + steps + " --no-progress");
      for (const char* key : {"ms_per_step", "best_window_ms_per_step"})
        if (s.count(key) && s[key] > 0) keep_min(best[hosts], std::string("shallow_water_") + key, s[key]);
      if (hosts == 1) one_host_ms = s.count("ms_per_step") ? s["ms_per_step"] : 0;
      else if (one_host_ms > 0 && s.count("ms_per_step") && s["ms_per_step"] > 0)
        demo_pairs.push_back(s["ms_per_step"] / one_host_ms);
    }
  auto get = [&](int hosts, const std::string& k) { return best[hosts].count(k) ? best[hosts][k] : 0.0; };
  for (int hosts : {1, 2}) {
    const std::string sfx = hosts == 1 ? "_1host" : "_2hosts";
    report("cluster.pingpong_us" + sfx, get(hosts, "pingpong_us"), "us");
    report("cluster.pingpong_mpi_us" + sfx, get(hosts, "pingpong_mpi_us"), "us");
    report("cluster.halo_173kb_us" + sfx, get(hosts, "halo_us"), "us");
    report("cluster.halo_173kb_mpi_us" + sfx, get(hosts, "halo_mpi_us"), "us");
    for (const Size& size : kSizes) {
      const std::string tag = size.tag;
      report("cluster.allreduce_" + tag + "_us" + sfx, get(hosts, "allreduce_" + tag + "_us"), "us");
      report("cluster.allreduce_jit_" + tag + "_us" + sfx, get(hosts, "allreduce_jit_" + tag + "_us"), "us");
      report("cluster.allreduce_" + tag + "_mpi_us" + sfx, get(hosts, "allreduce_" + tag + "_mpi_us"), "us");
    }
    report("cluster.shallow_water_ms_per_step" + sfx, get(hosts, "shallow_water_ms_per_step"), "ms");
    report("cluster.shallow_water_steady_ms_per_step" + sfx, get(hosts, "shallow_water_best_window_ms_per_step"), "ms");
  }
  // tessel over raw MPI on the same links (2 hosts), per size, eager and jitted.
  auto ratio = [&](const std::string& name, double num, double den) {
    if (num > 0 && den > 0) report(name, num / den, "x");
  };
  // The median over all rounds of the 2-host jobs of tessel's time over MPI's in the same
  // round; `_best` lines divide the best times instead (each side's quietest moment, which
  // one side may catch and the other not). The acceptance lines take the median over the
  // quietest quarter of the rounds (quiet_median_of).
  auto median_of = [&](const std::string& key) {
    std::vector<double> r;
    for (auto& [total, ratio] : rounds[2][key]) r.push_back(ratio);
    return median(r);
  };
  // The median ratio over the quietest quarter of the rounds (the smallest sums of the two
  // sides' times): both sides of a round share its moment, so one side's lucky moment
  // does not count, and rounds in which the other jobs preempted the call are left out.
  auto quiet_median_of = [&](const std::string& key) {
    auto all = rounds[2][key];
    std::sort(all.begin(), all.end());
    std::vector<double> r;
    for (size_t i = 0; i < std::max<size_t>(1, all.size() / 4) && i < all.size(); ++i) r.push_back(all[i].second);
    return median(r);
  };
  for (const Size& size : kSizes) {
    const std::string tag = size.tag;
    ratio("cluster.allreduce_over_mpi_" + tag, median_of(tag), 1);
    ratio("cluster.allreduce_jit_over_mpi_" + tag, median_of("jit_" + tag), 1);
    const double mpi = get(2, "allreduce_" + tag + "_mpi_us");
    ratio("cluster.allreduce_best_over_mpi_" + tag, get(2, "allreduce_" + tag + "_us"), mpi);
    ratio("cluster.allreduce_jit_best_over_mpi_" + tag, get(2, "allreduce_jit_" + tag + "_us"), mpi);
  }
  ratio("cluster.allreduce_overhead_over_mpi", quiet_median_of("8b"), 1);
  ratio("cluster.allreduce_jit_overhead_over_mpi", quiet_median_of("jit_8b"), 1);
  ratio("cluster.allreduce_bw_fraction", 1, quiet_median_of("4mib"));
  ratio("cluster.allreduce_jit_bw_fraction", 1, quiet_median_of("jit_4mib"));
  report("cluster.allreduce_4mib_rounds", double(rounds[2]["4mib"].size()), "");
  ratio("cluster.pingpong_over_mpi", get(2, "pingpong_us"), get(2, "pingpong_mpi_us"));
  // The demo's steps: whole runs (the first step compiles, every sixth reads the range of
  // h), and the steady state (its fastest 10 steps between two waits, nothing else in them).
  ratio("cluster.shallow_water_2hosts_over_1host", get(2, "shallow_water_ms_per_step"),
        get(1, "shallow_water_ms_per_step"));
  ratio("cluster.shallow_water_2hosts_over_1host_median", median(demo_pairs), 1);
  ratio("cluster.shallow_water_steady_2hosts_over_1host", get(2, "shallow_water_best_window_ms_per_step"),
        get(1, "shallow_water_best_window_ms_per_step"));
  report("cluster.repeats", repeats, "");
  if (load >= 0) report("cluster.load_average", load, "");
  return 0;
}

// `bench_cluster loop FLOATS CALLS`: eager allreduces of FLOATS float32 and nothing else, to
// count the instructions of one call (mpirun -np 2 valgrind --tool=callgrind
// --toggle-collect='tessel::comm::allreduce*' bench_cluster loop 2 1000; docs/scaling.md).
int loop(size_t floats, int calls) {
  ts::distributed::initialize();
  ts::Array a = ts::Array(std::vector<float>(floats, 1.0f), {int64_t(floats)});
  for (int i = 0; i < calls; ++i) ts::comm::allreduce(a, ts::comm::SUM).block_until_ready();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "measure") return measure();
  if (argc > 3 && std::string(argv[1]) == "loop") return loop(std::stoul(argv[2]), std::stoi(argv[3]));
  return launch();
}
