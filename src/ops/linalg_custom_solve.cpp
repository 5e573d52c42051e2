// lax.custom_linear_solve and lax.custom_root: a solve (or root finder) run forward as the
// user writes it, differentiated by implicit differentiation instead of through its
// iterations. Reverse mode only: both are custom_vjp functions (tessel's custom_jvp cannot
// attach a transpose to the linear solve its rule would apply, so a rule that runs the
// user's solve on tangents would have to be transposed through it, a while loop included).
#include "ops/linalg_composed.h"
#include "tessel/linalg.h"
#include "tessel/transforms.h"

namespace tessel::ops {
namespace {

using ParamList = std::vector<Array>;

/// -(d/dp g(p))^T ct for g: params -> Array (no parameters: nothing).
ParamList params_cotangent(const std::function<Array(const ParamList&)>& g, const ParamList& p, const Array& ct) {
  if (p.empty()) return {};
  auto [unused, pullback] = vjp(g, p);
  ParamList r = pullback(ct);
  for (Array& c : r) c = negative(c);
  return r;
}

/// `run(params, input)` as a custom_vjp function with residuals (params, x = its result)
/// and the backward pass `bwd(params, x, ct) -> (params' cotangents, input's cotangent)`.
template <class Run, class Bwd> Array with_implicit_vjp(Run run, Bwd bwd, const ParamList& params, const Array& input) {
  using Res = std::pair<ParamList, Array>;
  auto fwd = [run](const ParamList& p, const Array& in) {
    Array x = run(p, in);
    return std::make_pair(x, Res(p, x));
  };
  auto back = [bwd](const Res& r, const Array& ct) { return bwd(r.first, r.second, ct); };
  return custom_vjp(run, fwd, back)(params, input);
}

}  // namespace
}  // namespace tessel::ops

namespace tessel::lax::linalg {

Array custom_linear_solve(const LinearOperator& matvec, const std::vector<Array>& params, const Array& b,
                          const LinearSolver& solve, const LinearSolver& transpose_solve, bool symmetric) {
  if (!solve) throw ValueError("lax.linalg.custom_linear_solve: solve is empty; pass a function (matvec, b) -> x");
  auto f = [matvec, solve](const std::vector<Array>& p, const Array& rhs) {
    return solve([&](const Array& x) { return matvec(p, x); }, rhs);
  };
  // x = A^-1 b: the cotangent of b is lambda = A^-T ct (transpose_solve against A^T), that of
  // the operator's parameters -(d(A x)/dp)^T lambda.
  auto bwd = [matvec, solve, transpose_solve, symmetric](const std::vector<Array>& p, const Array& x, const Array& ct) {
    const std::function<Array(const Array&)> op = [&](const Array& y) { return matvec(p, y); };
    if (!symmetric && !transpose_solve)
      throw ValueError("lax.linalg.custom_linear_solve: reverse-mode differentiation needs transpose_solve (or "
                       "symmetric = true, to solve with solve itself)");
    const std::function<Array(const Array&)> vecmat = symmetric ? op : linear_transpose(op, x);
    const Array lambda = (symmetric ? solve : transpose_solve)(vecmat, ct);
    std::vector<Array> ct_p = ops::params_cotangent([&](const std::vector<Array>& q) { return matvec(q, x); }, p, lambda);
    return std::make_tuple(ct_p, lambda);
  };
  return ops::with_implicit_vjp(f, bwd, params, b);
}

Array custom_root(const RootFunction& f, const std::vector<Array>& params, const Array& initial_guess,
                  const RootSolver& solve, const LinearSolver& tangent_solve) {
  if (!solve || !tangent_solve)
    throw ValueError("lax.linalg.custom_root: solve and tangent_solve must both be functions");
  auto run = [f, solve](const std::vector<Array>& p, const Array& x0) {
    return solve([&](const Array& x) { return f(p, x); }, x0);
  };
  // f(x*(p), p) = 0, so dx* = -(df/dx)^-1 (df/dp) dp: the cotangent of p is
  // -(df/dp)^T lambda with lambda = (df/dx)^-T ct; the initial guess has none.
  auto bwd = [f, tangent_solve](const std::vector<Array>& p, const Array& x, const Array& ct) {
    const std::function<Array(const Array&)> at_p = [&](const Array& y) { return f(p, y); };
    const std::function<Array(const Array&)> jacobian = [&](const Array& v) { return jvp(at_p, x, v).second; };
    const std::function<Array(const Array&)> jacobian_t = linear_transpose(jacobian, x);
    const Array lambda = tangent_solve(jacobian_t, ct);
    std::vector<Array> ct_p = ops::params_cotangent([&](const std::vector<Array>& q) { return f(q, x); }, p, lambda);
    return std::make_tuple(ct_p, zeros_like(x));
  };
  return ops::with_implicit_vjp(run, bwd, params, initial_guess);
}

}  // namespace tessel::lax::linalg
