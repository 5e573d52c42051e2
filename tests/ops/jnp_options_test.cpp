// Options of jnp functions that JAX users pass every day: every jnp.pad mode with its
// arguments, jnp.repeat with per-element counts and total_repeat_length, jnp.trace with
// offset/axis1/axis2, jnp.var and jnp.std with ddof, argmax/argmin without an axis.
// Expected values recorded from JAX 0.10.2 (float32 / int32), checked eagerly and under jit.
#include <cmath>
#include <functional>
#include <limits>

#include "ops/shape_test_util.h"

using namespace shape_testing;

namespace {

const double nan = std::numeric_limits<double>::quiet_NaN();
const float nanf = std::numeric_limits<float>::quiet_NaN();
using Fn1 = std::function<ts::Array(const ts::Array&)>;

/// Element-wise closeness (relative 1e-6) where NaN matches NaN, and the shape.
void expect_values(const ts::Array& got, const ts::Shape& shape, const std::vector<double>& want,
                   const std::string& what) {
  EXPECT_EQ(got.shape(), shape) << what;
  const auto g = got.to_vector<double>();
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t k = 0; k < g.size(); ++k) {
    if (std::isnan(want[k])) EXPECT_TRUE(std::isnan(g[k])) << what << ": element " << k << " is " << g[k];
    else EXPECT_NEAR(g[k], want[k], 1e-6 * (1 + std::abs(want[k]))) << what << ": element " << k;
  }
}

void expect_eager_and_jit(const Fn1& f, const ts::Array& x, const ts::Shape& shape, const std::vector<double>& want,
                          const std::string& what) {
  expect_values(f(x), shape, want, what + " (eager)");
  expect_values(ts::jit(f)(x), shape, want, what + " (jit)");
}

ts::Array v123() { return ts::Array({1.0f, 2.0f, 3.0f}); }
ts::Array m23() { return ts::arange(6).astype(ts::f32).reshape({2, 3}); }

// ---- jnp.pad ----

TEST(PadModes, OneDimensionalWithWidthsWithinAndBeyondTheAxis) {
  struct Want {
    std::string mode;
    std::vector<double> small, large;  // widths (2, 3) and (7, 8) around [1, 2, 3]
  };
  const std::vector<Want> wants = {
      {"reflect", {3, 2, 1, 2, 3, 2, 1, 2}, {2, 3, 2, 1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3}},
      {"symmetric", {2, 1, 1, 2, 3, 3, 2, 1}, {1, 1, 2, 3, 3, 2, 1, 1, 2, 3, 3, 2, 1, 1, 2, 3, 3, 2}},
      {"wrap", {2, 3, 1, 2, 3, 1, 2, 3}, {3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2}},
      {"edge", {1, 1, 1, 2, 3, 3, 3, 3}, {1, 1, 1, 1, 1, 1, 1, 1, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3}},
      {"linear_ramp",
       {0, 0.5, 1, 2, 3, 2, 1, 0},
       {0, 1.0 / 7, 2.0 / 7, 3.0 / 7, 4.0 / 7, 5.0 / 7, 6.0 / 7, 1, 2, 3, 2.625, 2.25, 1.875, 1.5, 1.125, 0.75, 0.375, 0}},
      {"maximum", {3, 3, 1, 2, 3, 3, 3, 3}, {3, 3, 3, 3, 3, 3, 3, 1, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3}},
      {"minimum", {1, 1, 1, 2, 3, 1, 1, 1}, {1, 1, 1, 1, 1, 1, 1, 1, 2, 3, 1, 1, 1, 1, 1, 1, 1, 1}},
      {"mean", {2, 2, 1, 2, 3, 2, 2, 2}, {2, 2, 2, 2, 2, 2, 2, 1, 2, 3, 2, 2, 2, 2, 2, 2, 2, 2}},
      {"median", {2, 2, 1, 2, 3, 2, 2, 2}, {2, 2, 2, 2, 2, 2, 2, 1, 2, 3, 2, 2, 2, 2, 2, 2, 2, 2}},
      {"empty", {0, 0, 1, 2, 3, 0, 0, 0}, {0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 0, 0, 0, 0, 0, 0, 0, 0}},
  };
  for (const Want& w : wants) {
    expect_eager_and_jit([&](const ts::Array& a) { return ts::pad(a, {{2, 3}}, w.mode); }, v123(), {8}, w.small,
                         w.mode + " (2, 3)");
    expect_eager_and_jit([&](const ts::Array& a) { return ts::pad(a, {{7, 8}}, w.mode); }, v123(), {18}, w.large,
                         w.mode + " (7, 8)");
  }
}

