// Vectorized fused reductions and row-phased loop nests (codegen.h, docs/performance.md):
// fused sums stay within the documented error bound of a float64 reference (adversarial
// cancellation, 10^7 elements), max/min keep JAX's NaN semantics, column sums (over leading
// axes) fuse into the loop nest of their operand, and user-written softmax,
// log-softmax, logsumexp, layer norm and RMS norm (and their gradients) compile to one
// row-phased loop nest equal to the plain evaluation.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <regex>
#include <sstream>

#include "compiler/codegen.h"
#include "compiler/fusion.h"
#include "compiler/kernel_cache.h"
#include "compiler/fusion_test_util.h"
#include "ir/program.h"
#include "tessel/nn.h"

namespace {

namespace ts = tessel;
using fusion_test::count_prim;
using fusion_test::lower;
using fusion_test::run;

ts::compiler::FusionOptions fuse_everything() {
  ts::compiler::FusionOptions o;
  o.min_elements = 0;
  return o;
}

/// docs/performance.md's bound on a fused sum of `n` values of a dtype of unit roundoff `u`:
/// lanes of kLaneRun (16) values in the operand's precision, then float64, then one rounding.
double sum_bound(double u, double abs_sum, double exact) {
  return 16 * u * abs_sum + u * std::abs(exact) + 1e-300;
}

std::vector<double> adversarial(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> unit(-1, 1);
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) {
    switch (i % 4) {
      case 0: v[i] = 1e6 * unit(rng); break;          // large terms that cancel below
      case 1: v[i] = -v[i - 1] + 1e-3 * unit(rng); break;
      case 2: v[i] = unit(rng); break;
      default: v[i] = std::ldexp(unit(rng), int(rng() % 40) - 20); break;  // every scale
    }
  }
  return v;
}

struct Exact {
  double sum = 0, abs_sum = 0;
};
/// Per row of `v` (rows x cols), the sum in long double and the sum of magnitudes.
std::vector<Exact> exact_rows(const std::vector<double>& v, size_t rows, size_t cols, double scale) {
  std::vector<Exact> r(rows);
  for (size_t i = 0; i < rows; ++i) {
    long double s = 0, a = 0;
    for (size_t j = 0; j < cols; ++j) {
      const long double x = (long double)v[i * cols + j] * scale + 1;  // the fused producer: x * scale + 1
      s += x;
      a += x < 0 ? -x : x;
    }
    r[i] = {double(s), double(a)};
  }
  return r;
}

template <class T> void check_sums(ts::DType dtype, size_t rows, size_t cols, bool full) {
  const double u = std::ldexp(1.0, -std::numeric_limits<T>::digits);
  std::vector<double> v = adversarial(rows * cols, uint32_t(rows + cols));
  std::vector<double> rounded(v.size());
  for (size_t i = 0; i < v.size(); ++i) rounded[i] = double(T(v[i]));
  ts::Array x = ts::Array(v, {int64_t(rows), int64_t(cols)}).astype(dtype);
  auto f = [full](std::span<const ts::Array> a) {
    ts::Array y = a[0] * 0.5 + 1.0;  // a producer, so the sum fuses as its epilogue
    return std::vector<ts::Array>{full ? ts::sum(y) : ts::sum(y, {1})};
  };
  ts::ir::Program p = lower(f, {x});
  ts::ir::Program fused = ts::compiler::fuse(p, fuse_everything());
  ASSERT_EQ(count_prim(fused, "reduce_sum"), 0u) << ts::ir::print_program(fused);
  // x * 0.5 is exact; + 1 rounds once per element, which the bound on the operand absorbs
  // (one more u per |x|).
  const auto got = ts::astype(run(fused, {x})[0], ts::f64).to_vector<double>();
  const auto plain = ts::astype(run(p, {x})[0], ts::f64).to_vector<double>();
  if (full) {
    auto e = exact_rows(rounded, 1, rows * cols, 0.5)[0];
    const double bound = sum_bound(u, e.abs_sum, e.sum) + u * e.abs_sum;
    EXPECT_LE(std::abs(got[0] - e.sum), bound) << "fused full sum of " << rows * cols;
    EXPECT_LE(std::abs(got[0] - plain[0]), 2 * bound) << "fused and unfused full sums";
    return;
  }
  auto e = exact_rows(rounded, rows, cols, 0.5);
  for (size_t i = 0; i < rows; ++i) {
    const double bound = sum_bound(u, e[i].abs_sum, e[i].sum) + u * e[i].abs_sum;
    EXPECT_LE(std::abs(got[i] - e[i].sum), bound) << "row " << i;
    EXPECT_LE(std::abs(got[i] - plain[i]), 2 * bound) << "row " << i;
  }
}

