// Hand-written C++ of bench_sharding's stencil loop: u <- u*0.5 + roll(u,-1,0)*0.25 +
// roll(u,1,1)*0.25 on an n x n float32 array, written the way a careful programmer writes it
// without a framework: two buffers, one pass per step, OpenMP over blocks of rows, the
// periodic wrap of the column shift handled outside the vectorised inner loop.
// bench_sharding runs it on 1 and 2 threads: what the machine's memory bus allows a
// streaming step to gain from a second core, in the same run as tessel's figure.
//
// Usage: stencil_ref [--n 2048] [--steps 100]
// Prints `seconds <t>`, `ms_per_step <v>`, `threads <k>` and `checksum <sum of u>` (set-up
// excluded from the time). Threads: OpenMP's default (OMP_NUM_THREADS changes it).
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#else
inline int omp_get_max_threads() { return 1; }
#endif

namespace {

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr, "stencil_ref: %s\nusage: stencil_ref [--n N] [--steps S]\n", why);
  std::exit(2);
}

// One step: out[i][j] = 0.5 u[i][j] + 0.25 u[(i+1) % n][j] + 0.25 u[i][(j-1) mod n].
void step(const float* __restrict u, float* __restrict out, int64_t n) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const float* row = u + i * n;
    const float* below = u + ((i + 1) % n) * n;
    float* o = out + i * n;
    o[0] = 0.5f * row[0] + 0.25f * below[0] + 0.25f * row[n - 1];
#pragma GCC ivdep
    for (int64_t j = 1; j < n; ++j) o[j] = 0.5f * row[j] + 0.25f * below[j] + 0.25f * row[j - 1];
  }
}

}  // namespace

int main(int argc, char** argv) {
  int64_t n = 2048;
  int steps = 100;
  for (int k = 1; k < argc; ++k) {
    const std::string arg = argv[k];
    if (k + 1 >= argc) usage(("missing value after " + arg).c_str());
    const char* val = argv[++k];
    if (arg == "--n") n = std::atoll(val);
    else if (arg == "--steps") steps = std::atoi(val);
    else usage(("unknown option " + arg).c_str());
  }
  if (n < 2 || steps < 1) usage("need n >= 2 and steps >= 1");
  std::vector<float> a(size_t(n * n)), b(size_t(n * n));
  for (size_t k = 0; k < a.size(); ++k) a[k] = float(k % 1000) * 1e-3f;
  float* u = a.data();
  float* v = b.data();
  step(u, v, n);  // first touch of both buffers by the threads that use them
  std::swap(u, v);
  const auto t0 = std::chrono::steady_clock::now();
  for (int s = 0; s < steps; ++s) {
    step(u, v, n);
    std::swap(u, v);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double checksum = 0;
  for (int64_t k = 0; k < n * n; ++k) checksum += double(u[k]);
  std::printf("seconds %.4f\n", seconds);
  std::printf("ms_per_step %.4f\n", 1e3 * seconds / steps);
  std::printf("threads %d\n", omp_get_max_threads());
  std::printf("checksum %.6g\n", checksum);
  return 0;
}
