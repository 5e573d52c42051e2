// Factorizations through tessel (jit of ts::linalg::{cholesky, solve, eigh, svd, qr}) against
// direct LAPACKE calls on the same float32 data in the same run, and against JAX when
// TESSEL_JAX_PYTHON names a Python with JAX (bench/baselines/jax_linalg.py): one 1024 x 1024
// matrix, and a batch of 4096 8 x 8 matrices.
//
// The LAPACK baseline is LAPACKE as a C++ programmer calls it: the row-major entry points
// (LAPACKE_spotrf, sgesv, ssyevd, sgesdd, sgeqrf + sorgqr) on a copy of the input (LAPACK
// overwrites it), with OpenBLAS's own threads, as many as tessel's arena has; for the batch,
// one call per matrix in a loop, with OpenBLAS on one thread (its threads only slow calls on
// 8 x 8 matrices down). tessel splits the batch over its arena. Rounds alternate between tessel and the baselines and the
// best of each is kept, so load from other processes hits both alike.
//
// Lines: linalg.<op>_<size>_{tessel,lapack}_ms, linalg.<op>_<size>_vs_lapack (LAPACK's time
// over tessel's: >= 1 means tessel is as fast or faster), linalg.<op>_vs_lapack (the smaller
// of the two sizes), and with JAX linalg.<op>_<size>_vs_jax and linalg.<op>_vs_jax (JAX's
// time over tessel's, likewise).
//
// OPENBLAS_CORETYPE: where the environment sets it (or OPENBLAS_L2_SIZE), as these machines'
// does (Haswell, which holds Debian's OpenBLAS 0.3.21 to about half of an AVX-512 CPU's
// matrix-product peak; JAX's OpenBLAS, scipy's newer build, reads it too), the main lines are
// measured with it, and the program then runs itself again with both unset (for tessel, its
// LAPACK baseline and JAX alike) and prints that run's ratios as
// linalg.<op>[_<size>]_vs_{lapack,jax}_native.
#include <cblas.h>
#include <lapacke.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/parallel.h"
#include "bench_util.h"
#include "blas_threads.h"
#include "tessel/linalg.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace tb = tessel::bench;

