#pragma once
// Structured control flow, as in jax.lax: cond / switch_, while_loop, fori_loop and scan.
// The functions are traced once into programs (so they work under jit, grad and vmap);
// the branches and bodies take and return Arrays or trees of Arrays (tree.h).
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tessel/jit.h"
#include "tessel/ops.h"
#include "tessel/transforms.h"

namespace tessel {

namespace detail {
TESSEL_API std::vector<Array> cond_flat(const Array& index, std::span<const FlatFn> branches,
                                        std::span<const Array> operands);
TESSEL_API std::vector<Array> while_flat(const FlatFn& cond, const FlatFn& body, std::span<const Array> init);
TESSEL_API std::vector<Array> scan_flat(const FlatFn& body, std::span<const Array> init, std::span<const Array> xs,
                                        std::optional<int64_t> length, bool reverse);

/// Runs a switch over `branches` (callables of the operands returning R).
template <class R, class Fs, class... Ops>
R switch_impl(const Array& index, const Fs& branches, const Ops&... operands) {
  static_assert(is_tree_v<R>, "cond/switch_: branches must return an Array or a tree of Arrays");
  using Tuple = std::tuple<Ops...>;
  auto seq = std::index_sequence_for<Ops...>{};
  std::vector<bool> all(sizeof...(Ops), true);
  Tuple values{operands...};
  auto sample = std::make_shared<R>();
  std::vector<FlatFn> flat;
  for (const auto& fn : branches)
    flat.push_back([&values, &all, sample, seq, f = &fn](std::span<const Array> xs) {
      *sample = std::apply(*f, replace_selected(values, all, xs, seq));
      return tree_leaves(*sample);
    });
  std::vector<Array> outs = cond_flat(index, flat, selected_leaves(values, all, seq));
  size_t pos = 0;
  return tree_replace_leaves(*sample, outs, pos);
}
}  // namespace detail

/// pred ? true_fn(operands...) : false_fn(operands...), traced as one `cond` (both branches
/// are traced; one runs). pred: a bool (or integer, nonzero = true) scalar Array.
template <class TF, class FF, class... Ops>
auto cond(const Array& pred, const TF& true_fn, const FF& false_fn, const Ops&... operands) {
  using R = std::invoke_result_t<const TF&, const Ops&...>;
  static_assert(std::is_same_v<R, std::invoke_result_t<const FF&, const Ops&...>>,
                "cond: both branches must return the same C++ type");
  std::vector<std::function<R(const Ops&...)>> fns{false_fn, true_fn};
  Array index = pred.dtype() == DType::bool_ ? pred : not_equal(pred, Array(0));
  return detail::switch_impl<R>(index, fns, operands...);
}

/// branches[index](operands...), with index clamped into range (lax.switch).
template <class F, class... Ops>
auto switch_(const Array& index, const std::vector<F>& branches, const Ops&... operands) {
  using R = std::invoke_result_t<const F&, const Ops&...>;
  if (branches.empty()) detail::transform_error("switch_: give at least one branch");
  return detail::switch_impl<R>(index, branches, operands...);
}

/// while cond_fn(carry): carry = body_fn(carry). Forward-mode differentiable and batchable;
/// reverse mode needs a static trip count (use fori_loop with int bounds, or scan).
template <class C, class B, class T> T while_loop(const C& cond_fn, const B& body_fn, const T& init) {
  static_assert(detail::is_tree_v<T>, "while_loop: the carry must be an Array or a tree of Arrays");
  auto sample = std::make_shared<T>(init);
  detail::FlatFn c = [&](std::span<const Array> xs) {
    size_t pos = 0;
    std::vector<Array> v(xs.begin(), xs.end());
    return std::vector<Array>{cond_fn(tree_replace_leaves(init, v, pos))};
  };
  detail::FlatFn b = [&](std::span<const Array> xs) {
    size_t pos = 0;
    std::vector<Array> v(xs.begin(), xs.end());
    T next = body_fn(tree_replace_leaves(init, v, pos));
    return tree_leaves(next);
  };
  std::vector<Array> outs = detail::while_flat(c, b, tree_leaves(init));
  size_t pos = 0;
  return tree_replace_leaves(init, outs, pos);
}

/// Options of scan.
struct ScanOptions {
  /// Number of steps; required when there are no xs.
  std::optional<int64_t> length = std::nullopt;
  /// Scan from the last element of xs to the first (ys keep their order).
  bool reverse = false;
};

/// lax.scan: `f(carry, x) -> std::pair(carry, y)` over the leading axis of xs; returns the
/// final carry and the stacked ys. xs may be ts::none (then pass .length).
template <class F, class C, class X> auto scan(const F& f, const C& init, const X& xs, ScanOptions opts = {}) {
  // x is one slice of xs, of the same C++ type (ts::none stays none).
  using P = std::invoke_result_t<const F&, const C&, const X&>;
  using Y = typename P::second_type;
  static_assert(detail::is_tree_v<C> || std::is_same_v<C, std::tuple<>>, "scan: the carry must be a tree of Arrays");
  const size_t nc = tree_leaves(init).size();
  auto ysample = std::make_shared<Y>();
  detail::FlatFn body = [&](std::span<const Array> v) {
    std::vector<Array> all(v.begin(), v.end());
    size_t pos = 0;
    C c = tree_replace_leaves(init, all, pos);
    X x = tree_replace_leaves(xs, all, pos);
    P r = f(c, x);
    *ysample = r.second;
    std::vector<Array> out = tree_leaves(r.first), ys = tree_leaves(r.second);
    out.insert(out.end(), ys.begin(), ys.end());
    return out;
  };
  std::vector<Array> outs = detail::scan_flat(body, tree_leaves(init), tree_leaves(xs), opts.length, opts.reverse);
  size_t pos = 0, ypos = nc;
  C carry = tree_replace_leaves(init, outs, pos);
  Y ys = tree_replace_leaves(*ysample, outs, ypos);
  return std::make_pair(std::move(carry), std::move(ys));
}

namespace detail {
/// The dtype of fori_loop's index for bounds `lower` and `upper`, by lax.fori_loop's rule:
/// their common dtype, or for two signed integer dtypes of which one is weak (a C++
/// literal), the strong one. Other pairs (an integer and a float bound) are a DTypeError.
TESSEL_API DType fori_index_dtype(const Array& lower, const Array& upper);
}  // namespace detail

/// fori_loop with bounds known only at run time (Array scalars): a while_loop whose index
/// has the bounds' dtype (see detail::fori_index_dtype; mixed integer and float bounds are
/// a DTypeError, as in JAX).
template <class B, class T> T fori_loop(const Array& lower, const Array& upper, const B& body, const T& init) {
  const DType d = detail::fori_index_dtype(lower, upper);
  using Carry = std::tuple<Array, Array, T>;
  Carry c = while_loop([](const Carry& c) { return std::get<0>(c) < std::get<1>(c); },
                       [&](const Carry& c) { return Carry(std::get<0>(c) + 1, std::get<1>(c), body(std::get<0>(c), std::get<2>(c))); },
                       Carry(lower.dtype() == d ? lower : astype(lower, d), upper.dtype() == d ? upper : astype(upper, d), init));
  return std::get<2>(c);
}

/// for i in [lower, upper): carry = body(i, carry). Integer C++ bounds run as a scan
/// (reverse-mode differentiable) with i an int32 scalar Array; floating C++ bounds run as
/// the Array overload does, with a float32 i, and an integer bound with a floating one is a DTypeError
/// (`fori_loop(0, 5.5, ...)`: JAX refuses it too).
template <class L, class U, class B, class T>
  requires(std::is_arithmetic_v<L> && std::is_arithmetic_v<U>)
T fori_loop(L lower, U upper, const B& body, const T& init) {
  if constexpr (std::is_integral_v<L> && std::is_integral_v<U>) {
    using Carry = std::pair<Array, T>;
    auto [final_carry, unused] = scan(
        [&](const Carry& c, const std::nullopt_t&) {
          return std::make_pair(Carry(c.first + 1, body(c.first, c.second)), std::tuple<>());
        },
        Carry(Array(int32_t(lower)), init), std::nullopt,
        {.length = std::max<int64_t>(0, int64_t(upper) - int64_t(lower))});
    return final_carry.second;
  } else {
    // Index dtypes as JAX gives Python numbers: int32, and float32 (not a C++ double's float64).
    auto bound = [](auto v) {
      if constexpr (std::is_integral_v<decltype(v)>) return Array(int32_t(v));
      else return Array(float(v));
    };
    return fori_loop(bound(lower), bound(upper), body, init);
  }
}

}  // namespace tessel
