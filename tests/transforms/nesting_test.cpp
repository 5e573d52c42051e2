// Transformations composed with each other (grad of grad, jacfwd of jacrev, vmap of grad,
// jit of vmap of grad, grad through scan and cond, custom rules inside loops and inside each
// other), readable programs, and side effects kept through transformations and control flow.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <string>
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
using Step = std::pair<ts::Array, ts::Array>;

std::vector<double> vals(const ts::Array& a) { return a.astype(ts::f64).to_vector<double>(); }
ts::Array f64s(std::vector<double> v) { return ts::Array(v); }
ts::Array scalar(double v) { return ts::Array(ts::Scalar(v)); }
bool contains(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }
size_t count_of(const std::vector<std::string>& names, const std::string& n) {
  return size_t(std::count(names.begin(), names.end(), n));
}

/// The Jacobian of grad(f) by central differences (columns = perturbed inputs).
template <class G> ts::Array fd_jacobian(const G& g, const ts::Array& x, double eps = 1e-6) {
  std::vector<ts::Array> cols;
  for (int64_t i = 0; i < x.size(); ++i) {
    ts::Array e = ts::reshape(ts::eye(x.size(), ts::none, 0, ts::f64)[{i}], x.shape());
    cols.push_back((g(x + e * eps) - g(x - e * eps)) / (2 * eps));
  }
  return ts::stack(cols, 1);
}

// ====================================== nesting ======================================

TEST(Nesting, GradOfGrad) {
  auto f = [](const ts::Array& x) { return ts::sin(x) * x; };
  ts::Array x = scalar(0.7);
  EXPECT_NEAR(ts::grad(ts::grad(f))(x).item<double>(), 2 * std::cos(0.7) - 0.7 * std::sin(0.7), 1e-14);
  EXPECT_NEAR(ts::grad(ts::grad(ts::grad(f)))(x).item<double>(), -3 * std::sin(0.7) - 0.7 * std::cos(0.7), 1e-14);
  EXPECT_NEAR(ts::jit(ts::grad(ts::grad(f)))(x).item<double>(), 2 * std::cos(0.7) - 0.7 * std::sin(0.7), 1e-14);
  // Mixed partials of a two-argument function: d/dy d/dx (x^2 y^3) = 6 x y^2.
  auto g = [](const ts::Array& a, const ts::Array& b) { return a * a * b * b * b; };
  auto dxdy = ts::grad<1>([&](const ts::Array& a, const ts::Array& b) { return ts::grad<0>(g)(a, b); });
  EXPECT_NEAR(dxdy(scalar(1.5), scalar(-2.0)).item<double>(), 6 * 1.5 * 4.0, 1e-12);
}

// f(x) = sum(x^3) + x0 x1 x2, whose Hessian is diag(6x) plus x_k off the diagonal.
ts::Array cubic(const ts::Array& x) { return ts::sum(x * x * x) + ts::prod(x); }
ts::Array cubic_hessian(const std::vector<double>& x) {
  std::vector<double> h(9);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) h[size_t(i * 3 + j)] = i == j ? 6 * x[size_t(i)] : x[size_t(3 - i - j)];
  return ts::Array(h, {3, 3});
}

TEST(Nesting, JacfwdOfJacrevIsTheHessian) {
  std::vector<double> xv{0.5, -1.5, 2.0};
  ts::Array x = f64s(xv);
  expect_close(ts::jacfwd(ts::jacrev(cubic))(x), cubic_hessian(xv), 1e-13, "jacfwd(jacrev)");
  expect_close(ts::hessian(cubic)(x), cubic_hessian(xv), 1e-13, "hessian");
  expect_close(ts::jacrev(ts::jacfwd(cubic))(x), cubic_hessian(xv), 1e-13, "jacrev(jacfwd)");
  expect_close(ts::jacfwd(ts::jacfwd(cubic))(x), cubic_hessian(xv), 1e-13, "jacfwd(jacfwd)");
  expect_close(ts::jit(ts::hessian(cubic))(x), cubic_hessian(xv), 1e-13, "jit(hessian)");
}

