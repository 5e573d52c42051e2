#pragma once
// Intra-op parallelism: one oneTBB arena shared by every virtual device, so N devices that
// each split a kernel share the machine's cores instead of starting N thread teams.
#include <cstdint>
#include <functional>

namespace tessel::cpu {

/// Threads of the shared arena: TESSEL_NUM_THREADS, default the cores this process may use.
int num_threads();

/// Calls fn(begin, end) on disjoint chunks covering [0, n), in parallel on the shared arena
/// when n >= 2 * grain (chunks hold at least `grain` items, at most a few chunks per
/// thread). Runs inline when n < 2 * grain or the arena has one thread. The chunks go to
/// helpers that stay awake for a short while after their last chunk, so back-to-back
/// small calls (a time step's kernels) do not wait for a sleeping thread to wake. fn must
/// not throw across threads: exceptions are rethrown on the caller after all chunks finish.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace tessel::cpu
