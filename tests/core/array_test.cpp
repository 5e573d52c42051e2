// Arrays: construction, readback, printing, devices, asynchronous readiness and errors.
#include <gtest/gtest.h>

#include "core/array_impl.h"
#include "ir/primitive.h"
#include "ir/trace.h"
#include "tessel/tessel.h"

namespace ts = tessel;

TEST(Array, FromScalarsIsWeakTyped) {
  ts::Array d(2.5), f(2.5f), i(3), l(int64_t(4)), b(true);
  EXPECT_EQ(d.dtype(), ts::f64);
  EXPECT_TRUE(d.weak_type());
  EXPECT_EQ(f.dtype(), ts::f32);
  EXPECT_EQ(i.dtype(), ts::i32);
  EXPECT_EQ(l.dtype(), ts::i64);
  EXPECT_EQ(b.dtype(), ts::bool_);
  EXPECT_EQ(d.ndim(), 0);
  EXPECT_EQ(d.item<double>(), 2.5);
  ts::Array strong(ts::Scalar(7, ts::u16));
  EXPECT_EQ(strong.dtype(), ts::u16);
  EXPECT_FALSE(strong.weak_type());
}

TEST(Array, FromVectorsAndInitializerLists) {
  ts::Array v(std::vector<int16_t>{1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(v.shape(), (ts::Shape{2, 3}));
  EXPECT_EQ(v.dtype(), ts::i16);
  EXPECT_EQ(v.to_vector<double>(), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  ts::Array m{{1.0f, 2.0f}, {3.0f, 4.0f}};
  EXPECT_EQ(m.shape(), (ts::Shape{2, 2}));
  ts::Array l{1.0, 2.0, 3.0};
  EXPECT_EQ(l.dtype(), ts::f64);
  ts::Array bools(std::vector<bool>{true, false});
  EXPECT_EQ(bools.dtype(), ts::bool_);
  EXPECT_EQ(bools.to_vector<bool>(), (std::vector<bool>{true, false}));
  EXPECT_THROW(ts::Array(std::vector<float>{1, 2, 3}, {2, 2}), ts::ShapeError);
  EXPECT_THROW((ts::Array{{1.0f, 2.0f}, {3.0f}}), ts::ShapeError);
}

TEST(Array, ItemNeedsOneElement) {
  EXPECT_THROW(ts::Array(std::vector<float>{1, 2}).item<float>(), ts::ShapeError);
}

TEST(Array, EmptyHandleGivesClearErrors) {
  ts::Array e;
  EXPECT_FALSE(e.valid());
  EXPECT_THROW(e.shape(), ts::ValueError);
  EXPECT_THROW(e + 1.0, ts::ValueError);
}

TEST(Array, PrintsLikeNumPy) {
  EXPECT_EQ(ts::Array({{1.0f, 2.0f}, {3.0f, 4.5f}}).to_string(), "[[1.  2. ]\n [3.  4.5]]");
  EXPECT_EQ(ts::Array(std::vector<int32_t>{1, -20, 3}).to_string(), "[  1 -20   3]");
  EXPECT_EQ(ts::Array(std::vector<bool>{true, false}).to_string(), "[ True False]");
  EXPECT_EQ(ts::Array(2.5).to_string(), "2.5");
  std::ostringstream os;
  os << ts::Array(std::vector<ts::complex64_t>{{1, -2}});
  EXPECT_EQ(os.str(), "[1.-2.j]");
}

TEST(Devices, VirtualCpuDevicesFromEnvironment) {
  // Tests run with TESSEL_CPU_DEVICES=8.
  auto devs = ts::devices();
  ASSERT_EQ(devs.size(), 8u);
  EXPECT_EQ(ts::local_device_count(), 8);
  EXPECT_EQ(devs[3].id(), 3);
  EXPECT_EQ(devs[3].to_string(), "cpu:3");
  EXPECT_EQ(ts::process_index(), 0);
  EXPECT_EQ(ts::process_count(), 1);
}

TEST(Devices, DevicePutCommitsAndOpsFollow) {
  auto devs = ts::devices();
  ts::Array x = ts::device_put(ts::Array(std::vector<float>{1, 2}), devs[2]);
  EXPECT_EQ(x.device(), devs[2]);
  ts::Array y = x * 2.0 + 1.0;
  EXPECT_EQ(y.device(), devs[2]);
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{3, 5}));
  ts::Array z = ts::device_put(ts::ones({2}), devs[5]);
  try {
    (void)(x + z);
    FAIL();
  } catch (const ts::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("cpu:2 and cpu:5"), std::string::npos) << e.what();
  }
}

namespace {
// A primitive whose kernel fails at run time, to check error propagation.
void failing_kernel(const ts::ir::KernelCall&) { throw ts::Error("fail_kernel: deliberate failure"); }
std::vector<ts::Aval> same(std::span<const ts::Aval> in, const ts::ir::Params&) { return {in[0]}; }
const ts::ir::Primitive& fail_p = ts::ir::register_primitive(
    {.name = "test_fail", .abstract_eval = same, .cpu_kernel = failing_kernel});
}  // namespace

TEST(Async, KernelErrorsReachTheCallerAndPropagate) {
  ts::Array big = ts::ones({1 << 16});  // large enough to run on the device thread
  ts::Array bad = ts::detail::bind1(fail_p, {big});
  ts::Array downstream = bad * 2.0;  // dispatch succeeds; the error flows on
  EXPECT_THROW(bad.block_until_ready(), ts::Error);
  try {
    downstream.to_vector<float>();
    FAIL();
  } catch (const ts::Error& e) {
    EXPECT_NE(std::string(e.what()).find("deliberate failure"), std::string::npos);
  }
  auto f = ts::jit([](const ts::Array& x) { return ts::detail::bind1(fail_p, {x}) + 1.0; });
  EXPECT_THROW(f(ts::ones({4})).block_until_ready(), ts::Error);
}

TEST(Async, DispatchReturnsBeforeLargeWorkFinishes) {
  ts::Array x = ts::ones({2000, 2000});
  ts::Array y = x;
  for (int i = 0; i < 5; ++i) y = ts::sin(y) + x;
  y.block_until_ready();
  EXPECT_TRUE(y.is_ready());
}
