// The public collectives (jax.lax.psum, all_gather, ...) over the collective primitives.
#include "ops/collectives.h"
#include "ops/op_util.h"
#include "tessel/shard_map.h"

namespace tessel {

Array psum(const Array& x, const AxisNames& axes) {
  return detail::all_reduce_named("psum", x, axes.names(), ir::Combine::kSum);
}

Array pmean(const Array& x, const AxisNames& axes) {
  const int64_t n = detail::collective_group_size("pmean", axes.names());
  return true_divide(detail::all_reduce_named("pmean", x, axes.names(), ir::Combine::kSum), Array(n));
}

Array pmax(const Array& x, const AxisNames& axes) {
  return detail::all_reduce_named("pmax", x, axes.names(), ir::Combine::kMax);
}

Array pmin(const Array& x, const AxisNames& axes) {
  return detail::all_reduce_named("pmin", x, axes.names(), ir::Combine::kMin);
}

Array all_gather(const Array& x, const AxisNames& axes, AllGatherOptions opts) {
  const int64_t dim = ops::canonicalize_axis("all_gather", opts.axis, x.ndim() + (opts.tiled ? 0 : 1));
  return detail::all_gather_named("all_gather", x, axes.names(), dim, opts.tiled);
}

// Untiled: the split dimension (of the group's size) becomes a dimension of size 1 that is
// dropped, and a new dimension of size 1 at concat_axis receives the blocks.
Array all_to_all(const Array& x, const AxisNames& axes, int64_t split_axis, int64_t concat_axis, AllToAllOptions opts) {
  const std::string op = "all_to_all";
  int64_t split = ops::canonicalize_axis(op, split_axis, x.ndim());
  if (opts.tiled)
    return detail::all_to_all_named(op, x, axes.names(), split, ops::canonicalize_axis(op, concat_axis, x.ndim()));
  const int64_t n = detail::collective_group_size(op, axes.names());
  if (x.shape()[size_t(split)] != n)
    throw ShapeError(op + ": dimension " + std::to_string(split) + " of " + x.aval().to_string() + " has size " +
                     std::to_string(x.shape()[size_t(split)]) + " but the axes have " + std::to_string(n) +
                     " devices; without tiled=true the split dimension must have one entry per device");
  int64_t concat = ops::canonicalize_axis(op, concat_axis, x.ndim());  // a position after split is removed
  Array y = x;
  if (split != concat) {
    if (split < concat) ++concat;
    else ++split;
    y = expand_dims(x, {concat});
  }
  Array r = detail::all_to_all_named(op, y, axes.names(), split, concat);
  return split == concat ? r : squeeze(r, Axes{split});
}

Array ppermute(const Array& x, const AxisNames& axes, const std::vector<std::pair<int64_t, int64_t>>& perm) {
  return detail::collective_permute_named("ppermute", x, axes.names(), perm);
}

Array psum_scatter(const Array& x, const AxisNames& axes, PsumScatterOptions opts) {
  const std::string op = "psum_scatter";
  const int64_t dim = ops::canonicalize_axis(op, opts.scatter_dimension, x.ndim());
  if (opts.tiled) return detail::reduce_scatter_named(op, x, axes.names(), dim, ir::Combine::kSum);
  const int64_t n = detail::collective_group_size(op, axes.names());
  if (x.shape()[size_t(dim)] != n)
    throw ShapeError(op + ": dimension " + std::to_string(dim) + " of " + x.aval().to_string() + " has size " +
                     std::to_string(x.shape()[size_t(dim)]) + " but the axes have " + std::to_string(n) +
                     " devices; without tiled=true the scattered dimension must have one entry per device");
  return squeeze(detail::reduce_scatter_named(op, x, axes.names(), dim, ir::Combine::kSum), Axes{dim});
}

Array axis_index(const AxisNames& axes) { return detail::axis_index_named("axis_index", axes.names()); }

}  // namespace tessel