TEST(RowReductions, FusedSumsStayWithinTheDocumentedBound) {
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "code generation is off";
  check_sums<float>(ts::f32, 64, 1000, false);    // rows with a tail past the lanes
  check_sums<float>(ts::f32, 300, 37, false);     // short rows
  check_sums<double>(ts::f64, 64, 1000, false);
  check_sums<float>(ts::f32, 1000, 1000, true);   // full reductions, split over the arena
  check_sums<double>(ts::f64, 77, 1001, true);
}

TEST(RowReductions, TenMillionElementsWithCancellation) {
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "code generation is off";
  check_sums<float>(ts::f32, 4, 2500000, false);  // 10^7 elements in four rows
  check_sums<float>(ts::f32, 10000, 1000, true);  // 10^7 elements to one scalar
}

/// Row, trailing-axes, leading-axis and full reductions of random values with NaN and
/// infinities: the fused program equals the unfused kernels (sums within the bound, max and
/// min exactly, NaN where JAX gives NaN).
TEST(RowReductions, FusedEqualUnfusedOnEveryReductionShapeWithNaNAndInf) {
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "code generation is off";
  std::mt19937 rng(11);
  // (float16 and bfloat16 have no generated form: their reductions stay unfused kernels)
  for (ts::DType dtype : {ts::f32, ts::f64, ts::f16, ts::bf16}) {
    for (int special = 0; special < 4; ++special) {
      std::vector<double> v(size_t(6 * 40 * 70));
      for (auto& x : v) x = double(int(rng() % 2001) - 1000) / 64;
      for (size_t i = 0; i < v.size(); i += 97 + size_t(special) * 13) {
        if (special == 1) v[i] = std::numeric_limits<double>::quiet_NaN();
        if (special == 2) v[i] = (i / 97) % 2 ? std::numeric_limits<double>::infinity() : -0.0;
        if (special == 3) v[i] = -std::numeric_limits<double>::infinity();
      }
      ts::Array x = ts::Array(v, {6, 40, 70}).astype(dtype);
      for (ts::Axes axes : {ts::Axes{2}, ts::Axes{1, 2}, ts::Axes{0}, ts::Axes{0, 1}, ts::Axes{0, 1, 2}}) {
        auto f = [axes](std::span<const ts::Array> a) {
          ts::Array y = ts::abs(a[0]) * 2.0 - a[0];
          return std::vector<ts::Array>{ts::sum(y, axes), ts::max(y, axes), ts::min(y, axes)};
        };
        ts::ir::Program p = lower(f, {x});
        const ts::ir::Program fused_program = ts::compiler::fuse(p, fuse_everything());
        if (dtype == ts::f32 || dtype == ts::f64) {
          for (const char* prim : {"reduce_sum", "reduce_max", "reduce_min"})
            ASSERT_EQ(count_prim(fused_program, prim), 0u) << ts::ir::print_program(fused_program);
        }
        auto fused = run(fused_program, {x});
        auto plain = run(p, {x});
        for (size_t k = 0; k < 3; ++k) {
          auto a = ts::astype(fused[k], ts::f64).to_vector<double>();
          auto b = ts::astype(plain[k], ts::f64).to_vector<double>();
          ASSERT_EQ(a.size(), b.size());
          for (size_t i = 0; i < a.size(); ++i) {
            if (std::isnan(b[i])) {
              EXPECT_TRUE(std::isnan(a[i])) << "output " << k << " element " << i;
            } else if (k == 0 && std::isfinite(b[i])) {
              // |y| <= 3 * 16; the half floats round each of the unfused partial sums
              const double tol = dtype == ts::f16 || dtype == ts::bf16 ? 1e-2 * 3 * 70 * 40 * 16 : 1e-5 * 3 * 70 * 40 * 16;
              EXPECT_NEAR(a[i], b[i], tol) << "sum element " << i;
            } else {
              EXPECT_EQ(a[i], b[i]) << "output " << k << " element " << i;
              EXPECT_EQ(std::signbit(a[i]), std::signbit(b[i])) << "output " << k << " element " << i;
            }
          }
        }
      }
    }
  }
}

