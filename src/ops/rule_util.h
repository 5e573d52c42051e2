#pragma once
// Helpers for writing transformation rules beside the primitives (jvp, transpose, batching):
// symbolic zeros, cotangents of broadcast operands, moving batch dimensions, and the
// generic rules many primitives share.
#include "ops/op_util.h"

namespace tessel::ops {

using ir::Batched;
using ir::BatchAxis;
using ir::kNotBatched;

/// A symbolic zero tangent or cotangent (an empty Array).
inline bool is_zero(const Array& t) { return !t.valid(); }
/// a + b where either may be a symbolic zero (then the other is returned).
Array add_tangents(const Array& a, const Array& b);
/// `t`, or zeros of `aval` when `t` is a symbolic zero.
Array instantiate_zeros(const Array& t, const Aval& aval);
/// t * factor (same dtype after conversion of factor to t's dtype); zero stays zero.
Array scale_tangent(const Array& t, const Array& factor);
/// Sums `ct` down to `shape` (rank 0 or equal): the cotangent of an operand that an
/// element-wise primitive broadcast from rank 0.
Array sum_to_shape(const Array& ct, const Shape& shape);
/// Moves batch dimension `from` of `x` to `to`; an unbatched `x` (from == kNotBatched) is
/// broadcast to have an axis of `size` there.
Array move_batch_dim(const Array& x, int64_t from, int64_t to, int64_t size);

/// jvp of a primitive that is linear in all its inputs jointly: binds it on the tangents
/// (zero tangents instantiated).
std::vector<Array> jvp_linear(const ir::Primitive& self, std::span<const Array> primals,
                              std::span<const Array> tangents, std::span<const Array> outs, const Params& params);
/// Batching of an element-wise primitive: batch dims to the front, unbatched non-scalar
/// operands broadcast; outputs batched at 0.
Batched batch_elementwise(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                          const BatchAxis& axis, const Params& params);

/// jvp of a primitive linear in its first `n_linear` inputs jointly, the others (indices,
/// start positions) held fixed: binds it on the tangents of the first inputs (zeros
/// instantiated) and the primal values of the rest. All-zero linear tangents give zero (one
/// empty Array: for single-output primitives).
std::vector<Array> jvp_linear_in_first(size_t n_linear, const ir::Primitive& self, std::span<const Array> primals,
                                       std::span<const Array> tangents, const Params& params);

/// `t` broadcast to `aval`'s shape (from rank 0) and converted to its dtype; zero stays
/// zero. The output tangent of an element-wise primitive from a rank-0 operand's tangent.
Array fit_tangent(const Array& t, const Aval& aval);
/// `ct` summed to `aval`'s shape (rank 0 or equal) and converted to its dtype; zero stays
/// zero. The cotangent of an operand an element-wise primitive broadcast.
Array fit_cotangent(const Array& ct, const Aval& aval);
/// Batching of a primitive of one operand that acts on each element (or each position)
/// independently: binds it on the batched operand; every output keeps the batch dimension.
Batched batch_vectorized(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                         const BatchAxis& axis, const Params& params);

/// jvp of a primitive whose outputs have no tangent space (integer or bool results of float
/// operands, e.g. argmax): all output tangents are zero.
std::vector<Array> jvp_zero(const ir::Primitive& self, std::span<const Array> primals, std::span<const Array> tangents,
                            std::span<const Array> outs, const Params& params);

// ---- SPMD sharding rules (ir/sharding_rule.h) ----

/// Adds a factor to `r` (pass-through unless `c` says how partial results combine) and
/// returns its id.
int add_factor(ir::ShardingRule& r, ir::Combine c = ir::Combine::kNone);
/// How one dimension partitions in an aligned_sharding_rule.
enum class DimRule {
  kPass,     // taken in full: each device computes its piece from its piece
  kPermute,  // positions move along it (a window, a concatenation): a permutation factor
  kWhole,    // must not be split
};
/// Adds a permutation factor (ShardingRule::permutes) to `r` and returns its id.
int add_permutation_factor(ir::ShardingRule& r);
/// The rule of a primitive whose results and non-scalar operands all have the first
/// result's rank and dimension d means the same in each: dimension d is one factor shared
/// by all of them, of the kind `dims[d]` says. Rank-0 operands (scalar values, start
/// indices) have no dimensions.
ir::ShardingRule aligned_sharding_rule(std::span<const Aval> ins, std::span<const Aval> outs,
                                       const std::vector<DimRule>& dims);

}  // namespace tessel::ops
