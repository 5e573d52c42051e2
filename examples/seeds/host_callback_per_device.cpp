// The host_callback seed's "behaviour under parallelization" example: power3 mapped over
// two devices (the seed's jax.pmap; here shard_map, each device taking one element as a
// scalar), id_print with tap_with_device — each device prints its own values:
//   device: cpu:0 what: x,x²      device: cpu:1 what: x,x²
//   ( 3. 9. )                     ( 4. 16. )
// in arbitrary order. Then the seed's pjit example: under a jit whose input is sharded over
// the two devices, the operand is gathered whole to the mesh's first device, which makes the
// one call: `device: cpu:0 what: x,x²` / `( [3. 4.] [ 9. 16.] )`.
// Run with TESSEL_CPU_DEVICES=2 or more.
// tests/host/seed_examples_test.cpp checks the output.
#include <iostream>
#include <tuple>

#include "tessel/tessel.h"

namespace ts = tessel;
namespace host = tessel::host;

namespace host_callback_per_device {

void run_per_device(std::ostream& out) {
  auto power3 = [&](const ts::Array& x) {
    const ts::Array y = x * x;
    // Print both x and x², and which device sends them.
    host::id_print(std::tuple{x, y}, {.what = "x,x²", .output_stream = &out, .tap_with_device = true});
    return y * x;
  };
  // pmap over the first two devices: shard_map over a mesh of two, each device's (1,)
  // piece taken as a scalar.
  const ts::Mesh mesh = ts::make_mesh({2}, {"i"});
  auto per_device = [&](const ts::Array& piece) { return power3(piece.reshape({})).reshape({1}); };
  const ts::Array result = ts::shard_map(per_device, mesh, {ts::P("i")}, {ts::P("i")})(ts::Array({3.0f, 4.0f}));
  host::barrier_wait();
  out << "# result\n" << result << "\n";
}

void run_sharded_jit(std::ostream& out) {
  auto power3 = [&](const ts::Array& x) {
    const ts::Array y = x * x;
    host::id_print(std::tuple{x, y}, {.what = "x,x²", .output_stream = &out, .tap_with_device = true});
    return y * x;
  };
  // pjit(power3, in_shardings=(P("d"),), out_shardings=(P("d"),)) on a mesh of two devices.
  const ts::Mesh mesh = ts::make_mesh({2}, {"d"});
  const ts::NamedSharding split(mesh, ts::P("d"));
  out << "# jit(power3) with its input and output split over 2 devices\n";
  const ts::Array result = ts::jit(power3, {.in_shardings = {split}, .out_shardings = {split}})(ts::Array({3.0f, 4.0f}));
  host::barrier_wait();
  out << "# result\n" << result << "\n";
}

}  // namespace host_callback_per_device

#ifndef TESSEL_SEED_EXAMPLE_NO_MAIN
int main() {
  host_callback_per_device::run_per_device(std::cout);
  host_callback_per_device::run_sharded_jit(std::cout);
  return 0;
}
#endif
