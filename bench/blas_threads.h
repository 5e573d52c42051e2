#pragma once
// Baselines that call OpenBLAS (or LAPACK through it) as a C++ programmer does, with
// OpenBLAS's own threads: tessel keeps OpenBLAS single-threaded (src/backend/cpu/blas.h),
// so a baseline round sets the count and restores tessel's afterwards.
#include <cblas.h>

namespace tessel::bench {

/// Runs `f` with OpenBLAS using `threads` threads, then restores the previous count.
template <class F> void with_blas_threads(int threads, F&& f) {
  const int saved = openblas_get_num_threads();
  openblas_set_num_threads(threads);
  f();
  openblas_set_num_threads(saved);
}

}  // namespace tessel::bench