namespace {

struct Inputs {
  int64_t batch, n;
  std::vector<float> spd, x;  // positive definite matrices, general matrices
};

Inputs make_inputs(int64_t batch, int64_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Inputs in{batch, n, std::vector<float>(size_t(batch * n * n)), std::vector<float>(size_t(batch * n * n))};
  for (auto& v : in.x) v = u(gen);
  for (int64_t b = 0; b < batch; ++b) {  // X X^T + n I
    const float* x = in.x.data() + b * n * n;
    cblas_ssyrk(CblasRowMajor, CblasLower, CblasNoTrans, int(n), int(n), 1.0f, x, int(n), 0.0f,
                in.spd.data() + b * n * n, int(n));
    float* s = in.spd.data() + b * n * n;
    for (int64_t i = 0; i < n; ++i) {
      s[i * n + i] += float(n);
      for (int64_t j = i + 1; j < n; ++j) s[i * n + j] = s[j * n + i];
    }
  }
  return in;
}

/// The LAPACKE calls for one matrix of each operation, on scratch copies.
struct Lapack {
  int n;
  std::vector<float> a, b, w, u, vt, tau;
  std::vector<lapack_int> ipiv;
  explicit Lapack(int n_)
      : n(n_), a(size_t(n_ * n_)), b(size_t(n_ * n_)), w(size_t(n_)), u(size_t(n_ * n_)), vt(size_t(n_ * n_)),
        tau(size_t(n_)), ipiv(size_t(n_)) {}
  void load(const float* src) { std::copy(src, src + n * n, a.data()); }
  void cholesky(const float* spd) {
    load(spd);
    LAPACKE_spotrf(LAPACK_ROW_MAJOR, 'L', n, a.data(), n);
  }
  void solve(const float* spd, const float* rhs, int nrhs) {
    load(spd);
    std::copy(rhs, rhs + n * nrhs, b.data());
    LAPACKE_sgesv(LAPACK_ROW_MAJOR, n, nrhs, a.data(), n, ipiv.data(), b.data(), nrhs);
  }
  void eigh(const float* spd) {
    load(spd);
    LAPACKE_ssyevd(LAPACK_ROW_MAJOR, 'V', 'L', n, a.data(), n, w.data());
  }
  void svd(const float* x) {
    load(x);
    LAPACKE_sgesdd(LAPACK_ROW_MAJOR, 'S', n, n, a.data(), n, w.data(), u.data(), n, vt.data(), n);
  }
  void qr(const float* x) {
    load(x);
    LAPACKE_sgeqrf(LAPACK_ROW_MAJOR, n, n, a.data(), n, tau.data());
    std::copy(a.begin(), a.end(), u.begin());  // keep R; Q replaces the reflectors
    LAPACKE_sorgqr(LAPACK_ROW_MAJOR, n, n, n, a.data(), n, tau.data());
  }
};

struct Op {
  std::string name;
  std::function<std::vector<ts::Array>(const ts::Array&, const ts::Array&)> tessel;  // (spd, x or rhs)
  std::function<void(Lapack&, const Inputs&, int64_t)> lapack;                        // matrix b of the batch
};

std::vector<Op> ops() {
  return {
      {"cholesky", [](const ts::Array& a, const ts::Array&) { return std::vector{ts::linalg::cholesky(a)}; },
       [](Lapack& l, const Inputs& in, int64_t b) { l.cholesky(in.spd.data() + b * in.n * in.n); }},
      {"solve", [](const ts::Array& a, const ts::Array& rhs) { return std::vector{ts::linalg::solve(a, rhs)}; },
       [](Lapack& l, const Inputs& in, int64_t b) {
         const int64_t nn = in.n * in.n;
         // One right-hand side for the single matrix (jnp's (n,) vector), n for the batch.
         l.solve(in.spd.data() + b * nn, in.x.data() + b * nn, in.batch == 1 ? 1 : int(in.n));
       }},
      {"eigh",
       [](const ts::Array& a, const ts::Array&) {
         auto [w, v] = ts::linalg::eigh(a);
         return std::vector{w, v};
       },
       [](Lapack& l, const Inputs& in, int64_t b) { l.eigh(in.spd.data() + b * in.n * in.n); }},
      {"svd",
       [](const ts::Array&, const ts::Array& x) {
         auto [u, s, vh] = ts::linalg::svd(x, false);
         return std::vector{u, s, vh};
       },
       [](Lapack& l, const Inputs& in, int64_t b) { l.svd(in.x.data() + b * in.n * in.n); }},
      {"qr",
       [](const ts::Array&, const ts::Array& x) {
         auto [q, r] = ts::linalg::qr(x);
         return std::vector{q, r};
       },
       [](Lapack& l, const Inputs& in, int64_t b) { l.qr(in.x.data() + b * in.n * in.n); }},
  };
}

struct Figures {
  double tessel = 1e30, lapack = 1e30;
};

}  // namespace

