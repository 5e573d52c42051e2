// tessel's side of tests/parity/cases_control.py (include/tessel/control_flow.h and the
// callable functions of include/tessel/lax_extra.h): the same fixed branches and bodies as
// the generator, picked by the case's parameters.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "parity/parity.h"
#include "tessel/control_flow.h"
#include "tessel/lax_extra.h"
#include "tessel/linalg.h"

namespace ts = tessel;
namespace lax = tessel::lax;
using namespace tessel::parity;

namespace {
using Branch = std::function<Array(const Array&, const Array&)>;
using Fn1 = std::function<Array(const Array&)>;

/// cases_control.py's BRANCHES.
const std::vector<Branch>& branches() {
  static const std::vector<Branch> b{[](const Array& x, const Array& y) { return ts::sin(x) * y; },
                                     [](const Array& x, const Array& y) { return ts::cos(x) + y; },
                                     [](const Array& x, const Array& y) { return x * x - y; }};
  return b;
}
Out pair_out(std::pair<Array, Array> v) { return {std::move(v.first), std::move(v.second)}; }
/// cases_control.py's dense_solve: the matrix from matvec's columns, then LU.
Array dense_solve(const Fn1& matvec, const Array& r) {
  const int64_t n = r.shape().at(0);
  std::vector<Array> cols;
  for (int64_t i = 0; i < n; ++i) cols.push_back(matvec(ts::eye(n, std::nullopt, 0, r.dtype())[{i}]));
  return ts::linalg::solve(ts::stack(cols, 1), r);
}
/// fori_loop's body: c * 0.9 + sin(c) * i.
Array fori_body(const Array& i, const Array& c) { return c * 0.9 + ts::sin(c) * i; }
}  // namespace

TESSEL_PARITY_CASES(control) {
  reg("cond", [](const In& x, const Params&) {
    if (x.size() == 2) {  // cond_tree: branches returning (sum or prod, argmax or argmin)
      using R = std::pair<Array, Array>;
      return pair_out(ts::cond(
          x[0], [](const Array& v) { return R(ts::sum(v), ts::argmax(v).astype(ts::DType::int32)); },
          [](const Array& v) { return R(ts::prod(v), ts::argmin(v).astype(ts::DType::int32)); }, x[1]));
    }
    return out(ts::cond(x[0], branches()[0], branches()[1], x[1], x[2]));
  });
  reg("switch_", [](const In& x, const Params&) { return out(ts::switch_(x[0], branches(), x[1], x[2])); });

  reg("while_loop", [](const In& x, const Params& p) {
    const std::string body = p.s("body");
    if (body == "doubling") {  // doubling until every element reaches the limit
      const Array limit(ts::Scalar(p.i("limit"), ts::DType::int32));
      using C = std::pair<Array, Array>;
      return pair_out(ts::while_loop([&](const C& c) { return ts::min(c.first) < limit; },
                                     [](const C& c) { return C(c.first * 2, c.second + c.first); },
                                     C(x[0], ts::zeros_like(x[0]))));
    }
    const Array limit(ts::Scalar(p.f("limit"), x[0].dtype()));
    if (body == "count") {  // steps until the sum passes the limit, and the last value
      using C = std::pair<Array, Array>;
      return pair_out(ts::while_loop([&](const C& c) { return c.second < limit; },
                                     [](const C& c) { return C(c.first + 1, c.second * 1.5 + 0.25); },
                                     C(Array(ts::Scalar(0, ts::DType::int32)), ts::sum(x[0]))));
    }
    return out(ts::while_loop([&](const Array& c) { return ts::max(c) < limit; },
                              [](const Array& c) { return c * 1.5 + ts::sin(c); }, x[0]));
  });

  reg("fori_loop", [](const In& x, const Params& p) {
    if (x.size() == 3) return out(ts::fori_loop(x[0], x[1], fori_body, x[2]));
    return out(ts::fori_loop(p.i("lower"), p.i("upper"), fori_body, x[0]));
  });

  reg("scan", [](const In& x, const Params& p) {
    if (p.has("length")) {  // no xs
      auto [c, ys] = ts::scan([](const Array& a, const std::nullopt_t&) { return std::make_pair(ts::sin(a) + 1.0, a * 2.0); },
                              x[0], ts::none, {.length = p.i("length")});
      return Out{c, ys};
    }
    if (p.has("reverse")) {
      auto [c, ys] = ts::scan([](const Array& a, const Array& b) { return std::make_pair(a * ts::cos(b) + b, a * b); },
                              x[0], x[1], {.reverse = p.flag("reverse")});
      return Out{c, ys};
    }
    if (x.size() == 3) {  // scan_pairs: a carry of two arrays, two outputs per step
      using P = std::pair<Array, Array>;
      auto [c, ys] = ts::scan(
          [](const P& cd, const Array& b) {
            return std::make_pair(P(cd.first + b, cd.second * b), P(cd.first - b, ts::sum(cd.second)));
          },
          P(x[0], x[1]), x[2]);
      return Out{c.first, c.second, ys.first, ys.second};
    }
    auto [c, ys] = ts::scan([](const Array& a, const Array& b) { return std::make_pair(a + b, a * b); }, x[0], x[1]);
    return Out{c, ys};
  });

  reg("stop_gradient",
      [](const In& x, const Params&) { return out(x[0] * ts::stop_gradient(x[0]) + ts::stop_gradient(ts::sin(x[0]))); });
  reg("lax.composite", [](const In& x, const Params&) {
    auto softplus2 = lax::composite([](const Array& u) { return ts::log1p(ts::exp(u)) * 2.0; }, "my.softplus2");
    return out(softplus2(x[0]));
  });
  reg("lax.empty", [](const In&, const Params& p) {
    return out(ts::zeros_like(lax::empty(p.ints("shape"), p.dtype("dtype"))));
  });

  reg("lax.custom_linear_solve", [](const In& x, const Params& p) {
    auto matvec = [](const std::vector<Array>& params, const Array& v) { return ts::matmul(params[0], v); };
    return out(lax::custom_linear_solve(matvec, {x[0]}, x[1], dense_solve, dense_solve, p.flag("symmetric")));
  });
  reg("lax.custom_root", [](const In& x, const Params&) {
    auto f = [](const std::vector<Array>& params, const Array& v) { return v * v - params[0]; };
    auto newton = [](const Fn1& g, const Array& x0) {
      Array v = x0;
      for (int i = 0; i < 8; ++i) v = v - g(v) / (2.0 * v);
      return v;
    };
    auto tangent_solve = [](const Fn1& g, const Array& y) { return y / g(ts::ones_like(y)); };
    return out(lax::custom_root(f, {x[0]}, ts::ones_like(x[0]), newton, tangent_solve));
  });
  for (const char* f : {"lax.custom_linear_solve", "lax.custom_root"})
    reverse_mode_only(f, "tessel defines it with a custom vjp rule (implicit differentiation), which has no forward mode");
}
