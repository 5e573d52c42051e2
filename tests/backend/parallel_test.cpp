// cpu::parallel_for: every index exactly once, chunks of at least `grain`, exceptions on the
// caller, concurrent and nested callers (more callers than the helpers' slots), and
// back-to-back small calls served by more than one thread.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "backend/cpu/parallel.h"
#include "backend/cpu/parallel_counts.h"

namespace cpu = tessel::cpu;

namespace {

/// Runs parallel_for(n, grain) and checks that its chunks cover [0, n) once each and hold at
/// least `grain` items (one chunk when n < 2 * grain).
void expect_covered_once(int64_t n, int64_t grain) {
  std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
  std::mutex mu;
  std::vector<std::pair<int64_t, int64_t>> chunks;
  cpu::parallel_for(n, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) hits[size_t(i)].fetch_add(1);
    std::lock_guard<std::mutex> lock(mu);
    chunks.emplace_back(lo, hi);
  });
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[size_t(i)].load(), 1) << "index " << i << " of n=" << n << " grain=" << grain;
  if (n > 0 && n < 2 * grain) {
    EXPECT_EQ(chunks.size(), 1u) << "n=" << n << " grain=" << grain;
  }
  if (chunks.size() > 1) {
    for (const auto& [lo, hi] : chunks) EXPECT_GE(hi - lo, grain) << "n=" << n << " grain=" << grain;
  }
}

}  // namespace

TEST(ParallelFor, CoversEveryIndexOnceInChunksOfAtLeastGrain) {
  for (int64_t n : {0, 1, 2, 3, 7, 64, 1000, 100003})
    for (int64_t grain : {1, 2, 3, 16, 1000, 200000}) expect_covered_once(n, grain);
}

TEST(ParallelFor, ExceptionReachesTheCallerAfterEveryChunkRan) {
  std::atomic<int64_t> covered{0};
  EXPECT_THROW(cpu::parallel_for(64, 1,
                                 [&](int64_t lo, int64_t hi) {
                                   covered.fetch_add(hi - lo);
                                   throw std::runtime_error("chunk failed");
                                 }),
               std::runtime_error);
  EXPECT_EQ(covered.load(), 64);
  // The slot it used serves the next call.
  expect_covered_once(1000, 10);
}

TEST(ParallelFor, ConcurrentCallersBeyondTheSlotsAndNestedCallsAllComplete) {
  // 12 threads at once (more than the 8 slots of the helpers; the rest use oneTBB directly),
  // each chunk calling parallel_for again.
  std::vector<std::thread> callers;
  std::atomic<int> failures{0};
  for (int t = 0; t < 12; ++t)
    callers.emplace_back([&, t] {
      for (int round = 0; round < 50; ++round) {
        const int64_t n = 16 + t, inner = 100 + round;
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n * inner));
        cpu::parallel_for(n, 1, [&](int64_t lo, int64_t hi) {
          for (int64_t i = lo; i < hi; ++i)
            cpu::parallel_for(inner, 7, [&](int64_t a, int64_t b) {
              for (int64_t j = a; j < b; ++j) hits[size_t(i * inner + j)].fetch_add(1);
            });
        });
        for (const auto& h : hits) failures += h.load() != 1;
      }
    });
  for (std::thread& c : callers) c.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(ParallelFor, AChunkRunsOnAnotherThreadWhileTheCallerRunsOne) {
  if (cpu::num_threads() < 2) GTEST_SKIP() << "one thread (TESSEL_NUM_THREADS=1)";
  // Back-to-back calls of two chunks, as a small time step's kernels: in each, the chunk
  // that starts first waits (up to 10 s, far beyond any wake-up) for the other to start
  // on another thread, which happens only if a helper takes it while the first runs (with
  // oneTBB's parallel_for, which this replaced, the worker often slept through such calls).
  const cpu::ParallelForCounts before = cpu::parallel_for_counts();
  for (int call = 0; call < 20; ++call) {
    std::atomic<int> started{0};
    std::atomic<bool> met{false};
    std::thread::id ids[2];
    cpu::parallel_for(2, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t k = lo; k < hi; ++k) {
        ids[k] = std::this_thread::get_id();
        if (started.fetch_add(1) == 0) {
          const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
          while (started.load() < 2 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
          met = started.load() == 2;
        }
      }
    });
    EXPECT_TRUE(met.load()) << "call " << call << ": the second chunk did not start while the first ran";
    EXPECT_NE(ids[0], ids[1]) << "call " << call;
  }
  // Every call counted as split and shared (other threads' calls may add to both).
  const cpu::ParallelForCounts after = cpu::parallel_for_counts();
  EXPECT_GE(after.split - before.split, 20);
  EXPECT_GE(after.shared - before.shared, 20);
}

TEST(ParallelFor, CallsBelowTwoGrainsRunInlineOnTheCaller) {
  const auto caller = std::this_thread::get_id();
  int calls = 0;
  cpu::parallel_for(199, 100, [&](int64_t lo, int64_t hi) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    EXPECT_EQ(lo, 0);
    EXPECT_EQ(hi, 199);
    ++calls;
  });
  EXPECT_EQ(calls, 1);
}
