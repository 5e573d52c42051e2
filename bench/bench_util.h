#pragma once
// Helpers shared by the benchmark programs: timing, `name value unit` output, and running a
// Python baseline in the same run.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>

namespace tessel::bench {

/// Seconds per call of `f`, the best of `repeats` rounds of `n` calls.
template <class F> double seconds_per_call(F&& f, int n, int repeats = 5) {
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) f();
    double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, dt / n);
  }
  return best;
}

inline void report(const std::string& name, double value, const std::string& unit) {
  std::printf("%s %.4g %s\n", name.c_str(), value, unit.c_str());
  std::fflush(stdout);
}

/// The 1-minute load average (/proc/loadavg), or -1 where it cannot be read: printed beside
/// figures that other processes on the cores disturb.
inline double load_average() {
  double load = -1;
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &load) != 1) load = -1;
    std::fclose(f);
  }
  return load;
}

/// Which way a `_vs_jax` line's ratio goes.
enum class JaxRatio {
  kOursOverJax,  // tessel's time over JAX's: lower is better (issue 31's lines)
  kJaxOverOurs,  // JAX's time over tessel's, a speedup: higher is better (issue 29's lines)
};

/// Prints `<prefix><name>_ms`, and when `jax` holds `jax_name` (seconds),
/// `<prefix><name>_jax_ms` and `<prefix><name>_vs_jax` (the ratio `ratio` says).
inline void report_time_vs_jax(const std::map<std::string, double>& jax, const std::string& prefix,
                               const std::string& name, const std::string& jax_name, double seconds, JaxRatio ratio) {
  report(prefix + name + "_ms", seconds * 1e3, "ms");
  auto it = jax.find(jax_name);
  if (it == jax.end() || it->second <= 0) return;
  report(prefix + name + "_jax_ms", it->second * 1e3, "ms");
  report(prefix + name + "_vs_jax", ratio == JaxRatio::kOursOverJax ? seconds / it->second : it->second / seconds, "x");
}

/// Compares a value with JAX's `name` (when JAX ran) and prints `<prefix><name>_rel_diff`;
/// false (and a line on stderr) when the relative difference exceeds `tolerance`.
inline bool check_value_vs_jax(const std::map<std::string, double>& jax, const std::string& prefix,
                               const std::string& name, double mine, double tolerance) {
  auto it = jax.find(name);
  if (it == jax.end()) return true;
  const double rel = std::abs(mine - it->second) / std::max(std::abs(it->second), 1e-30);
  report(prefix + name + "_rel_diff", rel, "");
  if (rel <= tolerance) return true;
  std::fprintf(stderr, "%s%s is %.9g in tessel and %.9g in JAX (relative difference %.3g > %.3g)\n", prefix.c_str(),
               name.c_str(), mine, it->second, rel, tolerance);
  return false;
}

/// `s` as one single-quoted shell word.
inline std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// Runs a baseline program (a shell command line; stderr is discarded) and returns its
/// `name value [unit]` lines as name -> value (empty when the program cannot run).
inline std::map<std::string, double> run_baseline(const std::string& command) {
  std::map<std::string, double> out;
  FILE* p = popen((command + " 2>/dev/null").c_str(), "r");
  if (!p) return out;
  char line[512], name[256];
  double v;
  while (std::fgets(line, sizeof line, p))  // `name value [unit]`
    if (std::sscanf(line, "%255s %lf", name, &v) == 2) out[name] = v;
  pclose(p);
  return out;
}

/// Runs a baseline script with /usr/bin/python3 and returns its `name value unit` lines as
/// name -> value (empty when Python or NumPy is missing). `env` is prepended to the command
/// (`VAR=value ...`), e.g. kNumpyMallocEnv.
inline std::map<std::string, double> run_python_baseline(const std::string& script_and_args,
                                                         const std::string& env = "") {
  return run_baseline((env.empty() ? "" : env + " ") + "/usr/bin/python3 " + script_and_args);
}

/// glibc malloc settings that give NumPy baselines with large temporaries their best chance:
/// blocks up to 32 MiB (the largest mmap threshold glibc accepts) come from the heap instead
/// of a fresh mmap each time, and freed memory stays with the process instead of being
/// trimmed and faulted in again. Measured on the shallow-water baseline at 1800x900: page
/// faults drop about 10x and a step gets 5-15% faster.
inline constexpr const char* kNumpyMallocEnv =
    "MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=1073741824 MALLOC_TOP_PAD_=268435456";

}  // namespace tessel::bench