TEST(PadModes, ModeArguments) {
  auto padded = [](const ts::Array& x, std::pair<int64_t, int64_t> w, const std::string& mode, ts::PadOptions o) {
    return ts::pad(x, {w}, mode, o);
  };
  expect_values(padded(v123(), {5, 6}, "reflect", {.reflect_type = "odd"}), {14},
                {-4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, "reflect odd");
  expect_values(padded(v123(), {5, 6}, "symmetric", {.reflect_type = "odd"}), {14},
                {-2, -1, -1, 0, 1, 1, 2, 3, 3, 4, 5, 5, 6, 7}, "symmetric odd");
  expect_values(padded(v123(), {2, 3}, "linear_ramp", {.end_values = {{10, -4}}}), {8},
                {10, 5.5, 1, 2, 3, 2.0 / 3, -5.0 / 3, -4}, "linear_ramp end_values");
  // Integer ramps floor, integer means and medians round half to even.
  const ts::Array i123 = ts::Array({1, 2, 3});
  expect_values(padded(i123, {2, 3}, "linear_ramp", {.end_values = {{10, -4}}}), {8}, {10, 5, 1, 2, 3, 0, -2, -4},
                "int linear_ramp");
  expect_values(padded(ts::Array({0, 1}), {2, 0}, "linear_ramp", {.end_values = {{-5, 0}}}), {4}, {-5, -3, 0, 1},
                "int linear_ramp floors");
  expect_values(padded(ts::Array({1, 2}), {1, 1}, "mean", {}), {4}, {2, 1, 2, 2}, "int mean");
  expect_values(padded(ts::Array({-1, -2}), {1, 1}, "mean", {}), {4}, {-2, -1, -2, -2}, "negative int mean");
  expect_values(padded(ts::Array({1, 2, 4, 4}), {1, 1}, "median", {}), {6}, {3, 1, 2, 4, 4, 3}, "int median");
  EXPECT_EQ(padded(ts::Array({1, 2}), {1, 1}, "mean", {}).dtype(), ts::i32);
  expect_values(padded(ts::Array({4.0f, 1.0f, 3.0f, 2.0f}), {1, 1}, "median", {}), {6}, {2.5, 4, 1, 3, 2, 2.5},
                "even-length median");
  expect_values(padded(ts::Array({4.0f, nanf, 3.0f}), {1, 1}, "median", {}), {5}, {nan, 4, nan, 3, nan}, "NaN median");
  const ts::Array v = ts::Array({1.0f, 2.0f, 4.0f, 8.0f});
  expect_values(padded(v, {1, 1}, "mean", {.stat_length = {{2, 2}}}), {6}, {1.5, 1, 2, 4, 8, 6}, "stat_length 2");
  expect_values(padded(v, {1, 1}, "maximum", {.stat_length = {{1, 3}}}), {6}, {1, 1, 2, 4, 8, 8}, "stat_length (1, 3)");
  expect_values(ts::pad(ts::Array({5.0f}), {{2, 2}}, "reflect"), {5}, {5, 5, 5, 5, 5}, "reflect of one element");
}

TEST(PadModes, TwoDimensionalPadsAxesInOrder) {
  auto check = [](const std::string& mode, std::vector<std::pair<int64_t, int64_t>> w, ts::PadOptions o,
                  const ts::Shape& shape, const std::vector<double>& want) {
    expect_eager_and_jit([&](const ts::Array& a) { return ts::pad(a, w, mode, o); }, m23(), shape, want, "2-D " + mode);
  };
  check("reflect", {{1, 1}, {2, 2}}, {}, {4, 7},
        {5, 4, 3, 4, 5, 4, 3, 2, 1, 0, 1, 2, 1, 0, 5, 4, 3, 4, 5, 4, 3, 2, 1, 0, 1, 2, 1, 0});
  check("symmetric", {{1, 2}, {1, 1}}, {}, {5, 5},
        {0, 0, 1, 2, 2, 0, 0, 1, 2, 2, 3, 3, 4, 5, 5, 3, 3, 4, 5, 5, 0, 0, 1, 2, 2});
  check("wrap", {{1, 2}, {4, 1}}, {}, {5, 8},
        {5, 3, 4, 5, 3, 4, 5, 3, 2, 0, 1, 2, 0, 1, 2, 0, 5, 3, 4, 5, 3, 4, 5, 3,
         2, 0, 1, 2, 0, 1, 2, 0, 5, 3, 4, 5, 3, 4, 5, 3});
  check("mean", {{1, 1}, {2, 2}}, {}, {4, 7},
        {2.5, 2.5, 1.5, 2.5, 3.5, 2.5, 2.5, 1, 1, 0, 1, 2, 1, 1, 4, 4, 3, 4, 5, 4, 4, 2.5, 2.5, 1.5, 2.5, 3.5, 2.5, 2.5});
  check("median", {{1, 1}, {1, 1}}, {}, {4, 5},
        {2.5, 1.5, 2.5, 3.5, 2.5, 1, 0, 1, 2, 1, 4, 3, 4, 5, 4, 2.5, 1.5, 2.5, 3.5, 2.5});
  check("linear_ramp", {{1, 1}, {2, 2}}, {.end_values = {{1, 2}, {3, 4}}}, {4, 7},
        {3, 2, 1, 1, 1, 2.5, 4, 3, 1.5, 0, 1, 2, 3, 4, 3, 3, 3, 4, 5, 4.5, 4, 3, 2.5, 2, 2, 2, 3, 4});
  check("maximum", {{1, 1}, {1, 1}}, {}, {4, 5}, {5, 3, 4, 5, 5, 2, 0, 1, 2, 2, 5, 3, 4, 5, 5, 5, 3, 4, 5, 5});
  check("minimum", {{1, 1}, {1, 1}}, {.stat_length = {{1, 1}, {2, 2}}}, {4, 5},
        {0, 0, 1, 2, 1, 0, 0, 1, 2, 1, 3, 3, 4, 5, 4, 3, 3, 4, 5, 4});
}

TEST(PadModes, GradientsMatchJax) {
  auto grad_of = [](const std::string& mode, std::pair<int64_t, int64_t> w, ts::PadOptions o = {}) {
    const int64_t n = 3 + w.first + w.second;
    return ts::grad([=](const ts::Array& x) {
      return ts::sum(ts::pad(x, {w}, mode, o) * ts::arange(0.0, double(n), 1.0, ts::f64));
    })(ts::Array({1.0, 2.0, 3.0}));
  };
  expect_values(grad_of("reflect", {2, 3}), {3}, {8, 16, 4}, "reflect");
  expect_values(grad_of("symmetric", {4, 5}), {3}, {26, 26, 14}, "symmetric");
  expect_values(grad_of("wrap", {4, 5}), {3}, {22, 26, 18}, "wrap");
  expect_values(grad_of("linear_ramp", {2, 3}), {3}, {2.5, 3, 28.0 / 3}, "linear_ramp");
  expect_values(grad_of("mean", {2, 3}), {3}, {25.0 / 3, 28.0 / 3, 31.0 / 3}, "mean");
  expect_values(grad_of("maximum", {2, 3}), {3}, {2, 3, 23}, "maximum");
  expect_values(grad_of("reflect", {4, 5}, {.reflect_type = "odd"}), {3}, {-52, -6, 124}, "reflect odd");
}

TEST(PadModes, Errors) {
  expect_error<ts::ValueError>([] { ts::pad(ts::zeros({0}), {{2, 2}}, "wrap"); },
                               "pad: cannot pad the empty axis 0 of shape (0,) in \"wrap\" mode");
  expect_error<ts::ValueError>([] { ts::pad(v123(), {{1, 1}}, "maximum", ts::PadOptions{.stat_length = {{0, 1}}}); },
                               "pad: stat_length (0, 1) for axis 0 leaves no values");
  expect_error<ts::ValueError>([] { ts::pad(v123(), {{1, 1}}, "reflect", ts::PadOptions{.reflect_type = "even-ish"}); },
                               "pad: reflect_type must be \"even\" or \"odd\"");
  expect_error<ts::ShapeError>([] { ts::pad(m23(), {{1, 1}}, "mean", ts::PadOptions{.stat_length = {{1, 1}, {1, 1}, {1, 1}}}); },
                               "pad: stat_length must hold one pair, or one per axis");
  EXPECT_EQ(ts::pad(ts::zeros({0, 2}), {{0, 0}, {1, 1}}, "reflect").shape(), (ts::Shape{0, 4}));
}

// ---- jnp.repeat ----

TEST(Repeat, PerElementCounts) {
  expect_eager_and_jit([](const ts::Array& a) { return ts::repeat(a, ts::Array({1, 0, 2}), 1); }, m23() + 1.0, {2, 3},
                       {1, 3, 3, 4, 6, 6}, "per column");
  expect_eager_and_jit([](const ts::Array& a) { return ts::repeat(a, 2); }, m23() + 1.0, {12},
                       {1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6}, "flattened, scalar count");
  expect_eager_and_jit([](const ts::Array& a) { return ts::repeat(a, ts::Array({1, 0, 2, 1, 1, 1})); }, m23() + 1.0, {6},
                       {1, 3, 3, 4, 5, 6}, "flattened, per element");
  expect_eager_and_jit([](const ts::Array& a) { return ts::repeat(a, ts::Array({2}), 1); }, m23() + 1.0, {2, 6},
                       {1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6}, "one count in an array");
}

TEST(Repeat, TotalRepeatLengthPadsWithTheLastElementOrCuts) {
  expect_eager_and_jit(
      [](const ts::Array& a) { return ts::repeat(a, ts::Array({1, 0, 2}), 1, {.total_repeat_length = 5}); }, m23() + 1.0,
      {2, 5}, {1, 3, 3, 3, 3, 4, 6, 6, 6, 6}, "longer");
  expect_eager_and_jit(
      [](const ts::Array& a) { return ts::repeat(a, ts::Array({1, 0, 2}), 1, {.total_repeat_length = 2}); }, m23() + 1.0,
      {2, 2}, {1, 3, 4, 6}, "shorter");
  expect_eager_and_jit([](const ts::Array& a) { return ts::repeat(a, 2, 1, {.total_repeat_length = 5}); }, m23() + 1.0,
                       {2, 5}, {1, 1, 2, 2, 3, 4, 4, 5, 5, 6}, "scalar count");
  // Traced counts need total_repeat_length.
  const ts::Array x = m23() + 1.0;
  auto traced = ts::jit([x](const ts::Array& r) { return ts::repeat(x, r, 1, {.total_repeat_length = 4}); });
  expect_values(traced(ts::Array({1, 0, 2})), {2, 4}, {1, 3, 3, 3, 4, 6, 6, 6}, "jit, traced counts");
  auto batched = ts::vmap([](const ts::Array& r) { return ts::repeat(v123(), r, ts::none, {.total_repeat_length = 4}); });
  expect_values(batched(ts::Array({{1, 1, 1}, {0, 3, 0}, {2, 0, 2}})), {3, 4}, {1, 2, 3, 3, 2, 2, 2, 3, 1, 1, 3, 3},
                "vmap over counts");
  auto g = ts::grad([](const ts::Array& v) {
    return ts::sum(ts::repeat(v, ts::Array({1, 0, 3}), ts::none, {.total_repeat_length = 5}) *
                   ts::arange(0.0, 5.0, 1.0, ts::f64));
  });
  expect_values(g(ts::Array({1.0, 2.0, 3.0})), {3}, {0, 0, 10}, "grad");
  expect_error<ts::ConcretizationError>(
      [&] { ts::jit([x](const ts::Array& r) { return ts::repeat(x, r, 1); })(ts::Array({1, 0, 2})); },
      "repeat: the counts are traced (under jit), so the length of the result is unknown; pass "
      "RepeatOptions{.total_repeat_length = ...}");
  expect_error<ts::ValueError>([] { ts::repeat(v123(), ts::Array({1, -1, 2})); }, "repeat: repeats must be >= 0, got -1");
  expect_error<ts::ShapeError>([] { ts::repeat(v123(), ts::Array({1, 2})); }, "repeat: repeats of shape (2,) must hold");
  expect_error<ts::DTypeError>([] { ts::repeat(v123(), ts::Array({1.0, 2.0, 1.0})); }, "repeat: repeats must have an integer dtype");
}

// ---- jnp.trace ----

TEST(Trace, OffsetAndAxes) {
  const ts::Array m = m23() + 1.0;
  for (const auto& [k, want] : std::vector<std::pair<int64_t, double>>{{0, 6}, {1, 8}, {-1, 4}, {5, 0}, {-5, 0}}) {
    const int64_t offset = k;
    expect_eager_and_jit([offset](const ts::Array& a) { return ts::trace(a, offset); }, m, {}, {want},
                         "offset " + std::to_string(offset));
  }
  const ts::Array y = ts::arange(24).astype(ts::f32).reshape({2, 3, 4});
  expect_eager_and_jit([](const ts::Array& a) { return ts::trace(a, 1, 0, 2); }, y, {3}, {15, 23, 31}, "axes 0, 2");
  expect_eager_and_jit([](const ts::Array& a) { return ts::trace(a, -1, -1, 1); }, y, {2}, {18, 54}, "axes -1, 1");
  EXPECT_EQ(ts::trace(ts::ones({3, 3}, ts::i8)).dtype(), ts::i32);
  expect_error<ts::ValueError>([&] { ts::trace(y, 0, 1, -2); }, "trace: axis1 and axis2 must differ, got 1 and -2");
}

// ---- jnp.var / jnp.std ----

TEST(VarStd, Ddof) {
  const ts::Array m = m23() + 1.0;
  expect_eager_and_jit([](const ts::Array& a) { return ts::var(a, {}, false, 1); }, m, {}, {3.5}, "var ddof 1");
  expect_eager_and_jit([](const ts::Array& a) { return ts::var(a, {1}, false, 1); }, m, {2}, {1, 1}, "var axis 1");
  expect_eager_and_jit([](const ts::Array& a) { return ts::var(a, {0}, false, 2); }, m, {3}, {nan, nan, nan},
                       "N - ddof = 0");
  expect_eager_and_jit([](const ts::Array& a) { return ts::var(a, {0}, false, 3); }, m, {3}, {nan, nan, nan},
                       "N - ddof < 0");
  expect_eager_and_jit([](const ts::Array& a) { return ts::var(a, {}, false, 0.5); }, m, {}, {3.181818181818}, "ddof 0.5");
  expect_values(ts::var(ts::Array({1, 2, 4}), {}, false, 1), {}, {7.0 / 3}, "int var");
  expect_eager_and_jit([](const ts::Array& a) { return ts::std(a, {1}, false, 1); }, m, {2}, {1, 1}, "std ddof 1");
  expect_eager_and_jit([](const ts::Array& a) { return ts::std(a, {1}, true); }, m, {2, 1}, {0.816496580927726, 0.816496580927726},
                       "std keepdims");
  expect_values(ts::std(ts::Array({ts::complex64_t(1, 1), ts::complex64_t(2, -1)}), {}, false, 1), {}, {1.5811388300841898},
                "complex std");
  EXPECT_EQ(ts::std(ts::Array({ts::complex64_t(1, 1)})).dtype(), ts::f32);
  expect_values(ts::std(ts::Array({1, 2, 4})), {}, {1.247219128924647}, "int std");
  expect_values(ts::grad([](const ts::Array& v) { return ts::std(v, {}, false, 1); })(ts::Array({1.0, 2.0, 4.0})), {3},
                {-0.4364357804719848, -0.1091089451179962, 0.5455447255899810}, "std grad");
}

// ---- argmax / argmin without an axis ----

TEST(ArgReductions, WithoutAxisUseTheFlattenedArray) {
  const ts::Array m = m23() + 1.0;
  EXPECT_EQ(ts::argmax(m).item<int>(), 5);
  EXPECT_EQ(ts::argmax(m).shape(), ts::Shape{});
  EXPECT_EQ(ts::argmin(ts::Array({{3.0f, 1.0f}, {0.0f, 0.0f}})).item<int>(), 2);
  EXPECT_EQ(ts::argmax(m, ts::none, true).shape(), (ts::Shape{1, 1}));
  EXPECT_EQ(ts::argmax(m, ts::none, true).item<int>(), 5);
  EXPECT_EQ(ts::argmax(ts::Array({{1.0f, nanf}, {3.0f, nanf}})).item<int>(), 1);
  EXPECT_EQ(ts::argmax(ts::Array(3.0f)).item<int>(), 0);
  EXPECT_EQ(ts::argmin(m, 1, true).shape(), (ts::Shape{2, 1}));
  EXPECT_EQ(ts::jit([](const ts::Array& a) { return ts::argmax(a); })(m).item<int>(), 5);
  EXPECT_EQ(ts::argmax(m).dtype(), ts::i32);
}

}  // namespace
