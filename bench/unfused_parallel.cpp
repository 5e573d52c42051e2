// Unfused kernels split over the intra-op arena (docs/performance.md): each runs eagerly on
// 16M-element float32 operands (4096 x 4096), once with the arena's threads and once in a
// child process with TESSEL_NUM_THREADS=1, in the same run.
//
// Lines: unfused.<op>_ms (all threads) and unfused.<op>_speedup (one thread's time over all
// threads'; about the thread count when the kernel splits well and memory bandwidth allows)
// for a column sum (reduction over the leading axis), a full sum, a transpose, a cumsum along
// one long axis and along the leading axis, a gather of rows, a scatter-add of rows and a
// float32 -> int32 conversion.
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

}  // namespace

int main(int argc, char** argv) {
  const bool child = argc > 1 && std::strcmp(argv[1], "--times") == 0;
  std::map<std::string, double> serial;
  if (!child) {
    tb::report("unfused.threads", ts::cpu::num_threads(), "threads");
    serial = tb::run_baseline("TESSEL_NUM_THREADS=1 " + tb::shell_quote(argv[0]) + " --times");
  }
  for (auto& [name, fn] : cases()) {
    fn().block_until_ready();  // warm: allocation, first-touch
    const double t = tb::seconds_per_call([&] { fn().block_until_ready(); }, 5);
    if (child) {
      std::printf("%s %.9g\n", name.c_str(), t);
      continue;
    }
    tb::report("unfused." + name + "_ms", t * 1e3, "ms");
    if (auto it = serial.find(name); it != serial.end()) tb::report("unfused." + name + "_speedup", it->second / t, "x");
  }
  return 0;
}
