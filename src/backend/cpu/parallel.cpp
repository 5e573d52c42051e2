#include "backend/cpu/parallel.h"

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <thread>

#include "backend/cpu/blas.h"
#include "backend/cpu/parallel_counts.h"
#include "core/config.h"
#include "core/lifetime.h"

namespace tessel::cpu {
namespace {

oneapi::tbb::task_arena& arena() {
  // Owned by the runtime: kernels still queued at exit use it (core/lifetime.h).
  static oneapi::tbb::task_arena& a = []() -> oneapi::tbb::task_arena& {
    // OpenBLAS's idle threads would poll on the cores the arena's workers need (blas.cpp).
    use_one_blas_thread();
    return detail::make_global<oneapi::tbb::task_arena>(num_threads());
  }();
  return a;
}

// Helpers. A oneTBB worker that finds no work leaves the arena and sleeps, and a task
// spawned by the next parallel_for does not reliably wake it: oneTBB promises parallelism
// only where it is free, and its wake-up on spawning is deliberately sloppy. Measured on
// this 2-core VM, back-to-back parallel_for calls of 4 chunks of 50 us each from a device
// stream's thread (a small time step's product blocks) ran every chunk on the calling thread
// in 95-96% of the calls, the worker blocked in one futex wait throughout
// (docs/performance.md, "Threads for small steps"). So a parallel_for publishes its chunks in
// a fixed slot and enqueues helper tasks on the arena: an enqueued task is mandatory work,
// which oneTBB wakes a worker for. A helper claims published chunks and keeps looking for
// more for TESSEL_PARALLEL_SPIN_US after its last one before it returns its worker to
// oneTBB, as OpenMP's barriers spin before they sleep; the next call of a step then finds it
// awake. The caller claims chunks too and waits only for claimed ones, so no chunk waits for
// a helper to arrive.

constexpr int kSlots = 8;            // parallel_for calls served at once; more use oneTBB directly
constexpr int64_t kChunksPerThread = 4;  // for balance when a thread is late or preempted

/// One parallel_for being served. Slots are never freed, so a helper may look at any slot
/// at any time; a caller reuses its slot only once no helper looks at it (`visitors`).
struct Slot {
  std::atomic<bool> owned{false};   // a caller holds the slot
  std::atomic<bool> open{false};    // chunks may be claimed
  std::atomic<int> visitors{0};     // helpers looking at the slot
  const std::function<void(int64_t, int64_t)>* fn = nullptr;
  int64_t n = 0;
  std::atomic<int64_t> chunks{0};  // (read by helpers checking for work while a caller sets it)
  std::atomic<int64_t> next{0};  // the next chunk to claim
  std::atomic<int64_t> done{0};  // chunks finished
  std::mutex error_mu;
  std::exception_ptr error;  // the first exception of a chunk

