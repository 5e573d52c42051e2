#pragma once
// Intra-op parallelism: one oneTBB arena shared by every virtual device, so N devices that
// each split a kernel share the machine's cores instead of starting N thread teams.
#include <cstdint>
#include <functional>

namespace tessel::cpu {

/// Threads of the shared arena: TESSEL_NUM_THREADS, default the cores this process may use.
int num_threads();

/// Calls fn(begin, end) on disjoint chunks covering [0, n), in parallel on the shared arena
/// when n > grain; inline when n <= grain or the arena has one thread. With
/// TESSEL_PARALLEL_SPIN_US > 0 and n >= 2 * grain, chunks go to helpers that stay awake that
/// long after their last chunk (back-to-back small calls then wait for no sleeping thread),
/// at least `grain` items each, a few per thread; otherwise oneTBB splits by `grain`. fn
/// must not throw across threads: an exception is rethrown on the caller after the chunks end.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace tessel::cpu
