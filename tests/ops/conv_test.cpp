// Convolutions and windowed reductions (tessel/conv.h) against JAX's values (tests/ops/
// conv_jax_values.h, made by conv_jax_values.py) across dimension numbers, strides, padding
// modes, dilations and groups, in float64 (tessel's direct loops) and float32 (oneDNN);
// gradients against finite differences in float64; vmap, jit, a sharded batch; errors.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "ops/conv.h"
#include "ops/conv_jax_values.h"
#include "tessel/conv.h"
#include "tessel/tessel.h"

namespace ts = tessel;
using namespace conv_values;

namespace {

/// sin(0.37 * i + seed) over row-major positions (as conv_jax_values.py builds inputs).
ts::Array input(const ts::Shape& shape, double seed, ts::DType dtype = ts::f64) {
  const int64_t n = ts::shape_size(shape);
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = std::sin(0.37 * double(i) + seed);
  return ts::Array(v, shape).astype(dtype);
}

ts::Array complex_input(const ts::Shape& shape, double seed) {
  const int64_t n = ts::shape_size(shape);
  std::vector<ts::complex128_t> v;
  for (int64_t i = 0; i < n; ++i)
    v.emplace_back(std::sin(0.37 * double(i) + seed), std::cos(0.23 * double(i) + seed));
  return ts::Array(v, shape);
}

void expect_values(const ts::Array& got, const std::vector<double>& want, const ts::Shape& shape, double tol,
                   const std::string& what) {
  ASSERT_EQ(got.shape(), shape) << what;
  const auto g = got.astype(ts::f64).to_vector<double>();
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], want[i], tol) << what << " at " << i;
}

void expect_complex(const ts::Array& got, const std::vector<ts::complex128_t>& want, const ts::Shape& shape,
                    double tol, const std::string& what) {
  ASSERT_EQ(got.shape(), shape) << what;
  const auto g = got.astype(ts::c128).to_vector<ts::complex128_t>();
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t i = 0; i < g.size(); ++i) EXPECT_LT(std::abs(g[i] - want[i]), tol) << what << " at " << i;
}

/// A convolution case of conv_jax_values.py, evaluated in `dtype`.
struct ConvCase {
  std::string name;
  std::function<ts::Array(ts::DType)> run;
  const std::vector<double>* want;
  const ts::Shape* shape;
};

std::vector<ConvCase> conv_cases() {
  return {
      {"NchwValid",
       [](ts::DType d) { return ts::conv_general_dilated(input({2, 3, 5, 6}, 0.1, d), input({4, 3, 3, 2}, 0.7, d), {1, 1}, "VALID"); },
       &kConvNchwValid, &kConvNchwValidShape},
      {"NhwcSameStrided",
       [](ts::DType d) {
         return ts::conv_general_dilated(input({2, 5, 6, 3}, 0.2, d), input({3, 2, 3, 4}, 0.5, d), {2, 1}, "SAME",
                                         {.dimension_numbers = {"NHWC", "HWIO", "NHWC"}});
       },
       &kConvNhwcSameStrided, &kConvNhwcSameStridedShape},
      {"DilatedExplicit",
       [](ts::DType d) {
         return ts::conv_general_dilated(input({1, 2, 4, 5}, 0.3, d), input({3, 2, 2, 3}, 0.9, d), {1, 2},
                                         {{1, 2}, {0, 1}}, {.lhs_dilation = {2, 1}, .rhs_dilation = {1, 2}});
       },
       &kConvDilatedExplicit, &kConvDilatedExplicitShape},
      {"FeatureGroups",
       [](ts::DType d) {
         return ts::conv_general_dilated(input({2, 4, 5, 5}, 0.4, d), input({6, 2, 3, 3}, 0.1, d), {1, 1}, "SAME",
                                         {.feature_group_count = 2});
       },
       &kConvFeatureGroups, &kConvFeatureGroupsShape},
      {"BatchGroups",
       [](ts::DType d) {
         return ts::conv_general_dilated(input({4, 3, 5, 5}, 0.5, d), input({6, 3, 2, 2}, 0.3, d), {1, 1}, "VALID",
                                         {.batch_group_count = 2});
       },
       &kConvBatchGroups, &kConvBatchGroupsShape},
      {"Conv1dSameLower",
       [](ts::DType d) {
         return ts::conv_general_dilated(input({2, 7, 3}, 0.6, d), input({3, 3, 2}, 0.2, d), {2}, "SAME_LOWER",
                                         {.dimension_numbers = {"NWC", "WIO", "NWC"}});
       },
       &kConv1dSameLower, &kConv1dSameLowerShape},
      {"Conv3d",
       [](ts::DType d) {
         return ts::conv_general_dilated(input({1, 2, 4, 4, 3}, 0.7, d), input({3, 2, 2, 2, 2}, 0.4, d), {1, 1, 1}, "VALID");
       },
       &kConv3d, &kConv3dShape},
      {"OddLayout",
       [](ts::DType d) {
         return ts::conv_general_dilated(input({5, 2, 4, 6}, 0.8, d), input({2, 3, 2, 4}, 0.6, d), {1, 1},
                                         {{1, 0}, {2, 1}}, {.dimension_numbers = {"HCNW", "IWOH", "WNCH"}});
       },
       &kConvOddLayout, &kConvOddLayoutShape},
      {"TransposeSame",
       [](ts::DType d) { return ts::conv_transpose(input({1, 3, 4, 2}, 0.2, d), input({3, 3, 2, 3}, 0.4, d), {2, 2}, "SAME"); },
       &kConvTransposeSame, &kConvTransposeSameShape},
      {"TransposeValidKernel",
       [](ts::DType d) {
         return ts::conv_transpose(input({2, 4, 3, 2}, 0.3, d), input({2, 3, 4, 2}, 0.6, d), {2, 1}, "VALID",
                                   {.transpose_kernel = true});
       },
       &kConvTransposeValidKernel, &kConvTransposeValidKernelShape},
      {"TransposeExplicit",
       [](ts::DType d) { return ts::conv_transpose(input({1, 5, 2}, 0.5, d), input({3, 2, 3}, 0.1, d), {3}, {{1, 2}}); },
       &kConvTransposeExplicit, &kConvTransposeExplicitShape},
  };
}

