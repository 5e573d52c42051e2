#pragma once
// What cpu::parallel_for did since the process started: whether small back-to-back calls
// found a second thread (benchmarks and tests; see parallel.h).
#include <cstdint>

namespace tessel::cpu {

/// Calls of parallel_for: `split` ran in more than one chunk through the helpers' slots,
/// `shared` of those had a chunk run by a thread other than the caller's.
struct ParallelForCounts {
  int64_t split = 0, shared = 0;
};

/// The counts so far (relaxed reads: other threads' calls may be under way).
ParallelForCounts parallel_for_counts();

}  // namespace tessel::cpu