  /// Claims and runs chunks until none is left; returns how many it ran.
  int64_t run_chunks() {
    const int64_t c = chunks.load(std::memory_order_relaxed);
    int64_t ran = 0;
    for (int64_t k; (k = next.fetch_add(1, std::memory_order_relaxed)) < c; ++ran) {
      try {
        (*fn)(k * n / c, (k + 1) * n / c);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (!error) error = std::current_exception();
      }
      done.fetch_add(1, std::memory_order_release);
    }
    return ran;
  }
};

/// What parallel_for_counts() reports.
struct Counts {
  std::atomic<int64_t> split{0}, shared{0};
};
Counts& counts() {
  static Counts& c = *new Counts;  // never destroyed: helpers may outlive static destruction
  return c;
}

Slot* slots() {
  static Slot* s = new Slot[kSlots];  // never destroyed: helpers may outlive static destruction
  return s;
}

std::atomic<int>& helpers() {  // helper tasks enqueued or running
  static std::atomic<int>& h = *new std::atomic<int>(0);
  return h;
}

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/// Runs the open slots' chunks; returns whether it ran any.
bool serve_slots() {
  bool worked = false;
  Slot* s = slots();
  for (int i = 0; i < kSlots; ++i) {
    Slot& slot = s[i];
    if (!slot.open.load(std::memory_order_acquire)) continue;
    slot.visitors.fetch_add(1, std::memory_order_seq_cst);
    if (slot.open.load(std::memory_order_seq_cst) &&
        slot.next.load(std::memory_order_relaxed) < slot.chunks.load(std::memory_order_relaxed)) {
      slot.run_chunks();
      worked = true;
    }
    slot.visitors.fetch_sub(1, std::memory_order_release);
  }
  return worked;
}

std::chrono::microseconds helper_spin() {
  static const std::chrono::microseconds us{config::get_int(config::kParallelSpinUs)};
  return us;
}

/// The body of a helper task: serves slots until it found no chunk for helper_spin().
void helper() {
  using clock = std::chrono::steady_clock;
  for (;;) {
    auto last = clock::now();
    for (int idle = 0;; ++idle) {
      if (serve_slots()) {
        last = clock::now();
        idle = 0;
      } else if (idle % 64 == 63 && clock::now() - last > helper_spin()) {
        break;
      }
      cpu_relax();
    }
    helpers().fetch_sub(1, std::memory_order_seq_cst);
    // A caller that saw this helper counted may have opened a slot since: serve it.
    bool pending = false;
    Slot* s = slots();
    for (int i = 0; i < kSlots; ++i)
      pending |= s[i].open.load(std::memory_order_seq_cst) &&
                 s[i].next.load(std::memory_order_relaxed) < s[i].chunks.load(std::memory_order_relaxed);
    if (!pending) return;
    helpers().fetch_add(1, std::memory_order_seq_cst);
  }
}

/// Enqueues helper tasks until `want` are enqueued or running.
void call_helpers(int want) {
  for (int h = helpers().load(std::memory_order_seq_cst); h < want;)
    if (helpers().compare_exchange_weak(h, h + 1, std::memory_order_seq_cst)) {
      arena().enqueue(helper);
      ++h;
    }
}

/// Runs fn over [0, n) in `chunks` chunks through a slot; false (nothing run) when none is free.
bool run_in_slot(int64_t n, int64_t chunks, const std::function<void(int64_t, int64_t)>& fn) {
  const int threads = num_threads();
  Slot* s = slots();
  Slot* slot = nullptr;
  for (int i = 0; i < kSlots && !slot; ++i) {
    bool expected = false;
    if (s[i].owned.compare_exchange_strong(expected, true, std::memory_order_acquire)) slot = &s[i];
  }
  if (!slot) return false;
  slot->fn = &fn;
  slot->n = n;
  slot->chunks.store(chunks, std::memory_order_relaxed);
  slot->next.store(0, std::memory_order_relaxed);
  slot->done.store(0, std::memory_order_relaxed);
  slot->error = nullptr;
  slot->open.store(true, std::memory_order_seq_cst);
  // Enough helpers for the other threads (a spinning one takes the chunks at once).
  call_helpers(int(std::min<int64_t>(chunks - 1, threads - 1)));
  const int64_t own = slot->run_chunks();
  slot->open.store(false, std::memory_order_seq_cst);
  // Wait for the chunks helpers claimed, then for helpers still looking at the slot.
  for (int k = 0; slot->done.load(std::memory_order_acquire) < chunks; ++k) {
    if (k < 4096) cpu_relax();
    else std::this_thread::yield();  // a preempted helper needs a core
  }
  while (slot->visitors.load(std::memory_order_seq_cst) > 0) cpu_relax();
  std::exception_ptr error = std::move(slot->error);
  slot->owned.store(false, std::memory_order_release);
  counts().split.fetch_add(1, std::memory_order_relaxed);
  if (own < chunks) counts().shared.fetch_add(1, std::memory_order_relaxed);
  if (error) std::rethrow_exception(error);
  return true;
}

}  // namespace

int num_threads() {
  static const int n = int(config::get_int(config::kNumThreads));  // 1 to 4096, default: the cores
  return n;
}

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  // Chunks of at least `grain` items, at most a few per thread.
  const int threads = num_threads();
  const int64_t chunks = threads == 1 ? 1 : std::min<int64_t>(n / grain, kChunksPerThread * threads);
  if (chunks < 2) {
    fn(0, n);
    return;
  }
  if (run_in_slot(n, chunks, fn)) return;
  // More callers at once than slots: oneTBB splits the range (device streams are plain
  // threads; each joins the one arena, whose workers steal chunks).
  arena().execute([&] {
    oneapi::tbb::parallel_for(oneapi::tbb::blocked_range<int64_t>(0, n, size_t(grain)),
                              [&](const oneapi::tbb::blocked_range<int64_t>& r) { fn(r.begin(), r.end()); });
  });
}

ParallelForCounts parallel_for_counts() {
  return {counts().split.load(std::memory_order_relaxed), counts().shared.load(std::memory_order_relaxed)};
}

}  // namespace tessel::cpu