TEST(Nesting, JvpOfGradIsAHessianVectorProduct) {
  std::vector<double> xv{0.5, -1.5, 2.0};
  ts::Array x = f64s(xv), v = f64s({1.0, 2.0, -1.0});
  ts::Array hv = ts::jvp(ts::grad(cubic), x, v).second;
  expect_close(hv, ts::matmul(cubic_hessian(xv), v), 1e-13, "jvp(grad)");
}

TEST(Nesting, VmapOfGradAndJitOfVmapOfGrad) {
  auto f = [](const ts::Array& x, const ts::Array& y) { return ts::sum(ts::sin(x) * y); };
  ts::Array xs = uniform({4, 3}, 1), y = uniform({3}, 2), ys = uniform({4, 3}, 3);
  ts::Array want = ts::cos(xs) * y;
  expect_close(ts::vmap(ts::grad(f), {0, ts::none})(xs, y), want, 1e-15, "vmap(grad)");
  expect_close(ts::jit(ts::vmap(ts::grad(f), {0, ts::none}))(xs, y), want, 1e-15, "jit(vmap(grad))");
  expect_close(ts::vmap(ts::grad(f), {1, ts::none}, {1})(ts::transpose(xs), y), ts::transpose(want), 1e-15,
               "vmap(grad) in_axes 1, out_axes 1");
  auto [gx, gy] = ts::vmap(ts::grad<0, 1>(f))(xs, ys);
  expect_close(gx, ts::cos(xs) * ys, 1e-15, "vmap(grad<0,1>) x");
  expect_close(gy, ts::sin(xs), 1e-15, "vmap(grad<0,1>) y");
  // grad of a vmapped function, and vmap of a Hessian.
  expect_close(ts::grad([&](const ts::Array& z) { return ts::sum(ts::vmap(f, {0, ts::none})(z, y)); })(xs), want, 1e-15,
               "grad(vmap)");
  ts::Array h = ts::vmap(ts::hessian(cubic))(ts::stack({f64s({0.5, -1.5, 2.0}), f64s({1.0, 2.0, 3.0})}));
  expect_close(h[{0}], cubic_hessian({0.5, -1.5, 2.0}), 1e-13, "vmap(hessian) 0");
  expect_close(h[{1}], cubic_hessian({1.0, 2.0, 3.0}), 1e-13, "vmap(hessian) 1");
}

// A scan whose step branches on the scanned element.
ts::Array scan_of_cond(const ts::Array& c0, const ts::Array& xs) {
  auto [c, ys] = ts::scan(
      [](const ts::Array& c, const ts::Array& x) {
        ts::Array next = ts::cond(
            x > 0.0, [](const ts::Array& k, const ts::Array& e) { return k * e; },
            [](const ts::Array& k, const ts::Array& e) { return k + ts::sin(e) * k * k; }, c, x);
        return Step(next, next * x);
      },
      c0, xs);
  return c + ts::sum(ys);
}

