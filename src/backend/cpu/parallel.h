#pragma once
// Intra-op parallelism: one oneTBB arena shared by every virtual device, so N devices that
// each split a kernel share the machine's cores instead of starting N thread teams.
#include <cstdint>
#include <functional>

namespace tessel::cpu {

/// Threads of the shared arena: TESSEL_NUM_THREADS, default the cores this process may use.
int num_threads();

/// Calls fn(begin, end) on disjoint chunks covering [0, n): in parallel when n >= 2 * grain
/// and the arena has 2 threads or more, in chunks of at least `grain` items, a few per thread,
/// published to helpers that stay awake TESSEL_PARALLEL_SPIN_US after their last chunk (so
/// back-to-back small calls need no sleeping thread); inline otherwise. The caller runs chunks
/// too and waits only for those a helper started. Beyond 8 concurrent callers oneTBB splits.
/// fn must not throw across threads: an exception is rethrown on the caller after the chunks.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace tessel::cpu
