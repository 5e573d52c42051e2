// The SPMD partitioner on virtual devices (issue 5), two figures from the same run:
//
//  sharded.speedup_2dev       an element-wise + reduction program, f(a, b) = sum(sin(a) * b +
//                             exp(-a * a), axis 1) on two 4096 x 4096 float32 arrays, jitted
//                             on one device, over the same program jitted on a mesh of two
//                             devices with both arguments split by rows (P("x")): no
//                             communication, each device computes half the rows.
//  reshard.fraction_of_memcpy the canonical reshard P("x", none) -> P(none, "x") of a 256 MiB
//                             float32 array over two devices (a jit whose only operation is
//                             one all_to_all, checked on its lowered text), against one plain
//                             std::memcpy of 256 MiB between warm buffers: memcpy time over
//                             reshard time.
//
//  sharded.stencil_speedup_2dev, sharded.train_loop_speedup_2dev,
//  sharded.shallow_water_speedup_2dev
//                             loops that stay partitioned (issue 20): a stencil time loop
//                             exchanging halo rows, a data-parallel training loop
//                             all-reducing its gradients, and the demo's model step; each
//                             jitted on one device against the same jit on 2 devices.
//  sharded.handwritten_2thread_speedup, sharded.stencil.handwritten_2thread_speedup,
//  sharded.shallow_water.handwritten_2thread_speedup
//                             the same programs written by hand on 2 threads over 1 (the
//                             element-wise one with std::thread, the steps with OpenMP): the
//                             scaling this run's cores and memory bus allow them.
//
// The figures are about devices, not threads: the program sets TESSEL_CPU_DEVICES=2 and
// TESSEL_NUM_THREADS=1 before tessel starts, so each virtual device computes on its own
// stream thread alone (one core each) and the one-device run has one core. Rounds alternate
// between the compared runs; times are the best round, ratios the median over rounds of
// the ratio within a round (see median_ratio); sharded.speedup_2dev_best is the ratio of the
// best rounds. The rounds are printed as comments.
//
//  sharded.device_busy_ratio_2dev
//                             in sharded.speedup_2dev's 2-device calls, each device's busy
//                             time per call (its stream finishing the call's work, from the
//                             call), printed per round; the figure is the median over rounds
//                             of the slower device's over the faster one's (1: in step), so a
//                             slow run shows whether one device was slow or both were.
//
//  sharded.stencil.steps_per_exchange, sharded.shallow_water.collective_permutes_per_step
//                             from the lowered text: the stencil body's steps per iteration
//                             of the per-device loop (one halo exchange each), and the
//                             shallow-water step's collective_permutes (wide halos:
//                             docs/sharding.md).
//
// Usage: bench_sharding [rows]   (rows of the speedup arrays, default 4096; the reshard
// array is 8192 x 8192). BENCH_SHARDING_CASES=stencil,shallow_water (of speedup, stencil,
// train_loop, shallow_water, reshard) runs only those, BENCH_SHARDING_ROUNDS=N sets the
// rounds, BENCH_SHARDING_TEXT=1 prints the per-device programs to stderr.
// Exits 1 when a partitioned result differs from the unpartitioned one, or the reshard's
// lowered program does not hold exactly one all_to_all.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <sys/resource.h>
#include <unistd.h>

#include "backend/cpu/parallel.h"
#include "core/device_impl.h"
#include "core/stream.h"
#include "distributed/collectives.h"
#include "bench_util.h"
#include "shallow_water.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace tb = tessel::bench;

namespace {

double seconds_of(const auto& f) {
  auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Where the cores went while one side of a comparison ran: this process's CPU time
// (getrusage) and the machine's busy and stolen time (/proc/stat, in clock ticks), summed
// over that side's rounds. A 2-device round that got less than 2 cores tells whether the
// devices had work to overlap but no core (other processes, or the hypervisor taking the
// VM's second core: steal) or had a core but nothing to run on it (the runtime).
struct CpuTimes {
  double process_s = 0, busy_s = 0, steal_s = 0;

  static CpuTimes now() {
    CpuTimes t;
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    t.process_s = double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
    if (FILE* f = std::fopen("/proc/stat", "r")) {
      unsigned long long v[8] = {};  // user nice system idle iowait irq softirq steal
      if (std::fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
                      &v[7]) == 8) {
        const double tick = 1.0 / double(sysconf(_SC_CLK_TCK));
        t.busy_s = double(v[0] + v[1] + v[2] + v[5] + v[6]) * tick;
        t.steal_s = double(v[7]) * tick;
      }
      std::fclose(f);
    }
    return t;
  }
  CpuTimes& operator+=(const CpuTimes& o) {
    process_s += o.process_s, busy_s += o.busy_s, steal_s += o.steal_s;
    return *this;
  }
  CpuTimes operator-(const CpuTimes& o) const { return {process_s - o.process_s, busy_s - o.busy_s, steal_s - o.steal_s}; }
};

// CPU seconds of each thread of this process (/proc/self/task/*/stat), by thread id.
// Which threads spent the CPU time of a comparison's side: the device streams computing, or
// some other thread (a waiter spinning) taking a core from them.
std::map<long, double> thread_cpu_seconds() {
  std::map<long, double> out;
  const double tick = 1.0 / double(sysconf(_SC_CLK_TCK));
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::FILE* f = std::fopen((e.path() / "stat").c_str(), "r");
    if (!f) continue;
    char buf[1024];
    const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    buf[n] = 0;
    const char* p = std::strrchr(buf, ')');  // the name may hold spaces; fields follow it
    unsigned long long utime = 0, stime = 0;
    if (p && std::sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) == 2)
      out[std::atol(e.path().filename().c_str())] = double(utime + stime) * tick;
  }
  return out;
}

