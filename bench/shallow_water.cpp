// The shallow-water model of the demo (issue 4): tessel's jitted step against the NumPy
// baseline and the hand-written C++ baseline, all measured in this run, one process each,
// every one using all cores it can, from the same initial state for the same number of
// steps. Also checks that the three final height fields agree.
//
// Also times the same steps with streaming across loop nests off (TESSEL_FUSION_STREAM=0):
// shallow_water.streaming_speedup, with the two height fields required to agree bit for bit.
//
// Also measures what compiling the step costs (codegen.*): both of its programs (first step
// and Adams-Bashforth) compiled into an empty kernel cache, then loaded from that cache by a
// new jit object, as a second process would.
//
// Usage: bench_shallow_water [--nx 1800] [--ny 900] [--steps 200]
//        (or positionally: bench_shallow_water [nx ny steps]); the defaults are the issue's.
// Exits 1 when a final height field differs from tessel's by more than the tolerance (or the
// unstreamed step's from the streamed one's at all), when the hand-written baseline cannot
// run, or when the warm jit object invoked the compiler.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "backend/cpu/parallel.h"
#include "bench_util.h"
#include "compiler/kernel_cache.h"
#include "shallow_water.h"

namespace tb = tessel::bench;
namespace sw = shallow_water;
namespace fs = std::filesystem;

namespace {

// Agreement of the final interior height fields (h is 60-140 m). The implementations round
// differently (operation order, FMA contraction, division vs reciprocal), so they agree up
// to float32 rounding accumulated over the run. Measured at 1800x900 after 200 steps:
// float32 NumPy vs float64 NumPy 1.5e-4 m, tessel vs NumPy and vs the hand-written model
// 1.5e-4 to 1.9e-4 m. The tolerance, 1e-3 m per 200 steps (1e-5 of the depth, about 130
// float32 ulps at 100 m), is 5x that spread; the mistakes it exists to catch are far
// larger: refreshing the halo after friction, or an Adams-Bashforth term using the new
// tendency, move h by 0.13-0.15 m.
double tolerance_m(int steps) { return 1e-3 * std::max(1.0, steps / 200.0); }

/// Reads a float32 C-order .npy file written by NumPy or examples/shallow_water/npy.cpp.
std::optional<std::vector<float>> read_npy_f32(const fs::path& path, size_t count) {
  std::ifstream in(path, std::ios::binary);
  char lead[10];
  if (!in.read(lead, sizeof lead) || std::memcmp(lead, "\x93NUMPY", 6) != 0) return std::nullopt;
  size_t header_len = 0;
  if (lead[6] == 1) {
    header_len = size_t(uint8_t(lead[8])) | size_t(uint8_t(lead[9])) << 8;
  } else {  // versions 2 and 3: a 4-byte header length
    char more[2];
    if (!in.read(more, 2)) return std::nullopt;
    header_len = size_t(uint8_t(lead[8])) | size_t(uint8_t(lead[9])) << 8 | size_t(uint8_t(more[0])) << 16 |
                 size_t(uint8_t(more[1])) << 24;
  }
  std::string header(header_len, '\0');
  if (!in.read(header.data(), std::streamsize(header_len))) return std::nullopt;
  if (header.find("'<f4'") == std::string::npos || header.find("'fortran_order': False") == std::string::npos)
    return std::nullopt;
  std::vector<float> data(count);
  if (!in.read(reinterpret_cast<char*>(data.data()), std::streamsize(count * sizeof(float)))) return std::nullopt;
  return data;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::abs(double(a[i]) - double(b[i]));
    if (!(d <= m)) m = d;  // NaN propagates as the largest difference
  }
  return m;
}

struct Args {
  int64_t nx = 1800, ny = 900;
  int steps = 200;
};

