#include "backend/cpu/blas.h"

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <complex>
#include <cstring>
#include <string>

#include "backend/cpu/dnnl.h"
#include "backend/cpu/parallel.h"
#include "tessel/error.h"

// OpenBLAS's own (exported) teardown of its thread pool, used at fork and exit; weak, so that
// another BLAS without it still links.
extern "C" int blas_thread_shutdown_(void) __attribute__((weak));

namespace tessel::cpu {
namespace {

// Multiply-adds one task should hold (about 25 us of sgemm on one core): enough to hide the
// cost of a task and of the panel packing inside each BLAS call.
constexpr double kTaskWork = double(1 << 19);
// Row or column blocks are multiples of this, a multiple of the register tiles of the
// OpenBLAS kernels.
constexpr int64_t kBlockAlign = 16;
// float32 products of at least this many multiply-adds per block go to oneDNN's sgemm: its
// AVX-512 kernels beat OpenBLAS 0.3.21's (which this processor's model may not even select)
// by 10-25% on mid-sized products (256 x 512 x 512: 0.67 against 0.89 ms on 2 cores, run
// side by side); below it OpenBLAS's lower call overhead wins.
constexpr double kDnnlMinWork = double(1 << 15);

blasint to_blas(int64_t v, const char* what) {
  if (v > INT_MAX)
    throw ValueError(std::string("dot_general: ") + what + " = " + std::to_string(v) +
                     " exceeds the 32-bit BLAS limit; split the product into smaller pieces");
  return blasint(v);
}

CBLAS_TRANSPOSE flag(bool trans) { return trans ? CblasTrans : CblasNoTrans; }

void call_gemm(DType d, bool ta, bool tb, blasint m, blasint n, blasint k, const void* a, blasint lda,
               const void* b, blasint ldb, void* c, blasint ldc) {
  switch (d) {
    case DType::float32:
      return cblas_sgemm(CblasRowMajor, flag(ta), flag(tb), m, n, k, 1.0f, static_cast<const float*>(a), lda,
                         static_cast<const float*>(b), ldb, 0.0f, static_cast<float*>(c), ldc);
    case DType::float64:
      return cblas_dgemm(CblasRowMajor, flag(ta), flag(tb), m, n, k, 1.0, static_cast<const double*>(a), lda,
                         static_cast<const double*>(b), ldb, 0.0, static_cast<double*>(c), ldc);
    case DType::complex64: {
      const std::complex<float> one(1), zero(0);
      return cblas_cgemm(CblasRowMajor, flag(ta), flag(tb), m, n, k, &one, a, lda, b, ldb, &zero, c, ldc);
    }
    case DType::complex128: {
      const std::complex<double> one(1), zero(0);
      return cblas_zgemm(CblasRowMajor, flag(ta), flag(tb), m, n, k, &one, a, lda, b, ldb, &zero, c, ldc);
    }
    default:
      throw Error(std::string("gemm: dtype ") + dtype_name(d) + " is not a BLAS dtype (internal error)");
  }
}

// y = op(A) x for a row-major (rows x cols) matrix A.
void call_gemv(DType d, bool trans, blasint rows, blasint cols, const void* a, blasint lda, const void* x,
               blasint incx, void* y, blasint incy) {
  switch (d) {
    case DType::float32:
      return cblas_sgemv(CblasRowMajor, flag(trans), rows, cols, 1.0f, static_cast<const float*>(a), lda,
                         static_cast<const float*>(x), incx, 0.0f, static_cast<float*>(y), incy);
    case DType::float64:
      return cblas_dgemv(CblasRowMajor, flag(trans), rows, cols, 1.0, static_cast<const double*>(a), lda,
                         static_cast<const double*>(x), incx, 0.0, static_cast<double*>(y), incy);
    case DType::complex64: {
      const std::complex<float> one(1), zero(0);
      return cblas_cgemv(CblasRowMajor, flag(trans), rows, cols, &one, a, lda, x, incx, &zero, y, incy);
    }
    case DType::complex128: {
      const std::complex<double> one(1), zero(0);
      return cblas_zgemv(CblasRowMajor, flag(trans), rows, cols, &one, a, lda, x, incx, &zero, y, incy);
    }
    default:
      throw Error(std::string("gemv: dtype ") + dtype_name(d) + " is not a BLAS dtype (internal error)");
  }
}

int64_t offset_of(const GemmOperand& x, int64_t b) { return x.offsets.empty() ? 0 : x.offsets[size_t(b)]; }

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The address `elems` elements of `es` bytes past p.
const void* advance(const void* p, int64_t elems, size_t es) {
  return static_cast<const char*>(p) + elems * int64_t(es);
}
void* advance(void* p, int64_t elems, size_t es) { return static_cast<char*>(p) + elems * int64_t(es); }

}  // namespace

// tessel splits products over its own arena, so OpenBLAS must not start threads of its own
// (see blas.h). The count is process-wide; set it once, before the first product.
void use_one_blas_thread() {
  static const bool done = [] {
    openblas_set_num_threads(1);
    // OpenBLAS's pthreads build starts its server threads when it is loaded, and an idle one
    // polls with sched_yield for 2^28 cycles (about 0.1 s) before it sleeps: the first steps
    // of a program ran on one core while it held the other (fwd of bench_transformer's small
    // block 1.4-1.6 ms against 0.85 ms later). With one thread OpenBLAS never hands them
    // work, so join them; OpenBLAS starts them again if its count is ever raised.
    if (blas_thread_shutdown_) blas_thread_shutdown_();
    return true;
  }();
  (void)done;
}

bool gemm_supported(DType d) {
  return d == DType::float32 || d == DType::float64 || d == DType::complex64 || d == DType::complex128;
}

void for_each_product_block(int64_t batch, int64_t m, int64_t n, int64_t k,
                            const std::function<void(const ProductBlock&)>& fn) {
  if (batch <= 0 || m <= 0 || n <= 0) return;
  const double per_product = double(m) * double(n) * double(std::max<int64_t>(k, 1));
  const int threads = num_threads();
  // Two tasks per thread let a thread whose core is busy with other work be helped by the
  // others (more would cost more re-packing inside BLAS than they gain: measured on 2048^3).
  const double tasks = std::min(2.0 * threads, double(batch) * per_product / kTaskWork);
  if (threads == 1 || tasks < 2) {
    for (int64_t b = 0; b < batch; ++b) fn({b, 0, m, 0, n});
    return;
  }
  if (double(batch) >= tasks) {  // whole products
    const int64_t grain = std::max<int64_t>(1, int64_t(kTaskWork / per_product));
    parallel_for(batch, grain, [&](int64_t lo, int64_t hi) {
      for (int64_t b = lo; b < hi; ++b) fn({b, 0, m, 0, n});
    });
    return;
  }
  // Blocks of rows (or of columns, for products wider than tall): each BLAS call re-packs
  // the whole other operand, so blocks stay as few as the threads need. A single product
  // gets one block per thread: on the transformer block's products, cutting them into four
  // blocks instead of two cost 0-7% more CPU time (bench/tools/gemm_shapes.cpp and
  // docs/performance.md, "Matrix products against the core's peak"), and equal blocks on
  // free cores finish together; a batch of a few keeps two tasks per thread for balance.
  const bool by_rows = m >= n;
  const int64_t extent = by_rows ? m : n;
  const int64_t wanted = batch == 1 ? std::min<int64_t>(threads, int64_t(tasks)) : ceil_div(int64_t(tasks), batch);
  const int64_t block = ceil_div(ceil_div(extent, wanted), kBlockAlign) * kBlockAlign;
  const int64_t parts = ceil_div(extent, block);
  parallel_for(batch * parts, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      const int64_t b = t / parts, s = (t % parts) * block, e = std::min(extent, s + block);
      fn(by_rows ? ProductBlock{b, s, e, 0, n} : ProductBlock{b, 0, m, s, e});
    }
  });
}

