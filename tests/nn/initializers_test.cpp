// ts::nn::initializers: fans, scales and error paths (the draws are checked against JAX's in
// tests/parity/cases_random.py).
#include <gtest/gtest.h>

#include <cmath>

#include "expect_error.h"
#include "tessel/nn_initializers.h"
#include "tessel/ops.h"
#include "tessel/random.h"

namespace ts = tessel;
namespace init = tessel::nn::initializers;

namespace {

template <class E, class F> void expect_throw_mentioning(F f, const std::string& needle) {
  try {
    f();
    FAIL() << "expected an error mentioning " << needle;
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(NnInitializers, FansFollowJaxAxes) {
  auto [fi, fo] = init::compute_fans({3, 3, 16, 32});
  EXPECT_EQ(fi, 16.0 * 9);
  EXPECT_EQ(fo, 32.0 * 9);
  auto [bi, bo] = init::compute_fans({2, 3, 4, 5}, {.in_axis = {1, 2}, .out_axis = {-1}, .batch_axis = {0}});
  EXPECT_EQ(bi, 12.0);
  EXPECT_EQ(bo, 5.0);
  expect_throw_mentioning<ts::ValueError>([] { init::compute_fans({7}); }, "in_axis");
  expect_throw_mentioning<ts::ValueError>([] { init::compute_fans({2, 3}, {.in_axis = {4}}); }, "axis 4");
}

TEST(NnInitializers, ScalesAndDefaults) {
  ts::Array k = ts::random::key(0);
  EXPECT_EQ(init::zeros(k, {2, 3}).dtype(), ts::DType::float32);
  EXPECT_EQ(init::ones(k, {2}, ts::DType::float64).dtype(), ts::DType::float64);
  ts::Array filled = init::constant(ts::Array(-7.0))(k, {2, 2});
  EXPECT_EQ((filled[{1, 1}].item<float>()), -7.0f);
  // glorot_uniform draws in +-sqrt(6 / (fan_in + fan_out)).
  ts::Array w = init::glorot_uniform()(k, {200, 100});
  EXPECT_LE(ts::max(ts::abs(w)).item<float>(), std::sqrt(6.0f / 300.0f));
  EXPECT_GT(ts::max(ts::abs(w)).item<float>(), 0.9f * std::sqrt(6.0f / 300.0f));
  // he_normal's standard deviation is sqrt(2 / fan_in) (after the truncation correction).
  ts::Array h = init::he_normal()(k, {400, 300});
  EXPECT_NEAR(std::sqrt(ts::mean(h * h).item<float>()), std::sqrt(2.0f / 400.0f), 2e-3);
  EXPECT_EQ(init::normal(1.0, ts::DType::float64)(k, {3}).dtype(), ts::DType::float64);
  EXPECT_EQ(init::normal()(k, {3}, ts::DType::float16).dtype(), ts::DType::float16);
}

TEST(NnInitializers, OrthogonalAndDeltaOrthogonal) {
  ts::Array k = ts::random::key(3);
  ts::Array q = init::orthogonal(2.0)(k, {6, 4});  // columns orthogonal with norm 2
  ts::Array gram = ts::matmul(ts::transpose(q), q);
  EXPECT_LT(ts::max(ts::abs(gram - 4.0f * ts::eye(4))).item<float>(), 1e-4f);
  ts::Array d = init::delta_orthogonal()(k, {3, 3, 4, 4});
  EXPECT_EQ(ts::sum(ts::abs(d[{0}])).item<float>(), 0.0f);
  ts::Array centre = d[{1, 1}];
  EXPECT_LT(ts::max(ts::abs(ts::matmul(ts::transpose(centre), centre) - ts::eye(4))).item<float>(), 1e-5f);
  expect_throw_mentioning<ts::ValueError>([&] { init::orthogonal()(k, {5}); }, "orthogonal");
  expect_throw_mentioning<ts::ValueError>([&] { init::delta_orthogonal()(k, {3, 4}); }, "delta_orthogonal");
  expect_throw_mentioning<ts::ValueError>([&] { init::delta_orthogonal()(k, {3, 5, 4}); }, "fan_in");
  expect_throw_mentioning<ts::ValueError>([] { init::variance_scaling(1.0, "fan_sideways", "normal"); }, "mode");
  expect_throw_mentioning<ts::ValueError>([] { init::variance_scaling(1.0, "fan_in", "cauchy"); }, "distribution");
  expect_throw_mentioning<ts::DTypeError>([&] { init::he_uniform()(k, {2, 2}, ts::DType::int32); }, "variance_scaling");
}

}  // namespace
