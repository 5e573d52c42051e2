// The host_callback seed's barrier_wait examples: two jitted computations that each tap x
// and 2x into an accumulator — after barrier_wait it holds the four values, in order — and
// the variant with call instead of id_tap, where waiting for the results is enough
// (block_until_ready). tests/host/seed_examples_test.cpp checks the output.
#include <iostream>
#include <vector>

#include "tessel/tessel.h"

namespace ts = tessel;
namespace host = tessel::host;

namespace host_callback_barrier {

void print_accumulator(std::ostream& out, const std::vector<ts::Array>& accumulator) {
  out << "accumulator:";
  for (const ts::Array& a : accumulator) out << ' ' << a;
  out << "\n";
}

void run_barrier_wait(std::ostream& out) {
  std::vector<ts::Array> accumulator;
  // We just record the arguments in a list (one device: its taps run one after the other).
  auto host_log = [&](const ts::Array& arg, const host::Transforms&) { accumulator.push_back(arg); };
  auto device_fun = [&](const ts::Array& x) {
    host::id_tap(host_log, x);
    host::id_tap(host_log, 2.0f * x);
    return x;
  };
  ts::jit(device_fun)(ts::Array(1.0f));
  ts::jit(device_fun)(ts::Array(1.0f));
  // At this point, we have started two computations, each with two taps, but they may not
  // have run yet.
  host::barrier_wait();
  // Now every computation started before barrier_wait, on all devices, has finished, and
  // all its callbacks have run.
  out << "# after barrier_wait\n";
  print_accumulator(out, accumulator);
}

void run_call_and_block(std::ostream& out) {
  std::vector<ts::Array> accumulator;
  auto host_log = [&](const ts::Array& arg) {
    accumulator.push_back(arg);
    return ts::Array(0.0f);  // return something
  };
  auto device_fun = [&](const ts::Array& x) {
    const ts::ShapeDtype scalar({}, ts::f32);
    ts::Array y = host::call(host_log, x, {.result_shape = scalar, .name = "host_log"});
    ts::Array z = host::call(host_log, 2.0f * x, {.result_shape = scalar, .name = "host_log"});
    return y + z;  // return something that uses both results
  };
  ts::Array res1 = ts::jit(device_fun)(ts::Array(1.0f));
  ts::Array res2 = ts::jit(device_fun)(ts::Array(1.0f));
  res1.block_until_ready();
  res2.block_until_ready();
  out << "# after res1.block_until_ready(), res2.block_until_ready()\n";
  print_accumulator(out, accumulator);
}

}  // namespace host_callback_barrier

#ifndef TESSEL_SEED_EXAMPLE_NO_MAIN
int main() {
  host_callback_barrier::run_barrier_wait(std::cout);
  host_callback_barrier::run_call_and_block(std::cout);
  return 0;
}
#endif