TEST(RowReductions, MaxAndMinPropagateNaNAndOrderSignedZeros) {
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "code generation is off";
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  std::vector<double> v(4 * 100, 1.0);
  v[37] = nan;                         // row 0: NaN among numbers
  for (size_t j = 0; j < 100; ++j) v[100 + j] = j % 2 ? -0.0 : 0.0;  // row 1: zeros of both signs
  for (size_t j = 0; j < 100; ++j) v[200 + j] = -inf;                 // row 2: all -inf
  v[399] = nan;                        // row 3: NaN in the scalar tail
  ts::Array x = ts::Array(v, {4, 100}).astype(ts::f32);
  auto f = ts::jit([](const ts::Array& a) {
    ts::Array y = a * 1.0f;
    return std::vector<ts::Array>{ts::max(y, {1}), ts::min(y, {1})};
  });
  auto out = f(x);
  auto mx = out[0].to_vector<float>(), mn = out[1].to_vector<float>();
  EXPECT_TRUE(std::isnan(mx[0]) && std::isnan(mn[0]));
  EXPECT_EQ(mx[1], 0.0f);
  EXPECT_FALSE(std::signbit(mx[1]));
  EXPECT_TRUE(std::signbit(mn[1]));
  EXPECT_EQ(mx[2], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(mx[3]) && std::isnan(mn[3]));
}

// ---- user-written normalizations compile to one row-phased loop nest ----

ts::Array softmax(const ts::Array& s) {
  ts::Array e = ts::exp(s - ts::max(s, {-1}, true));
  return e / ts::sum(e, {-1}, true);
}
ts::Array log_softmax(const ts::Array& s) {
  ts::Array c = s - ts::max(s, {-1}, true);
  return c - ts::log(ts::sum(ts::exp(c), {-1}, true));
}
ts::Array logsumexp(const ts::Array& s) {
  ts::Array m = ts::max(s, {-1}, true);
  return ts::log(ts::sum(ts::exp(s - m), {-1}, true)) + m;
}
ts::Array layer_norm(const ts::Array& x, const ts::Array& g, const ts::Array& b) {
  ts::Array c = x - ts::mean(x, {-1}, true);
  ts::Array var = ts::mean(c * c, {-1}, true);
  return c * ts::rsqrt(var + 1e-5) * g + b;
}
ts::Array rms_norm(const ts::Array& x, const ts::Array& g) {
  return x * ts::rsqrt(ts::mean(x * x, {-1}, true) + 1e-6) * g;
}