// "# <name>: CPU seconds per thread over <what>: main 0.01, 2.10, 2.05": the threads that
// spent at least 1% of the total, the main thread first.
void print_thread_cpu(const std::string& name, const std::string& what, const std::map<long, double>& before,
                      const std::map<long, double>& after) {
  std::vector<std::pair<double, long>> spent;
  double total = 0;
  for (const auto& [tid, s] : after) {
    auto it = before.find(tid);
    const double d = s - (it == before.end() ? 0.0 : it->second);
    spent.emplace_back(d, tid);
    total += d;
  }
  std::sort(spent.rbegin(), spent.rend());
  std::string text;
  char buf[64];
  const long main_tid = long(getpid());
  for (const auto& [d, tid] : spent)
    if (tid == main_tid || d >= 0.01 * total) {
      std::snprintf(buf, sizeof buf, "%s%s%.2f", text.empty() ? "" : ", ", tid == main_tid ? "main " : "", d);
      text += buf;
    }
  std::printf("# %s: CPU seconds per thread over %s: %s\n", name.c_str(), what.c_str(), text.c_str());
}

// The share of this process's anonymous memory in transparent huge pages
// (/proc/self/smaps_rollup), or -1 where it cannot be read.
double huge_page_fraction() {
  std::FILE* f = std::fopen("/proc/self/smaps_rollup", "r");
  if (!f) return -1;
  double anon = 0, huge = 0;
  char line[256];
  while (std::fgets(line, sizeof line, f)) {
    if (std::strncmp(line, "Anonymous:", 10) == 0) anon = std::atof(line + 10);
    if (std::strncmp(line, "AnonHugePages:", 14) == 0) huge = std::atof(line + 14);
  }
  std::fclose(f);
  return anon > 0 ? huge / anon : -1;
}

// Calls of `f` per round so that a round lasts at least kMinRoundSeconds (f is timed once
// here, warm). Rounds of a few milliseconds would put a whole comparison inside a fraction
// of a second, where one burst of another process or one absence of the VM's second core
// decides the median of every round at once.
constexpr double kMinRoundSeconds = 0.1;
int calls_per_round(const auto& f) {
  const double t = seconds_of(f);
  return std::max(1, int(std::ceil(kMinRoundSeconds / std::max(t, 1e-6))));
}

// Times `calls` calls of f, adding where the cores went to `cpu`; returns seconds per call.
double timed(const auto& f, int calls, CpuTimes& cpu) {
  const CpuTimes c0 = CpuTimes::now();
  const double s = seconds_of([&] {
    for (int i = 0; i < calls; ++i) f();
  });
  cpu += CpuTimes::now() - c0;
  return s / calls;
}

double sum_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