Args parse(int argc, char** argv) {
  Args a;
  std::vector<std::string> positional;  // the older form: nx ny steps
  for (int k = 1; k < argc; ++k) {
    const std::string arg = argv[k];
    if (arg.rfind("--", 0) != 0) {
      positional.push_back(arg);
      continue;
    }
    if (k + 1 >= argc || (arg != "--nx" && arg != "--ny" && arg != "--steps")) positional.assign(4, "");
    else if (arg == "--nx") a.nx = std::atoll(argv[++k]);
    else if (arg == "--ny") a.ny = std::atoll(argv[++k]);
    else a.steps = std::atoi(argv[++k]);
  }
  if (positional.size() > 0) a.nx = std::atoll(positional[0].c_str());
  if (positional.size() > 1) a.ny = std::atoll(positional[1].c_str());
  if (positional.size() > 2) a.steps = std::atoi(positional[2].c_str());
  if (positional.size() > 3 || a.nx < 2 || a.ny < 2 || a.steps < 1) {
    std::fprintf(stderr, "usage: bench_shallow_water [--nx N >= 2] [--ny N >= 2] [--steps N >= 1]\n");
    std::exit(2);
  }
  return a;
}

/// Number of `fused` equations (generated loop nests) in a `Compiled::as_text()`: program
/// lines `<outputs> = fused[...] <inputs>` at the top level of the printed program.
int count_fused(const std::string& text) {
  int n = 0;
  size_t pos = 0;
  while ((pos = text.find(" = fused[", pos)) != std::string::npos) {
    ++n;
    pos += 1;
  }
  return n;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void block(const sw::State& s) {
  for (const tessel::Array& a : tessel::tree_leaves(s)) a.block_until_ready();
}

/// Milliseconds from the first call of each signature (first step, then Adams-Bashforth)
/// until its outputs are ready: tracing, fusion, compiling or loading kernels, one step.
template <class Step> double first_calls_ms(const Step& step, const sw::State& s0) {
  const auto t0 = std::chrono::steady_clock::now();
  const sw::State s1 = step(s0, true);
  block(s1);
  block(step(s1, false));
  return ms_since(t0);
}

/// Compilation cost of the step (codegen.*). Cold: a new jit object compiles both programs
/// into the empty kernel cache `cache` (TESSEL_CACHE_DIR is read at each compilation).
/// Warm: once the cold object (and with it its loaded kernels) and the process's record of
/// loaded libraries are gone, another new jit object traces and fuses again and must find
/// every shared object on disk, as a second process would; `ok` becomes false if it invoked
/// the compiler. Returns the warm object; `cache` is removed (loaded objects stay mapped)
/// and TESSEL_CACHE_DIR restored.
template <class MakeStep>
auto measure_codegen(const MakeStep& make_step, const sw::ShallowWater& model, const fs::path& cache, bool& ok) {
  namespace tc = tessel::compiler;
  const char* old_dir = std::getenv("TESSEL_CACHE_DIR");
  const std::optional<std::string> saved_dir = old_dir ? std::optional<std::string>(old_dir) : std::nullopt;
  setenv("TESSEL_CACHE_DIR", cache.c_str(), 1);
  const sw::State s0 = model.initial_state();
  block(s0);

  const tc::CodegenStats before = tc::codegen_stats();
  int kernels = 0, kernels_first = 0;
  double cold_ms = 0;
  {
    auto cold = make_step();
    cold_ms = first_calls_ms(cold, s0);
    kernels_first = count_fused(cold.lower(s0, true).compile().as_text());
    kernels = count_fused(cold.lower(s0, false).compile().as_text());
  }
  const tc::CodegenStats cold_stats = tc::codegen_stats();
  tc::forget_loaded_libraries();
  auto warm = make_step();
  const double warm_ms = first_calls_ms(warm, s0);
  const tc::CodegenStats warm_stats = tc::codegen_stats();

  tb::report("codegen.kernels", kernels, "");  // loop nests of the Adams-Bashforth step
  tb::report("codegen.kernels_first_step", kernels_first, "");
  tb::report("codegen.cold_compiles", double(cold_stats.compiles - before.compiles), "");
  tb::report("codegen.cold_compile_ms", cold_stats.compile_ms - before.compile_ms, "ms");
  tb::report("codegen.cold_first_call_ms", cold_ms, "ms");
  tb::report("codegen.warm_compiles", double(warm_stats.compiles - cold_stats.compiles), "");
  tb::report("codegen.warm_disk_loads", double(warm_stats.disk_loads - cold_stats.disk_loads), "");
  tb::report("codegen.warm_load_ms", warm_stats.load_ms - cold_stats.load_ms, "ms");
  tb::report("codegen.warm_first_call_ms", warm_ms, "ms");
  if (warm_stats.compiles != cold_stats.compiles) {
    std::fprintf(stderr, "bench_shallow_water: the warm jit object invoked the compiler %lld times; every kernel "
                         "should have come from the disk cache\n",
                 static_cast<long long>(warm_stats.compiles - cold_stats.compiles));
    ok = false;
  }
  if (saved_dir) setenv("TESSEL_CACHE_DIR", saved_dir->c_str(), 1);
  else unsetenv("TESSEL_CACHE_DIR");
  std::error_code ec;
  fs::remove_all(cache, ec);
  return warm;
}

/// Milliseconds per step of `steps` steps from the initial state, as the baselines run
/// them, after a throwaway run that compiles both signatures (first step and
/// Adams-Bashforth); `h` receives the final interior height field.
template <class Step>
double time_steps(const Step& step, const sw::ShallowWater& model, int steps, std::vector<float>& h) {
  step(step(model.initial_state(), true), false).h.block_until_ready();
  sw::State state = model.initial_state();
  for (const tessel::Array& a : tessel::tree_leaves(state)) a.block_until_ready();
  const auto t0 = std::chrono::steady_clock::now();
  for (int k = 0; k < steps; ++k) {
    state = step(state, k == 0);
    if (k % 10 == 9) state.h.block_until_ready();  // bound run-ahead, as the demo does
  }
  for (const tessel::Array& a : tessel::tree_leaves(state)) a.block_until_ready();
  const double ms = 1e3 * std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / steps;
  h = sw::interior(state.h).to_vector<float>();
  return ms;
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  const size_t cells = size_t(args.nx * args.ny);
  const std::string grid_args = " --nx " + std::to_string(args.nx) + " --ny " + std::to_string(args.ny) +
                                " --steps " + std::to_string(args.steps);
  const fs::path tmp = fs::temp_directory_path() / ("tessel_bench_shallow_water_" + std::to_string(getpid()));
  fs::create_directories(tmp);
  std::printf("# shallow_water: %lldx%lld interior, %d steps, float32; tessel on %d threads\n",
              static_cast<long long>(args.nx), static_cast<long long>(args.ny), args.steps,
              tessel::cpu::num_threads());

  sw::ShallowWater model({.nx = args.nx, .ny = args.ny, .dtype = tessel::f32});
  auto make_step = [&model] {
    return tessel::jit([&model](const sw::State& s, bool first) { return model.step(s, first); },
                       {.static_argnums = {1}, .name = "shallow_water_step"});
  };
  bool ok = true;
  namespace tc = tessel::compiler;
  if (!tc::codegen_enabled())
    std::printf("# codegen: off (TESSEL_DISABLE_CODEGEN=1 or no C++ compiler); codegen.* not measured\n");
  const auto step = tc::codegen_enabled() ? measure_codegen(make_step, model, tmp / "kernel_cache", ok) : make_step();

  std::vector<float> h_tessel;
  const double tessel_ms = time_steps(step, model, args.steps, h_tessel);
  tb::report("shallow_water.tessel_ms_per_step", tessel_ms, "ms");
  if (tc::codegen_enabled()) {
    // The same steps with streaming across loop nests off (read when a program compiles):
    // what streaming gains, in this run. The fields must agree bit for bit.
    setenv("TESSEL_FUSION_STREAM", "0", 1);
    const auto unstreamed_step = make_step();
    std::vector<float> h_unstreamed;
    const double unstreamed_ms = time_steps(unstreamed_step, model, args.steps, h_unstreamed);
    unsetenv("TESSEL_FUSION_STREAM");
    tb::report("shallow_water.unstreamed_ms_per_step", unstreamed_ms, "ms");
    tb::report("shallow_water.streaming_speedup", unstreamed_ms / tessel_ms, "x");
    if (h_unstreamed != h_tessel) {
      std::fprintf(stderr, "bench_shallow_water: the streamed step's height field differs from the unstreamed one's\n");
      ok = false;
    }
  }

  const double tolerance = tolerance_m(args.steps);
  auto compare = [&](const char* name, const fs::path& file) {
    const auto h = read_npy_f32(file, cells);
    if (!h) {
      std::fprintf(stderr, "bench_shallow_water: cannot read the %s result %s\n", name, file.c_str());
      ok = false;
      return;
    }
    const double diff = max_abs_diff(h_tessel, *h);
    tb::report(std::string("shallow_water.max_abs_diff_vs_") + name, diff, "m");
    if (!(diff <= tolerance)) {
      std::fprintf(stderr, "bench_shallow_water: the final height fields of tessel and %s differ by %g m (tolerance %g m)\n",
                   name, diff, tolerance);
      ok = false;
    }
  };
  tb::report("shallow_water.tolerance", tolerance, "m");

  // The hand-written C++ baseline (OpenMP over all cores), as a subprocess. Idle OpenMP
  // threads sleep instead of spinning: as fast on a quiet machine, and on a busy one a
  // spinning thread steals the core its partner needs (3x slower on 2 shared cores).
  const fs::path h_ref = tmp / "h_handwritten.npy";
  const std::string ref_cmd = "OMP_WAIT_POLICY=passive " + tb::shell_quote(TESSEL_SHALLOW_WATER_REF) + grid_args;
  std::printf("# handwritten: %s\n", ref_cmd.c_str());
  std::fflush(stdout);
  auto ref = tb::run_baseline(ref_cmd + " --out " + tb::shell_quote(h_ref.string()));
  if (ref.count("ms_per_step")) {
    tb::report("shallow_water.handwritten_ms_per_step", ref["ms_per_step"], "ms");
    tb::report("shallow_water.handwritten_threads", ref["threads"], "");
    tb::report("shallow_water.slowdown_vs_handwritten", tessel_ms / ref["ms_per_step"], "x");
    compare("handwritten", h_ref);
  } else {
    std::fprintf(stderr, "bench_shallow_water: the hand-written baseline %s did not run\n", TESSEL_SHALLOW_WATER_REF);
    ok = false;
  }

  // NumPy, with the malloc settings that give it its best chance (see the script).
  const fs::path h_numpy = tmp / "h_numpy.npy";
  std::printf("# numpy: %s /usr/bin/python3 bench/baselines/shallow_water_numpy.py%s --dtype float32\n",
              tb::kNumpyMallocEnv, grid_args.c_str());
  std::fflush(stdout);
  auto np = tb::run_python_baseline(tb::shell_quote(std::string(TESSEL_SOURCE_DIR) + "/bench/baselines/shallow_water_numpy.py") +
                                        grid_args + " --dtype float32 --out " + tb::shell_quote(h_numpy.string()),
                                    tb::kNumpyMallocEnv);
  if (np.count("ms_per_step")) {
    tb::report("shallow_water.numpy_ms_per_step", np["ms_per_step"], "ms");
    tb::report("shallow_water.speedup_vs_numpy", np["ms_per_step"] / tessel_ms, "x");
    compare("numpy", h_numpy);
  } else {
    std::printf("# numpy: not available (needs /usr/bin/python3 with NumPy); skipped\n");
  }

  std::error_code ec;
  fs::remove_all(tmp, ec);
  return ok ? 0 : 1;
}
