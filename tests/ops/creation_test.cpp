// Creation functions (zeros, ones, full, *_like, iota, arange, linspace, eye) and
// device_put, eagerly and as staged programs.
#include <cmath>

#include "core/array_impl.h"
#include "ir/trace.h"
#include "ops/shape_test_util.h"

using namespace shape_testing;

namespace {

class CreationDtypes : public testing::TestWithParam<ts::DType> {};

TEST_P(CreationDtypes, FilledArraysHoldTheirValue) {
  const ts::DType d = GetParam();
  for (auto& [a, want] : std::vector<std::pair<ts::Array, double>>{
           {ts::zeros({2, 3}, d), 0}, {ts::ones({2, 3}, d), 1}, {ts::full({2, 3}, 1, d), 1}}) {
    EXPECT_EQ(a.dtype(), d);
    EXPECT_FALSE(a.weak_type());
    EXPECT_EQ(a.shape(), (ts::Shape{2, 3}));
    EXPECT_EQ(vals(a), std::vector<double>(6, want));
  }
  EXPECT_EQ(ts::zeros({}, d).shape(), ts::Shape{});
  EXPECT_EQ(ts::ones({0, 4}, d).size(), 0);
}

TEST_P(CreationDtypes, IotaCountsAlongItsDimension) {
  const ts::DType d = GetParam();
  ts::Array a = ts::iota(d, {2, 3}, 1), b = ts::iota(d, {2, 3}, 0);
  EXPECT_EQ(a.dtype(), d);
  const double two = d == ts::bool_ ? 1 : 2;  // bool holds i != 0
  EXPECT_EQ(vals(a), (std::vector<double>{0, 1, two, 0, 1, two}));
  EXPECT_EQ(vals(b), (std::vector<double>{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(vals(ts::iota(d, {2, 3}, -1)), vals(a));
}

TEST_P(CreationDtypes, EyeHasOnesOnDiagonalK) {
  const ts::DType d = GetParam();
  EXPECT_EQ(vals(ts::eye(3, ts::none, 0, d)), (std::vector<double>{1, 0, 0, 0, 1, 0, 0, 0, 1}));
  EXPECT_EQ(vals(ts::eye(2, 3, 1, d)), (std::vector<double>{0, 1, 0, 0, 0, 1}));
  EXPECT_EQ(vals(ts::eye(3, 2, -1, d)), (std::vector<double>{0, 0, 1, 0, 0, 1}));
  EXPECT_EQ(vals(ts::eye(2, 2, 5, d)), (std::vector<double>(4, 0)));
  EXPECT_EQ(ts::eye(2, 3, 0, d).dtype(), d);
}

INSTANTIATE_TEST_SUITE_P(All, CreationDtypes, testing::ValuesIn(kDTypes), DTypeName());

TEST(CreationOps, FullTakesTheValueDtypeUnlessGiven) {
  EXPECT_EQ(ts::full({2}, 1.5).dtype(), ts::f32);  // a C++ double is weak: the default float, as in JAX
  EXPECT_EQ(ts::full({2}, 3).dtype(), ts::i32);
  EXPECT_EQ(ts::full({2}, 1.5, ts::i32).to_vector<int>(), (std::vector<int>{1, 1}));
  EXPECT_EQ(ts::full({1}, ts::complex64_t(1, -2)).to_vector<ts::complex64_t>()[0], ts::complex64_t(1, -2));
  expect_error<ts::ShapeError>([] { ts::zeros({2, -1}); }, "zeros: negative dimension in shape (2, -1)");
}

TEST(CreationOps, LikeFunctionsKeepShapeDtypeAndWeakness) {
  ts::Array x = ts::ones({2, 2}, ts::f16);
  EXPECT_EQ(ts::zeros_like(x).dtype(), ts::f16);
  EXPECT_EQ(vals(ts::ones_like(x)), std::vector<double>(4, 1));
  EXPECT_EQ(vals(ts::full_like(x, 2.5)), std::vector<double>(4, 2.5));
  EXPECT_EQ(vals(ts::empty_like(x)), std::vector<double>(4, 0));
  ts::Array w(2.0);  // weak f64
  EXPECT_TRUE(ts::zeros_like(w).weak_type());
  EXPECT_EQ(ts::zeros_like(w).dtype(), ts::f64);
}

TEST(CreationOps, ArangeMatchesNumPy) {
  EXPECT_EQ(ts::arange(5).dtype(), ts::i32);
  EXPECT_EQ(ts::arange(5).to_vector<int>(), (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(ts::arange(-3).size(), 0);
  EXPECT_EQ(ts::arange(1.0, 2.0, 0.25).to_vector<float>(), (std::vector<float>{1.0f, 1.25f, 1.5f, 1.75f}));
  EXPECT_EQ(ts::arange(5.0, 0.0, -2.0, ts::i64).to_vector<int64_t>(), (std::vector<int64_t>{5, 3, 1}));
  EXPECT_EQ(ts::arange(0.0, 1.0, 0.5, ts::i32).to_vector<int>(), (std::vector<int>{0, 0}));
  EXPECT_EQ(ts::arange(2.0, 1.0).size(), 0);
  EXPECT_EQ(ts::arange(0.0, 3.0, 1.0, ts::f16).to_vector<float>(), (std::vector<float>{0, 1, 2}));
  EXPECT_EQ(ts::arange(0.0, 2.0, 1.0, ts::c64).dtype(), ts::c64);
  expect_error<ts::ValueError>([] { ts::arange(0.0, 1.0, 0.0); }, "arange: step must not be zero");
}

TEST(CreationOps, LinspaceEndsExactlyAtStop) {
  auto v = ts::linspace(0.0, 1.0, 5, true, ts::f64).to_vector<double>();
  EXPECT_EQ(v, (std::vector<double>{0, 0.25, 0.5, 0.75, 1.0}));
  v = ts::linspace(0.0, 1.0, 4, false, ts::f64).to_vector<double>();
  EXPECT_EQ(v, (std::vector<double>{0, 0.25, 0.5, 0.75}));
  auto f = ts::linspace(0.1, 0.7, 7).to_vector<float>();
  ASSERT_EQ(f.size(), 7u);
  for (int i = 0; i < 7; ++i) EXPECT_NEAR(f[size_t(i)], 0.1 + 0.1 * i, 1e-6);
  EXPECT_EQ(f.back(), 0.7f);
  EXPECT_EQ(ts::linspace(2.0, 3.0, 1).to_vector<float>(), (std::vector<float>{2.0f}));
  EXPECT_EQ(ts::linspace(2.0, 3.0, 0).size(), 0);
  EXPECT_EQ(ts::linspace(0.0, 6.0, 4, true, ts::i32).to_vector<int>(), (std::vector<int>{0, 2, 4, 6}));
  EXPECT_EQ(ts::linspace(-1.0, 1.0, 5, true, ts::i32).to_vector<int>(), (std::vector<int>{-1, -1, 0, 0, 1}));
  expect_error<ts::ValueError>([] { ts::linspace(0, 1, -1); }, "linspace: num must be >= 0");
}

TEST(CreationOps, DevicePutCopiesAndCommits) {
  auto devs = ts::devices();
  ASSERT_GE(devs.size(), 4u) << "run with TESSEL_CPU_DEVICES=8";
  ts::Array x = ts::arange(6).reshape({2, 3});
  ts::Array y = ts::device_put(x, devs[3]);
  EXPECT_EQ(y.device(), devs[3]);
  EXPECT_TRUE(ts::detail::as_concrete(y)->committed);
  EXPECT_FALSE(ts::detail::as_concrete(x)->committed);
  EXPECT_EQ(y.to_vector<int>(), x.to_vector<int>());
  EXPECT_NE(ts::detail::as_concrete(y)->buffer(), ts::detail::as_concrete(x)->buffer());
  // Operations on committed arrays run on their device.
  EXPECT_EQ((y + x).device(), devs[3]);
  ts::Array z = ts::device_put(x, devs[1]);
  expect_error<ts::ValueError>([&] { (void)(y + z); }, "committed to different devices");
  // Putting onto the device an array lives on shares the buffer.
  ts::Array w = ts::device_put(y, devs[3]);
  EXPECT_EQ(ts::detail::as_concrete(w)->buffer(), ts::detail::as_concrete(y)->buffer());
  expect_error<ts::ValueError>([&] { ts::device_put(x, ts::Device()); }, "device_put: the target Device is empty");
}

TEST(CreationOps, StagedCreationUsesLiteralsAndPrimitives) {
  auto prog = ts::detail::trace_to_program(
      [](std::span<const ts::Array> a) {
        return std::vector<ts::Array>{ts::zeros({128, 128}, ts::f32) + a[0], ts::device_put(a[0], ts::devices()[2]),
                                      ts::eye(3) , ts::arange(4)};
      },
      std::vector<ts::Aval>{ts::Aval({128, 128}, ts::f32)});
  const std::string text = ts::ir::print_program(prog);
  EXPECT_TRUE(prog.consts.empty()) << text;  // no materialised constant arrays
  EXPECT_NE(text.find("broadcast_in_dim"), std::string::npos) << text;
  EXPECT_NE(text.find("0.0:f32[]"), std::string::npos) << text;
  EXPECT_NE(text.find("device_put[device=2]"), std::string::npos) << text;
  EXPECT_NE(text.find("iota"), std::string::npos) << text;
}

}  // namespace