// Given seconds per call over rounds of `calls` calls: "# <name>: cores used per round: 1 device 1.00 (others 0.02, stolen 0.00), 2 devices ..."
// and `<name>.cores_2dev`: how many cores the 2-device rounds got (this process's CPU time
// over their time); near 2 when the devices ran side by side.
void report_cores(const std::string& name, int calls, const std::vector<double>& t1, const CpuTimes& c1,
                  const std::vector<double>& t2, const CpuTimes& c2) {
  const double w1 = sum_of(t1) * calls, w2 = sum_of(t2) * calls;
  std::printf("# %s: cores per round: 1 device %.2f (other processes %.2f, stolen %.2f); 2 devices %.2f (other "
              "processes %.2f, stolen %.2f)\n",
              name.c_str(), c1.process_s / w1, std::max(0.0, c1.busy_s - c1.process_s) / w1, c1.steal_s / w1,
              c2.process_s / w2, std::max(0.0, c2.busy_s - c2.process_s) / w2, c2.steal_s / w2);
  tb::report(name + ".cores_2dev", c2.process_s / w2, "cores");
  // Above 1: the two devices spent more CPU time on the same work (memory stalls when the
  // bus serves two cores, dispatch); the speedup is then at most 2 / this.
  // (Both sides ran the same number of calls.)
  tb::report(name + ".cpu_time_2dev_over_1dev", c2.process_s / c1.process_s, "x");
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string rounds_text(const std::vector<double>& v) {
  std::string s;
  char buf[32];
  for (double t : v) {
    std::snprintf(buf, sizeof buf, " %.4g", t);
    s += buf;
  }
  return s;
}

// The median over rounds of num[r] / den[r]: the compared runs alternate, so a change of
// machine speed that lasts a few rounds (frequency, other tenants) hits both sides of a
// ratio alike, where a ratio of best times could pair a fast phase of one with a slow one
// of the other.
double median_ratio(const std::vector<double>& num, const std::vector<double>& den) {
  std::vector<double> r;
  for (size_t i = 0; i < num.size(); ++i) r.push_back(num[i] / den[i]);
  return median(r);
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

std::vector<float> values(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t s = seed;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;  // a small LCG: the values only need to vary
    x = float(s >> 8) * (2.0f / 16777216.0f) - 1.0f;
  }
  return v;
}

// Whether two results agree element by element within `tol` (relative); reports the
// first element that does not.
bool same_result(const char* what, const ts::Array& one, const ts::Array& two, float tol) {
  const auto x1 = one.to_vector<float>(), x2 = two.to_vector<float>();
  for (size_t i = 0; i < x1.size(); ++i)
    if (!(std::abs(x1[i] - x2[i]) <= tol * (1.0f + std::abs(x1[i])))) {
      std::fprintf(stderr, "bench_sharding: %s: element %zu: one device %g, two devices %g\n", what, i, double(x1[i]),
                   double(x2[i]));
      return false;
    }
  return true;
}

ts::Array program(const ts::Array& a, const ts::Array& b) {
  return ts::sum(ts::sin(a) * b + ts::exp(-(a * a)), {1});
}

// sharded.memory_read_2thread_speedup: how much faster two threads read 128 MiB (each its
// half, summing floats) than one thread reads all of it, in alternating rounds of the same
// run. The element-wise program above reads two 64 MiB arrays at a few GB/s per core, so it
// is bound by memory as much as by arithmetic: on a VM whose memory bus other tenants share,
// its speedup follows this figure (1.3-2.0 on this project's 2-core VM).
void memory_read_scaling(int rounds) {
  const std::vector<float> data = values(size_t(32) << 20, 7);
  auto read = [&](size_t begin, size_t end) {
    float acc[8] = {};
    for (size_t i = begin; i + 8 <= end; i += 8)
      for (int k = 0; k < 8; ++k) acc[k] += data[i + size_t(k)];
    float s = 0;
    for (float a : acc) s += a;
    return s;
  };
  volatile float sink = 0;
  const size_t n = data.size();
  std::vector<double> t1, t2;
  sink = sink + read(0, n);  // warm
  for (int r = 0; r < rounds; ++r) {
    t1.push_back(seconds_of([&] { sink = sink + read(0, n); }));
    t2.push_back(seconds_of([&] {
      float other = 0;
      std::thread t([&] { other = read(n / 2, n); });
      const float mine = read(0, n / 2);
      t.join();
      sink = sink + mine + other;
    }));
  }
  std::printf("# memory: one thread reads 128 MiB in %.4g s (best), two threads in %.4g s\n",
              *std::min_element(t1.begin(), t1.end()), *std::min_element(t2.begin(), t2.end()));
  tb::report("sharded.memory_read_2thread_speedup", median_ratio(t1, t2), "x");
}

// sharded.handwritten_2thread_speedup: the element-wise program written by hand (scalar libm
// sin and exp over the first 1024 rows, rows split between two std::threads) on 2 threads
// over 1, in alternating rounds of the same run. It is bound by arithmetic, not memory, so it
// shows whether this run's two cores compute at the same speed: on this project's VM, in some
// process runs one vCPU computes about half as fast, and sharded.speedup_2dev follows it.
void handwritten_program_scaling(const std::vector<float>& a, const std::vector<float>& b, int64_t cols, int rounds) {
  const int64_t rows = std::min<int64_t>(1024, int64_t(a.size()) / cols);
  std::vector<float> out(static_cast<size_t>(rows));
  auto compute = [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      float acc = 0;
      for (int64_t c = 0; c < cols; ++c) {
        const float x = a[size_t(r * cols + c)];
        acc += std::sin(x) * b[size_t(r * cols + c)] + std::exp(-(x * x));
      }
      out[size_t(r)] = acc;
    }
  };
  std::vector<double> t1, t2;
  compute(0, rows);  // warm
  for (int r = 0; r < rounds; ++r) {
    t1.push_back(seconds_of([&] { compute(0, rows); }));
    t2.push_back(seconds_of([&] {
      std::thread t([&] { compute(rows / 2, rows); });
      compute(0, rows / 2);
      t.join();
    }));
  }
  std::printf("# handwritten program: %lld rows, one thread %.4g s (best), two threads %.4g s\n",
              static_cast<long long>(rows), *std::min_element(t1.begin(), t1.end()), *std::min_element(t2.begin(), t2.end()));
  tb::report("sharded.handwritten_2thread_speedup", median_ratio(t1, t2), "x");
}

