// An A/B of two compilations of the demo's shallow-water step in one process, for decisions
// about the compiler's schedules on a loaded machine (issue 21). Wall times of separate
// processes at load average 10-18 on the 2-core development VM spread by 2x; two jitted
// steps compiled under two values of one environment variable read at compilation
// (TESSEL_FUSION_STREAM_INPLACE, TESSEL_FUSION_MAX_POINT_COST, ...) and run in alternating
// rounds of the same process see the same load, so their CPU time per step (process CPU
// time, which a waiting thread does not add to) compares, by median and minimum over rounds.
//
// Usage: shallow_water_ab VAR A B [--rounds 30] [--steps 10] [--nx 1800] [--ny 900]
//                               [--dtype float32|float64] [--shard 1|2]
//   A, B: the variable's two values; `-` leaves it unset. The state is donated, as in the
//   demo; TESSEL_NUM_THREADS sets the threads. Both steps start from the same state and run
//   the same steps, so the final height fields must agree: `max_abs_diff_h` prints their
//   largest difference (0 when the two schedules give the same bits). `--shard 2` runs both
//   steps as bench_sharding's 2-device side does (`shallow_water --shard 2`: every field's
//   rows split over 2 virtual devices of one thread each; TESSEL_CPU_DEVICES=2 and
//   TESSEL_NUM_THREADS=1 are set), so the process CPU time is both devices' together.
// Prints `name value unit` lines: shallow_water_ab.{a,b}_cpu_ms_per_step (median),
// .{a,b}_cpu_ms_per_step_min, .{a,b}_cpu_ns_per_cell, .b_over_a_cpu (medians), .max_abs_diff_h.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "shallow_water.h"

namespace sw = shallow_water;

namespace {

double process_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e3 + double(t.tv_nsec) / 1e6;
}

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "shallow_water_ab: %s\nusage: shallow_water_ab VAR A B [--rounds N] [--steps N] [--nx N] "
               "[--ny N] [--dtype float32|float64] [--shard 1|2]   (A or B `-`: unset)\n",
               why.c_str());
  std::exit(2);
}

void set_variable(const char* var, const std::string& value) {
  if (value == "-") unsetenv(var);
  else setenv(var, value.c_str(), 1);
}

void block(const sw::State& s) {
  for (const tessel::Array& a : tessel::tree_leaves(s)) a.block_until_ready();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) usage("needs a variable and two values");
  const char* var = argv[1];
  const std::string value_a = argv[2], value_b = argv[3];
  int rounds = 30, steps = 10, shard = 1;
  sw::Config config{.nx = 1800, .ny = 900, .dtype = tessel::f32};
  for (int k = 4; k < argc; k += 2) {
    const std::string opt = argv[k];
    if (k + 1 >= argc) usage(opt + " needs a value");
    const std::string v = argv[k + 1];
    if (opt == "--rounds") rounds = std::atoi(v.c_str());
    else if (opt == "--steps") steps = std::atoi(v.c_str());
    else if (opt == "--nx") config.nx = std::atoll(v.c_str());
    else if (opt == "--ny") config.ny = std::atoll(v.c_str());
    else if (opt == "--shard") shard = std::atoi(v.c_str());
    else if (opt == "--dtype") {
      if (v != "float32" && v != "float64") usage("--dtype must be float32 or float64, got '" + v + "'");
      config.dtype = v == "float64" ? tessel::f64 : tessel::f32;
    } else usage("unknown option " + opt);
  }
  if (rounds < 1 || steps < 1) usage("--rounds and --steps must be at least 1");
  if (shard != 1 && shard != 2) usage("--shard must be 1 or 2");
  if (shard == 2) {  // before tessel reads them, as bench_sharding sets them
    setenv("TESSEL_CPU_DEVICES", "2", 1);
    setenv("TESSEL_NUM_THREADS", "1", 1);
  }

  const sw::ShallowWater model(config);
  std::vector<std::optional<tessel::Sharding>> out_shardings;
  if (shard == 2) out_shardings = {tessel::NamedSharding(tessel::make_mesh({2}, {"y"}), tessel::P("y", tessel::none))};
  auto make_step = [&model, &out_shardings] {
    return tessel::jit([&model](const sw::State& s, bool first) { return model.step(s, first); },
                       {.static_argnums = {1}, .donate_argnums = {0}, .name = "shallow_water_step",
                        .out_shardings = out_shardings});
  };
  auto step_a = make_step(), step_b = make_step();
  // Each jit object compiles both of its programs (first step, Adams-Bashforth) on its first
  // calls, under its value of the variable.
  auto first_steps = [&](auto& step, const std::string& value) {
    set_variable(var, value);
    // With --shard 2 the first step's outputs are split (out_shardings), so the
    // Adams-Bashforth steps get split fields, as bench_sharding's 2-device side does.
    sw::State s = step(step(model.initial_state(), true), false);
    block(s);
    return s;
  };
  sw::State state_a = first_steps(step_a, value_a), state_b = first_steps(step_b, value_b);

  std::vector<double> cpu_a, cpu_b, wall_a, wall_b;
  auto round = [&](auto& step, sw::State& s, std::vector<double>& cpu, std::vector<double>& wall) {
    const double c0 = process_cpu_ms();
    const auto w0 = std::chrono::steady_clock::now();
    for (int k = 0; k < steps; ++k) s = step(s, false);
    block(s);
    cpu.push_back((process_cpu_ms() - c0) / steps);
    wall.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - w0).count() / steps);
  };
  for (int r = 0; r < rounds; ++r) {
    round(step_a, state_a, cpu_a, wall_a);
    round(step_b, state_b, cpu_b, wall_b);
  }

  const std::vector<double> h_a = sw::interior(state_a.h).astype(tessel::f64).to_vector<double>();
  const std::vector<double> h_b = sw::interior(state_b.h).astype(tessel::f64).to_vector<double>();
  double diff = 0;
  for (size_t i = 0; i < h_a.size(); ++i) {
    const double d = std::abs(h_a[i] - h_b[i]);
    if (!(d <= diff)) diff = d;  // NaN propagates as the largest difference
  }
  const double cells = double(config.nx) * double(config.ny);
  std::printf("# %s=%s (a) against %s=%s (b): %lld x %lld %s on %d device(s), %d rounds of %d steps each, alternating\n",
              var, value_a.c_str(), var, value_b.c_str(), static_cast<long long>(config.nx),
              static_cast<long long>(config.ny), tessel::dtype_name(config.dtype), shard, rounds, steps);
  // Wall time: only meaningful when the process has its cores (a quiet machine).
  std::printf("shallow_water_ab.a_wall_ms_per_step %.4f ms\n", median(wall_a));
  std::printf("shallow_water_ab.b_wall_ms_per_step %.4f ms\n", median(wall_b));
  for (const auto& [name, cpu] : {std::pair{"a", &cpu_a}, std::pair{"b", &cpu_b}}) {
    std::printf("shallow_water_ab.%s_cpu_ms_per_step %.4f ms\n", name, median(*cpu));
    std::printf("shallow_water_ab.%s_cpu_ms_per_step_min %.4f ms\n", name, *std::min_element(cpu->begin(), cpu->end()));
    std::printf("shallow_water_ab.%s_cpu_ns_per_cell %.3f ns\n", name, median(*cpu) * 1e6 / cells);
  }
  std::printf("shallow_water_ab.b_over_a_cpu %.4f ratio\n", median(cpu_b) / median(cpu_a));
  std::printf("shallow_water_ab.max_abs_diff_h %.3g m\n", diff);
  return 0;
}
