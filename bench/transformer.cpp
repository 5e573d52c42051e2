// A transformer training step against JAX (issue 31): one pre-LayerNorm transformer encoder
// block (multi-head self-attention with 8 heads, then an MLP 4x wide with tanh-approximated
// gelu, each behind a layer norm and a residual connection; loss = mean of squares of the
// block's output), written with tessel's public API as bench/baselines/jax_transformer.py
// writes it in jax.numpy, on the same parameters and inputs (an integer hash, exact on both
// sides), so the losses are compared as well as the times.
//
// Lines: transformer.{fwd,fwdbwd}_ms at batch 8, sequence 256, model 512 (jit of the loss,
// jit(value_and_grad) over all parameters); transformer.small_fwdbwd_ms at batch 4,
// sequence 64, model 128 with the spread (max over min) of 10 runs and the machine's load
// average beside it (transformer.load_average); each stage alone on its shape (gelu on
// f32[8,256,2048], softmax on f32[8,8,256,256], layer norm on f32[8,256,512], the attention
// sublayer and the MLP sublayer on f32[8,256,512] with their weights), forward and
// forward+backward; with $TESSEL_JAX_PYTHON, every figure over JAX's (_vs_jax:
// tessel's time over JAX's, lower is better). Exits 1 when the values disagree with JAX's.
//
// The floor the CPU's arithmetic sets: the block's matrix products are 14.0 GFLOP forward and
// 41.9 GFLOP forward+backward (every other op is a few percent of that), so at the measured
// multiply-add peak of one core (bench/fma_peak.h) times the arena's threads no program can
// take less than transformer.{fwd,fwdbwd}_floor_ms; transformer.{fwd,fwdbwd}_floor_vs_jax is
// that floor over JAX's time (the lowest `_vs_jax` this machine allows in float32), and
// transformer.{fwd,fwdbwd}_fraction_of_peak is the floor over tessel's time.
//
// Every time is the best of 10 rounds ($TESSEL_BENCH_ROUNDS overrides), on both sides (JAX's
// script takes the count as its argument): a best of 3 varied by +-20% from process to
// process on these shared cores, too much for a goal a few percent away.
//
// Where the environment sets OPENBLAS_CORETYPE or OPENBLAS_L2_SIZE (as these machines' does:
// Haswell kernels, slower than the CPU's own), a copy of this program run without them
// times the large block again: transformer.{fwd,fwdbwd}_native_blas_ms and
// transformer.{fwd,fwdbwd}_vs_jax_native_blas (over the same JAX figures), printed beside
// the main lines, which stay measured in the environment as given.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <numbers>
#include <string>
#include <vector>

#include <unistd.h>

#include "backend/cpu/parallel.h"
#include "backend/cpu/parallel_counts.h"
#include "bench_util.h"
#include "fma_peak.h"
#include "hashed_inputs.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace tb = tessel::bench;

namespace {

constexpr int64_t kHeads = 8;
/// Rounds each time is the best of (tessel and JAX alike): $TESSEL_BENCH_ROUNDS, else 10.
const int kRounds = [] {
  const char* r = std::getenv("TESSEL_BENCH_ROUNDS");
  return r && std::atoi(r) > 0 ? std::atoi(r) : 10;
}();
constexpr double kEps = 1e-5;

/// The block's parameters; the biases of q, k, v, the output projection and the two MLP
/// layers are in `bias` (in that order) to stay within TESSEL_TREE's 12 fields.
struct Params {
  ts::Array ln1_g, ln1_b, wq, wk, wv, wo, ln2_g, ln2_b, w1, w2;
  std::vector<ts::Array> bias;
};

}  // namespace

TESSEL_TREE(Params, ln1_g, ln1_b, wq, wk, wv, wo, ln2_g, ln2_b, w1, w2, bias)