/// Runs `f` with TESSEL_CONV_ONEDNN set to `value` (restored after).
template <class F> auto with_onednn(const char* value, F f) {
  const char* old = std::getenv("TESSEL_CONV_ONEDNN");
  const std::string saved = old ? old : "";
  setenv("TESSEL_CONV_ONEDNN", value, 1);
  auto r = f();
  if (old) setenv("TESSEL_CONV_ONEDNN", saved.c_str(), 1);
  else unsetenv("TESSEL_CONV_ONEDNN");
  return r;
}

}  // namespace

TEST(Conv, Float64MatchesJax) {
  for (const ConvCase& c : conv_cases()) expect_values(c.run(ts::f64), *c.want, *c.shape, 1e-12, c.name);
}

TEST(Conv, Float32MatchesJaxOnOnednnAndDirectLoops) {
  for (const ConvCase& c : conv_cases()) {
    expect_values(c.run(ts::f32), *c.want, *c.shape, 2e-5, c.name + " (oneDNN)");
    expect_values(with_onednn("0", [&] { return c.run(ts::f32); }), *c.want, *c.shape, 2e-5, c.name + " (direct)");
  }
}

TEST(Conv, ComplexAndIntegerOperands) {
  expect_complex(ts::conv_general_dilated(complex_input({1, 2, 4, 4}, 0.1), complex_input({2, 2, 2, 2}, 0.2), {1, 1}, "SAME"),
                 kConvComplex, kConvComplexShape, 1e-12, "complex");
  // Integers: exact sums of products (a 2x2 box filter of 0..15).
  const ts::Array x = ts::arange(16, ts::i32).reshape({1, 1, 4, 4}), w = ts::ones({1, 1, 2, 2}, ts::i32);
  const ts::Array y = ts::conv(x, w, {1, 1}, "VALID");
  EXPECT_EQ(y.dtype(), ts::i32);
  EXPECT_EQ(y.to_vector<int32_t>(), (std::vector<int32_t>{10, 14, 18, 26, 30, 34, 42, 46, 50}));
  // preferred_element_type widens int8 products.
  const ts::Array y8 = ts::conv(x.astype(ts::i8) * 8, w.astype(ts::i8), {1, 1}, "VALID", ts::Precision::kHighest, ts::i32);
  EXPECT_EQ(y8.dtype(), ts::i32);
  EXPECT_EQ(y8.to_vector<int32_t>()[8], 400);
}

TEST(Conv, WrappersMatchConvGeneralDilated) {
  const ts::Array x = input({2, 3, 6, 5}, 0.3), w = input({4, 3, 3, 2}, 0.5);
  const ts::Array a = ts::conv(x, w, {2, 1}, "SAME");
  const ts::Array b = ts::conv_general_dilated(x, w, {2, 1}, "SAME");
  EXPECT_EQ(a.to_vector<double>(), b.to_vector<double>());
  const ts::Array c = ts::conv_with_general_padding(x, w, {1, 1}, {{1, 1}, {0, 2}}, {1, 2}, {2, 1});
  const ts::Array d = ts::conv_general_dilated(x, w, {1, 1}, {{1, 1}, {0, 2}}, {.lhs_dilation = {1, 2}, .rhs_dilation = {2, 1}});
  EXPECT_EQ(c.to_vector<double>(), d.to_vector<double>());
}

