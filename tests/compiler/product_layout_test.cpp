// Layouts around matrix products in compiled programs: dot_general reads operands through
// transposes instead of copying them (compiler::fold_transposes_into_products), and a
// reshape of a value that dies there takes its memory instead of copying it. The compiled
// results equal eager evaluation (which runs every transpose and reshape as a kernel) and a
// float64 reference, and repeat bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "tessel/tessel.h"

namespace ts = tessel;

namespace {

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

/// float32 values in [-1, 1) from an integer hash of the index (no two runs differ).
ts::Array hashed(const ts::Shape& shape, uint32_t salt) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> v(size_t(n), 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    uint32_t h = uint32_t(i) * 2654435761u + salt * 97531u;
    h ^= h >> 15;
    h *= 0x2c1b3c6du;
    h ^= h >> 12;
    v[size_t(i)] = float(h % 2001u) / 1000.0f - 1.0f;
  }
  return ts::Array(v, shape);
}

/// [b, s, h, d] -> [b, h, s, d], as attention splits heads.
ts::Array heads(const ts::Array& t) { return ts::transpose(t, ts::Axes{0, 2, 1, 3}); }

/// softmax-free attention scores and values: (q k^T) v over heads, for q, k, v of shape
/// [b, s, h, d]; the result is [b, h, s, d].
ts::Array scores_times_values(const ts::Array& q, const ts::Array& k, const ts::Array& v) {
  return ts::matmul(ts::matmul(heads(q), ts::swapaxes(heads(k), -1, -2)), heads(v));
}

/// The same product in float64 loops.
std::vector<double> reference(const ts::Array& qa, const ts::Array& ka, const ts::Array& va) {
  const ts::Shape s = qa.shape();
  const int64_t B = s[0], S = s[1], H = s[2], D = s[3];
  const auto q = qa.to_vector<float>(), k = ka.to_vector<float>(), v = va.to_vector<float>();
  auto at = [&](int64_t b, int64_t i, int64_t h, int64_t d) { return size_t(((b * S + i) * H + h) * D + d); };
  std::vector<double> out(size_t(B * H * S * D), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < S; ++i)
        for (int64_t j = 0; j < S; ++j) {
          double sc = 0;
          for (int64_t d = 0; d < D; ++d) sc += double(q[at(b, i, h, d)]) * double(k[at(b, j, h, d)]);
          for (int64_t d = 0; d < D; ++d) out[size_t(((b * H + h) * S + i) * D + d)] += sc * double(v[at(b, j, h, d)]);
        }
  return out;
}

void expect_close(const std::vector<float>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(double(got[i]), want[i], tol * (1.0 + std::abs(want[i]))) << "element " << i;
}

}  // namespace

// Shapes on both sides of the BLAS threshold: the strided operands take BLAS's leading
// dimensions in the large one and the small-product loop in the small one.
TEST(ProductLayout, AttentionReadsHeadsInPlace) {
  for (ts::Shape shape : {ts::Shape{2, 32, 3, 8}, ts::Shape{1, 4, 2, 3}}) {
    SCOPED_TRACE(ts::shape_to_string(shape));
    ts::Array q = hashed(shape, 1), k = hashed(shape, 2), v = hashed(shape, 3);
    auto f = ts::jit(scores_times_values);
    const std::string text = f.lower(q, k, v).compile().as_text();
    EXPECT_FALSE(contains(text, "transpose[")) << text;  // no head split or key transpose is copied
    EXPECT_TRUE(contains(text, "lhs_batch=(0, 2)")) << text;
    ts::Array got = f(q, k, v);
    expect_close(got.to_vector<float>(), reference(q, k, v), 1e-5);
    expect_close(got.to_vector<float>(), [&] {
      std::vector<double> eager;
      for (float x : scores_times_values(q, k, v).to_vector<float>()) eager.push_back(double(x));
      return eager;
    }(), 1e-5);
    EXPECT_EQ(f(q, k, v).to_vector<float>(), got.to_vector<float>());  // deterministic
  }
}

// A transpose that reorders the free dimensions of an operand would reorder the result's
// dimensions: it stays, and the result is unchanged.
TEST(ProductLayout, KeepsTransposesThatReorderFreeDimensions) {
  ts::Array x = hashed({3, 4, 5}, 4), y = hashed({5, 6}, 5);
  auto f = ts::jit([](const ts::Array& a, const ts::Array& b) {
    return ts::dot_general(ts::transpose(a, ts::Axes{1, 0, 2}), b, {{2}, {0}, {}, {}});
  });
  const std::string text = f.lower(x, y).compile().as_text();
  EXPECT_TRUE(contains(text, "transpose[permutation=(1, 0, 2)]")) << text;
  const auto xv = x.to_vector<float>(), yv = y.to_vector<float>();
  std::vector<double> want;  // out[j, i, n] = sum_c x[i, j, c] y[c, n]
  for (int j = 0; j < 4; ++j)
    for (int i = 0; i < 3; ++i)
      for (int n = 0; n < 6; ++n) {
        double acc = 0;
        for (int c = 0; c < 5; ++c) acc += double(xv[size_t((i * 4 + j) * 5 + c)]) * double(yv[size_t(c * 6 + n)]);
        want.push_back(acc);
      }
  expect_close(f(x, y).to_vector<float>(), want, 1e-5);
}

