// oneDNN's float32 matrix product (backend/cpu/dnnl.h), run on the calling thread.
#include <omp.h>

#include <oneapi/dnnl/dnnl.h>

#include "backend/cpu/dnnl.h"

namespace tessel::cpu::dnnl {

bool sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
           const float* b, int64_t ldb, float* c, int64_t ldc) {
  // Debian's oneDNN runs on OpenMP: its team size is this thread's OpenMP setting, which is
  // per thread outside parallel regions, so one thread here leaves other callers (the
  // convolutions, other arena workers) as they were.
  const int saved = omp_get_max_threads();
  if (saved != 1) omp_set_num_threads(1);
  const dnnl_status_t st =
      dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
  if (saved != 1) omp_set_num_threads(saved);
  return st == dnnl_success;
}

}  // namespace tessel::cpu::dnnl