/// The executable of `f` on `args` has exactly one kernel step, a row-phased loop nest of
/// `phases` phases (at least), and `f` equals its plain (eager, unfused) evaluation.
using ArrayFn = std::function<ts::Array(const std::vector<ts::Array>&)>;
void expect_row_phased(const std::string& what, const ArrayFn& f, const std::vector<ts::Array>& args, int64_t phases,
                       double tol = 2e-6) {
  auto fn = [f](std::span<const ts::Array> a) { return std::vector<ts::Array>{f(std::vector<ts::Array>(a.begin(), a.end()))}; };
  auto jitted = ts::jit([f](const std::vector<ts::Array>& a) { return f(a); });
  const std::string text = jitted.lower(args).compile().as_text();
  EXPECT_NE(text.find("1 kernel steps"), std::string::npos) << what << "\n" << text;
  EXPECT_NE(text.find("fused_rows["), std::string::npos) << what << "\n" << text;
  ts::ir::Program fused = ts::compiler::fuse(lower(fn, args), ts::compiler::fusion_options());
  ASSERT_EQ(fused.eqns.size(), 1u) << what << "\n" << ts::ir::print_program(fused);
  EXPECT_EQ(fused.eqns[0].prim->name, "fused_rows") << what;
  EXPECT_GE(fused.eqns[0].params.get_int("phases"), phases) << what;
  auto got = ts::astype(jitted(args), ts::f64).to_vector<double>();
  auto want = ts::astype(f(args), ts::f64).to_vector<double>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << what << " " << i;
}

std::vector<ts::Array> normal(std::vector<ts::Shape> shapes, uint32_t seed) {
  std::vector<ts::Array> out;
  for (const ts::Shape& s : shapes) out.push_back(ts::random::normal(ts::random::key(seed++), s) * 3.0f);
  return out;
}

TEST(RowPhased, UserWrittenSoftmaxFamilyCompilesToOneLoopNest) {
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "code generation is off";
  auto x = normal({{4, 8, 64, 200}}, 1);
  expect_row_phased("softmax", [](const std::vector<ts::Array>& a) { return softmax(a[0]); }, x, 3);
  expect_row_phased("log_softmax", [](const std::vector<ts::Array>& a) { return log_softmax(a[0]); }, x, 2);
  // logsumexp's result is a row's value: its last steps (log, add) are small unfused kernels
  // reading the stored max, so it stays two loop nests, each one pass over the input (the
  // exponentials are summed where computed, never stored).
  auto lse = [](std::span<const ts::Array> a) { return std::vector<ts::Array>{logsumexp(a[0])}; };
  ts::ir::Program fused = ts::compiler::fuse(lower(lse, x), ts::compiler::fusion_options());
  EXPECT_EQ(count_prim(fused, "fused"), 2u) << ts::ir::print_program(fused);
  for (const auto& e : fused.eqns)
    for (const auto& o : e.outputs) EXPECT_LT(o->aval.size(), x[0].size()) << ts::ir::print_program(fused);
  auto got = run(fused, x)[0].to_vector<float>(), want = logsumexp(x[0]).to_vector<float>();
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 2e-6 * (1 + std::abs(want[i])));
  // jax.nn's form: a stop_gradient on the max (an identity inside the loop nest)
  expect_row_phased("nn::softmax", [](const std::vector<ts::Array>& a) { return ts::nn::softmax(a[0]); }, x, 3);
  expect_row_phased("nn::log_softmax", [](const std::vector<ts::Array>& a) { return ts::nn::log_softmax(a[0]); }, x,
                    2);
  auto x64 = {ts::astype(x[0], ts::f64)};
  expect_row_phased("softmax f64", [](const std::vector<ts::Array>& a) { return softmax(a[0]); }, x64, 3, 1e-14);
}