// Each device's busy time in one call of a partitioned program: `run` dispatches the call
// (its work queued on the devices' streams, which are idle before it), then a marker task
// queued behind it on each device's stream records when that stream finished the call's
// work. Adds each device's seconds to `busy` (by position in `devices`).
void time_devices(const auto& run, const std::vector<ts::Device>& devices, std::vector<double>& busy) {
  const auto t0 = std::chrono::steady_clock::now();
  const ts::Array out = run();
  std::vector<double> done(devices.size());
  for (size_t i = 0; i < devices.size(); ++i)
    devices[i].impl()->stream().enqueue([&done, i, t0] {
      done[i] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    });
  out.block_until_ready();
  for (const ts::Device& d : devices) d.impl()->stream().synchronize();
  for (size_t i = 0; i < devices.size(); ++i) busy[i] += done[i];
}

// sharded.speedup_2dev. Returns false when the results differ.
bool speedup(int64_t rows, int rounds) {
  const int64_t cols = 4096;
  const auto av = values(size_t(rows * cols), 1), bv = values(size_t(rows * cols), 2);
  const ts::Device d0 = ts::devices()[0];
  const ts::Array a1 = ts::device_put(ts::Array(av, {rows, cols}), d0);
  const ts::Array b1 = ts::device_put(ts::Array(bv, {rows, cols}), d0);
  const ts::Mesh mesh = ts::make_mesh({2}, {"x"});
  const ts::NamedSharding split(mesh, ts::P("x"));
  const ts::Array a2 = ts::device_put(a1, split), b2 = ts::device_put(b1, split);

  auto one = ts::jit(program);
  auto two = ts::jit(program, {.in_shardings = {split, split}});
  if (!same_result("element-wise", one(a1, b1), two(a2, b2), 1e-3f)) return false;  // and compile
  const std::string text = two.lower(a2, b2).compile().as_text();
  if (count(text, "all_") != 0) std::printf("# unexpected communication in the 2-device program:\n%s", text.c_str());

  std::vector<double> t1, t2;
  CpuTimes c1, c2;
  auto run1 = [&] { one(a1, b1).block_until_ready(); };
  // The 2-device calls time each device too (sharded.device_busy_ratio_2dev): which device was
  // slow in a slow run.
  const std::vector<ts::Device> devs{ts::devices()[0], ts::devices()[1]};
  std::vector<double> busy(2, 0.0);
  std::vector<std::vector<double>> busy_rounds;
  auto run2 = [&] { time_devices([&] { return two(a2, b2); }, devs, busy); };
  const int calls = calls_per_round(run1);
  std::map<long, double> threads1, threads2;
  for (int r = 0; r < rounds; ++r) {
    auto before = thread_cpu_seconds();
    t1.push_back(timed(run1, calls, c1));
    auto between = thread_cpu_seconds();
    busy.assign(2, 0.0);
    t2.push_back(timed(run2, calls, c2));
    busy_rounds.push_back({busy[0] / calls, busy[1] / calls});
    auto after = thread_cpu_seconds();
    for (const auto& [tid, s] : between) threads1[tid] += s - (before.count(tid) ? before[tid] : 0.0);
    for (const auto& [tid, s] : after) threads2[tid] += s - (between.count(tid) ? between[tid] : 0.0);
  }
  const double best1 = *std::min_element(t1.begin(), t1.end()), best2 = *std::min_element(t2.begin(), t2.end());
  std::printf("# sharded: sum(sin(a)*b + exp(-a*a), axis 1) on %lld x %lld float32, best of %d (median 1 device %.4g s, "
              "2 devices %.4g s)\n",
              static_cast<long long>(rows), static_cast<long long>(cols), rounds, median(t1), median(t2));
  std::printf("# rounds (s per call, %d calls per round): 1 device%s; 2 devices%s\n", calls, rounds_text(t1).c_str(),
              rounds_text(t2).c_str());
  tb::report("sharded.time_1dev", best1, "s");
  tb::report("sharded.time_2dev", best2, "s");
  tb::report("sharded.speedup_2dev", median_ratio(t1, t2), "x");
  tb::report("sharded.speedup_2dev_best", best1 / best2, "x");  // the best rounds: both at the machine's fastest
  report_cores("sharded", calls, t1, c1, t2, c2);
  // Per round, each device's busy time per 2-device call, and the median over rounds of the
  // slower device's time over the faster one's (1: the devices kept pace).
  std::string per_device;
  std::vector<double> slow, fast;
  for (const auto& b : busy_rounds) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s%.4g/%.4g", per_device.empty() ? " " : ", ", b[0], b[1]);
    per_device += buf;
    slow.push_back(std::max(b[0], b[1]));
    fast.push_back(std::min(b[0], b[1]));
  }
  std::printf("# sharded: busy s per 2-device call, cpu:0/cpu:1, per round:%s\n", per_device.c_str());
  tb::report("sharded.device_busy_ratio_2dev", median_ratio(slow, fast), "x");
  print_thread_cpu("sharded", "the 1-device rounds", {}, threads1);
  print_thread_cpu("sharded", "the 2-device rounds", {}, threads2);
  std::printf("# sharded: %.0f%% of this process's anonymous memory is in huge pages (TESSEL_HUGE_PAGE_BYTES)\n",
              100 * huge_page_fraction());
  handwritten_program_scaling(av, bv, cols, rounds);
  memory_read_scaling(rounds);
  return true;
}

