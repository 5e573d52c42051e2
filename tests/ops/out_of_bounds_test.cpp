// Out-of-bounds indices in take, take_along_axis, x[...], x.at(...) and dynamic slices:
// JAX's default for each operation and every mode, eagerly, under jit, vmap and grad.
// Expected values recorded from JAX 0.10.2 (jax.numpy, float32 / int32).
#include <cmath>
#include <functional>
#include <limits>

#include "ops/shape_test_util.h"

using namespace shape_testing;
using ts::Slice;

namespace {

const double nan = std::numeric_limits<double>::quiet_NaN();
using Fn1 = std::function<ts::Array(const ts::Array&)>;

/// Element-wise equality where NaN matches NaN.
void expect_values(const ts::Array& got, const std::vector<double>& want, const std::string& what) {
  const auto g = got.to_vector<double>();
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t k = 0; k < g.size(); ++k) {
    if (std::isnan(want[k])) EXPECT_TRUE(std::isnan(g[k])) << what << ": element " << k << " is " << g[k];
    else EXPECT_EQ(g[k], want[k]) << what << ": element " << k;
  }
}

/// f(x) eagerly and under jit both give `want`.
void expect_eager_and_jit(const Fn1& f, const ts::Array& x, const std::vector<double>& want, const std::string& what) {
  expect_values(f(x), want, what + " (eager)");
  expect_values(ts::jit(f)(x), want, what + " (jit)");
}

ts::Array idx(std::vector<int32_t> v) { return ts::Array(v); }

// ---- take ----

TEST(OutOfBounds, TakeFillsWithJaxsFillValuePerDtype) {
  // jnp.take(jnp.arange(5).astype(d), [0, 4, 5, -1, -5, -6, 100]): negative indices wrap once,
  // the rest out of range read NaN / the signed minimum / the unsigned maximum / True.
  const ts::Array i = idx({0, 4, 5, -1, -5, -6, 100});
  struct Want {
    ts::DType d;
    double fill;
  };
  for (const Want& w : {Want{ts::f32, nan}, Want{ts::f16, nan}, Want{ts::bf16, nan}, Want{ts::f64, nan},
                        Want{ts::c64, nan}, Want{ts::i32, -2147483648.0}, Want{ts::i8, -128}, Want{ts::i64, -9.223372036854775808e18},
                        Want{ts::u8, 255}, Want{ts::u32, 4294967295.0}, Want{ts::bool_, 1}}) {
    const double four = w.d == ts::bool_ ? 1 : 4;
    const ts::Array x = ts::arange(5).astype(w.d);
    const std::string name = ts::dtype_name(w.d);
    expect_eager_and_jit([&](const ts::Array& a) { return ts::take(a, i); }, x,
                         {0, four, w.fill, four, 0, w.fill, w.fill}, "take " + name);
    ts::Array t = ts::take(x, i);
    EXPECT_EQ(t.dtype(), w.d) << name;
    if (w.d == ts::c64) {
      EXPECT_EQ(ts::imag(t).to_vector<float>()[2], 0.0f);  // NaN + 0j
    }
  }
}

TEST(OutOfBounds, TakeModesAndFillValue) {
  const ts::Array x = ts::arange(6).astype(ts::f32).reshape({2, 3});
  const ts::Array i = idx({2, -1, 3, -4});
  expect_eager_and_jit([&](const ts::Array& a) { return ts::take(a, i, 1); }, x, {2, 2, nan, nan, 5, 5, nan, nan},
                       "default fill");
  // clip clamps the raw index (jnp.take does not wrap -1 first in this mode).
  expect_eager_and_jit([&](const ts::Array& a) { return ts::take(a, i, 1, {.mode = "clip"}); }, x,
                       {2, 0, 2, 0, 5, 3, 5, 3}, "clip");
  expect_eager_and_jit([&](const ts::Array& a) { return ts::take(a, i, 1, {.mode = "wrap"}); }, x,
                       {2, 2, 0, 2, 5, 5, 3, 5}, "wrap");
  expect_eager_and_jit([&](const ts::Array& a) { return ts::take(a, i, 1, {.mode = "fill", .fill_value = 7}); }, x,
                       {2, 2, 7, 7, 5, 5, 7, 7}, "fill 7");
  // No axis: the flattened array.
  expect_eager_and_jit([&](const ts::Array& a) { return ts::take(a, idx({5, -1, 6})); }, x, {5, 5, nan}, "flat");
  EXPECT_EQ(ts::take(x, idx({0, 1})).shape(), (ts::Shape{2}));
}