TEST(Conv, ConvolveAndCorrelateEveryMode) {
  const ts::Array a7 = input({7}, 0.1), a4 = input({4}, 0.2), a3 = input({3}, 0.4);
  const std::vector<std::tuple<std::string, const std::vector<double>*, const ts::Shape*, const std::vector<double>*,
                               const ts::Shape*, const std::vector<double>*, const ts::Shape*,
                               const std::vector<double>*, const ts::Shape*>>
      modes{{"full", &kConvolveFull, &kConvolveFullShape, &kConvolveShortFirstFull, &kConvolveShortFirstFullShape,
             &kCorrelateFull, &kCorrelateFullShape, &kCorrelateShortFirstFull, &kCorrelateShortFirstFullShape},
            {"same", &kConvolveSame, &kConvolveSameShape, &kConvolveShortFirstSame, &kConvolveShortFirstSameShape,
             &kCorrelateSame, &kCorrelateSameShape, &kCorrelateShortFirstSame, &kCorrelateShortFirstSameShape},
            {"valid", &kConvolveValid, &kConvolveValidShape, &kConvolveShortFirstValid, &kConvolveShortFirstValidShape,
             &kCorrelateValid, &kCorrelateValidShape, &kCorrelateShortFirstValid, &kCorrelateShortFirstValidShape}};
  for (const auto& [mode, cv, cvs, cs, css, co, cos, ss, sss] : modes) {
    expect_values(ts::convolve(a7, input({3}, 0.5), mode), *cv, *cvs, 1e-12, "convolve " + mode);
    expect_values(ts::convolve(a4, input({6}, 0.3), mode), *cs, *css, 1e-12, "convolve short first " + mode);
    expect_values(ts::correlate(a7, input({4}, 0.5), mode), *co, *cos, 1e-12, "correlate " + mode);
    expect_values(ts::correlate(a3, input({5}, 0.6), mode), *ss, *sss, 1e-12, "correlate short first " + mode);
  }
  expect_complex(ts::correlate(complex_input({5}, 0.1), complex_input({3}, 0.2), "full"), kCorrelateComplexFull,
                 kCorrelateComplexFullShape, 1e-12, "complex correlate full");
  expect_complex(ts::correlate(complex_input({5}, 0.1), complex_input({3}, 0.2), "same"), kCorrelateComplexSame,
                 kCorrelateComplexSameShape, 1e-12, "complex correlate same");
  expect_complex(ts::correlate(complex_input({5}, 0.1), complex_input({3}, 0.2)), kCorrelateComplexValid,
                 kCorrelateComplexValidShape, 1e-12, "complex correlate valid");
  // Integers promote to float, as jnp does.
  EXPECT_EQ(ts::convolve(ts::arange(4, ts::i32), ts::arange(2, ts::i32)).dtype(), ts::f32);
}

// ---- gradients against finite differences ----

namespace {

/// d/dx_i of sum(f(x) * ct) by central differences, for every element of `x`.
std::vector<double> numeric_grad(const std::function<ts::Array(const ts::Array&)>& f, const ts::Array& x,
                                 const ts::Array& ct) {
  std::vector<double> v = x.to_vector<double>(), g;
  const double h = 1e-6;
  for (size_t i = 0; i < v.size(); ++i) {
    auto at = [&](double d) {
      std::vector<double> w = v;
      w[i] += d;
      return ts::sum(f(ts::Array(w, x.shape())) * ct).item<double>();
    };
    g.push_back((at(h) - at(-h)) / (2 * h));
  }
  return g;
}

void expect_grads_match(const std::string& what, const std::function<ts::Array(const ts::Array&, const ts::Array&)>& f,
                        const ts::Array& x, const ts::Array& w) {
  const ts::Array ct = input(f(x, w).shape(), 0.9);
  auto loss = [&](const ts::Array& a, const ts::Array& b) { return ts::sum(f(a, b) * ct); };
  auto [gx, gw] = ts::grad<0, 1>(loss)(x, w);
  const auto nx = numeric_grad([&](const ts::Array& a) { return f(a, w); }, x, ct);
  const auto nw = numeric_grad([&](const ts::Array& b) { return f(x, b); }, w, ct);
  const auto ax = gx.to_vector<double>(), aw = gw.to_vector<double>();
  ASSERT_EQ(gx.shape(), x.shape()) << what;
  ASSERT_EQ(gw.shape(), w.shape()) << what;
  for (size_t i = 0; i < ax.size(); ++i) EXPECT_NEAR(ax[i], nx[i], 1e-6) << what << " lhs " << i;
  for (size_t i = 0; i < aw.size(); ++i) EXPECT_NEAR(aw[i], nw[i], 1e-6) << what << " rhs " << i;
}

}  // namespace