TEST(Nesting, GradOfScanOfCond) {
  ts::Array c0 = scalar(0.8), xs = f64s({0.5, -0.3, 1.2, -0.7, 0.9});
  // Hand-computed gradient by the chain rule over the recorded forward pass.
  std::vector<double> x = vals(xs), cs{0.8};
  for (double e : x) cs.push_back(e > 0 ? cs.back() * e : cs.back() + std::sin(e) * cs.back() * cs.back());
  // out = c_n + sum_k c_{k+1} x_k; backward from dout/dc_n.
  std::vector<double> gx(x.size());
  double gc = 1.0;  // d out / d c_{k+1}, accumulated
  for (size_t k = x.size(); k-- > 0;) {
    gc += x[k];  // from the y term c_{k+1} x_k
    gx[k] = cs[k + 1];
    double c = cs[k], e = x[k];
    double dnext_dc = e > 0 ? e : 1 + 2 * std::sin(e) * c, dnext_de = e > 0 ? c : std::cos(e) * c * c;
    gx[k] += gc * dnext_de;
    gc *= dnext_dc;
  }
  auto [g0, gxs] = ts::grad<0, 1>(scan_of_cond)(c0, xs);
  EXPECT_NEAR(g0.item<double>(), gc, 1e-13);
  expect_close(gxs, f64s(gx), 1e-13, "d/dxs");
  auto [j0, jxs] = ts::jit(ts::grad<0, 1>(scan_of_cond))(c0, xs);
  EXPECT_NEAR(j0.item<double>(), gc, 1e-13);
  expect_close(jxs, f64s(gx), 1e-13, "jit d/dxs");
  check_grads([](const V& a) { return scan_of_cond(a[0], a[1]); }, {c0, xs});
  // vmap of the gradient over a batch of xs (the predicates differ per example).
  ts::Array batch = ts::stack({xs, -xs, xs * 0.5});
  ts::Array vg = ts::vmap(ts::grad<1>(scan_of_cond), {ts::none, 0})(c0, batch);
  for (int64_t b = 0; b < 3; ++b)
    expect_close(vg[{b}], ts::grad<1>(scan_of_cond)(c0, batch[{b}]), 1e-13, "vmap(grad(scan(cond)))");
}

TEST(Nesting, SecondDerivativesThroughLoopsAndCond) {
  // x^3 by a scan, a fori_loop and a cond: second derivative 6x.
  auto cube_scan = [](const ts::Array& x) {
    return ts::scan([&](const ts::Array& c, const std::nullopt_t&) { return Step(c * x, c); }, scalar(1.0), ts::none,
                    {.length = 3})
        .first;
  };
  auto cube_fori = [](const ts::Array& x) {
    return ts::fori_loop(0, 3, [&](const ts::Array&, const ts::Array& c) { return c * x; }, scalar(1.0));
  };
  auto cube_cond = [](const ts::Array& x) {
    return ts::cond(
        x > 0.0, [](const ts::Array& a) { return a * a * a; }, [](const ts::Array& a) { return a; }, x);
  };
  ts::Array x = scalar(1.3);
  EXPECT_NEAR(ts::grad(ts::grad(cube_scan))(x).item<double>(), 7.8, 1e-12);
  EXPECT_NEAR(ts::grad(ts::grad(cube_fori))(x).item<double>(), 7.8, 1e-12);
  EXPECT_NEAR(ts::grad(ts::grad(cube_cond))(x).item<double>(), 7.8, 1e-12);
  EXPECT_NEAR(ts::jit(ts::grad(ts::grad(cube_scan)))(x).item<double>(), 7.8, 1e-12);
  // The Hessian of a scan (reverse over forward over a loop) against differences of its gradient.
  auto f = [](const ts::Array& v) {
    return ts::sum(ts::scan([](const ts::Array& c, const ts::Array& e) { return Step(ts::sin(c) * e + c, c * e); },
                            scalar(0.5), v)
                       .second);
  };
  ts::Array v = f64s({0.3, -0.8, 1.1});
  expect_close(ts::hessian(f)(v), fd_jacobian(ts::grad(f), v), 1e-7, "hessian(scan)");
}

