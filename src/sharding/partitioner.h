#pragma once
// The SPMD partitioner: one global program plus the layouts of its inputs becomes one
// per-device program (the same on every device of the mesh) with the collectives that move
// data between layouts. Three steps (docs/sharding.md):
//  1. propagation: per-dimension factor rules (ir/sharding_rule.h) carry layouts forwards
//     and backwards through the program; constraints (with_sharding_constraint, in/out
//     shardings, shard_map specs) are fixed and win conflicts;
//  2. lowering: each equation gets its factor layout; operands are resharded to match
//     (reshard.h), padded pieces are masked before reductions, and the per-device equation
//     is traced with per-device shapes;
//  3. sharded contractions leave partial results that become all-reduce or reduce-scatter
//     where they are used.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/program.h"
#include "tessel/sharding.h"

namespace tessel::sharding {

/// How the pieces of a split dimension lie over its positions: `piece` positions each, the
/// first piece starting `origin` positions before position 0 (positions outside [0, n) are
/// padding). Piece d holds positions [d * piece - origin, (d + 1) * piece - origin). The
/// canonical grid, the only one outside the partitioner, is {ceil(n / k), 0}; inside it, a
/// window keeps its source's grid (x[1:-1] is then each device's own piece, nothing moves)
/// and element-wise operations adopt their operands' (docs/sharding.md, "Halo exchange").
struct Grid {
  int64_t piece = 0;
  int64_t origin = 0;
  bool operator==(const Grid&) const = default;
};

/// A layout inside the partitioner: the mesh axes of each dimension (major first), the
/// axes over which the per-device values are partial results still to be combined, and
/// the grids of split dimensions whose pieces are not the canonical ones.
struct Layout {
  std::vector<std::vector<std::string>> dims;
  std::vector<std::string> partial;
  ir::Combine partial_op = ir::Combine::kNone;
  std::map<size_t, Grid> grids = {};  ///< by dimension; absent: canonical
  bool operator==(const Layout& o) const {
    return dims == o.dims && partial == o.partial && partial_op == o.partial_op && grids == o.grids;
  }
  bool is_replicated() const;
  std::string to_string() const;
};
Layout layout_of(const Sharding& s, size_t rank);
/// The named sharding of a layout without partial axes.
Sharding sharding_of_layout(const Mesh& mesh, const Layout& l);

/// A partitioned program.
struct Partitioned {
  Mesh mesh;
  /// The per-device program (per-device avals), simplified.
  std::shared_ptr<const ir::Program> program;
  std::vector<Layout> in_layouts, out_layouts;
};

/// The mesh of a program: the one its shardings, shard_maps and arguments use. Throws
/// ValueError when they use different meshes. `arg_meshes` are the meshes of the arguments
/// laid out over devices (unset for single-device arguments). Unset when nothing names one.
std::optional<Mesh> program_mesh(const ir::Program& p, const std::vector<std::optional<Mesh>>& arg_meshes,
                                 const std::string& name);

/// The layouts propagation suggests for the inputs of `p` given the known ones (arguments
/// already laid out); unknown inputs get the suggestion, or whole.
std::vector<Layout> choose_input_layouts(const ir::Program& p, const Mesh& mesh,
                                         const std::vector<std::optional<Layout>>& known);

/// Partitions `p` for inputs laid out by `in_layouts` over `mesh`. With `position`, the
/// program is the one the device at that mesh position runs: what depends on the device's
/// place (window starts, which rows a halo fills, axis_index) is a constant there, so that
/// fused loop nests read static windows and test no positions; it issues the same
/// collectives as every other device's.
Partitioned partition(const ir::Program& p, const Mesh& mesh, const std::vector<Layout>& in_layouts,
                      std::optional<int> position = std::nullopt);

}  // namespace tessel::sharding