namespace {

using tb::hashed_array;
using tb::hashed_uniform;

/// Layer-norm gain: 1 + a hashed value in [-0.1, 0.1), rounded as the JAX script does.
ts::Array hashed_gain(int64_t n, uint64_t salt) {
  std::vector<float> v = hashed_uniform(n, salt, 0.1);
  for (float& g : v) g = float(1.0 + double(g));
  return ts::Array(v, {n});
}

/// Parameters and input f32[batch, seq, model]; the salts follow jax_transformer.py's order.
std::pair<Params, ts::Array> make_block(int64_t batch, int64_t seq, int64_t model) {
  auto weight = [](int64_t rows, int64_t cols, uint64_t salt) {
    return hashed_array({rows, cols}, salt, std::sqrt(3.0 / double(rows)));
  };
  auto vec = [](int64_t n, uint64_t salt) { return hashed_array({n}, salt, 0.1); };
  Params p;
  p.ln1_g = hashed_gain(model, 1);
  p.ln1_b = vec(model, 2);
  p.wq = weight(model, model, 3);
  p.wk = weight(model, model, 4);
  p.wv = weight(model, model, 5);
  p.wo = weight(model, model, 6);
  p.ln2_g = hashed_gain(model, 7);
  p.ln2_b = vec(model, 8);
  p.w1 = weight(model, 4 * model, 9);
  p.w2 = weight(4 * model, model, 10);
  p.bias = {vec(model, 11), vec(model, 12), vec(model, 13), vec(model, 14), vec(4 * model, 15), vec(model, 16)};
  return {p, hashed_array({batch, seq, model}, 0, std::sqrt(3.0))};
}

ts::Array gelu(const ts::Array& x) {
  const double c = std::sqrt(2.0 / std::numbers::pi);
  return x * 0.5 * (ts::tanh((x + x * x * x * 0.044715) * c) + 1.0);
}

ts::Array softmax(const ts::Array& s) {
  ts::Array e = ts::exp(s - ts::max(s, {-1}, true));
  return e / ts::sum(e, {-1}, true);
}

ts::Array layer_norm(const ts::Array& x, const ts::Array& g, const ts::Array& b) {
  ts::Array c = x - ts::mean(x, {-1}, true);
  ts::Array var = ts::mean(c * c, {-1}, true);
  return c * ts::rsqrt(var + kEps) * g + b;
}

/// [b, s, d] -> [b, heads, s, d / heads].
ts::Array split_heads(const ts::Array& t) {
  const ts::Shape& s = t.shape();
  return ts::transpose(ts::reshape(t, {s[0], s[1], kHeads, s[2] / kHeads}), ts::Axes{0, 2, 1, 3});
}

/// The attention sublayer on normalized input h: softmax(q k^T / sqrt(d_head)) v over 8
/// heads, projected by wo (the stage `transformer.attention`).
ts::Array attention(const ts::Array& h, const ts::Array& wq, const ts::Array& wk, const ts::Array& wv,
                    const ts::Array& wo, const ts::Array& bq, const ts::Array& bk, const ts::Array& bv,
                    const ts::Array& bo) {
  const ts::Shape& s = h.shape();
  ts::Array q = split_heads(ts::matmul(h, wq) + bq);
  ts::Array k = split_heads(ts::matmul(h, wk) + bk);
  ts::Array v = split_heads(ts::matmul(h, wv) + bv);
  ts::Array att = softmax(ts::matmul(q, ts::swapaxes(k, -1, -2)) * (1.0 / std::sqrt(double(s[2] / kHeads))));
  ts::Array o = ts::reshape(ts::transpose(ts::matmul(att, v), ts::Axes{0, 2, 1, 3}), s);
  return ts::matmul(o, wo) + bo;
}

/// The MLP sublayer on normalized input h: gelu(h w1 + b1) w2 + b2 (the stage `transformer.mlp`).
ts::Array mlp(const ts::Array& h, const ts::Array& w1, const ts::Array& b1, const ts::Array& w2, const ts::Array& b2) {
  return ts::matmul(gelu(ts::matmul(h, w1) + b1), w2) + b2;
}

ts::Array block(const Params& p, const ts::Array& x) {
  ts::Array h = layer_norm(x, p.ln1_g, p.ln1_b);
  ts::Array x1 = x + attention(h, p.wq, p.wk, p.wv, p.wo, p.bias[0], p.bias[1], p.bias[2], p.bias[3]);
  ts::Array h2 = layer_norm(x1, p.ln2_g, p.ln2_b);
  return x1 + mlp(h2, p.w1, p.bias[4], p.w2, p.bias[5]);
}

ts::Array loss(const Params& p, const ts::Array& x) {
  ts::Array y = block(p, x);
  return ts::mean(y * y);
}

void wait_all(const Params& g) {
  for (const ts::Array& a : ts::tree_leaves(g)) a.block_until_ready();
}

/// GFLOP of the block's forward matrix products: q, k, v and the output projection
/// (4 x 2 B S D^2), the MLP (2 x 2 B S D 4D), and per head q k^T and p v (2 x 2 B S^2 D over
/// all heads). The backward does twice this (one product for each operand's gradient).
double block_forward_gflop(int64_t batch, int64_t seq, int64_t model) {
  const double b = double(batch), s = double(seq), d = double(model);
  return 1e-9 * (24.0 * b * s * d * d + 4.0 * b * s * s * d);
}

/// transformer.<name>_floor_ms: `gflop` at `peak_gflops` (all threads), its ratio to JAX's
/// time (transformer.<name>_floor_vs_jax) and to tessel's (transformer.<name>_fraction_of_peak).
void report_floor(const std::map<std::string, double>& jax, const std::string& name, double gflop,
                  double peak_gflops, double seconds) {
  const double floor = gflop / peak_gflops;
  tb::report("transformer." + name + "_floor_ms", floor * 1e3, "ms");
  tb::report("transformer." + name + "_fraction_of_peak", floor / seconds, "x");
  if (auto it = jax.find(name); it != jax.end() && it->second > 0)
    tb::report("transformer." + name + "_floor_vs_jax", floor / it->second, "x");
}

/// The command that runs bench/baselines/jax_transformer.py, or "" without TESSEL_JAX_PYTHON.
std::string jax_command() {
  const char* py = std::getenv("TESSEL_JAX_PYTHON");
  if (!py || !*py) return "";
  return tb::shell_quote(py) + " " +
         tb::shell_quote(std::string(TESSEL_SOURCE_DIR) + "/bench/baselines/jax_transformer.py") + " " +
         std::to_string(kRounds);
}

/// Prints `transformer.<name>_ms` and, with JAX's figure, `_jax_ms` and `_vs_jax` (tessel's time over JAX's).
void report_time(const std::map<std::string, double>& jax, const std::string& name, const std::string& jax_name,
                 double seconds) {
  tb::report_time_vs_jax(jax, "transformer.", name, jax_name, seconds, tb::JaxRatio::kOursOverJax);
}

/// Compares a value with JAX's (when JAX ran); false beyond `tolerance` (relative).
bool check_value(const std::map<std::string, double>& jax, const std::string& name, double mine, double tolerance) {
  return tb::check_value_vs_jax(jax, "transformer.", name, mine, tolerance);
}

/// One stage alone: forward (jit(f)) and forward+backward (jit(grad) of sum(f(args) * ct)
/// w.r.t. every argument), reported as transformer.<name>_ms and transformer.<name>_fwdbwd_ms.
/// Argument i is hashed (salt 100 + i) in [-bounds[i], bounds[i]) (2 where bounds is short),
/// as jax_transformer.py draws it.
/// False when the mean of squares of the stage's output disagrees with JAX's.
template <class F>
bool measure_stage(const std::map<std::string, double>& jax, const std::string& name, F f,
                   const std::vector<ts::Shape>& shapes, const std::vector<double>& bounds = {}) {
  std::vector<ts::Array> args;
  for (size_t i = 0; i < shapes.size(); ++i)
    args.push_back(hashed_array(shapes[i], 100 + i, i < bounds.size() ? bounds[i] : 2.0));
  ts::Array ct = hashed_array(shapes[0], 99, 1.0);
  auto fwd = ts::jit([f](const std::vector<ts::Array>& a) { return f(a); });
  auto bwd = ts::jit(ts::grad<1>([f](const ts::Array& ct, const std::vector<ts::Array>& a) { return ts::sum(f(a) * ct); }));
  ts::Array out = fwd(args);
  const bool ok = check_value(jax, name + "_sq", double(ts::mean(out * out).item<float>()), 1e-4);
  for (const ts::Array& g : bwd(ct, args)) g.block_until_ready();
  double t_fwd = tb::seconds_per_call([&] { fwd(args).block_until_ready(); }, 3, kRounds);
  double t_bwd = tb::seconds_per_call(
      [&] {
        for (const ts::Array& g : bwd(ct, args)) g.block_until_ready();
      },
      3, kRounds);
  report_time(jax, name, name + "_fwd", t_fwd);  // transformer.<stage>_vs_jax is the forward ratio
  report_time(jax, name + "_fwdbwd", name + "_fwdbwd", t_bwd);
  return ok;
}

/// Set in the copy of this program that runs without the OpenBLAS settings.
constexpr const char* kNativeBlasChild = "TESSEL_TRANSFORMER_BENCH_NATIVE_BLAS";

/// The large block's times from a copy of this program run with OPENBLAS_CORETYPE and
/// OPENBLAS_L2_SIZE unset, as transformer.<name>_native_blas_ms and
/// transformer.<name>_vs_jax_native_blas; nothing where neither is set (the main lines are
/// then the native figures) or in the copy itself.
void report_native_blas(const std::map<std::string, double>& jax) {
  if (!std::getenv("OPENBLAS_CORETYPE") && !std::getenv("OPENBLAS_L2_SIZE")) return;
  if (std::getenv(kNativeBlasChild)) return;
  const std::string command = "env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE " + std::string(kNativeBlasChild) +
                              "=1 /proc/" + std::to_string(getpid()) + "/exe";
  const std::map<std::string, double> child = tb::run_baseline(command);
  for (const char* name : {"fwd", "fwdbwd"}) {
    auto it = child.find("transformer." + std::string(name) + "_ms");
    if (it == child.end()) continue;
    tb::report("transformer." + std::string(name) + "_native_blas_ms", it->second, "ms");
    if (auto j = jax.find(name); j != jax.end() && j->second > 0)
      tb::report("transformer." + std::string(name) + "_vs_jax_native_blas", it->second * 1e-3 / j->second, "x");
  }
}

}  // namespace