TEST(Nesting, NestedLoopsAndConds) {
  // A scan inside a scan, and a cond inside a cond, under both modes, jit and vmap.
  auto nested_scan = [](const V& a) {
    return ts::scan(
               [&](const ts::Array& c, const ts::Array& row) {
                 auto inner = ts::scan([](const ts::Array& k, const ts::Array& e) { return Step(ts::sin(k) * e + k, k); },
                                       c, row);
                 return Step(inner.first * a[1], ts::sum(inner.second));
               },
               a[0], a[2])
        .second;
  };
  check_grads(nested_scan, {uniform({}, 1), uniform({}, 2), uniform({3, 4}, 3)});
  check_vmap(nested_scan, {uniform({2}, 1), uniform({}, 2), uniform({3, 4}, 3)}, {0, ts::none, ts::none});
  check_vmap(nested_scan, {uniform({}, 1), uniform({}, 2), uniform({3, 4, 2}, 3)}, {ts::none, ts::none, 2}, 1);
  auto nested_cond = [](const V& a) {
    return ts::cond(
        a[1] > 0.0,
        [](const ts::Array& x, const ts::Array& p) {
          return ts::cond(
              p > 0.5, [](const ts::Array& y) { return ts::sin(y); }, [](const ts::Array& y) { return y * y; }, x);
        },
        [](const ts::Array& x, const ts::Array&) { return ts::exp(x); }, a[0], a[1]);
  };
  for (double p : {0.7, 0.2, -0.3}) check_grads(nested_cond, {uniform({3}, 4), scalar(p)});
  check_vmap(nested_cond, {uniform({4, 3}, 4), f64s({0.7, 0.2, -0.3, 0.9})}, {0, 0});
  // vmap of vmap with batched predicates at both levels.
  auto sign_switch = [](const ts::Array& x) {
    return ts::cond(
        ts::sum(x) > 0.0, [](const ts::Array& a) { return ts::sin(a); }, [](const ts::Array& a) { return a * 2.0; }, x);
  };
  ts::Array xs = uniform({2, 4, 3}, 5);
  ts::Array got = ts::vmap(ts::vmap(sign_switch))(xs);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 4; ++j) expect_close(got[{i, j}], sign_switch(xs[{i, j}]), 1e-15, "vmap(vmap(cond))");
}

TEST(Nesting, ForwardOverForwardThroughWhile) {
  // v <- v * x three times: x^3 per element, so the Hessian of sum is diag(6x).
  auto cube_sum = [](const ts::Array& x) {
    using C = std::pair<ts::Array, ts::Array>;
    return ts::sum(ts::while_loop([](const C& c) { return c.first < 3; },
                                  [&](const C& c) { return C(c.first + 1, c.second * x); },
                                  C(ts::Array(ts::Scalar(int32_t(0))), ts::ones_like(x)))
                       .second);
  };
  ts::Array x = f64s({0.5, -1.5, 2.0});
  ts::Array want = ts::eye(3, ts::none, 0, ts::f64) * (x * 6.0);
  expect_close(ts::jacfwd(ts::jacfwd(cube_sum))(x), want, 1e-13, "jacfwd(jacfwd(while))");
  expect_close(ts::jit(ts::jacfwd(ts::jacfwd(cube_sum)))(x), want, 1e-13, "jit(jacfwd(jacfwd(while)))");
}

TEST(Nesting, GradOfVmapOfLoopsClosingOverBatchedValues) {
  // The bodies close over y, which the inner vmap maps.
  auto f = [](const ts::Array& x, const ts::Array& y) {
    ts::Array s = ts::scan([&](const ts::Array& c, const ts::Array& e) { return Step(ts::sin(c) * y + e, c); }, x,
                           ts::stack({y, y * 2.0}))
                      .first;
    return ts::sum(ts::cond(
        ts::sum(y) > 0.0, [&](const ts::Array& a) { return a * y; }, [&](const ts::Array& a) { return a - y; }, s));
  };
  ts::Array xs = uniform({4, 3}, 6), ys = uniform({4, 3}, 7);
  ts::Array g = ts::grad([&](const ts::Array& z) { return ts::sum(ts::vmap(f)(z, ys)); })(xs);
  for (int64_t b = 0; b < 4; ++b) expect_close(g[{b}], ts::grad(f)(xs[{b}], ys[{b}]), 1e-14, "grad(vmap(scan, cond))");
  ts::Array h = ts::vmap(ts::grad<1>(f))(xs, ys);
  for (int64_t b = 0; b < 4; ++b) expect_close(h[{b}], ts::grad<1>(f)(xs[{b}], ys[{b}]), 1e-14, "vmap(grad wrt y)");
}

