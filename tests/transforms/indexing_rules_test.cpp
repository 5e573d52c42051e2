// jvp, transpose and batching rules of the indexing primitives (slice, dynamic_slice,
// dynamic_update_slice, gather, scatter in every mode), through what users write:
// x[...] and x.at(...).set/add/mul/min/max, take, take_along_axis, dynamic_slice.
#include "transforms/structural_cases.h"

namespace {
using namespace transform_testing;
using ts::Slice;
using V = std::vector<ts::Array>;

std::vector<Case> indexing_cases() {
  return {
      {"StridedSlice", [](const V& a) { return ts::slice(a[0], {1, 0}, {5, 6}, {2, 3}); }, {{{5, 6}}}},
      {"SliceOfTransposedOperand", [](const V& a) { return ts::slice_in_dim(ts::transpose(a[0]), 1, 4, 2, 1); },
       {{{5, 3}}}},
      {"BasicIndexWithIntSliceAndNegativeStep",
       [](const V& a) { return a[0][{Slice(1, ts::none, 2), 2, Slice(ts::none, ts::none, -1)}]; }, {{{4, 5, 3}}}},
      {"BasicIndexWithNewaxisAndEllipsis", [](const V& a) { return a[0][{ts::newaxis, ts::ellipsis, Slice(1, 3)}]; },
       {{{2, 4}}}},
      {"DynamicSliceWithClampedStarts",
       [](const V& a) { return ts::dynamic_slice(a[0], {a[1], a[2]}, {2, 3}); },
       {{{5, 6}}, index_arg({}, -2, 7), index_arg({}, -1, 6)}},
      {"DynamicSliceOfTransposedOperand",
       [](const V& a) { return ts::dynamic_slice(ts::transpose(a[0]), {a[1], ts::Array(1)}, {2, 2}); },
       {{{4, 5}}, index_arg({}, 0, 5)}},
      {"DynamicUpdateSlice",
       [](const V& a) { return ts::dynamic_update_slice(a[0], a[1], {a[2], ts::Array(2)}); },
       {{{5, 6}}, {{2, 3}}, index_arg({}, -1, 6)}},
      {"Take", [](const V& a) { return ts::take(a[0], a[1], 0); }, {{{5, 3}}, index_arg({4}, -5, 5)}},
      {"TakeFillsOutOfRange", [](const V& a) { return ts::take(a[0], a[1], 1, {.fill_value = -3.0}); },
       {{{2, 4}}, index_arg({3, 2}, -7, 9)}},
      {"TakeClipsOutOfRange", [](const V& a) { return ts::take(a[0], a[1], 1, {.mode = "clip"}); },
       {{{2, 4}}, index_arg({3, 2}, -7, 9)}},
      {"TakeWrapsOutOfRange", [](const V& a) { return ts::take(a[0], a[1], 1, {.mode = "wrap"}); },
       {{{2, 4}}, index_arg({3, 2}, -7, 9)}},
      {"TakeFlattened", [](const V& a) { return ts::take(a[0], a[1], ts::none, {.mode = "clip"}); },
       {{{2, 3}}, index_arg({4}, -7, 7)}},
      {"TakeAlongAxis", [](const V& a) { return ts::take_along_axis(a[0], a[1], 1); },
       {{{3, 4}}, index_arg({3, 2}, 0, 4)}},
      {"TakeAlongAxisFillsOutOfRange",
       [](const V& a) { return ts::take_along_axis(a[0], a[1], 0, {.fill_value = 2.0}); },
       {{{3, 4}}, index_arg({2, 4}, -5, 5)}},
      {"AtGetFillsOutOfRange", [](const V& a) { return a[0].at({Slice(), a[1]}).get({.fill_value = 0.5}); },
       {{{2, 4}}, index_arg({3}, -6, 6)}},
      {"AtGetFillsAtStaticIndex", [](const V& a) { return a[0].at({5, Slice(1, 3)}).get({.fill_value = 0.5}); },
       {{{2, 4}}}},
      {"AtAddClipsOutOfRange", [](const V& a) { return a[0].at({Slice(), a[2]}).add(a[1], {.mode = "clip"}); },
       {{{3, 4}}, {{3, 6}}, index_arg({6}, -7, 7)}},
      {"AtSetWrapsOutOfRange", [](const V& a) { return a[0].at({a[2]}).set(a[1], {.mode = "wrap"}); },
       {{{4, 3}}, {{2, 3}}, index_arg({2}, 5, 7)}},
      {"ArrayIndexAdjacent", [](const V& a) { return a[0][{Slice(1, 3), a[1], a[2]}]; },
       {{{3, 4, 5}}, index_arg({2, 1}, 0, 4), index_arg({3}, -5, 5)}},
      {"ArrayIndexNonAdjacent", [](const V& a) { return a[0][{a[1], Slice(), a[2]}]; },
       {{{4, 2, 5}}, index_arg({3}, 0, 4), index_arg({3}, 0, 5)}},
      {"ArrayIndexMixedWithIntAndReversal",
       [](const V& a) { return a[0][{a[1], 1, Slice(ts::none, ts::none, -1)}]; },
       {{{4, 3, 5}}, index_arg({2, 2}, -4, 4)}},
      {"AtSetWithDuplicateIndices", [](const V& a) { return a[0].at({a[2]}).set(a[1]); },
       {{{4, 3}}, {{5, 3}}, index_arg({5}, 0, 4)}},
      {"AtSetDropsOutOfRangeIndices", [](const V& a) { return a[0].at({Slice(), a[2]}).set(a[1]); },
       {{{2, 4}}, {{2, 6}}, index_arg({6}, -6, 6)}},
      {"AtSetWindow", [](const V& a) { return a[0].at({Slice(0, ts::none, 2), 1}).set(a[1]); },
       {{{5, 3}}, {{3}}}},
      {"AtAddWithDuplicateIndices", [](const V& a) { return a[0].at({Slice(), a[2]}).add(a[1]); },
       {{{3, 4}}, {{3, 6}}, index_arg({6}, -4, 4)}},
      {"AtAddBroadcastsScalarUpdate", [](const V& a) { return a[0].at({a[1]}).add(a[2]); },
       {{{5}}, index_arg({3}, 0, 5), {{}}}},
      {"AtMulWithDuplicateIndices", [](const V& a) { return a[0].at({a[2]}).mul(a[1]); },
       {{{4, 2}}, {{5, 2}}, index_arg({5}, -4, 4)}},
      {"AtMax", [](const V& a) { return a[0].at({a[2], Slice(1, 3)}).max(a[1]); },
       {{{4, 3}}, {{3, 2}}, index_arg({3}, 0, 4)}},
      {"AtMinOutOfRange", [](const V& a) { return a[0].at({a[2]}).min(a[1]); },
       {{{4}}, {{6}}, index_arg({6}, -5, 6)}},
  };
}

class IndexingRules : public ::testing::TestWithParam<Case> {};

TEST_P(IndexingRules, JvpMatchesFiniteDifferencesAndVjpMatchesJvp) { check_case_grads(GetParam()); }
TEST_P(IndexingRules, VmapMatchesLoopFloat32) { check_case_vmap(GetParam(), ts::f32); }
TEST_P(IndexingRules, VmapMatchesLoopInt32) {
  if (!GetParam().int_data) GTEST_SKIP() << "float-only case";
  check_case_vmap(GetParam(), ts::i32);
}

INSTANTIATE_TEST_SUITE_P(Primitives, IndexingRules, ::testing::ValuesIn(indexing_cases()), case_name);

// ---- gradients against hand-computed values ----

ts::Array idx(std::vector<int32_t> v) { return ts::Array(v); }

TEST(IndexingRulesGrad, GradOfGatherAccumulatesDuplicatesAndClampsOutOfRange) {
  // x[[0, 2, 2, 9, -1]] reads x0, x2, x2, x3 (clamped), x3 (wrapped).
  auto f = [](const ts::Array& x) { return ts::sum(x[{idx({0, 2, 2, 9, -1})}] * ts::Array({1.0, 2.0, 3.0, 4.0, 5.0})); };
  expect_close(ts::grad(f)(uniform({4}, 1)), ts::Array({1.0, 0.0, 5.0, 9.0}), 1e-12, "grad");
}

TEST(IndexingRulesGrad, GradOfAtSetGoesToTheLastDuplicateOnly) {
  // x.at[[1, 1, 7]].set(u): u1 wins at 1, u2 is dropped (out of range), u0 is overwritten.
  auto f = [](const ts::Array& x, const ts::Array& u) {
    return ts::sum(x.at({idx({1, 1, 7})}).set(u) * ts::Array({1.0, 2.0, 3.0}));
  };
  auto [gx, gu] = ts::grad<0, 1>(f)(uniform({3}, 1), uniform({3}, 2));
  expect_close(gx, ts::Array({1.0, 0.0, 3.0}), 1e-12, "operand grad");
  expect_close(gu, ts::Array({0.0, 2.0, 0.0}), 1e-12, "update grad");
}

TEST(IndexingRulesGrad, GradOfAtMaxSplitsTiesEvenly) {
  // x = [1, 5], updates [5, 2] at [1, 0]: element 1 ties (x1 and u0), element 0 keeps x0.
  auto f = [](const ts::Array& x, const ts::Array& u) { return ts::sum(x.at({idx({1, 0})}).max(u)); };
  auto [gx, gu] = ts::grad<0, 1>(f)(ts::Array({1.0, 5.0}), ts::Array({5.0, 0.5}));
  expect_close(gx, ts::Array({1.0, 0.5}), 1e-12, "operand grad");
  expect_close(gu, ts::Array({0.5, 0.0}), 1e-12, "update grad");
}

TEST(IndexingRulesGrad, DynamicUpdateSliceTransposeSplitsTheCotangent) {
  auto f = [](const ts::Array& x, const ts::Array& u) { return ts::dynamic_update_slice(x, u, {ts::Array(3)}); };
  ts::Array ct = ts::Array({1.0, 2.0, 3.0, 4.0, 5.0});
  auto t = ts::linear_transpose(f, ts::zeros({5}, ts::f64), ts::zeros({2}, ts::f64))(ct);
  expect_close(std::get<0>(t), ts::Array({1.0, 2.0, 3.0, 0.0, 0.0}), 1e-12, "operand ct");
  expect_close(std::get<1>(t), ts::Array({4.0, 5.0}), 1e-12, "update ct");
}

// ---- second derivatives against hand formulas ----

TEST(IndexingRulesSecondOrder, HessianOfCubedGatherCountsDuplicates) {
  // f(x) = sum(x[[0, 2, 2, 3]]^3): d2f/dx_i^2 = 6 x_i * count_i, off-diagonal 0.
  auto f = [](const ts::Array& x) {
    ts::Array y = x[{idx({0, 2, 2, 3})}];
    return ts::sum(y * y * y);
  };
  ts::Array x = uniform({4}, 3);
  auto xv = x.to_vector<double>();
  std::vector<double> want(16, 0.0);
  const double count[] = {1, 0, 2, 1};
  for (size_t i = 0; i < 4; ++i) want[i * 5] = 6 * xv[i] * count[i];
  expect_close(ts::hessian(f)(x), ts::Array(want, {4, 4}), 1e-12, "hessian");
}

TEST(IndexingRulesSecondOrder, GradOfGradThroughDynamicSliceAndAtSet) {
  // y = x.at[0:2].set(x[1:3]) = [x1, x2, x2]; f = sum(dynamic_slice(y, 1, 2)^3) = 2 x2^3;
  // f'' wrt x2 = 12 x2, via grad of (grad . e2).
  auto f = [](const ts::Array& x) {
    ts::Array y = x.at({Slice(0, 2)}).set(x[{Slice(1, 3)}]);
    ts::Array s = ts::dynamic_slice(y, {ts::Array(1)}, {2});
    return ts::sum(s * s * s);
  };
  auto g2 = ts::grad([&](const ts::Array& x) { return ts::grad(f)(x)[{2}]; });
  ts::Array x = uniform({3}, 5);
  expect_close(g2(x), ts::Array({0.0, 0.0, 12 * x.to_vector<double>()[2]}), 1e-12, "grad of grad");
}

TEST(IndexingRulesSecondOrder, GradOfGradThroughScatterMul) {
  // f(x) = sum(ones(3).at[[0, 0]].mul(x)) = x0 x1 + 2: the mixed second derivative is 1.
  auto f = [](const ts::Array& x) { return ts::sum(ts::ones({3}, ts::f64).at({idx({0, 0})}).mul(x)); };
  auto h = ts::hessian(f)(ts::Array({0.3, -0.8}));
  expect_close(h, ts::Array(std::vector<double>{0, 1, 1, 0}, {2, 2}), 1e-12, "hessian");
}

// ---- vmap of what users write, including per-example gradients ----

TEST(IndexingRulesVmap, PerExampleGradOfIndexedLoss) {
  // Per-example gradients with per-example indices: grad of sum(x[i]^2) is 2 x at i (counted).
  auto g = [](const V& a) {
    return ts::grad([&](const ts::Array& x) {
      ts::Array y = x[{a[1]}];
      return ts::sum(y * y);
    })(a[0]);
  };
  check_vmap(g, {uniform({3, 5}, 1), make_arg(index_arg({4}, 0, 5), {3, 4}, 2, ts::i32)}, {0, 0}, 0);
  check_vmap(g, {uniform({5}, 1), make_arg(index_arg({}, -5, 5), {4, 3}, 2, ts::i32)}, {ts::none, 1}, 1);
}

TEST(IndexingRulesVmap, PerExampleAtAddUnderJit) {
  auto f = ts::jit(ts::vmap([](const ts::Array& x, const ts::Array& i, const ts::Array& v) {
    return x.at({i}).add(v);
  }, {0, 0, ts::none}));
  ts::Array x = ts::zeros({2, 3}, ts::f64);
  ts::Array got = f(x, ts::Array(std::vector<int32_t>{2, 0}), ts::Array(1.5));
  expect_close(got, ts::Array(std::vector<double>{0, 0, 1.5, 1.5, 0, 0}, {2, 3}), 1e-12, "jit(vmap(at.add))");
}

TEST(IndexingRulesVmap, NestedVmapOfGatherAndScatter) {
  auto inner = [](const V& a) {
    return ts::vmap([](const ts::Array& x, const ts::Array& i) { return x.at({i}).set(x[{i}] * 2.0); }, {1, 0})(
        a[0], a[1]);
  };
  check_vmap(inner, {uniform({2, 5, 3}, 1), make_arg(index_arg({4}, -5, 5), {2, 3, 4}, 2, ts::i32)}, {0, 0}, 1);
}

TEST(IndexingRulesVmap, GradOfVmappedDynamicSliceWithBatchedStarts) {
  // vmap turns the dynamic_slice into a gather (batched starts); its transpose is a scatter.
  check_grads(
      [](const V& a) {
        return ts::vmap([](const ts::Array& x, const ts::Array& i) { return ts::dynamic_slice(x, {i}, {2}); },
                        {0, 0})(a[0], a[1]);
      },
      {uniform({3, 5}, 1), make_arg(index_arg({}, -1, 6), {3}, 2, ts::i32)});
}

}  // namespace
