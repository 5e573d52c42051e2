#include "backend/cpu/blas.h"

#include <cblas.h>

#include <climits>
#include <complex>
#include <cstring>
#include <string>

#include "tessel/error.h"

namespace tessel::cpu {
namespace {

blasint to_blas(int64_t v, const char* what) {
  if (v > INT_MAX)
    throw ValueError(std::string("dot_general: ") + what + " = " + std::to_string(v) +
                     " exceeds the 32-bit BLAS limit; split the product into smaller pieces");
  return blasint(v);
}

}  // namespace

bool gemm_supported(DType d) {
  return d == DType::float32 || d == DType::float64 || d == DType::complex64 || d == DType::complex128;
}

void gemm(DType d, int64_t m, int64_t n, int64_t k, GemmOperand a, GemmOperand b, void* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // BLAS leaves C untouched in some versions when K == 0
    for (int64_t i = 0; i < m; ++i)
      std::memset(static_cast<char*>(c) + size_t(i * ldc) * itemsize(d), 0, size_t(n) * itemsize(d));
    return;
  }
  const blasint M = to_blas(m, "M"), N = to_blas(n, "N"), K = to_blas(k, "K");
  // Leading dimensions must be at least 1 even for degenerate panels.
  const blasint lda = to_blas(a.ld > 0 ? a.ld : 1, "lda"), ldb = to_blas(b.ld > 0 ? b.ld : 1, "ldb");
  const blasint ldC = to_blas(ldc > 0 ? ldc : 1, "ldc");
  const CBLAS_TRANSPOSE ta = a.trans ? CblasTrans : CblasNoTrans, tb = b.trans ? CblasTrans : CblasNoTrans;
  switch (d) {
    case DType::float32:
      cblas_sgemm(CblasRowMajor, ta, tb, M, N, K, 1.0f, static_cast<const float*>(a.data), lda,
                  static_cast<const float*>(b.data), ldb, 0.0f, static_cast<float*>(c), ldC);
      return;
    case DType::float64:
      cblas_dgemm(CblasRowMajor, ta, tb, M, N, K, 1.0, static_cast<const double*>(a.data), lda,
                  static_cast<const double*>(b.data), ldb, 0.0, static_cast<double*>(c), ldC);
      return;
    case DType::complex64: {
      const std::complex<float> one(1), zero(0);
      cblas_cgemm(CblasRowMajor, ta, tb, M, N, K, &one, a.data, lda, b.data, ldb, &zero, c, ldC);
      return;
    }
    case DType::complex128: {
      const std::complex<double> one(1), zero(0);
      cblas_zgemm(CblasRowMajor, ta, tb, M, N, K, &one, a.data, lda, b.data, ldb, &zero, c, ldC);
      return;
    }
    default:
      throw Error(std::string("gemm: dtype ") + dtype_name(d) + " is not a BLAS dtype (internal error)");
  }
}

}  // namespace tessel::cpu