// Times `one` and `two` in alternating rounds and reports `<name>.time_1dev`,
// `<name>.time_2dev` (best rounds) and `<name>.speedup_2dev` (median ratio within rounds).
// With halo exchanges, also prints how long the devices waited for their neighbours' rows
// (distributed::permute_waits, both devices together) per 2-device round: with the exchange
// overlapped (TESSEL_OVERLAP_EXCHANGE, on by default) a device waits only after its interior rows.
void compare(const std::string& name, const std::string& what, int rounds, const auto& one, const auto& two) {
  std::vector<double> t1, t2;
  CpuTimes c1, c2;
  const int calls = calls_per_round(one);
  const tessel::distributed::PermuteWaits w0 = tessel::distributed::permute_waits();
  std::map<long, double> threads1, threads2;
  for (int r = 0; r < rounds; ++r) {
    auto before = thread_cpu_seconds();
    t1.push_back(timed(one, calls, c1));
    auto between = thread_cpu_seconds();
    t2.push_back(timed(two, calls, c2));
    auto after = thread_cpu_seconds();
    for (const auto& [tid, s] : between) threads1[tid] += s - (before.count(tid) ? before[tid] : 0.0);
    for (const auto& [tid, s] : after) threads2[tid] += s - (between.count(tid) ? between[tid] : 0.0);
  }
  const tessel::distributed::PermuteWaits w1 = tessel::distributed::permute_waits();
  if (w1.count > w0.count) {
    const double total = sum_of(t2) * calls;
    const double wait_s = double(w1.nanoseconds - w0.nanoseconds) * 1e-9;
    const uint64_t n_calls = uint64_t(rounds) * uint64_t(calls);
    std::printf("# %s: waiting for halo rows: %.3g ms per 2-device call (%.3g%% of each device's time), %llu waits "
                "per call\n",
                name.c_str(), wait_s / double(n_calls) * 1e3, 100.0 * wait_s / (2 * total),
                static_cast<unsigned long long>((w1.count - w0.count) / n_calls));
  }
  std::printf("# %s: %s, best of %d (median 1 device %.4g s, 2 devices %.4g s)\n", name.c_str(), what.c_str(), rounds,
              median(t1), median(t2));
  std::printf("# rounds (s per call, %d calls per round): 1 device%s; 2 devices%s\n", calls, rounds_text(t1).c_str(),
              rounds_text(t2).c_str());
  tb::report(name + ".time_1dev", *std::min_element(t1.begin(), t1.end()), "s");
  tb::report(name + ".time_2dev", *std::min_element(t2.begin(), t2.end()), "s");
  tb::report(name + "_speedup_2dev", median_ratio(t1, t2), "x");
  report_cores(name, calls, t1, c1, t2, c2);
  // Which threads spent the CPU time: the device streams, or the calling thread dispatching
  // (and waiting) beside them on the same two cores.
  print_thread_cpu(name, "the 1-device rounds", {}, threads1);
  print_thread_cpu(name, "the 2-device rounds", {}, threads2);
}

// The per-device program of a partitioned function has no all_gather and holds `want`.
bool lowered_as_expected(const char* what, const std::string& text, const std::vector<std::string>& want) {
  if (std::getenv("BENCH_SHARDING_TEXT")) std::fprintf(stderr, "# %s: per-device program:\n%s", what, text.c_str());
  bool ok = count(text, "all_gather") == 0;
  for (const auto& w : want) ok = ok && count(text, w) > 0;
  if (!ok) std::fprintf(stderr, "bench_sharding: %s: unexpected per-device program:\n%s", what, text.c_str());
  return ok;
}