int main() {
  const bool native_blas_child = std::getenv(kNativeBlasChild) != nullptr;
  const std::string jax_cmd = jax_command();
  std::map<std::string, double> jax;
  if (!jax_cmd.empty() && !native_blas_child) jax = tb::run_baseline(jax_cmd);
  if (!jax_cmd.empty() && !native_blas_child && jax.empty())
    std::fprintf(stderr, "transformer: the JAX baseline printed nothing\n");

  auto fwd = ts::jit(loss);
  auto vg = ts::jit(ts::value_and_grad(loss));
  bool ok = true;

  {  // batch 8, sequence 256, model 512
    auto [p, x] = make_block(8, 256, 512);
    if (std::getenv("TFM_DUMP")) { std::printf("%s\n", vg.lower(p, x).compile().as_text().c_str()); return 0; }
    double l_fwd = double(fwd(p, x).item<float>());
    auto [l_vg, g] = vg(p, x);
    double grad_sq = 0;
    for (const ts::Array& a : ts::tree_leaves(g)) grad_sq += double(ts::sum(a * a).item<float>());
    tb::report("transformer.loss", l_fwd, "");
    if (std::abs(l_fwd - double(l_vg.item<float>())) > 1e-5 * std::abs(l_fwd)) {
      std::fprintf(stderr, "transformer: jit(loss) %.9g and jit(value_and_grad) %.9g disagree\n", l_fwd,
                   double(l_vg.item<float>()));
      ok = false;
    }
    ok = check_value(jax, "loss", l_fwd, 1e-4) && ok;
    ok = check_value(jax, "grad_sq", grad_sq, 1e-3) && ok;
    double t_fwd = tb::seconds_per_call([&] { fwd(p, x).block_until_ready(); }, 2, kRounds);
    double t_vg = tb::seconds_per_call(
        [&] {
          auto [v, gr] = vg(p, x);
          wait_all(gr);
          v.block_until_ready();
        },
        1, kRounds);
    report_time(jax, "fwd", "fwd", t_fwd);
    report_time(jax, "fwdbwd", "fwdbwd", t_vg);
    if (!native_blas_child) {
      const double core_peak = tb::fma_peak_gflops();
      tb::report("transformer.fma_peak_gflops_per_core", core_peak, "GFLOP/s");
      const double peak = core_peak * ts::cpu::num_threads(), gflop = block_forward_gflop(8, 256, 512);
      report_floor(jax, "fwd", gflop, peak, t_fwd);
      report_floor(jax, "fwdbwd", 3 * gflop, peak, t_vg);
    }
  }
  if (native_blas_child) return ok ? 0 : 1;  // the large block's times are all it measures
  report_native_blas(jax);

  {  // batch 4, sequence 64, model 128: 10 runs of 20 steps, best and spread
    auto [p, x] = make_block(4, 64, 128);
    double l_small = double(fwd(p, x).item<float>());
    tb::report("transformer.small_loss", l_small, "");
    ok = check_value(jax, "small_loss", l_small, 1e-4) && ok;
    double t_fwd = tb::seconds_per_call([&] { fwd(p, x).block_until_ready(); }, 20, kRounds);
    std::vector<double> runs;
    vg(p, x).first.block_until_ready();
    const ts::cpu::ParallelForCounts split0 = ts::cpu::parallel_for_counts();
    for (int r = 0; r < 10; ++r)
      runs.push_back(tb::seconds_per_call(
          [&] {
            auto [v, gr] = vg(p, x);
            wait_all(gr);
            v.block_until_ready();
          },
          20, 1));
    auto [lo, hi] = std::minmax_element(runs.begin(), runs.end());
    report_time(jax, "small_fwd", "small_fwd", t_fwd);
    report_time(jax, "small_fwdbwd", "small_fwdbwd", *lo);
    tb::report("transformer.small_fwdbwd_spread", *hi / *lo, "x");
    // Of the split kernels of those runs, the share another thread joined (the small block's
    // steps are bimodal when it does not: docs/performance.md, "Threads for small steps").
    const ts::cpu::ParallelForCounts split1 = ts::cpu::parallel_for_counts();
    if (split1.split > split0.split)
      tb::report("transformer.small_shared_split_share",
                 double(split1.shared - split0.shared) / double(split1.split - split0.split), "");
    if (double load = tb::load_average(); load >= 0) tb::report("transformer.load_average", load, "");
  }

  ok &= measure_stage(jax, "gelu", [](const std::vector<ts::Array>& a) { return gelu(a[0]); }, {{8, 256, 2048}});
  ok &= measure_stage(jax, "softmax", [](const std::vector<ts::Array>& a) { return softmax(a[0]); }, {{8, 8, 256, 256}});
  ok &= measure_stage(jax, "layernorm", [](const std::vector<ts::Array>& a) { return layer_norm(a[0], a[1], a[2]); },
                      {{8, 256, 512}, {512}, {512}});
  // The sublayers on the block's scales: unit-variance input, weights in +-sqrt(3 / fan-in)
  // (so that attention scores stay in the range softmax sees in the block), biases in +-0.1.
  const double unit = std::sqrt(3.0), w512 = std::sqrt(3.0 / 512), w2048 = std::sqrt(3.0 / 2048);
  auto attention_stage = [](const std::vector<ts::Array>& a) {
    return attention(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8]);
  };
  ok &= measure_stage(jax, "attention", attention_stage,
                      {{8, 256, 512}, {512, 512}, {512, 512}, {512, 512}, {512, 512}, {512}, {512}, {512}, {512}},
                      {unit, w512, w512, w512, w512, 0.1, 0.1, 0.1, 0.1});
  auto mlp_stage = [](const std::vector<ts::Array>& a) { return mlp(a[0], a[1], a[2], a[3], a[4]); };
  ok &= measure_stage(jax, "mlp", mlp_stage, {{8, 256, 512}, {512, 2048}, {2048}, {2048, 512}, {512}},
                      {unit, w512, 0.1, w2048, 0.1});
  return ok ? 0 : 1;
}
