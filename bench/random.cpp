// jax.random against JAX (issue 29): nanoseconds per sample of jit of one draw of
// ts::random::{bits, uniform, normal, randint, truncated_normal, gamma} over N samples
// (2^22 by default; N / 16 for gamma, whose rejection loop is slow on both sides) from
// key(42), against jax.jit of the same draw from jax.random.PRNGKey(42) in
// bench/baselines/jax_random.py. The bits of 17 samples are compared with JAX's: bits,
// uniform, normal, randint and truncated_normal must be equal bit for bit (erf_inv and
// float32 erf compute as XLA does), gamma within 64 ulp (JAX's own jit and eager gamma differ
// by up to 19 ulp). Exit 1 beyond that.
//
// Lines: random.<name>_ns_per_sample; with $TESSEL_JAX_PYTHON, random.<name>_jax_ns_per_sample,
// random.<name>_vs_jax: JAX's time over tessel's (a speedup: above 1.0 tessel is faster;
// goal >= 1.0 for normal, randint, truncated_normal and gamma), random.<name>_max_ulp_diff
// over the compared samples, and the load average. Usage: bench_random [N [ROUNDS]].
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bench_util.h"
#include "tessel/random.h"
#include "tessel/random_distributions.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace tb = tessel::bench;

namespace {

/// The command that runs bench/baselines/jax_random.py, or "" without TESSEL_JAX_PYTHON.
std::string jax_command(int64_t n, int rounds) {
  const char* py = std::getenv("TESSEL_JAX_PYTHON");
  if (!py || !*py) return "";
  return tb::shell_quote(py) + " " +
         tb::shell_quote(std::string(TESSEL_SOURCE_DIR) + "/bench/baselines/jax_random.py") + " " +
         std::to_string(n) + " " + std::to_string(rounds);
}

/// The 32 bits of every sample of a 4-byte array.
std::vector<uint32_t> sample_bits(const ts::Array& a) {
  return ts::bitcast_convert_type(a, ts::DType::uint32).to_vector<uint32_t>();
}

/// The samples compared with JAX's (jax_random.py's sample_indices).
std::vector<int64_t> sample_indices(int64_t m) {
  std::vector<int64_t> out;
  for (int64_t k = 0; k < 16; ++k) out.push_back(k * (m / 16) + k);
  out.push_back(m - 1);
  return out;
}

using Draw = std::function<ts::Array(const ts::Array&)>;

}  // namespace

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : int64_t(1) << 22;
  const int rounds = argc > 2 ? std::max(1, std::atoi(argv[2])) : 3;
  const std::string jax_cmd = jax_command(n, rounds);
  std::map<std::string, double> jax;
  if (!jax_cmd.empty()) jax = tb::run_baseline(jax_cmd);
  if (!jax_cmd.empty() && jax.empty()) std::fprintf(stderr, "random: the JAX baseline printed nothing\n");

  namespace tr = ts::random;
  const ts::Shape shape{n};
  struct Case {
    std::string name;
    Draw draw;
    int64_t max_ulp;  // allowed distance from JAX's bits (see the top of the file)
  };
  const std::vector<Case> draws{
      {"bits", [shape](const ts::Array& k) { return tr::bits(k, shape, ts::DType::uint32); }, 0},
      {"uniform", [shape](const ts::Array& k) { return tr::uniform(k, shape, ts::DType::float32); }, 0},
      {"normal", [shape](const ts::Array& k) { return tr::normal(k, shape, ts::DType::float32); }, 0},
      {"randint",
       [shape](const ts::Array& k) { return tr::randint(k, shape, ts::Array(int32_t(0)), ts::Array(int32_t(1000))); }, 0},
      {"truncated_normal",
       [shape](const ts::Array& k) { return tr::truncated_normal(k, ts::Array(-2.0f), ts::Array(2.0f), shape); }, 0},
      {"gamma", [n](const ts::Array& k) { return tr::gamma(k, ts::Array(2.5f), ts::Shape{n / 16}); }, 64},
  };
  const ts::Array key = tr::key(42);
  bool ok = true;
  for (const auto& [name, draw, max_ulp] : draws) {
    auto f = ts::jit(draw);
    const ts::Array out = f(key);
    const int64_t m = out.size();
    const std::vector<uint32_t> bits = sample_bits(out);
    int64_t worst = -1;  // the largest distance in ulp (in bits, same sign) from JAX's samples
    for (int64_t i : sample_indices(m)) {
      auto it = jax.find(name + "_at_" + std::to_string(i));
      if (it == jax.end()) continue;
      const int64_t mine = bits[size_t(i)], theirs = int64_t(it->second);
      worst = std::max(worst, mine > theirs ? mine - theirs : theirs - mine);
      if (std::abs(mine - theirs) > max_ulp) {
        std::fprintf(stderr,
                     "random: %s sample %lld has bits 0x%08llx in tessel and 0x%08llx in JAX (at most %lld ulp "
                     "apart allowed)\n",
                     name.c_str(), static_cast<long long>(i), static_cast<unsigned long long>(mine),
                     static_cast<unsigned long long>(theirs), static_cast<long long>(max_ulp));
        ok = false;
      }
    }
    if (worst >= 0) tb::report("random." + name + "_max_ulp_diff", double(worst), "ulp");
    const double seconds = tb::seconds_per_call([&] { f(key).block_until_ready(); }, 3, rounds);
    const double ns = seconds / double(m) * 1e9;
    tb::report("random." + name + "_ns_per_sample", ns, "ns");
    auto it = jax.find(name + "_ns");
    if (it == jax.end() || it->second <= 0) continue;
    tb::report("random." + name + "_jax_ns_per_sample", it->second, "ns");
    tb::report("random." + name + "_vs_jax", it->second / ns, "x");
  }
  if (double load = tb::load_average(); load >= 0) tb::report("random.load_average", load, "");
  return ok ? 0 : 1;
}
