// The colocated_python seed, cell by cell, in C++ (docs/colocated.md). Alone it runs on the
// embedded default (every device is local); under `mpirun -np 1+W` it runs as the driver of
// a single-controller job and the colocated code runs in the worker processes that own the
// devices, which is why every function and the class are registered by name.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <iostream>
#include <thread>

#include "tessel/tessel.h"

namespace ts = tessel;
namespace co = tessel::colocated;

namespace {

ts::Array add_one(const ts::Array& x) { return x + 1; }

ts::Array write_value(const ts::Array& x) {
  std::ofstream("/tmp/foo") << x.item<int>();
  return x;
}

void write_foo() { std::ofstream("/tmp/foo") << "foo"; }

ts::Array sleep_then_add_one(const ts::Array& x) {
  std::this_thread::sleep_for(std::chrono::seconds(1));
  return x + 1;
}

class Adder {
 public:
  explicit Adder(int increment) : increment_(increment) { std::puts("Adder created"); }
  ~Adder() { std::puts("Adder destroyed"); }
  ts::Array add(const ts::Array& x) { return x + increment_; }

 private:
  int increment_;
};

}  // namespace

TESSEL_REGISTER_COLOCATED(add_one);
TESSEL_REGISTER_COLOCATED(write_value);
TESSEL_REGISTER_COLOCATED(write_foo);
TESSEL_REGISTER_COLOCATED(sleep_then_add_one);
TESSEL_REGISTER_COLOCATED_CLASS(Adder, int);
TESSEL_REGISTER_COLOCATED_METHOD(Adder, add);

int main() {
  ts::distributed::initialize({.mode = ts::distributed::Mode::single_controller});
  // Under mpirun the driver targets the workers' devices; alone, its own.
  std::vector<ts::Device> devices = ts::distributed::worker_devices();
  if (devices.empty()) devices = ts::devices();

  // Colocated CPU devices.
  std::vector<ts::Device> cpu_devices = co::colocated_cpu_devices(devices);
  std::cout << "cpu_devices: [";
  for (size_t i = 0; i < cpu_devices.size(); ++i) std::cout << (i ? ", " : "") << cpu_devices[i];
  std::cout << "]\n";

  ts::Mesh cpu_mesh(cpu_devices, {int64_t(cpu_devices.size())}, {"x"});
  ts::NamedSharding cpu_sharding(cpu_mesh, ts::P());
  ts::Array x = ts::device_put(ts::Array(1), cpu_sharding);
  ts::Array y = ts::jit([](const ts::Array& a) { return a + 1; })(x);
  std::cout << "jit: " << y << "\n";

  // Colocated function.
  auto f = co::colocated(add_one);
  y = f(x);
  if (y.sharding() != x.sharding()) return 1;
  std::cout << "colocated: " << y << "\n";

  // I/O on the hosts of the devices; block on the output to know it happened.
  co::colocated(write_value)(x).block_until_ready();

  // Specialization: out_specs_fn makes calls asynchronous.
  auto g = co::colocated(add_one).specialize({.out_specs_fn = [](const co::Specs& in) { return in; }});
  y = g(x);
  if (y.sharding() != x.sharding()) return 1;

  // in_specs: the inputs must match.
  co::Spec scalar_i32({}, ts::int32, cpu_sharding);
  auto h = co::colocated(add_one).specialize(
      {.in_specs = co::Specs{scalar_i32}, .out_specs_fn = [&](const co::Specs&) { return co::Specs{scalar_i32}; }});
  std::cout << "in_specs: " << h(x) << "\n";

  // devices: a function without inputs.
  co::colocated(write_foo).specialize({.devices = cpu_devices})();

  // Colocated class: created on the first method call, destroyed after the wrapper.
  {
    auto AdderClass = co::colocated_class<Adder>();
    auto adder = AdderClass(1);
    ts::Array one = ts::device_put(ts::Array(1), cpu_sharding);
    ts::Array two = adder.call(&Adder::add, one);
    std::cout << "adder.add: " << two << "\n";
  }  // del adder

  // Calls from two threads run concurrently: two 1-second calls take about 1 second.
  auto slow = co::colocated(sleep_then_add_one).specialize({.out_specs_fn = [](const co::Specs& in) { return in; }});
  auto t0 = std::chrono::steady_clock::now();
  auto fut1 = std::async(std::launch::async, [&] { return slow(x); });
  auto fut2 = std::async(std::launch::async, [&] { return slow(x); });
  ts::Array r1 = fut1.get(), r2 = fut2.get();
  r1.block_until_ready();
  r2.block_until_ready();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("two concurrent 1-second calls: %.1f s\n", seconds);
  std::puts(seconds < 1.8 ? "colocated_python: ok" : "colocated_python: calls did not overlap");
  return seconds < 1.8 ? 0 : 1;
}
