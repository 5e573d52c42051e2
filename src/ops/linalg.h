#pragma once
// Helpers shared by the linear-algebra functions (linalg.cpp, einsum.cpp).
#include "ops/op_util.h"

namespace tessel::ops {

/// The diagonal of axes `a` and `b` of `x` (a != b, canonical): the result has the diagonal
/// (length min of the two sizes) as axis 0, followed by the other axes of x in order.
Array diagonal_front(const Array& x, int64_t a, int64_t b);

}  // namespace tessel::ops
