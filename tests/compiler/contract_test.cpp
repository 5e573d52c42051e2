// Multiply-add contraction (compiler::contract_multiply_adds, docs/performance.md#fused-multiply-add):
// which products become fma equations, that fused and unfused runs of the contracted program
// agree bit for bit, that the values are std::fma's, within the documented bound of the
// uncontracted evaluation, and that TESSEL_FP_CONTRACT=0 leaves programs as they were. Also
// the literal arithmetic jit folds first (compiler::fold_literal_arithmetic,
// docs/performance.md#literal-arithmetic).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "compiler/fusion.h"
#include "compiler/fusion_test_util.h"
#include "compiler/kernel_cache.h"
#include "ops/special.h"
#include "tessel/tessel.h"

namespace ts = tessel;
using fusion_test::count_prim;
using fusion_test::lower;
using fusion_test::run;

namespace {

/// Sets TESSEL_FP_CONTRACT for the scope (read at each compilation).
class ContractionSetting {
 public:
  explicit ContractionSetting(const char* value) {
    if (const char* v = std::getenv("TESSEL_FP_CONTRACT")) saved_ = v;
    setenv("TESSEL_FP_CONTRACT", value, 1);
  }
  ~ContractionSetting() {
    if (saved_) setenv("TESSEL_FP_CONTRACT", saved_->c_str(), 1);
    else unsetenv("TESSEL_FP_CONTRACT");
  }

 private:
  std::optional<std::string> saved_;
};

/// Values spread over several binades, both signs, with exact cancellations in reach.
template <class T> std::vector<T> values(int64_t n, int seed) {
  std::vector<T> v(static_cast<size_t>(n));
  uint64_t s = 0x9e3779b97f4a7c15ull * uint64_t(seed + 1);
  for (auto& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = T(double(int64_t(s >> 11) % 2000001 - 1000000) * 1e-3 / double(1 + (s >> 60)));
  }
  return v;
}

ts::ir::Program fuse_everything(const ts::ir::Program& p) {
  ts::compiler::FusionOptions o;
  o.min_elements = 0;
  return ts::compiler::fuse(p, o);
}

template <class T> void expect_same_bits(const std::string& what, const std::vector<T>& got, const std::vector<T>& want) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(std::memcmp(&got[i], &want[i], sizeof(T)), 0) << what << " point " << i << ": " << got[i] << " against " << want[i];
}

TEST(Contraction, ProductsReadOnlyBySumsBecomeFma) {
  ContractionSetting on("1");
  const ts::Array x(values<float>(64, 1), {64}), y(values<float>(64, 2), {64}), z(values<float>(64, 3), {64});
  auto count = [&](auto f) {
    ts::ir::Program p = lower([f](std::span<const ts::Array> a) { return std::vector<ts::Array>{f(a[0], a[1], a[2])}; },
                              {x, y, z});
    return std::make_pair(count_prim(p, "fma"), count_prim(p, "mul"));
  };
  using A = const ts::Array&;
  EXPECT_EQ(count([](A a, A b, A c) { return a * b + c; }), std::make_pair(size_t(1), size_t(0)));
  EXPECT_EQ(count([](A a, A b, A c) { return c + a * b; }), std::make_pair(size_t(1), size_t(0)));
  EXPECT_EQ(count([](A a, A b, A c) { return a * b - c; }), std::make_pair(size_t(1), size_t(0)));
  EXPECT_EQ(count([](A a, A b, A c) { return c - a * b; }), std::make_pair(size_t(1), size_t(0)));
  EXPECT_EQ(count([](A a, A, A c) { return a * 0.25f - c; }), std::make_pair(size_t(1), size_t(0)));
  // A division by a literal is the product by its reciprocal; by zero it stays a division.
  EXPECT_EQ(count([](A a, A, A c) { return a / 3.0f + c; }), std::make_pair(size_t(1), size_t(0)));
  EXPECT_EQ(count([](A a, A, A c) { return a / 0.0f + c; }), std::make_pair(size_t(0), size_t(0)));
  // Two products in one sum: one contracts.
  EXPECT_EQ(count([](A a, A b, A c) { return a * b + c * c; }), std::make_pair(size_t(1), size_t(1)));
  // A product read twice stays a product.
  EXPECT_EQ(count([](A a, A b, A c) {
              const ts::Array p = a * b;
              return (p + c) * p;
            }),
            std::make_pair(size_t(0), size_t(2)));
  // Integers and half types are not contracted.
  auto of_dtype = [&](ts::DType d) {
    ts::ir::Program p = lower(
        [](std::span<const ts::Array> a) { return std::vector<ts::Array>{a[0] * a[1] + a[2]}; },
        {x.astype(d), y.astype(d), z.astype(d)});
    return count_prim(p, "fma");
  };
  EXPECT_EQ(of_dtype(ts::f64), 1u);
  EXPECT_EQ(of_dtype(ts::int32), 0u);
  EXPECT_EQ(of_dtype(ts::f16), 0u);
  EXPECT_EQ(of_dtype(ts::bf16), 0u);
  {
    ContractionSetting off("0");
    EXPECT_EQ(count([](A a, A b, A c) { return a * b + c; }), std::make_pair(size_t(0), size_t(1)));
  }
}