TEST(OutOfBounds, TakeUnderVmapAndGrad) {
  // jax.vmap(lambda v, k: jnp.take(v, k))(arange(8.).reshape(2, 4), [[3, 4], [-1, -5]])
  auto f = ts::vmap([](const ts::Array& v, const ts::Array& k) { return ts::take(v, k); });
  expect_values(f(ts::arange(8).astype(ts::f32).reshape({2, 4}), ts::Array({{3, 4}, {-1, -5}})), {3, nan, 7, nan},
                "vmap");
  // grad of sum(take(v, [0, 2, 2, 7, -1], mode) * [1..5]) for v of 4 elements.
  const ts::Array w = ts::Array({1.0, 2.0, 3.0, 4.0, 5.0}), k = idx({0, 2, 2, 7, -1});
  auto grad_in = [&](ts::IndexOptions o) {
    return ts::grad([=](const ts::Array& v) { return ts::sum(ts::take(v, k, ts::none, o) * w); })(ts::arange(4).astype(ts::f64));
  };
  expect_values(grad_in({.mode = "fill", .fill_value = 0.0}), {1, 0, 5, 5}, "grad fill");
  expect_values(grad_in({.mode = "clip"}), {6, 0, 5, 4}, "grad clip");
  expect_values(grad_in({.mode = "wrap"}), {1, 0, 5, 9}, "grad wrap");
  // The NaN fill is a constant: it takes no gradient.
  auto nan_safe = [](const ts::Array& v) {
    ts::Array t = ts::take(v, idx({0, 7}));
    return ts::sum(ts::where(ts::isnan(t), ts::zeros({}, ts::f64), t));
  };
  expect_values(ts::grad(nan_safe)(ts::arange(4).astype(ts::f64)), {1, 0, 0, 0}, "grad of NaN fill");
  expect_values(ts::jit(ts::grad(nan_safe))(ts::arange(4).astype(ts::f64)), {1, 0, 0, 0}, "jit grad of NaN fill");
}

// ---- take_along_axis ----

TEST(OutOfBounds, TakeAlongAxisModes) {
  const ts::Array x = ts::arange(6).astype(ts::f32).reshape({2, 3});
  expect_eager_and_jit([](const ts::Array& a) { return ts::take_along_axis(a, ts::Array({{1, 0, 2}}), 0); }, x,
                       {3, 1, nan}, "default fill");
  // clip wraps negative indices first here (as jnp.take_along_axis).
  expect_eager_and_jit(
      [](const ts::Array& a) { return ts::take_along_axis(a, ts::Array({{3}, {-1}}), 1, {.mode = "clip"}); }, x, {2, 5},
      "clip");
  expect_eager_and_jit(
      [](const ts::Array& a) { return ts::take_along_axis(a, ts::Array({{3, -4}, {-1, 0}}), 1, {.fill_value = 9}); },
      x, {9, 9, 5, 3}, "fill 9");
  expect_eager_and_jit([](const ts::Array& a) { return ts::take_along_axis(a, ts::Array({5, 6, -7}), ts::none); }, x,
                       {5, nan, nan}, "flattened");
  expect_eager_and_jit([](const ts::Array& a) { return ts::take_along_axis(a, ts::Array({{2}, {0}})); }, x, {2, 3},
                       "default axis -1");
  expect_eager_and_jit(
      [](const ts::Array& a) { return ts::take_along_axis(a, ts::Array({{4}, {-4}}), 1, {.mode = "wrap"}); }, x,
      {1, 5}, "wrap");
  expect_error<ts::ShapeError>([&] { ts::take_along_axis(x, ts::Array({{0}}), ts::none); },
                               "take_along_axis: without an axis the indices must be 1-D");
}

