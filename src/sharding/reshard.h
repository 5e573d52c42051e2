#pragma once
// The reshard planner: the per-device operations that turn a value laid out one way into
// another layout, emitted into the per-device program being traced. It prefers, in order:
// combining partial results (reduce-scatter when the target splits a dimension over the
// same axes, else all-reduce), one collective-permute when only the assignment of pieces
// to devices changes, all-to-all when an axis moves from one dimension to another, then
// all-gather of what the target does not split, and local slicing for what it splits more.
// Dimensions that do not divide are gathered whole and padded before slicing, so every
// step works on the padded piece layout of mesh_impl.h.
#include <string>
#include <vector>

#include "sharding/partitioner.h"

namespace tessel::sharding {

/// `x` (a per-device value laid out by `from`) laid out by `to`; `global` is the global
/// shape.
Array reshard(const Array& x, const Layout& from, const Layout& to, const Shape& global, const Mesh& mesh);

/// `x` with the padding of dimension `dim` (split over `axes`, global size `n`) replaced by
/// `fill`, so that a reduction over the dimension ignores it.
Array mask_padding(const Array& x, int64_t dim, const std::vector<std::string>& axes, int64_t n, const Mesh& mesh,
                   ir::Combine fill);

}  // namespace tessel::sharding
