// Division by a value that does not change along the innermost loop (ir::Primitive::quotient,
// docs/performance.md "Division by a row's value"): fused loop nests multiply by the
// reciprocal, at most 1 ulp from the plain evaluation's quotient, and divide where the
// reciprocal would leave the normal range, so zeros, infinities, NaN, subnormal and huge
// denominators give the plain evaluation's values exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>

#include "compiler/codegen.h"
#include "compiler/fusion.h"
#include "compiler/fusion_test_util.h"
#include "compiler/kernel_cache.h"
#include "ir/program.h"

namespace {

namespace ts = tessel;
using fusion_test::lower;
using fusion_test::run;

/// Distance in units in the last place between two finite values of the same sign class
/// (their bit patterns as a monotonic integer line).
template <class T> int64_t ulp_distance(T a, T b) {
  using I = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
  auto line = [](T v) {
    I i;
    std::memcpy(&i, &v, sizeof(T));
    return i < 0 ? int64_t(std::numeric_limits<I>::min()) - int64_t(i) : int64_t(i);
  };
  return std::abs(line(a) - line(b));
}

/// Compares the fused program's values with the plain evaluation's: NaN where it is NaN,
/// equal infinities and zeros (with their sign), at most 1 ulp elsewhere. Returns how many
/// points differ at all (the reciprocal's rounding shows on some of random data).
template <class T> int64_t expect_within_one_ulp(const std::string& what, const std::vector<T>& got,
                                                 const std::vector<T>& want, int64_t max_ulps = 1) {
  EXPECT_EQ(got.size(), want.size()) << what;
  int64_t differ = 0;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << " point " << i;
    } else if (std::isinf(want[i]) || want[i] == 0) {
      EXPECT_EQ(got[i], want[i]) << what << " point " << i;
      EXPECT_EQ(std::signbit(got[i]), std::signbit(want[i])) << what << " point " << i;
    } else {
      const int64_t d = ulp_distance(got[i], want[i]);
      EXPECT_LE(d, max_ulps) << what << " point " << i << ": " << got[i] << " against " << want[i];
      differ += d != 0;
    }
  }
  return differ;
}

ts::compiler::FusionOptions fuse_everything() {
  ts::compiler::FusionOptions o;
  o.min_elements = 0;
  return o;
}

/// Rows of `cols` values: random magnitudes over many binades, then rows of special values.
template <class T> std::vector<T> numerators(int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> unit(-1, 1);
  std::vector<T> v(size_t(rows * cols));
  for (T& x : v) x = T(std::ldexp(unit(rng), int(rng() % 40) - 20));
  v[1] = T(-0.0);
  v[2] = std::numeric_limits<T>::infinity();
  v[3] = -std::numeric_limits<T>::infinity();
  v[4] = std::numeric_limits<T>::quiet_NaN();
  v[5] = std::numeric_limits<T>::max();
  v[6] = std::numeric_limits<T>::denorm_min();
  return v;
}

/// One denominator per row: ordinary values, then 0, -0, +-inf, NaN, a subnormal, a tiny
/// normal, a huge value (its reciprocal would be subnormal) and the largest value.
template <class T> std::vector<T> denominators(int64_t rows, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> unit(0.5, 300);
  std::vector<T> s(static_cast<size_t>(rows));
  for (T& x : s) x = T(unit(rng) * (rng() % 2 ? 1 : -1));
  const T specials[] = {T(0),
                        T(-0.0),
                        std::numeric_limits<T>::infinity(),
                        -std::numeric_limits<T>::infinity(),
                        std::numeric_limits<T>::quiet_NaN(),
                        std::numeric_limits<T>::denorm_min() * T(3),
                        std::numeric_limits<T>::min() * T(1.5),
                        std::numeric_limits<T>::max() / T(4),
                        std::numeric_limits<T>::max(),
                        T(3)};
  for (size_t i = 0; i < std::size(specials) && i < s.size(); ++i) s[i] = specials[i];
  return s;
}

