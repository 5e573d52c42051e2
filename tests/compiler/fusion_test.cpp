// The fusion pass and the C++ code generator: fused programs agree with the unfused kernels
// (bitwise for integers, to rounding for floats) on random element-wise / slice / pad /
// concatenate / scatter / broadcast programs, stencils read each input once, and groups
// that would recompute too much store intermediate values instead.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <random>
#include <sstream>

#include "compiler/codegen.h"
#include "compiler/executable.h"
#include "compiler/fusion.h"
#include "compiler/kernel_cache.h"
#include "compiler/fusion_test_util.h"
#include "compiler/passes.h"
#include "core/config.h"
#include "ir/trace.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace {

using fusion_test::count_prim;
using fusion_test::Fn;
using fusion_test::lower;
using fusion_test::run;

/// Options that fuse every group, however small, with one recompute budget at every size.
ts::compiler::FusionOptions fuse_everything(int64_t max_point_cost = 96) {
  ts::compiler::FusionOptions o;
  o.min_elements = 0;
  o.max_point_cost = max_point_cost;
  o.small_point_cost = max_point_cost;
  return o;
}

void expect_same(const std::vector<ts::Array>& fused, const std::vector<ts::Array>& plain, const std::string& what) {
  ASSERT_EQ(fused.size(), plain.size());
  for (size_t k = 0; k < fused.size(); ++k) {
    ASSERT_EQ(fused[k].shape(), plain[k].shape()) << what;
    ASSERT_EQ(fused[k].dtype(), plain[k].dtype()) << what;
    if (ts::is_floating(plain[k].dtype())) {
      auto a = ts::astype(fused[k], ts::f64).to_vector<double>(), b = ts::astype(plain[k], ts::f64).to_vector<double>();
      for (size_t i = 0; i < a.size(); ++i) {
        if (a[i] == b[i]) continue;  // includes infinities
        if (std::isnan(b[i])) {
          EXPECT_TRUE(std::isnan(a[i])) << what << " output " << k << " element " << i;
        } else {
          EXPECT_NEAR(a[i], b[i], 1e-6 * (1 + std::abs(b[i]))) << what << " output " << k << " element " << i;
        }
      }
    } else {
      auto a = ts::astype(fused[k], ts::i64).to_vector<int64_t>(), b = ts::astype(plain[k], ts::i64).to_vector<int64_t>();
      EXPECT_EQ(a, b) << what << " output " << k;
    }
  }
}

/// A random program over arrays of one 2-D shape: element-wise operations, shifted reads
/// (slices of padded arrays), concatenations, static scatters, broadcasts of reductions,
/// flips, transposes, iota and dtype conversions. Returns its last values.
struct RandomProgram {
  ts::DType dtype;
  uint32_t seed;
  int ops;

