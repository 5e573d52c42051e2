// Temporal blocking (src/compiler/loop_blocking.cpp): a scan over carries whose body is one
// loop nest runs two steps per iteration when its length is even, with the values of one
// step per iteration bit for bit; other loops keep their bodies.
#include <gtest/gtest.h>

#include <cstring>

#include "compiler/fusion.h"
#include "compiler/fusion_test_util.h"
#include "compiler/kernel_cache.h"
#include "compiler/loop_blocking.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace {

using fusion_test::run;

ts::Array field(int64_t rows, int64_t cols) {
  std::vector<float> v(size_t(rows * cols));
  for (size_t i = 0; i < v.size(); ++i) v[i] = float((i * 7919) % 1000) * 1e-3f - 0.5f;
  return ts::Array(v, {rows, cols});
}

ts::Array stencil(const ts::Array& u) { return u * 0.5f + ts::roll(u, -1, 0) * 0.25f + ts::roll(u, 1, 1) * 0.25f; }

/// The scan equation of `p` (the first).
const ts::ir::Equation& scan_of(const ts::ir::Program& p) {
  for (const auto& e : p.eqns)
    if (e.prim->name == "scan") return e;
  throw std::runtime_error("no scan");
}

size_t body_size(const ts::ir::Equation& scan) {
  return scan.prim->regions(scan.inputs.size(), scan.params).regions[0].program->eqns.size();
}

bool same_bits(const ts::Array& a, const ts::Array& b) {
  const auto x = a.to_vector<float>(), y = b.to_vector<float>();
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

TEST(LoopBlocking, StencilLoopRunsTwoStepsPerIterationWithTheSameBits) {
  const ts::Array u = field(96, 256);  // 24576 points: one loop nest worth blocking
  auto f = [](std::span<const ts::Array> a) {
    return std::vector<ts::Array>{ts::fori_loop(0, 10, [](const ts::Array&, const ts::Array& x) { return stencil(x); }, a[0])};
  };
  const ts::ir::Program p = fusion_test::lower(f, {u});
  const ts::ir::Program blocked = ts::compiler::block_loop_steps(p, 16384);
  const auto& before = scan_of(p);
  const auto& after = scan_of(blocked);
  EXPECT_EQ(before.params.get_int("length"), 10);
  EXPECT_EQ(after.params.get_int("length"), 5);
  // Blocking simplifies the new body, which contracts its multiply-adds (the body before is
  // contracted where it is compiled).
  const auto& body = *before.prim->regions(before.inputs.size(), before.params).regions[0].program;
  EXPECT_EQ(body_size(after), 2 * ts::compiler::contract_multiply_adds(body).eqns.size());
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "no compiler: the loop is not fused";
  // The unblocked program run as it is (its body fused alone) against the jitted one.
  const ts::Array one_step = run(p, {u})[0];
  EXPECT_TRUE(same_bits(one_step, run(ts::compiler::fuse(p), {u})[0]));
  EXPECT_TRUE(same_bits(one_step, ts::jit([](const ts::Array& x) {
                          return ts::fori_loop(0, 10, [](const ts::Array&, const ts::Array& y) { return stencil(y); }, x);
                        })(u)));
}

TEST(LoopBlocking, OddLengthsReductionsAndSmallCarriesKeepTheirBodies) {
  const ts::Array big = field(96, 256), small = field(8, 8);
  auto loop = [](int64_t n, auto body) {
    return [n, body](std::span<const ts::Array> a) {
      return std::vector<ts::Array>{ts::fori_loop(0, n, [body](const ts::Array&, const ts::Array& x) { return body(x); }, a[0])};
    };
  };
  auto same_length = [](const ts::ir::Program& p) {
    return scan_of(ts::compiler::block_loop_steps(p, 16384)).params.get_int("length") == scan_of(p).params.get_int("length");
  };
  auto stencil_body = [](const ts::Array& x) { return stencil(x); };
  EXPECT_TRUE(same_length(fusion_test::lower(loop(7, stencil_body), {big})));    // odd: no whole blocks
  EXPECT_TRUE(same_length(fusion_test::lower(loop(10, stencil_body), {small})));  // small: no memory pass to save
  auto centred = [](const ts::Array& x) { return x - ts::mean(x, {1}, /*keepdims=*/true); };
  EXPECT_TRUE(same_length(fusion_test::lower(loop(10, centred), {big})));  // a reduction: not one loop nest
}

}  // namespace
