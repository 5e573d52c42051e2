// host_view: a read-only view of a computed single-buffer array that outlives the Array,
// and nullopt where there is no single buffer (tracers, laid-out arrays, empty handles).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "tessel/host_view.h"
#include "tessel/tessel.h"

namespace ts = tessel;

TEST(HostView, ViewsTheComputedElementsAndKeepsThemAlive) {
  std::optional<ts::HostView> v;
  {
    ts::Array x = ts::arange(6, ts::f32).reshape({2, 3}) * 2.0f;
    v = ts::host_view(x);
  }
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->shape, (ts::Shape{2, 3}));
  EXPECT_EQ(v->dtype, ts::f32);
  ASSERT_NE(v->owner, nullptr);
  const float* p = static_cast<const float*>(v->data);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(p[i], 2.0f * float(i));
}

TEST(HostView, BoolIsOneBytePerElement) {
  auto v = ts::host_view(ts::Array(std::vector<bool>{true, false, true}));
  ASSERT_TRUE(v.has_value());
  const unsigned char* p = static_cast<const unsigned char*>(v->data);
  EXPECT_EQ(p[0], 1);
  EXPECT_EQ(p[1], 0);
  EXPECT_EQ(p[2], 1);
}

TEST(HostView, NoSingleBufferGivesNullopt) {
  EXPECT_FALSE(ts::host_view(ts::Array()).has_value());
  bool traced_has_view = true;
  ts::jit([&](const ts::Array& t) {
    traced_has_view = ts::host_view(t).has_value();
    return t;
  })(ts::ones({2}));
  EXPECT_FALSE(traced_has_view);
  if (ts::devices().size() >= 2) {
    ts::Mesh mesh = ts::make_mesh({2}, {"x"});
    ts::Array laid_out = ts::device_put(ts::arange(4, ts::f32), ts::NamedSharding(mesh, ts::P("x")));
    EXPECT_FALSE(ts::host_view(laid_out).has_value());
  }
}

// ---- wrap_host_memory: arrays over memory owned elsewhere ----

namespace {

/// 64-byte aligned floats 0, 1, ..., n-1 owned by the test, with a count of releases.
struct Owned {
  explicit Owned(size_t n) : data(static_cast<float*>(std::aligned_alloc(64, n * sizeof(float)))), n(n) {
    for (size_t i = 0; i < n; ++i) data[i] = float(i);
  }
  ~Owned() { std::free(data); }
  float* data;
  size_t n;
  std::atomic<int> releases = 0;
};

/// Whether `owned` was released `want` times within a few seconds: the last reference may be
/// a finished computation's, dropped on its stream thread just after the result is ready.
bool released(const Owned& owned, int want) {
  for (int i = 0; i < 2000 && owned.releases.load() < want; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return owned.releases.load() == want;
}

}  // namespace

TEST(WrapHostMemory, ComputesOnTheMemoryWithoutACopyAndReleasesOnce) {
  Owned owned(6);
  {
    ts::Array x = ts::wrap_host_memory(owned.data, {2, 3}, ts::f32, [&] { ++owned.releases; });
    auto v = ts::host_view(x);
    ASSERT_TRUE(v.has_value());
    EXPECT_EQ(v->data, owned.data);  // the same memory: no copy
    ts::Array y = ts::jit([](const ts::Array& a) { return ts::sum(a * 2.0f, {1}); })(x);
    EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{6.0f, 24.0f}));
    EXPECT_EQ((x + 1.0f).to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
    v.reset();
    y = ts::Array();
    EXPECT_EQ(owned.releases.load(), 0);  // x still holds the memory
  }
  EXPECT_TRUE(released(owned, 1));
}

TEST(WrapHostMemory, TheViewKeepsTheMemoryAfterTheArrayIsGone) {
  Owned owned(4);
  std::optional<ts::HostView> v;
  {
    ts::Array x = ts::wrap_host_memory(owned.data, {4}, ts::f32, [&] { ++owned.releases; });
    v = ts::host_view(x);
  }
  EXPECT_EQ(owned.releases.load(), 0);
  v.reset();
  EXPECT_TRUE(released(owned, 1));
}

TEST(WrapHostMemory, DonatingReleasesTheMemoryAndNeverWritesIt) {
  Owned owned(1024);
  auto step = ts::jit([](const ts::Array& a) { return a * 3.0f + 1.0f; }, {.donate_argnums = {0}});
  ts::Array y;
  {
    ts::Array x = ts::wrap_host_memory(owned.data, {1024}, ts::f32, [&] { ++owned.releases; });
    y = step(x);
    EXPECT_THROW(x.to_vector<float>(), ts::ValueError);  // donated, as any donated array
  }
  std::vector<float> got = y.to_vector<float>();
  EXPECT_EQ(got[10], 31.0f);
  EXPECT_TRUE(released(owned, 1));
  for (size_t i = 0; i < owned.n; ++i) ASSERT_EQ(owned.data[i], float(i)) << "element " << i << " was overwritten";
}

TEST(WrapHostMemory, RefusesMisalignedNonContiguousAndNullMemoryNaming) {
  Owned owned(16);
  int releases = 0;
  auto release = [&] { ++releases; };
  auto message = [&](auto&& f) -> std::string {
    try {
      f();
    } catch (const ts::ValueError& e) {
      return e.what();
    }
    return "no error";
  };
  const char* bytes = reinterpret_cast<const char*>(owned.data);
  EXPECT_NE(message([&] { ts::wrap_host_memory(bytes + 2, {3}, ts::f32, release); }).find("not aligned to 4 bytes"),
            std::string::npos);
  EXPECT_NE(message([&] { ts::wrap_host_memory(bytes + 4, {3}, ts::c128, release); }).find("not aligned to 8 bytes"),
            std::string::npos);
  EXPECT_NE(message([&] { ts::wrap_host_memory(owned.data, {2, 3}, ts::f32, release, {4, 8}); })
                .find("not C-contiguous (dimension 1 has a stride of 8 bytes where row-major order needs 4)"),
            std::string::npos);
  EXPECT_NE(message([&] { ts::wrap_host_memory(nullptr, {2}, ts::f32, release); }).find("null pointer"),
            std::string::npos);
  EXPECT_EQ(releases, 0);  // refused memory stays the caller's
  // Size-1 dimensions may have any stride; zero elements need no memory and release at once.
  ts::Array row = ts::wrap_host_memory(owned.data, {1, 3}, ts::f32, release, {999, 4});
  EXPECT_EQ(row.to_vector<float>(), (std::vector<float>{0, 1, 2}));
  ts::Array empty = ts::wrap_host_memory(nullptr, {0, 3}, ts::f32, release);
  EXPECT_EQ(empty.shape(), (ts::Shape{0, 3}));
  EXPECT_EQ(releases, 1);
}