TEST(ConvGrad, BothOperandsMatchFiniteDifferencesInFloat64) {
  expect_grads_match("strided SAME NHWC", [](const ts::Array& x, const ts::Array& w) {
    return ts::conv_general_dilated(x, w, {2, 1}, "SAME", {.dimension_numbers = {"NHWC", "HWIO", "NHWC"}});
  }, input({2, 5, 4, 2}, 0.1), input({3, 2, 2, 3}, 0.2));
  expect_grads_match("dilations and explicit padding", [](const ts::Array& x, const ts::Array& w) {
    return ts::conv_general_dilated(x, w, {1, 2}, {{1, 2}, {0, 1}}, {.lhs_dilation = {2, 1}, .rhs_dilation = {1, 2}});
  }, input({1, 2, 3, 5}, 0.3), input({2, 2, 2, 2}, 0.4));
  expect_grads_match("feature groups", [](const ts::Array& x, const ts::Array& w) {
    return ts::conv_general_dilated(x, w, {1, 1}, "SAME", {.feature_group_count = 2});
  }, input({2, 4, 3, 3}, 0.5), input({4, 2, 2, 2}, 0.6));
  expect_grads_match("batch groups", [](const ts::Array& x, const ts::Array& w) {
    return ts::conv_general_dilated(x, w, {1, 1}, "VALID", {.batch_group_count = 2});
  }, input({4, 2, 4, 3}, 0.7), input({4, 2, 2, 2}, 0.8));
  expect_grads_match("1-D strided, odd layout", [](const ts::Array& x, const ts::Array& w) {
    return ts::conv_general_dilated(x, w, {3}, {{2, 1}}, {.dimension_numbers = {"CWN", "OWI", "WCN"}});
  }, input({2, 8, 2}, 0.9), input({3, 3, 2}, 0.15));
}

TEST(ConvGrad, Float32GradientsOnOnednnMatchFloat64) {
  // The lhs cotangent (oneDNN's forward pass at stride 1, its data-gradient pass at stride
  // 2) and the rhs cotangent (its weights-gradient pass).
  for (int64_t stride : {1, 2}) {
    auto f = [stride](const ts::Array& x, const ts::Array& w) {
      const ts::Array y =
          ts::conv_general_dilated(x, w, {stride, stride}, "SAME", {.dimension_numbers = {"NHWC", "HWIO", "NHWC"}});
      return ts::sum(y * input(y.shape(), 0.3, x.dtype()));
    };
    auto [gx64, gw64] = ts::grad<0, 1>(f)(input({2, 7, 6, 4}, 0.1), input({3, 3, 4, 5}, 0.2));
    auto [gx32, gw32] = ts::grad<0, 1>(f)(input({2, 7, 6, 4}, 0.1, ts::f32), input({3, 3, 4, 5}, 0.2, ts::f32));
    const std::string at = " at stride " + std::to_string(stride);
    expect_values(gx32, gx64.to_vector<double>(), gx64.shape(), 1e-4, "lhs cotangent" + at);
    expect_values(gw32, gw64.to_vector<double>(), gw64.shape(), 1e-4, "rhs cotangent" + at);
  }
}

// ---- transformations ----

TEST(Conv, VmapOverEitherOrBothOperands) {
  auto conv = [](const ts::Array& x, const ts::Array& w) {
    return ts::conv_general_dilated(x, w, {1, 2}, "SAME", {.dimension_numbers = {"NHWC", "HWIO", "NHWC"}});
  };
  auto grouped = [](const ts::Array& x, const ts::Array& w) {
    return ts::conv_general_dilated(x, w, {1, 1}, "VALID", {.feature_group_count = 2});
  };
  auto bgrouped = [](const ts::Array& x, const ts::Array& w) {
    return ts::conv_general_dilated(x, w, {1, 1}, "VALID", {.batch_group_count = 2});
  };
  const ts::Array xs = input({3, 2, 4, 5, 2}, 0.1), ws = input({3, 2, 3, 2, 4}, 0.2);
  const ts::Array gx = input({3, 2, 4, 4, 4}, 0.3), gw = input({3, 6, 2, 2, 2}, 0.4);
  const ts::Array bx = input({3, 4, 2, 4, 4}, 0.5), bw = input({3, 4, 2, 2, 2}, 0.6);
  for (int64_t i = 0; i < 3; ++i) {
    auto row = [&](const ts::Array& a) { return ts::squeeze(ts::slice_in_dim(a, i, i + 1, 1, 0), ts::Axes{0}); };
    const std::string at = " at " + std::to_string(i);
    auto check = [&](const ts::Array& batched, const ts::Array& want, const std::string& what) {
      expect_values(row(batched), want.to_vector<double>(), want.shape(), 1e-12, what + at);
    };
    check(ts::vmap(conv)(xs, ws), conv(row(xs), row(ws)), "both");
    check(ts::vmap(conv, {0, ts::none})(xs, row(ws)), conv(row(xs), row(ws)), "lhs");
    check(ts::vmap(conv, {ts::none, 0})(row(xs), ws), conv(row(xs), row(ws)), "rhs");
    check(ts::vmap(grouped)(gx, gw), grouped(row(gx), row(gw)), "grouped both");
    check(ts::vmap(grouped, {ts::none, 0})(row(gx), gw), grouped(row(gx), row(gw)), "grouped rhs");
    check(ts::vmap(bgrouped, {0, ts::none})(bx, row(bw)), bgrouped(row(bx), row(bw)), "batch-grouped lhs");
    check(ts::vmap(bgrouped)(bx, bw), bgrouped(row(bx), row(bw)), "batch-grouped both");
  }
  // An empty vmapped axis gives an empty result.
  EXPECT_EQ(ts::vmap(conv)(input({0, 2, 4, 5, 2}, 0.1), input({0, 2, 3, 2, 4}, 0.2)).shape(), (ts::Shape{0, 2, 4, 3, 4}));
  // A batch dimension not in front.
  const ts::Array moved = ts::moveaxis(xs, 0, 3);
  const ts::Array r = ts::vmap(conv, {3, ts::none})(moved, ts::slice_in_dim(ws, 0, 1, 1, 0).reshape({2, 3, 2, 4}));
  expect_values(r, ts::vmap(conv, {0, ts::none})(xs, ts::slice_in_dim(ws, 0, 1, 1, 0).reshape({2, 3, 2, 4})).to_vector<double>(),
                r.shape(), 1e-12, "vmap axis 3");
}