// sin with a backward rule that multiplies by `scale` (scale 1: the true derivative).
auto sin_bwd_scaled(double scale) {
  return ts::custom_vjp([](const ts::Array& x) { return ts::sin(x); },
                        [](const ts::Array& x) { return std::make_pair(ts::sin(x), ts::cos(x)); },
                        [scale](const ts::Array& cos_x, const ts::Array& ct) { return ct * cos_x * scale; });
}

TEST(Nesting, CustomVjpInsideScan) {
  // c_{k+1} = s(c_k x_k): with bwd scaled by s, d c_n / d c_0 gains s^n and d c_n / d x_k gains s^(n-k).
  auto chain = [](auto&& sinf) {
    return [sinf](const ts::Array& c0, const ts::Array& xs) {
      return ts::scan([&](const ts::Array& c, const ts::Array& x) { return Step(sinf(c * x), c); }, c0, xs).first;
    };
  };
  auto plain = chain([](const ts::Array& z) { return ts::sin(z); });
  auto exact = chain(sin_bwd_scaled(1.0));
  auto scaled = chain(sin_bwd_scaled(2.0));
  ts::Array c0 = scalar(0.9), xs = f64s({0.5, 1.5, -0.8, 1.1});
  EXPECT_NEAR(exact(c0, xs).item<double>(), plain(c0, xs).item<double>(), 1e-15);
  auto [p0, pxs] = ts::grad<0, 1>(plain)(c0, xs);
  auto [e0, exs] = ts::grad<0, 1>(exact)(c0, xs);
  auto [s0, sxs] = ts::grad<0, 1>(scaled)(c0, xs);
  EXPECT_NEAR(e0.item<double>(), p0.item<double>(), 1e-14);
  expect_close(exs, pxs, 1e-14, "custom_vjp (exact bwd) in scan vs plain");
  EXPECT_NEAR(s0.item<double>(), 16.0 * p0.item<double>(), 1e-13);
  expect_close(sxs, pxs * f64s({16.0, 8.0, 4.0, 2.0}), 1e-13, "bwd scaled by 2 per step");
  auto [j0, jxs] = ts::jit(ts::grad<0, 1>(scaled))(c0, xs);
  EXPECT_NEAR(j0.item<double>(), s0.item<double>(), 1e-14);
  expect_close(jxs, sxs, 1e-14, "jit(grad(scan(custom_vjp)))");
  // ys through custom_vjp only: the gradient is exactly scale * cos.
  auto ys_sum = [](const ts::Array& v) {
    auto s = sin_bwd_scaled(10.0);
    return ts::sum(ts::scan([&](const ts::Array& c, const ts::Array& x) { return Step(c, s(x)); }, scalar(0.0), v).second);
  };
  expect_close(ts::grad(ys_sum)(xs), ts::cos(xs) * 10.0, 1e-15, "grad of ys");
  expect_close(ts::vmap(ts::grad(ys_sum))(ts::stack({xs, -xs})), ts::cos(ts::stack({xs, -xs})) * 10.0, 1e-15,
               "vmap(grad) of ys");
}