// Fused (every schedule) and unfused runs of the contracted program give std::fma's bits; the
// uncontracted evaluation (eager) is within the documented bound: half an ulp of the product
// plus one ulp of the result.
template <class T> void check_values() {
  ContractionSetting on("1");
  const int64_t rows = 37, cols = 301;  // not a multiple of the vector width
  const std::vector<T> va = values<T>(rows * cols, 4), vb = values<T>(rows * cols, 5), vc = values<T>(rows * cols, 6);
  const std::vector<ts::Array> args{ts::Array(va, {rows, cols}), ts::Array(vb, {rows, cols}), ts::Array(vc, {rows, cols})};
  auto f = [](std::span<const ts::Array> a) {
    return std::vector<ts::Array>{a[0] * a[1] + a[2], a[2] - a[0] * T(3.5), a[1] * a[2] - a[0]};
  };
  const ts::ir::Program plain = lower(f, args);
  ASSERT_EQ(count_prim(plain, "fma"), 3u) << ts::ir::print_program(plain);
  std::vector<std::vector<T>> want(3, std::vector<T>(va.size()));
  for (size_t i = 0; i < va.size(); ++i) {
    want[0][i] = std::fma(va[i], vb[i], vc[i]);
    want[1][i] = std::fma(-va[i], T(3.5), vc[i]);
    want[2][i] = std::fma(vb[i], vc[i], -va[i]);
  }
  const auto unfused = run(plain, args);
  std::vector<std::vector<ts::Array>> runs{unfused};
  if (ts::compiler::codegen_enabled()) runs.push_back(run(fuse_everything(plain), args));
  for (const auto& outs : runs)
    for (size_t k = 0; k < 3; ++k) expect_same_bits("output " + std::to_string(k), outs[k].template to_vector<T>(), want[k]);
  const auto eager = f(args);
  for (size_t k = 0; k < 3; ++k) {
    const auto got = unfused[k].template to_vector<T>(), plain_values = eager[k].template to_vector<T>();
    for (size_t i = 0; i < got.size(); ++i) {
      const T product = k == 0 ? va[i] * vb[i] : k == 1 ? va[i] * T(3.5) : vb[i] * vc[i];
      const T ulp_result = std::nextafter(std::fabs(got[i]), T(INFINITY)) - std::fabs(got[i]);
      const T ulp_product = std::nextafter(std::fabs(product), T(INFINITY)) - std::fabs(product);
      ASSERT_LE(std::fabs(got[i] - plain_values[i]), ulp_result + ulp_product / 2) << "output " << k << " point " << i;
    }
  }
}

TEST(Contraction, FusedAndUnfusedGiveTheFmaBitsFloat32) { check_values<float>(); }
TEST(Contraction, FusedAndUnfusedGiveTheFmaBitsFloat64) { check_values<double>(); }

// The unfused fma kernel (cpu::fma_block): every length around the vector width and the
// parallel grain, operands broadcast from rank 0 in every combination.
TEST(Contraction, UnfusedFmaKernelBroadcastsAndCoversEveryLength) {
  for (int64_t n : {1, 15, 16, 17, 100, 70000}) {
    const std::vector<float> va = values<float>(n, 7), vb = values<float>(n, 8), vc = values<float>(n, 9);
    for (unsigned scalars = 0; scalars < 8; ++scalars) {
      auto operand = [&](const std::vector<float>& v, unsigned k) {
        return scalars >> k & 1 ? ts::Array(v[0]) : ts::Array(v, {n});
      };
      const ts::Array out = ts::ops::fma(operand(va, 0), operand(vb, 1), operand(vc, 2));
      const auto got = out.to_vector<float>();
      ASSERT_EQ(int64_t(got.size()), scalars == 7 ? 1 : n);
      for (size_t i = 0; i < got.size(); ++i) {
        auto at = [&](const std::vector<float>& v, unsigned k) { return scalars >> k & 1 ? v[0] : v[i]; };
        const float want = std::fma(at(va, 0), at(vb, 1), at(vc, 2));
        ASSERT_EQ(std::memcmp(&got[i], &want, sizeof want), 0) << "n " << n << " broadcast " << scalars << " point " << i;
      }
    }
  }
}

