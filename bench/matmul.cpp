// Matrix products through tessel (jit of ts::matmul, and eager) against direct cblas_sgemm
// calls on buffers of the same size, in the same run: one 2048 x 2048 float32 product, and a
// batch of 64 products of 128 x 128 matrices. Also the integer loop's speed (no baseline).
//
// The baseline is OpenBLAS as a C++ programmer calls it: cblas_sgemm with OpenBLAS's own
// threads, as many as tessel's arena has (TESSEL_NUM_THREADS, default all cores); for the
// batch, one call per product in a loop. tessel runs OpenBLAS single-threaded and splits
// products over its arena (src/backend/cpu/blas.h), so the bench sets OpenBLAS's thread
// count around each baseline round and restores tessel's afterwards. Rounds alternate
// between tessel and the baseline and the best of each is kept, so load from other
// processes on a shared machine hits both alike.
#include <cblas.h>

#include <algorithm>
#include <random>
#include <vector>

#include "backend/cpu/parallel.h"
#include "bench_util.h"
#include "blas_threads.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace tb = tessel::bench;

namespace {

std::vector<float> random_values(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(gen);
  return v;
}

struct Timing {
  double tessel = 1e30, eager = 1e30, blas = 1e30;
};

// Best seconds per call of the jitted and eager tessel products and of the baseline over
// `rounds` alternating rounds of `n` calls each.
template <class Jit, class Eager, class Blas>
Timing compare(int rounds, int n, Jit&& jit, Eager&& eager, Blas&& blas) {
  Timing t;
  for (int r = 0; r < rounds; ++r) {
    t.tessel = std::min(t.tessel, tb::seconds_per_call(jit, n, 1));
    t.eager = std::min(t.eager, tb::seconds_per_call(eager, n, 1));
    tb::with_blas_threads(ts::cpu::num_threads(), [&] { t.blas = std::min(t.blas, tb::seconds_per_call(blas, n, 1)); });
  }
  return t;
}

void report(const std::string& prefix, double flops, const Timing& t) {
  tb::report(prefix + "tessel_gflops", flops / t.tessel * 1e-9, "GFLOP/s");
  tb::report(prefix + "eager_gflops", flops / t.eager * 1e-9, "GFLOP/s");
  tb::report(prefix + "blas_gflops", flops / t.blas * 1e-9, "GFLOP/s");
  tb::report(prefix + "fraction_of_blas", t.blas / t.tessel, "x");
  tb::report(prefix + "eager_fraction_of_blas", t.blas / t.eager, "x");
}

}  // namespace

int main() {
  const auto matmul = ts::jit([](const ts::Array& a, const ts::Array& b) { return ts::matmul(a, b); });
  tb::report("matmul.threads", ts::cpu::num_threads(), "threads");

  {  // one large product
    const int64_t n = 2048;
    const auto av = random_values(size_t(n * n), 1), bv = random_values(size_t(n * n), 2);
    std::vector<float> cv(size_t(n * n));
    const ts::Array a(av, {n, n}), b(bv, {n, n});
    matmul(a, b).block_until_ready();  // compile
    const Timing t = compare(
        5, 1, [&] { matmul(a, b).block_until_ready(); }, [&] { ts::matmul(a, b).block_until_ready(); },
        [&] {
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(n), int(n), int(n), 1.0f, av.data(), int(n),
                      bv.data(), int(n), 0.0f, cv.data(), int(n));
        });
    report("matmul.", 2.0 * double(n) * double(n) * double(n), t);
  }

  {  // a batch of small products
    const int64_t batch = 64, n = 128;
    const auto av = random_values(size_t(batch * n * n), 3), bv = random_values(size_t(batch * n * n), 4);
    std::vector<float> cv(size_t(batch * n * n));
    const ts::Array a(av, {batch, n, n}), b(bv, {batch, n, n});
    matmul(a, b).block_until_ready();
    const Timing t = compare(
        7, 10, [&] { matmul(a, b).block_until_ready(); }, [&] { ts::matmul(a, b).block_until_ready(); },
        [&] {
          for (int64_t i = 0; i < batch; ++i)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(n), int(n), int(n), 1.0f,
                        av.data() + i * n * n, int(n), bv.data() + i * n * n, int(n), 0.0f, cv.data() + i * n * n,
                        int(n));
        });
    report("matmul.batched_", 2.0 * double(batch) * double(n) * double(n) * double(n), t);
  }
  {  // integers have no BLAS: the blocked loop, for scale
    const int64_t n = 512;
    const ts::Array a = ts::astype(ts::Array(random_values(size_t(n * n), 5), {n, n}) * 100.0f, ts::i32);
    const ts::Array b = ts::astype(ts::Array(random_values(size_t(n * n), 6), {n, n}) * 100.0f, ts::i32);
    matmul(a, b).block_until_ready();
    const double s = tb::seconds_per_call([&] { matmul(a, b).block_until_ready(); }, 3);
    tb::report("matmul.int32_512_gops", 2.0 * double(n) * double(n) * double(n) / s * 1e-9, "GOP/s");
  }
  return 0;
}
