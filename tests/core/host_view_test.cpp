// host_view: a read-only view of a computed single-buffer array that outlives the Array,
// and nullopt where there is no single buffer (tracers, laid-out arrays, empty handles).
#include <gtest/gtest.h>

#include <cstring>

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
