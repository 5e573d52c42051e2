#pragma once
// Helpers shared by the benchmark programs: timing, `name value unit` output, and running a
// Python baseline in the same run.
#include <chrono>
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

/// Runs a baseline script with /usr/bin/python3 and returns its `name value unit` lines as
/// name -> value (empty when Python or NumPy is missing).
inline std::map<std::string, double> run_python_baseline(const std::string& script_and_args) {
  std::map<std::string, double> out;
  std::string cmd = "/usr/bin/python3 " + script_and_args + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char line[512], name[256];
  double v;
  while (std::fgets(line, sizeof line, p))  // `name value [unit]`
    if (std::sscanf(line, "%255s %lf", name, &v) == 2) out[name] = v;
  pclose(p);
  return out;
}

}  // namespace tessel::bench