template <class T> void check_quotients(ts::DType dtype) {
  const int64_t rows = 48, cols = 200;
  const std::string name = ts::dtype_name(dtype);
  const ts::Array x(numerators<T>(rows, cols, 1), {rows, cols});
  const ts::Array s(denominators<T>(rows, 2), {rows, 1});
  const std::vector<ts::Array> args{x, s};
  int64_t differ = 0;
  // a stored row value read through a broadcast; a constant; a row's own reduction (a
  // row-phased loop nest: the reduction is a register of the row)
  const std::vector<std::pair<std::string, fusion_test::Fn>> programs{
      {"x / broadcast(s)", [](std::span<const ts::Array> a) { return std::vector<ts::Array>{-a[0] / a[1]}; }},
      {"x / 3", [](std::span<const ts::Array> a) { return std::vector<ts::Array>{-a[0] / 3.0}; }},
      {"x / sum(x)",
       [](std::span<const ts::Array> a) {
         ts::Array e = ts::abs(a[0]);
         return std::vector<ts::Array>{e / ts::sum(e, {-1}, true)};
       }},
  };
  for (const auto& [what, f] : programs) {
    ts::ir::Program fused = ts::compiler::fuse(lower(f, args), fuse_everything());
    const auto got = run(fused, args)[0].template to_vector<T>();
    const auto want = f(args)[0].template to_vector<T>();
    // x / sum(x): the fused sum itself may round differently from the unfused one (lanes,
    // docs/performance.md "Reductions that vectorize"): a few ulps more (a sum of positive terms, within the documented bound).
    differ += expect_within_one_ulp(what + " " + name, got, want, what == "x / sum(x)" ? 8 : 1);
  }
  // The reciprocal is in use: some of the random points round differently from a divide.
  EXPECT_GT(differ, 0) << name;
}

TEST(Quotient, FusedDivisionByARowValueIsWithinOneUlpAndExactOnSpecialDenominators) {
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "code generation is off";
  check_quotients<float>(ts::f32);
  check_quotients<double>(ts::f64);
}

// A row-phased loop nest (a row's max, then a phase reading it) reads a stored row value
// through a broadcast from its input buffer: invariant along the row, so it multiplies by the
// reciprocal as a single loop nest does (within the product's rounding: y and its max each
// within 1 ulp, their product within 3).
TEST(Quotient, RowPhasedLoopNestMultipliesByAStoredRowValue) {
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "code generation is off";
  const int64_t rows = 48, cols = 200;
  const std::vector<ts::Array> args{ts::Array(numerators<float>(rows, cols, 7), {rows, cols}),
                                    ts::Array(denominators<float>(rows, 8), {rows, 1})};
  auto f = [](std::span<const ts::Array> a) {
    ts::Array y = -a[0] / a[1];
    return std::vector<ts::Array>{y * ts::max(y, {-1}, true)};
  };
  ts::ir::Program fused = ts::compiler::fuse(lower(f, args), fuse_everything());
  ASSERT_EQ(fused.eqns.size(), 1u) << ts::ir::print_program(fused);
  ASSERT_EQ(fused.eqns[0].prim->name, "fused_rows") << ts::ir::print_program(fused);
  const auto got = run(fused, args)[0].to_vector<float>();
  const auto want = f(args)[0].to_vector<float>();
  EXPECT_GT(expect_within_one_ulp("y * max(y), y = -x / s", got, want, 3), 0);
}

// A denominator that changes along the innermost loop keeps the divide: equal to the plain
// evaluation bit for bit.
TEST(Quotient, DenominatorVaryingAlongTheRowDivides) {
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "code generation is off";
  const int64_t rows = 32, cols = 200;
  const std::vector<ts::Array> args{ts::Array(numerators<float>(rows, cols, 3), {rows, cols}),
                                    ts::Array(numerators<float>(rows, cols, 4), {rows, cols})};
  auto f = [](std::span<const ts::Array> a) { return std::vector<ts::Array>{-a[0] / (a[1] + 1.0f)}; };
  ts::ir::Program fused = ts::compiler::fuse(lower(f, args), fuse_everything());
  const auto got = run(fused, args)[0].to_vector<float>();
  const auto want = f(args)[0].to_vector<float>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << i;
    } else {
      ASSERT_EQ(got[i], want[i]) << i;
    }
  }
}