TEST(Nesting, CustomJvpInsideCustomVjpAndViceVersa) {
  using T1 = std::tuple<ts::Array>;
  // custom_jvp: sin with the derivative claimed to be 3 cos.
  auto cj = ts::custom_jvp([](const ts::Array& x) { return ts::sin(x); },
                           [](const T1& p, const T1& t) {
                             const ts::Array& x = std::get<0>(p);
                             return std::make_pair(ts::sin(x), ts::cos(x) * 3.0 * std::get<0>(t));
                           });
  // custom_vjp whose fwd takes its residual from the custom_jvp's rule (a jvp inside fwd).
  auto outer = ts::custom_vjp([cj](const ts::Array& x) { return cj(x); },
                              [cj](const ts::Array& x) {
                                auto [y, dy] = ts::jvp(cj, x, ts::ones_like(x));
                                return std::make_pair(y, dy);
                              },
                              [](const ts::Array& dy, const ts::Array& ct) { return ct * dy; });
  ts::Array x = f64s({0.2, -1.0, 2.5});
  expect_close(outer(x), ts::sin(x), 1e-15, "value");
  auto loss = [&](const ts::Array& z) { return ts::sum(outer(z)); };
  expect_close(ts::grad(loss)(x), ts::cos(x) * 3.0, 1e-15, "grad(custom_vjp(custom_jvp))");
  expect_close(ts::jit(ts::grad(loss))(x), ts::cos(x) * 3.0, 1e-15, "jit");
  expect_close(ts::vmap(ts::grad(loss))(ts::stack({x, x * 2.0})), ts::cos(ts::stack({x, x * 2.0})) * 3.0, 1e-15,
               "vmap");
  // custom_jvp whose function calls a custom_vjp: forward mode uses the jvp rule, so the
  // custom_vjp is never differentiated forward; reverse mode transposes the jvp rule.
  auto cv = sin_bwd_scaled(10.0);
  auto inner = ts::custom_jvp([cv](const ts::Array& z) { return cv(z); },
                              [cv](const T1& p, const T1& t) {
                                const ts::Array& z = std::get<0>(p);
                                return std::make_pair(cv(z), ts::cos(z) * 5.0 * std::get<0>(t));
                              });
  expect_close(ts::jvp(inner, x, ts::ones_like(x)).second, ts::cos(x) * 5.0, 1e-15, "jvp(custom_jvp(custom_vjp))");
  expect_close(ts::grad([&](const ts::Array& z) { return ts::sum(inner(z)); })(x), ts::cos(x) * 5.0, 1e-15,
               "grad(custom_jvp(custom_vjp))");
}

TEST(Nesting, CheckpointInsideScanInsideGrad) {
  auto step = ts::checkpoint([](const ts::Array& c, const ts::Array& x) { return ts::sin(c * x) + c; });
  auto f = [&](const ts::Array& c0, const ts::Array& xs) {
    return ts::scan([&](const ts::Array& c, const ts::Array& x) { return Step(step(c, x), c); }, c0, xs).first;
  };
  auto g = [](const ts::Array& c0, const ts::Array& xs) {
    return ts::scan([](const ts::Array& c, const ts::Array& x) { return Step(ts::sin(c * x) + c, c); }, c0, xs).first;
  };
  ts::Array c0 = scalar(0.4), xs = f64s({0.5, 1.5, -0.8});
  auto [a0, axs] = ts::grad<0, 1>(f)(c0, xs);
  auto [b0, bxs] = ts::grad<0, 1>(g)(c0, xs);
  EXPECT_NEAR(a0.item<double>(), b0.item<double>(), 1e-14);
  expect_close(axs, bxs, 1e-14, "grad(scan(checkpoint))");
}

// =================================== program printing ===================================

TEST(ProgramText, GradProgramNamesItsPrimitives) {
  auto f = [](const ts::Array& x) { return ts::sum(ts::sin(x) * x); };
  std::string text = ts::make_program(ts::grad(f), f64s({1.0, 2.0})).to_string();
  EXPECT_TRUE(contains(text, "sin")) << text;
  EXPECT_TRUE(contains(text, "cos")) << text;
  EXPECT_TRUE(contains(text, "mul")) << text;
  EXPECT_TRUE(contains(text, "{ lambda")) << text;
  EXPECT_TRUE(contains(text, "f64[2]")) << text;
}

