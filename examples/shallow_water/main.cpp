// shallow_water: runs the shallow-water model of the mpi4jax paper on one process with a
// jitted time step, then saves the surface height (.npy) and a picture of it (.png).
//
//   shallow_water --nx 360 --ny 180 --steps 1000 --dtype float32 --out h.npy --png h.png
//
// Prints progress lines, `compile_seconds <t>` (tracing and compiling the two step
// variants) and `seconds <t>` (the time-stepping loop alone).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "npy.h"
#include "plot.h"
#include "shallow_water.h"

namespace sw = shallow_water;
namespace ts = tessel;

namespace {

struct Options {
  int64_t nx = 360, ny = 180, steps = 1000;
  ts::DType dtype = ts::f32;
  std::string out, png;
  double eta_range = 10.0;  // PLOT_ETA_RANGE of the original; <= 0 is automatic
  bool use_jit = true;
};

[[noreturn]] void usage(const std::string& error) {
  std::fprintf(stderr,
               "%s\nusage: shallow_water [--nx NX] [--ny NY] [--steps N] [--dtype float32|float64]\n"
               "                     [--out FILE.npy] [--png FILE.png] [--eta-range M (0: auto)] [--no-jit]\n",
               error.c_str());
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage("missing value after " + a);
      return argv[++i];
    };
    auto integer = [&](int64_t min) {
      const std::string v = value();
      char* end = nullptr;
      const long long n = std::strtoll(v.c_str(), &end, 10);
      if (*end != '\0' || n < min) usage(a + " needs an integer >= " + std::to_string(min) + ", got '" + v + "'");
      return int64_t(n);
    };
    if (a == "--nx") o.nx = integer(2);
    else if (a == "--ny") o.ny = integer(2);
    else if (a == "--steps") o.steps = integer(1);
    else if (a == "--out") o.out = value();
    else if (a == "--png") o.png = value();
    else if (a == "--eta-range") o.eta_range = std::atof(value().c_str());
    else if (a == "--no-jit") o.use_jit = false;
    else if (a == "--dtype") {
      const std::string d = value();
      if (d == "float32") o.dtype = ts::f32;
      else if (d == "float64") o.dtype = ts::f64;
      else usage("--dtype must be float32 or float64, got '" + d + "'");
    } else if (a == "-h" || a == "--help") {
      usage("shallow_water: the mpi4jax paper's shallow-water demo");
    } else {
      usage("unknown argument '" + a + "'");
    }
  }
  return o;
}

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::vector<double> host(const ts::Array& a) { return a.to_vector<double>(); }

}  // namespace

int main(int argc, char** argv) try {
  const Options opt = parse(argc, argv);
  const sw::ShallowWater model({.nx = opt.nx, .ny = opt.ny, .dtype = opt.dtype});
  const double dt = sw::ShallowWater::dt();
  std::printf("shallow_water: %lld x %lld interior cells, %s, dt = %.3f s, %lld steps (%.2f model days), %s\n",
              (long long)opt.nx, (long long)opt.ny, ts::dtype_name(opt.dtype), dt, (long long)opt.steps,
              double(opt.steps) * dt / sw::kDayInSeconds, opt.use_jit ? "jit" : "eager");

  sw::State state = model.initial_state();
  state.h.block_until_ready();

  auto step_fn = [model](const sw::State& s, bool first_step) { return model.step(s, first_step); };
  auto jitted = ts::jit(step_fn, {.static_argnums = {1}});
  auto step = [&](const sw::State& s, bool first) { return opt.use_jit ? jitted(s, first) : step_fn(s, first); };

  // Trace and compile both variants (first step and Adams-Bashforth) before timing.
  auto t0 = std::chrono::steady_clock::now();
  if (opt.use_jit) {
    jitted.lower(state, true);
    jitted.lower(state, false);
  }
  std::printf("compile_seconds %.4f\n", since(t0));

  const int64_t report_every = std::max<int64_t>(1, opt.steps / 10);
  t0 = std::chrono::steady_clock::now();
  // Wait for h every 10 steps, as the original does after each 10-step multistep call. Eager
  // steps wait every step: each dispatches ~300 ops, and outputs are allocated at dispatch,
  // so running far ahead of the device stream would hold hundreds of megabytes.
  const int64_t sync_every = opt.use_jit ? 10 : 1;
  for (int64_t k = 0; k < opt.steps; ++k) {
    state = step(state, k == 0);
    if ((k + 1) % sync_every == 0) state.h.block_until_ready();
    if ((k + 1) % report_every == 0 || k + 1 == opt.steps) {
      // Reading the interior waits for the step; it costs one copy every tenth of the run.
      const std::vector<double> h = host(sw::interior(state.h));
      const auto [lo, hi] = std::minmax_element(h.begin(), h.end());
      std::printf("step %lld/%lld  t = %.3f days  h in [%.3f, %.3f] m\n", (long long)(k + 1), (long long)opt.steps,
                  double(k + 1) * dt / sw::kDayInSeconds, *lo, *hi);
      std::fflush(stdout);
    }
  }
  // Wait for every field (the steps run asynchronously), so the time covers all the work.
  for (const ts::Array& a : ts::tree_leaves(state)) a.block_until_ready();
  const double seconds = since(t0);
  std::printf("seconds %.4f\n", seconds);
  std::printf("ms_per_step %.4f\n", 1e3 * seconds / double(opt.steps));

  const ts::Array h = sw::interior(state.h);
  if (!opt.out.empty()) {
    if (opt.dtype == ts::f32) sw::write_npy(opt.out, h.to_vector<float>(), {opt.ny, opt.nx});
    else sw::write_npy(opt.out, h.to_vector<double>(), {opt.ny, opt.nx});
    std::printf("wrote %s\n", opt.out.c_str());
  }
  if (!opt.png.empty()) {
    sw::PlotInput plot{.nx = opt.nx, .ny = opt.ny, .eta = host(h - sw::kDepth), .u = host(sw::interior(state.u)),
                       .v = host(sw::interior(state.v)), .eta_range = opt.eta_range,
                       .time_days = double(opt.steps) * dt / sw::kDayInSeconds};
    sw::write_png(opt.png, sw::plot_surface(plot));
    std::printf("wrote %s\n", opt.png.c_str());
  }
  // Queued kernels must not outlive main (the runtime does not drain streams at exit).
  h.block_until_ready();
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "shallow_water: error: %s\n", e.what());
  return 1;
}
