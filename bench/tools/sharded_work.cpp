// The work of bench_sharding's loops per device, for counting instructions (which the load
// of a shared machine does not change) instead of timing them:
//
//   sharded_work <case> <devices> <calls>
//
// runs one warm-up call of <case> (`stencil`: the 100-step stencil loop on 2048 x 2048
// float32; `shallow_water`: one step of the demo's model at 1800 x 900 float32) on 1 or 2
// devices (rows split, as bench_sharding does), then <calls> more. Under
//   valgrind --tool=callgrind --separate-threads=yes sharded_work stencil 2 3
// each device's stream thread gets its own profile; the difference of two runs with
// different <calls>, divided by the difference of <calls>, is one call's instructions per
// device, without compilation and warm-up (docs/sharding.md, "Where the devices' work
// goes"). Generated kernels use the machine's vector instructions; valgrind does not run
// AVX-512, so build them without it: TESSEL_CXX=<a script running `c++ "$@" -mno-avx512f`>
// with a TESSEL_CACHE_DIR of its own.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "shallow_water.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace sw = shallow_water;

namespace {

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr, "sharded_work: %s\nusage: sharded_work stencil|shallow_water 1|2 <calls>\n", why.c_str());
  std::exit(2);
}

std::vector<float> values(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = float(i % 1000) * 1e-3f;
  return v;
}

void stencil_loop(int devices, int calls) {
  const int64_t n = 2048;
  auto fn = [](const ts::Array& u0) {
    return ts::fori_loop(0, 100, [](const ts::Array&, const ts::Array& u) {
      return u * 0.5f + ts::roll(u, -1, 0) * 0.25f + ts::roll(u, 1, 1) * 0.25f;
    }, u0);
  };
  ts::Array u = ts::device_put(ts::Array(values(size_t(n * n)), {n, n}), ts::devices()[0]);
  ts::JitOptions opts;
  if (devices == 2) {
    const ts::NamedSharding rows(ts::make_mesh({2}, {"x"}), ts::P("x", ts::none));
    opts.in_shardings = {rows};
    u = ts::device_put(u, rows);
  }
  auto f = ts::jit(fn, opts);
  for (int k = 0; k <= calls; ++k) f(u).block_until_ready();
}

void shallow_water_step(int devices, int calls) {
  const sw::ShallowWater model({.nx = 1800, .ny = 900, .dtype = ts::f32});
  const ts::NamedSharding rows(ts::make_mesh({2}, {"y"}), ts::P("y", ts::none));
  auto fn = [model](const sw::State& s, bool first) { return model.step(s, first); };
  ts::JitOptions opts{.static_argnums = {1}};
  if (devices == 2) opts.out_shardings = {rows};
  auto step = ts::jit(fn, opts);
  sw::State s = step(model.initial_state(), true);
  if (devices == 2)
    for (ts::Array* f : {&s.h, &s.u, &s.v, &s.dh, &s.du, &s.dv}) *f = ts::device_put(*f, rows);
  for (int k = 0; k <= calls; ++k) {
    s = step(s, false);
    s.h.block_until_ready();  // one step in flight: each call allocates as a timed round does
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) usage("expected 3 arguments");
  // Before tessel reads them: two devices of one core each, as bench_sharding runs.
  setenv("TESSEL_CPU_DEVICES", "2", 1);
  setenv("TESSEL_NUM_THREADS", "1", 1);
  const std::string what = argv[1];
  const int devices = std::atoi(argv[2]), calls = std::atoi(argv[3]);
  if (devices != 1 && devices != 2) usage("devices must be 1 or 2, got " + std::string(argv[2]));
  if (calls < 0) usage("calls must be 0 or more, got " + std::string(argv[3]));
  if (what == "stencil") stencil_loop(devices, calls);
  else if (what == "shallow_water") shallow_water_step(devices, calls);
  else usage("unknown case '" + what + "'");
  std::printf("sharded_work: %s on %d device(s): 1 + %d calls\n", what.c_str(), devices, calls);
  return 0;
}