// <name>.handwritten_2thread_speedup: what 2 cores give the same step written by hand
// (bench/baselines/: stencil_ref.cpp, shallow_water_ref.cpp; OpenMP over blocks of rows)
// over 1 core, in the same run: these steps stream their arrays through memory, and the 2
// cores share the memory bus, so this is the scaling the machine allows them. `command`
// prints `ms_per_step`. Alternating rounds; the median of the per-round ratios, as above.
void handwritten_scaling(const std::string& name, const std::string& command, int rounds) {
  auto ms = [&](int threads) {
    auto r = tb::run_baseline("OMP_WAIT_POLICY=passive OMP_NUM_THREADS=" + std::to_string(threads) + " " + command);
    return r.count("ms_per_step") ? r["ms_per_step"] : NAN;
  };
  std::vector<double> one, two;
  for (int r = 0; r < (rounds + 1) / 2; ++r) {
    one.push_back(ms(1));
    two.push_back(ms(2));
  }
  auto failed = [](const std::vector<double>& v) { return std::any_of(v.begin(), v.end(), [](double x) { return std::isnan(x); }); };
  if (failed(one) || failed(two)) {
    std::printf("# %s.handwritten: %s did not run; skipped\n", name.c_str(), command.c_str());
    return;
  }
  std::printf("# rounds (ms/step): %s handwritten 1 thread%s; 2 threads%s\n", name.c_str(), rounds_text(one).c_str(),
              rounds_text(two).c_str());
  tb::report(name + ".handwritten_2thread_speedup", median_ratio(one, two), "x");
}

// sharded.stencil_speedup_2dev: u*0.5 + roll(u,-1,0)*0.25 + roll(u,1,1)*0.25 on 2048 x 2048
// float32, 100 steps in a fori_loop, rows split over 2 devices (a halo row from each
// neighbour per step) against the same jit on one device. Both loops run 2 steps per
// iteration (temporal blocking: compiler/loop_blocking.h), the partitioned one after one
// exchange of a 2-row halo.
bool stencil(int rounds) {
  const int64_t n = 2048;
  auto fn = [](const ts::Array& u0) {
    return ts::fori_loop(0, 100, [](const ts::Array&, const ts::Array& u) {
      return u * 0.5f + ts::roll(u, -1, 0) * 0.25f + ts::roll(u, 1, 1) * 0.25f;
    }, u0);
  };
  const ts::Device d0 = ts::devices()[0];
  const ts::Array u1 = ts::device_put(ts::Array(values(size_t(n * n), 3), {n, n}), d0);
  const ts::NamedSharding rows(ts::make_mesh({2}, {"x"}), ts::P("x", ts::none));
  const ts::Array u2 = ts::device_put(u1, rows);
  auto one = ts::jit(fn);
  auto two = ts::jit(fn, {.in_shardings = {rows}});
  if (!same_result("stencil", one(u1), two(u2), 1e-5f)) return false;
  const std::string text = two.lower(u2).compile().as_text();
  if (!lowered_as_expected("stencil", text, {"collective_permute"})) return false;
  // Steps of the body per iteration of the per-device loop (one exchange each way per
  // iteration: wide halos, docs/sharding.md).
  const size_t at = text.find("length=");
  if (at != std::string::npos) tb::report("sharded.stencil.steps_per_exchange", 100.0 / std::atof(text.c_str() + at + 7), "steps");
  compare("sharded.stencil", "100 stencil steps on 2048 x 2048 float32, rows split", rounds,
          [&] { one(u1).block_until_ready(); }, [&] { two(u2).block_until_ready(); });
#ifdef TESSEL_STENCIL_REF
  handwritten_scaling("sharded.stencil", tb::shell_quote(TESSEL_STENCIL_REF) + " --n 2048 --steps 100", rounds);
#endif
  return true;
}

