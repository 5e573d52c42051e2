// tessel::random's samplers: error paths (values are checked bit for bit against JAX in
// tests/parity/cases_random.py) and a few sanity properties.
#include <gtest/gtest.h>

#include <string>

#include "tessel/ops.h"
#include "tessel/random.h"

namespace ts = tessel;
namespace tr = tessel::random;

namespace {

template <class E, class F> void expect_error(F f, const std::string& needle) {
  try {
    f();
    FAIL() << "expected an error mentioning " << needle;
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(RandomDistributions, RejectBadKeysDtypesAndShapes) {
  ts::Array k = tr::key(0);
  expect_error<ts::ValueError>([&] { tr::randint(ts::Array(std::vector<uint32_t>{1, 2, 3}), {2}, 0, 5); }, "randint");
  expect_error<ts::DTypeError>([&] { tr::randint(k, {2}, 0, 5, ts::DType::float32); }, "randint");
  expect_error<ts::ShapeError>([&] { tr::randint(k, {2}, 0, ts::Array(std::vector<int32_t>{1, 2, 3}), ts::DType::int32); },
                               "randint");
  expect_error<ts::DTypeError>([&] { tr::bernoulli(k, ts::Array(1), ts::Shape{3}); }, "bernoulli");
  expect_error<ts::ShapeError>([&] { tr::bernoulli(k, ts::Array(std::vector<float>{0.1f, 0.2f}), ts::Shape{3}); },
                               "bernoulli");
  expect_error<ts::DTypeError>([&] { tr::gumbel(k, {2}, ts::DType::int32); }, "gumbel");
  expect_error<ts::DTypeError>([&] { tr::geometric(k, ts::Array(0.5f), ts::Shape{2}, ts::DType::float32); }, "geometric");
  expect_error<ts::ValueError>([&] { tr::key_data(ts::Array(std::vector<uint32_t>{1, 2, 3})); }, "key_data");
  expect_error<ts::ValueError>([&] { tr::wrap_key_data(ts::Array(std::vector<int32_t>{1, 2})); }, "wrap_key_data");
}

TEST(RandomDistributions, CategoricalChecksAxisShapeAndSampleCount) {
  ts::Array k = tr::key(1);
  ts::Array logits = ts::zeros({3, 4});
  expect_error<ts::ValueError>([&] { tr::categorical(k, logits, 2); }, "categorical");
  expect_error<ts::ShapeError>([&] { tr::categorical(k, logits, -1, ts::Shape{5, 2}); }, "categorical");
  expect_error<ts::ValueError>([&] { tr::categorical(k, logits, -1, ts::Shape{5, 3}, false); }, "categorical");
  ts::Array draws = tr::categorical(k, logits, -1, ts::Shape{4, 3}, false);  // 4 distinct of 4 per row
  ts::Array sorted = ts::sum(draws, {0});
  for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(sorted[{i}].item<int32_t>(), 0 + 1 + 2 + 3);
}

TEST(RandomDistributions, RandintStaysInRangeAndEmptyRangeGivesMinval) {
  ts::Array k = tr::key(3);
  ts::Array x = tr::randint(k, {1000}, -3, 4);
  EXPECT_GE(ts::min(x).item<int32_t>(), -3);
  EXPECT_LE(ts::max(x).item<int32_t>(), 3);
  // JAX's rule: maxval <= minval yields minval.
  EXPECT_EQ(ts::max(tr::randint(k, {10}, 7, 7)).item<int32_t>(), 7);
  ts::Array t = tr::truncated_normal(k, ts::Array(-0.5f), ts::Array(0.25f), ts::Shape{1000});
  EXPECT_GT(ts::min(t).item<float>(), -0.5f);
  EXPECT_LT(ts::max(t).item<float>(), 0.25f);
}

}  // namespace
