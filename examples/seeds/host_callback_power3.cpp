// The host_callback seed's power3 examples: id_print of (x, x²) under plain evaluation,
// jvp, grad, checkpoint and vmap, and the print_tangents / print_cotangents helpers that
// tap tangents and cotangents through custom_jvp / custom_vjp. Prints what the seed's
// comments show, in id_print's format (a header line, then the value).
#include <iostream>
#include <tuple>

#include "tessel/tessel.h"

namespace ts = tessel;
namespace host = tessel::host;

namespace {

ts::Array power3(const ts::Array& x) {
  const ts::Array y = x * x;
  // Print both x and x²: packed as a tuple.
  host::id_print(std::tuple{x, y}, {.what = "x,x²"});
  return y * x;
}

}  // namespace

int main() {
  const ts::Array three(3.0f);
  std::cout << "# power3(3.)\n";
  power3(three);
  host::barrier_wait();

  std::cout << "# jvp(power3, (3.,), (0.1,))\n";
  ts::jvp(power3, three, ts::Array(0.1f));
  host::barrier_wait();

  std::cout << "# grad(power3)(3.)\n";
  ts::grad(power3)(three);
  host::barrier_wait();

  std::cout << "# grad(lambda x: power3(checkpoint(power3)(x)))(3.)\n";
  ts::grad([](const ts::Array& x) { return power3(ts::checkpoint(power3)(x)); })(three);
  host::barrier_wait();

  std::cout << "# vmap(power3)(np.array([2., 3.]))\n";
  ts::vmap(power3)(ts::Array(std::vector<float>{2.0f, 3.0f}));
  host::barrier_wait();

  std::cout << "# jit(power3)(3.)\n";
  ts::jit(power3)(three);
  host::barrier_wait();
  return 0;
}