// sharded.train_loop_speedup_2dev: 10 SGD steps of a 2-layer tanh MLP (256 -> 512 -> 16) on a
// batch of 4096 in a fori_loop, the batch split over 2 devices and the weights replicated
// (gradients all-reduced inside the loop), against the same jit on one device.
bool train_loop(int rounds) {
  const int64_t batch = 4096, din = 256, hidden = 512, dout = 16;
  using Params = std::tuple<ts::Array, ts::Array, ts::Array, ts::Array>;
  auto loss = [](const Params& p, const ts::Array& x, const ts::Array& y) {
    const auto& [w1, b1, w2, b2] = p;
    const ts::Array out = ts::matmul(ts::tanh(ts::matmul(x, w1) + b1), w2) + b2;
    return ts::mean(ts::square(out - y));
  };
  auto fn = [&](const ts::Array& w1, const ts::Array& b1, const ts::Array& w2, const ts::Array& b2, const ts::Array& x,
                const ts::Array& y) {
    Params p = ts::fori_loop(0, 10, [&](const ts::Array&, const Params& p) {
      auto g = ts::grad([&](const Params& q) { return loss(q, x, y); })(p);
      return Params{std::get<0>(p) - 0.05f * std::get<0>(g), std::get<1>(p) - 0.05f * std::get<1>(g),
                    std::get<2>(p) - 0.05f * std::get<2>(g), std::get<3>(p) - 0.05f * std::get<3>(g)};
    }, Params{w1, b1, w2, b2});
    return std::get<2>(p);
  };
  const ts::Device d0 = ts::devices()[0];
  auto make = [&](int64_t r, int64_t c, uint32_t seed, float scale) {
    return ts::device_put(ts::Array(values(size_t(r * c), seed), {r, c}) * scale, d0);
  };
  const std::vector<ts::Array> a1{make(din, hidden, 4, 0.06f), ts::zeros({hidden}), make(hidden, dout, 5, 0.04f),
                                  ts::zeros({dout}), make(batch, din, 6, 1.0f), make(batch, dout, 7, 0.5f)};
  const ts::Mesh mesh = ts::make_mesh({2}, {"x"});
  const ts::NamedSharding split(mesh, ts::P("x", ts::none)), replicated(mesh, ts::P());
  const std::vector<std::optional<ts::Sharding>> in{replicated, replicated, replicated, replicated, split, split};
  std::vector<ts::Array> a2;
  for (size_t i = 0; i < a1.size(); ++i) a2.push_back(ts::device_put(a1[i], *in[i]));
  auto one = ts::jit(fn);
  auto two = ts::jit(fn, {.in_shardings = in});
  auto call = [](auto& f, const std::vector<ts::Array>& a) { return f(a[0], a[1], a[2], a[3], a[4], a[5]); };
  if (!same_result("train loop", call(one, a1), call(two, a2), 1e-3f)) return false;
  if (!lowered_as_expected("train loop", two.lower(a2[0], a2[1], a2[2], a2[3], a2[4], a2[5]).compile().as_text(),
                           {"all_reduce"}))
    return false;
  compare("sharded.train_loop", "10 SGD steps of a 256-512-16 MLP on a batch of 4096, batch split", rounds,
          [&] { call(one, a1).block_until_ready(); }, [&] { call(two, a2).block_until_ready(); });
  return true;
}

// sharded.shallow_water_speedup_2dev: the demo's model (examples/shallow_water) at 1800 x 900,
// float32, 10 Adams-Bashforth steps per round: its step jitted on one device against the
// same jit with every field's rows split over 2 devices (the partitioner exchanges halo
// rows), as `shallow_water --shard 2` runs it.
bool shallow_water_model(int rounds) {
  namespace sw = shallow_water;
  const sw::ShallowWater model({.nx = 1800, .ny = 900, .dtype = ts::f32});
  const ts::NamedSharding rows(ts::make_mesh({2}, {"y"}), ts::P("y", ts::none));
  auto fn = [model](const sw::State& s, bool first) { return model.step(s, first); };
  auto one = ts::jit(fn, {.static_argnums = {1}});
  auto two = ts::jit(fn, {.static_argnums = {1}, .out_shardings = {rows}});
  const sw::State s1 = one(model.initial_state(), true);  // past the first (forward) step
  sw::State s2 = s1;
  for (ts::Array* f : {&s2.h, &s2.u, &s2.v, &s2.dh, &s2.du, &s2.dv}) *f = ts::device_put(*f, rows);
  auto run = [](auto& step, sw::State s) {
    for (int k = 0; k < 10; ++k) s = step(s, false);
    return s;
  };
  if (!same_result("shallow water", run(one, s1).h, run(two, s2).h, 1e-6f)) return false;
  const std::string text = two.lower(s2, false).compile().as_text();
  if (!lowered_as_expected("shallow water", text, {"collective_permute"})) return false;
  tb::report("sharded.shallow_water.collective_permutes_per_step", count(text, "= collective_permute["), "collectives");
  compare("sharded.shallow_water", "10 steps of the shallow-water model at 1800 x 900 float32, rows split", rounds,
          [&] { run(one, s1).h.block_until_ready(); }, [&] { run(two, s2).h.block_until_ready(); });
#ifdef TESSEL_SHALLOW_WATER_REF
  handwritten_scaling("sharded.shallow_water", tb::shell_quote(TESSEL_SHALLOW_WATER_REF) + " --nx 1800 --ny 900 --steps 100",
                      rounds);
#endif
  return true;
}

