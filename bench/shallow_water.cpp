// The shallow-water model of the demo (issues 4 and 21): tessel's jitted step against the
// NumPy baseline and the hand-written one-pass C++ baseline, all measured in this run, one
// process each, every one using all cores it can, from the same initial state for the same
// number of steps. Also checks that the final height fields agree. Three cases, each a
// group of lines with its own suffix:
//   (none)   nx x ny float32 (1800x900 by default), `steps` steps: tessel, hand-written, NumPy;
//   _f64     nx x ny float64, steps / 2 steps: tessel, hand-written, NumPy;
//   _small   360x180 float32 (the demo's size), 10 x steps steps: tessel, hand-written.
//
// tessel's step donates its state, as the demo does (TESSEL_BENCH_DONATE=0: not donated).
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
//        About 30-45 s on an idle 2-core machine, most of it NumPy and compiling four steps
//        (70 s measured with load average 5.5 on 2 cores, kernels compiled before).
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
// to rounding accumulated over the run; each tolerance is several times the spread measured
// against a more precise run of the NumPy port, and far below what the mistakes it exists
// to catch do (refreshing the halo after friction, or an Adams-Bashforth term using the new
// tendency, move h by 0.13-0.15 m in 200 steps).
// float32: NumPy float32 against NumPy float64 1.5e-4 m at 1800x900 after 200 steps (tessel
// against NumPy and the hand-written model: 1.5e-4 to 1.9e-4 m); at 360x180 7.6e-5, 1.1e-4
// and 1.5e-4 m after 200, 1000 and 2000 steps: the spread grows about as steps^0.3.
// Tolerance 1e-3 m (1e-5 of the depth, about 130 float32 ulps at 100 m) times
// sqrt(steps / 200) beyond 200 steps: 7x the spread at 1800x900 after 200 steps, 21x at
// 360x180 after 2000.
// float64: NumPy float64 against NumPy long double (80-bit) 1.2e-13, 1.5e-13 and 1.7e-13 m
// at 360x180 after 200, 1000 and 2000 steps, 2.4e-13 m at 1800x900 after 100; tessel
// against the hand-written model 0.9-3e-13 m. The initial states differ more: the demo and
// the hand-written model take the mean of the geostrophic height by summing in order, NumPy
// pairwise, which shifts h uniformly by 5e-12 m at 360x180 and 7.6e-10 m at 1800x900
// against the exact mean (tessel against NumPy: 7.55e-10 m). Tolerance 1e-8 m, scaled the
// same way: 13x that shift; a wrong halo column of one flux, invisible in float32, moved h
// by 2.7e-7 m after 10 steps.
double tolerance_m(tessel::DType dtype, int steps) {
  const double at_200_steps = dtype == tessel::f64 ? 1e-8 : 1e-3;
  return at_200_steps * std::sqrt(std::max(1.0, steps / 200.0));
}