/// Softmax rows of 300 points (18 lane chunks: the float lanes fold into float64 after 16 of
/// them and keep accumulating, then a scalar tail of 12) with special values: a NaN, a +inf,
/// every point -inf, huge and tiny magnitudes. The row-phased loop nest keeps its lanes in a
/// vector register between chunks; its values equal the plain evaluation's, NaN for NaN.
TEST(RowPhased, SoftmaxRowsWithNaNAndInfinitiesEqualThePlainEvaluation) {
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "code generation is off";
  const int64_t rows = 64, cols = 300;  // above the fusion threshold (TESSEL_FUSION_MIN_ELEMENTS)
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> v(size_t(rows * cols));
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> unit(-4, 4);
  for (double& x : v) x = unit(rng);
  v[0 * cols + 37] = std::numeric_limits<double>::quiet_NaN();  // row 0: a NaN among numbers
  v[1 * cols + 290] = inf;                                     // row 1: +inf in the scalar tail
  for (int64_t j = 0; j < cols; ++j) v[size_t(2 * cols + j)] = -inf;  // row 2: every point -inf
  v[3 * cols + 5] = 1e30;                                      // row 3: one point dominates
  for (int64_t j = 0; j < cols; ++j) v[size_t(4 * cols + j)] *= 1e-30;  // row 4: nearly uniform
  v[5 * cols + 299] = std::numeric_limits<double>::quiet_NaN();  // row 5: NaN as the last point
  for (ts::DType dt : {ts::f32, ts::f64}) {
    const std::vector<ts::Array> x{ts::astype(ts::Array(v, {rows, cols}), dt)};
    for (const auto& [what, f] : std::vector<std::pair<std::string, ArrayFn>>{
             {"softmax", [](const std::vector<ts::Array>& a) { return softmax(a[0]); }},
             {"nn::softmax", [](const std::vector<ts::Array>& a) { return ts::nn::softmax(a[0]); }},
             {"log_softmax", [](const std::vector<ts::Array>& a) { return log_softmax(a[0]); }}}) {
      auto jitted = ts::jit([f](const std::vector<ts::Array>& a) { return f(a); });
      EXPECT_NE(jitted.lower(x).compile().as_text().find("fused_rows["), std::string::npos) << what;
      const auto got = ts::astype(jitted(x), ts::f64).to_vector<double>();
      const auto want = ts::astype(f(x), ts::f64).to_vector<double>();
      ASSERT_EQ(got.size(), want.size());
      const double tol = dt == ts::f32 ? 2e-6 : 1e-14;
      for (size_t i = 0; i < got.size(); ++i) {
        if (std::isnan(want[i])) {
          EXPECT_TRUE(std::isnan(got[i])) << what << " " << ts::dtype_name(dt) << " point " << i;
        } else if (std::isinf(want[i])) {
          EXPECT_EQ(got[i], want[i]) << what << " " << ts::dtype_name(dt) << " point " << i;
        } else {
          ASSERT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << what << " " << ts::dtype_name(dt) << " " << i;
        }
      }
      if (what == "softmax") {  // spot checks against the definition
        EXPECT_TRUE(std::isnan(got[0]));                        // the NaN row is NaN throughout
        EXPECT_TRUE(std::isnan(got[size_t(2 * cols)]));         // exp(-inf - -inf) = NaN, as in JAX
        EXPECT_EQ(got[size_t(3 * cols + 5)], 1.0);              // the dominating point takes it all
        EXPECT_NEAR(got[size_t(4 * cols + 1)], 1.0 / cols, 1e-6);
      }
    }
  }
}

TEST(RowPhased, UserWrittenLayerAndRmsNormCompileToOneLoopNest) {
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "code generation is off";
  auto a = normal({{8, 64, 512}, {512}, {512}}, 3);
  expect_row_phased("layer_norm", [](const std::vector<ts::Array>& v) { return layer_norm(v[0], v[1], v[2]); }, a,
                    3, 1e-5);
  // followed by an element-wise op, which joins the normalization phase
  expect_row_phased("layer_norm + tanh",
                    [](const std::vector<ts::Array>& v) { return ts::tanh(layer_norm(v[0], v[1], v[2])); }, a, 3,
                    1e-5);
  expect_row_phased("rms_norm", [](const std::vector<ts::Array>& v) { return rms_norm(v[0], v[1]); }, a, 2, 1e-5);
}

