#pragma once
// Intra-op parallelism: one oneTBB arena shared by every virtual device, so N devices that
// each split a kernel share the machine's cores instead of starting N thread teams.
#include <cstdint>
#include <functional>

namespace tessel::cpu {

/// Threads of the shared arena: TESSEL_NUM_THREADS, default the cores this process may use.
int num_threads();

/// Calls fn(begin, end) on disjoint chunks covering [0, n), in parallel on the shared arena
/// when n > grain (chunks hold at least `grain` items). Runs inline when n <= grain or the
/// arena has one thread. fn must not throw across threads: exceptions are rethrown on the
/// caller after all chunks finish.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace tessel::cpu
