// Runs one jitted stencil big enough to fuse and prints how its kernels were obtained:
// "compiles N disk_loads M" plus a checksum. CTest runs it twice on one fresh cache
// directory (the second run must load, not compile), once with TESSEL_DISABLE_CODEGEN=1 and
// once with a compiler that fails (both must print the same checksum, unfused).
#include <cstdio>

#include "compiler/kernel_cache.h"
#include "tessel/tessel.h"

namespace ts = tessel;

int main() {
  const ts::Slice I(1, -1), P(2, ts::none);
  auto f = ts::jit([&](const ts::Array& h, const ts::Array& u) {
    return 0.5f * (h[{I, I}] + h[{I, P}]) * u[{I, I}] + ts::sin(h[{P, I}]);
  });
  ts::Array h = ts::reshape(ts::arange(0.0, 1.0, 1.0 / (300 * 200), ts::f32), {300, 200});
  ts::Array u = ts::cos(h);
  auto out = f(h, u).to_vector<float>();
  double sum = 0;
  for (float v : out) sum += double(v);
  auto st = ts::compiler::codegen_stats();
  std::printf("codegen %s compiles %lld disk_loads %lld checksum %.6f\n",
              ts::compiler::codegen_enabled() ? "on" : "off", (long long)st.compiles, (long long)st.disk_loads, sum);
  return 0;
}
