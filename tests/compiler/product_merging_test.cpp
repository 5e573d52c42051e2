// Matrix products merged by the compiler (compiler::merge_products, run by jit before
// fusion): q, k and v from one input become one product over the concatenated weights, and
// in the backward pass the weight gradients and the input gradient (a sum of three
// products) become one product each. The compiled text has the merged products only, and
// the results equal eager evaluation (which runs every product separately).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "tessel/tessel.h"

namespace ts = tessel;

namespace {

/// How many times `what` occurs in `s`.
int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

/// float32 values in [-scale, scale]: the sine of the index times `salt` (no two salts alike).
ts::Array hashed(const ts::Shape& shape, uint32_t salt, float scale = 1.0f) {
  const ts::Array t = ts::arange(ts::shape_size(shape), ts::f32) * (0.7548776f * float(salt) + 0.1f);
  return ts::reshape(ts::sin(t), shape) * scale;
}

void expect_close(const ts::Array& got, const ts::Array& want, double tol) {
  ASSERT_EQ(got.shape(), want.shape());
  const auto g = got.to_vector<float>(), w = want.to_vector<float>();
  for (size_t i = 0; i < g.size(); ++i)
    ASSERT_NEAR(double(g[i]), double(w[i]), tol * (1.0 + std::abs(double(w[i])))) << "element " << i;
}

/// Attention-like use of q, k and v from one input: every product reads h.
ts::Array qkv_mix(const ts::Array& h, const ts::Array& wq, const ts::Array& wk, const ts::Array& wv) {
  ts::Array q = ts::matmul(h, wq), k = ts::matmul(h, wk), v = ts::matmul(h, wv);
  return ts::tanh(q) * k + v;
}

}  // namespace

TEST(ProductMerging, QkvFromOneInputIsOneProduct) {
  ts::Array h = hashed({4, 64, 64}, 1), wq = hashed({64, 64}, 2, 0.2f), wk = hashed({64, 64}, 3, 0.2f),
            wv = hashed({64, 64}, 4, 0.2f);
  auto f = ts::jit(qkv_mix);
  const std::string text = f.lower(h, wq, wk, wv).compile().as_text();
  EXPECT_EQ(count(text, "dot_general["), 1) << text;
  EXPECT_EQ(count(text, "concatenate["), 1) << text;
  expect_close(f(h, wq, wk, wv), qkv_mix(h, wq, wk, wv), 1e-5);
}

// The gradient w.r.t. h sums dq wq^T + dk wk^T + dv wv^T: one product over dq|dk|dv and
// wq|wk|wv, whose concatenations the forward product and the weight gradients share.
// (Rows and columns large enough that copying dq|dk|dv pays: kMinFlopsPerCopiedElement.)
TEST(ProductMerging, GradientsOfSharedInputAreOneProductEach) {
  ts::Array h = hashed({2, 256, 256}, 1), wq = hashed({256, 256}, 2, 0.1f), wk = hashed({256, 256}, 3, 0.1f),
            wv = hashed({256, 256}, 4, 0.1f);
  auto loss = [](const ts::Array& h, const ts::Array& wq, const ts::Array& wk, const ts::Array& wv) {
    ts::Array m = qkv_mix(h, wq, wk, wv);
    return ts::sum(m * m);
  };
  auto g = ts::jit(ts::grad<0, 1, 2, 3>(loss));
  const std::string text = g.lower(h, wq, wk, wv).compile().as_text();
  EXPECT_EQ(count(text, "dot_general["), 3) << text;   // forward, weight gradients, input gradient
  EXPECT_EQ(count(text, "concatenate["), 2) << text;  // wq|wk|wv and dq|dk|dv, once each
  auto got = g(h, wq, wk, wv);
  auto want = ts::grad<0, 1, 2, 3>(loss)(h, wq, wk, wv);  // eager: every product on its own
  expect_close(std::get<0>(got), std::get<0>(want), 1e-4);
  expect_close(std::get<1>(got), std::get<1>(want), 1e-4);
  expect_close(std::get<2>(got), std::get<2>(want), 1e-4);
  expect_close(std::get<3>(got), std::get<3>(want), 1e-4);
}

// A sum of products with another term: the products merge, the term is added to the result.
TEST(ProductMerging, SumOfProductsKeepsItsOtherTerms) {
  ts::Array a = hashed({512, 256}, 5), b = hashed({256, 256}, 6), c = hashed({512, 256}, 7),
            d = hashed({256, 256}, 8), e = hashed({512, 256}, 9);
  auto f = ts::jit([](const ts::Array& a, const ts::Array& b, const ts::Array& c, const ts::Array& d,
                      const ts::Array& e) { return ts::matmul(a, b) + e + ts::matmul(c, d); });
  const std::string text = f.lower(a, b, c, d, e).compile().as_text();
  EXPECT_EQ(count(text, "dot_general["), 1) << text;
  expect_close(f(a, b, c, d, e), ts::matmul(a, b) + e + ts::matmul(c, d), 1e-5);
}

// Products whose merge would not pay, or could not be placed, stay separate.
TEST(ProductMerging, UnprofitableOrDependentProductsStaySeparate) {
  // Vector-matrix products: concatenating the matrices would copy as much as the products read.
  ts::Array x = hashed({1, 256}, 10), w1 = hashed({256, 256}, 11), w2 = hashed({256, 256}, 12);
  auto vm = ts::jit([](const ts::Array& x, const ts::Array& w1, const ts::Array& w2) {
    return ts::matmul(x, w1) * ts::matmul(x, w2);
  });
  EXPECT_EQ(count(vm.lower(x, w1, w2).compile().as_text(), "dot_general["), 2);
  expect_close(vm(x, w1, w2), ts::matmul(x, w1) * ts::matmul(x, w2), 1e-5);

  // The second product's weight is computed from the first's result: they cannot be one.
  ts::Array h = hashed({256, 64}, 13), w = hashed({64, 64}, 14, 0.1f);
  auto chain = [](const ts::Array& h, const ts::Array& w) {
    ts::Array a = ts::matmul(h, w);
    ts::Array w2 = ts::slice(a, {0, 0}, {64, 64});
    return a + ts::matmul(h, w2);
  };
  auto jc = ts::jit(chain);
  const std::string text = jc.lower(h, w).compile().as_text();
  EXPECT_EQ(count(text, "dot_general["), 2) << text;
  expect_close(jc(h, w), chain(h, w), 1e-5);
}
