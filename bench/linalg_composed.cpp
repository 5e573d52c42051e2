// The composed linear-algebra functions through tessel (jit of ts::scipy::linalg::expm,
// ts::linalg::{pinv, eig, norm, multi_dot, vector_norm}) against JAX 0.10 on the same float32
// inputs, when TESSEL_JAX_PYTHON names a Python with JAX (bench/baselines/
// jax_linalg_composed.py). There is no hand-written baseline: these functions are
// compositions of the factorizations that bench/linalg.cpp measures against LAPACK.
//
// Lines: linalg_composed.<case>_tessel_ms, and with JAX linalg_composed.<case>_jax_ms and
// linalg_composed.<case>_vs_jax (JAX's time over tessel's: >= 1 means tessel is as fast or
// faster).
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "bench_util.h"
#include "tessel/linalg.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace tb = tessel::bench;

namespace {

/// batch matrices n x n (one matrix when batch is 1) of pseudo-random values in [-1, 1) plus
/// diag * I: the linear congruential sequence s = (1103515245 s + 12345) mod 2^31 from s = 1,
/// as the JAX script builds them (dense, full-rank matrices: structured ones make LAPACK's
/// iterations unrepresentatively short).
ts::Array matrices(int64_t batch, int64_t n, float diag) {
  std::vector<float> v(size_t(batch * n * n));
  uint64_t s = 1;
  for (auto& x : v) {
    s = (1103515245 * s + 12345) % (uint64_t(1) << 31);
    x = float(double(s) / double(uint64_t(1) << 31) * 2 - 1);
  }
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < n; ++i) v[size_t((b * n + i) * n + i)] += diag;
  return batch == 1 ? ts::Array(v, {n, n}) : ts::Array(v, {batch, n, n});
}

struct Case {
  std::string name;
  std::function<std::vector<ts::Array>(const ts::Array&)> fn;
  ts::Array input;
};

}  // namespace

int main() {
  namespace la = ts::linalg;
  using V = std::vector<ts::Array>;
  const std::vector<Case> cases{
      {"expm_128", [](const ts::Array& a) { return V{ts::scipy::linalg::expm(a * 0.05f)}; }, matrices(1, 128, 0)},
      {"expm_4096x8", [](const ts::Array& a) { return V{ts::scipy::linalg::expm(a)}; }, matrices(4096, 8, 0)},
      {"pinv_256", [](const ts::Array& a) { return V{la::pinv(a)}; }, matrices(1, 256, 16)},
      {"eig_256", [](const ts::Array& a) { auto r = la::eig(a); return V{r.eigenvalues, r.eigenvectors}; },
       matrices(1, 256, 0)},
      {"norm_nuc_256", [](const ts::Array& a) { return V{la::norm(a, "nuc")}; }, matrices(1, 256, 0)},
      {"multi_dot_256", [](const ts::Array& a) {
         using ts::Slice;
         return V{la::multi_dot({a[{Slice(), Slice(0, 32)}], a[{Slice(0, 32)}], a, a[{Slice(), Slice(0, 8)}]})};
       }, matrices(1, 256, 0)},
      {"vector_norm_3_4096x64", [](const ts::Array& a) { return V{la::vector_norm(a, 3, ts::Axes{-1})}; },
       matrices(4096, 64, 0)[{ts::Slice(), 0}]},
  };
  std::map<std::string, double> jax;
  if (const char* py = std::getenv("TESSEL_JAX_PYTHON"))
    jax = tb::run_baseline(tb::shell_quote(py) + " " + tb::shell_quote(std::string(TESSEL_SOURCE_DIR) + "/bench/baselines/jax_linalg_composed.py"));
  for (const Case& c : cases) {
    auto f = ts::jit(c.fn);
    const double s = tb::seconds_per_call([&] { for (auto& r : f(c.input)) r.block_until_ready(); }, 5);
    tb::report("linalg_composed." + c.name + "_tessel_ms", s * 1e3, "ms");
    if (auto it = jax.find(c.name); it != jax.end()) {
      tb::report("linalg_composed." + c.name + "_jax_ms", it->second * 1e3, "ms");
      tb::report("linalg_composed." + c.name + "_vs_jax", it->second / s, "x");
    }
  }
}