TEST(Conv, JitMatchesEagerAndShowsTheParams) {
  auto f = [](const ts::Array& x, const ts::Array& w) {
    return ts::conv_general_dilated(x, w, {2, 1}, "SAME", {.dimension_numbers = {"NHWC", "HWIO", "NHWC"}});
  };
  const ts::Array x = input({2, 5, 6, 3}, 0.2, ts::f32), w = input({3, 2, 3, 4}, 0.5, ts::f32);
  const ts::Array e = f(x, w), j = ts::jit(f)(x, w);
  EXPECT_EQ(e.to_vector<float>(), j.to_vector<float>());
  std::ostringstream os;
  os << ts::make_program(f, x, w);
  EXPECT_NE(os.str().find("conv_general_dilated"), std::string::npos) << os.str();
  EXPECT_NE(os.str().find("lhs_spec=(0, 3, 1, 2)"), std::string::npos) << os.str();
}

TEST(Conv, ShardedBatchStaysPartitioned) {
  ts::Mesh m = ts::make_mesh({2}, {"x"});
  const ts::NamedSharding batch(m, ts::P("x"));
  auto f = ts::jit(
      [](const ts::Array& x, const ts::Array& w) {
        const ts::Array y = ts::conv_general_dilated(x, w, {1, 1}, "SAME", {.dimension_numbers = {"NHWC", "HWIO", "NHWC"}});
        return ts::nn::max_pool(ts::maximum(y, 0.0f), {2, 2}, ts::Shape{2, 2});
      },
      {.in_shardings = {batch, ts::NamedSharding(m, ts::P())}});
  const ts::Array x = input({4, 6, 6, 3}, 0.1, ts::f32), w = input({3, 3, 3, 4}, 0.2, ts::f32);
  const ts::Array want = ts::nn::max_pool(
      ts::maximum(ts::conv_general_dilated(x, w, {1, 1}, "SAME", {.dimension_numbers = {"NHWC", "HWIO", "NHWC"}}), 0.0f), {2, 2},
      ts::Shape{2, 2});
  const ts::Array got = f(x, w);
  EXPECT_EQ(got.to_vector<float>(), want.to_vector<float>());
  const std::string text = f.lower(x, w).compile().as_text();
  EXPECT_EQ(text.find("all_gather"), std::string::npos) << text;
  EXPECT_NE(text.find("conv_general_dilated"), std::string::npos) << text;
  EXPECT_EQ(got.sharding(), ts::Sharding(batch));
}

TEST(Conv, SplitChannelsReduceWithOneAllReduce) {
  ts::Mesh m = ts::make_mesh({2}, {"x"});
  auto f = ts::jit(
      [](const ts::Array& x, const ts::Array& w) {
        return ts::conv_general_dilated(x, w, {1, 1}, "SAME", {.dimension_numbers = {"NHWC", "HWIO", "NHWC"}});
      },
      {.in_shardings = {ts::NamedSharding(m, ts::P(ts::none, ts::none, ts::none, "x")),
                        ts::NamedSharding(m, ts::P(ts::none, ts::none, "x", ts::none))}});
  const ts::Array x = input({2, 5, 5, 4}, 0.1), w = input({3, 3, 4, 3}, 0.2);
  const ts::Array want = ts::conv_general_dilated(x, w, {1, 1}, "SAME", {.dimension_numbers = {"NHWC", "HWIO", "NHWC"}});
  expect_values(f(x, w), want.to_vector<double>(), want.shape(), 1e-12, "split channels");
  const std::string text = f.lower(x, w).compile().as_text();
  EXPECT_EQ(text.find("all_gather"), std::string::npos) << text;
  EXPECT_NE(text.find("all_reduce"), std::string::npos) << text;
}