TEST(RowPhased, GradientsCompileToOneLoopNest) {
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "code generation is off";
  auto x = normal({{4, 8, 64, 128}, {4, 8, 64, 128}}, 5);
  auto softmax_grad = [](const std::vector<ts::Array>& a) {
    return ts::grad([](const ts::Array& s, const ts::Array& ct) { return ts::sum(softmax(s) * ct); })(a[0], a[1]);
  };
  expect_row_phased("softmax grad", softmax_grad, x, 3, 1e-5);
  auto y = normal({{8, 64, 512}, {512}, {512}, {8, 64, 512}}, 7);
  auto ln_grad = [](const std::vector<ts::Array>& a) {
    return ts::grad([](const ts::Array& v, const ts::Array& g, const ts::Array& b, const ts::Array& ct) {
      return ts::sum(layer_norm(v, g, b) * ct);
    })(a[0], a[1], a[2], a[3]);
  };
  expect_row_phased("layer_norm grad", ln_grad, y, 3, 1e-4);
}

/// Rows that do not stay in the first-level cache, and a consumer reading a row's reduction
/// at another row, keep separate loop nests (and the right values).
TEST(RowPhased, NonLocalReadsKeepSeparateLoopNests) {
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "code generation is off";
  auto x = normal({{64, 300}}, 9);
  auto f = [](std::span<const ts::Array> a) {
    ts::Array m = ts::max(a[0], {1}, true);
    ts::Array shifted = ts::concatenate({m[{ts::Slice(1, ts::none)}], m[{ts::Slice(0, 1)}]}, 0);  // the next row's
    return std::vector<ts::Array>{ts::exp(a[0] - shifted)};
  };
  ts::ir::Program p = lower(f, x);
  ts::ir::Program fused = ts::compiler::fuse(p, fuse_everything());
  EXPECT_EQ(count_prim(fused, "fused_rows"), 0u) << ts::ir::print_program(fused);
  auto got = run(fused, x)[0].to_vector<float>(), want = run(p, x)[0].to_vector<float>();
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-6 * (1 + std::abs(want[i])));
}

// ---- column reductions (sums over leading axes) fuse into their producers ----

/// Top-level equations of primitive `prim` in an executable's compiled text (lines indented
/// by four spaces; the programs of fused steps are indented further).
size_t top_level_steps(const std::string& text, const std::string& prim) {
  std::istringstream in(text);
  const std::regex step("^    [^ #].* = " + prim + "\\[.*");
  size_t n = 0;
  for (std::string line; std::getline(in, line);) n += std::regex_match(line, step);
  return n;
}

/// A dense layer's bias and the layer-norm parameters' gradients are sums over the leading
/// axes: the compiled program computes each in the loop nest of its operand, not as a
/// reduction step of its own reading the operand again.
TEST(ColumnReductions, BiasAndLayerNormGradientsFuseIntoTheirProducers) {
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "code generation is off";
  auto a = normal({{4, 64, 256}, {256}, {256}, {256}, {4, 64, 256}}, 21);
  auto loss = [](const std::vector<ts::Array>& v) {
    ts::Array y = ts::tanh(layer_norm(v[0], v[1], v[2]) + v[3]);
    return ts::sum(y * v[4]);
  };
  auto g = ts::jit([loss](const std::vector<ts::Array>& v) { return ts::grad(loss)(v); });
  const std::string text = g.lower(a).compile().as_text();
  EXPECT_EQ(top_level_steps(text, "reduce_sum"), 0u) << text;
  EXPECT_NE(text.find(":f32[256] = reduce_sum[axes=(0, 1)]"), std::string::npos) << text;  // inside a loop nest
  auto got = g(a);
  auto want = ts::grad(loss)(a);
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 1; k < 4; ++k) {  // the three parameters' gradients
    auto x = got[k].to_vector<float>(), y = want[k].to_vector<float>();
    for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(x[i], y[i], 1e-4 * (1 + std::abs(y[i]))) << k << " " << i;
  }
}

/// docs/performance.md's bound on a fused column sum of `n` terms: accumulated in float64
/// per block of rows, the blocks summed in float64, one rounding to the output dtype (unit
/// roundoff u).
double column_bound(double u, int64_t n, double abs_sum, double exact) {
  return u * std::abs(exact) + double(n) * std::ldexp(1.0, -53) * abs_sum + 1e-300;
}