TEST(ProgramText, ScanAndCondPrintTheirBodies) {
  auto f = [](const ts::Array& x) {
    auto [c, ys] = ts::scan([](const ts::Array& c, const ts::Array& e) { return Step(c + ts::exp(e), ts::tanh(c)); },
                            scalar(0.0), x);
    return ts::cond(
        c > 1.0, [](const ts::Array& a) { return ts::log(a); }, [](const ts::Array& a) { return ts::cosh(a); }, ys);
  };
  ts::Program p = ts::make_program(f, f64s({1.0, 2.0}));
  std::vector<std::string> names = p.primitive_names();
  EXPECT_EQ(count_of(names, "scan"), 1u);
  EXPECT_EQ(count_of(names, "cond"), 1u);
  EXPECT_EQ(count_of(names, "exp"), 0u) << "the body is nested, not inlined";
  std::string text = p.to_string();
  for (const char* s : {"scan[", "cond[", "exp", "tanh", "log", "cosh", "branches=", "length=2"})
    EXPECT_TRUE(contains(text, s)) << s << " missing in\n" << text;
  // The nested bodies are indented below their equation.
  EXPECT_TRUE(contains(text, "\n      ")) << text;
  // The reverse-mode program of the scan holds a transposed scan.
  std::string gtext = ts::make_program(ts::grad([&](const ts::Array& x) { return ts::sum(f(x)); }), f64s({1.0, 2.0}))
                          .to_string();
  size_t scans = 0;
  for (size_t pos = gtext.find("= scan["); pos != std::string::npos; pos = gtext.find("= scan[", pos + 1)) ++scans;
  EXPECT_GE(scans, 2u) << gtext;
}

// ======================================== effects ========================================

// An identity with a side effect that counts its runs.
struct EffectTag {};
using Effect = transform_testing::CountingIdentity<EffectTag>;
std::atomic<int>& g_effects = Effect::runs;
const ts::ir::Primitive& effect_p = Effect::define("cftest_effect", ts::ir::kSideEffect);
void effect(const ts::Array& x) { (void)ts::detail::bind1(effect_p, {x}); }

int effects_of(const std::function<void()>& f) {
  g_effects = 0;
  f();
  return g_effects.load();
}

TEST(Effects, UnusedEffectInsideAJittedGradRuns) {
  auto f = [](const ts::Array& x) {
    effect(x);  // output unused
    return ts::sum(ts::sin(x));
  };
  ts::Array x = f64s({0.1, 0.2});
  EXPECT_EQ(effects_of([&] { ts::grad(f)(x); }), 1);
  auto jg = ts::jit(ts::grad(f));
  EXPECT_EQ(count_of(jg.lower(x).program().primitive_names(), "cftest_effect"), 1u) << jg.lower(x).as_text();
  EXPECT_EQ(effects_of([&] { jg(x); }), 1);
  expect_close(jg(x), ts::cos(x), 1e-15, "gradient");
  EXPECT_EQ(effects_of([&] { ts::jit(ts::vmap(ts::grad(f)))(ts::stack({x, x})); }), 1);
}

TEST(Effects, EffectInACondBranchKeepsTheCondUnderJit) {
  auto f = [](const ts::Array& x) {
    ts::Array unused = ts::cond(
        ts::sum(x) > 0.0,
        [](const ts::Array& a) {
          effect(a);
          return a;
        },
        [](const ts::Array& a) { return a * 2.0; }, x);
    (void)unused;
    return x * 3.0;
  };
  auto pure = [](const ts::Array& x) {
    ts::Array unused = ts::cond(
        ts::sum(x) > 0.0, [](const ts::Array& a) { return ts::sin(a); }, [](const ts::Array& a) { return a * 2.0; }, x);
    (void)unused;
    return x * 3.0;
  };
  ts::Array x = f64s({0.1, 0.2});
  auto jf = ts::jit(f);
  EXPECT_EQ(count_of(jf.lower(x).program().primitive_names(), "cond"), 1u) << jf.lower(x).as_text();
  EXPECT_EQ(count_of(ts::jit(pure).lower(x).program().primitive_names(), "cond"), 0u) << "a pure unused cond is dropped";
  EXPECT_EQ(effects_of([&] { jf(x); }), 1);
  EXPECT_EQ(effects_of([&] { jf(-x); }), 0) << "the effect is in the branch not taken";
  EXPECT_EQ(effects_of([&] { ts::jit(ts::grad([&](const ts::Array& z) { return ts::sum(f(z)); }))(x); }), 1);
}

