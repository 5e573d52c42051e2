#pragma once
// OpenBLAS binding: batches of general matrix products on row-major panels, read in place
// (leading dimensions and transpose flags describe the layout) and split over the shared
// oneTBB arena.
//
// Threads: OpenBLAS runs single-threaded (set once, on first use); tessel splits products
// itself — batch elements, and row or column blocks of large products — over the arena of
// parallel.h. So TESSEL_NUM_THREADS bounds BLAS work too, virtual devices that multiply at
// the same time share the cores instead of each starting OpenBLAS's thread team, and a small
// batched product runs one gemm per worker without oversubscription. (OpenBLAS 0.3.21 has
// only the process-wide openblas_set_num_threads; no per-call or per-thread count.)
#include <cstdint>
#include <functional>
#include <span>

#include "tessel/dtype.h"

namespace tessel::cpu {

/// One row-major matrix operand of a batch of products: matrix `b` starts at element
/// `offsets[b]` of `data` (all at 0 when `offsets` is empty) and holds rows of stride `ld`;
/// `trans` means the stored matrix is the transpose of the operand (a (K, M) panel gives an
/// (M, K) operand). A vector operand (one row or column) may have any stride: a 1 x K
/// operand with element stride s is {ld = s, trans = true}.
struct GemmOperand {
  const void* data;
  int64_t ld;
  bool trans = false;
  std::span<const int64_t> offsets = {};
};

/// Sets OpenBLAS to one thread (once per process; see above). Every caller of BLAS or
/// LAPACK calls it before its first call.
void use_one_blas_thread();

/// True for the dtypes BLAS multiplies directly: f32, f64, c64, c128.
bool gemm_supported(DType d);

/// For each of `batch` products: C_b (M x N, row-major, leading dimension ldc, starting at
/// element b * c_stride of `c`) = A_b (M x K) * B_b (K x N), in dtype `d` (one of the
/// gemm_supported dtypes). Products with one row or column call gemv. K == 0 gives zeros.
/// Throws ValueError if a size does not fit BLAS's 32-bit integers.
void gemm(DType d, int64_t batch, int64_t m, int64_t n, int64_t k, const GemmOperand& a, const GemmOperand& b,
          void* c, int64_t ldc, int64_t c_stride);

/// A block of one product of a batch: rows [i0, i1) and columns [j0, j1) of C_b.
struct ProductBlock {
  int64_t b, i0, i1, j0, j1;
};

/// Calls fn on blocks that tile `batch` products of (M x K) by (K x N) matrices, in parallel
/// on the shared arena: whole products when the batch alone gives every thread work, row
/// (or, for wide products, column) blocks of each product otherwise (one block per thread
/// for a single product, since each block re-packs the other operand), and inline when the
/// work is too small to share. Used by the BLAS products and the integer fallback loops.
void for_each_product_block(int64_t batch, int64_t m, int64_t n, int64_t k,
                            const std::function<void(const ProductBlock&)>& fn);

}  // namespace tessel::cpu
