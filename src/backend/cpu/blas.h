#pragma once
// OpenBLAS binding: general matrix products on dense row-major panels. The dot_general
// kernel packs its operands into (M, K) and (K, N) matrices (or their transposes) and calls
// this once per batch element.
#include <cstdint>

#include "tessel/dtype.h"

namespace tessel::cpu {

/// One row-major matrix operand: `data` holds rows of `ld` elements; `trans` means the
/// stored matrix is the transpose of the operand (so a (K, M) panel gives an (M, K) operand).
struct GemmOperand {
  const void* data;
  int64_t ld;
  bool trans = false;
};

/// True for the dtypes BLAS multiplies directly: f32, f64, c64, c128.
bool gemm_supported(DType d);

/// C (M x N, row-major, leading dimension ldc) = A (M x K) * B (K x N), in dtype `d`
/// (one of the gemm_supported dtypes). K == 0 gives zeros. Throws ValueError if a size does
/// not fit BLAS's 32-bit integers.
void gemm(DType d, int64_t m, int64_t n, int64_t k, GemmOperand a, GemmOperand b, void* c, int64_t ldc);

}  // namespace tessel::cpu
