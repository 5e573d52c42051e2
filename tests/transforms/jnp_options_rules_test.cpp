// jvp, vjp and vmap of jnp-level functions with the options JAX users pass: every jnp.pad
// mode, per-element repeat counts (concrete, and traced with total_repeat_length), trace
// with an offset and axes, var and std with ddof, argmax/argmin without an axis. They are
// compositions of primitives, so this checks that each composition differentiates and
// batches (structural_cases.h: jvp against finite differences, vjp against jvp, vmap
// against a loop).
#include "transforms/structural_cases.h"

namespace {
using namespace transform_testing;
using V = std::vector<ts::Array>;

ts::Array pad_mode(const ts::Array& x, const std::string& mode, ts::PadOptions o = {}) {
  return ts::pad(x, {{2, 5}, {1, 3}}, mode, o);
}

std::vector<Case> option_cases() {
  return {
      {"PadReflect", [](const V& a) { return pad_mode(a[0], "reflect"); }, {{{3, 2}}}},
      {"PadReflectOdd", [](const V& a) { return pad_mode(a[0], "reflect", {.reflect_type = "odd"}); }, {{{3, 2}}}},
      {"PadSymmetric", [](const V& a) { return pad_mode(a[0], "symmetric"); }, {{{3, 2}}}},
      {"PadSymmetricOdd", [](const V& a) { return pad_mode(a[0], "symmetric", {.reflect_type = "odd"}); }, {{{3, 2}}}},
      {"PadWrap", [](const V& a) { return pad_mode(a[0], "wrap"); }, {{{3, 2}}}},
      {"PadLinearRamp", [](const V& a) { return pad_mode(a[0], "linear_ramp", {.end_values = {{1.5, -2.0}}}); },
       {{{3, 2}}}, false},
      {"PadMaximum", [](const V& a) { return pad_mode(a[0], "maximum"); }, {{{3, 2}}}},
      {"PadMinimumWithStatLength", [](const V& a) { return pad_mode(a[0], "minimum", {.stat_length = {{2, 1}}}); },
       {{{3, 2}}}},
      {"PadMean", [](const V& a) { return pad_mode(a[0], "mean"); }, {{{3, 2}}}, false},
      {"PadMedian", [](const V& a) { return pad_mode(a[0], "median", {.stat_length = {{3, 2}}}); }, {{{4, 3}}}, false},
      {"PadEmpty", [](const V& a) { return pad_mode(a[0], "empty"); }, {{{3, 2}}}},
      {"RepeatPerElement", [](const V& a) { return ts::repeat(a[0], ts::Array({2, 0, 3}), 1); }, {{{2, 3}}}},
      {"RepeatFlattened", [](const V& a) { return ts::repeat(a[0], ts::Array({1, 2, 0, 1}), ts::none); }, {{{2, 2}}}},
      {"RepeatTracedCountsWithTotalLength",
       [](const V& a) { return ts::repeat(a[0], a[1], 0, {.total_repeat_length = 7}); },
       {{{4, 2}}, index_arg({4}, 0, 3)}},
      {"TraceWithOffsetAndAxes", [](const V& a) { return ts::trace(a[0], 1, 2, 0); }, {{{3, 2, 4}}}},
      {"TraceWithNegativeOffset", [](const V& a) { return ts::trace(a[0], -1); }, {{{4, 3}}}},
      {"VarWithDdof", [](const V& a) { return ts::var(a[0], {1}, false, 1); }, {{{3, 4}}}, false},
      {"StdWithDdof", [](const V& a) { return ts::std(a[0], {0}, true, 1.5); }, {{{4, 3}}}, false},
  };
}

class JnpOptionRules : public ::testing::TestWithParam<Case> {};

TEST_P(JnpOptionRules, JvpMatchesFiniteDifferencesAndVjpMatchesJvp) { check_case_grads(GetParam()); }
TEST_P(JnpOptionRules, VmapMatchesLoopFloat32) { check_case_vmap(GetParam(), ts::f32); }
TEST_P(JnpOptionRules, VmapMatchesLoopInt32) {
  if (!GetParam().int_data) GTEST_SKIP() << "float-only case";
  check_case_vmap(GetParam(), ts::i32);
}

INSTANTIATE_TEST_SUITE_P(Functions, JnpOptionRules, ::testing::ValuesIn(option_cases()), case_name);

TEST(JnpOptionRules, ArgmaxWithoutAxisUnderVmapAndJit) {
  const ts::Array x = ts::Array({{1.0f, 7.0f, 3.0f}, {9.0f, 2.0f, 9.0f}, {0.0f, 0.0f, -1.0f}}).reshape({3, 3, 1});
  auto f = [](const ts::Array& a) { return ts::argmax(a); };
  EXPECT_EQ(ts::vmap(f)(x).to_vector<int>(), (std::vector<int>{1, 0, 0}));
  EXPECT_EQ(ts::jit(ts::vmap([](const ts::Array& a) { return ts::argmin(a, ts::none, true); }))(x).shape(),
            (ts::Shape{3, 1, 1}));
  EXPECT_EQ(ts::jit(f)(x).item<int>(), 3);
}

}  // namespace
