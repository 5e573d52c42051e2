#pragma once
// Wide halos (wide_halo.cpp): a program lowered on each device's piece extended by the total
// reach of its windows along the split dimension, after one exchange of all its halos.
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "sharding/lowering.h"

namespace tessel::sharding {

/// The per-device outputs of a wide-halo lowering and their layouts.
struct WideHaloResult {
  std::vector<Array> outputs;
  std::vector<Layout> out_layouts;
};

/// Lowers an equation on whole per-device operands the way the partitioner does (a host
/// tap, a nested program): its per-device results, whole.
using WholeFn = std::function<std::vector<Array>(const ir::Equation&, const std::vector<Array>&)>;

/// Lowers straight-line program `p` on per-device `args` laid out by `in_layouts` (each input
/// split along at most one dimension, all over the same mesh axes, canonical pieces (the
/// last one padded when they do not divide the size; each piece holding some rows); or whole) with one exchange of every input's halo rows per direction,
/// every equation computed on the rows its readers need (edge rows recomputed by both
/// neighbours), outputs computed on canonical pieces (`out_layouts`: wanted layouts, may be
/// shorter or unset). `position`: the device the program is lowered for; without one, only
/// when every device's lowering is the same program. `whole` lowers the equations on whole
/// values that need the partitioner (used only with a position). Nullopt when the program does not fit
/// (a reduction or reshape along the split dimension, a nested program, ...): lower it
/// equation by equation instead.
std::optional<WideHaloResult> lower_wide_halo(const ir::Program& p, const Mesh& mesh, std::optional<int> position,
                                              std::span<const Array> args, const std::vector<Layout>& in_layouts,
                                              const std::vector<std::optional<Layout>>& out_layouts,
                                              const WholeFn& whole = {});

}  // namespace tessel::sharding
