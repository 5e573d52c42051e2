// Per-step overheads of a small jitted time step (issue 21, "small problems"): the demo's
// shallow-water step at 360x180 float32 dispatched once per step, as the demo runs it, with
// and without the demo's progress id_tap, and the same step run inside one jitted
// fori_loop (no dispatch and no thread hand-off between steps).
//   step_overhead.dispatched_us        one jit call per step (donated state), no host callback
//   step_overhead.dispatched_tap_us    the same with the demo's progress id_tap in the step
//   step_overhead.tap_us               dispatched_tap_us - dispatched_us: what the callback
//                                      (and the launch of a program that has one) adds per step
//   step_overhead.looped_us            one step of a fori_loop of 10 steps inside one jit call
//   step_overhead.looped_vs_dispatched looped_us / dispatched_us (a loop inside jit should
//                                      never be slower than dispatching its body: <= 1)
//   step_overhead.allocations_per_step buffers the caching allocator could not serve, per
//                                      dispatched step (after warm-up: 0 when memory is reused)
//   step_overhead.shared_split_share   of the dispatched steps' parallel_for calls that split,
//                                      the share in which another thread than the caller ran
//                                      a chunk (1 when the second thread is never late)
// Each figure is the fastest of many windows of 10 steps (see us_per_step): the same number
// of steps per window in every mode, since on a shared machine the fastest of short windows
// is lower than the fastest of long ones.
// Usage: bench_step_overhead [--nx 360] [--ny 180] [--windows 100]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "backend/cpu/parallel.h"
#include "backend/cpu/parallel_counts.h"
#include "bench_util.h"
#include "core/buffer.h"
#include "shallow_water.h"

namespace ts = tessel;
namespace tb = tessel::bench;
namespace sw = shallow_water;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

constexpr int kWindow = 10;  // steps between waits, as in the demo

void block(const sw::State& s) {
  for (const ts::Array& a : ts::tree_leaves(s)) a.block_until_ready();
}

// Microseconds per step of `call` (state -> state, `steps_per_call` steps): the fastest of
// `windows` windows of 10 steps, each from a ready state to a ready state, as the demo waits
// every 10 steps. The fastest window is the one no other process interrupted: on a shared
// machine it is the figure that holds still.
template <class Call> double us_per_step(const Call& call, sw::State state, int windows, int steps_per_call = 1) {
  double best = 1e30;
  for (int w = 0; w < windows; ++w) {
    block(state);
    const auto t0 = std::chrono::steady_clock::now();
    for (int k = 0; k < kWindow / steps_per_call; ++k) state = call(state);
    block(state);
    best = std::min(best, 1e6 * seconds_since(t0) / kWindow);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t nx = 360, ny = 180;
  int windows = 100;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--nx")) nx = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--ny")) ny = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--windows")) windows = std::atoi(argv[i + 1]);
  }
  std::printf("# step_overhead: %lldx%lld float32, fastest of %d windows of %d steps, %d threads\n", (long long)nx,
              (long long)ny, windows, kWindow, ts::cpu::num_threads());
  const sw::ShallowWater model({.nx = nx, .ny = ny, .dtype = ts::f32});

  auto plain = ts::jit([model](const sw::State& s) { return model.step(s, false); }, {.donate_argnums = {0}});
  auto tapped = ts::jit(
      [model](const sw::State& s, const ts::Array& k) {
        ts::host::id_tap([](const ts::Array&, const ts::host::Transforms&) {}, k, {.name = "progress"});
        return model.step(s, false);
      },
      {.donate_argnums = {0}});
  auto looped = ts::jit([model](const sw::State& s) {
    return ts::fori_loop(0, kWindow, [&](const ts::Array&, const sw::State& c) { return model.step(c, false); }, s);
  });

  const sw::State start = model.step(model.initial_state(), true);
  block(start);
  auto copy = [](const sw::State& s) {  // donation consumes the state it is given
    auto c = [](const ts::Array& a) { return a + 0.0f; };
    return sw::State{c(s.h), c(s.u), c(s.v), c(s.dh), c(s.du), c(s.dv)};
  };

  // Warm up (compile), then time.
  block(plain(copy(start)));
  block(tapped(copy(start), ts::Array(int32_t(0))));
  block(looped(start));
  const auto stats0 = ts::detail::allocator_stats();
  const ts::cpu::ParallelForCounts split0 = ts::cpu::parallel_for_counts();
  const double dispatched = us_per_step([&](const sw::State& s) { return plain(s); }, copy(start), windows);
  const ts::cpu::ParallelForCounts split1 = ts::cpu::parallel_for_counts();
  const auto stats1 = ts::detail::allocator_stats();
  const ts::Array k(int32_t(0));
  const double dispatched_tap = us_per_step([&](const sw::State& s) { return tapped(s, k); }, copy(start), windows);
  // One call runs a window's steps.
  const double looped_us = us_per_step([&](const sw::State& s) { return looped(s); }, start, windows, kWindow);
  tb::report("step_overhead.dispatched_us", dispatched, "us");
  tb::report("step_overhead.dispatched_tap_us", dispatched_tap, "us");
  tb::report("step_overhead.looped_us", looped_us, "us");
  tb::report("step_overhead.looped_vs_dispatched", looped_us / dispatched, "x");
  tb::report("step_overhead.tap_us", dispatched_tap - dispatched, "us");
  tb::report("step_overhead.allocations_per_step",
             double(stats1.misses - stats0.misses) / double(windows * kWindow), "");
  if (split1.split > split0.split)
    tb::report("step_overhead.shared_split_share",
               double(split1.shared - split0.shared) / double(split1.split - split0.split), "");
  return 0;
}