TEST(Conv, ErrorsNameTheProblem) {
  const ts::Array x = input({2, 3, 5, 5}, 0.1), w = input({4, 2, 3, 3}, 0.2);
  auto message = [](auto f) {
    try {
      f();
    } catch (const ts::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string feat = message([&] { ts::conv(x, w, {1, 1}, "VALID"); });
  EXPECT_NE(feat.find("feature"), std::string::npos) << feat;
  EXPECT_THROW(ts::conv(x, w, {1, 1}, "VALID"), ts::ShapeError);
  EXPECT_THROW(ts::conv(x, input({4, 3, 3}, 0.1), {1, 1}, "VALID"), ts::ShapeError);
  EXPECT_THROW(ts::conv_general_dilated(x, w, {1, 1}, "VALID", {.dimension_numbers = {"NHWC", "HWIO", "NHWX"}}),
               ts::ValueError);
  EXPECT_THROW(ts::conv_general_dilated(x, w, {1, 1}, "VALID", {.dimension_numbers = {"NHWC", "HWI", "NHWC"}}),
               ts::ValueError);
  EXPECT_THROW(ts::conv(x, input({4, 3, 3, 3}, 0.2), {1}, "VALID"), ts::ValueError);
  EXPECT_THROW(ts::conv(x, input({4, 3, 3, 3}, 0.2), {1, 1}, "FULL"), ts::ValueError);
  EXPECT_THROW(ts::conv(x, input({4, 3, 3, 3}, 0.2), {1, 0}, "VALID"), ts::ValueError);
  EXPECT_THROW(ts::conv_general_dilated(x, input({4, 3, 3, 3}, 0.2), {1, 1}, "SAME", {.lhs_dilation = {2, 1}}),
               ts::ValueError);
  EXPECT_THROW(ts::conv_general_dilated(x, input({4, 1, 3, 3}, 0.2), {1, 1}, "VALID", {.feature_group_count = 2}),
               ts::ShapeError);
  EXPECT_THROW(ts::conv_general_dilated(x, input({4, 3, 3, 3}, 0.2), {1, 1}, "VALID", {.batch_group_count = 3}),
               ts::ShapeError);
  EXPECT_THROW(ts::conv(x > 0.0, w > 0.0, {1, 1}, "VALID"), ts::DTypeError);
  EXPECT_THROW(ts::convolve(input({2, 2}, 0.1), input({2}, 0.1)), ts::ValueError);
  EXPECT_THROW(ts::convolve(input({4}, 0.1), input({2}, 0.1), "wide"), ts::ValueError);
}

// ---- windowed reductions ----

// Complex operands have no order: a window max or min of them is a clear error.
TEST(Windows, ComplexMaxIsAnError) {
  const ts::Array z = ts::Array({1.0f, -2.0f, 3.0f, 0.5f}).astype(ts::c64);
  try {
    ts::reduce_window(z, -INFINITY, ts::maximum, {2}, {1}, "VALID");
    ADD_FAILURE() << "a complex window max did not throw";
  } catch (const ts::DTypeError& e) {
    EXPECT_NE(std::string(e.what()).find("reduce_window: complex operands have no order"), std::string::npos)
        << e.what();
  }
}

TEST(ReduceWindow, SumMaxMinMatchJax) {
  const ts::Array x = input({2, 5, 6}, 0.3);
  expect_values(ts::reduce_window(x, 0.0, ts::add, {1, 2, 3}, {1, 2, 1}, {{0, 0}, {1, 1}, {0, 2}}), kWindowSum,
                kWindowSumShape, 1e-12, "sum");
  expect_values(ts::reduce_window(x, -INFINITY, ts::maximum, {1, 3, 2}, {1, 1, 2}, "SAME"), kWindowMax, kWindowMaxShape,
                0, "max");
  expect_values(ts::reduce_window(x, INFINITY, ts::minimum, {2, 2, 2}, {1, 2, 2}, "VALID"), kWindowMin, kWindowMinShape,
                0, "min");
  expect_values(ts::reduce_window(x, -INFINITY, ts::maximum, {1, 2, 2}, {1, 1, 1}, {{0, 0}, {1, 0}, {0, 1}}, {1, 2, 1},
                                  {1, 1, 2}),
                kWindowMaxDilated, kWindowMaxDilatedShape, 0, "max dilated");
  expect_values(ts::reduce_window(x, 1.5, ts::add, {1, 2, 2}, {1, 1, 1}, {{0, 0}, {1, 1}, {1, 0}}), kWindowSumInit,
                kWindowSumInitShape, 1e-12, "sum with init 1.5");
  expect_values(ts::reduce_window(x, 0.25, ts::maximum, {1, 2, 3}, {1, 2, 1}, "SAME"), kWindowMaxInit,
                kWindowMaxInitShape, 0, "max with init 0.25");
  const ts::Array xi = ts::arange(30, ts::i32).reshape({5, 6});
  const ts::Array si = ts::reduce_window(xi, 0, ts::add, {2, 3}, {1, 2}, "VALID");
  EXPECT_EQ(si.dtype(), ts::i32);
  expect_values(si, kWindowSumInt, kWindowSumIntShape, 0, "int sum");
  EXPECT_THROW(ts::reduce_window(x, 1.0, ts::multiply, {1, 2, 2}), ts::NotImplementedError);
  EXPECT_THROW(ts::reduce_window(x, 0.0, ts::add, {2, 2}), ts::ValueError);
}

TEST(ReduceWindow, GradientsMatchJaxAndFiniteDifferences) {
  const ts::Array x = input({2, 5, 6}, 0.3);
  auto wmax = [](const ts::Array& a) {
    const ts::Array y = ts::reduce_window(a, -INFINITY, ts::maximum, {1, 3, 2}, {1, 1, 2}, "SAME");
    return ts::sum(y * input(y.shape(), 0.9));
  };
  expect_values(ts::grad(wmax)(x), kWindowMaxGrad, kWindowMaxGradShape, 1e-12, "max grad");
  auto wsum = [](const ts::Array& a) {
    const ts::Array y =
        ts::reduce_window(a, 0.0, ts::add, {1, 2, 3}, {1, 2, 1}, {{0, 0}, {1, 1}, {0, 2}}, {1, 2, 1}, {1, 1, 2});
    return ts::sum(y * input(y.shape(), 0.8));
  };
  expect_values(ts::grad(wsum)(x), kWindowSumGrad, kWindowSumGradShape, 1e-12, "sum grad");
  // min through finite differences (values are distinct, so the argmin is stable).
  auto wmin = [](const ts::Array& a) { return ts::reduce_window(a, INFINITY, ts::minimum, {1, 2, 3}, {1, 2, 2}, "SAME"); };
  const ts::Array ct = input(wmin(x).shape(), 0.4);
  const auto num = numeric_grad(wmin, x, ct);
  const auto got = ts::grad([&](const ts::Array& a) { return ts::sum(wmin(a) * ct); })(x).to_vector<double>();
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], num[i], 1e-6) << i;
  // Second order: the max-pool gradient's own jvp and transpose (select_and_scatter_add).
  const ts::Array hv = ts::jvp([&](const ts::Array& a) { return ts::grad(wmax)(a); }, x, input(x.shape(), 0.2)).second;
  for (double v : hv.to_vector<double>()) EXPECT_EQ(v, 0.0);  // piecewise linear: no curvature
}

