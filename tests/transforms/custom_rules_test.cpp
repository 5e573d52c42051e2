// custom_jvp, custom_vjp and checkpoint: the user's rules are the ones used (under jvp,
// grad, jit and vmap), and checkpoint recomputes what its policy does not save (counted with
// a test-only primitive).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <tuple>
#include <utility>
#include <vector>

#include "ir/primitive.h"
#include "ir/trace.h"
#include "tessel/control_flow.h"
#include "transforms/check_transforms.h"
#include "transforms/counting_identity.h"

namespace {
using namespace transform_testing;
using V = std::vector<ts::Array>;
using T1 = std::tuple<ts::Array>;

std::vector<double> vals(const ts::Array& a) { return a.astype(ts::f64).to_vector<double>(); }
ts::Array f64s(std::vector<double> v) { return ts::Array(v); }

// ===================================== custom_jvp =====================================

// sin, whose rule claims the derivative is 3 cos: results show which rule ran.
auto sin_with_3cos = ts::custom_jvp([](const ts::Array& x) { return ts::sin(x); },
                                    [](const T1& p, const T1& t) {
                                      const ts::Array& x = std::get<0>(p);
                                      return std::make_pair(ts::sin(x), ts::cos(x) * 3.0 * std::get<0>(t));
                                    });

TEST(CustomJvp, PlainCallsRunTheFunction) {
  ts::Array x = f64s({0.1, 0.5, -2.0});
  expect_close(sin_with_3cos(x), ts::sin(x), 1e-15, "value");
  expect_close(ts::jit(sin_with_3cos)(x), ts::sin(x), 1e-15, "jit value");
  expect_close(ts::vmap(sin_with_3cos)(ts::stack({x, x * 2.0})), ts::sin(ts::stack({x, x * 2.0})), 1e-15, "vmap value");
}

TEST(CustomJvp, JvpAndGradUseTheRule) {
  ts::Array x = f64s({0.1, 0.5, -2.0}), t = f64s({1.0, -2.0, 0.5});
  auto [y, ty] = ts::jvp(sin_with_3cos, x, t);
  expect_close(y, ts::sin(x), 1e-15, "jvp primal");
  expect_close(ty, ts::cos(x) * 3.0 * t, 1e-15, "jvp tangent from the rule");
  auto loss = [](const ts::Array& z) { return ts::sum(sin_with_3cos(z)); };
  expect_close(ts::grad(loss)(x), ts::cos(x) * 3.0, 1e-15, "grad transposes the rule");
  auto [pv, pullback] = ts::vjp(sin_with_3cos, x);
  expect_close(pullback(t), ts::cos(x) * 3.0 * t, 1e-15, "vjp");
}

TEST(CustomJvp, UnderJit) {
  ts::Array x = f64s({0.1, 0.5, -2.0}), t = f64s({1.0, -2.0, 0.5});
  auto loss = [](const ts::Array& z) { return ts::sum(sin_with_3cos(z)); };
  expect_close(ts::jit(ts::grad(loss))(x), ts::cos(x) * 3.0, 1e-15, "jit(grad)");
  auto jf = ts::jit([](const ts::Array& a, const ts::Array& b) { return ts::jvp(sin_with_3cos, a, b).second; });
  expect_close(jf(x, t), ts::cos(x) * 3.0 * t, 1e-15, "jit(jvp)");
  // A jitted custom_jvp function differentiated from outside.
  expect_close(ts::grad([](const ts::Array& z) { return ts::sum(ts::jit(sin_with_3cos)(z)); })(x), ts::cos(x) * 3.0,
               1e-15, "grad(jit(custom_jvp))");
}

TEST(CustomJvp, UnderVmap) {
  ts::Array xs = ts::stack({f64s({0.1, 0.5, -2.0}), f64s({1.0, 2.0, 3.0})});
  auto loss = [](const ts::Array& z) { return ts::sum(sin_with_3cos(z)); };
  expect_close(ts::vmap(ts::grad(loss))(xs), ts::cos(xs) * 3.0, 1e-15, "vmap(grad)");
  expect_close(ts::grad([](const ts::Array& z) { return ts::sum(ts::vmap(sin_with_3cos)(z)); })(xs), ts::cos(xs) * 3.0,
               1e-15, "grad(vmap)");
  expect_close(ts::jit(ts::vmap(ts::grad(loss)))(xs), ts::cos(xs) * 3.0, 1e-15, "jit(vmap(grad))");
  expect_close(ts::vmap(ts::grad(loss), {1}, {1})(ts::transpose(xs)), ts::transpose(ts::cos(xs) * 3.0), 1e-15,
               "vmap(grad) in_axes 1, out_axes 1");
}

// Two arguments (one unmapped under vmap) and a rule written with both tangents.
auto scaled_product = ts::custom_jvp(
    [](const ts::Array& x, const ts::Array& y) { return x * y; },
    [](const std::tuple<ts::Array, ts::Array>& p, const std::tuple<ts::Array, ts::Array>& t) {
      auto [x, y] = p;
      auto [tx, ty] = t;
      return std::make_pair(x * y, tx * y + x * ty);
    });

TEST(CustomJvp, TwoArgumentsAgreeWithFiniteDifferencesAndVmap) {
  check_grads([](const V& a) { return scaled_product(a[0], a[1]); }, {uniform({3}, 1), uniform({3}, 2)});
  check_vmap([](const V& a) { return scaled_product(a[0], a[1]); }, {uniform({4, 3}, 1), uniform({3}, 2)},
             {0, ts::none});
  check_vmap([](const V& a) { return scaled_product(a[0], a[1]); }, {uniform({3}, 1), uniform({3, 4}, 2)},
             {ts::none, 1}, 1);
  // vmap of a derivative with one argument unmapped.
  auto dx = [](const ts::Array& x, const ts::Array& y) {
    return ts::grad([&](const ts::Array& z) { return ts::sum(scaled_product(z, y)); })(x);
  };
  ts::Array xs = uniform({4, 3}, 3), y = uniform({3}, 4);
  expect_close(ts::vmap(dx, {0, ts::none})(xs, y), ts::broadcast_to(y, {4, 3}), 1e-15, "vmap(grad) in_axes none");
}

TEST(CustomJvp, NumericallyStableRuleIsUsed) {
  // softplus = log(1 + exp(x)); its naive derivative exp(x) / (1 + exp(x)) is nan at 1000.
  auto softplus = ts::custom_jvp([](const ts::Array& x) { return ts::log1p(ts::exp(x)); },
                                 [](const T1& p, const T1& t) {
                                   const ts::Array& x = std::get<0>(p);
                                   return std::make_pair(ts::log1p(ts::exp(x)), ts::logistic(x) * std::get<0>(t));
                                 });
  auto loss = [&](const ts::Array& x) { return ts::sum(softplus(x)); };
  std::vector<double> g = vals(ts::grad(loss)(f64s({1000.0, 0.0, -1000.0})));
  EXPECT_DOUBLE_EQ(g[0], 1.0);
  EXPECT_DOUBLE_EQ(g[1], 0.5);
  EXPECT_DOUBLE_EQ(g[2], 0.0);
}

TEST(CustomJvp, SecondDerivativeDifferentiatesTheRule) {
  auto s = ts::custom_jvp([](const ts::Array& x) { return ts::sin(x); },
                          [](const T1& p, const T1& t) {
                            const ts::Array& x = std::get<0>(p);
                            return std::make_pair(ts::sin(x), ts::cos(x) * std::get<0>(t));
                          });
  auto d1 = ts::grad([&](const ts::Array& x) { return s(x); });
  ts::Array x(ts::Scalar(0.7));
  EXPECT_NEAR(ts::grad(d1)(x).item<double>(), -std::sin(0.7), 1e-14);
  EXPECT_NEAR(ts::jit(ts::grad(d1))(x).item<double>(), -std::sin(0.7), 1e-14);
}

TEST(CustomJvp, TreeOutputs) {
  using P = std::pair<ts::Array, ts::Array>;
  auto sincos = ts::custom_jvp([](const ts::Array& x) { return P(ts::sin(x), ts::cos(x)); },
                               [](const T1& p, const T1& t) {
                                 const ts::Array &x = std::get<0>(p), &tx = std::get<0>(t);
                                 return std::make_pair(P(ts::sin(x), ts::cos(x)), P(ts::cos(x) * tx, -ts::sin(x) * tx));
                               });
  check_grads(
      [&](const V& a) {
        auto [s, c] = sincos(a[0]);
        return s * c;
      },
      {uniform({3}, 5)});
}

// ===================================== custom_vjp =====================================

// sin whose backward rule multiplies by `scale`: results show which rule ran.
auto sin_scaled_bwd(double scale) {
  return ts::custom_vjp([](const ts::Array& x) { return ts::sin(x); },
                        [](const ts::Array& x) { return std::make_pair(ts::sin(x), ts::cos(x)); },
                        [scale](const ts::Array& cos_x, const ts::Array& ct) { return ct * cos_x * scale; });
}

TEST(CustomVjp, GradUsesTheBackwardRule) {
  auto cv = sin_scaled_bwd(10.0);
  ts::Array x = f64s({0.1, 0.5, -2.0}), ct = f64s({1.0, -2.0, 0.5});
  expect_close(cv(x), ts::sin(x), 1e-15, "value");
  auto loss = [&](const ts::Array& z) { return ts::sum(cv(z)); };
  expect_close(ts::grad(loss)(x), ts::cos(x) * 10.0, 1e-15, "grad");
  expect_close(ts::jit(ts::grad(loss))(x), ts::cos(x) * 10.0, 1e-15, "jit(grad)");
  expect_close(ts::grad([&](const ts::Array& z) { return ts::sum(ts::jit(cv)(z)); })(x), ts::cos(x) * 10.0, 1e-15,
               "grad(jit(custom_vjp))");
  auto [y, pullback] = ts::vjp(cv, x);
  expect_close(y, ts::sin(x), 1e-15, "vjp primal");
  expect_close(pullback(ct), ts::cos(x) * ct * 10.0, 1e-15, "vjp");
  expect_close(ts::jacrev(cv)(x), ts::eye(3, ts::none, 0, ts::f64) * (ts::cos(x) * 10.0), 1e-15, "jacrev");
}

TEST(CustomVjp, UnderVmap) {
  auto cv = sin_scaled_bwd(10.0);
  ts::Array xs = ts::stack({f64s({0.1, 0.5, -2.0}), f64s({1.0, 2.0, 3.0})});
  auto loss = [&](const ts::Array& z) { return ts::sum(cv(z)); };
  expect_close(ts::vmap(cv)(xs), ts::sin(xs), 1e-15, "vmap value");
  expect_close(ts::vmap(ts::grad(loss))(xs), ts::cos(xs) * 10.0, 1e-15, "vmap(grad)");
  expect_close(ts::grad([&](const ts::Array& z) { return ts::sum(ts::vmap(cv)(z)); })(xs), ts::cos(xs) * 10.0, 1e-15,
               "grad(vmap)");
  expect_close(ts::jit(ts::vmap(ts::grad(loss)))(xs), ts::cos(xs) * 10.0, 1e-15, "jit(vmap(grad))");
}

TEST(CustomVjp, SeveralArgumentsAndTreeResiduals) {
  auto mul = ts::custom_vjp(
      [](const ts::Array& x, const ts::Array& y) { return x * y; },
      [](const ts::Array& x, const ts::Array& y) { return std::make_pair(x * y, std::make_pair(x, y)); },
      [](const std::pair<ts::Array, ts::Array>& r, const ts::Array& ct) {
        return std::make_tuple(ct * r.second * 2.0, ct * r.first * 3.0);
      });
  ts::Array x = f64s({1.0, 2.0}), y = f64s({3.0, 5.0});
  auto [gx, gy] = ts::grad<0, 1>([&](const ts::Array& a, const ts::Array& b) { return ts::sum(mul(a, b)); })(x, y);
  EXPECT_EQ(vals(gx), (std::vector<double>{6.0, 10.0}));
  EXPECT_EQ(vals(gy), (std::vector<double>{3.0, 6.0}));
  // With the true derivative in bwd, reverse mode agrees with the plain function.
  auto exact = ts::custom_vjp(
      [](const ts::Array& a, const ts::Array& b) { return ts::sin(a) * b; },
      [](const ts::Array& a, const ts::Array& b) { return std::make_pair(ts::sin(a) * b, std::make_tuple(a, b)); },
      [](const std::tuple<ts::Array, ts::Array>& r, const ts::Array& ct) {
        auto [a, b] = r;
        return std::make_tuple(ct * ts::cos(a) * b, ct * ts::sin(a));
      });
  ts::Array a = uniform({3}, 6), b = uniform({3}, 7);
  auto loss_c = [&](const ts::Array& p, const ts::Array& q) { return ts::sum(exact(p, q) * exact(p, q)); };
  auto loss_p = [&](const ts::Array& p, const ts::Array& q) { return ts::sum(ts::sin(p) * q * ts::sin(p) * q); };
  auto [ca, cb] = ts::grad<0, 1>(loss_c)(a, b);
  auto [pa, pb] = ts::grad<0, 1>(loss_p)(a, b);
  expect_close(ca, pa, 1e-14, "d/da");
  expect_close(cb, pb, 1e-14, "d/db");
}

TEST(CustomVjp, VmapWithAnUnmappedArgument) {
  auto mul = ts::custom_vjp(
      [](const ts::Array& x, const ts::Array& y) { return ts::sin(x) * y; },
      [](const ts::Array& x, const ts::Array& y) { return std::make_pair(ts::sin(x) * y, std::make_pair(x, y)); },
      [](const std::pair<ts::Array, ts::Array>& r, const ts::Array& ct) {
        return std::make_tuple(ct * ts::cos(r.first) * r.second, ct * ts::sin(r.first));
      });
  check_vmap([&](const V& a) { return mul(a[0], a[1]); }, {uniform({4, 3}, 1), uniform({3}, 2)}, {0, ts::none});
  auto dx = [&](const ts::Array& x, const ts::Array& y) {
    return ts::grad<0, 1>([&](const ts::Array& a, const ts::Array& b) { return ts::sum(mul(a, b)); })(x, y);
  };
  ts::Array xs = uniform({4, 3}, 3), y = uniform({3}, 4);
  auto [gx, gy] = ts::vmap(dx, {0, ts::none})(xs, y);
  expect_close(gx, ts::cos(xs) * y, 1e-15, "vmap(grad) x");
  expect_close(gy, ts::sin(xs), 1e-15, "vmap(grad) y (per example)");
}

// f(x, y) = sum(cj(x)) where cj (sin(x) * y, with the rule claiming 3 cos(x) y) closes over y.
ts::Array closes_over_y(const ts::Array& x, const ts::Array& y) {
  auto cj = ts::custom_jvp([y](const ts::Array& z) { return ts::sin(z) * y; },
                           [y](const T1& p, const T1& t) {
                             const ts::Array& z = std::get<0>(p);
                             return std::make_pair(ts::sin(z) * y, ts::cos(z) * y * 3.0 * std::get<0>(t));
                           });
  return ts::sum(cj(x));
}
// The same with custom_vjp (bwd claims 3 cos(x) y).
ts::Array closes_over_y_vjp(const ts::Array& x, const ts::Array& y) {
  auto cv = ts::custom_vjp([y](const ts::Array& z) { return ts::sin(z) * y; },
                           [y](const ts::Array& z) { return std::make_pair(ts::sin(z) * y, ts::cos(z)); },
                           [y](const ts::Array& cos_z, const ts::Array& ct) { return ct * cos_z * y * 3.0; });
  return ts::sum(cv(x));
}

TEST(CustomRules, VmapOfGradClosingOverABatchedValue) {
  // The functions and their rules close over y, which vmap maps (a batch tracer).
  ts::Array x = uniform({3}, 5), ys = uniform({4, 3}, 6);
  expect_close(ts::vmap(closes_over_y, {ts::none, 0})(x, ys), ts::sum(ts::sin(x) * ys, {1}), 1e-15, "vmap value");
  expect_close(ts::vmap(ts::grad(closes_over_y), {ts::none, 0})(x, ys), ts::cos(x) * ys * 3.0, 1e-15,
               "vmap(grad(custom_jvp))");
  expect_close(ts::vmap(ts::grad(closes_over_y_vjp), {ts::none, 0})(x, ys), ts::cos(x) * ys * 3.0, 1e-15,
               "vmap(grad(custom_vjp))");
}

// A custom_jvp rule that closes over a value the enclosing vmap maps runs on that vmap's
// trace, so the closed-over value batches (as in JAX).
TEST(CustomRules, GradOfVmapClosingOverABatchedValue) {
  ts::Array ys = uniform({4, 3}, 6), xs = uniform({4, 3}, 7);
  expect_close(ts::grad([&](const ts::Array& z) { return ts::sum(ts::vmap(closes_over_y)(z, ys)); })(xs),
               ts::cos(xs) * ys * 3.0, 1e-15, "grad(vmap(custom_jvp))");
}

// custom_vjp's bwd runs in the backward pass, after the vmap has ended, so it cannot close
// over the vmap's tracers (JAX has the same restriction): pass such values as arguments.
TEST(CustomRules, DISABLED_GradOfVmapOfCustomVjpClosingOverABatchedValue) {
  ts::Array ys = uniform({4, 3}, 6), xs = uniform({4, 3}, 7);
  expect_close(ts::grad([&](const ts::Array& z) { return ts::sum(ts::vmap(closes_over_y_vjp)(z, ys)); })(xs),
               ts::cos(xs) * ys * 3.0, 1e-15, "grad(vmap(custom_vjp))");
}

TEST(CustomVjp, ClosingOverAConstantIsFine) {
  ts::Array k = f64s({2.0, 4.0});
  auto cv = ts::custom_vjp([k](const ts::Array& x) { return x * k; },
                           [k](const ts::Array& x) { return std::make_pair(x * k, k); },
                           [](const ts::Array& kk, const ts::Array& ct) { return ct * kk; });
  EXPECT_EQ(vals(ts::grad([&](const ts::Array& x) { return ts::sum(cv(x)); })(f64s({1.0, 1.0}))),
            (std::vector<double>{2.0, 4.0}));
}

// ====================================== checkpoint ======================================

// An identity that counts how often its kernel runs (primal evaluations).
struct CountedTag {};
using Counted = transform_testing::CountingIdentity<CountedTag>;
std::atomic<int>& g_runs = Counted::runs;
const ts::ir::Primitive& counted_p = Counted::define("cftest_counted");
ts::Array counted(const ts::Array& x) { return ts::detail::bind1(counted_p, {x}); }

int runs_of(const std::function<void()>& f) {
  g_runs = 0;
  f();
  return g_runs.load();
}

// sin(counted(x)): the backward pass needs cos(counted(x)).
ts::Array sin_of_counted(const ts::Array& x) { return ts::sum(ts::sin(counted(x))); }

TEST(Checkpoint, ValuesAndGradientsAreUnchanged) {
  ts::Array x = uniform({3}, 8);
  auto f = [](const ts::Array& z) { return ts::sum(ts::sin(ts::sin(z)) * z); };
  auto cf = ts::checkpoint(f);
  EXPECT_NEAR(cf(x).item<double>(), f(x).item<double>(), 1e-15);
  expect_close(ts::grad(cf)(x), ts::grad(f)(x), 1e-15, "grad");
  expect_close(ts::jit(ts::grad(cf))(x), ts::grad(f)(x), 1e-14, "jit(grad)");
  for (auto policy : {ts::CheckpointPolicy::dots_saveable, ts::CheckpointPolicy::everything_saveable})
    expect_close(ts::grad(ts::checkpoint(f, {.policy = policy}))(x), ts::grad(f)(x), 1e-15, "grad with a policy");
  auto elementwise = [](const V& a) { return ts::checkpoint([](const ts::Array& z, const ts::Array& w) {
                                       return ts::sin(z) * ts::exp(w) + z * w;
                                     })(a[0], a[1]); };
  check_grads(elementwise, {uniform({2, 3}, 9), uniform({2, 3}, 10)});
  check_vmap(elementwise, {uniform({2, 3}, 9), uniform({3}, 10)}, {0, ts::none}, 1);
}

TEST(Checkpoint, GradRecomputesTheForwardPass) {
  ts::Array x = uniform({3}, 11);
  EXPECT_EQ(runs_of([&] { sin_of_counted(x); }), 1);
  EXPECT_EQ(runs_of([&] { ts::checkpoint(sin_of_counted)(x); }), 1);
  EXPECT_EQ(runs_of([&] { ts::grad(sin_of_counted)(x); }), 1) << "without checkpoint the residual cos(x) is saved";
  EXPECT_EQ(runs_of([&] { ts::grad(ts::checkpoint(sin_of_counted))(x); }), 2)
      << "checkpoint saves nothing: the backward pass recomputes counted(x)";
  EXPECT_EQ(runs_of([&] {
              ts::grad(ts::checkpoint(sin_of_counted, {.policy = ts::CheckpointPolicy::everything_saveable}))(x);
            }),
            1);
  expect_close(ts::grad(ts::checkpoint(sin_of_counted))(x), ts::cos(x), 1e-15, "gradient");
}

TEST(Checkpoint, DotsSaveableKeepsDotResultsAndRecomputesTheRest) {
  ts::Array w = uniform({3, 3}, 12), x = uniform({3}, 13);
  // counted before the dot: with the dot's result saved, counted is not needed again.
  auto before = [w](const ts::Array& z) { return ts::sum(ts::sin(ts::matmul(w, counted(z)))); };
  // counted after the dot: its result is not a dot, so it is recomputed (from the saved dot).
  auto after = [w](const ts::Array& z) { return ts::sum(ts::sin(counted(ts::matmul(w, z)))); };
  auto dots = ts::CheckpointOptions{.policy = ts::CheckpointPolicy::dots_saveable};
  EXPECT_EQ(runs_of([&] { ts::grad(ts::checkpoint(before))(x); }), 2);
  EXPECT_EQ(runs_of([&] { ts::grad(ts::checkpoint(before, dots))(x); }), 1);
  EXPECT_EQ(runs_of([&] { ts::grad(ts::checkpoint(after))(x); }), 2);
  EXPECT_EQ(runs_of([&] { ts::grad(ts::checkpoint(after, dots))(x); }), 2);
  ts::Array want = ts::matmul(ts::transpose(w), ts::cos(ts::matmul(w, x)));
  expect_close(ts::grad(ts::checkpoint(before, dots))(x), want, 1e-14, "gradient, dots saved");
  expect_close(ts::grad(ts::checkpoint(after, dots))(x), want, 1e-14, "gradient, dots saved (after)");
}

TEST(Checkpoint, UnderJitTheRecomputationIsStaged) {
  ts::Array x = uniform({3}, 14);
  auto g = ts::grad(ts::checkpoint(sin_of_counted));
  // The traced program holds counted twice: the forward pass and, inside the checkpoint's
  // backward program, its recomputation.
  std::string text = ts::make_program(g, x).to_string();
  size_t n = 0;
  for (size_t pos = text.find("cftest_counted"); pos != std::string::npos; pos = text.find("cftest_counted", pos + 1)) ++n;
  EXPECT_EQ(n, 2u) << text;
  auto jg = ts::jit(g);
  expect_close(jg(x), ts::cos(x), 1e-15, "jit(grad(checkpoint))");
  // Observed: once compiled, the checkpoint call is inlined and common-subexpression
  // elimination merges the recomputation with the forward evaluation (counted is a pure
  // primitive on the same input), so each call runs it once. Remat under jit saves memory
  // only where the compiler keeps the recomputation separate.
  auto lowered = jg.lower(x).program().primitive_names();
  EXPECT_EQ(std::count(lowered.begin(), lowered.end(), "cftest_counted"), 1) << jg.lower(x).as_text();
  EXPECT_EQ(runs_of([&] { jg(x); }), 1) << jg.lower(x).as_text();
  auto jplain = ts::jit(ts::grad(sin_of_counted));
  EXPECT_EQ(runs_of([&] { jplain(x); }), 1);
  // Differentiating a jitted checkpoint from outside keeps the remat (the jit call is
  // transformed as traced, before the compiler inlines the checkpoint).
  EXPECT_EQ(runs_of([&] { ts::grad(ts::jit(ts::checkpoint(sin_of_counted)))(x); }), 2);
  EXPECT_EQ(runs_of([&] { ts::grad(ts::jit(sin_of_counted))(x); }), 1);
}

TEST(Checkpoint, UnderVmapAndForwardMode) {
  ts::Array xs = uniform({2, 3}, 15);
  auto g = ts::grad(ts::checkpoint(sin_of_counted));
  expect_close(ts::vmap(g)(xs), ts::cos(xs), 1e-15, "vmap(grad(checkpoint))");
  EXPECT_EQ(runs_of([&] { ts::vmap(g)(xs); }), 2);
  auto [y, t] = ts::jvp(ts::checkpoint([](const ts::Array& z) { return ts::sin(counted(z)); }), xs, ts::ones_like(xs));
  expect_close(y, ts::sin(xs), 1e-15, "jvp primal");
  expect_close(t, ts::cos(xs), 1e-15, "jvp tangent");
}

}  // namespace
