#pragma once
// One core's float32 multiply-add peak, measured: the ceiling that matrix products (and so a
// transformer step's floor) are judged against in bench_transformer and bench/tools/gemm_shapes.
//
// The rate is floating-point work per second of the thread's CPU time, so a loaded machine
// (a thread waiting for its core adds nothing) still gives the core's own figure. On the
// development VM (AMD family 25 model 17, Zen 4) 512-bit and 256-bit multiply-adds both reach
// about 115 GFLOP/s: the core issues a 512-bit FMA as two 256-bit halves, 32 flop a cycle.
#include <immintrin.h>
#include <time.h>

#include <algorithm>

namespace tessel::bench {

/// Seconds of CPU time used by the calling thread (or, with CLOCK_PROCESS_CPUTIME_ID, by the
/// whole process).
inline double cpu_seconds(clockid_t clock = CLOCK_THREAD_CPUTIME_ID) {
  timespec t{};
  clock_gettime(clock, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

namespace detail {

// The body of fma_peak_avx512 and fma_peak_avx2 (one per target: intrinsics of a wider ISA
// cannot be called from a template or lambda compiled without it): `iters` rounds of 12
// independent multiply-add chains on vectors of `lanes` floats, enough chains to cover the
// FMA latency on both of the core's pipes; returns GFLOP per CPU second.
#define TESSEL_FMA_PEAK_BODY(V, lanes, set1, fmadd, add)                        \
  V acc[12];                                                                   \
  for (auto& a : acc) a = set1(1e-7f);                                         \
  V x = set1(0.9999f);                                                         \
  const V y = set1(1e-7f);                                                     \
  const double c0 = cpu_seconds();                                             \
  for (long i = 0; i < iters; ++i) {                                           \
    _Pragma("GCC unroll 12") for (auto& a : acc) a = fmadd(a, x, y);           \
    asm volatile("" : "+v"(x)); /* opaque: the chains stay as written */       \
  }                                                                            \
  const double s = cpu_seconds() - c0;                                         \
  V total = acc[0];                                                            \
  for (int j = 1; j < 12; ++j) total = add(total, acc[j]);                     \
  asm volatile("" : : "v"(total)); /* the chains' results are used */          \
  return 12.0 * double(iters) * 2 * (lanes) / s * 1e-9;

__attribute__((target("avx512f"))) inline double fma_peak_avx512(long iters) {
  TESSEL_FMA_PEAK_BODY(__m512, 16, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps)
}

__attribute__((target("avx2,fma"))) inline double fma_peak_avx2(long iters) {
  TESSEL_FMA_PEAK_BODY(__m256, 8, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps)
}

#undef TESSEL_FMA_PEAK_BODY

}  // namespace detail

/// One core's float32 multiply-add peak in GFLOP per CPU second, with the widest vectors the
/// CPU has (AVX-512 or AVX2+FMA; 0 where it has neither); about 0.1 s of one core. The best of
/// `tries` measurements, so that a frequency dip or an interrupt in one does not lower it.
inline double fma_peak_gflops(int tries = 3) {
  constexpr long kIters = 10'000'000;
  double best = 0;
  for (int t = 0; t < tries; ++t) {
    if (__builtin_cpu_supports("avx512f"))
      best = std::max(best, detail::fma_peak_avx512(kIters));
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
      best = std::max(best, detail::fma_peak_avx2(kIters));
  }
  return best;
}

}  // namespace tessel::bench
