#pragma once
// Inside the partitioner (partitioner.h): the layouts propagation suggests, and the Lowerer
// that turns one global program into per-device code. partitioner.cpp lowers ordinary and
// self-partitioning equations; partition_nested.cpp lowers control flow (loop bodies and
// branches partitioned with their own Lowerer); halo.cpp lowers windows along split
// dimensions (halo exchange).
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/program.h"
#include "sharding/partitioner.h"

namespace tessel::sharding {

using Axes = std::vector<std::string>;

/// What propagation knows of a value's layout.
struct Hint {
  std::vector<Axes> dims;
  bool known = false;
  bool fixed = false;  // a constraint: never changed, wins conflicts
};
using Hints = std::unordered_map<const ir::VarNode*, Hint>;

/// Propagation over `p` for inputs of which some layouts are known (constraints).
Hints propagate(const ir::Program& p, const Mesh& mesh, const std::vector<std::optional<Layout>>& inputs);

/// The factor rule of an equation (all dimensions whole for primitives without one).
ir::ShardingRule rule_for(const ir::Equation& e, std::span<const Aval> ins, std::span<const Aval> outs);
std::vector<Aval> in_avals(const ir::Equation& e);
std::vector<Aval> out_avals(const ir::Equation& e);
/// The mesh axes of each dimension of an operand or result with factor ids `dims`.
std::vector<Axes> project(const std::vector<int>& dims, const std::vector<Axes>& factors);
/// The per-device shape of `global` with dimensions split over `dims`' axes (padded pieces).
Shape local_dims_shape(const Mesh& mesh, const std::vector<Axes>& dims, const Shape& global);
/// The per-device shape of a value of `global` shape laid out by `l`, grids included.
Shape local_shape(const Mesh& mesh, const Layout& l, const Shape& global);
/// The grid of dimension `d` (of global size `n`) in `l`: its own, or the canonical one.
Grid grid_of(const Layout& l, size_t d, int64_t n, const Mesh& mesh);
/// Gives dimension `d` (of global size `n`) of `l` the grid `g` (none when it is canonical).
void set_grid(Layout& l, size_t d, Grid g, int64_t n, const Mesh& mesh);
/// `l` with canonical grids.
Layout canonical(Layout l);
/// "x", "x and y", "x, y and z".
std::string axes_text(const Axes& axes);

/// A value of the per-device program with its layout.
struct Local {
  Array value;  // per-device value (a tracer of the per-device program, or a constant)
  Layout layout;
};

class Lowerer {
 public:
  /// `position`: the mesh position of the one device the program is lowered for (partition's
  /// per-device specialization), or unset for a program every device runs.
  Lowerer(const ir::Program& p, const Mesh& mesh, Hints hints, std::optional<int> position = std::nullopt)
      : p_(p), mesh_(mesh), hints_(std::move(hints)), position_(position) {}

  /// Lowers the program on per-device `args` laid out by `in_layouts`; results not partial.
  /// An output with a layout in `out_layouts_wanted` (may be shorter, entries unset) is
  /// resharded to it.
  std::vector<Array> run(std::span<const Array> args, const std::vector<Layout>& in_layouts,
                         const std::vector<std::optional<Layout>>& out_layouts_wanted = {});
  std::vector<Layout> out_layouts;

  const Mesh& mesh() const { return mesh_; }
  std::optional<int> position() const { return position_; }
  /// This device's index along `axes` when the program is lowered for one device, else unset.
  std::optional<int64_t> known_index(const Axes& axes) const;
  const ir::Program& program() const { return p_; }
  Local get(const ir::Atom& a) const;
  const Hint* hint(const ir::Atom& a) const;
  /// The layout propagation chose for `v` (whole where it knows none).
  Layout wanted(const ir::Var& v) const;
  /// `a` laid out by `want` (resharded once per layout, see partitioner.cpp).
  Array to_layout(const ir::Atom& a, const Layout& want);
  void set(const ir::Var& v, Local l) { env_[v.get()] = std::move(l); }

