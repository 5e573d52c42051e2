// Transformation rules of dot_general and the jax.numpy products built on it (matmul, dot,
// vdot, outer, einsum, trace): jvp against finite differences, vjp against jvp, vmap against
// a loop with the lhs, the rhs or both batched at various dimensions.
#include "transforms/check_transforms.h"

namespace {
using namespace transform_testing;
using V = std::vector<ts::Array>;

/// A product of two arrays with example operand shapes.
struct BinaryCase {
  const char* name;
  std::function<ts::Array(const ts::Array&, const ts::Array&)> f;
  ts::Shape a, b;
};

ts::Array dg(const ts::Array& a, const ts::Array& b, ts::DotDims d) { return ts::dot_general(a, b, d); }

const BinaryCase kProducts[] = {
    {"matmul_2d", [](const ts::Array& a, const ts::Array& b) { return ts::matmul(a, b); }, {3, 4}, {4, 5}},
    {"matmul_vec_mat", [](const ts::Array& a, const ts::Array& b) { return ts::matmul(a, b); }, {4}, {4, 5}},
    {"matmul_mat_vec", [](const ts::Array& a, const ts::Array& b) { return ts::matmul(a, b); }, {3, 4}, {4}},
    {"matmul_batched", [](const ts::Array& a, const ts::Array& b) { return ts::matmul(a, b); }, {2, 3, 4}, {2, 4, 5}},
    {"matmul_broadcast_batch", [](const ts::Array& a, const ts::Array& b) { return ts::matmul(a, b); }, {1, 3, 4},
     {2, 4, 5}},
    {"matmul_batch_by_matrix", [](const ts::Array& a, const ts::Array& b) { return ts::matmul(a, b); }, {2, 3, 4},
     {4, 5}},
    {"dot_3d_2d", [](const ts::Array& a, const ts::Array& b) { return ts::dot(a, b); }, {2, 3, 4}, {4, 5}},
    {"vdot", [](const ts::Array& a, const ts::Array& b) { return ts::vdot(a, b); }, {3, 4}, {4, 3}},
    {"outer", [](const ts::Array& a, const ts::Array& b) { return ts::outer(a, b); }, {3}, {4}},
    // dot_general with contracting dimensions out of order and batch dimensions not in front.
    {"dot_general_permuted",
     [](const ts::Array& a, const ts::Array& b) { return dg(a, b, {{2, 0}, {1, 3}, {1}, {2}}); }, {4, 2, 3},
     {5, 3, 2, 4}},
    {"dot_general_no_contraction", [](const ts::Array& a, const ts::Array& b) { return dg(a, b, {{}, {}, {0}, {1}}); },
     {3, 2}, {4, 3}},
    {"einsum_matmul", [](const ts::Array& a, const ts::Array& b) { return ts::einsum("ij,jk->ik", {a, b}); }, {3, 4},
     {4, 5}},
    {"einsum_batched_transposed_out",
     [](const ts::Array& a, const ts::Array& b) { return ts::einsum("bij,bjk->kbi", {a, b}); }, {2, 3, 4}, {2, 4, 5}},
    {"einsum_inner", [](const ts::Array& a, const ts::Array& b) { return ts::einsum("i,i->", {a, b}); }, {4}, {4}},
    {"einsum_diagonal_and_sum",
     [](const ts::Array& a, const ts::Array& b) { return ts::einsum("iij,jk->k", {a, b}); }, {3, 3, 4}, {4, 2}},
    {"einsum_ellipsis", [](const ts::Array& a, const ts::Array& b) { return ts::einsum("...ij,...jk->...ik", {a, b}); },
     {2, 3, 4}, {2, 4, 5}},
};

std::string product_name(const testing::TestParamInfo<BinaryCase>& i) { return i.param.name; }
void PrintTo(const BinaryCase& c, std::ostream* os) { *os << c.name; }

class ProductRules : public testing::TestWithParam<BinaryCase> {};

TEST_P(ProductRules, JvpAndVjpMatchFiniteDifferences) {
  const auto& c = GetParam();
  check_grads([&](const V& x) { return c.f(x[0], x[1]); }, {uniform(c.a, 1), uniform(c.b, 2)});
}

TEST_P(ProductRules, DifferentiatesEachOperandAlone) {
  const auto& c = GetParam();
  const ts::Array a = uniform(c.a, 3), b = uniform(c.b, 4);
  check_grads([&](const V& x) { return c.f(x[0], b); }, {a});
  check_grads([&](const V& x) { return c.f(a, x[0]); }, {b});
}

TEST_P(ProductRules, DifferentiatesNonContiguousOperands) {
  const auto& c = GetParam();
  // The operands arrive transposed (reversed axes) and are transposed back inside f.
  auto rev = [](const ts::Array& x) { return ts::transpose(x); };
  check_grads([&](const V& x) { return c.f(rev(x[0]), rev(x[1])); },
              {rev(uniform(c.a, 5)), rev(uniform(c.b, 6))});
}

TEST_P(ProductRules, VmapMatchesLoopWithLhsRhsOrBothBatched) {
  const auto& c = GetParam();
  auto f = [&](const V& x) { return c.f(x[0], x[1]); };
  const int64_t n = 3;
  // The batch axis inserted at dimension `at` of an operand of shape `s`.
  auto batched = [&](const ts::Shape& s, int64_t at, uint32_t seed, ts::DType dt) {
    ts::Shape full = s;
    full.insert(full.begin() + (at < 0 ? int64_t(s.size()) + 1 + at : at), n);
    return uniform(full, seed, -2, 2).astype(dt);
  };
  for (ts::DType dt : {ts::f32, ts::i32}) {
    const ts::Array a = uniform(c.a, 7, -2, 2).astype(dt), b = uniform(c.b, 8, -2, 2).astype(dt);
    const int64_t last_a = int64_t(c.a.size()), last_b = int64_t(c.b.size());
    for (int64_t out : {0, -1}) {
      const int64_t out_axis = out < 0 ? c.f(a, b).ndim() : 0;
      SCOPED_TRACE(std::string(ts::dtype_name(dt)) + " out_axis " + std::to_string(out_axis));
      for (int64_t at : {int64_t(0), last_a, int64_t(-1)})
        check_vmap(f, {batched(c.a, at, 9, dt), b}, {at, ts::none}, out_axis);
      for (int64_t at : {int64_t(0), last_b, int64_t(-1)})
        check_vmap(f, {a, batched(c.b, at, 10, dt)}, {ts::none, at}, out_axis);
      check_vmap(f, {batched(c.a, 0, 11, dt), batched(c.b, last_b, 12, dt)}, {0, last_b}, out_axis);
      check_vmap(f, {batched(c.a, last_a, 13, dt), batched(c.b, 0, 14, dt)}, {last_a, 0}, out_axis);
      check_vmap(f, {batched(c.a, -1, 15, dt), batched(c.b, -1, 16, dt)}, {-1, -1}, out_axis);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Products, ProductRules, testing::ValuesIn(kProducts), product_name);

// ---- single-operand functions ----

TEST(LinalgRules, TraceAndOneOperandEinsumDifferentiateAndBatch) {
  const std::vector<std::pair<const char*, std::function<ts::Array(const ts::Array&)>>> fs = {
      {"trace", [](const ts::Array& x) { return ts::trace(x); }},
      {"einsum_diag", [](const ts::Array& x) { return ts::einsum("ii->i", {x}); }},
      {"einsum_sum_transpose", [](const ts::Array& x) { return ts::einsum("ij->ji", {x}) * 2.0; }},
      {"einsum_total", [](const ts::Array& x) { return ts::einsum("ij->", {x}); }},
  };
  for (const auto& [name, f] : fs) {
    SCOPED_TRACE(name);
    check_grads([&](const V& x) { return f(x[0]); }, {uniform({4, 4}, 21)});
    check_grads([&](const V& x) { return f(ts::transpose(x[0])); }, {uniform({4, 4}, 22)});
    for (int64_t in : {0, 1, 2, -1}) check_vmap([&](const V& x) { return f(x[0]); }, {uniform({4, 4, 4}, 23)}, {in});
  }
}

// ---- hand-derived derivatives ----

TEST(LinalgRules, MatmulGradientsMatchFormulas) {
  // f = sum(A B): df/dA = 1 B^T, df/dB = A^T 1.
  const ts::Array a = uniform({3, 4}, 31), b = uniform({4, 2}, 32);
  auto f = [](const ts::Array& x, const ts::Array& y) { return ts::sum(ts::matmul(x, y)); };
  auto [ga, gb] = ts::grad<0, 1>(f)(a, b);
  expect_close(ga, ts::matmul(ts::ones({3, 2}, ts::f64), ts::transpose(b)), 1e-14, "d/dA");
  expect_close(gb, ts::matmul(ts::transpose(a), ts::ones({3, 2}, ts::f64)), 1e-14, "d/dB");
}

TEST(LinalgRules, QuadraticFormSecondDerivativeIsSymmetrizedMatrix) {
  // f(x) = x . (A x): grad = (A + A^T) x, hessian = A + A^T; grad of grad through
  // dot_general's transpose of its transpose.
  const ts::Array a = uniform({4, 4}, 41), x = uniform({4}, 42);
  auto f = [&](const ts::Array& v) { return ts::dot(v, ts::matmul(a, v)); };
  const ts::Array sym = a + ts::transpose(a);
  expect_close(ts::grad(f)(x), ts::matmul(sym, x), 1e-14, "grad");
  expect_close(ts::hessian(f)(x), sym, 1e-14, "hessian");
  // The gradient of a component of the gradient: d/dx (grad f)_0 = row 0 of (A + A^T).
  auto g0 = [&](const ts::Array& v) { return ts::slice_in_dim(ts::grad(f)(v), 0, 1).reshape({}); };
  expect_close(ts::grad(g0)(x), ts::slice_in_dim(sym, 0, 1, 1, 0).reshape({4}), 1e-14, "grad of grad");
}

TEST(LinalgRules, DotGeneralCotangentsKeepOperandDtypeWithPreferredType) {
  // f32 operands, f64 result: the cotangents come back as f32.
  const ts::Array a = uniform({2, 3}, 51, -1, 1, ts::f32), b = uniform({3, 2}, 52, -1, 1, ts::f32);
  auto f = [](const ts::Array& x, const ts::Array& y) {
    return ts::sum(ts::dot_general(x, y, {{1}, {0}, {}, {}}, ts::f64));
  };
  auto [ga, gb] = ts::grad<0, 1>(f)(a, b);
  EXPECT_EQ(ga.dtype(), ts::f32);
  EXPECT_EQ(gb.dtype(), ts::f32);
  expect_close(ga, ts::matmul(ts::ones({2, 2}, ts::f32), ts::transpose(b)), 1e-6, "d/da");
  expect_close(gb, ts::matmul(ts::transpose(a), ts::ones({2, 2}, ts::f32)), 1e-6, "d/db");
}

TEST(LinalgRules, JitOfVmapOfMatmulMatchesLoop) {
  const ts::Array a = uniform({3, 4, 2}, 71), b = uniform({2, 5}, 72);
  auto batched = ts::jit(ts::vmap([](const ts::Array& x, const ts::Array& y) { return ts::matmul(x, y); },
                                  {1, ts::none}, {2}));
  const ts::Array got = batched(a, b);
  ASSERT_EQ(got.shape(), (ts::Shape{3, 5, 4}));
  for (int64_t i = 0; i < 4; ++i)
    expect_close(ts::squeeze(ts::slice_in_dim(got, i, i + 1, 1, 2), ts::Axes{2}),
                 ts::matmul(ts::squeeze(ts::slice_in_dim(a, i, i + 1, 1, 1), ts::Axes{1}), b), 1e-14, "row");
}

TEST(LinalgRules, VmapOfGradOfMatmulMatchesLoop) {
  // Per-example gradients of a loss w.r.t. the weights, batched over examples.
  auto loss_grad = [](const V& x) {
    return ts::grad([&](const ts::Array& w) { return ts::sum(ts::tanh(ts::matmul(x[0], w))); })(x[1]);
  };
  check_vmap(loss_grad, {uniform({5, 3}, 61), uniform({3, 2}, 62)}, {0, ts::none}, 0);
  check_vmap(loss_grad, {uniform({5, 3}, 63), uniform({3, 2, 5}, 64)}, {0, 2}, 1);
}

}  // namespace
