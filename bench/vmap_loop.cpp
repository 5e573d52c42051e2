// Vectorization against a loop: a small per-example function (a 64-wide tanh layer and a
// softmax-weighted sum) over 1024 examples, as jit(vmap(f)) and as a jitted fori_loop that
// writes each row into the output with dynamic_update_slice, same run.
// Goal (issue 3): vmap at least 5x faster.
#include <cmath>
#include <vector>

#include "bench_util.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace tb = tessel::bench;

namespace {

constexpr int64_t kExamples = 1024, kFeatures = 64;

// One example: x [64] -> [64].
ts::Array per_example(const ts::Array& w, const ts::Array& b, const ts::Array& x) {
  ts::Array h = ts::tanh(ts::matmul(w, x) + b);
  ts::Array e = ts::exp(h - ts::max(h));
  return h * (e / ts::sum(e));
}

}  // namespace

int main() {
  ts::Array key = ts::random::key(0);
  ts::Array w = ts::random::normal(ts::random::fold_in(key, ts::Array(int32_t(0))), {kFeatures, kFeatures}) * 0.125f;
  ts::Array b = ts::random::normal(ts::random::fold_in(key, ts::Array(int32_t(1))), {kFeatures}) * 0.1f;
  ts::Array xs = ts::random::normal(ts::random::fold_in(key, ts::Array(int32_t(2))), {kExamples, kFeatures});

  auto batched = ts::jit(ts::vmap(per_example, {ts::none, ts::none, 0}));
  auto looped = ts::jit([](const ts::Array& w, const ts::Array& b, const ts::Array& xs) {
    return ts::fori_loop(0, kExamples,
                         [&](const ts::Array& i, const ts::Array& out) {
                           ts::Array x = ts::reshape(ts::dynamic_slice(xs, {i, ts::Array(int32_t(0))}, {1, kFeatures}), {kFeatures});
                           ts::Array y = ts::reshape(per_example(w, b, x), {1, kFeatures});
                           return ts::dynamic_update_slice(out, y, {i, ts::Array(int32_t(0))});
                         },
                         ts::zeros_like(xs));
  });

  // Compile both and check they agree.
  std::vector<float> a = batched(w, b, xs).to_vector<float>(), c = looped(w, b, xs).to_vector<float>();
  float err = 0;
  for (size_t i = 0; i < a.size(); ++i) err = std::max(err, std::abs(a[i] - c[i]));
  if (err > 1e-5f) {
    std::fprintf(stderr, "vmap_loop: vmap and loop disagree by %g\n", err);
    return 1;
  }

  double t_vmap = tb::seconds_per_call([&] { batched(w, b, xs).block_until_ready(); }, 50);
  double t_loop = tb::seconds_per_call([&] { looped(w, b, xs).block_until_ready(); }, 5);
  tb::report("vmap.vmap_ms", t_vmap * 1e3, "ms");
  tb::report("vmap.fori_loop_ms", t_loop * 1e3, "ms");
  tb::report("vmap.over_loop", t_loop / t_vmap, "x");
  return 0;
}
