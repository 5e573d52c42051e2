// The host_callback seed's id_tap examples — a tap of 2x, of a tuple (2x, 3x), with
// tap_with_device, with an extra keyword argument (`what`, captured by a lambda where the
// seed uses functools.partial) and of a dict {x, y} — and their id_print twins, all inside
// one jitted function. tests/host/seed_examples_test.cpp checks the output.
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <tuple>

#include "tessel/tessel.h"

namespace ts = tessel;
namespace host = tessel::host;

namespace host_callback_id_tap {

using Pair = std::tuple<ts::Array, ts::Array>;
using Dict = std::map<std::string, ts::Array>;

std::string describe(const ts::Array& a) { return a.to_string(); }
std::string describe(const Pair& p) { return "(" + std::get<0>(p).to_string() + ", " + std::get<1>(p).to_string() + ")"; }
std::string describe(const Dict& d) {
  std::string s;
  for (const auto& [k, v] : d) s += (s.empty() ? "" : ", ") + k + "=" + v.to_string();
  return "dict(" + s + ")";
}

/// The seed's host_func(arg, transforms, *, device=None, what=None): prints how it was
/// called. It runs on the host, with host copies of the device's values.
template <class T>
void host_func(std::ostream& out, const T& arg, const host::Transforms& transforms,
               const std::optional<ts::Device>& device = std::nullopt, const std::string& what = "") {
  out << "host_func(" << describe(arg) << ", " << host::to_string(transforms);
  if (device) out << ", device=" << *device;
  if (!what.empty()) out << ", what='" << what << "'";
  out << ")\n";
}

void run_id_tap(std::ostream& out) {
  auto device_fun = [&](const ts::Array& x, const ts::Array& y) {
    // calls host_func(2x, []) on the host
    host::id_tap([&](const ts::Array& a, const host::Transforms& t) { host_func(out, a, t); }, 2.0f * x);
    // calls host_func((2x, 3x), []): the argument can be a tree
    host::id_tap([&](const Pair& a, const host::Transforms& t) { host_func(out, a, t); }, Pair{2.0f * x, 3.0f * x});
    // calls host_func(2x, [], device=cpu:0): pass the device to the tap
    host::id_tap([&](const ts::Array& a, const host::Transforms& t, const ts::Device& d) { host_func(out, a, t, d); },
                 2.0f * x, {.tap_with_device = true});
    // calls host_func(2x, [], what='activation'): extra arguments, bound by the lambda
    const std::string what = "activation";
    host::id_tap([&, what](const ts::Array& a, const host::Transforms& t) { host_func(out, a, t, std::nullopt, what); },
                 2.0f * x);
    // calls host_func(dict(x=x, y=y), what='data'): the tap ignores its transforms
    host::id_tap([&](const Dict& a, const host::Transforms&) { host_func(out, a, {}, std::nullopt, "data"); },
                 Dict{{"x", x}, {"y", y}});
    return x;
  };
  out << "# id_tap\n";
  ts::jit(device_fun)(ts::Array({1.0f, 2.0f}), ts::Array({0.5f, -1.0f}));
  host::barrier_wait();
}

/// The same values printed by id_print: a header of `key: value` pairs, then the value.
void run_id_print(std::ostream& out) {
  auto device_fun = [&](const ts::Array& x, const ts::Array& y) {
    host::id_print(2.0f * x, {.output_stream = &out});
    host::id_print(Pair{2.0f * x, 3.0f * x}, {.output_stream = &out});
    host::id_print(2.0f * x, {.output_stream = &out, .tap_with_device = true});
    host::id_print(2.0f * x, {.what = "activation", .output_stream = &out});
    host::id_print(Dict{{"x", x}, {"y", y}}, {.what = "data", .output_stream = &out, .kwargs = {{"step", "1"}}});
    return x;
  };
  out << "# id_print\n";
  ts::jit(device_fun)(ts::Array({1.0f, 2.0f}), ts::Array({0.5f, -1.0f}));
  host::barrier_wait();
}

}  // namespace host_callback_id_tap

#ifndef TESSEL_SEED_EXAMPLE_NO_MAIN
int main() {
  host_callback_id_tap::run_id_tap(std::cout);
  host_callback_id_tap::run_id_print(std::cout);
  return 0;
}
#endif
