// jax.nn against JAX (issue 29): ts::nn::softmax over f32[8,12,1024,1024] (the logits of a
// 12-head attention at sequence 1024, batch 8) and ts::nn::dot_product_attention on query,
// key and value f32[8,1024,12,64], forward (jit of the function) and forward+backward (jit of
// the gradient of sum(f(args) * ct) over every argument), on the inputs
// bench/baselines/jax_nn.py draws (an integer hash, exact on both sides).
//
// Lines: nn.{softmax,attention}_ms and nn.{softmax,attention}_fwdbwd_ms (best of 3 calls);
// with $TESSEL_JAX_PYTHON, JAX's figures (`_jax_ms`) and nn.<name>_vs_jax: JAX's time over
// tessel's (a speedup: above 1.0 tessel is faster; goal >= 1.0), the relative differences of
// the outputs' mean of squares and the gradients' sum of squares (`_rel_diff`, exit 1 beyond
// 1e-4) and the load average. Usage: bench_nn [ROUNDS].
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "bench_util.h"
#include "hashed_inputs.h"
#include "tessel/nn.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace tb = tessel::bench;

namespace {

const ts::Shape kLogits{8, 12, 1024, 1024};
const ts::Shape kQkv{8, 1024, 12, 64};

/// The command that runs bench/baselines/jax_nn.py, or "" without TESSEL_JAX_PYTHON.
std::string jax_command(int rounds) {
  const char* py = std::getenv("TESSEL_JAX_PYTHON");
  if (!py || !*py) return "";
  return tb::shell_quote(py) + " " + tb::shell_quote(std::string(TESSEL_SOURCE_DIR) + "/bench/baselines/jax_nn.py") +
         " " + std::to_string(rounds);
}

/// Prints `nn.<name>_ms` and, with JAX's figure, `_jax_ms` and `_vs_jax` (JAX's time over tessel's).
void report_time(const std::map<std::string, double>& jax, const std::string& name, const std::string& jax_name,
                 double seconds) {
  tb::report_time_vs_jax(jax, "nn.", name, jax_name, seconds, tb::JaxRatio::kJaxOverOurs);
}

/// Compares a value with JAX's (when JAX ran); false beyond `tolerance` (relative).
bool check_value(const std::map<std::string, double>& jax, const std::string& name, double mine, double tolerance) {
  return tb::check_value_vs_jax(jax, "nn.", name, mine, tolerance);
}

using Fn = std::function<ts::Array(const std::vector<ts::Array>&)>;

/// Times f forward and forward+backward on `args` with cotangent `ct`, compares the output's
/// mean of squares and the gradients' sum of squares with JAX's; false when they disagree.
bool measure(const std::map<std::string, double>& jax, const std::string& name, const Fn& f,
             const std::vector<ts::Array>& args, const ts::Array& ct, int rounds) {
  auto fwd = ts::jit([f](const std::vector<ts::Array>& a) { return f(a); });
  auto bwd = ts::jit(ts::grad<1>([f](const ts::Array& c, const std::vector<ts::Array>& a) { return ts::sum(f(a) * c); }));
  bool ok;
  {
    const ts::Array out = fwd(args);
    ok = check_value(jax, name + "_sq", double(ts::mean(out * out).item<float>()), 1e-4);
  }
  {
    double grad_sq = 0;
    for (const ts::Array& g : bwd(ct, args)) grad_sq += double(ts::sum(g * g).item<float>());
    ok = check_value(jax, name + "_grad_sq", grad_sq, 1e-4) && ok;
  }
  const double t_fwd = tb::seconds_per_call([&] { fwd(args).block_until_ready(); }, 1, rounds);
  const double t_bwd = tb::seconds_per_call(
      [&] {
        for (const ts::Array& g : bwd(ct, args)) g.block_until_ready();
      },
      1, rounds);
  report_time(jax, name, name + "_fwd", t_fwd);
  report_time(jax, name + "_fwdbwd", name + "_fwdbwd", t_bwd);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;
  const std::string jax_cmd = jax_command(rounds);
  std::map<std::string, double> jax;
  if (!jax_cmd.empty()) jax = tb::run_baseline(jax_cmd);
  if (!jax_cmd.empty() && jax.empty()) std::fprintf(stderr, "nn: the JAX baseline printed nothing\n");

  bool ok = true;
  {
    const std::vector<ts::Array> x{tb::hashed_array(kLogits, 200, 4.0)};
    ok &= measure(jax, "softmax", [](const std::vector<ts::Array>& a) { return ts::nn::softmax(a[0]); }, x,
                  tb::hashed_array(kLogits, 201, 1.0), rounds);
  }
  {
    const std::vector<ts::Array> qkv{tb::hashed_array(kQkv, 210, 1.0), tb::hashed_array(kQkv, 211, 1.0),
                                     tb::hashed_array(kQkv, 212, 1.0)};
    ok &= measure(jax, "attention",
                  [](const std::vector<ts::Array>& a) { return ts::nn::dot_product_attention(a[0], a[1], a[2]); }, qkv,
                  tb::hashed_array(kQkv, 213, 1.0), rounds);
  }
  if (double load = tb::load_average(); load >= 0) tb::report("nn.load_average", load, "");
  return ok ? 0 : 1;
}