TEST(ReduceWindow, PoolingLayers) {
  const ts::Array imgs = input({2, 5, 5, 3}, 0.4);
  expect_values(ts::nn::max_pool(imgs, {2, 2}, ts::Shape{2, 2}), kMaxPool, kMaxPoolShape, 0, "max_pool");
  expect_values(ts::nn::avg_pool(imgs, {3, 3}, ts::Shape{2, 2}, "SAME"), kAvgPoolSame, kAvgPoolSameShape, 1e-12,
                "avg_pool");
  expect_values(ts::nn::avg_pool(imgs, {3, 3}, ts::Shape{2, 2}, "SAME", false), kAvgPoolSameExcludePad,
                kAvgPoolSameExcludePadShape, 1e-12, "avg_pool excluding padding");
  // min_pool is -max_pool(-x); an unbatched input has only (spatial..., features).
  const ts::Array one = ts::squeeze(ts::slice_in_dim(imgs, 0, 1, 1, 0), ts::Axes{0});
  EXPECT_EQ(ts::nn::min_pool(one, {2, 2}).to_vector<double>(),
            (-ts::nn::max_pool(-one, {2, 2})).to_vector<double>());
  EXPECT_THROW(ts::nn::max_pool(imgs, {2, 2, 2, 2}), ts::ShapeError);
}

TEST(ReduceWindow, VmapAndJit) {
  auto pool = [](const ts::Array& a) { return ts::nn::max_pool(a, {2, 3}, ts::Shape{1, 2}, "SAME"); };
  const ts::Array xs = input({3, 4, 6, 2}, 0.1);
  const ts::Array batched = ts::vmap(pool, {2})(xs);
  for (int64_t i = 0; i < 4; ++i) {
    const ts::Array xi = ts::squeeze(ts::slice_in_dim(xs, i, i + 1, 1, 2), ts::Axes{2});
    const ts::Array want = pool(xi);
    const ts::Array got = ts::squeeze(ts::slice_in_dim(batched, i, i + 1, 1, 0), ts::Axes{0});
    EXPECT_EQ(got.to_vector<double>(), want.to_vector<double>()) << i;
  }
  auto loss = [&](const ts::Array& a) { return ts::sum(ts::vmap(pool)(a)); };
  const ts::Array g = ts::jit(ts::grad(loss))(xs), ge = ts::grad(loss)(xs);
  EXPECT_EQ(g.to_vector<double>(), ge.to_vector<double>());
  double total = 0;
  for (double v : g.to_vector<double>()) total += v;
  EXPECT_EQ(total, double(ts::vmap(pool)(xs).size()));  // each window's 1 lands on its maximum
}