TEST(OutOfBounds, TakeAlongAnEmptyAxisGivesZeros) {
  // Values recorded from JAX 0.10.2: jnp.take_along_axis(jnp.zeros((3, 0)), jnp.zeros((3, 2), int), axis=1) is
  // zeros((3, 2)), in every mode.
  const ts::Array x = ts::ones({3, 0}), i = ts::zeros({3, 2}, ts::i32);
  for (const char* mode : {"fill", "clip", "wrap"}) {
    expect_eager_and_jit([&](const ts::Array& a) { return ts::take_along_axis(a, i, 1, {.mode = mode}); }, x,
                         {0, 0, 0, 0, 0, 0}, mode);
  }
  EXPECT_EQ(ts::take_along_axis(ts::zeros({3, 0}, ts::i32), i, 1).dtype(), ts::i32);
}

// ---- x[...] and x.at(...) ----

TEST(OutOfBounds, StaticIntegersClampForReads) {
  const ts::Array x = ts::arange(6).astype(ts::f32).reshape({2, 3});
  expect_eager_and_jit(
      [](const ts::Array& a) {
        return ts::stack({a[{5, 0}], a[{-3, 1}], a[{1, 7}], a[{0, -9}]});
      },
      x, {3, 1, 5, 0}, "x[5, 0], x[-3, 1], x[1, 7], x[0, -9]");
  expect_eager_and_jit([](const ts::Array& a) { return a[{4}]; }, x, {3, 4, 5}, "x[4]");
  const ts::Array y = ts::arange(24).reshape({2, 3, 4});
  expect_eager_and_jit([](const ts::Array& a) { return a[{Slice(), 5, Slice(1, 3)}]; }, y, {9, 10, 21, 22},
                       "y[:, 5, 1:3]");
  expect_error<ts::IndexError>([] { ts::zeros({0})[{0}]; }, "index: index 0 is out of bounds for axis 0 with size 0");
}

TEST(OutOfBounds, AtGetClampsByDefaultAndFillsOnRequest) {
  const ts::Array x = ts::arange(6).astype(ts::f32).reshape({2, 3});
  const ts::Array rows = idx({0, 2});
  expect_eager_and_jit([&](const ts::Array& a) { return a.at({rows}).get(); }, x, {0, 1, 2, 3, 4, 5}, "default");
  expect_eager_and_jit([&](const ts::Array& a) { return a[{rows}]; }, x, {0, 1, 2, 3, 4, 5}, "x[rows]");
  expect_eager_and_jit([&](const ts::Array& a) { return a.at({rows}).get({.mode = "fill"}); }, x,
                       {0, 1, 2, nan, nan, nan}, "fill");
  expect_eager_and_jit([&](const ts::Array& a) { return a.at({rows}).get({.mode = "drop", .fill_value = -1}); }, x,
                       {0, 1, 2, -1, -1, -1}, "drop = fill, with a fill value");
  expect_eager_and_jit([](const ts::Array& a) { return a.at({1, 3}).get({.mode = "fill"}); }, x, {nan},
                       "static index, fill");
  expect_eager_and_jit([&](const ts::Array& a) { return a.at({rows}).get({.mode = "wrap"}); }, x, {0, 1, 2, 0, 1, 2},
                       "wrap");
  const ts::Array y = ts::arange(24).reshape({2, 3, 4});
  expect_eager_and_jit([](const ts::Array& a) { return a.at({Slice(), 5, idx({1, 9})}).get({.mode = "fill"}); }, y,
                       {-2147483648.0, -2147483648.0, -2147483648.0, -2147483648.0}, "mixed, int fill");
}