  std::vector<ts::Array> operator()(std::span<const ts::Array> in) const {
    std::mt19937 rng(seed);
    auto pick = [&](int n) { return int(rng() % uint32_t(n)); };
    std::vector<ts::Array> pool(in.begin(), in.end());
    const int64_t R = in[0].shape()[0], C = in[0].shape()[1];
    const bool flt = ts::is_floating(dtype);
    auto any = [&]() -> const ts::Array& { return pool[size_t(pick(int(pool.size())))]; };
    for (int k = 0; k < ops; ++k) {
      const ts::Array a = any(), b = any();
      ts::Array r;
      switch (pick(12)) {
        case 0: r = a + b; break;
        case 1: r = a - b * b; break;
        case 2: r = flt ? a / (ts::abs(b) + 1) : ts::floor_divide(a, b); break;  // integer division by 0 included
        case 3: r = flt ? ts::tanh(a) : ts::remainder(a, b); break;
        case 4: r = ts::where(a > b, a, -b); break;
        case 5: r = ts::maximum(a, b) + ts::minimum(a, b); break;
        case 6: {  // a shifted read: pad, then slice at an offset
          const int64_t di = pick(3), dj = pick(3);
          ts::Array padded = ts::pad(a, {{1, 1}, {1, 1}}, pick(2) ? "edge" : "constant");
          r = ts::slice(padded, {di, dj}, {di + R, dj + C});
          break;
        }
        case 7: {  // rows from two arrays
          const int64_t cut = 1 + pick(int(R - 1));
          r = ts::concatenate({ts::slice(a, {0, 0}, {cut, C}), ts::slice(b, {cut, 0}, {R, C})}, 0);
          break;
        }
        case 8: {  // a static scatter of a window of b into a
          const int64_t i0 = pick(int(R / 2)), j0 = pick(int(C / 2)), i1 = i0 + 1 + pick(int(R - i0 - 1)),
                        j1 = j0 + 1 + pick(int(C - j0 - 1));
          ts::Array w = ts::slice(b, {0, 0}, {i1 - i0, j1 - j0});
          auto at = a.at({ts::Slice(i0, i1), ts::Slice(j0, j1)});
          r = pick(2) ? at.set(w) : at.add(w);
          break;
        }
        case 9: {  // a reduction (not fused) broadcast back
          ts::Array s = ts::sum(a, {1}, /*keepdims=*/true);
          r = b + ts::broadcast_to(s, {R, C});
          break;
        }
        case 10: r = ts::flip(a, ts::Axes{int64_t(pick(2))}) * 2; break;
        default: {
          ts::Array col = ts::astype(ts::arange(C, ts::i32), dtype);
          r = a + ts::broadcast_to(col, {R, C});
          if (!flt) r = ts::astype(ts::astype(r, ts::f32) * 0.5f, dtype == ts::i32 ? ts::i32 : dtype);
          break;
        }
      }
      pool.push_back(r.astype(dtype));
    }
    // Reductions as epilogues: over the last axis, over everything, and a max.
    const ts::Array& last = pool[pool.size() - 1];
    return {last, pool[pool.size() - 2], pool[pool.size() - 3], ts::sum(last * 2, {1}), ts::sum(ts::abs(last)),
            ts::max(pool[pool.size() - 2] - last, {1})};
  }
};

std::vector<ts::Array> random_inputs(ts::DType dtype, int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<ts::Array> xs;
  for (int k = 0; k < 3; ++k) {
    std::vector<double> v(size_t(rows * cols));
    for (auto& x : v) x = double(int(rng() % 11) - 5) + (ts::is_floating(dtype) ? 0.25 * double(rng() % 4) : 0.0);
    xs.push_back(ts::Array(v, {rows, cols}).astype(dtype));
  }
  return xs;
}

/// Occurrences of `what` in `text`.
size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class FusionRandomPrograms : public ::testing::TestWithParam<std::tuple<ts::DType, uint32_t>> {};

TEST_P(FusionRandomPrograms, FusedAgreeWithUnfusedKernels) {
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "code generation is off (TESSEL_DISABLE_CODEGEN or no compiler)";
  const auto [dtype, seed] = GetParam();
  auto args = random_inputs(dtype, 9, 14, seed);
  ts::ir::Program p = lower(RandomProgram{dtype, seed, 24}, args);
  // A small recompute budget on odd seeds forces intermediate values to be stored.
  ts::ir::Program fused = ts::compiler::fuse(p, fuse_everything(seed % 2 ? 4 : 96));
  ASSERT_GT(count_prim(fused, "fused"), 0u) << ts::ir::print_program(p);
  expect_same(run(fused, args), run(p, args), "seed " + std::to_string(seed));
}

INSTANTIATE_TEST_SUITE_P(Seeds, FusionRandomPrograms,
                         ::testing::Combine(::testing::Values(ts::f32, ts::i32, ts::f64),
                                            ::testing::Values(1u, 2u, 3u, 4u)),
                         [](const auto& info) {
                           return std::string(ts::dtype_name(std::get<0>(info.param))) + "_seed" +
                                  std::to_string(std::get<1>(info.param));
                         });

TEST(Fusion, StencilReadsEachInputOnceAndWritesOnce) {
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "code generation is off";
  const ts::Slice I(1, -1), P(2, ts::none);
  auto f = [&](std::span<const ts::Array> x) {
    const ts::Array &h = x[0], &u = x[1];
    return std::vector<ts::Array>{0.5f * (h[{I, I}] + h[{I, P}]) * u[{I, I}]};
  };
  auto args = random_inputs(ts::f32, 40, 50, 7);
  args.pop_back();
  ts::ir::Program p = lower(f, args);
  ts::ir::Program fused = ts::compiler::fuse(p, fuse_everything());
  ASSERT_EQ(fused.eqns.size(), 1u) << ts::ir::print_program(fused);
  EXPECT_EQ(fused.eqns[0].prim->name, "fused");
  EXPECT_EQ(fused.eqns[0].inputs.size(), 2u);  // h and u, each read once
  expect_same(run(fused, args), run(p, args), "stencil");
}

