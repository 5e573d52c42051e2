// ts::clear_caches and ts::cache_stats: every cache empties, the memory cached executables
// hold goes back, and the calls after a clear trace and compile again to the same values.
#include <gtest/gtest.h>
#include <malloc.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <complex>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/buffer.h"
#include "tessel/colocated.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace co = tessel::colocated;

namespace {

ts::CacheStats stats_named(const std::string& name) {
  for (const auto& s : ts::cache_stats())
    if (s.name == name) return s;
  ADD_FAILURE() << "no cache named " << name;
  return {};
}

// Resident memory of this process, from /proc/self/statm.
size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  size_t total = 0, resident = 0;
  statm >> total >> resident;
  return resident * size_t(sysconf(_SC_PAGESIZE));
}

// One computation through each cache: eager ops, a jitted function, a control-flow body run
// eagerly, an FFT, an op on sharded arrays and a colocated call. The functions live as long
// as this object, and with them their caches.
struct Everything {
  std::function<ts::Array(const ts::Array&, const ts::Array&)> f =
      ts::jit([](const ts::Array& a, const ts::Array& b) { return ts::exp(a) * b - a; });
  std::function<ts::Array(const ts::Array&)> twice = co::colocated([](const ts::Array& v) { return v * 2.0f; });

  std::vector<std::vector<float>> run() const {
    ts::Array x = ts::arange(8, ts::f32) * 0.25f;
    std::vector<std::vector<float>> out;
    out.push_back((ts::sin(x) * 2.0f + x).to_vector<float>());
    out.push_back(f(x, x + 1.0f).to_vector<float>());
    ts::Array p(1);
    out.push_back(
        ts::cond(p, [](const ts::Array& a) { return a * 3.0f; }, [](const ts::Array& a) { return a - 3.0f; }, x)
            .to_vector<float>());
    out.push_back(ts::abs(ts::fft::fft(x.astype(ts::c64))).to_vector<float>());
    ts::Mesh mesh = ts::make_mesh({2}, {"x"});
    ts::Array sharded = ts::device_put(x, ts::NamedSharding(mesh, ts::P("x")));
    out.push_back((sharded * 5.0f).to_vector<float>());
    out.push_back(twice(x).to_vector<float>());
    return out;
  }
};

const char* const kCaches[] = {"eager.ops",       "jit.traces",       "jit.call_executables",
                               "fft.plans",       "spmd.simplified",  "spmd.partitioned",
                               "spmd.primitive_programs", "colocated.out_specs"};

}  // namespace

TEST(ClearCaches, EmptiesEveryCacheAndLaterCallsGiveTheSameValues) {
  if (ts::device_count() < 2) GTEST_SKIP() << "needs TESSEL_CPU_DEVICES >= 2";
  const Everything everything;
  const auto first = everything.run();
  for (const char* name : kCaches) EXPECT_GT(stats_named(name).size, 0u) << name << " was not used";
  const ts::CacheStats traces_before = stats_named("jit.traces");

  ts::clear_caches();
  for (const auto& s : ts::cache_stats()) EXPECT_EQ(s.size, 0u) << s.name << " kept entries";

  const auto again = everything.run();
  EXPECT_EQ(again, first);
  for (const char* name : kCaches) EXPECT_GT(stats_named(name).size, 0u) << name << " was not filled again";
  EXPECT_GT(stats_named("jit.traces").misses, traces_before.misses);
}

TEST(ClearCaches, AJittedFunctionTracesAgainAndGivesTheSameResult) {
  int traces = 0;
  auto f = ts::jit([&traces](const ts::Array& x, int n) {
    ++traces;
    ts::Array y = x;
    for (int i = 0; i < n; ++i) y = ts::tanh(y) + x;
    return y;
  });
  ts::Array x = ts::linspace(-2.0, 2.0, 16, true, ts::f64);
  const auto before = f(x, 3).to_vector<double>();
  f(x, 3);
  EXPECT_EQ(traces, 1);
  EXPECT_EQ(f.cache_size(), 1u);
  ts::clear_caches();
  EXPECT_EQ(f.cache_size(), 0u);
  EXPECT_EQ(f(x, 3).to_vector<double>(), before);
  EXPECT_EQ(traces, 2);
  EXPECT_EQ(f.cache_size(), 1u);
}

TEST(ClearCaches, ReleasesTheMemoryCachedExecutablesHold) {
  // Each function closes over a 4 MiB constant made while tracing: its executable holds it
  // until the cache lets go. The functions themselves stay alive throughout.
  constexpr int kFunctions = 24;
  constexpr size_t kElements = size_t(1) << 20;
  const size_t held_bytes = kFunctions * kElements * sizeof(float);
  std::vector<std::function<ts::Array(const ts::Array&)>> fns;
  for (int i = 0; i < kFunctions; ++i)
    fns.push_back(ts::jit([i](const ts::Array& x) { return x * ts::Array(std::vector<float>(kElements, float(i))); }));
  ts::Array x = ts::ones({int64_t(kElements)}, ts::f32);
  x.block_until_ready();
  ts::clear_caches();
  tessel::detail::allocator_trim();
  malloc_trim(0);
  const size_t rss_empty = resident_bytes();

  for (int i = 0; i < kFunctions; ++i) EXPECT_EQ(fns[size_t(i)](x).to_vector<float>()[7], float(i));
  const ts::CacheStats full = stats_named("jit.traces");
  EXPECT_GE(full.size, size_t(kFunctions));
  tessel::detail::allocator_trim();
  malloc_trim(0);
  const size_t rss_full = resident_bytes();
  EXPECT_GE(rss_full, rss_empty + held_bytes / 2) << "the constants were not held to begin with";

  const auto alloc_before = tessel::detail::allocator_stats();
  ts::clear_caches();
  const auto alloc_after = tessel::detail::allocator_stats();
  EXPECT_EQ(stats_named("jit.traces").size, 0u);
  if (alloc_before.limit >= 4 * held_bytes) {  // the freed constants went back to the allocator
    EXPECT_GE(alloc_after.cached_bytes, alloc_before.cached_bytes + held_bytes / 2);
  }
  tessel::detail::allocator_trim();
  malloc_trim(0);
  const size_t rss_cleared = resident_bytes();
  EXPECT_LE(rss_cleared + held_bytes / 2, rss_full)
      << "clear_caches released " << (double(rss_full) - double(rss_cleared)) / 1048576.0 << " MiB of "
      << double(held_bytes) / 1048576.0;

  for (int i = 0; i < kFunctions; i += 5) EXPECT_EQ(fns[size_t(i)](x).to_vector<float>()[3], float(i));
}

TEST(ClearCaches, WorkDispatchedMeanwhileStillComputesRightValues) {
  std::atomic<bool> done{false};
  std::thread clearer([&] {
    while (!done) ts::clear_caches();
  });
  auto f = ts::jit([](const ts::Array& a) { return a * a + 1.0f; });
  bool ok = true;
  for (int i = 0; i < 300 && ok; ++i) {
    const float v = float(i % 5);
    ts::Array x = ts::full({int64_t(1 + i % 7)}, ts::Array(v));
    ok &= std::abs((ts::sin(x) + x).to_vector<float>()[0] - (std::sin(v) + v)) < 1e-5f;
    ok &= f(x).to_vector<float>()[0] == v * v + 1.0f;
  }
  done = true;
  clearer.join();
  EXPECT_TRUE(ok);
}
