#pragma once
// How a primitive partitions (src/sharding/ drives it; docs/sharding.md). Most primitives
// describe themselves by a per-dimension factor rule, like Shardy's OpShardingRule: each
// dimension of each operand and result is labelled with a factor; dimensions that share a
// factor are split the same way. A factor found in the results is pass-through (every
// device computes its piece); a factor found only in operands is a reduction (every device
// computes a partial result that a collective combines). A permutation factor (below) may
// stay split though positions move along it. A dimension labelled kWhole must not be split
// (sorts, FFTs, cumulative sums along it): the partitioner gathers it first.
// Primitives without a rule are computed on whole (replicated) operands: correct, not fast.
#include <optional>
#include <span>
#include <vector>

#include "ir/params.h"
#include "tessel/array.h"
#include "tessel/sharding.h"

namespace tessel::ir {

/// How partial results of a reduction factor combine (and what fills padding before it).
enum class Combine { kNone, kSum, kProd, kMax, kMin };
const char* combine_name(Combine c);

/// A dimension that must stay whole on every device.
inline constexpr int kWhole = -1;

struct ShardingRule {
  /// Per operand, per dimension: a factor id, or kWhole. Literal (rank-0) operands have none.
  std::vector<std::vector<int>> operands;
  /// Per result, per dimension: a factor id, or kWhole.
  std::vector<std::vector<int>> results;
  /// Per factor: kNone for pass-through, else how the partial results combine. A factor
  /// that appears in a result must be kNone.
  std::vector<Combine> factors;
  /// Per factor (may be shorter than `factors`; 0 or absent: no condition): the factor may
  /// be split only into a number of pieces that divides this size. A reshape's merged (or
  /// split) dimension is one factor with its major part: the pieces of (8, 6) split on
  /// dimension 0 are the pieces of (48,) only when the number of pieces divides 8.
  std::vector<int64_t> divides;
  /// Per factor (may be shorter than `factors`; absent: false): a *permutation* factor, a
  /// dimension whose positions move between operands and results (Shardy's name): the
  /// windowed dimension of a slice, pad or windowed update, the concatenated or reversed
  /// one, iota's counted one. Unlike kWhole it may stay split: the partitioner then moves
  /// the rows each piece needs from its neighbours (a halo exchange) or adds each piece's
  /// offset (sharding/halo.cpp), and gathers the dimension only where that does not fit.
  std::vector<bool> permutes;

  int64_t divisor(size_t f) const { return f < divides.size() ? divides[f] : 0; }
  bool permutation(size_t f) const { return f < permutes.size() && permutes[f]; }
};

using ShardingRuleFn = ShardingRule (*)(std::span<const Aval> ins, std::span<const Aval> outs, const Params& params);
/// The parameters of the per-device equation, for primitives whose parameters hold global
/// sizes (broadcast_in_dim's shape, reshape's sizes, iota's shape, a slice's limits along a
/// split dimension): given the per-device operand and result avals. Split dimensions are
/// always pass-through, so they are taken whole on each device.
using LocalizeFn = Params (*)(const Params& params, std::span<const Aval> local_ins, std::span<const Aval> local_outs);

/// The rule of element-wise primitives: every operand of the result's shape shares the
/// result's factors; rank-0 operands have none.
ShardingRule elementwise_sharding_rule(std::span<const Aval> ins, std::span<const Aval> outs, const Params& params);

/// What a self-partitioning primitive (shard_map, custom_partitioning) sees of the
/// partitioner while its equation is lowered to per-device code. Shardings are on the
/// program's mesh.
class SpmdBuilder {
 public:
  virtual ~SpmdBuilder() = default;
  virtual const Mesh& mesh() const = 0;
  /// The sharding operand i has when the equation is reached.
  virtual Sharding operand_sharding(size_t i) const = 0;
  /// The sharding propagation chose for result i.
  virtual Sharding result_sharding(size_t i) const = 0;
  /// Operand i laid out by `s` (collectives inserted as needed): a per-device value (a
  /// tracer of the per-device program being traced).
  virtual Array operand(size_t i, const Sharding& s) = 0;
  /// Sets result i to the per-device value `local`, laid out by `s`.
  virtual void set_result(size_t i, const Array& local, const Sharding& s) = 0;
};

/// Rules of primitives that partition themselves.
struct SpmdRules {
  /// Result shardings from operand shardings (unknown ones unset); unset results make no
  /// suggestion.
  std::vector<std::optional<Sharding>> (*infer)(const Mesh& mesh, std::span<const std::optional<Sharding>> operands,
                                                std::span<const Aval> ins, std::span<const Aval> outs,
                                                const Params& params) = nullptr;
  /// Operand shardings suggested by the result shardings the program wants (unknown ones
  /// unset).
  std::vector<std::optional<Sharding>> (*propagate_user)(const Mesh& mesh,
                                                         std::span<const std::optional<Sharding>> results,
                                                         std::span<const Aval> ins, std::span<const Aval> outs,
                                                         const Params& params) = nullptr;
  /// Emits the per-device computation of the equation through `b`.
  void (*partition)(SpmdBuilder& b, std::span<const Aval> ins, std::span<const Aval> outs,
                    const Params& params) = nullptr;
  /// The mesh the equation works on, if it names one (shard_map's): the program's mesh.
  std::optional<Mesh> (*mesh)(const Params& params) = nullptr;
};

}  // namespace tessel::ir

namespace tessel::ir {

class Reader;
/// A sharding as bytes (devices by global id; see ir/serialize.h), for parameters and for
/// arrays that travel to workers.
void write_sharding(Writer& w, const Sharding& s);
Sharding read_sharding(Reader& r);

/// Parameter values holding a mesh, a sharding or a list of partition specs.
class MeshParam final : public ParamObject {
 public:
  explicit MeshParam(Mesh m) : value(std::move(m)) {}
  size_t hash() const override;
  bool equals(const ParamObject& o) const override;
  std::string to_string() const override { return value.to_string(); }
  std::string_view serial_kind() const override { return "mesh"; }
  void write(Writer& w) const override;
  Mesh value;
};
class ShardingParam final : public ParamObject {
 public:
  explicit ShardingParam(Sharding s) : value(std::move(s)) {}
  size_t hash() const override;
  bool equals(const ParamObject& o) const override;
  std::string to_string() const override { return value.to_string(); }
  std::string_view serial_kind() const override { return "sharding"; }
  void write(Writer& w) const override;
  Sharding value;
};
class SpecsParam final : public ParamObject {
 public:
  explicit SpecsParam(std::vector<PartitionSpec> s) : value(std::move(s)) {}
  size_t hash() const override;
  bool equals(const ParamObject& o) const override;
  std::string to_string() const override;
  std::string_view serial_kind() const override { return "specs"; }
  void write(Writer& w) const override;
  std::vector<PartitionSpec> value;
};

}  // namespace tessel::ir
