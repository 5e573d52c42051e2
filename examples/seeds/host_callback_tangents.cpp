// The host_callback seed's print_tangents and print_cotangents: host callbacks see only
// primal values under jvp and grad, so to look at tangents (cotangents) one defines an
// identity function whose custom_jvp (custom_vjp backward rule) id_prints them.
// tests/host/seed_examples_test.cpp checks the output.
#include <iostream>
#include <tuple>

#include "tessel/tessel.h"

namespace ts = tessel;
namespace host = tessel::host;

namespace host_callback_tangents {

using Pair = std::tuple<ts::Array, ts::Array>;

void run_print_tangents(std::ostream& out) {
  // The identity, whose jvp prints the tangents (the seed's returns None; here the value
  // is returned and may be ignored).
  auto print_tangents = ts::custom_jvp([](const Pair& arg) { return arg; },
                                       [&out](const std::tuple<Pair>& primals, const std::tuple<Pair>& tangents) {
                                         const Pair& arg_dot = std::get<0>(tangents);
                                         host::id_print(arg_dot, {.what = "tangents", .output_stream = &out});
                                         return std::make_pair(std::get<0>(primals), arg_dot);
                                       });
  auto power3_with_tangents = [&](const ts::Array& x) {
    const ts::Array y = x * x;
    // Print both x and x²: packed as a tuple.
    host::id_print(Pair{x, y}, {.what = "x,x²", .output_stream = &out});
    print_tangents(Pair{x, y});
    return y * x;
  };
  out << "# jvp(power3_with_tangents, (3.,), (0.1,))\n";
  ts::jvp(power3_with_tangents, ts::Array(3.0f), ts::Array(0.1f));
  host::barrier_wait();
}

void run_print_cotangents(std::ostream& out) {
  // Must return the argument for which we want the cotangent (and the caller must use the
  // result): the forward rule keeps no residuals, the backward rule prints the cotangent
  // and passes it on.
  auto print_cotangents = ts::custom_vjp(
      [](const Pair& arg) { return arg; },                                     // f
      [](const Pair& arg) { return std::make_pair(arg, std::tuple<>{}); },     // fwd: a -> (b, residual)
      [&out](const std::tuple<>&, const Pair& ct_b) {                          // bwd: (residual, ct b) -> ct a
        host::id_print(ct_b, {.what = "cotangents", .output_stream = &out});
        return ct_b;
      });
  auto power3_with_cotangents = [&](const ts::Array& x) {
    const ts::Array y = x * x;
    // Print both x and x²: packed as a tuple.
    host::id_print(Pair{x, y}, {.what = "x,x²", .output_stream = &out});
    const auto [x1, y1] = print_cotangents(Pair{x, y});
    // Must use the output of print_cotangents.
    return y1 * x1;
  };
  out << "# grad(power3_with_cotangents)(3.)\n";
  ts::grad(power3_with_cotangents)(ts::Array(3.0f));
  host::barrier_wait();
}

}  // namespace host_callback_tangents

#ifndef TESSEL_SEED_EXAMPLE_NO_MAIN
int main() {
  host_callback_tangents::run_print_tangents(std::cout);
  host_callback_tangents::run_print_cotangents(std::cout);
  return 0;
}
#endif