// Boundary conditions stacked on a stencil (an edge pad, then the periodic columns written
// by static scatters, as the shallow-water demo enforces them) nest range tests on the same
// rows and columns. Inside a branch the generator knows the branch's tests hold, so the
// edge body never tests again what an enclosing branch tested; the values are the unfused
// kernels'.
TEST(Fusion, EdgeBodyBranchesDoNotRetestWhatEnclosingBranchesTested) {
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "code generation is off";
  const ts::Slice I(1, -1), P(2, ts::none), all;
  auto f = [&](std::span<const ts::Array> x) {
    auto enforce = [&](const ts::Array& a) {
      const int64_t C = a.shape()[1];
      ts::Array b = a.at({all, ts::Slice(C - 1, C)}).set(a[{all, ts::Slice(1, 2)}]);
      return b.at({all, ts::Slice(0, 1)}).set(b[{all, ts::Slice(C - 2, C - 1)}]);
    };
    const ts::Array hc = enforce(ts::pad(x[0][{I, I}], {{1, 1}, {1, 1}}, "edge"));
    const ts::Array fe = enforce(ts::pad(0.5f * (hc[{I, I}] + hc[{I, P}]) * x[1][{I, I}], {{1, 1}, {1, 1}}));
    return std::vector<ts::Array>{fe[{I, I}] - fe[{I, ts::Slice(0, -2)}] + hc[{P, I}]};
  };
  auto args = random_inputs(ts::f32, 30, 40, 5);
  args.pop_back();
  const ts::ir::Program p = lower(f, args);
  ts::compiler::FusionOptions o = fuse_everything(1 << 20);  // one loop nest: recompute everything
  const ts::ir::Program fused = ts::compiler::fuse(p, o);
  ASSERT_EQ(fused.eqns.size(), 1u) << ts::ir::print_program(fused);
  expect_same(run(fused, args), run(p, args), "boundary conditions");
  const std::string source =
      ts::compiler::generate_kernel(*fused.eqns[0].params.get<ts::ir::ProgramRef>("program"), "kernel");
  // The range tests ("(i0 >= 1)", ...) of each enclosing `if` whose branch is being read.
  std::vector<std::vector<std::string>> enclosing;
  std::istringstream lines(source);
  size_t ifs = 0;
  for (std::string line; std::getline(lines, line);) {
    line.erase(0, line.find_first_not_of(' '));
    if (line.rfind("if (", 0) == 0 && line.size() > 7 && line.substr(line.size() - 3) == ") {") {
      ++ifs;
      std::vector<std::string> tests;
      const std::string cond = line.substr(4, line.size() - 7);
      for (size_t at = 0, next; at != std::string::npos; at = next == std::string::npos ? next : next + 4) {
        next = cond.find(" && ", at);
        tests.push_back(cond.substr(at, next == std::string::npos ? std::string::npos : next - at));
      }
      for (const auto& outer : enclosing)
        for (const std::string& t : tests)
          EXPECT_EQ(std::count(outer.begin(), outer.end(), t), 0) << t << " tested again inside a branch that tested it";
      enclosing.push_back(std::move(tests));
    } else if (line == "} else {") {
      enclosing.back().clear();  // the else branch knows only that the test failed
    } else if (line == "}" || line == "};") {
      if (!enclosing.empty()) enclosing.pop_back();
    } else if (!line.empty() && line.back() == '{') {
      enclosing.emplace_back();  // a loop or a lambda
    }
  }
  EXPECT_GT(ifs, 0u) << source;
}