/// Random element-wise producers and sums, max and min over leading axes (one or two, with
/// an element-wise root of the same loop nest beside them): fused equal the unfused kernels
/// (sums within the bound of a long double reference, max and min exactly), with NaN and
/// infinities.
TEST(ColumnReductions, FusedEqualUnfusedWithinTheBound) {
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "code generation is off";
  std::mt19937 rng(31);
  struct Case {
    ts::Shape shape;
    ts::Axes axes;
  };
  int op = 0;  // the producer: one per shape (a kernel to compile per shape and dtype)
  for (const Case& c : {Case{{300, 70}, {0}}, Case{{5, 37, 130}, {0}}, Case{{5, 37, 130}, {0, 1}},
                        Case{{3, 4, 65, 9}, {0, 1, 2}}}) {
    op = (op + 1) % 3;
    for (ts::DType dtype : {ts::f32, ts::f64}) {
      const double u = std::ldexp(1.0, dtype == ts::f32 ? -24 : -53);
      for (int special = 0; special < 3; ++special) {
        int64_t size = 1;
        for (int64_t d : c.shape) size *= d;
        std::vector<double> v = adversarial(size_t(size), rng());
        for (size_t i = 0; i < v.size(); i += 89 + size_t(special) * 7) {
          if (special == 1) v[i] = std::numeric_limits<double>::quiet_NaN();
          if (special == 2) v[i] = (i / 89) % 2 ? std::numeric_limits<double>::infinity() : -0.0;
        }
        ts::Array x = ts::Array(v, c.shape).astype(dtype);
        auto f = [axes = c.axes, op](std::span<const ts::Array> a) {
          ts::Array y = op == 0 ? a[0] * 0.5 : op == 1 ? ts::abs(a[0]) * -0.25 : a[0] * 0.5 + ts::abs(a[0]) * 0.25;
          return std::vector<ts::Array>{y * 2.0, ts::sum(y, axes), ts::max(y, axes), ts::min(y, axes)};
        };
        ts::ir::Program p = lower(f, {x});
        ts::compiler::FusionOptions options = fuse_everything();
        options.store_shared_values = false;  // (else a small domain stores y for its four readers)
        const ts::ir::Program fused_program = ts::compiler::fuse(p, options);
        for (const char* prim : {"reduce_sum", "reduce_max", "reduce_min"})
          ASSERT_EQ(count_prim(fused_program, prim), 0u) << ts::ir::print_program(fused_program);
        ASSERT_EQ(count_prim(fused_program, "fused"), 1u) << ts::ir::print_program(fused_program);  // one loop nest
        auto fused = run(fused_program, {x});
        auto plain = run(p, {x});
        // The long double reference of the sums, from the rounded input.
        const auto xs = ts::astype(x, ts::f64).to_vector<double>();
        const auto ys = ts::astype(run(p, {x})[0], ts::f64).to_vector<double>();  // 2 y, exact
        const int64_t cols = fused[1].size(), n = int64_t(xs.size()) / cols;
        for (size_t k = 0; k < 4; ++k) {
          auto a = ts::astype(fused[k], ts::f64).to_vector<double>();
          auto b = ts::astype(plain[k], ts::f64).to_vector<double>();
          ASSERT_EQ(a.size(), b.size());
          for (size_t j = 0; j < a.size(); ++j) {
            if (std::isnan(b[j])) {
              ASSERT_TRUE(std::isnan(a[j])) << "output " << k << " element " << j;
            } else if (k == 1 && std::isfinite(b[j])) {
              long double s = 0, abs_sum = 0;
              for (int64_t r = 0; r < n; ++r) {
                const long double y = (long double)ys[size_t(r * cols) + j] / 2;
                s += y;
                abs_sum += y < 0 ? -y : y;
              }
              const double bound = column_bound(u, n, double(abs_sum), double(s));
              ASSERT_LE(std::abs(a[j] - double(s)), bound) << "column " << j;
              ASSERT_LE(std::abs(a[j] - b[j]), bound + double(n) * u * double(abs_sum)) << "column " << j;
            } else {
              ASSERT_EQ(a[j], b[j]) << "output " << k << " element " << j;
              ASSERT_EQ(std::signbit(a[j]), std::signbit(b[j])) << "output " << k << " element " << j;
            }
          }
        }
      }
    }
  }
}