void gemm(DType d, int64_t batch, int64_t m, int64_t n, int64_t k, const GemmOperand& a, const GemmOperand& b,
          void* c, int64_t ldc, int64_t c_stride) {
  if (batch == 0 || m == 0 || n == 0) return;
  const size_t es = itemsize(d);
  if (k == 0) {  // BLAS leaves C untouched in some versions when K == 0
    for (int64_t bi = 0; bi < batch; ++bi)
      for (int64_t i = 0; i < m; ++i) std::memset(advance(c, bi * c_stride + i * ldc, es), 0, size_t(n) * es);
    return;
  }
  if (!gemm_supported(d))
    throw Error(std::string("gemm: dtype ") + dtype_name(d) + " is not a BLAS dtype (internal error)");
  to_blas(m, "M"), to_blas(n, "N"), to_blas(k, "K");
  // Leading dimensions must be at least 1 even for degenerate panels.
  const blasint lda = to_blas(std::max<int64_t>(a.ld, 1), "lda"), ldb = to_blas(std::max<int64_t>(b.ld, 1), "ldb");
  const blasint ldC = to_blas(std::max<int64_t>(ldc, 1), "ldc");
  // Steps between consecutive elements along A's rows (i) and columns (k), and B's rows (k)
  // and columns (j).
  const int64_t a_i = a.trans ? 1 : a.ld, a_k = a.trans ? a.ld : 1;
  const int64_t b_k = b.trans ? 1 : b.ld, b_j = b.trans ? b.ld : 1;
  use_one_blas_thread();
  for_each_product_block(batch, m, n, k, [&](const ProductBlock& p) {
    const blasint mm = blasint(p.i1 - p.i0), nn = blasint(p.j1 - p.j0), kk = blasint(k);
    const void* pa = advance(a.data, offset_of(a, p.b) + p.i0 * a_i, es);
    const void* pb = advance(b.data, offset_of(b, p.b) + p.j0 * b_j, es);
    void* pc = advance(c, p.b * c_stride + p.i0 * ldc + p.j0, es);
    if (nn == 1) {  // C column = A * (B column); A stored (mm x k), or (k x mm) when trans
      call_gemv(d, a.trans, a.trans ? kk : mm, a.trans ? mm : kk, pa, lda, pb, blasint(b_k), pc, ldC);
    } else if (mm == 1) {  // C row = B^T * (A row); B stored (k x nn), or (nn x k) when trans
      call_gemv(d, !b.trans, b.trans ? nn : kk, b.trans ? kk : nn, pb, ldb, pa, blasint(a_k), pc, 1);
    } else if (d != DType::float32 || double(mm) * double(nn) * double(kk) < kDnnlMinWork ||
               !dnnl::sgemm(a.trans, b.trans, mm, nn, kk, static_cast<const float*>(pa), lda,
                            static_cast<const float*>(pb), ldb, static_cast<float*>(pc), ldC)) {
      call_gemm(d, a.trans, b.trans, mm, nn, kk, pa, lda, pb, ldb, pc, ldC);
    }
  });
}

}  // namespace tessel::cpu
