// ts::nn beyond the parity data (tests/parity/cases_nn.py): JAX's derivative choices at the
// kinks, masks, transformations composed with them, and the error paths.
#include <gtest/gtest.h>

#include <cmath>

#include "expect_error.h"
#include "tessel/nn.h"
#include "tessel/tessel.h"

namespace ts = tessel;

namespace {
std::vector<float> values(const ts::Array& a) { return ts::astype(a, ts::f32).to_vector<float>(); }
}  // namespace

TEST(Nn, ReluDerivativeAtZeroIsZeroAsInJax) {
  const ts::Array x = ts::Array(std::vector<float>{-1.0f, 0.0f, 2.0f});
  auto g = ts::grad([](const ts::Array& v) { return ts::sum(ts::nn::relu(v)); });
  EXPECT_EQ(values(g(x)), (std::vector<float>{0.0f, 0.0f, 1.0f}));
  auto g6 = ts::grad([](const ts::Array& v) { return ts::sum(ts::nn::relu6(v)); });
  EXPECT_EQ(values(g6(ts::Array(std::vector<float>{0.0f, 3.0f, 6.0f, 7.0f}))),
            (std::vector<float>{0.0f, 1.0f, 0.0f, 0.0f}));
}

TEST(Nn, SoftplusIsExactForLargeInputsAndItsGradientIsSigmoid) {
  const ts::Array x = ts::Array(std::vector<float>{-100.0f, 0.0f, 100.0f});
  const auto y = values(ts::nn::softplus(x));
  EXPECT_FLOAT_EQ(y[0], std::exp(-100.0f));
  EXPECT_FLOAT_EQ(y[1], std::log(2.0f));
  EXPECT_FLOAT_EQ(y[2], 100.0f);
  const auto g = values(ts::grad([](const ts::Array& v) { return ts::sum(ts::nn::softplus(v)); })(x));
  EXPECT_NEAR(g[0], 0.0f, 1e-30);
  EXPECT_FLOAT_EQ(g[1], 0.5f);
  EXPECT_FLOAT_EQ(g[2], 1.0f);
}

TEST(Nn, SoftmaxRowsSumToOneUnderJitAndVmapAndMaskedEntriesAreZero) {
  const ts::Array x = ts::reshape(ts::arange(0.0, 12.0, 1.0, ts::f32), {3, 4}) * 30.0f;  // large logits
  const ts::Array p = ts::jit([](const ts::Array& v) { return ts::nn::softmax(v); })(x);
  for (float s : values(ts::sum(p, {1}))) EXPECT_NEAR(s, 1.0f, 1e-6);
  const ts::Array pv = ts::vmap([](const ts::Array& v) { return ts::nn::softmax(v); })(x);
  EXPECT_EQ(values(pv), values(p));
  const ts::Array mask = ts::Array(std::vector<bool>{true, false, true, true}).reshape({1, 4});
  const auto pm = values(ts::nn::softmax(x, {-1}, ts::broadcast_to(mask, {3, 4})));
  for (int r = 0; r < 3; ++r) EXPECT_EQ(pm[size_t(r * 4 + 1)], 0.0f);
  const auto lm = values(ts::nn::log_softmax(x, {-1}, ts::broadcast_to(mask, {3, 4})));
  EXPECT_TRUE(std::isinf(lm[1]) && lm[1] < 0);
}

TEST(Nn, LogsumexpWithBAndSign) {
  const ts::Array a = ts::Array(std::vector<float>{0.0f, 0.0f});
  const ts::Array b = ts::Array(std::vector<float>{1.0f, -2.0f});
  auto [lse, sign] = ts::nn::logsumexp_with_sign(a, {}, {.b = b});
  EXPECT_NEAR(lse.item<float>(), 0.0f, 1e-7);  // log|1 - 2|
  EXPECT_EQ(sign.item<float>(), -1.0f);
  EXPECT_TRUE(std::isnan(ts::nn::logsumexp(a, {}, {.b = b}).item<float>()));
  // all -inf: the shift is 0, the result -inf (no NaN)
  EXPECT_EQ(ts::nn::logsumexp(ts::full({3}, ts::Array(-INFINITY))).item<float>(), -INFINITY);
}

