// Transcendental element-wise functions (issue 21): nanoseconds per element of tanh, exp, log
// and sin over 16M elements on all cores, as tessel runs them:
//  - math.<fn>_ns_per_element: jit (a generated, fused kernel), float32. Goal: <= 1.0 each.
//  - math.<fn>_f64_ns_per_element: the same in float64.
//  - math.<fn>_unfused_ns_per_element: the eager (unfused) kernel, float32.
// The baseline, measured in the same run: a loop calling glibc's scalar function per element
// (what tessel ran before the vectorised forms) on the same threads,
// math.<fn>_scalar_libm_ns_per_element, and math.<fn>_vs_scalar_libm = baseline / jit. With
// TESSEL_JAX_PYTHON naming a Python with JAX (bench/baselines/jax_math.py),
// math.<fn>_jax_ns_per_element and math.<fn>_vs_jax = JAX / tessel jit.
//
// Usage: bench_math [elements]   (default 16M = 16 * 2^20)
// Exits 1 when a result differs from glibc's by more than the documented bound (a loose check
// here; tests/backend/vector_math_test.cpp checks the ULP).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "backend/cpu/parallel.h"
#include "bench_util.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace tb = tessel::bench;

namespace {

struct Function {
  const char* name;
  ts::Array (*op)(const ts::Array&);
  double (*reference)(double);
  double lo, hi;  // the inputs: uniform in [lo, hi)
};

const Function kFunctions[] = {
    {"tanh", [](const ts::Array& x) { return ts::tanh(x); }, [](double x) { return std::tanh(x); }, -5, 5},
    {"exp", [](const ts::Array& x) { return ts::exp(x); }, [](double x) { return std::exp(x); }, -20, 20},
    {"log", [](const ts::Array& x) { return ts::log(x); }, [](double x) { return std::log(x); }, 1e-3, 1e3},
    {"sin", [](const ts::Array& x) { return ts::sin(x); }, [](double x) { return std::sin(x); }, -100, 100},
};

/// The largest relative difference of `y` from fn.reference over x (a sanity check).
template <class T> double max_relative_error(const Function& fn, const ts::Array& x, const ts::Array& y) {
  const std::vector<T> xs = x.to_vector<T>(), ys = y.to_vector<T>();
  double worst = 0;
  for (size_t i = 0; i < xs.size(); i += 97) {
    const double r = fn.reference(double(xs[i]));
    worst = std::max(worst, std::abs(double(ys[i]) - r) / std::max(std::abs(r), 1e-30));
  }
  return worst;
}

/// Seconds per call of the scalar glibc loop over x on the shared arena.
double scalar_libm_seconds(const Function& fn, const ts::Array& x, int repeats) {
  const std::vector<float> in = x.to_vector<float>();
  std::vector<float> out(in.size());
  const int64_t n = int64_t(in.size()), grain = std::max<int64_t>(1 << 16, n / (8 * ts::cpu::num_threads()));
  float (*f)(float) = fn.name == std::string("tanh") ? tanhf
                      : fn.name == std::string("exp") ? expf
                      : fn.name == std::string("log") ? logf
                                                      : sinf;
  return tb::seconds_per_call(
      [&] {
        ts::cpu::parallel_for(n, grain, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) out[size_t(i)] = f(in[size_t(i)]);
        });
      },
      1, repeats);
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : int64_t(16) << 20;
  const int repeats = 7;
  std::printf("# math: %lld elements, %d threads, best of %d runs\n", static_cast<long long>(n), ts::cpu::num_threads(),
              repeats);
  std::map<std::string, double> jax;
  if (const char* py = std::getenv("TESSEL_JAX_PYTHON"); py && *py)
    jax = tb::run_baseline(tb::shell_quote(py) + " " + tb::shell_quote(TESSEL_SOURCE_DIR "/bench/baselines/jax_math.py") +
                           " " + std::to_string(n) + " " + std::to_string(repeats));

  bool ok = true;
  const ts::Array key = ts::random::key(0);
  for (const Function& fn : kFunctions) {
    const std::string prefix = std::string("math.") + fn.name;
    for (ts::DType dtype : {ts::f32, ts::f64}) {
      const ts::Array x = ts::random::uniform(key, {n}, dtype, fn.lo, fn.hi);
      x.block_until_ready();
      auto jitted = ts::jit([&fn](const ts::Array& a) { return fn.op(a); });
      const ts::Array y = jitted(x);
      const double err = dtype == ts::f32 ? max_relative_error<float>(fn, x, y) : max_relative_error<double>(fn, x, y);
      if (err > (dtype == ts::f32 ? 1e-6 : 1e-14)) {
        std::fprintf(stderr, "bench_math: jit %s (%s) is off glibc by %g (relative)\n", fn.name,
                     dtype == ts::f32 ? "float32" : "float64", err);
        ok = false;
      }
      const double t_jit = tb::seconds_per_call([&] { jitted(x).block_until_ready(); }, 1, repeats);
      const std::string suffix = dtype == ts::f32 ? "" : "_f64";
      tb::report(prefix + suffix + "_ns_per_element", t_jit / double(n) * 1e9, "ns");
      if (dtype != ts::f32) continue;
      const double t_unfused = tb::seconds_per_call([&] { fn.op(x).block_until_ready(); }, 1, repeats);
      tb::report(prefix + "_unfused_ns_per_element", t_unfused / double(n) * 1e9, "ns");
      const double t_scalar = scalar_libm_seconds(fn, x, repeats);
      tb::report(prefix + "_scalar_libm_ns_per_element", t_scalar / double(n) * 1e9, "ns");
      tb::report(prefix + "_vs_scalar_libm", t_scalar / t_jit, "x");
      if (auto it = jax.find(std::string("jax_") + fn.name + "_s"); it != jax.end()) {
        tb::report(prefix + "_jax_ns_per_element", it->second / double(n) * 1e9, "ns");
        tb::report(prefix + "_vs_jax", it->second / t_jit, "x");
      }
    }
  }
  return ok ? 0 : 1;
}
