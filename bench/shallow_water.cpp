// The shallow-water model of the demo, jitted, against the NumPy baseline measured in the
// same run (issue 4 adds the hand-written C++ baseline and the speed goals).
// Usage: bench_shallow_water [nx ny steps]   (default 1800 900 200, as the issue specifies)
#include <chrono>
#include <cstdlib>
#include <string>

#include "bench_util.h"
#include "shallow_water.h"

namespace tb = tessel::bench;
namespace sw = shallow_water;

int main(int argc, char** argv) {
  const int64_t nx = argc > 1 ? std::atoll(argv[1]) : 1800;
  const int64_t ny = argc > 2 ? std::atoll(argv[2]) : 900;
  const int steps = argc > 3 ? std::atoi(argv[3]) : 200;
  sw::ShallowWater model({.nx = nx, .ny = ny, .dtype = tessel::f32});
  auto step = tessel::jit([&model](const sw::State& s, bool first) { return model.step(s, first); },
                          {.static_argnums = {1}, .name = "shallow_water_step"});
  sw::State state = step(model.initial_state(), true);
  state = step(state, false);  // compile both signatures before timing
  state.h.block_until_ready();
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) {
    state = step(state, false);
    if (i % 10 == 9) state.h.block_until_ready();  // bound run-ahead, as the demo does
  }
  state.h.block_until_ready();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string grid = std::to_string(nx) + "x" + std::to_string(ny);
  tb::report("shallow_water.tessel_ms_per_step", 1e3 * seconds / steps, "ms");

  auto base = tb::run_python_baseline(std::string(TESSEL_SOURCE_DIR) + "/bench/baselines/shallow_water_numpy.py --nx " +
                                      std::to_string(nx) + " --ny " + std::to_string(ny) + " --steps " +
                                      std::to_string(steps) + " --dtype float32");
  if (base.count("ms_per_step")) {
    tb::report("shallow_water.numpy_ms_per_step", base["ms_per_step"], "ms");
    tb::report("shallow_water.speedup_vs_numpy", base["ms_per_step"] / (1e3 * seconds / steps), "x");
  }
  return 0;
}
