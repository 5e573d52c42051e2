#pragma once
// shard_map (jax.shard_map) and the collectives over mesh axes: write the per-device program
// yourself. The function sees each device's piece of its arguments (the global shape divided
// along the dimensions the spec splits) and returns per-device pieces, which `out_specs`
// assemble into global results; inside it, collectives (psum, all_gather, ppermute, ...)
// communicate along named mesh axes. docs/sharding.md has examples.
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tessel/array.h"
#include "tessel/jit.h"
#include "tessel/sharding.h"
#include "tessel/tree.h"

namespace tessel {

/// The mesh axes a collective works over: one axis (`"x"`) or several (`{"x", "y"}`, the
/// group then spans all of them, numbered row-major with the first axis major).
class TESSEL_API AxisNames {
 public:
  AxisNames(const char* axis) : names_{checked_name(axis)} {}                      // NOLINT
  AxisNames(std::string axis) : names_{std::move(axis)} {}                         // NOLINT
  AxisNames(std::initializer_list<std::string> axes) : names_(axes) {}             // NOLINT
  AxisNames(std::vector<std::string> axes) : names_(std::move(axes)) {}            // NOLINT
  const std::vector<std::string>& names() const { return names_; }

 private:
  static std::string checked_name(const char* axis) {
    if (!axis) throw ValueError("AxisNames: the axis name is a null pointer; name a mesh axis (\"x\")");
    return axis;
  }
  std::vector<std::string> names_;
};

/// The sum of `x` over the devices of `axes` (jax.lax.psum); every device gets it.
TESSEL_API Array psum(const Array& x, const AxisNames& axes);
/// The mean of `x` over the devices of `axes` (jax.lax.pmean); integers give floats.
TESSEL_API Array pmean(const Array& x, const AxisNames& axes);
/// The maximum of `x` over the devices of `axes` (jax.lax.pmax); NaN propagates.
TESSEL_API Array pmax(const Array& x, const AxisNames& axes);
/// The minimum of `x` over the devices of `axes` (jax.lax.pmin); NaN propagates.
TESSEL_API Array pmin(const Array& x, const AxisNames& axes);

struct AllGatherOptions {
  /// Where the gathered pieces go.
  int64_t axis = 0;
  /// false: stack the pieces on a new dimension `axis` (of the group's size); true:
  /// concatenate them along the existing dimension `axis`.
  bool tiled = false;
};
/// Every device's `x` over `axes`, in group order, on every device (jax.lax.all_gather):
/// `all_gather(x, "i")` of f32[3] pieces on 4 devices is f32[4,3];
/// `all_gather(x, "i", {.tiled = true})` is f32[12].
TESSEL_API Array all_gather(const Array& x, const AxisNames& axes, AllGatherOptions opts = {});

struct AllToAllOptions {
  /// true: `split_axis` shrinks by the group size and `concat_axis` grows by it. false:
  /// `split_axis` must have the group's size; it is removed and a new dimension of that size
  /// is inserted at `concat_axis` (a position in the result).
  bool tiled = false;
};
/// Splits `x` along `split_axis` into one block per device of the group, sends block j to
/// device j, and concatenates the blocks received along `concat_axis` in group order
/// (jax.lax.all_to_all): a transposition of the data across devices.
TESSEL_API Array all_to_all(const Array& x, const AxisNames& axes, int64_t split_axis, int64_t concat_axis,
                            AllToAllOptions opts = {});

/// Sends `x` along the axes: for each (source, destination) in `perm`, the device at group
/// index destination receives source's `x` (jax.lax.ppermute). Devices that receive nothing
/// get zeros. `perm` lists each source and each destination at most once.
TESSEL_API Array ppermute(const Array& x, const AxisNames& axes, const std::vector<std::pair<int64_t, int64_t>>& perm);

struct PsumScatterOptions {
  /// The dimension that is summed and split over the devices.
  int64_t scatter_dimension = 0;
  /// false: the dimension must have the group's size and is removed (device i keeps entry
  /// i); true: it must be divisible by the group size, and device i keeps block i.
  bool tiled = false;
};
/// The sum over the devices of `axes`, scattered: each device keeps its own part
/// (jax.lax.psum_scatter). The transpose of all_gather.
TESSEL_API Array psum_scatter(const Array& x, const AxisNames& axes, PsumScatterOptions opts = {});

/// This device's index along `axes` (jax.lax.axis_index): an int32 scalar in [0, group size).
TESSEL_API Array axis_index(const AxisNames& axes);

namespace detail {
/// shard_map on flat lists: `in_specs` has one spec per argument leaf; `out_specs` one per
/// result leaf, or one for all.
TESSEL_API std::vector<Array> shard_map_flat(const FlatFn& fn, const Mesh& mesh, std::span<const Array> args,
                                             const std::vector<PartitionSpec>& in_specs,
                                             const std::vector<PartitionSpec>& out_specs);
[[noreturn]] TESSEL_API void shard_map_bad_in_specs(size_t specs, size_t args);
}  // namespace detail

/// A function mapped over the shards of its arguments (see `shard_map`).
template <class F> class ShardMapped {
 public:
  ShardMapped(F f, Mesh mesh, std::vector<PartitionSpec> in_specs, std::vector<PartitionSpec> out_specs)
      : f_(std::move(f)), mesh_(std::move(mesh)), in_specs_(std::move(in_specs)), out_specs_(std::move(out_specs)) {}

  /// Runs the function on every device's pieces and assembles the results. Under a
  /// transformation (jit, grad, vmap) it is one equation of the traced program.
  template <class... Args> auto operator()(const Args&... args) const {
    using R = std::invoke_result_t<const F&, const Args&...>;
    static_assert(detail::is_tree_v<R>, "shard_map: the function must return an Array or a tree of Arrays");
    using Tuple = std::tuple<std::decay_t<Args>...>;
    Tuple values{args...};
    std::vector<Array> leaves;
    std::vector<int> leaf_args;
    detail::flatten_args(values, {}, leaves, nullptr, std::index_sequence_for<Args...>{}, &leaf_args);
    if (in_specs_.size() != 1 && in_specs_.size() != sizeof...(Args))
      detail::shard_map_bad_in_specs(in_specs_.size(), sizeof...(Args));
    std::vector<PartitionSpec> leaf_specs;
    for (int a : leaf_args) leaf_specs.push_back(in_specs_[in_specs_.size() == 1 ? 0 : size_t(a)]);
    auto sample = std::make_shared<R>();
    detail::FlatFn flat = [&](std::span<const Array> pieces) {
      std::vector<Array> pv(pieces.begin(), pieces.end());
      Tuple local = detail::replace_arg_leaves(values, pv, std::index_sequence_for<Args...>{});
      *sample = std::apply(f_, local);
      return tree_leaves(*sample);
    };
    std::vector<Array> outs = detail::shard_map_flat(flat, mesh_, leaves, leaf_specs, out_specs_);
    size_t pos = 0;
    return tree_replace_leaves(*sample, outs, pos);
  }

 private:
  F f_;
  Mesh mesh_;
  std::vector<PartitionSpec> in_specs_, out_specs_;
};

/// Maps `f` over the shards of its arguments (jax.shard_map). `in_specs` has one partition
/// spec per argument (one spec alone applies to all): argument i reaches `f` as each
/// device's piece of it, its dimensions divided by the sizes of the mesh axes its spec
/// names (they must divide evenly). `f` returns per-device pieces (an Array or a tree);
/// `out_specs` (one per result leaf, or one for all) says how they form the global results:
/// a dimension split over axes concatenates the devices' pieces, and mesh axes a spec does
/// not name mean the pieces are equal along them (one is taken). Inside `f`, collectives
/// (psum, all_gather, ...) name the mesh's axes. Differentiable, batchable and jittable:
///
///   auto mesh = ts::make_mesh({8}, {"i"});
///   auto total = ts::shard_map([](ts::Array x) { return ts::psum(ts::sum(x), "i"); },
///                              mesh, {ts::P("i")}, {ts::P()});
///   total(ts::arange(64, ts::f32));   // 2016, summed piecewise on 8 devices
template <class F>
ShardMapped<std::decay_t<F>> shard_map(F&& f, const Mesh& mesh, std::vector<PartitionSpec> in_specs,
                                       std::vector<PartitionSpec> out_specs) {
  return ShardMapped<std::decay_t<F>>(std::forward<F>(f), mesh, std::move(in_specs), std::move(out_specs));
}

}  // namespace tessel