// Contracting over a transposed operand's leading dimensions (x^T y, the weight gradient's
// form) folds too: the product reads x with the transpose flag.
TEST(ProductLayout, FoldsTransposedContractions) {
  ts::Array x = hashed({40, 24}, 6), y = hashed({40, 16}, 7);
  auto f = ts::jit([](const ts::Array& a, const ts::Array& b) { return ts::matmul(ts::transpose(a), b); });
  const std::string text = f.lower(x, y).compile().as_text();
  EXPECT_FALSE(contains(text, "transpose[")) << text;
  EXPECT_TRUE(contains(text, "lhs_contracting=(0,)")) << text;
  const auto xv = x.to_vector<float>(), yv = y.to_vector<float>();
  std::vector<double> want;
  for (int i = 0; i < 24; ++i)
    for (int n = 0; n < 16; ++n) {
      double acc = 0;
      for (int c = 0; c < 40; ++c) acc += double(xv[size_t(c * 24 + i)]) * double(yv[size_t(c * 16 + n)]);
      want.push_back(acc);
    }
  expect_close(f(x, y).to_vector<float>(), want, 1e-5);
}

// A transpose that swaps a product's lhs and rhs free dimensions (the backward pass's
// dK^T -> dK) becomes the product with its operands swapped; when the product's result is
// also read elsewhere, the transpose stays.
TEST(ProductLayout, SwapsOperandsInsteadOfTransposingAResult) {
  ts::Array a = hashed({3, 24, 20}, 13), b = hashed({3, 24, 28}, 14);
  auto swapped = ts::jit([](const ts::Array& x, const ts::Array& y) {
    return ts::swapaxes(ts::dot_general(x, y, {{1}, {1}, {0}, {0}}), 1, 2);  // [3, 28, 20]
  });
  const std::string text = swapped.lower(a, b).compile().as_text();
  EXPECT_FALSE(contains(text, "transpose[")) << text;
  const auto av = a.to_vector<float>(), bv = b.to_vector<float>();
  std::vector<double> want;  // out[n, j, i] = sum_c a[n, c, i] b[n, c, j]
  for (int n = 0; n < 3; ++n)
    for (int j = 0; j < 28; ++j)
      for (int i = 0; i < 20; ++i) {
        double acc = 0;
        for (int c = 0; c < 24; ++c)
          acc += double(av[size_t((n * 24 + c) * 20 + i)]) * double(bv[size_t((n * 24 + c) * 28 + j)]);
        want.push_back(acc);
      }
  expect_close(swapped(a, b).to_vector<float>(), want, 1e-5);
  auto shared = ts::jit([](const ts::Array& x, const ts::Array& y) {
    ts::Array p = ts::dot_general(x, y, {{1}, {1}, {0}, {0}});
    return ts::swapaxes(p, 1, 2) + ts::sum(p);
  });
  EXPECT_TRUE(contains(shared.lower(a, b).compile().as_text(), "transpose["));
  const float total = ts::sum(ts::dot_general(a, b, {{1}, {1}, {0}, {0}})).item<float>();
  for (double& e : want) e += double(total);
  expect_close(shared(a, b).to_vector<float>(), want, 1e-4);
}

// Gradients through the folded products (their transposes fold as well) equal the eager ones.
TEST(ProductLayout, GradientsEqualEagerOnes) {
  std::vector<ts::Array> qkv = {hashed({2, 16, 2, 8}, 8), hashed({2, 16, 2, 8}, 9), hashed({2, 16, 2, 8}, 10)};
  auto g = ts::grad([](const std::vector<ts::Array>& a) {
    ts::Array o = scores_times_values(a[0], a[1], a[2]);
    return ts::sum(o * o);
  });
  // The key gradient (q^T dS, then transposed) is computed as dS^T q: no strided transpose.
  EXPECT_FALSE(contains(ts::jit(g).lower(qkv).compile().as_text(), "transpose[permutation=(0, 1, 3, 2)]"));
  std::vector<ts::Array> compiled = ts::jit(g)(qkv), eager = g(qkv);
  ASSERT_EQ(compiled.size(), eager.size());
  for (size_t i = 0; i < eager.size(); ++i) {
    std::vector<double> want;
    for (float x : eager[i].to_vector<float>()) want.push_back(double(x));
    expect_close(compiled[i].to_vector<float>(), want, 1e-4);
  }
}

// A reshape whose operand dies there takes the operand's memory; one whose operand is read
// later copies it. Both give the same values.
TEST(ProductLayout, ReshapeOfADyingValueTakesItsMemory) {
  ts::Array x = hashed({8, 64}, 11), w = hashed({16, 4}, 12);
  auto dying = ts::jit([](const ts::Array& a, const ts::Array& b) {
    return ts::matmul(ts::reshape(ts::matmul(a, ts::ones({64, 64}, ts::f32)), {32, 16}), b);
  });
  const std::string text = dying.lower(x, w).compile().as_text();
  EXPECT_TRUE(contains(text, "(reshape): output 0 written in place into input 0")) << text;
  auto live = ts::jit([](const ts::Array& a, const ts::Array& b) {
    ts::Array m = ts::matmul(a, ts::ones({64, 64}, ts::f32));
    ts::Array product = ts::matmul(ts::reshape(m, {32, 16}), b);
    return product + ts::sum(m);  // m is read after the reshape
  });
  EXPECT_FALSE(contains(live.lower(x, w).compile().as_text(), "(reshape): output 0 written in place"));
  const auto m = ts::matmul(x, ts::ones({64, 64}, ts::f32));
  const auto want = ts::matmul(ts::reshape(m, {32, 16}), w).to_vector<float>();
  std::vector<double> want64(want.begin(), want.end());
  expect_close(dying(x, w).to_vector<float>(), want64, 1e-6);
  const float total = ts::sum(m).item<float>();
  for (double& e : want64) e += double(total);
  expect_close(live(x, w).to_vector<float>(), want64, 1e-5);
}
