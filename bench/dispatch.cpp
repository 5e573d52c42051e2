// Dispatch overhead: eager element-wise ops and calls of cached jitted functions on tiny
// inputs, against NumPy's per-call overhead measured in the same run.
#include <string>

#include "bench_util.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace tb = tessel::bench;

int main() {
  ts::Array a(std::vector<float>{1.0f});
  ts::Array b(std::vector<float>{2.0f});
  ts::Array c(std::vector<float>{3.0f});
  const int n = 100000;

  ts::Array last;
  double eager = tb::seconds_per_call([&] { last = ts::add(a, b); }, n);
  last.block_until_ready();
  tb::report("dispatch.eager_add_us", eager * 1e6, "us");

  auto f = ts::jit([](const ts::Array& x, const ts::Array& y, const ts::Array& z) { return x * y + z; });
  f(a, b, c).block_until_ready();  // compile
  double jitted = tb::seconds_per_call([&] { last = f(a, b, c); }, n);
  last.block_until_ready();
  tb::report("dispatch.jit_call_us", jitted * 1e6, "us");

  auto base = tb::run_python_baseline(std::string(TESSEL_SOURCE_DIR) + "/bench/baselines/dispatch_numpy.py");
  if (base.count("numpy.add_us")) {
    tb::report("dispatch.numpy_add_us", base["numpy.add_us"], "us");
    tb::report("dispatch.eager_add_vs_numpy", eager * 1e6 / base["numpy.add_us"], "x");
  }
  if (base.count("numpy.fn3_us")) {
    tb::report("dispatch.numpy_fn3_us", base["numpy.fn3_us"], "us");
    tb::report("dispatch.jit_call_vs_numpy_fn3", jitted * 1e6 / base["numpy.fn3_us"], "x");
  }
  return 0;
}
