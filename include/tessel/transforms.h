#pragma once
// Transformations of functions, as in JAX: forward mode (jvp, linearize, jacfwd), reverse
// mode (vjp, grad, value_and_grad, jacrev, hessian, linear_transpose), vectorization (vmap)
// and stop_gradient. Each takes a C++ callable over Arrays (or trees of Arrays, see tree.h)
// and returns a callable; they nest (`grad(grad(f))`, `vmap(grad(f))`, `jit(vmap(f))`).
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tessel/jit.h"
#include "tessel/ops.h"
#include "tessel/tree.h"

namespace tessel {

/// The value with its gradient cut: forward it is the identity, its derivative is zero.
TESSEL_API Array stop_gradient(const Array& x);

namespace detail {
struct LinearState;
/// Forward mode on flat leaves: (outputs, output tangents, zeros instantiated).
TESSEL_API std::pair<std::vector<Array>, std::vector<Array>> jvp_flat(const FlatFn& fn, std::span<const Array> primals,
                                                                      std::span<const Array> tangents);
/// Linearizes: the outputs, and the linear map from input tangents to output tangents.
TESSEL_API std::pair<std::vector<Array>, std::shared_ptr<const LinearState>> linearize_flat(
    const FlatFn& fn, std::span<const Array> primals);
/// Traces a function that is linear in all its inputs (for linear_transpose).
TESSEL_API std::shared_ptr<const LinearState> trace_linear_flat(const FlatFn& fn, std::span<const Aval> in_avals);
/// The linear map forward (tangents -> output tangents).
TESSEL_API std::vector<Array> linear_apply(const LinearState& s, std::span<const Array> tangents);
/// The linear map transposed (output cotangents -> input cotangents, zeros instantiated).
TESSEL_API std::vector<Array> linear_transpose_apply(const LinearState& s, std::span<const Array> cts,
                                                     const char* op);
/// vmap on flat leaves.
TESSEL_API std::vector<Array> vmap_flat(const FlatFn& fn, std::span<const Array> args,
                                        std::span<const std::optional<int64_t>> in_axes,
                                        std::span<const std::optional<int64_t>> out_axes,
                                        std::optional<int64_t> axis_size);
/// custom rules on flat leaves: jvp(primals, tangents) -> outs ++ tangent outs;
/// fwd(primals) -> outs ++ residuals; bwd(residuals, output cts) -> argument cts.
using CustomJvpRule = std::function<std::vector<Array>(std::span<const Array>, std::span<const Array>)>;
using CustomFwdRule = std::function<std::vector<Array>(std::span<const Array>)>;
using CustomBwdRule = std::function<std::vector<Array>(std::span<const Array>, std::span<const Array>)>;
TESSEL_API std::vector<Array> custom_jvp_flat(const FlatFn& f, const CustomJvpRule& rule, std::span<const Array> args);
TESSEL_API std::vector<Array> custom_vjp_flat(const FlatFn& f, const CustomFwdRule& fwd, const CustomBwdRule& bwd,
                                              std::span<const Array> args);
[[noreturn]] TESSEL_API void transform_error(const std::string& message);
TESSEL_API void check_grad_output(const char* op, const Array& out, size_t num_outputs);
/// Throws DTypeError naming `op` unless `x` is floating or complex; `fix` says what to do
/// instead (default: grad's advice, convert it or leave it out of argnums).
TESSEL_API void check_differentiable(const char* op, const Array& x, int argnum, const char* fix = nullptr);

template <class T> struct is_pair : std::false_type {};
template <class A, class B> struct is_pair<std::pair<A, B>> : std::true_type {};

/// Leaves of the selected arguments, in order.
template <class Tuple, size_t... I>
std::vector<Array> selected_leaves(const Tuple& t, const std::vector<bool>& sel, std::index_sequence<I...>) {
  std::vector<Array> out;
  auto one = [&](const auto& a, size_t i) {
    using A = std::decay_t<decltype(a)>;
    if constexpr (is_tree_v<A>)
      if (sel[i]) TreeTraits<A>::for_each(a, [&](const Array& x) { out.push_back(x); });
  };
  (one(std::get<I>(t), I), ...);
  return out;
}
/// A copy of the arguments with the selected arguments' leaves replaced in order.
template <class Tuple, size_t... I>
Tuple replace_selected(const Tuple& t, const std::vector<bool>& sel, std::span<const Array> leaves,
                       std::index_sequence<I...>) {
  std::vector<Array> v(leaves.begin(), leaves.end());
  size_t pos = 0;
  auto one = [&](const auto& a, size_t i) {
    using A = std::decay_t<decltype(a)>;
    if constexpr (is_tree_v<A>) {
      if (sel[i]) return tree_replace_leaves(a, v, pos);
    }
    return a;
  };
  return Tuple{one(std::get<I>(t), I)...};
}
template <int... A> std::vector<bool> argnum_mask(size_t n) {
  std::vector<bool> m(n, false);
  if constexpr (sizeof...(A) == 0) {
    if (n > 0) m[0] = true;
  } else {
    for (int a : {A...}) {
      if (a < 0 || size_t(a) >= n)
        transform_error("grad: argnums lists argument " + std::to_string(a) + " but the function is called with " +
                        std::to_string(n) + " arguments");
      m[size_t(a)] = true;
    }
  }
  return m;
}

/// `f` applied to `args`, seen as a function of the Array leaves of the selected arguments
/// (all by default): `fn()` re-runs f on new leaves and keeps a sample of the result, from
/// which `rebuild` makes trees of outputs.
template <class F, class... Args> class FlatCall {
 public:
  using R = std::invoke_result_t<const F&, const Args&...>;
  using Tuple = std::tuple<Args...>;
  FlatCall(const F& f, std::vector<bool> selected, const Args&... args)
      : f_(f), values_(args...), sel_(std::move(selected)), sample_(std::make_shared<R>()) {
    if (sel_.empty()) sel_.assign(sizeof...(Args), true);
  }
  /// The leaves of the selected arguments.
  std::vector<Array> leaves() const { return selected_leaves(values_, sel_, seq()); }
  FlatFn fn() const {
    return [this](std::span<const Array> xs) {
      *sample_ = std::apply(f_, args_with(xs));
      return tree_leaves(*sample_);
    };
  }
  /// An output tree with leaves from `leaves[pos...]` (after fn() ran).
  R rebuild(const std::vector<Array>& leaves, size_t pos = 0) const { return tree_replace_leaves(*sample_, leaves, pos); }
  /// The arguments with the selected leaves replaced.
  Tuple args_with(std::span<const Array> leaves) const { return replace_selected(values_, sel_, leaves, seq()); }
  /// A copyable function doing args_with (for closures that outlive this object).
  auto args_rebuilder() const {
    return [values = values_, sel = sel_](std::span<const Array> leaves) {
      return replace_selected(values, sel, leaves, seq());
    };
  }
  const std::shared_ptr<R>& sample() const { return sample_; }

 private:
  static constexpr auto seq() { return std::index_sequence_for<Args...>{}; }
  const F& f_;
  Tuple values_;
  std::vector<bool> sel_;
  std::shared_ptr<R> sample_;
};

/// The cotangent of the arguments as returned to users: the argument for one, else a tuple.
template <class Tuple> auto unwrap_single(Tuple&& t) {
  if constexpr (std::tuple_size_v<std::decay_t<Tuple>> == 1) return std::get<0>(std::forward<Tuple>(t));
  else return std::forward<Tuple>(t);
}
}  // namespace detail

// ---- forward mode ----

/// (f(primals...), the derivative of f at primals applied to tangents). `primals` and
/// `tangents` are tuples of the arguments (trees of Arrays with equal shapes and dtypes).
/// An integer or bool primal takes an empty `Array()` as tangent (JAX's float0 zero); any
/// other tangent for it is a DTypeError.
template <class F, class... Args>
auto jvp(const F& f, const std::tuple<Args...>& primals, const std::tuple<Args...>& tangents) {
  using R = std::invoke_result_t<const F&, const Args&...>;
  static_assert(detail::is_tree_v<R>, "jvp: the function must return an Array or a tree of Arrays");
  auto call = std::apply([&](const Args&... a) { return detail::FlatCall<F, Args...>(f, {}, a...); }, primals);
  std::vector<bool> all(sizeof...(Args), true);
  std::vector<Array> t = detail::selected_leaves(tangents, all, std::index_sequence_for<Args...>{});
  auto [outs, touts] = detail::jvp_flat(call.fn(), call.leaves(), t);
  return std::pair<R, R>(call.rebuild(outs), call.rebuild(touts));
}
/// jvp of a function of one argument.
template <class F, class A> auto jvp(const F& f, const A& primal, const A& tangent) {
  return jvp(f, std::tuple<A>(primal), std::tuple<A>(tangent));
}

/// (f(primals...), f_jvp) where f_jvp(tangents...) applies the derivative at primals: the
/// primal computation runs once, f_jvp replays only the linear part.
template <class F, class... Args> auto linearize(const F& f, const Args&... primals) {
  using R = std::invoke_result_t<const F&, const Args&...>;
  detail::FlatCall<F, Args...> call(f, {}, primals...);
  auto [outs, state] = detail::linearize_flat(call.fn(), call.leaves());
  std::function<R(const Args&...)> f_jvp = [state, sample = call.sample()](const Args&... ts) {
    std::vector<bool> all(sizeof...(Args), true);
    std::vector<Array> leaves = detail::selected_leaves(std::tuple<Args...>{ts...}, all, std::index_sequence_for<Args...>{});
    size_t p = 0;
    return tree_replace_leaves(*sample, detail::linear_apply(*state, leaves), p);
  };
  return std::make_pair(call.rebuild(outs), std::move(f_jvp));
}

// ---- reverse mode ----

/// (f(primals...), f_vjp) where f_vjp(cotangent of the output) returns the cotangents of
/// the arguments: the argument itself for one argument, else a std::tuple of them.
template <class F, class... Args> auto vjp(const F& f, const Args&... primals) {
  using R = std::invoke_result_t<const F&, const Args&...>;
  static_assert(detail::is_tree_v<R>, "vjp: the function must return an Array or a tree of Arrays");
  detail::FlatCall<F, Args...> call(f, {}, primals...);
  auto [outs, state] = detail::linearize_flat(call.fn(), call.leaves());
  R y = call.rebuild(outs);
  auto f_vjp = [state, rebuild_args = call.args_rebuilder()](const R& ct) {
    return detail::unwrap_single(rebuild_args(detail::linear_transpose_apply(*state, tree_leaves(ct), "vjp")));
  };
  return std::make_pair(std::move(y), std::function<decltype(f_vjp(y))(const R&)>(f_vjp));
}

/// Options of grad and value_and_grad.
struct GradOptions {
  /// The function returns std::pair<Array, Aux>: the scalar to differentiate and auxiliary
  /// data returned alongside the gradient.
  bool has_aux = false;
};

namespace detail {
/// value_and_grad's work: ((value or (value, aux)), gradients of the Argnums arguments).
template <int... Argnums, class F, class... Args>
auto value_and_grad_impl(const char* op, const F& f, const GradOptions& opts, const Args&... args) {
  using R = std::invoke_result_t<const F&, const Args&...>;
  constexpr bool aux = is_pair<R>::value;
  if (opts.has_aux != aux) {
    if (aux) transform_error(std::string(op) + ": the function returns a pair; if its second element is auxiliary "
                             "data, pass {.has_aux = true}");
    transform_error(std::string(op) + ": has_aux is set, so the function must return std::pair<Array, Aux>");
  }
  FlatCall<F, Args...> call(f, argnum_mask<Argnums...>(sizeof...(Args)), args...);
  std::vector<Array> primals = call.leaves();
  for (size_t i = 0; i < primals.size(); ++i) check_differentiable(op, primals[i], int(i));
  auto [outs, state] = linearize_flat(call.fn(), primals);
  check_grad_output(op, outs.at(0), aux ? 1 : outs.size());
  std::vector<Array> cts(outs.size());
  cts[0] = ones(outs[0].shape(), outs[0].dtype());
  auto gt = call.args_with(linear_transpose_apply(*state, cts, op));
  R value = call.rebuild(outs);
  auto grads = [&] {
    if constexpr (sizeof...(Argnums) <= 1) return std::get<(sizeof...(Argnums) == 0 ? 0 : (Argnums + ... + 0))>(gt);
    else return std::make_tuple(std::get<Argnums>(gt)...);
  }();
  return std::make_pair(std::move(value), std::move(grads));
}
}  // namespace detail

/// value_and_grad<argnums...>(f, opts): a function returning (f(args...), gradient). The
/// gradient is taken w.r.t. argument 0 by default, or w.r.t. the listed arguments (then it
/// is a std::tuple). f must return a scalar float Array (or (scalar, aux) with has_aux).
template <int... Argnums, class F> auto value_and_grad(F f, GradOptions opts = {}) {
  return [f = std::move(f), opts](const auto&... args) {
    return detail::value_and_grad_impl<Argnums...>("value_and_grad", f, opts, args...);
  };
}

/// grad<argnums...>(f, opts): the gradient of a scalar-valued f (see value_and_grad); with
/// has_aux it returns (gradient, aux).
template <int... Argnums, class F> auto grad(F f, GradOptions opts = {}) {
  return [f = std::move(f), opts](const auto&... args) {
    auto [value, g] = detail::value_and_grad_impl<Argnums...>("grad", f, opts, args...);
    if constexpr (detail::is_pair<decltype(value)>::value) return std::make_pair(std::move(g), std::move(value.second));
    else return g;
  };
}

/// The Jacobian of an Array -> Array function by forward mode: shape out.shape + in.shape.
/// Further arguments are passed through (not differentiated).
template <class F> auto jacfwd(F f);
/// The Jacobian by reverse mode (better when outputs are fewer than inputs).
template <class F> auto jacrev(F f);
/// The Hessian: jacfwd(jacrev(f)).
template <class F> auto hessian(F f) { return jacfwd(jacrev(std::move(f))); }

/// The transpose of a linear function: returns ct -> cotangents of the arguments (the
/// argument type for one argument, else a tuple). `primals` give the argument shapes.
template <class F, class... Args> auto linear_transpose(const F& f, const Args&... primals) {
  using R = std::invoke_result_t<const F&, const Args&...>;
  detail::FlatCall<F, Args...> call(f, {}, primals...);
  std::vector<Aval> avals;
  for (const Array& x : call.leaves()) avals.push_back(x.aval());
  auto state = detail::trace_linear_flat(call.fn(), avals);
  return [state, rebuild_args = call.args_rebuilder()](const R& ct) {
    return detail::unwrap_single(
        rebuild_args(detail::linear_transpose_apply(*state, tree_leaves(ct), "linear_transpose")));
  };
}

// ---- vectorization ----

/// A mapped-axis index, or ts::none for an unmapped argument/output.
using AxisSpec = std::optional<int64_t>;

/// vmap(f, in_axes, out_axes, axis_size): f mapped over an axis of its arguments.
/// `in_axes` has one entry per argument (applied to all its leaves; empty = all 0, ts::none
/// = not mapped); `out_axes` one per output leaf or a single entry for all (empty = 0).
/// `axis_size` is required when no argument is mapped.
template <class F>
auto vmap(F f, std::vector<AxisSpec> in_axes = {}, std::vector<AxisSpec> out_axes = {},
          std::optional<int64_t> axis_size = std::nullopt) {
  return [f = std::move(f), in_axes, out_axes, axis_size](const auto&... args) {
    using R = std::invoke_result_t<const F&, const std::decay_t<decltype(args)>&...>;
    static_assert(detail::is_tree_v<R>, "vmap: the function must return an Array or a tree of Arrays");
    constexpr size_t n = sizeof...(args);
    if (!in_axes.empty() && in_axes.size() != n)
      detail::transform_error("vmap: in_axes has " + std::to_string(in_axes.size()) +
                              " entries but the function is called with " + std::to_string(n) +
                              " arguments; give one axis (or ts::none) per argument");
    detail::FlatCall<F, std::decay_t<decltype(args)>...> call(f, {}, args...);
    std::vector<AxisSpec> leaf_axes;
    size_t i = 0;
    auto one = [&](const auto& a) {
      for (size_t k = tree_leaves(a).size(); k > 0; --k) leaf_axes.push_back(in_axes.empty() ? AxisSpec(0) : in_axes[i]);
      ++i;
    };
    (one(args), ...);
    return call.rebuild(detail::vmap_flat(call.fn(), call.leaves(), leaf_axes, out_axes, axis_size));
  };
}

// ---- custom derivative rules and rematerialization ----

/// A function with a user-defined forward-mode rule (jax.custom_jvp); see custom_jvp().
template <class F, class J> class CustomJvp {
 public:
  CustomJvp(F f, J rule) : f_(std::move(f)), rule_(std::move(rule)) {}
  /// Calls f; under jvp/grad the rule gives the derivative. Works under jit and vmap.
  template <class... Args> auto operator()(const Args&... args) const {
    using R = std::invoke_result_t<const F&, const Args&...>;
    static_assert(detail::is_tree_v<R>, "custom_jvp: the function must return an Array or a tree of Arrays");
    detail::FlatCall<F, Args...> call(f_, {}, args...);
    detail::CustomJvpRule rule = [rule = rule_, args_with = call.args_rebuilder()](std::span<const Array> ps,
                                                                                   std::span<const Array> ts) {
      std::pair<R, R> r = rule(args_with(ps), args_with(ts));
      std::vector<Array> out = tree_leaves(r.first), t = tree_leaves(r.second);
      out.insert(out.end(), t.begin(), t.end());
      return out;
    };
    return call.rebuild(detail::custom_jvp_flat(call.fn(), rule, call.leaves()));
  }

 private:
  F f_;
  J rule_;
};

/// jax.custom_jvp: `f` whose jvp is `rule(primals, tangents) -> std::pair(outputs, output
/// tangents)`, with primals and tangents passed as std::tuple of the arguments. Reverse mode
/// works through the rule too (it must be linear in the tangents).
template <class F, class J> CustomJvp<F, J> custom_jvp(F f, J rule) { return {std::move(f), std::move(rule)}; }

/// A function with user-defined reverse-mode rules (jax.custom_vjp); see custom_vjp().
template <class F, class Fwd, class Bwd> class CustomVjp {
 public:
  CustomVjp(F f, Fwd fwd, Bwd bwd) : f_(std::move(f)), fwd_(std::move(fwd)), bwd_(std::move(bwd)) {}
  template <class... Args> auto operator()(const Args&... args) const {
    using FwdOut = std::invoke_result_t<const Fwd&, const Args&...>;
    using Res = typename FwdOut::second_type;
    detail::FlatCall<F, Args...> call(f_, {}, args...);
    auto res_sample = std::make_shared<Res>();
    detail::CustomFwdRule fwd = [fwd = fwd_, args_with = call.args_rebuilder(), res_sample](std::span<const Array> ps) {
      FwdOut r = std::apply(fwd, args_with(ps));
      *res_sample = r.second;
      std::vector<Array> out = tree_leaves(r.first), res = tree_leaves(r.second);
      out.insert(out.end(), res.begin(), res.end());
      return out;
    };
    detail::CustomBwdRule bwd = [bwd = bwd_, sample = call.sample(), res_sample](std::span<const Array> res,
                                                                                 std::span<const Array> cts) {
      std::vector<Array> rv(res.begin(), res.end()), cv(cts.begin(), cts.end());
      size_t a = 0, b = 0;
      return tree_leaves(bwd(tree_replace_leaves(*res_sample, rv, a), tree_replace_leaves(*sample, cv, b)));
    };
    return call.rebuild(detail::custom_vjp_flat(call.fn(), fwd, bwd, call.leaves()));
  }

 private:
  F f_;
  Fwd fwd_;
  Bwd bwd_;
};

/// jax.custom_vjp: `f` with `fwd(args...) -> std::pair(outputs, residuals)` and
/// `bwd(residuals, output cotangent) -> cotangents of the arguments` (the argument for one
/// argument, else a std::tuple; residuals may be any tree). Forward mode is not available.
template <class F, class Fwd, class Bwd> CustomVjp<F, Fwd, Bwd> custom_vjp(F f, Fwd fwd, Bwd bwd) {
  return {std::move(f), std::move(fwd), std::move(bwd)};
}

/// What checkpoint may keep from the forward pass for the backward pass (the rest is
/// recomputed): jax.checkpoint_policies.
enum class CheckpointPolicy { nothing_saveable, dots_saveable, everything_saveable };
struct CheckpointOptions {
  CheckpointPolicy policy = CheckpointPolicy::nothing_saveable;
};
namespace detail {
TESSEL_API std::vector<Array> checkpoint_flat(const FlatFn& f, std::span<const Array> args, CheckpointPolicy policy);
}

/// jax.checkpoint (remat): f, but reverse mode stores only what the policy saves and
/// recomputes the rest of f during the backward pass (trading compute for memory).
template <class F> auto checkpoint(F f, CheckpointOptions opts = {}) {
  return [f = std::move(f), opts](const auto&... args) {
    detail::FlatCall<F, std::decay_t<decltype(args)>...> call(f, {}, args...);
    return call.rebuild(detail::checkpoint_flat(call.fn(), call.leaves(), opts.policy));
  };
}
/// Alias of checkpoint.
template <class F> auto remat(F f, CheckpointOptions opts = {}) { return checkpoint(std::move(f), opts); }

template <class F> auto jacfwd(F f) {
  return [f = std::move(f)](const Array& x, const auto&... rest) {
    detail::check_differentiable("jacfwd", x, 0, "Convert it with astype, or use jvp directly");
    Array y = f(x, rest...);
    int64_t n = x.size();
    Array basis = reshape(eye(n, std::nullopt, 0, x.dtype()), [&] {
      Shape s{n};
      s.insert(s.end(), x.shape().begin(), x.shape().end());
      return s;
    }());
    auto push = [&](const Array& t) { return jvp([&](const Array& z) { return f(z, rest...); }, x, t).second; };
    Array cols = vmap(push)(basis);  // [n, *y.shape]
    Shape out = y.shape();
    out.insert(out.end(), x.shape().begin(), x.shape().end());
    return reshape(transpose(reshape(cols, {n, y.size()})), out);
  };
}

template <class F> auto jacrev(F f) {
  return [f = std::move(f)](const Array& x, const auto&... rest) {
    detail::check_differentiable("jacrev", x, 0, "Convert it with astype, or use vjp directly");
    auto [y, pullback] = vjp([&](const Array& z) { return f(z, rest...); }, x);
    int64_t m = y.size();
    Shape bs{m};
    bs.insert(bs.end(), y.shape().begin(), y.shape().end());
    Array basis = reshape(eye(m, std::nullopt, 0, y.dtype()), bs);
    Array rows = vmap([&](const Array& ct) { return pullback(ct); })(basis);  // [m, *x.shape]
    Shape out = y.shape();
    out.insert(out.end(), x.shape().begin(), x.shape().end());
    return reshape(rows, out);
  };
}

}  // namespace tessel