TEST(Effects, EffectInAScanBodyKeepsTheScanUnderJit) {
  auto f = [](const ts::Array& x) {
    auto unused = ts::scan(
        [](const ts::Array& c, const ts::Array& e) {
          effect(e);
          return Step(c + e, c);
        },
        scalar(0.0), x);
    (void)unused;
    return x * 2.0;
  };
  ts::Array x = f64s({1.0, 2.0, 3.0});
  auto jf = ts::jit(f);
  EXPECT_EQ(count_of(jf.lower(x).program().primitive_names(), "scan"), 1u) << jf.lower(x).as_text();
  EXPECT_EQ(effects_of([&] { jf(x); }), 3);
  EXPECT_EQ(effects_of([&] { ts::jit(ts::grad([&](const ts::Array& z) { return ts::sum(f(z)); }))(x); }), 3);
}

TEST(Effects, EffectInAWhileBodyRunsOncePerTrip) {
  auto f = [](const ts::Array& x, const ts::Array& n) {
    using C = std::pair<ts::Array, ts::Array>;
    auto unused = ts::while_loop([&](const C& c) { return c.first < n; },
                                 [](const C& c) {
                                   effect(c.second);
                                   return C(c.first + 1, c.second);
                                 },
                                 C(ts::Array(ts::Scalar(int32_t(0))), x));
    (void)unused;
    return x + 1.0;
  };
  auto jf = ts::jit(f);
  ts::Array x = f64s({1.0});
  EXPECT_EQ(count_of(jf.lower(x, ts::Array(ts::Scalar(int32_t(4)))).program().primitive_names(), "while"), 1u);
  // A while loop is never inline work (its steps are unknown): wait for the call to run.
  EXPECT_EQ(effects_of([&] { jf(x, ts::Array(ts::Scalar(int32_t(4)))).block_until_ready(); }), 4);
  EXPECT_EQ(effects_of([&] { jf(x, ts::Array(ts::Scalar(int32_t(0)))).block_until_ready(); }), 0);
}

TEST(Effects, BatchedPredicateWithAnEffectfulBranchIsRejected) {
  auto f = [](const ts::Array& x) {
    return ts::cond(
        x > 0.0,
        [](const ts::Array& a) {
          effect(a);
          return a;
        },
        [](const ts::Array& a) { return a * 2.0; }, x);
  };
  try {
    ts::vmap(f)(f64s({1.0, -1.0}));
    FAIL() << "expected NotImplementedError";
  } catch (const ts::NotImplementedError& e) {
    EXPECT_TRUE(contains(e.what(), "cond")) << e.what();
    EXPECT_TRUE(contains(e.what(), "side effects")) << e.what();
  }
  auto w = [](const ts::Array& x) {
    return ts::while_loop([](const ts::Array& v) { return v < 4.0; },
                          [](const ts::Array& v) {
                            effect(v);
                            return v + 1.0;
                          },
                          x);
  };
  try {
    ts::vmap(w)(f64s({1.0, 3.0}));
    FAIL() << "expected NotImplementedError";
  } catch (const ts::NotImplementedError& e) {
    EXPECT_TRUE(contains(e.what(), "while_loop")) << e.what();
    EXPECT_TRUE(contains(e.what(), "side effects")) << e.what();
  }
  // An unbatched predicate is fine: the effect runs once for the whole batch.
  auto g = [](const ts::Array& x, const ts::Array& p) {
    return ts::cond(
        p > 0.0,
        [](const ts::Array& a) {
          effect(a);
          return a;
        },
        [](const ts::Array& a) { return a * 2.0; }, x);
  };
  EXPECT_EQ(effects_of([&] { ts::vmap(g, {0, ts::none})(f64s({1.0, -1.0}), scalar(1.0)); }), 1);
}

}  // namespace