// The generated source multiplies by the reciprocal under the normal-range test, computed
// once per row before the interior loop, which has two versions: one multiplying (no divide
// in it), taken when the row's reciprocal is normal, and one dividing.
TEST(Quotient, GeneratedSourceMultipliesByTheReciprocal) {
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "code generation is off";
  const std::vector<ts::Array> args{ts::Array(numerators<float>(16, 64, 5), {16, 64}),
                                    ts::Array(denominators<float>(16, 6), {16, 1})};
  auto f = [](std::span<const ts::Array> a) { return std::vector<ts::Array>{-a[0] / a[1]}; };
  ts::ir::Program fused = ts::compiler::fuse(lower(f, args), fuse_everything());
  ASSERT_EQ(fused.eqns.size(), 1u) << ts::ir::print_program(fused);
  const std::string src =
      ts::compiler::generate_kernel(*fused.eqns[0].params.get<ts::ir::ProgramRef>("program"), "kernel");
  EXPECT_NE(src.find("float(1) / "), std::string::npos) << src;
  EXPECT_NE(src.find("0x1p126f"), std::string::npos) << src;
  const size_t fast = src.find("if (qb_ok) {"), exact = src.find("} else {", fast);
  ASSERT_NE(fast, std::string::npos) << src;
  ASSERT_NE(exact, std::string::npos) << src;
  const std::string multiplying = src.substr(fast, exact - fast);
  EXPECT_NE(multiplying.find("* qb_r0"), std::string::npos) << multiplying;
  EXPECT_EQ(multiplying.find(" / "), std::string::npos) << multiplying;
  EXPECT_EQ(multiplying.find("0x1p126f"), std::string::npos) << multiplying;
  if (std::getenv("TESSEL_TEST_PRINT_SOURCE")) std::fputs(src.c_str(), stderr);
}

/// Every element of `got` has the bits of the same element of `want`.
void expect_same_bits(const std::string& what, const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(std::memcmp(&got[i], &want[i], sizeof(float)), 0) << what << " point " << i << ": " << got[i]
                                                                 << " against " << want[i];
}

// A loop nest's innermost loop variable is the domain's last, not the last index of a value's
// map. A rank-1 loop nest reading one row of a 2-D quotient (the halo row that the mpi4jax
// shallow-water step sends) indexes the quotient by (3, i0): its denominator varies along
// i0, so the nest divides; it was judged invariant along "i1" and hoisted before the loop,
// where i0 is undeclared, and the kernel failed to compile (jit ran unfused). Conversely a
// 1-D quotient broadcast over the rows of a 2-D nest is indexed by (i1) alone. Both must
// compile fused and give the bits of the same program run unfused (y * y + 2 is one
// multiply-add there: compiler::contract_multiply_adds).
TEST(Quotient, ValuesOfAnotherRankThanTheLoopNestAreTestedAlongItsInnermostLoop) {
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "code generation is off";
  const int64_t rows = 6, cols = 1000;
  std::vector<float> positive = numerators<float>(rows, cols + 1, 11);
  for (float& v : positive) v = std::fabs(v) + 0.5f;
  const std::vector<ts::Array> args{ts::Array(numerators<float>(rows, cols, 10), {rows, cols}),
                                    ts::Array(positive, {rows, cols + 1}),
                                    ts::Array(numerators<float>(1, cols, 12), {cols})};
  const std::vector<std::pair<std::string, fusion_test::Fn>> programs{
      {"row 3 of x / (0.25 * (h[:, :-1] + h[:, 1:]))",
       [](std::span<const ts::Array> a) {
         const ts::Array h = a[1];
         const ts::Array mean = 0.25f * (ts::slice(h, {0, 0}, {rows, cols}) + ts::slice(h, {0, 1}, {rows, cols + 1}));
         return std::vector<ts::Array>{ts::reshape(ts::slice(a[0] / mean, {3, 0}, {4, cols}), {cols})};
       }},
      {"x + broadcast(y / (y + 2))",
       [](std::span<const ts::Array> a) {
         return std::vector<ts::Array>{a[0] + ts::broadcast_to(a[2] / (a[2] * a[2] + 2.0f), {rows, cols})};
       }},
  };
  for (const auto& [what, f] : programs) {
    const int64_t failures = ts::compiler::codegen_stats().failures;
    const ts::ir::Program plain = lower(f, args);
    ts::ir::Program fused = ts::compiler::fuse(plain, fuse_everything());
    EXPECT_EQ(ts::compiler::codegen_stats().failures, failures) << what;
    ASSERT_EQ(fusion_test::count_prim(fused, "fused"), 1u) << what << "\n" << ts::ir::print_program(fused);
    expect_same_bits(what, run(fused, args)[0].to_vector<float>(), run(plain, args)[0].to_vector<float>());
  }
}

}  // namespace
