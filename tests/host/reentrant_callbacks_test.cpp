// Host callbacks that compute with tessel while every device of a launch runs its part
// (docs/host_callbacks.md, "Callbacks may call tessel"): per-device callbacks under
// shard_map, with and without jit, followed by collectives, and a sharded jit's one call
// that the other devices wait for. The callback's arrays are new ones on the default device,
// whose own stream is busy with the launch (or waits for the calling device): the callback's
// work must not queue behind it.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "tessel/tessel.h"

namespace {

namespace ts = tessel;

constexpr int64_t kBlock = 3;  // elements per device
constexpr int kRepeats = 10;

// What the callback computes from its block `y` with arrays it makes itself.
enum class Body { kZerosLike, kArange };

ts::Array compute_in_callback(Body body, const ts::Array& y) {
  if (body == Body::kZerosLike) return y + ts::zeros_like(y);
  ts::Array a = ts::arange(kBlock, ts::f32);
  return y + (a + a);
}

// The block of device i after the callback: x = arange(n * kBlock), plus 2 * arange(kBlock)
// for kArange.
std::vector<float> expected(Body body, int n) {
  std::vector<float> out;
  for (int i = 0; i < n; ++i)
    for (int64_t k = 0; k < kBlock; ++k) out.push_back(float(i * kBlock + k) + (body == Body::kArange ? 2.0f * k : 0));
  return out;
}

ts::Mesh first_devices(int n) {
  std::vector<ts::Device> all = ts::devices();
  return ts::Mesh(std::vector<ts::Device>(all.begin(), all.begin() + n), {n}, {"i"});
}

class ReentrantCallbacks : public ::testing::TestWithParam<std::tuple<int, bool, Body>> {
 protected:
  void SetUp() override {
    std::tie(n, use_jit, body) = GetParam();
    if (ts::device_count() < n) GTEST_SKIP() << "needs TESSEL_CPU_DEVICES>=" << n;
    mesh = first_devices(n);
    x = ts::device_put(ts::arange(n * kBlock, ts::f32), ts::NamedSharding(mesh, ts::P("i")));
  }
  template <class F> ts::Array run(F per_device) {
    auto mapped = ts::shard_map(per_device, mesh, {ts::P("i")}, {ts::P("i")});
    return use_jit ? ts::jit(mapped)(x) : mapped(x);
  }
  int n = 0;
  bool use_jit = false;
  Body body = Body::kZerosLike;
  ts::Mesh mesh;
  ts::Array x;
};

TEST_P(ReentrantCallbacks, PureCallbackOnEveryDeviceComputesWithTessel) {
  const Body b = body;
  auto per_device = [b](const ts::Array& block) {
    return ts::pure_callback([b](const ts::Array& y) { return compute_in_callback(b, y); },
                             ts::ShapeDtype({kBlock}, ts::f32), block);
  };
  for (int r = 0; r < kRepeats; ++r) EXPECT_EQ(run(per_device).to_vector<float>(), expected(body, n)) << "run " << r;
}

// The devices meet in a collective after the callback: a device that finished its callback
// waits there for the others, whose callbacks compute on its stream's device.
TEST_P(ReentrantCallbacks, CallbackBeforeCollective) {
  const Body b = body;
  auto per_device = [b](const ts::Array& block) {
    ts::Array y = ts::host::call([b](const ts::Array& v) { return compute_in_callback(b, v); }, block,
                                 {.result_shape = ts::ShapeDtype({kBlock}, ts::f32)});
    return y - ts::pmean(y, "i") + ts::pmean(y, "i");
  };
  const std::vector<float> want = expected(body, n);
  for (int r = 0; r < kRepeats; ++r) {
    std::vector<float> got = run(per_device).to_vector<float>();
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k) EXPECT_NEAR(got[k], want[k], 1e-4) << "run " << r << " element " << k;
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, ReentrantCallbacks,
                         ::testing::Combine(::testing::Values(2, 4), ::testing::Bool(),
                                            ::testing::Values(Body::kZerosLike, Body::kArange)),
                         [](const auto& info) {
                           return std::to_string(std::get<0>(info.param)) + "Devices" +
                                  (std::get<1>(info.param) ? "Jit" : "Eager") +
                                  (std::get<2>(info.param) == Body::kZerosLike ? "ZerosLike" : "Arange");
                         });

// A sharded jit calls back on one device (device_index) while the others wait for its result
// in a collective; the callback computes on the default device, which is one of them.
TEST(ReentrantCallbacksShardedJit, OneDeviceCallsBackWhileTheOthersWait) {
  for (int n : {2, 4}) {
    if (ts::device_count() < n) GTEST_SKIP() << "needs TESSEL_CPU_DEVICES>=" << n;
    ts::Mesh mesh = first_devices(n);
    ts::Array x = ts::device_put(ts::arange(n * kBlock, ts::f32), ts::NamedSharding(mesh, ts::P("i")));
    auto f = ts::jit([](const ts::Array& v) {
      auto on_host = [](const ts::Array& whole) { return whole + ts::zeros_like(whole) * ts::arange(1, ts::f32); };
      return ts::host::call(on_host, v, {.result_shape = ts::ShapeDtype(v.shape(), v.dtype()), .device_index = 1});
    });
    for (int r = 0; r < kRepeats; ++r)
      EXPECT_EQ(f(x).to_vector<float>(), expected(Body::kZerosLike, n)) << n << " devices, run " << r;
  }
}

}  // namespace