TEST(Nn, OneHotIgnoresOutOfRangeIndices) {
  const ts::Array y = ts::nn::one_hot(ts::Array(std::vector<int32_t>{2, -1, 5}), 3);
  EXPECT_EQ(y.shape(), (ts::Shape{3, 3}));
  EXPECT_EQ(values(y), (std::vector<float>{0, 0, 1, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(ts::nn::one_hot(ts::Array(std::vector<int32_t>{1}), 2, ts::i32, 0).shape(), (ts::Shape{2, 1}));
}

TEST(Nn, AttentionCausalFirstQueryAttendsOnlyToFirstKey) {
  // One head, H = 2: with is_causal the first query's output is the first value exactly.
  const ts::Array q = ts::reshape(ts::arange(0.0, 6.0, 1.0, ts::f32), {3, 1, 2});
  const ts::Array k = q * 0.5f, v = ts::reshape(ts::arange(10.0, 16.0, 1.0, ts::f32), {3, 1, 2});
  const ts::Array o = ts::nn::dot_product_attention(q, k, v, {.is_causal = true});
  EXPECT_EQ(o.shape(), (ts::Shape{3, 1, 2}));
  const auto ov = values(o);
  EXPECT_FLOAT_EQ(ov[0], 10.0f);
  EXPECT_FLOAT_EQ(ov[1], 11.0f);
  // under jit and grad too
  auto loss = [&](const ts::Array& qq) { return ts::sum(ts::nn::dot_product_attention(qq, k, v, {.is_causal = true})); };
  const ts::Array g = ts::jit(ts::grad(loss))(q);
  EXPECT_EQ(g.shape(), q.shape());
  EXPECT_EQ(values(g)[0], 0.0f);  // the first query's output does not depend on it
}

TEST(Nn, BadArgumentsNameTheFunctionAndTheFix) {
  const ts::Array x = ts::ones({2, 3});
  tessel_test::expect_error<ts::ValueError>([&] { (void)ts::nn::glu(x, -1); }, {"nn::glu", "odd size 3"});
  tessel_test::expect_error<ts::ValueError>([&] { (void)ts::nn::one_hot(ts::Array(std::vector<int32_t>{1}), -2); }, {"nn::one_hot", "num_classes must be >= 0"});
  tessel_test::expect_error<ts::ValueError>([&] { (void)ts::nn::standardize(x, {-1}, {.algorithm = "exact"}); }, {"nn::standardize", "\"stable\""});
  const ts::Array q = ts::ones({1, 4, 3, 8}), k = ts::ones({1, 5, 2, 8});
  tessel_test::expect_error<ts::ShapeError>([&] { (void)ts::nn::dot_product_attention(q, k, k); }, {"nn::dot_product_attention", "multiple of the key/value heads"});
  tessel_test::expect_error<ts::ShapeError>([&] { (void)ts::nn::dot_product_attention(ts::ones({1, 4, 2, 4}), k, k); }, {"head size"});
  tessel_test::expect_error<ts::DTypeError>([&] { (void)ts::nn::dot_product_attention(ts::ones({1, 4, 2, 8}), k, k, {.mask = ts::ones({1, 1, 4, 5})}); }, {"mask must be bool"});
}

TEST(Nn, SoftmaxAndAttentionStaySplitOverTheBatch) {
  const ts::Mesh mesh = ts::make_mesh({8}, {"x"});
  const ts::Sharding rows = ts::NamedSharding(mesh, ts::P("x"));
  const ts::Array x = ts::sin(ts::reshape(ts::arange(0.0, 16.0 * 5, 1.0, ts::f32), {16, 5}));
  auto f = ts::jit([](const ts::Array& v) { return ts::nn::log_softmax(v) + ts::nn::gelu(v); }, {.in_shardings = {rows}});
  EXPECT_LE(ts::max(ts::abs(f(x) - (ts::nn::log_softmax(x) + ts::nn::gelu(x)))).item<float>(), 1e-6f);
  const std::string text = f.lower(x).compile().as_text();
  EXPECT_EQ(text.find("all_gather"), std::string::npos) << text;
  // attention with the batch split: each device its own sequences
  const ts::Array q = ts::cos(ts::reshape(ts::arange(0.0, 8.0 * 4 * 2 * 4, 1.0, ts::f32), {8, 4, 2, 4}));
  auto att = ts::jit([](const ts::Array& a) { return ts::nn::dot_product_attention(a, a, a, {.is_causal = true}); },
                     {.in_shardings = {ts::NamedSharding(mesh, ts::P("x"))}});
  EXPECT_LE(ts::max(ts::abs(att(q) - ts::nn::dot_product_attention(q, q, q, {.is_causal = true}))).item<float>(), 1e-6f);
  const std::string atext = att.lower(q).compile().as_text();
  EXPECT_EQ(atext.find("all_gather"), std::string::npos) << atext;
}