/// With OPENBLAS_CORETYPE or OPENBLAS_L2_SIZE set: this program's ratios measured again
/// in a copy of itself run without them, printed with the suffix _native (see the top).
void report_native_ratios() {
  if (!std::getenv("OPENBLAS_CORETYPE") && !std::getenv("OPENBLAS_L2_SIZE")) return;
  if (std::getenv("TESSEL_LINALG_BENCH_NATIVE")) return;  // this is the copy
  const std::string command =
      "env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE TESSEL_LINALG_BENCH_NATIVE=1 /proc/" + std::to_string(getpid()) +
      "/exe";
  for (auto& [key, value] : tb::run_baseline(command)) {
    const auto ends_with = [&](const std::string& suffix) {
      return key.size() >= suffix.size() && key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    if (ends_with("_vs_jax") || ends_with("_vs_lapack")) tb::report(key + "_native", value, "x");
  }
}

int main() {
  const int threads = ts::cpu::num_threads();
  tb::report("linalg.threads", threads, "threads");
  // JAX runs before and after tessel's measurements; each figure is the better of the two
  // runs, so a burst of load from other processes does not count against JAX.
  std::map<std::string, double> jax;
  const char* py = std::getenv("TESSEL_JAX_PYTHON");
  const std::string jax_command = py && *py ? tb::shell_quote(py) + " " +
                                                  tb::shell_quote(std::string(TESSEL_SOURCE_DIR) +
                                                                  "/bench/baselines/jax_linalg.py")
                                            : "";
  if (!jax_command.empty()) jax = tb::run_baseline(jax_command);
  struct Size {
    const char* label;
    int64_t batch, n;
    int rounds, calls;
  };
  std::map<std::string, double> worst_lapack, worst_jax, tessel_seconds;
  for (const Size& size : {Size{"1024", 1, 1024, 5, 1}, Size{"4096x8", 4096, 8, 9, 5}}) {
    const Inputs in = make_inputs(size.batch, size.n, 1);
    const ts::Shape shape = size.batch == 1 ? ts::Shape{size.n, size.n} : ts::Shape{size.batch, size.n, size.n};
    const ts::Array spd(in.spd, shape), x(in.x, shape);
    // jnp's (n,) right-hand side for one matrix; n right-hand sides per matrix in the batch.
    const ts::Array rhs = size.batch == 1 ? ts::Array(std::vector<float>(in.x.begin(), in.x.begin() + size.n), {size.n}) : x;
    Lapack scratch(int(size.n));
    for (const Op& op : ops()) {
      auto f = ts::jit([&](const ts::Array& a, const ts::Array& b) { return op.tessel(a, b); });
      const ts::Array& second = op.name == "solve" ? rhs : x;
      auto run_tessel = [&] {
        for (auto& r : f(spd, second)) r.block_until_ready();
      };
      auto run_lapack = [&] {
        for (int64_t b = 0; b < size.batch; ++b) op.lapack(scratch, in, b);
      };
      run_tessel();  // compile
      Figures t;
      for (int r = 0; r < size.rounds; ++r) {
        t.tessel = std::min(t.tessel, tb::seconds_per_call(run_tessel, size.calls, 1));
        tb::with_blas_threads(size.batch == 1 ? threads : 1, [&] {
          t.lapack = std::min(t.lapack, tb::seconds_per_call(run_lapack, size.calls, 1));
        });
      }
      const std::string key = op.name + "_" + size.label;
      tb::report("linalg." + key + "_tessel_ms", t.tessel * 1e3, "ms");
      tb::report("linalg." + key + "_lapack_ms", t.lapack * 1e3, "ms");
      tb::report("linalg." + key + "_vs_lapack", t.lapack / t.tessel, "x");
      worst_lapack[op.name] = std::min(worst_lapack.count(op.name) ? worst_lapack[op.name] : 1e30, t.lapack / t.tessel);
      tessel_seconds[key] = t.tessel;
    }
  }
  if (!jax_command.empty())
    for (auto& [key, s] : tb::run_baseline(jax_command)) jax[key] = jax.count(key) ? std::min(jax[key], s) : s;
  for (auto& [key, t] : tessel_seconds) {
    auto it = jax.find(key);
    if (it == jax.end()) continue;
    const std::string op = key.substr(0, key.find('_'));
    tb::report("linalg." + key + "_jax_ms", it->second * 1e3, "ms");
    tb::report("linalg." + key + "_vs_jax", it->second / t, "x");
    worst_jax[op] = std::min(worst_jax.count(op) ? worst_jax[op] : 1e30, it->second / t);
  }
  for (auto& [name, r] : worst_lapack) tb::report("linalg." + name + "_vs_lapack", r, "x");
  for (auto& [name, r] : worst_jax) tb::report("linalg." + name + "_vs_jax", r, "x");
  report_native_ratios();
  return 0;
}
