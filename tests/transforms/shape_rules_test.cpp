// jvp, transpose and batching rules of the shape primitives (broadcast_in_dim, reshape,
// transpose, rev, concatenate, pad) and of iota and device_put, through the functions
// users call (broadcast_to, reshape, moveaxis, flip, concatenate, stack, pad, roll, tile, ...).
#include "ir/primitive.h"
#include "ir/trace.h"
#include "transforms/structural_cases.h"

namespace {
using namespace transform_testing;
using V = std::vector<ts::Array>;

/// pad with an array padding value (the public lax_pad takes a Scalar): differentiable and
/// batchable in the value too.
ts::Array pad_with(const ts::Array& x, const ts::Array& value, std::vector<int64_t> config) {
  return ts::detail::bind1(ts::ir::lookup_primitive("pad"), {x, value}, ts::ir::Params{{"padding_config", config}});
}

std::vector<Case> shape_cases() {
  return {
      {"BroadcastInDimAddsAndExpandsDims",
       [](const V& a) { return ts::broadcast_in_dim(a[0], {2, 3, 4}, {1, 2}); }, {{{1, 4}}}},
      {"BroadcastInDimOfTransposedOperand",
       [](const V& a) { return ts::broadcast_in_dim(ts::transpose(a[0]), {3, 2, 4}, {0, 2}); }, {{{4, 3}}}},
      {"BroadcastScalar", [](const V& a) { return ts::broadcast_to(a[0], {2, 3}); }, {{{}}}},
      {"NumpyBroadcastingInBinaryOp", [](const V& a) { return a[0] * a[1]; }, {{{3, 1}}, {{4}}}},
      {"Reshape", [](const V& a) { return ts::reshape(a[0], {2, 6}); }, {{{3, 4}}}},
      {"ReshapeOfTransposedOperand", [](const V& a) { return ts::ravel(ts::transpose(a[0])); }, {{{3, 4}}}},
      {"SqueezeAndExpandDims", [](const V& a) { return ts::expand_dims(ts::squeeze(a[0], ts::Axes{1}), {0}); },
       {{{3, 1, 2}}}},
      {"Transpose", [](const V& a) { return ts::transpose(a[0], ts::Axes{2, 0, 1}); }, {{{2, 3, 4}}}},
      {"MoveaxisOfSlicedOperand", [](const V& a) { return ts::moveaxis(ts::slice_in_dim(a[0], 1, 3, 1, 1), 0, -1); },
       {{{2, 4, 3}}}},
      {"Rev", [](const V& a) { return ts::flip(a[0], ts::Axes{0, 1}); }, {{{3, 4}}}},
      {"RevOfTransposedOperand", [](const V& a) { return ts::flip(ts::transpose(a[0]), ts::Axes{1}); }, {{{3, 4}}}},
      {"Concatenate", [](const V& a) { return ts::concatenate({a[0], a[1]}, 1); }, {{{2, 3}}, {{2, 2}}}},
      {"ConcatenateWithConstantOperand",
       [](const V& a) { return ts::concatenate({ts::transpose(a[0]), ts::ones({1, 2}, a[0].dtype()), a[1]}, 0); },
       {{{2, 3}}, {{2, 2}}}},
      {"ConcatenateThreeWays", [](const V& a) { return ts::concatenate({a[0], a[1], a[2]}, 0); },
       {{{1, 3}}, {{2, 3}}, {{3, 3}}}},
      {"Stack", [](const V& a) { return ts::stack({a[0], a[1]}, 1); }, {{{2, 3}}, {{2, 3}}}},
      {"PadLowHighInterior", [](const V& a) { return ts::lax_pad(a[0], 0.5, {{1, 2, 1}, {0, 1, 0}}); },
       {{{3, 4}}}},
      {"PadNegativeCropsAndInterior", [](const V& a) { return ts::lax_pad(a[0], 0, {{-1, 0, 2}, {2, -2, 1}}); },
       {{{3, 4}}}},
      {"PadWithArrayValue", [](const V& a) { return pad_with(a[0], a[1], {1, -1, 1, 0, 2, 0}); }, {{{3, 4}}, {{}}}},
      {"PadEdgeMode", [](const V& a) { return ts::pad(a[0], {{1, 2}}, "edge"); }, {{{3, 2}}}},
      {"Roll", [](const V& a) { return ts::roll(a[0], 2, 1); }, {{{2, 5}}}},
      {"Tile", [](const V& a) { return ts::tile(a[0], {2, 1, 3}); }, {{{2, 3}}}},
      {"Repeat", [](const V& a) { return ts::repeat(a[0], 2, 0); }, {{{3, 2}}}},
      {"IotaScalesOperand", [](const V& a) { return a[0] * ts::iota(a[0].dtype(), {3, 4}, 1); }, {{{3, 4}}}},
      {"DevicePut", [](const V& a) { return ts::device_put(a[0], ts::devices().back()); }, {{{3, 2}}}},
  };
}

class ShapeRules : public ::testing::TestWithParam<Case> {};

TEST_P(ShapeRules, JvpMatchesFiniteDifferencesAndVjpMatchesJvp) { check_case_grads(GetParam()); }
TEST_P(ShapeRules, VmapMatchesLoopFloat32) { check_case_vmap(GetParam(), ts::f32); }
TEST_P(ShapeRules, VmapMatchesLoopInt32) {
  if (!GetParam().int_data) GTEST_SKIP() << "float-only case";
  check_case_vmap(GetParam(), ts::i32);
}

INSTANTIATE_TEST_SUITE_P(Primitives, ShapeRules, ::testing::ValuesIn(shape_cases()), case_name);

// ---- transposes checked against their definition, second derivatives against hand formulas ----

TEST(ShapeRulesTranspose, BroadcastTransposeSumsBroadcastDims) {
  // ct of broadcast_in_dim((1, 4) -> (2, 3, 4), dims (1, 2)) sums the new dim 0 and the expanded dim 1.
  auto f = [](const ts::Array& x) { return ts::broadcast_in_dim(x, {2, 3, 4}, {1, 2}); };
  ts::Array ct = uniform({2, 3, 4}, 5);
  auto t = ts::linear_transpose(f, uniform({1, 4}, 1))(ct);
  expect_close(t, ts::sum(ct, {0, 1}, false).reshape({1, 4}), 1e-12, "broadcast transpose");
}

TEST(ShapeRulesTranspose, PadTransposeGivesValueTheSumOfThePadding) {
  auto f = [](const ts::Array& x, const ts::Array& v) { return pad_with(x, v, {2, -1, 1}); };
  ts::Array x = uniform({4}, 1), v = uniform({}, 2);
  ts::Array ct = uniform(f(x, v).shape(), 3);  // (2 + 4 + 3 - 1,) = (8,)
  auto [y, pullback] = ts::vjp(f, x, v);
  auto [cx, cv] = pullback(ct);
  auto c = ct.to_vector<double>();
  // Output: [v, v, x0, v, x1, v, x2, v] (the last x cropped): x_i lands at 2 + 2 i.
  expect_close(cx, ts::Array(std::vector<double>{c[2], c[4], c[6], 0.0}), 1e-12, "operand ct");
  expect_close(cv, ts::Array(c[0] + c[1] + c[3] + c[5] + c[7]), 1e-12, "padding value ct");
}

TEST(ShapeRulesSecondOrder, GradOfGradThroughBroadcastConcatenateAndReshape) {
  // f(x) = sum(concatenate(b, b)^3) with b = broadcast(x, (3,)): 6 x^3, f'' = 36 x.
  auto f = [](const ts::Array& x) {
    ts::Array b = ts::broadcast_to(x, {3});
    ts::Array c = ts::reshape(ts::concatenate({b, ts::flip(b)}, 0), {2, 3});
    return ts::sum(c * c * c);
  };
  ts::Array x(ts::Scalar(0.7));  // a strong float64 (sum gives a weak double the default float32)
  expect_close(ts::grad(ts::grad(f))(x), ts::Array(36 * 0.7), 1e-12, "f''");
}

TEST(ShapeRulesSecondOrder, HessianThroughPadAndTranspose) {
  // f(x) = sum(pad(x^T)^2 * w) with w weighting each output element: the Hessian is
  // diagonal with 2 w at the position each x lands.
  auto f = [](const ts::Array& x) {
    ts::Array p = ts::lax_pad(ts::transpose(x), 0, {{1, 0, 1}, {0, 1, 0}});  // (3, 2) -> (6, 3)
    ts::Array w = ts::iota(ts::f64, p.shape(), 0) + 1.0;
    return ts::sum(p * p * w);
  };
  ts::Array x = uniform({2, 3}, 4);
  ts::Array h = ts::hessian(f)(x);  // (2, 3, 2, 3)
  ASSERT_EQ(h.shape(), (ts::Shape{2, 3, 2, 3}));
  auto hv = h.to_vector<double>();
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 2; ++k)
        for (int64_t l = 0; l < 3; ++l) {
          // x[i, j] lands at row 1 + 2 j (low 1, interior 1 over the transposed dim 0).
          double want = (i == k && j == l) ? 2.0 * (1 + 2 * j + 1) : 0.0;
          EXPECT_NEAR(hv[size_t(((i * 3 + j) * 2 + k) * 3 + l)], want, 1e-12);
        }
}

TEST(ShapeRulesVmap, PerExampleGradThroughReshapeAndTranspose) {
  // vmap(grad(f)) over examples: grad of sum(transpose(reshape(x))^2) is 2 x.
  auto g = ts::grad([](const ts::Array& x) {
    ts::Array y = ts::transpose(ts::reshape(x, {2, 3}));
    return ts::sum(y * y);
  });
  ts::Array xs = uniform({4, 6}, 3);
  expect_close(ts::vmap(g)(xs), xs * 2.0, 1e-12, "vmap(grad)");
}

}  // namespace
