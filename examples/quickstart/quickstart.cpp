// The README's first example: a gradient-descent fit compiled by jit, run with the batch split
// over every device. Its text is copied into README.md; the test `quickstart` runs it.
#include <iostream>
#include <tessel/tessel.h>
namespace ts = tessel;

int main() {
  using A = const ts::Array&;
  auto loss = [](A w, A x, A y) { return ts::mean(ts::square(ts::tanh(ts::matmul(x, w)) - y)); };
  auto step = ts::jit([&](A w, A x, A y) { return w - 0.5f * ts::grad(loss)(w, x, y); });
  ts::Mesh mesh = ts::make_mesh({int64_t(ts::devices().size())}, {"batch"});  // TESSEL_CPU_DEVICES=N
  ts::Array x = ts::device_put(ts::random::normal(ts::random::key(0), {64, 8}), ts::NamedSharding(mesh, ts::P("batch")));
  ts::Array y = ts::tanh(ts::matmul(x, ts::full({8, 2}, 0.3f)));  // targets from known weights
  ts::Array w = ts::zeros({8, 2});
  for (int i = 0; i < 200; ++i) w = step(w, x, y);
  std::cout << "loss " << loss(w, x, y) << ", mean(w) " << ts::mean(w) << "\n";  // -> 0.3
  std::cout << ts::make_program(ts::grad(loss), w, x, y);              // the traced gradient
}