/// 10^7 terms with cancellation summed over the leading axis (many blocks of rows): within
/// the bound of the long double sums.
TEST(ColumnReductions, TenMillionTermsWithCancellation) {
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "code generation is off";
  const int64_t rows = 100000, cols = 100;
  std::vector<double> v = adversarial(size_t(rows * cols), 7);
  ts::Array x = ts::Array(v, {rows, cols}).astype(ts::f32);
  auto f = [](std::span<const ts::Array> a) { return std::vector<ts::Array>{ts::sum(a[0] * 0.5 + 1.0, {0})}; };
  ts::ir::Program p = lower(f, {x});
  const ts::ir::Program fused_program = ts::compiler::fuse(p, fuse_everything());
  ASSERT_EQ(count_prim(fused_program, "reduce_sum"), 0u) << ts::ir::print_program(fused_program);
  const auto got = ts::astype(run(fused_program, {x})[0], ts::f64).to_vector<double>();
  const auto xs = ts::astype(x, ts::f64).to_vector<double>();
  for (int64_t j = 0; j < cols; ++j) {
    long double s = 0, abs_sum = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const long double y = (long double)xs[size_t(r * cols + j)] * 0.5L + 1;
      s += y;
      abs_sum += y < 0 ? -y : y;
    }
    // + 1 rounds once per element in float32: one more u per |y|
    const double u = std::ldexp(1.0, -24);
    EXPECT_LE(std::abs(got[size_t(j)] - double(s)), column_bound(u, rows, double(abs_sum), double(s)) + u * double(abs_sum))
        << "column " << j;
  }
}

/// Attention's bias gradients sum the heads' gradients after a reshape merges the heads
/// into the model dimension: the sum moves before the reshape (which keeps the summed
/// leading dimensions) and joins the loop nest that computes the heads' gradients.
TEST(ColumnReductions, SumsOfMergedHeadsJoinTheLoopNestOfTheHeads) {
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "code generation is off";
  auto a = normal({{4, 8, 64, 32}}, 41);
  auto f = [](std::span<const ts::Array> v) {
    ts::Array heads = ts::transpose(ts::tanh(v[0]), ts::Axes{0, 2, 1, 3});  // [4, 64, 8, 32]
    ts::Array merged = ts::reshape(heads, {4, 64, 256});
    return std::vector<ts::Array>{merged * 2.0, ts::sum(merged, {0, 1})};
  };
  ts::ir::Program p = lower(f, a);
  const ts::ir::Program fused = ts::compiler::fuse(p, fuse_everything());
  EXPECT_EQ(count_prim(fused, "reduce_sum"), 0u) << ts::ir::print_program(fused);
  bool in_heads_nest = false;  // the sum is an output of the loop nest over [4, 64, 8, 32]
  for (const auto& e : fused.eqns)
    if (e.prim->name == "fused")
      for (const auto& o : e.outputs) in_heads_nest |= o->aval.shape == ts::Shape{8, 32};
  EXPECT_TRUE(in_heads_nest) << ts::ir::print_program(fused);
  auto got = run(fused, a), want = run(p, a);
  for (size_t k = 0; k < 2; ++k) {
    auto x = got[k].to_vector<float>(), y = want[k].to_vector<float>();
    ASSERT_EQ(x.size(), y.size());
    for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(x[i], y[i], 1e-5 * (1 + std::abs(y[i]))) << k << " " << i;
  }
}

}  // namespace
