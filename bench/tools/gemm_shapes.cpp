// The transformer block's matrix products (bench/transformer.cpp at batch 8, sequence 256,
// model 512, 8 heads; issue 31) on every float32 backend this machine has, against the
// core's own multiply-add peak measured in the same run, for docs/performance.md ("Matrix
// products: how close to the peak").
//
// Wall times on the shared 2-core VM vary 2x with the other engineers' builds, so every rate
// is floating-point work per second of CPU time (a thread that waits for a core adds nothing
// to it), and each backend is compared with the peak of one core timed between its rounds:
//   fma_peak          12 independent chains of 512-bit multiply-adds (no memory traffic)
//   dnnl_sgemm_1t     oneDNN's dnnl_sgemm, whole product (or batch) on one thread
//   dnnl_matmul_1t    oneDNN's matmul primitive (brgemm kernels), batch in one call, one thread
//   openblas_1t       cblas_sgemm on one thread (OPENBLAS_CORETYPE as the environment sets it)
//   tessel            cpu::gemm as jit programs call it: blocks split over the arena
// plus tessel's wall-clock rate (tessel_wall). Prints `gemm_shapes.<shape>.<backend> GFLOP/s`
// lines and each backend's fraction of the peak.
//
// Usage: gemm_shapes [rounds (default 5)] [shape-name filter]
#include <cblas.h>
#include <omp.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <vector>

#include "backend/cpu/blas.h"
#include "backend/cpu/dnnl.h"
#include "backend/cpu/parallel.h"
#include "fma_peak.h"

namespace {

using tessel::bench::cpu_seconds;

/// Best CPU seconds (of `clock`) and best wall seconds per call of f over `rounds` rounds of
/// `calls` calls, after one warm-up call.
struct Times {
  double cpu = 1e30, wall = 1e30;
};
Times best_of(int rounds, int calls, clockid_t clock, const std::function<void()>& f) {
  f();
  Times t;
  for (int r = 0; r < rounds; ++r) {
    const double c0 = cpu_seconds(clock);
    const auto w0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) f();
    t.cpu = std::min(t.cpu, (cpu_seconds(clock) - c0) / calls);
    t.wall = std::min(t.wall, std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count() / calls);
  }
  return t;
}

/// One product of the block: `batch` products of (M x K) by (K x N), A or B stored transposed.
struct Shape {
  const char* name;
  int64_t batch, m, n, k;
  bool ta, tb;
};

const Shape kShapes[] = {
    // forward
    {"qkv_2048x1536x512", 1, 2048, 1536, 512, false, false},  // q, k, v projections, merged
    {"proj_2048x512x512", 1, 2048, 512, 512, false, false},   // output projection
    {"mlp_up_2048x2048x512", 1, 2048, 2048, 512, false, false},
    {"mlp_down_2048x512x2048", 1, 2048, 512, 2048, false, false},
    {"scores_64x256x256x64_bT", 64, 256, 256, 64, false, true},  // q k^T per head
    {"values_64x256x64x256", 64, 256, 64, 256, false, false},    // p v per head
    // backward: weight gradients (A^T: contraction over the 2048 rows) and input gradients (B^T)
    {"dw_proj_512x512x2048_aT", 1, 512, 512, 2048, true, false},
    {"dx_proj_2048x512x512_bT", 1, 2048, 512, 512, false, true},
    {"dw_mlp_up_512x2048x2048_aT", 1, 512, 2048, 2048, true, false},
    {"dx_mlp_up_2048x512x2048_bT", 1, 2048, 512, 2048, false, true},
    {"dw_mlp_down_2048x512x2048_aT", 1, 2048, 512, 2048, true, false},
    {"dx_mlp_down_2048x2048x512_bT", 1, 2048, 2048, 512, false, true},
    {"dv_64x256x64x256_aT", 64, 256, 64, 256, true, false},
    {"dk_64x256x64x256_aT", 64, 256, 64, 256, true, false},
};

}  // namespace