/// Reads a float32 or float64 C-order .npy file of `count` values written by NumPy or
/// examples/shallow_water/npy.cpp, as doubles.
std::optional<std::vector<double>> read_npy(const fs::path& path, size_t count) {
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
  if (header.find("'fortran_order': False") == std::string::npos) return std::nullopt;
  auto read_as = [&](auto zero) -> std::optional<std::vector<double>> {
    std::vector<decltype(zero)> data(count);
    if (!in.read(reinterpret_cast<char*>(data.data()), std::streamsize(count * sizeof(zero)))) return std::nullopt;
    return std::vector<double>(data.begin(), data.end());
  };
  if (header.find("'<f4'") != std::string::npos) return read_as(0.0f);
  if (header.find("'<f8'") != std::string::npos) return read_as(0.0);
  return std::nullopt;
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::abs(a[i] - b[i]);
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
template <class Step> double first_calls_ms(const Step& step, const sw::ShallowWater& model) {
  const sw::State s0 = model.initial_state();  // (donated to the step)
  block(s0);
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
    cold_ms = first_calls_ms(cold, model);
    kernels_first = count_fused(cold.lower(s0, true).compile().as_text());
    kernels = count_fused(cold.lower(s0, false).compile().as_text());
  }
  const tc::CodegenStats cold_stats = tc::codegen_stats();
  tc::forget_loaded_libraries();
  auto warm = make_step();
  const double warm_ms = first_calls_ms(warm, model);
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

/// One comparison: grid, dtype, steps, and the suffix of its lines.
struct Case {
  int64_t nx, ny;
  tessel::DType dtype;
  int steps;
  std::string suffix;  // "" (the main case), "_f64", "_small"
  bool numpy;          // also run the NumPy port
  bool unstreamed;     // also run tessel's step with streaming across loop nests off
};

const char* dtype_arg(tessel::DType d) { return d == tessel::f64 ? "float64" : "float32"; }

/// The jitted step of `model`; `first` (static) selects the forward first step. The state is
/// donated, as the demo donates it (the hand-written model updates its fields in place too):
/// the step's streamed chain may write its results over the old state. TESSEL_BENCH_DONATE=0
/// times the step without donation (every result in fresh memory), for comparison.
auto make_step(const sw::ShallowWater& model) {
  const char* donate = std::getenv("TESSEL_BENCH_DONATE");
  std::vector<int> donated;
  if (!donate || std::string(donate) != "0") donated = {0};
  return tessel::jit([&model](const sw::State& s, bool first) { return model.step(s, first); },
                     {.static_argnums = {1}, .donate_argnums = donated, .name = "shallow_water_step"});
}

/// tessel: compiles both signatures (first step and Adams-Bashforth) on a throwaway run
/// (nothing to do when codegen.* compiled them), then times `steps` steps from the initial
/// state, as the baselines do. Returns ms per step; `h` gets the final interior height.
template <class Step>
double time_tessel(const Step& step, const sw::ShallowWater& model, int steps, std::vector<double>& h) {
  step(step(model.initial_state(), true), false).h.block_until_ready();
  sw::State state = model.initial_state();
  block(state);
  const auto t0 = std::chrono::steady_clock::now();
  for (int k = 0; k < steps; ++k) {
    state = step(state, k == 0);
    if (k % 10 == 9) state.h.block_until_ready();  // bound run-ahead, as the demo does
  }
  block(state);
  const double ms = ms_since(t0) / steps;
  h = sw::interior(state.h).to_vector<double>();
  return ms;
}

/// Runs case `c`: tessel's step (`step`, jitted over `model`), the hand-written baseline and,
/// if c.numpy, the NumPy port, each for c.steps steps; prints the case's lines and checks
/// that the final height fields agree (`ok` becomes false if not, or if the hand-written
/// baseline does not run).
template <class Step>
void run_case(const Case& c, const sw::ShallowWater& model, const Step& step, const fs::path& tmp, bool& ok) {
  const std::string grid_args = " --nx " + std::to_string(c.nx) + " --ny " + std::to_string(c.ny) + " --steps " +
                                std::to_string(c.steps) + " --dtype " + dtype_arg(c.dtype);
  auto line = [&](const std::string& name) { return "shallow_water." + name + c.suffix; };
  std::printf("# case%s: %lldx%lld interior, %d steps, %s\n", c.suffix.c_str(), static_cast<long long>(c.nx),
              static_cast<long long>(c.ny), c.steps, dtype_arg(c.dtype));
  std::vector<double> h_tessel;
  const double tessel_ms = time_tessel(step, model, c.steps, h_tessel);
  tb::report(line("tessel_ms_per_step"), tessel_ms, "ms");
  if (c.unstreamed && tessel::compiler::codegen_enabled()) {
    // The same steps with streaming across loop nests off (read when a program compiles):
    // what streaming gains, in this run. The fields must agree bit for bit.
    setenv("TESSEL_FUSION_STREAM", "0", 1);
    const auto unstreamed_step = make_step(model);
    std::vector<double> h_unstreamed;
    const double unstreamed_ms = time_tessel(unstreamed_step, model, c.steps, h_unstreamed);
    unsetenv("TESSEL_FUSION_STREAM");
    tb::report(line("unstreamed_ms_per_step"), unstreamed_ms, "ms");
    tb::report(line("streaming_speedup"), unstreamed_ms / tessel_ms, "x");
    if (h_unstreamed != h_tessel) {
      std::fprintf(stderr, "bench_shallow_water: the streamed step's height field differs from the unstreamed one's\n");
      ok = false;
    }
  }

  const double tolerance = tolerance_m(c.dtype, c.steps);
  tb::report(line("tolerance"), tolerance, "m");
  auto compare = [&](const std::string& name, const fs::path& file) {
    const auto h = read_npy(file, h_tessel.size());
    if (!h) {
      std::fprintf(stderr, "bench_shallow_water: cannot read the %s result %s\n", name.c_str(), file.c_str());
      ok = false;
      return;
    }
    const double diff = max_abs_diff(h_tessel, *h);
    tb::report(line("max_abs_diff_vs_" + name), diff, "m");
    if (!(diff <= tolerance)) {
      std::fprintf(stderr,
                   "bench_shallow_water: case%s: the final height fields of tessel and %s differ by %g m "
                   "(tolerance %g m)\n",
                   c.suffix.c_str(), name.c_str(), diff, tolerance);
      ok = false;
    }
  };

  // The hand-written one-pass C++ baseline (OpenMP over all cores), as a subprocess.
  const fs::path h_ref = tmp / ("h_handwritten" + c.suffix + ".npy");
  const std::string ref_cmd = tb::shell_quote(TESSEL_SHALLOW_WATER_REF) + grid_args;
  std::printf("# handwritten: %s\n", ref_cmd.c_str());
  std::fflush(stdout);
  auto ref = tb::run_baseline(ref_cmd + " --out " + tb::shell_quote(h_ref.string()));
  if (ref.count("ms_per_step")) {
    tb::report(line("handwritten_ms_per_step"), ref["ms_per_step"], "ms");
    tb::report(line("handwritten_threads"), ref["threads"], "");
    // The step's memory traffic (each field read and written once) per second, beside what
    // the same threads reach sweeping the same fields in place with no arithmetic.
    tb::report(line("handwritten_gbytes_per_s"), ref["gbytes_per_s"], "GB/s");
    tb::report(line("handwritten_stream_gbytes_per_s"), ref["stream_gbytes_per_s"], "GB/s");
    tb::report(line("slowdown_vs_handwritten"), tessel_ms / ref["ms_per_step"], "x");
    compare("handwritten", h_ref);
  } else {
    std::fprintf(stderr, "bench_shallow_water: the hand-written baseline %s did not run\n", TESSEL_SHALLOW_WATER_REF);
    ok = false;
  }
  if (!c.numpy) return;

  // NumPy, with the malloc settings that give it its best chance (see the script).
  const fs::path h_numpy = tmp / ("h_numpy" + c.suffix + ".npy");
  std::printf("# numpy: %s /usr/bin/python3 bench/baselines/shallow_water_numpy.py%s\n", tb::kNumpyMallocEnv,
              grid_args.c_str());
  std::fflush(stdout);
  auto np = tb::run_python_baseline(tb::shell_quote(std::string(TESSEL_SOURCE_DIR) + "/bench/baselines/shallow_water_numpy.py") +
                                        grid_args + " --out " + tb::shell_quote(h_numpy.string()),
                                    tb::kNumpyMallocEnv);
  if (np.count("ms_per_step")) {
    tb::report(line("numpy_ms_per_step"), np["ms_per_step"], "ms");
    tb::report(line("speedup_vs_numpy"), np["ms_per_step"] / tessel_ms, "x");
    compare("numpy", h_numpy);
  } else {
    std::printf("# numpy: not available (needs /usr/bin/python3 with NumPy); skipped\n");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  const fs::path tmp = fs::temp_directory_path() / ("tessel_bench_shallow_water_" + std::to_string(getpid()));
  fs::create_directories(tmp);
  std::printf("# shallow_water: %lldx%lld interior, %d steps, float32; tessel on %d threads\n",
              static_cast<long long>(args.nx), static_cast<long long>(args.ny), args.steps,
              tessel::cpu::num_threads());
  bool ok = true;

  // The main case, with the cost of compiling its step.
  {
    const sw::ShallowWater model({.nx = args.nx, .ny = args.ny, .dtype = tessel::f32});
    namespace tc = tessel::compiler;
    if (!tc::codegen_enabled())
      std::printf("# codegen: off (TESSEL_DISABLE_CODEGEN=1 or no C++ compiler); codegen.* not measured\n");
    const auto step = tc::codegen_enabled()
                          ? measure_codegen([&model] { return make_step(model); }, model, tmp / "kernel_cache", ok)
                          : make_step(model);
    run_case({args.nx, args.ny, tessel::f32, args.steps, "", true, true}, model, step, tmp, ok);
  }
  // float64 on the same grid (half the steps: NumPy's float64 step is the slowest part of
  // the run), and the demo's 360x180 in float32, where per-step overheads weigh most (more
  // steps, for a stable time).
  const Case f64{args.nx, args.ny, tessel::f64, std::max(1, args.steps / 2), "_f64", true, false};
  const Case small{360, 180, tessel::f32, 10 * args.steps, "_small", false, false};
  for (const Case& c : {f64, small}) {
    const sw::ShallowWater model({.nx = c.nx, .ny = c.ny, .dtype = c.dtype});
    run_case(c, model, make_step(model), tmp, ok);
  }

  std::error_code ec;
  fs::remove_all(tmp, ec);
  return ok ? 0 : 1;
}
