// Fusion against memory bandwidth (issue 4): a 10-operation element-wise expression of
// three float32 inputs over 16M elements through ts::jit, in bytes moved per second (the
// inputs read once and the output written once, 16 bytes an element), over the bytes per
// second of a STREAM triad a[i] = b[i] + s * c[i] (12 bytes an element) on all cores,
// measured in the same run. A fused kernel streams like the triad (fraction near 1); an
// unfused one makes a pass over memory per operation.
//
// Usage: bench_fusion_stream [elements]   (default 16M = 16 * 2^20)
// Exits 1 when tessel's result differs from the same expression computed in a plain loop.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <type_traits>
#include <vector>

#include "backend/cpu/parallel.h"
#include "bench_util.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace tb = tessel::bench;

namespace {

float maximum(float x, float y) { return std::max(x, y); }
float minimum(float x, float y) { return std::min(x, y); }

// 10 element-wise operations, no scalars (so no broadcast or conversion ops are counted);
// T is ts::Array (traced by jit) or float (the reference loop).
template <class T> T expression(const T& a, const T& b, const T& c) {
  using std::abs;
  T t = a * b + c;       // 1, 2
  t = abs(t - a);        // 3, 4
  t = maximum(t * c, b); // 5, 6
  t = t + a;             // 7
  t = t * t - b;         // 8, 9
  return minimum(t, c);  // 10
}

void triad(int64_t begin, int64_t end, float* __restrict a, const float* __restrict b, const float* __restrict c,
           float s) {
  for (int64_t i = begin; i < end; ++i) a[i] = b[i] + s * c[i];
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : int64_t(16) << 20;
  const int repeats = 7;
  std::printf("# fusion: %lld float32 elements, %d threads, best of %d runs\n", static_cast<long long>(n),
              ts::cpu::num_threads(), repeats);

  // STREAM triad on the arena tessel uses, each thread on its own contiguous chunks.
  std::vector<float> ta(static_cast<size_t>(n), 0.0f), tb_(static_cast<size_t>(n), 1.0f), tc(static_cast<size_t>(n), 2.0f);
  const int64_t grain = std::max<int64_t>(1 << 16, n / (8 * ts::cpu::num_threads()));
  auto run_triad = [&] {
    ts::cpu::parallel_for(n, grain, [&](int64_t b, int64_t e) { triad(b, e, ta.data(), tb_.data(), tc.data(), 3.0f); });
  };
  run_triad();  // first touch
  const double triad_s = tb::seconds_per_call(run_triad, 1, repeats);
  const double triad_gbps = 12.0 * double(n) / triad_s / 1e9;

  // tessel: inputs on the device before timing; each call returns a new output array.
  const size_t count = static_cast<size_t>(n);
  std::vector<float> ha(count), hb(count), hc(count);
  for (int64_t i = 0; i < n; ++i) {
    ha[size_t(i)] = float(i % 1001) * 1e-3f - 0.5f;
    hb[size_t(i)] = float(i % 997) * 2e-3f - 1.0f;
    hc[size_t(i)] = float(i % 991) * 1e-3f;
  }
  ts::Array a(ha, {n}), b(hb, {n}), c(hc, {n});
  auto f = ts::jit([](const ts::Array& x, const ts::Array& y, const ts::Array& z) { return expression(x, y, z); },
                   {.name = "fusion_stream"});
  const ts::Program program = f.lower(a, b, c).program();
  std::printf("# fusion: the jitted program has %zu equations\n", program.num_equations());
  ts::Array out = f(a, b, c);
  out.block_until_ready();  // compile
  const double tessel_s = tb::seconds_per_call(
      [&] {
        out = ts::Array();  // drop the last output first, as a loop reusing its buffer would
        out = f(a, b, c);
        out.block_until_ready();
      },
      1, repeats);
  const double tessel_gbps = 16.0 * double(n) / tessel_s / 1e9;

  tb::report("fusion.tessel_ms", tessel_s * 1e3, "ms");
  tb::report("fusion.tessel_gbps", tessel_gbps, "GB/s");
  tb::report("fusion.stream_triad_gbps", triad_gbps, "GB/s");
  tb::report("fusion.fraction_of_stream", tessel_gbps / triad_gbps, "");

  // The same expression in a plain loop (FMA contraction may differ: relative tolerance).
  const std::vector<float> got = out.to_vector<float>();
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float want = expression(ha[size_t(i)], hb[size_t(i)], hc[size_t(i)]);
    const double err = std::abs(double(got[size_t(i)]) - double(want)) / (1.0 + std::abs(double(want)));
    if (!(err <= worst)) worst = err;
  }
  if (!(worst <= 1e-5)) {
    std::fprintf(stderr, "bench_fusion_stream: tessel's result differs from the plain loop by %g (relative)\n", worst);
    return 1;
  }
  return 0;
}
