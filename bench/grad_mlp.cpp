// Reverse mode against the forward pass: a 4-layer MLP (batch 256, width 512, float32) with
// a mean-squared-error loss; jit(value_and_grad(loss)) over jit(loss), same run.
// Goal (issue 3): the ratio is at most 3. The headline `grad.mlp_*` lines use tanh; the
// `grad.mlp_relu_*` lines repeat the measurement with relu (maximum(h, 0)), whose forward
// pass is almost only matrix products (tanh's scalar kernel is a large part of the tanh
// forward pass, which flatters that ratio).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "bench_util.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace tb = tessel::bench;

namespace {

constexpr int64_t kBatch = 256, kWidth = 512, kLayers = 4;

struct Params {
  std::vector<ts::Array> w, b;
};
enum class Activation { tanh, relu };

}  // namespace

TESSEL_TREE(Params, w, b)

namespace {

template <Activation A> ts::Array mlp(const Params& p, const ts::Array& x) {
  ts::Array h = x;
  for (int64_t i = 0; i < kLayers; ++i) {
    h = ts::matmul(h, p.w[size_t(i)]) + p.b[size_t(i)];
    if (i + 1 < kLayers) h = A == Activation::tanh ? ts::tanh(h) : ts::maximum(h, ts::Array(0.0f));
  }
  return h;
}

template <Activation A> ts::Array loss(const Params& p, const ts::Array& x, const ts::Array& y) {
  return ts::mean(ts::square(mlp<A>(p, x) - y));
}

struct Timing {
  double forward = 0, value_and_grad = 0;  // seconds per call
};

// Times jit(loss) and jit(value_and_grad(loss)); reports them under `prefix`. False when
// the two disagree on the loss.
template <Activation A>
bool measure(const std::string& prefix, const Params& p, const ts::Array& x, const ts::Array& y, Timing& t) {
  auto fwd = ts::jit([](const Params& p, const ts::Array& x, const ts::Array& y) { return loss<A>(p, x, y); });
  auto vg = ts::jit(ts::value_and_grad(loss<A>));

  // Compile both and check they agree on the value.
  float l0 = fwd(p, x, y).template item<float>();
  float l1 = vg(p, x, y).first.template item<float>();
  if (std::abs(l0 - l1) > 1e-4f * std::max(1.0f, std::abs(l0))) {
    std::fprintf(stderr, "grad_mlp: forward %g and value_and_grad %g disagree\n", l0, l1);
    return false;
  }

  double t_fwd = tb::seconds_per_call([&] { fwd(p, x, y).block_until_ready(); }, 20);
  double t_vg = tb::seconds_per_call(
      [&] {
        auto [v, g] = vg(p, x, y);
        for (const ts::Array& a : ts::tree_leaves(g)) a.block_until_ready();
        v.block_until_ready();
      },
      20);
  tb::report(prefix + "forward_ms", t_fwd * 1e3, "ms");
  tb::report(prefix + "value_and_grad_ms", t_vg * 1e3, "ms");
  tb::report(prefix + "backward_over_forward", t_vg / t_fwd, "x");
  t = {t_fwd, t_vg};
  return true;
}

/// The command that runs bench/baselines/jax_grad_mlp.py, or "" without TESSEL_JAX_PYTHON.
std::string jax_command() {
  const char* py = std::getenv("TESSEL_JAX_PYTHON");
  if (!py || !*py) return "";
  return tb::shell_quote(py) + " " + tb::shell_quote(std::string(TESSEL_SOURCE_DIR) + "/bench/baselines/jax_grad_mlp.py");
}

/// Keeps the smaller time of each line of two JAX runs.
void merge_best(std::map<std::string, double>& best, const std::map<std::string, double>& run) {
  for (const auto& [k, v] : run) best[k] = best.count(k) ? std::min(best[k], v) : v;
}

/// Prints `<prefix><what>_jax_ms` and `<prefix><what>_vs_jax` (tessel over JAX) when JAX ran.
void report_vs_jax(const std::map<std::string, double>& jax, const std::string& prefix, const std::string& jax_prefix,
                   const Timing& t) {
  for (const auto& [what, mine] : {std::pair{std::string("forward"), t.forward},
                                   std::pair{std::string("value_and_grad"), t.value_and_grad}}) {
    auto it = jax.find(jax_prefix + what);
    if (it == jax.end() || mine <= 0) continue;
    tb::report(prefix + what + "_jax_ms", it->second * 1e3, "ms");
    tb::report(prefix + what + "_vs_jax", mine / it->second, "x");
  }
}

}  // namespace

int main() {
  ts::Array key = ts::random::key(0);
  Params p;
  for (int64_t i = 0; i < kLayers; ++i) {
    ts::Array k = ts::random::fold_in(key, ts::Array(int32_t(i)));
    p.w.push_back(ts::random::normal(k, {kWidth, kWidth}) * float(1.0 / std::sqrt(double(kWidth))));
    p.b.push_back(ts::zeros({kWidth}, ts::f32));
  }
  ts::Array x = ts::random::normal(ts::random::fold_in(key, ts::Array(int32_t(100))), {kBatch, kWidth});
  ts::Array y = ts::random::normal(ts::random::fold_in(key, ts::Array(int32_t(101))), {kBatch, kWidth});

  const std::string jax_cmd = jax_command();
  std::map<std::string, double> jax;
  if (!jax_cmd.empty()) jax = tb::run_baseline(jax_cmd);

  Timing tanh_t, relu_t;
  bool ok = measure<Activation::tanh>("grad.mlp_", p, x, y, tanh_t);
  ok = measure<Activation::relu>("grad.mlp_relu_", p, x, y, relu_t) && ok;

  if (!jax_cmd.empty() && !jax.empty()) merge_best(jax, tb::run_baseline(jax_cmd));
  report_vs_jax(jax, "grad.mlp_", "", tanh_t);
  report_vs_jax(jax, "grad.mlp_relu_", "relu_", relu_t);
  return ok ? 0 : 1;
}