/// `f` on `args` fused into one loop nest (checked, with its values against the unfused
/// kernels'): the nest's generated source ("" when it did not fuse into one).
std::string one_nest_source(const auto& f, const std::vector<ts::Array>& args, const std::string& what) {
  const ts::ir::Program p = lower(f, args);
  const ts::ir::Program fused = ts::compiler::fuse(p, fuse_everything(1 << 20));
  EXPECT_EQ(fused.eqns.size(), 1u) << what << ": " << ts::ir::print_program(fused);
  if (fused.eqns.size() != 1) return "";
  expect_same(run(fused, args), run(p, args), what);
  return ts::compiler::generate_kernel(*fused.eqns[0].params.get<ts::ir::ProgramRef>("program"), "kernel");
}

// The edge columns of the interior rows (left and right of the interior box) run bodies
// specialised to their own boxes, not the generic body per point: only the rows outside the
// interior box call it. Columns of an edge segment that answer a test differently still
// test it at run time, and every value is the unfused kernels' (bit for bit for integers).
TEST(Fusion, EdgeColumnsOfInteriorRowsRunSpecialisedBodies) {
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "code generation is off";
  const ts::Slice I(1, -1), P(2, 41), M(0, 39);
  auto f = [&](std::span<const ts::Array> x) {
    // Three columns of edge padding on the left, two of zeros on the right (30x44), then a
    // difference across columns: the edge segments hold columns with different cases.
    const ts::Array b = ts::pad(ts::pad(x[0][{I, I}], {{1, 1}, {3, 0}}, "edge"), {{0, 0}, {0, 2}});
    const ts::Array c = b[{I, P}] - b[{I, M}] * x[1][{I, M}];
    return std::vector<ts::Array>{ts::pad(c, {{1, 1}, {2, 1}}) + 1};
  };
  for (ts::DType dtype : {ts::i32, ts::f32}) {
    auto args = random_inputs(dtype, 30, 41, 11);
    args.pop_back();
    const std::string source = one_nest_source(f, args, std::string("edge columns, ") + ts::dtype_name(dtype));
    // Once for the rows outside every specialised body, and for the edge columns of each band
    // of edge rows (EdgeRowsRunBodiesSpecialisedToTheirBands): none in the interior rows.
    EXPECT_EQ(count_of(source, "generic(i0, i1);"), 1 + 2 * count_of(source, "} else if (i0 >= ")) << source;
  }
}

// The rows outside the interior box (here the last row, whose roll wraps to the first, and
// the rows of a pad) run bodies specialised to their bands of rows, over the interior
// columns, instead of the generic body at every point; the values are the unfused ones.
TEST(Fusion, EdgeRowsRunBodiesSpecialisedToTheirBands) {
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "code generation is off";
  auto f = [](std::span<const ts::Array> x) {
    const ts::Array u = x[0] * 0.5f + ts::roll(x[0], -1, 0) * 0.25f + ts::roll(x[0], 1, 1) * 0.25f;
    return std::vector<ts::Array>{ts::pad(u, {{2, 1}, {0, 0}}) * 3.0f};
  };
  for (ts::DType dtype : {ts::f32, ts::f64}) {
    auto args = random_inputs(dtype, 40, 64, 5);
    args.resize(1);
    const std::string source = one_nest_source(f, args, std::string("edge rows, ") + ts::dtype_name(dtype));
    // Rows [0, 2) (the pad), 41 (the wrap) and 42 (the pad): 3 bands around the interior
    // rows [2, 41).
    EXPECT_EQ(count_of(source, "} else if (i0 >= "), 3u) << source;
    EXPECT_NE(source.find("} else if (i0 >= 41 && i0 < 42) {"), std::string::npos) << source;
  }
}

