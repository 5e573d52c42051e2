// cpu::for_each_product_block and cpu::gemm: how products are cut over the arena (a single
// large product into one block per thread, a few products into blocks of each, many into
// whole products, small work inline), that the blocks tile every result exactly once on
// odd shapes, and that the float32 products equal a plain double-precision evaluation with
// transposed operands, batches and leading dimensions wider than the rows.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <mutex>
#include <random>
#include <vector>

#include "backend/cpu/blas.h"
#include "backend/cpu/parallel.h"

namespace cpu = tessel::cpu;

namespace {

/// The blocks for_each_product_block hands out for the given product sizes.
std::vector<cpu::ProductBlock> blocks_of(int64_t batch, int64_t m, int64_t n, int64_t k) {
  std::mutex mu;
  std::vector<cpu::ProductBlock> blocks;
  cpu::for_each_product_block(batch, m, n, k, [&](const cpu::ProductBlock& p) {
    std::lock_guard<std::mutex> lock(mu);
    blocks.push_back(p);
  });
  return blocks;
}

/// Every element of the `batch` (m x n) results is in exactly one block.
void expect_tiled_once(int64_t batch, int64_t m, int64_t n, const std::vector<cpu::ProductBlock>& blocks) {
  std::vector<int> hits(size_t(batch * m * n), 0);
  for (const cpu::ProductBlock& p : blocks) {
    ASSERT_TRUE(p.b >= 0 && p.b < batch && 0 <= p.i0 && p.i0 < p.i1 && p.i1 <= m && 0 <= p.j0 && p.j0 < p.j1 && p.j1 <= n)
        << "block {" << p.b << ", " << p.i0 << ", " << p.i1 << ", " << p.j0 << ", " << p.j1 << "}";
    for (int64_t i = p.i0; i < p.i1; ++i)
      for (int64_t j = p.j0; j < p.j1; ++j) ++hits[size_t((p.b * m + i) * n + j)];
  }
  for (size_t e = 0; e < hits.size(); ++e) ASSERT_EQ(hits[e], 1) << "element " << e << " of " << batch << " x " << m << " x " << n;
}

TEST(ProductBlocks, OneLargeProductGetsOneBlockPerThread) {
  const int threads = cpu::num_threads();
  // The block's MLP product (2048 x 2048 by 2048 x 512 rows) and a wide one (columns cut).
  for (auto [m, n, k] : {std::array<int64_t, 3>{2048, 2048, 512}, {2048, 512, 2048}, {512, 2048, 2048}}) {
    const auto blocks = blocks_of(1, m, n, k);
    expect_tiled_once(1, m, n, blocks);
    EXPECT_EQ(blocks.size(), size_t(threads)) << m << " x " << n << " x " << k;
    for (const cpu::ProductBlock& p : blocks) {
      if (m >= n) {
        EXPECT_EQ(p.j1 - p.j0, n) << "row blocks span every column";
      } else {
        EXPECT_EQ(p.i1 - p.i0, m) << "column blocks span every row";
      }
    }
  }
}

TEST(ProductBlocks, AFewProductsAreCutAndManyRunWhole) {
  const int threads = cpu::num_threads();
  if (threads < 2) GTEST_SKIP() << "one thread (TESSEL_NUM_THREADS=1): every product runs whole, inline";
  // 3 products of 512 x 512 x 512: fewer than two per thread, so each is cut into blocks.
  auto few = blocks_of(3, 512, 512, 512);
  expect_tiled_once(3, 512, 512, few);
  EXPECT_GT(few.size(), 3u);
  // 64 attention products of 256 x 256 x 64: whole products.
  auto many = blocks_of(64, 256, 256, 64);
  expect_tiled_once(64, 256, 256, many);
  EXPECT_EQ(many.size(), 64u);
  for (const cpu::ProductBlock& p : many) EXPECT_TRUE(p.i0 == 0 && p.i1 == 256 && p.j0 == 0 && p.j1 == 256);
}

TEST(ProductBlocks, SmallWorkRunsWholeAndOddShapesTileOnce) {
  auto small = blocks_of(2, 16, 16, 16);  // far below a task's work
  expect_tiled_once(2, 16, 16, small);
  EXPECT_EQ(small.size(), 2u);
  // Extents that are no multiple of the 16-row alignment, tall and wide, one and a few products.
  for (auto [batch, m, n, k] : {std::array<int64_t, 4>{1, 1001, 37, 999}, {1, 37, 1001, 999}, {3, 333, 129, 511},
                                {1, 17, 17, 40000}}) {
    expect_tiled_once(batch, m, n, blocks_of(batch, m, n, k));
  }
}

/// C_b = op(A_b) op(B_b) in double, for the layouts cpu::gemm reads.
std::vector<double> reference(int64_t batch, int64_t m, int64_t n, int64_t k, const std::vector<float>& a,
                              int64_t lda, bool ta, int64_t a_stride, const std::vector<float>& b, int64_t ldb,
                              bool tb, int64_t b_stride) {
  std::vector<double> c(size_t(batch * m * n), 0.0);
  for (int64_t p = 0; p < batch; ++p)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t l = 0; l < k; ++l) {
          const double x = a[size_t(p * a_stride + (ta ? l * lda + i : i * lda + l))];
          const double y = b[size_t(p * b_stride + (tb ? j * ldb + l : l * ldb + j))];
          s += x * y;
        }
        c[size_t((p * m + i) * n + j)] = s;
      }
  return c;
}

TEST(ProductBlocks, Float32ProductsEqualThePlainEvaluation) {
  std::mt19937 gen(31);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  // Odd sizes, sizes that take oneDNN's sgemm (>= 32K multiply-adds a block) and OpenBLAS's,
  // a vector-like product (gemv), each with every transpose combination, a batch and a
  // leading dimension 3 wider than the stored rows.
  for (auto [batch, m, n, k] : {std::array<int64_t, 4>{1, 1001, 37, 99}, {1, 37, 530, 201}, {3, 129, 65, 257},
                                {5, 16, 16, 16}, {1, 1, 300, 77}, {2, 300, 1, 77}, {1, 512, 512, 64}}) {
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        const int64_t lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 3;
        const int64_t a_stride = (ta ? k : m) * lda, b_stride = (tb ? n : k) * ldb;
        std::vector<float> a(size_t(batch * a_stride)), b(size_t(batch * b_stride));
        for (float& x : a) x = u(gen);
        for (float& x : b) x = u(gen);
        std::vector<int64_t> a_off(static_cast<size_t>(batch)), b_off(static_cast<size_t>(batch));
        for (int64_t p = 0; p < batch; ++p) a_off[size_t(p)] = p * a_stride, b_off[size_t(p)] = p * b_stride;
        std::vector<float> c(size_t(batch * m * n), -7.0f);
        cpu::gemm(tessel::DType::float32, batch, m, n, k, {a.data(), lda, ta, a_off}, {b.data(), ldb, tb, b_off},
                  c.data(), n, m * n);
        const std::vector<double> want = reference(batch, m, n, k, a, lda, ta, a_stride, b, ldb, tb, b_stride);
        // float32 accumulation of k products of terms in [-1, 1]: within k * 2^-24 * sum |terms| <= k^2 2^-24 (loose)
        const double bound = double(k) * double(k) * std::ldexp(1.0, -24) + 1e-6;
        for (size_t e = 0; e < c.size(); ++e)
          ASSERT_NEAR(c[e], want[e], bound) << "element " << e << " of " << batch << " x " << m << " x " << n << " x " << k
                                            << (ta ? " A^T" : "") << (tb ? " B^T" : "");
      }
  }
}

}  // namespace