  /// Leaves `e` to be lowered by its user (halo.cpp: a slice that only feeds a concatenate
  /// along a split dimension, which reads the slice's source instead).
  void defer(const ir::Equation& e) { deferred_[e.outputs[0].get()] = &e; }
  /// The deferred equation that computes `a`, or null.
  const ir::Equation* deferred(const ir::Atom& a) const;
  /// Lowers the deferred equation that computes `a` now (nothing when there is none).
  void lower_deferred(const ir::Atom& a);
  /// The per-device value `make` derives from `from`, emitted once per `key` in this
  /// program (halo.cpp: rows of a value received from another piece, shared by every window
  /// that reads them; collectives are effects, so later passes never merge repeated ones).
  Array derived(const Array& from, const std::string& key, const std::function<Array()>& make);

 private:
  void lower(const ir::Equation& e);
  void lower_spmd(const ir::Equation& e);
  Array relayout(const Array& x, const Layout& from, const Layout& to, const Shape& global);
  std::map<size_t, Grid> factor_grids(const ir::Equation& e, const ir::ShardingRule& rule,
                                      const std::vector<Axes>& factors) const;
  void log_fallbacks(const ir::Equation& e, const ir::ShardingRule& rule, const std::vector<Axes>& factors);

  const ir::Program& p_;
  const Mesh& mesh_;
  Hints hints_;
  std::optional<int> position_;
  std::unordered_map<const ir::VarNode*, Local> env_;
  std::map<std::pair<const ir::VarNode*, std::string>, Local> resharded_;  // by value and layout
  std::unordered_map<const ir::VarNode*, const ir::Equation*> deferred_;
  std::map<std::pair<const void*, std::string>, std::pair<Array, Array>> derived_;  // -> (from, value)
};

/// Lowers an equation whose primitive has nested programs (Primitive::regions): each
/// region is partitioned with its own Lowerer, loop carries laid out by a fixed point
/// (partition_nested.cpp).
void lower_nested(Lowerer& l, const ir::Equation& e);

/// `x` (a per-device value laid out by `from`, not partial) with the grids of `to`, which
/// splits every dimension as `from` does: the positions each device's new piece needs from
/// other pieces arrive by collective_permute (halo.cpp).
Array realign(Lowerer& l, const Array& x, const Layout& from, const Layout& to, const Shape& global);

/// Lowers an equation whose rule has permutation factors (ir::ShardingRule::permutes) split
/// by `factors`: windows read across pieces by halo exchange, rev by swapping pieces, iota
/// by offsets (halo.cpp). Returns false when none is split, or when a dimension cannot be
/// lowered that way (its reads would move as much as a gather, a start is not a constant):
/// those factors' axes are then cleared in `factors` (with an info line), and the caller
/// computes those dimensions whole.
bool lower_window(Lowerer& l, const ir::Equation& e, const ir::ShardingRule& rule, std::vector<Axes>& factors);

/// Defers (Lowerer::defer) the slices, and broadcasts of one-row slices, that only feed a
/// concatenate along a dimension propagation split, so that a rotation (roll) or an edge
/// padding reads their source and moves only the halo (halo.cpp).
void defer_window_feeders(Lowerer& l);

/// Whether `e` slices dimension `dim` with stride 1 and takes every other dimension in full
/// (halo.cpp; a slice a concatenate along `dim` can read through).
bool slices_only(const ir::Equation& e, size_t dim);
/// Whether `e` repeats a size-1 dimension `dim` and changes nothing else (an edge row).
bool repeats_row(const ir::Equation& e, size_t dim);
/// Suggests result layouts of an equation with nested programs from its operands' hints,
/// by propagating through the regions (partition_nested.cpp). `hint_of` gives an operand's
/// hint (or null); returns one suggestion per result (unset: none).
std::vector<std::optional<std::vector<Axes>>> propagate_nested(const ir::Equation& e, const Mesh& mesh,
                                                               const std::vector<const Hint*>& operand_hints);

}  // namespace tessel::sharding
