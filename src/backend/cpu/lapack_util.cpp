#include "backend/cpu/lapack_util.h"

#include <cblas.h>

#include <climits>
#include <mutex>
#include <string>

#include "backend/cpu/blas.h"
#include "backend/cpu/parallel.h"
#include "tessel/error.h"

namespace tessel::cpu::lapack {

lapack_int to_int(int64_t v, const char* op) {
  if (v > INT_MAX)
    throw ValueError(std::string(op) + ": a dimension of " + std::to_string(v) +
                     " exceeds LAPACK's 32-bit integers; factor smaller matrices");
  return lapack_int(v);
}

void with_all_blas_threads(const std::function<void()>& fn) {
  static std::mutex turn;
  const std::lock_guard<std::mutex> lock(turn);
  openblas_set_num_threads(num_threads());
  try {
    fn();
  } catch (...) {
    openblas_set_num_threads(1);
    throw;
  }
  openblas_set_num_threads(1);
}

void for_each_matrix(int64_t batch, double work, const std::function<void(int64_t, int64_t)>& fn) {
  use_one_blas_thread();
  if (work >= kLargeWork && batch < num_threads() && num_threads() > 1) {
    with_all_blas_threads([&] { fn(0, batch); });
    return;
  }
  const int64_t grain = std::max<int64_t>(1, int64_t(kTaskWork / (work + kCallWork)));
  parallel_for(batch, grain, fn);
}

void unsupported(const char* op, DType d) {
  throw DTypeError(std::string(op) + ": LAPACK factors float32, float64, complex64 and complex128 matrices, got " +
                   dtype_name(d) + " (internal error: abstract evaluation should have rejected it)");
}

}  // namespace tessel::cpu::lapack
