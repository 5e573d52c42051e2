#include <tessel/tessel.h>

#include <iostream>

namespace ts = tessel;

int main() {
  auto f = ts::jit([](const ts::Array& x) { return ts::sum(x * 2.0 + 1.0); });
  ts::Array x = ts::arange(4, ts::f32);
  std::cout << x << " -> " << f(x) << "\n";  // [0. 1. 2. 3.] -> 16.0
}