// A window at starts known only when the program runs (a loop counter, a device's offset in
// a partitioned program) is read by the loop nest that uses it, not copied out first; starts
// past either end clamp, negative ones count from the end, as the unfused kernel does.
TEST(Fusion, DynamicSlicesAreReadInPlaceByTheirLoopNest) {
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "code generation is off";
  auto f = [](std::span<const ts::Array> x) {
    const ts::Array& h = x[0];
    ts::Array w = ts::dynamic_slice(h, {x[1], x[2]}, {30, 40});
    ts::Array v = ts::dynamic_slice(h, {x[2], ts::Array(int32_t(3))}, {30, 40});
    return std::vector<ts::Array>{ts::exp(w) * 2.0f + v};
  };
  auto base = random_inputs(ts::f32, 40, 50, 11);
  for (auto [r, c] : std::vector<std::pair<int32_t, int32_t>>{{0, 0}, {7, 3}, {10, 10}, {25, 2}, {-4, 1}, {-90, 99}}) {
    std::vector<ts::Array> args{base[0], ts::Array(r), ts::Array(c)};
    ts::ir::Program p = lower(f, args);
    ts::ir::Program fused = ts::compiler::fuse(p, fuse_everything());
    ASSERT_EQ(count_prim(fused, "dynamic_slice"), 0u) << ts::ir::print_program(fused);
    ASSERT_EQ(count_prim(fused, "fused"), 1u) << ts::ir::print_program(fused);
    expect_same(run(fused, args), run(p, args), "starts " + std::to_string(r) + ", " + std::to_string(c));
  }
}

TEST(Fusion, RecomputeBudgetStoresValuesReadAtManyOffsets) {
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "code generation is off";
  // Three nested 5-point smoothings: inlined, the innermost would run 125 times per point.
  auto smooth = [](const ts::Array& a) {
    ts::Array p = ts::pad(a, {{1, 1}, {1, 1}}, "edge");
    auto at = [&](int64_t i, int64_t j) { return ts::slice(p, {i, j}, {i + a.shape()[0], j + a.shape()[1]}); };
    return 0.2f * (at(1, 1) + at(0, 1) + at(2, 1) + at(1, 0) + at(1, 2));
  };
  auto f = [&](std::span<const ts::Array> x) { return std::vector<ts::Array>{smooth(smooth(smooth(x[0])))}; };
  auto args = random_inputs(ts::f32, 30, 31, 3);
  args.resize(1);
  ts::ir::Program p = lower(f, args);
  ts::ir::Program cheap = ts::compiler::fuse(p, fuse_everything(16));
  ts::ir::Program greedy = ts::compiler::fuse(p, fuse_everything(1000));
  EXPECT_GT(count_prim(cheap, "fused"), count_prim(greedy, "fused"));
  EXPECT_EQ(count_prim(greedy, "fused"), 1u);
  expect_same(run(cheap, args), run(p, args), "budget 16");
  expect_same(run(greedy, args), run(p, args), "budget 1000");
}

TEST(Fusion, ReductionsFuseAsEpilogues) {
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "code generation is off";
  // Softmax rows: the max and the sum read the exponentials without storing them.
  auto f = [](std::span<const ts::Array> x) {
    ts::Array m = ts::max(x[0], {1}, /*keepdims=*/true);
    ts::Array e = ts::exp(x[0] - m);
    return std::vector<ts::Array>{e / ts::sum(e, {1}, /*keepdims=*/true), ts::sum(x[0] * x[0])};
  };
  auto args = random_inputs(ts::f32, 64, 300, 5);
  args.resize(1);
  ts::ir::Program p = lower(f, args);
  ts::ir::Program fused = ts::compiler::fuse(p, fuse_everything());
  EXPECT_EQ(count_prim(fused, "reduce_sum") + count_prim(fused, "reduce_max"), 0u) << ts::ir::print_program(fused);
  expect_same(run(fused, args), run(p, args), "softmax");
}

TEST(Fusion, DevicesRunFusedKernelsConcurrentlyOnTheSharedArena) {
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "code generation is off";
  const ts::Slice I(1, -1), P(2, ts::none);
  auto f = ts::jit([&](const ts::Array& h) { return ts::sin(h[{I, I}]) * h[{P, I}] + h[{I, P}]; });
  ts::Array h = ts::reshape(ts::arange(0.0, 1.0, 1.0 / (256 * 300), ts::f32), {256, 300});
  const auto want = f(h).to_vector<float>();
  std::vector<ts::Array> outs;
  for (int round = 0; round < 4; ++round)
    for (const ts::Device& d : ts::devices()) outs.push_back(f(ts::device_put(h, d)));  // all queued at once
  for (const ts::Array& o : outs) EXPECT_EQ(o.to_vector<float>(), want);
}

