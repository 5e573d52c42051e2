// Unfused kernels split over the intra-op arena (docs/performance.md): each runs eagerly on
// 16M-element float32 operands (4096 x 4096), once with the arena's threads and once in a
// child process with TESSEL_NUM_THREADS=1, in the same run (rounds alternate between the two).
//
// Lines: unfused.<op>_ms (all threads) and unfused.<op>_speedup (one thread's time over all
// threads'; about the thread count when the kernel splits well and memory bandwidth allows)
// for a column sum (reduction over the leading axis), a full sum, a transpose, a cumsum along
// one long axis and along the leading axis, a gather of rows, a scatter-add of rows and a
// float32 -> int32 conversion.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "backend/cpu/parallel.h"
#include "bench_util.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace tb = tessel::bench;

namespace {

constexpr int64_t kSide = 4096;

std::vector<std::pair<std::string, std::function<ts::Array()>>> cases() {
  static const ts::Array m = ts::random::uniform(ts::random::key(0), {kSide, kSide});
  static const ts::Array v = ts::reshape(m, {kSide * kSide});
  static const ts::Array rows = ts::astype(
      ts::floor(ts::random::uniform(ts::random::key(1), {kSide}) * float(kSide)), ts::i32);
  return {{"colsum", [] { return ts::sum(m, {0}); }},
          {"sum_all", [] { return ts::sum(v); }},
          {"transpose", [] { return ts::transpose(m); }},
          {"cumsum_long", [] { return ts::cumsum(v, 0); }},
          {"cumsum_leading", [] { return ts::cumsum(m, 0); }},
          {"gather_rows", [] { return ts::take(m, rows, 0); }},
          {"scatter_add_rows", [] { return m.at({rows}).add(m); }},
          {"convert", [] { return ts::astype(m, ts::i32); }}};
}

/// This program with one intra-op thread, printing `name seconds` lines.
std::string child_command(const char* self) { return "TESSEL_NUM_THREADS=1 " + tb::shell_quote(self) + " --times"; }

}  // namespace

int main(int argc, char** argv) {
  const bool child = argc > 1 && std::strcmp(argv[1], "--times") == 0;
  const auto all = cases();
  for (auto& [name, fn] : all) fn().block_until_ready();  // warm: allocation, first touch
  if (child) {  // one round: `name seconds` lines
    for (auto& [name, fn] : all)
      std::printf("%s %.9g\n", name.c_str(), tb::seconds_per_call([&] { fn().block_until_ready(); }, 5, 1));
    return 0;
  }
  tb::report("unfused.threads", ts::cpu::num_threads(), "threads");
  // Rounds alternate between the one-thread child and this process, and the best round of
  // each counts, so a burst of load from other processes hits both alike.
  std::map<std::string, double> serial, times;
  auto keep_min = [](std::map<std::string, double>& m, const std::string& k, double v) {
    m[k] = m.count(k) ? std::min(m[k], v) : v;
  };
  for (int round = 0; round < 3; ++round) {
    for (const auto& [name, t] : tb::run_baseline(child_command(argv[0]))) keep_min(serial, name, t);
    for (auto& [name, fn] : all) keep_min(times, name, tb::seconds_per_call([&] { fn().block_until_ready(); }, 5, 1));
  }
  for (const auto& [name, fn] : all) {
    const double t = times[name];
    tb::report("unfused." + name + "_ms", t * 1e3, "ms");
    if (auto it = serial.find(name); it != serial.end()) tb::report("unfused." + name + "_speedup", it->second / t, "x");
  }
  return 0;
}