TEST(Cumlogsumexp, MatchesJaxWithoutOverflow) {
  const ts::Array c = input({3, 5}, 0.2) * 30.0;
  expect_values(ts::cumlogsumexp(c, 1), kCumlogsumexp, kCumlogsumexpShape, 1e-12, "axis 1");
  expect_values(ts::cumlogsumexp(c, 0, true), kCumlogsumexpReverse, kCumlogsumexpReverseShape, 1e-12, "reverse");
  expect_values(ts::grad([](const ts::Array& v) { return ts::sum(ts::cumlogsumexp(v, 1) * input({3, 5}, 0.6)); })(c),
                kCumlogsumexpGrad, kCumlogsumexpGradShape, 1e-12, "grad");
  const ts::Array big = ts::Array(std::vector<float>{1000.0f, 1000.0f, -1000.0f});
  EXPECT_NEAR(ts::cumlogsumexp(big).to_vector<float>()[1], 1000.0f + std::log(2.0f), 1e-3);
  EXPECT_EQ(ts::cumlogsumexp(ts::arange(3, ts::i32)).dtype(), ts::f32);
  EXPECT_THROW(ts::cumlogsumexp(c, 2), ts::IndexError);
}

TEST(Conv, OnednnRunsForwardDataAndWeightsPasses) {
  namespace ops = ts::ops;
  const ts::Aval x({2, 8, 8, 4}, ts::f32), w({3, 3, 4, 6}, ts::f32), g({2, 4, 4, 6}, ts::f32);
  // Forward, NHWC / HWIO, stride 2.
  ops::ConvSpec fwd{{0, 3, 1, 2}, {3, 2, 0, 1}, {0, 3, 1, 2}, {2, 2}, {1, 1}, {0, 0}, {1, 1}, {1, 1}, 1, 1, {}};
  EXPECT_NE(ops::conv_onednn_impl(x, w, fwd), "");
  // Its lhs cotangent: lhs dilation 2, unit strides (oneDNN's data-gradient pass).
  ops::ConvSpec dx{{0, 3, 1, 2}, {2, 3, 0, 1}, {0, 3, 1, 2}, {1, 1}, {1, 1}, {2, 2}, {2, 2}, {1, 1}, 1, 1, {}};
  EXPECT_NE(ops::conv_onednn_impl(g, w, dx), "");
  // Its rhs cotangent (the weights-gradient pass).
  ops::ConvSpec dw{{3, 0, 1, 2}, {3, 0, 1, 2}, {2, 3, 0, 1}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, {2, 2}, 1, 1, {}};
  EXPECT_NE(ops::conv_onednn_impl(x, g, dw), "");
  // Float64 and batch groups run on tessel's loops.
  EXPECT_EQ(ops::conv_onednn_impl(ts::Aval(x.shape, ts::f64), ts::Aval(w.shape, ts::f64), fwd), "");
  ops::ConvSpec bg = fwd;
  bg.batch_group_count = 2;
  EXPECT_EQ(ops::conv_onednn_impl(x, ts::Aval({3, 3, 4, 6}, ts::f32), bg), "");
}

TEST(Conv, EdgeCasesOfRankDtypeAndSize) {
  // No spatial dimensions: a matrix product (N, C) x (O, C).
  const ts::Array a = input({3, 4}, 0.1), b = input({5, 4}, 0.2);
  const ts::Array y = ts::conv_general_dilated(a, b, {}, "VALID");
  const ts::Array want = ts::matmul(a, ts::transpose(b));
  expect_values(y, want.to_vector<double>(), want.shape(), 1e-12, "rank 2");
  // Half precision accumulates in float32.
  const ts::Array xh = input({1, 2, 5, 5}, 0.3, ts::bf16), wh = input({2, 2, 3, 3}, 0.4, ts::bf16);
  const ts::Array yh = ts::conv(xh, wh, {1, 1}, "SAME");
  EXPECT_EQ(yh.dtype(), ts::bf16);
  const ts::Array yf = ts::conv(xh.astype(ts::f32), wh.astype(ts::f32), {1, 1}, "SAME");
  expect_values(yh, yf.astype(ts::f64).to_vector<double>(), yf.shape(), 0.05, "bfloat16");
  // An empty batch and a window larger than the padded input give empty results.
  EXPECT_EQ(ts::conv(input({0, 2, 5, 5}, 0.1, ts::f32), input({3, 2, 3, 3}, 0.2, ts::f32), {1, 1}, "SAME").shape(),
            (ts::Shape{0, 3, 5, 5}));
  EXPECT_EQ(ts::conv(input({1, 2, 2, 2}, 0.1), input({3, 2, 3, 3}, 0.2), {1, 1}, "VALID").shape(),
            (ts::Shape{1, 3, 0, 0}));
  EXPECT_EQ(ts::nn::max_pool(input({2, 1, 1, 3}, 0.1), {2, 2}).shape(), (ts::Shape{2, 0, 0, 3}));
  // Gradients through an empty output are zeros of the operands' shapes.
  auto f = [](const ts::Array& x, const ts::Array& w) { return ts::sum(ts::conv(x, w, {1, 1}, "VALID")); };
  auto [gx, gw] = ts::grad<0, 1>(f)(input({1, 2, 2, 2}, 0.1), input({3, 2, 3, 3}, 0.2));
  EXPECT_EQ(gx.shape(), (ts::Shape{1, 2, 2, 2}));
  EXPECT_EQ(gw.shape(), (ts::Shape{3, 2, 3, 3}));
  for (double v : gw.to_vector<double>()) EXPECT_EQ(v, 0.0);
}
