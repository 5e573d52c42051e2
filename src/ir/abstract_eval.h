#pragma once
// Abstract evaluation as every caller runs it (eager dispatch, tracing, the verifier): the
// primitive's rule, then the shape check of core/shape_check.h on each output, so that no
// rule lets a shape with a negative size or an overflowing element or byte count through.
#include <span>
#include <vector>

#include "ir/primitive.h"

namespace tessel::ir {

/// The output avals of `p` applied to inputs of avals `ins` with `params`. Throws the
/// rule's error, or ShapeError naming the primitive for an output shape that
/// detail::checked_size rejects.
std::vector<Aval> abstract_eval(const Primitive& p, std::span<const Aval> ins, const Params& params);

}  // namespace tessel::ir