int main(int argc, char** argv) {
  namespace cpu = tessel::cpu;
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  const char* filter = argc > 2 ? argv[2] : nullptr;
  cpu::use_one_blas_thread();
  omp_set_num_threads(1);
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(eng);
  std::printf("gemm_shapes.threads %d threads\n", cpu::num_threads());
  double peak_sum = 0;
  int peaks = 0;
  for (const Shape& s : kShapes) {
    if (filter && !std::strstr(s.name, filter)) continue;
    const int64_t M = s.m, N = s.n, K = s.k, B = s.batch;
    std::vector<float> a(size_t(B * M * K)), b(size_t(B * K * N)), c(size_t(B * M * N));
    for (size_t i = 0; i < a.size(); ++i) a[i] = float((i * 7919) % 1000) * 1e-3f - 0.5f;
    for (size_t i = 0; i < b.size(); ++i) b[i] = float((i * 104729) % 1000) * 1e-3f - 0.5f;
    const int64_t lda = s.ta ? M : K, ldb = s.tb ? K : N;
    const double gflop = 2e-9 * double(B * M * N * K);
    const int calls = std::max(1, int(0.5 / gflop));  // about 0.5 GFLOP a round

    std::vector<int64_t> a_off(static_cast<size_t>(B)), b_off(static_cast<size_t>(B));
    for (int64_t i = 0; i < B; ++i) a_off[size_t(i)] = i * M * K, b_off[size_t(i)] = i * K * N;
    const cpu::GemmOperand ga{a.data(), lda, s.ta, B > 1 ? std::span<const int64_t>(a_off) : std::span<const int64_t>()};
    const cpu::GemmOperand gb{b.data(), ldb, s.tb, B > 1 ? std::span<const int64_t>(b_off) : std::span<const int64_t>()};

    using dt = dnnl::memory::data_type;
    const dnnl::memory::desc amd({B, M, K}, dt::f32, s.ta ? dnnl::memory::dims{M * K, 1, M} : dnnl::memory::dims{M * K, K, 1});
    const dnnl::memory::desc bmd({B, K, N}, dt::f32, s.tb ? dnnl::memory::dims{K * N, 1, K} : dnnl::memory::dims{K * N, N, 1});
    const dnnl::memory::desc cmd({B, M, N}, dt::f32, dnnl::memory::dims{M * N, N, 1});
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(amd, bmd, cmd), eng);
    const dnnl::matmul matmul(pd);
    dnnl::memory am(amd, eng, a.data()), bm(bmd, eng, b.data()), cm(cmd, eng, c.data());

    const double peak = tessel::bench::fma_peak_gflops();
    const Times sgemm = best_of(rounds, calls, CLOCK_THREAD_CPUTIME_ID, [&] {
      for (int64_t i = 0; i < B; ++i)
        cpu::dnnl::sgemm(s.ta, s.tb, M, N, K, a.data() + i * M * K, lda, b.data() + i * K * N, ldb, c.data() + i * M * N, N);
    });
    const Times prim = best_of(rounds, calls, CLOCK_THREAD_CPUTIME_ID, [&] {
      matmul.execute(stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
      stream.wait();
    });
    const Times blas = best_of(rounds, calls, CLOCK_THREAD_CPUTIME_ID, [&] {
      for (int64_t i = 0; i < B; ++i)
        cblas_sgemm(CblasRowMajor, s.ta ? CblasTrans : CblasNoTrans, s.tb ? CblasTrans : CblasNoTrans, int(M), int(N),
                    int(K), 1.0f, a.data() + i * M * K, int(lda), b.data() + i * K * N, int(ldb), 0.0f,
                    c.data() + i * M * N, int(N));
    });
    const Times tessel = best_of(rounds, calls, CLOCK_PROCESS_CPUTIME_ID, [&] {
      cpu::gemm(tessel::DType::float32, B, M, N, K, ga, gb, c.data(), N, M * N);
    });
    const double peak2 = tessel::bench::fma_peak_gflops();
    const double p = 0.5 * (peak + peak2);
    peak_sum += p, ++peaks;
    auto line = [&](const char* backend, double seconds) {
      std::printf("gemm_shapes.%s.%s %.1f GFLOP/s %.2f of_peak\n", s.name, backend, gflop / seconds, gflop / seconds / p);
    };
    std::printf("gemm_shapes.%s.fma_peak %.1f GFLOP/s (%.1f, %.1f)\n", s.name, p, peak, peak2);
    line("dnnl_sgemm_1t", sgemm.cpu);
    line("dnnl_matmul_1t", prim.cpu);
    line("openblas_1t", blas.cpu);
    line("tessel", tessel.cpu);
    std::printf("gemm_shapes.%s.tessel_wall %.1f GFLOP/s\n", s.name, gflop / tessel.wall);
    std::printf("gemm_shapes.%s.dnnl_matmul_impl %s\n", s.name, pd.impl_info_str());
    std::fflush(stdout);
  }
  if (peaks) std::printf("gemm_shapes.fma_peak_mean %.1f GFLOP/s\n", peak_sum / peaks);
  return 0;
}
