// tessel::random's samplers: error paths (values are checked bit for bit against JAX in
// tests/parity/cases_random.py) and a few sanity properties.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "tessel/ops.h"
#include "tessel/jit.h"
#include "tessel/random.h"
#include "tessel/sort.h"
#include "tessel/transforms.h"

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

// The modes' draws are JAX's bit for bit (parity cases); here: "highest" is a gumbel mode only,
// and every mode samples the right distribution.
TEST(RandomDistributions, ModesCheckTheirSamplerAndKeepTheDistribution) {
  ts::Array k = tr::key(5);
  expect_error<ts::ValueError>([&] { tr::bernoulli(k, ts::Array(0.5f), ts::Shape{2}, tr::Mode::highest); },
                               "Mode::low or Mode::high");
  const ts::Shape many{1 << 18};
  for (tr::Mode m : {tr::Mode::low, tr::Mode::high}) {
    const float share = ts::mean(ts::astype(tr::bernoulli(k, ts::Array(0.3f), many, m), ts::DType::float32)).item<float>();
    EXPECT_NEAR(share, 0.3f, 0.005f);
  }
  for (tr::Mode m : {tr::Mode::low, tr::Mode::high, tr::Mode::highest})
    for (ts::DType d : {ts::DType::float32, ts::DType::float64}) {
      const ts::Array g = tr::gumbel(k, many, d, m);
      EXPECT_NEAR(ts::astype(ts::mean(g), ts::DType::float64).item<double>(), 0.5772156649, 0.01);  // Euler's gamma
      EXPECT_TRUE(ts::all(ts::isfinite(g)).item<bool>());
    }
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

namespace {

TEST(RandomDistributions, GammaFamilyChecksArgumentsAndDrawsPositiveValues) {
  ts::Array k = tr::key(5);
  expect_error<ts::DTypeError>([&] { tr::gamma(k, ts::Array(2.0f), ts::Shape{3}, ts::DType::int32); }, "gamma");
  expect_error<ts::ShapeError>([&] { tr::gamma(k, ts::Array(std::vector<float>{1.f, 2.f}), ts::Shape{3}); }, "gamma");
  expect_error<ts::ValueError>([&] { tr::dirichlet(k, ts::Array(1.0f)); }, "dirichlet");
  expect_error<ts::ValueError>([&] { tr::generalized_normal(k, -1.0, {2}); }, "generalized_normal");
  expect_error<ts::ValueError>([&] { tr::ball(k, 0); }, "ball");
  ts::Array g = tr::gamma(k, ts::Array(std::vector<float>{0.2f, 1.0f, 5.0f}), ts::Shape{400, 3});
  EXPECT_GT(ts::min(g).item<float>(), 0.0f);
  // The sample mean of Gamma(a) is a (400 draws: within 4 standard errors).
  ts::Array mean = ts::mean(g, {0});
  const float a[3] = {0.2f, 1.0f, 5.0f};
  for (int64_t i = 0; i < 3; ++i) EXPECT_NEAR(mean[{i}].item<float>(), a[i], 4 * std::sqrt(a[i] / 400));
  // loggamma is the log of the same draws.
  ts::Array lg = tr::loggamma(k, ts::Array(std::vector<float>{0.2f, 1.0f, 5.0f}), ts::Shape{400, 3});
  EXPECT_LT(ts::max(ts::abs(ts::exp(lg) - g) / g).item<float>(), 1e-4f);
  ts::Array d = tr::dirichlet(k, ts::Array(std::vector<float>{0.5f, 1.f, 2.f}), ts::Shape{10});
  EXPECT_LT(ts::max(ts::abs(ts::sum(d, {-1}) - 1.0f)).item<float>(), 1e-5f);
}

TEST(RandomDistributions, GammaWorksUnderJitAndVmap) {
  ts::Array k = tr::key(11);
  ts::Array a = ts::Array(std::vector<float>{0.5f, 3.0f});
  ts::Array eager = tr::gamma(k, a);
  ts::Array jitted = ts::jit([](const ts::Array& key, const ts::Array& alpha) { return tr::gamma(key, alpha); })(k, a);
  EXPECT_TRUE(ts::all(ts::equal(eager, jitted)).item<bool>());
  ts::Array keys = tr::split(k, 3);
  ts::Array batched = ts::vmap([&](const ts::Array& key) { return tr::gamma(key, a); })(keys);
  for (int64_t i = 0; i < 3; ++i)
    EXPECT_TRUE(ts::all(ts::equal(batched[{i}], tr::gamma(keys[{i}], a))).item<bool>());
}

TEST(RandomDistributions, ShufflesAndChoiceCheckArguments) {
  ts::Array k = tr::key(2);
  ts::Array x = ts::reshape(ts::arange(12, ts::DType::int32), {3, 4});
  expect_error<ts::ValueError>([&] { tr::permutation(k, x, 2); }, "permutation");
  expect_error<ts::DTypeError>([&] { tr::permutation(k, ts::Array(2.5f)); }, "permutation");
  expect_error<ts::ValueError>([&] { tr::choice(k, x, {5}, false); }, "choice");
  expect_error<ts::ShapeError>([&] { tr::choice(k, x, {2}, true, ts::Array(std::vector<float>{0.5f, 0.5f})); }, "choice");
  expect_error<ts::ValueError>([&] { tr::choice(k, ts::zeros({0}), {2}); }, "choice");
  // A permutation holds every element once.
  ts::Array perm = tr::permutation(k, 100);
  EXPECT_EQ(ts::sum(perm).item<int32_t>(), 99 * 100 / 2);
  EXPECT_EQ(ts::sort(perm)[{99}].item<int32_t>(), 99);
  // Rows move together unless independent.
  ts::Array rows = tr::permutation(k, x, 0);
  EXPECT_TRUE(ts::all(ts::equal(ts::sum(rows, {0}), ts::sum(x, {0}))).item<bool>());
  EXPECT_EQ(tr::choice(k, x, {2, 5}, true, std::nullopt, 1).shape(), (ts::Shape{3, 2, 5}));
}

TEST(RandomDistributions, CountSamplersCheckArgumentsAndHandleEdgeRates) {
  ts::Array k = tr::key(9);
  expect_error<ts::DTypeError>([&] { tr::poisson(k, ts::Array(2.0f), ts::Shape{2}, ts::DType::float32); }, "poisson");
  expect_error<ts::DTypeError>([&] { tr::binomial(k, ts::Array(5.0f), ts::Array(0.5f), ts::Shape{2}, ts::DType::int32); },
                               "binomial");
  expect_error<ts::ShapeError>([&] { tr::multinomial(k, ts::Array(5.0f), ts::Array(std::vector<float>{0.5f, 0.5f}),
                                                     ts::Shape{2, 3}); },
                               "multinomial");
  ts::Array zero_rate = tr::poisson(k, ts::Array(0.0f), ts::Shape{5});
  EXPECT_EQ(ts::max(zero_rate).item<int32_t>(), 0);
  ts::Array bad = tr::binomial(k, ts::Array(-1.0f), ts::Array(0.5f), ts::Shape{2});
  EXPECT_TRUE(std::isnan(bad[{0}].item<float>()));
  ts::Array counts = tr::multinomial(k, ts::Array(50.0f), ts::Array(std::vector<float>{0.2f, 0.3f, 0.5f}));
  EXPECT_EQ(ts::sum(counts).item<float>(), 50.0f);
}

TEST(RandomDistributions, MatrixSamplersCheckArguments) {
  ts::Array k = tr::key(4);
  ts::Array mean = ts::zeros({3});
  expect_error<ts::ShapeError>([&] { tr::multivariate_normal(k, mean, ts::eye(2)); }, "multivariate_normal");
  expect_error<ts::ValueError>([&] { tr::multivariate_normal(k, mean, ts::eye(3), std::nullopt, std::nullopt, "qr"); },
                               "multivariate_normal");
  expect_error<ts::ValueError>([&] { tr::orthogonal(k, -1); }, "orthogonal");
  ts::Array q = tr::orthogonal(k, 4, {2});
  ts::Array qtq = ts::matmul(ts::swapaxes(q, -1, -2), q);
  EXPECT_LT(ts::max(ts::abs(qtq - ts::eye(4))).item<float>(), 1e-5f);
}

}  // namespace
