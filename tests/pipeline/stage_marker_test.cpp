// enter_stage: the identity everywhere, a forward marker in traced programs whose transpose
// marks the backward boundary, and the stage assignment of a differentiated staged program.
#include <gtest/gtest.h>

#include "compiler/jit_primitive.h"
#include "pipeline/stages.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace pp = tessel::pipeline;

namespace {

// A 3-stage MLP loss: two markers.
ts::Array staged_loss(const ts::Array& w0, const ts::Array& w1, const ts::Array& w2, const ts::Array& x) {
  ts::Array h = ts::tanh(ts::matmul(x, w0));
  h = pp::enter_stage(h);
  h = ts::tanh(ts::matmul(h, w1));
  h = pp::enter_stage(h);
  return ts::sum(ts::matmul(h, w2));
}
ts::Array plain_loss(const ts::Array& w0, const ts::Array& w1, const ts::Array& w2, const ts::Array& x) {
  return ts::sum(ts::matmul(ts::tanh(ts::matmul(ts::tanh(ts::matmul(x, w0)), w1)), w2));
}

struct Params {
  ts::Array w0 = ts::reshape(ts::arange(12, ts::f32), {3, 4}) * 0.1f;
  ts::Array w1 = ts::reshape(ts::arange(16, ts::f32), {4, 4}) * -0.05f;
  ts::Array w2 = ts::reshape(ts::arange(8, ts::f32), {4, 2}) * 0.2f;
  ts::Array x = ts::reshape(ts::arange(6, ts::f32), {2, 3}) * 0.3f;
};

void expect_close(const ts::Array& a, const ts::Array& b) {
  auto u = a.to_vector<float>(), v = b.to_vector<float>();
  ASSERT_EQ(u.size(), v.size());
  for (size_t i = 0; i < u.size(); ++i) EXPECT_NEAR(u[i], v[i], 1e-5f) << i;
}

TEST(StageMarker, IsTheIdentityEagerlyUnderJitGradAndVmap) {
  Params p;
  expect_close(staged_loss(p.w0, p.w1, p.w2, p.x), plain_loss(p.w0, p.w1, p.w2, p.x));
  expect_close(ts::jit(staged_loss)(p.w0, p.w1, p.w2, p.x), plain_loss(p.w0, p.w1, p.w2, p.x));
  auto g = ts::jit(ts::grad<0, 1, 2>(staged_loss))(p.w0, p.w1, p.w2, p.x);
  auto h = ts::grad<0, 1, 2>(plain_loss)(p.w0, p.w1, p.w2, p.x);
  expect_close(std::get<0>(g), std::get<0>(h));
  expect_close(std::get<1>(g), std::get<1>(h));
  expect_close(std::get<2>(g), std::get<2>(h));
  ts::Array batch = ts::stack({p.x, p.x * 2.0f});
  auto per_example = ts::vmap([&](const ts::Array& xi) { return staged_loss(p.w0, p.w1, p.w2, xi); })(batch);
  EXPECT_FLOAT_EQ(per_example.to_vector<float>()[1], plain_loss(p.w0, p.w1, p.w2, p.x * 2.0f).item<float>());
  EXPECT_THROW(pp::enter_stage(ts::Array()), ts::ValueError);
}

TEST(StageMarker, GradOfAStagedFunctionIsStaged) {
  Params p;
  ts::Program prog = ts::make_program(ts::grad<0, 1, 2>(staged_loss), p.w0, p.w1, p.w2, p.x);
  const auto& ir = tessel::compiler::program_of(prog);
  pp::detail::StageAssignment a = pp::detail::assign_stages(ir);
  EXPECT_EQ(a.forward_markers, 2);
  EXPECT_EQ(a.backward_markers, 2) << prog;
  EXPECT_EQ(a.num_stages, 3);
  // Every matmul reading a weight runs in that weight's stage (forward and backward).
  for (size_t i = 0; i < ir.eqns.size(); ++i)
    for (int k = 0; k < 3; ++k)
      for (const auto& in : ir.eqns[i].inputs)
        if (!in.is_literal() && in.var() == ir.invars[size_t(k)]) {
          EXPECT_EQ(a.stage_of_equation[i], k) << ir.eqns[i].prim->name << " reads w" << k;
        }
}

}  // namespace