// reshard.fraction_of_memcpy. Returns false when the program or the values are wrong.
bool reshard(int rounds) {
  const int64_t n = 8192;  // 8192 x 8192 float32 = 256 MiB
  const size_t bytes = size_t(n * n) * sizeof(float);
  const ts::Mesh mesh = ts::make_mesh({2}, {"x"});
  const ts::NamedSharding rows(mesh, ts::P("x", ts::none)), cols(mesh, ts::P(ts::none, "x"));
  ts::Array x;
  {
    std::vector<float> v(size_t(n * n));
    for (size_t i = 0; i < v.size(); ++i) v[i] = float(i % 1000003);
    x = ts::device_put(ts::Array(v, {n, n}), rows);
  }
  auto f = ts::jit([](const ts::Array& a) { return a; }, {.in_shardings = {rows}, .out_shardings = {cols}});
  const std::string text = f.lower(x).compile().as_text();
  if (count(text, "all_to_all") != 1) {
    std::fprintf(stderr, "bench_sharding: the reshard program should hold one all_to_all:\n%s", text.c_str());
    return false;
  }
  {  // compile, and check a few values of each piece
    const ts::Array y = f(x);
    if (y.sharding() != ts::Sharding(cols)) {
      std::fprintf(stderr, "bench_sharding: the reshard result is laid out as %s\n", y.sharding().to_string().c_str());
      return false;
    }
    for (const ts::Shard& s : y.addressable_shards()) {
      const auto piece = s.data.to_vector<float>();
      const int64_t w = s.index[1].second - s.index[1].first;
      for (int64_t i : {int64_t(0), n / 2 - 1, n / 2, n - 1})
        for (int64_t j : {int64_t(0), w - 1}) {
          const int64_t g = i * n + s.index[1].first + j;
          if (piece[size_t(i * w + j)] != float(g % 1000003)) {
            std::fprintf(stderr, "bench_sharding: reshard value at (%lld, %lld) is %g\n", static_cast<long long>(i),
                         static_cast<long long>(s.index[1].first + j), double(piece[size_t(i * w + j)]));
            return false;
          }
        }
    }
  }
  std::vector<char> src(bytes, 1), dst(bytes, 0);  // warm: written once before timing
  std::memcpy(dst.data(), src.data(), bytes);
  std::vector<double> tr, tm;
  for (int r = 0; r < rounds; ++r) {
    tr.push_back(seconds_of([&] { f(x).block_until_ready(); }));
    tm.push_back(seconds_of([&] {
      std::memcpy(dst.data(), src.data(), bytes);
      asm volatile("" : : "r"(dst.data()) : "memory");  // the copy is used
    }));
  }
  const double best_r = *std::min_element(tr.begin(), tr.end()), best_m = *std::min_element(tm.begin(), tm.end());
  std::printf("# reshard: P('x', None) -> P(None, 'x') of %lld x %lld float32 (256 MiB) over 2 devices, best of %d "
              "(median reshard %.4g s, memcpy %.4g s)\n",
              static_cast<long long>(n), static_cast<long long>(n), rounds, median(tr), median(tm));
  std::printf("# rounds (s): reshard%s; memcpy%s\n", rounds_text(tr).c_str(), rounds_text(tm).c_str());
  tb::report("reshard.time", best_r, "s");
  tb::report("reshard.memcpy_time", best_m, "s");
  tb::report("reshard.gbytes_per_s", double(bytes) / best_r * 1e-9, "GB/s");
  tb::report("reshard.fraction_of_memcpy", median_ratio(tm, tr), "x");
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  // Before tessel reads them (on first use): two devices, one core each.
  setenv("TESSEL_CPU_DEVICES", "2", 1);
  setenv("TESSEL_NUM_THREADS", "1", 1);
  const int64_t rows = argc > 1 ? std::atoll(argv[1]) : 4096;
  if (ts::devices().size() != 2 || ts::cpu::num_threads() != 1) {
    std::fprintf(stderr, "bench_sharding: expected 2 devices of 1 thread, got %zu devices, %d threads\n",
                 ts::devices().size(), ts::cpu::num_threads());
    return 1;
  }
  std::printf("# sharding: %zu virtual devices, %d thread per device\n", ts::devices().size(), ts::cpu::num_threads());
  // BENCH_SHARDING_CASES (a comma-separated list of speedup, stencil, train_loop,
  // shallow_water, reshard) runs only those; BENCH_SHARDING_ROUNDS sets the rounds.
  const char* cases = std::getenv("BENCH_SHARDING_CASES");
  auto wanted = [&](const std::string& name) {
    if (!cases || !*cases) return true;
    const std::string list = "," + std::string(cases) + ",";
    return list.find("," + name + ",") != std::string::npos;
  };
  const char* rounds_env = std::getenv("BENCH_SHARDING_ROUNDS");
  const int rounds = rounds_env ? std::max(1, std::atoi(rounds_env)) : 11;
  bool ok = true;
  if (wanted("speedup")) ok = speedup(rows, rounds_env ? rounds : 15) && ok;
  if (wanted("stencil")) ok = stencil(rounds) && ok;
  if (wanted("train_loop")) ok = train_loop(rounds) && ok;
  if (wanted("shallow_water")) ok = shallow_water_model(rounds) && ok;
  if (wanted("reshard")) ok = reshard(rounds) && ok;
  return ok ? 0 : 1;
}