TEST(Fusion, BadKnobsNameTheVariable) {
  for (const char* bad : {"-3", "lots"}) {
    setenv("TESSEL_FUSION_MAX_POINT_COST", bad, 1);
    try {
      ts::compiler::fusion_options();
      ADD_FAILURE() << "no error for " << bad;
    } catch (const ts::ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("TESSEL_FUSION_MAX_POINT_COST"), std::string::npos) << e.what();
    }
  }
  unsetenv("TESSEL_FUSION_MAX_POINT_COST");
  EXPECT_EQ(ts::compiler::fusion_options().max_point_cost, 256);
}

// Options made in code start from the defaults of the configuration table.
TEST(Fusion, OptionDefaultsAreTheConfigTables) {
  const ts::compiler::FusionOptions o;
  EXPECT_EQ(o.min_elements, ts::config::entry(ts::config::Var::kFusionMinElements).default_int);
  EXPECT_EQ(o.max_point_cost, ts::config::entry(ts::config::Var::kFusionMaxPointCost).default_int);
  EXPECT_EQ(o.small_point_cost, ts::config::entry(ts::config::Var::kFusionSmallPointCost).default_int);
  EXPECT_EQ(o.max_outputs, ts::config::entry(ts::config::Var::kFusionMaxOutputs).default_int);
}

TEST(Fusion, SmallGroupsAndUnsupportedDtypesStayUnfused) {
  auto f = [](std::span<const ts::Array> x) { return std::vector<ts::Array>{ts::sin(x[0]) * 2.0f + x[0]}; };
  std::vector<ts::Array> small{ts::ones({4, 4}, ts::f32)};
  ts::ir::Program p = lower(f, small);
  EXPECT_EQ(count_prim(ts::compiler::fuse(p), "fused"), 0u);  // below the default size threshold
  std::vector<ts::Array> halves{ts::ones({256, 256}, ts::f16)};
  ts::ir::Program h = lower(f, halves);
  EXPECT_EQ(count_prim(ts::compiler::fuse(h, fuse_everything()), "fused"), 0u);
}

TEST(Fusion, ASmallLineOfALargeComputedValueDoesNotStoreIt) {
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "code generation is off";
  // A halo line sent away (here: read by an unfused cumsum) is computed by its own small
  // loop nest; the 300 x 300 value it comes from stays inline in the big loop nest.
  auto f = [](std::span<const ts::Array> x) {
    const ts::Array y = ts::sin(x[0]) * 2.0f + x[0];
    const ts::Array line = y[{0, ts::Slice()}];
    return std::vector<ts::Array>{ts::cumsum(line, 0), y[{ts::Slice(1, -1), ts::Slice(1, -1)}] * 3.0f};
  };
  std::vector<ts::Array> args{ts::reshape(ts::arange(0.0, 1.0, 1.0 / 90000, ts::f32), {300, 300})};
  ts::ir::Program p = lower(f, args);
  ts::ir::Program fused = ts::compiler::fuse(p);  // default options: lines are below the size threshold
  EXPECT_EQ(count_prim(fused, "fused"), 2u) << ts::ir::print_program(fused);
  for (const auto& e : fused.eqns)
    for (const auto& out : e.outputs) EXPECT_NE(out->aval.shape, (ts::Shape{300, 300})) << ts::ir::print_program(fused);
  expect_same(run(fused, args), run(p, args), "line of a computed value");
}

TEST(Fusion, JitOfALargeElementwiseExpressionUsesOneKernel) {
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "code generation is off";
  auto f = ts::jit([](const ts::Array& a, const ts::Array& b) { return ts::exp(-(a * a)) * b + a / (b * b + 1.0f); });
  ts::Array a = ts::arange(0.0, 1.0, 1.0 / 65536, ts::f32), b = a + 0.5f;
  std::string text = f.lower(a, b).compile().as_text();
  EXPECT_NE(text.find("fused"), std::string::npos) << text;
  auto got = f(a, b).to_vector<float>();
  auto av = a.to_vector<float>(), bv = b.to_vector<float>();
  for (size_t i = 0; i < got.size(); i += 997)
    EXPECT_NEAR(got[i], std::exp(-(av[i] * av[i])) * bv[i] + av[i] / (bv[i] * bv[i] + 1.0f), 1e-6f);
}

}  // namespace
