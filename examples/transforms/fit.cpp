// Fits a one-hidden-layer tanh network to noisy samples of sin(3x) by full-batch gradient
// descent. The whole training run is one jitted function: a scan over the steps whose body
// takes value_and_grad of the loss; the loss maps the per-example model over the batch
// with vmap. Run: build/examples/transforms/transforms_fit
#include <cstdio>
#include <utility>

#include <tessel/tessel.h>

namespace ts = tessel;

// The parameters, a tree of Arrays (TESSEL_TREE lists the leaves).
struct Model {
  ts::Array w1, b1, w2, b2;
};
TESSEL_TREE(Model, w1, b1, w2, b2)

namespace {

constexpr int64_t kHidden = 32, kSamples = 128, kSteps = 2000, kChunk = 400;
constexpr float kLearningRate = 0.1f;

// One example: a scalar x to a scalar prediction.
ts::Array predict(const Model& m, const ts::Array& x) {
  ts::Array h = ts::tanh(m.w1 * x + m.b1);  // [hidden]
  return ts::sum(h * m.w2) + m.b2;
}

// Mean squared error over the batch: the model is mapped over xs, not over its parameters.
ts::Array loss(const Model& m, const ts::Array& xs, const ts::Array& ys) {
  ts::Array pred = ts::vmap(predict, {ts::none, 0})(m, xs);
  return ts::mean(ts::square(pred - ys));
}

// m - lr * g, leaf by leaf.
Model sgd(const Model& m, const Model& g) {
  std::vector<ts::Array> p = ts::tree_leaves(m), d = ts::tree_leaves(g);
  for (size_t i = 0; i < p.size(); ++i) p[i] = p[i] - kLearningRate * d[i];
  size_t pos = 0;
  return ts::tree_replace_leaves(m, p, pos);
}

}  // namespace

int main() {
  ts::Array key = ts::random::key(42);
  auto k = [&](int i) { return ts::random::fold_in(key, ts::Array(i)); };
  Model m{ts::random::normal(k(0), {kHidden}), ts::zeros({kHidden}, ts::f32),
          ts::random::normal(k(1), {kHidden}) * float(1 / std::sqrt(double(kHidden))), ts::zeros({}, ts::f32)};
  ts::Array xs = ts::linspace(-1.5, 1.5, kSamples);
  ts::Array ys = ts::sin(3.0f * xs) + 0.05f * ts::random::normal(k(2), {kSamples});

  // kChunk steps of gradient descent in one call: the scan's carry is the model, its ys
  // are the losses of each step.
  auto train = ts::jit([](const Model& m0, const ts::Array& xs, const ts::Array& ys) {
    return ts::scan(
        [&](const Model& m, std::nullopt_t) {
          auto [l, g] = ts::value_and_grad(loss)(m, xs, ys);
          return std::make_pair(sgd(m, g), l);
        },
        m0, ts::none, {.length = kChunk});
  });

  std::printf("step  loss\n");
  for (int64_t step = 0; step < kSteps; step += kChunk) {
    auto [next, losses] = train(m, xs, ys);
    std::printf("%4lld  %.5f\n", static_cast<long long>(step), losses.to_vector<float>()[0]);
    m = next;
  }
  float final_loss = loss(m, xs, ys).item<float>();
  std::printf("%4lld  %.5f\n", static_cast<long long>(kSteps), final_loss);

  // The trained model at a few points, next to the function it learned.
  for (float x : {-1.0f, 0.0f, 0.5f, 1.0f})
    std::printf("f(%+.1f) = %+.3f   sin(3x) = %+.3f\n", x, predict(m, ts::Array(x)).item<float>(), std::sin(3 * x));
  return final_loss < 0.05f ? 0 : 1;
}
