#pragma once
// custom_partitioning (jax.experimental.custom_partitioning): a function whose partitioning
// over a mesh the user describes, for operations the partitioner cannot see through. Under
// a partitioned jit, the user's `partition` callback receives the layouts propagation
// chose and returns per-device code plus the layouts it wants; the partitioner reshards
// the operands to match. Everywhere else (single device, grad, vmap) the function itself
// runs. docs/custom_partitioning.md has the seed example (an FFT that keeps its batch
// sharding).
#include <algorithm>
#include <any>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "tessel/array.h"
#include "tessel/jit.h"
#include "tessel/sharding.h"
#include "tessel/tree.h"

namespace tessel {

/// The shape, dtype and layout of one argument or result (jax.ShapeDtypeStruct with a
/// `.sharding`). Shapes are global (the whole array).
struct ShardedShape {
  Shape shape;
  DType dtype = DType::float32;
  Sharding sharding;
};

/// The static arguments of one call (those in `static_argnums` and those holding no Array),
/// in argument order: read them with `std::any_cast<T>(statics[k])`.
using StaticArgs = std::vector<std::any>;

/// What `partition` returns: the mesh (unset: the program's), the per-device function (it
/// gets one per-device piece per Array argument leaf, laid out by `arg_shardings`, and
/// returns one piece per result leaf, laid out by `result_shardings`), and the layouts.
struct PartitionResult {
  Mesh mesh;
  std::function<std::vector<Array>(const std::vector<Array>&)> lower_fn;
  std::vector<Sharding> result_shardings;
  std::vector<Sharding> arg_shardings;
};

namespace detail {
/// A callback taking `Args...`, optionally preceded by the call's `const StaticArgs&` (as
/// JAX passes static arguments first). Empty when default-constructed.
template <class Sig> class CallbackWithStatics;
template <class R, class... Args> class CallbackWithStatics<R(Args...)> {
 public:
  CallbackWithStatics() = default;
  template <class F>
    requires(!std::is_same_v<std::decay_t<F>, CallbackWithStatics> &&
             (std::is_invocable_r_v<R, const F&, Args...> ||
              std::is_invocable_r_v<R, const F&, const StaticArgs&, Args...>))
  CallbackWithStatics(F f) {  // NOLINT: implicit, so designated initializers take lambdas
    if constexpr (std::is_invocable_r_v<R, const F&, Args...>)
      f_ = [f = std::move(f)](const StaticArgs&, Args... a) -> R { return f(a...); };
    else
      f_ = std::move(f);
  }
  explicit operator bool() const { return bool(f_); }
  R operator()(const StaticArgs& statics, Args... a) const { return f_(statics, a...); }

 private:
  std::function<R(const StaticArgs&, Args...)> f_;
};
}  // namespace detail

/// partition(mesh, arg_shapes, result_shapes) -> PartitionResult
using PartitionFn = detail::CallbackWithStatics<PartitionResult(
    const Mesh&, const std::vector<ShardedShape>&, const std::vector<ShardedShape>&)>;
/// infer_sharding_from_operands(mesh, arg_shapes, result_shapes) -> one sharding per result
using InferShardingFn = detail::CallbackWithStatics<std::vector<Sharding>(
    const Mesh&, const std::vector<ShardedShape>&, const std::vector<ShardedShape>&)>;
/// propagate_user_sharding(mesh, user_shape) -> the sharding this result should have
using PropagateUserShardingFn = detail::CallbackWithStatics<Sharding(const Mesh&, const ShardedShape&)>;

/// The rules of `def_partition` (designated initializers). Each callback may also take the
/// call's `const StaticArgs&` as its first parameter.
struct PartitionOptions {
  /// Required under a partitioned jit: receives the layouts propagation chose for the
  /// arguments (operand layouts) and results, returns the per-device function and the
  /// layouts it works in.
  PartitionFn partition = {};
  /// Result layouts from the argument layouts (propagation forwards). Unset: no
  /// suggestion (propagation decides from the program's other constraints).
  InferShardingFn infer_sharding_from_operands = {};
  /// The layout a result should have given the layout its user wants (propagation
  /// backwards). Unset: the user's layout.
  PropagateUserShardingFn propagate_user_sharding = {};
  /// Accepted for JAX compatibility: shardings are always NamedShardings in tessel.
  bool decode_shardings = true;
  /// A Shardy-style rule instead of the two inference callbacks: `"b i, i j -> b j"` names
  /// a factor per dimension of each argument leaf (left of ->) and result leaf (right,
  /// comma-separated); dimensions sharing a factor are split alike; a factor only on the
  /// left is a summed reduction; a leading `...` stands for the same number of dimensions
  /// in every term that has it. When set it replaces both inference callbacks.
  std::string sharding_rule = {};
};

/// Options of custom_partitioning.
struct CustomPartitioningOptions {
  /// Arguments that are static (passed to the function and, as StaticArgs, to the
  /// callbacks). Arguments holding no Array are static automatically.
  std::vector<int> static_argnums = {};
  /// Name shown in programs and errors; default "fn".
  std::string name = {};
};

namespace detail {
struct CustomPartitioningRules;
/// Checks `opts` (the rule string's syntax) and packs them for calls of `name`.
TESSEL_API std::shared_ptr<const CustomPartitioningRules> make_partitioning_rules(PartitionOptions opts,
                                                                                 const std::string& name);
/// Traces `fn` on `args`' avals and binds the custom_partitioning primitive.
TESSEL_API std::vector<Array> custom_partitioning_flat(const FlatFn& fn, std::span<const Array> args,
                                                       StaticArgs statics,
                                                       const std::shared_ptr<const CustomPartitioningRules>& rules,
                                                       const std::string& name);
[[noreturn]] TESSEL_API void custom_partitioning_bad_static_argnum(const std::string& name, int argnum, int nargs,
                                                                   bool is_array);
}  // namespace detail

/// A function with user-defined partitioning (see custom_partitioning()). Copies share the
/// rules of `def_partition`.
template <class F> class CustomPartitioned {
 public:
  CustomPartitioned(F f, CustomPartitioningOptions opts)
      : f_(std::move(f)), opts_(std::make_shared<CustomPartitioningOptions>(std::move(opts))),
        rules_(std::make_shared<std::shared_ptr<const detail::CustomPartitioningRules>>()) {
    if (opts_->name.empty()) opts_->name = "fn";
  }

  /// Sets the partitioning rules (jax's def_partition). Throws ValueError for a malformed
  /// sharding rule, naming the position. Calls already traced keep the rules they saw.
  CustomPartitioned& def_partition(PartitionOptions opts) {
    *rules_ = detail::make_partitioning_rules(std::move(opts), opts_->name);
    return *this;
  }

  /// Calls the function: eagerly it runs as written; under a partitioned jit its partition
  /// callback decides the per-device code; under grad/vmap the function is transformed.
  template <class... Args> auto operator()(const Args&... args) const {
    using R = std::invoke_result_t<const F&, const Args&...>;
    static_assert(detail::is_tree_v<R>, "custom_partitioning: the function must return an Array or a tree of Arrays");
    constexpr int nargs = int(sizeof...(Args));
    for (int i : opts_->static_argnums)
      if (i < 0 || i >= nargs) detail::custom_partitioning_bad_static_argnum(opts_->name, i, nargs, false);
    std::vector<Array> leaves;
    StaticArgs statics;
    auto one = [&](const auto& a, int i) {
      using A = std::decay_t<decltype(a)>;
      const auto& sa = opts_->static_argnums;
      if constexpr (detail::is_tree_v<A>) {
        if (std::find(sa.begin(), sa.end(), i) != sa.end())
          detail::custom_partitioning_bad_static_argnum(opts_->name, i, nargs, true);
        TreeTraits<A>::for_each(a, [&](const Array& x) { leaves.push_back(x); });
      } else if constexpr (std::is_copy_constructible_v<A>) {
        statics.emplace_back(a);
      } else {
        statics.emplace_back();
      }
    };
    int k = 0;
    (one(args, k++), ...);
    using Tuple = std::tuple<std::decay_t<Args>...>;
    Tuple values{args...};
    auto sample = std::make_shared<R>();
    FlatFn flat = [&](std::span<const Array> tracers) {
      std::vector<Array> tv(tracers.begin(), tracers.end());
      Tuple traced = detail::replace_arg_leaves(values, tv, std::index_sequence_for<Args...>{});
      *sample = std::apply(f_, traced);
      return tree_leaves(*sample);
    };
    std::vector<Array> outs = detail::custom_partitioning_flat(flat, leaves, std::move(statics), *rules_, opts_->name);
    size_t pos = 0;
    return tree_replace_leaves(*sample, outs, pos);
  }

 private:
  using FlatFn = detail::FlatFn;
  F f_;
  std::shared_ptr<CustomPartitioningOptions> opts_;
  std::shared_ptr<std::shared_ptr<const detail::CustomPartitioningRules>> rules_;
};

/// jax.experimental.custom_partitioning: `fn` (Array arguments, trees of Arrays, static
/// values) with partitioning rules given later by `.def_partition({...})`:
///
///   auto my_fft = ts::custom_partitioning([](const ts::Array& x) { return ts::fft::fft(x); });
///   my_fft.def_partition({.partition = partition, .infer_sharding_from_operands = infer});
///   auto y = ts::jit(my_fft, {.in_shardings = {s}, .out_shardings = {s}})(x);
///
/// Shapes given to the callbacks are one per Array leaf of the (non-static) arguments and
/// one per result leaf, in order.
template <class F> CustomPartitioned<std::decay_t<F>> custom_partitioning(F&& fn, CustomPartitioningOptions opts = {}) {
  return CustomPartitioned<std::decay_t<F>>(std::forward<F>(fn), std::move(opts));
}

}  // namespace tessel
