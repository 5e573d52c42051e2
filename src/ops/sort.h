#pragma once
// The sort and top_k primitives (sort.cpp), for the jnp-level functions built on them
// (numpy_sort.cpp, numpy_setops.cpp).
#include <utility>
#include <vector>

#include "ops/op_util.h"

namespace tessel::ops {

extern const ir::Primitive& sort_p;

/// Binds sort on `operands` along the canonical `dimension`.
std::vector<Array> bind_sort(const std::vector<Array>& operands, int64_t dimension, bool is_stable, int64_t num_keys);
/// Binds top_k along the canonical `axis`: (values, int32 positions).
std::pair<Array, Array> bind_top_k(const Array& x, int64_t k, int64_t axis);

}  // namespace tessel::ops
