#include "backend/cpu/parallel.h"

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>

#include "backend/cpu/blas.h"
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

}  // namespace

int num_threads() {
  static const int n = int(config::get_int(config::kNumThreads));  // 1 to 4096, default: the cores
  return n;
}

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  if (n <= grain || num_threads() == 1) {
    fn(0, n);
    return;
  }
  // Device streams are plain threads; each joins the one arena, whose workers steal chunks.
  arena().execute([&] {
    oneapi::tbb::parallel_for(oneapi::tbb::blocked_range<int64_t>(0, n, size_t(grain)),
                              [&](const oneapi::tbb::blocked_range<int64_t>& r) { fn(r.begin(), r.end()); });
  });
}

}  // namespace tessel::cpu
