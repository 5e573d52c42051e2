// Convolutions: a ResNet-style block (3x3 convolution, relu, 2x2 max-pool; float32, NHWC,
// batch 32, 64 channels, 56x56) forward and backward as jit(value_and_grad) over the input
// and the kernel, in tessel and — when TESSEL_JAX_PYTHON names a Python with JAX — in JAX
// (bench/baselines/jax_conv.py) in the same run; then the block's forward convolution on
// oneDNN against tessel's own loops (TESSEL_CONV_ONEDNN=0) on a smaller batch, with the
// oneDNN implementations each pass of the block runs.
//
// Rounds alternate between tessel and JAX, each keeping its best, so load from other
// processes on a shared machine hits both alike.
#include <cstdlib>
#include <random>
#include <vector>

#include "bench_util.h"
#include "ops/conv.h"
#include "tessel/conv.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace tb = tessel::bench;

namespace {

ts::Array uniform(const ts::Shape& shape, float scale, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(size_t(ts::shape_size(shape)));
  for (auto& x : v) x = u(gen);
  return ts::Array(v, shape);
}

const ts::ConvDimensionNumbers kNhwc{"NHWC", "HWIO", "NHWC"};

ts::Array block(const ts::Array& x, const ts::Array& w) {
  const ts::Array y = ts::conv_general_dilated(x, w, {1, 1}, "SAME", {.dimension_numbers = kNhwc});
  return ts::sum(ts::nn::max_pool(ts::maximum(y, 0.0f), {2, 2}, ts::Shape{2, 2}));
}

/// The oneDNN implementation of a convolution, or "direct" when tessel's loops run it.
std::string impl(const ts::Aval& lhs, const ts::Aval& rhs, const ts::ops::ConvSpec& s) {
  const std::string i = ts::ops::conv_onednn_impl(lhs, rhs, s);
  return i.empty() ? "direct" : i;
}

/// The passes of the block's gradient as the transpose rules write them (conv.cpp).
void print_implementations(int64_t batch) {
  const ts::Aval x({batch, 56, 56, 64}, ts::f32), w({3, 3, 64, 64}, ts::f32), g({batch, 56, 56, 64}, ts::f32);
  ts::ops::ConvSpec fwd{{0, 3, 1, 2}, {3, 2, 0, 1}, {0, 3, 1, 2}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1, 1, {}};
  ts::ops::ConvSpec dx = fwd, dw{{3, 0, 1, 2}, {3, 0, 1, 2}, {2, 3, 0, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1, 1, {}};
  dx.rhs_spec = {2, 3, 0, 1};
  std::printf("# oneDNN implementations: forward %s, input gradient %s, kernel gradient %s\n",
              impl(x, w, fwd).c_str(), impl(g, w, dx).c_str(), impl(x, g, dw).c_str());
}

}  // namespace

int main() {
  const int64_t batch = 32;
  const ts::Array x = uniform({batch, 56, 56, 64}, 1.0f, 1), w = uniform({3, 3, 64, 64}, 0.1f, 2);
  auto step = ts::jit(ts::value_and_grad<0, 1>(block));
  auto run = [&] {
    auto [v, g] = step(x, w);
    std::get<0>(g).block_until_ready();
    std::get<1>(g).block_until_ready();
  };
  run();
  const char* py = std::getenv("TESSEL_JAX_PYTHON");
  const std::string script = std::string(TESSEL_SOURCE_DIR) + "/bench/baselines/jax_conv.py";
  double tessel_s = 1e30, jax_s = 1e30;
  for (int round = 0; round < 3; ++round) {
    tessel_s = std::min(tessel_s, tb::seconds_per_call(run, 1, 2));
    if (py && *py) {
      const auto r = tb::run_baseline(tb::shell_quote(py) + " " + tb::shell_quote(script) + " " + std::to_string(batch) + " 2");
      if (auto it = r.find("conv.resnet_block_jax_s"); it != r.end()) jax_s = std::min(jax_s, it->second);
    }
  }
  tb::report("conv.resnet_block_s", tessel_s, "s");
  if (jax_s < 1e30) {
    tb::report("conv.resnet_block_jax_s", jax_s, "s");
    tb::report("conv.resnet_block_vs_jax", jax_s / tessel_s, "x");
  }
  print_implementations(batch);

  // The forward convolution alone, oneDNN against tessel's own loops, on 4 images.
  const ts::Array xs = uniform({4, 56, 56, 64}, 1.0f, 3);
  auto conv = ts::jit([](const ts::Array& a, const ts::Array& b) {
    return ts::conv_general_dilated(a, b, {1, 1}, "SAME", {.dimension_numbers = kNhwc});
  });
  conv(xs, w).block_until_ready();
  const double onednn_s = tb::seconds_per_call([&] { conv(xs, w).block_until_ready(); }, 3, 3);
  setenv("TESSEL_CONV_ONEDNN", "0", 1);
  const double direct_s = tb::seconds_per_call([&] { conv(xs, w).block_until_ready(); }, 1, 2);
  unsetenv("TESSEL_CONV_ONEDNN");
  const double flops = 2.0 * 4 * 56 * 56 * 64 * 64 * 9;
  tb::report("conv.forward_onednn_gflops", flops / onednn_s * 1e-9, "GFLOP/s");
  tb::report("conv.forward_direct_gflops", flops / direct_s * 1e-9, "GFLOP/s");
  tb::report("conv.onednn_vs_direct", direct_s / onednn_s, "x");
  return 0;
}