// jit of JAX's cauchy.cdf form at -inf: the product's rounding error survives the
// cancellation when contracted (as under jax.jit: 6.2572632e-09 in float32), and the
// uncontracted program gives the eager 0.
TEST(Contraction, JitContractsAsXlaAndTheSettingTurnsItOff) {
  const ts::Array x(std::vector<float>{-INFINITY}, {1});
  auto cdf = [](const ts::Array& v) { return ts::Array(0.5f) + ts::Array(float(1 / M_PI)) * ts::arctan(v); };
  EXPECT_EQ(cdf(x).to_vector<float>()[0], 0.0f);
  {
    ContractionSetting on("1");
    EXPECT_EQ(ts::jit(cdf)(x).to_vector<float>()[0], 6.2572632e-09f);
  }
  ContractionSetting off("0");
  EXPECT_EQ(ts::jit(cdf)(x).to_vector<float>()[0], 0.0f);
}

// jax.jit(lambda x, d: x / 3 + d) is fma(x, RN(1/3), d) at every point (checked against JAX
// 0.10.2 on 100,000 normal samples: XLA multiplies by the reciprocal, then contracts).
TEST(Contraction, DivisionByALiteralContractsAsItsReciprocal) {
  ContractionSetting on("1");
  const int64_t n = 70001;
  const std::vector<float> vx = values<float>(n, 10), vd = values<float>(n, 11);
  const ts::Array x(vx, {n}), d(vd, {n});
  const auto got = ts::jit([](const ts::Array& a, const ts::Array& b) { return a / 3.0f + b; })(x, d).to_vector<float>();
  const float third = 1.0f / 3.0f;
  for (size_t i = 0; i < got.size(); ++i) {
    const float want = std::fma(vx[i], third, vd[i]);
    ASSERT_EQ(std::memcmp(&got[i], &want, sizeof want), 0) << i << ": " << got[i] << " against " << want;
  }
}

// jit folds arithmetic on literals as XLA's algebraic simplifier does: each rule's result is
// the folded expression's bits, and TESSEL_FP_CONTRACT=0 keeps the written order.
TEST(LiteralArithmetic, FoldsAsXlaDoes) {
  ContractionSetting on("1");
  std::vector<float> xs = values<float>(512, 7);
  xs[0] = -0.0f;
  xs[1] = 0.0f;
  const ts::Array x(xs, {int64_t(xs.size())});
  const float c1 = 1.41421356f, c2 = 5.0f, c3 = 0.3f;
  auto run_jit = [&](auto f) { return ts::jit([f](const ts::Array& a) { return f(a); })(x).template to_vector<float>(); };
  auto expect = [&](const char* what, const std::vector<float>& got, auto want) {
    for (size_t i = 0; i < xs.size(); ++i) {
      const float w = want(xs[i]);
      ASSERT_EQ(std::memcmp(&got[i], &w, sizeof w), 0) << what << " at " << xs[i] << ": " << got[i] << " against " << w;
    }
  };
  using A = const ts::Array&;
  expect("(x * c1) * c2", run_jit([=](A a) { return (a * c1) * c2; }), [=](float v) { return v * (c1 * c2); });
  expect("c2 * (c1 * x)", run_jit([=](A a) { return c2 * (c1 * a); }), [=](float v) { return v * (c1 * c2); });
  expect("(x + c1) + c3", run_jit([=](A a) { return (a + c1) + c3; }), [=](float v) { return v + (c1 + c3); });
  expect("(x - c1) - c3", run_jit([=](A a) { return (a - c1) - c3; }), [=](float v) { return v + (-c1 + -c3); });
  expect("(c1 - x) + c3", run_jit([=](A a) { return (c1 - a) + c3; }), [=](float v) { return (c1 + c3) - v; });
  expect("x / c3", run_jit([=](A a) { return a / c3; }), [=](float v) { return v * (1.0f / c3); });
  // A difference with 0 is the sum with -0: -0 stays -0.
  expect("x - 0", run_jit([](A a) { return a - 0.0f; }), [](float v) { return v; });
  expect("pow(x, 3)", run_jit([](A a) { return ts::pow(a, ts::Array(3.0f)); }), [](float v) { return v * (v * v); });
  expect("pow(x, 2)", run_jit([](A a) { return ts::pow(a, ts::Array(2.0f)); }), [](float v) { return v * v; });
  {
    ContractionSetting off("0");
    expect("(x * c1) * c2, off", run_jit([=](A a) { return (a * c1) * c2; }), [=](float v) { return (v * c1) * c2; });
  }
}

}  // namespace
