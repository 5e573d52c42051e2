#pragma once
// Intra-op parallelism: one oneTBB arena shared by every virtual device, so N devices that
// each split a kernel share the machine's cores instead of starting N thread teams.
#include <cstdint>
#include <functional>

namespace tessel::cpu {

/// Threads of the shared arena: TESSEL_NUM_THREADS, default the cores this process may use.
int num_threads();

/// Calls fn(begin, end) on disjoint chunks covering [0, n), in parallel on the shared arena
/// when n >= 2 * grain; inline when n < 2 * grain or the arena has one thread. Chunks go to
/// helpers that stay awake for TESSEL_PARALLEL_SPIN_US after their last chunk (back-to-back
/// small calls then wait for no sleeping thread); they hold at least `grain` items, a few
/// per thread (with TESSEL_PARALLEL_SPIN_US=0, oneTBB splits and may make smaller ones). fn
/// must not throw across threads: an exception is rethrown on the caller after the chunks end.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace tessel::cpu