TEST(OutOfBounds, AtUpdatesDropByDefault) {
  const ts::Array i = idx({0, 4, 5, -1, -5, -6, 100});
  const ts::Array z = ts::zeros({5}), o = ts::ones({5});
  expect_eager_and_jit([&](const ts::Array& a) { return a.at({i}).add(1.0); }, z, {2, 0, 0, 0, 2}, "add");
  expect_eager_and_jit([&](const ts::Array& a) { return a.at({i}).add(1.0, {.mode = "clip"}); }, z, {3, 0, 0, 0, 4},
                       "add clip");
  expect_eager_and_jit([&](const ts::Array& a) { return a.at({i}).add(1.0, {.mode = "fill"}); }, z, {2, 0, 0, 0, 2},
                       "add fill = drop");
  expect_eager_and_jit([&](const ts::Array& a) { return a.at({i}).max(ts::arange(7).astype(ts::f32)); }, z,
                       {4, 0, 0, 0, 3}, "max");
  expect_eager_and_jit([&](const ts::Array& a) { return a.at({i}).mul(2.0, {.mode = "clip"}); }, o, {8, 1, 1, 1, 16},
                       "mul clip");
  expect_eager_and_jit([&](const ts::Array& a) { return a.at({idx({1, -2})}).set(3.0, {.mode = "promise_in_bounds"}); },
                       z, {0, 3, 0, 3, 0}, "promise_in_bounds");
  expect_eager_and_jit([&](const ts::Array& a) { return a.at({idx({6, -7})}).set(3.0, {.mode = "wrap"}); }, z,
                       {0, 3, 0, 3, 0}, "wrap");
  const ts::Array x = ts::arange(6).astype(ts::f32).reshape({2, 3});
  expect_eager_and_jit([](const ts::Array& a) { return a.at({1, 3}).set(-1.0); }, x, {0, 1, 2, 3, 4, 5},
                       "static index dropped");
  expect_eager_and_jit([](const ts::Array& a) { return a.at({1, 3}).set(-1.0, {.mode = "clip"}); }, x,
                       {0, 1, 2, 3, 4, -1}, "static index clipped");
  expect_eager_and_jit([](const ts::Array& a) { return a.at({idx({3, -1})}).set(-1.0); }, x, {0, 1, 2, -1, -1, -1},
                       "rows");
}

TEST(OutOfBounds, ModeErrors) {
  const ts::Array x = ts::zeros({3});
  expect_error<ts::ValueError>([&] { ts::take(x, idx({0}), 0, {.mode = "raise"}); },
                               "take: unknown mode 'raise'; use \"fill\" (or \"drop\"), \"clip\", \"wrap\"");
  expect_error<ts::ValueError>([&] { x.at({idx({0})}).get({.mode = "nearest"}); }, "at().get: unknown mode 'nearest'");
  expect_error<ts::ValueError>([&] { x.at({idx({0})}).set(1.0, {.fill_value = 2.0}); },
                               "at().set: fill_value applies to reads");
}

// ---- dynamic_slice / dynamic_update_slice: negative starts count from the end, then clamp ----

TEST(OutOfBounds, DynamicSliceWrapsNegativeStartsThenClamps) {
  const ts::Array m = ts::arange(16).reshape({4, 4});
  expect_eager_and_jit([](const ts::Array& a) { return ts::dynamic_slice(a, {ts::Array(-1), ts::Array(-3)}, {2, 2}); },
                       m, {9, 10, 13, 14}, "dynamic_slice");
  expect_eager_and_jit(
      [](const ts::Array& a) { return ts::dynamic_update_slice(a, ts::Array({1.0f, 2.0f}), {ts::Array(-3)}); },
      ts::zeros({6}), {0, 0, 0, 1, 2, 0}, "dynamic_update_slice");
  // Batched starts (a gather and a scatter under vmap).
  auto ds = ts::vmap([](const ts::Array& s) { return ts::dynamic_slice(ts::arange(6).astype(ts::f32), {s}, {2}); });
  expect_values(ds(idx({-1, -2, -6, -9, 3, 7})), {4, 5, 4, 5, 0, 1, 0, 1, 3, 4, 4, 5}, "vmap dynamic_slice");
  auto dus = ts::vmap(
      [](const ts::Array& s) { return ts::dynamic_update_slice(ts::zeros({4}), ts::Array({1.0f, 2.0f}), {s}); });
  expect_values(dus(idx({-1, -3, -7})), {0, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 0}, "vmap dynamic_update_slice");
}

}  // namespace
