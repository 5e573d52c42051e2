#pragma once
// Helpers shared by the linear-algebra functions (linalg.cpp, dot_general_kernel.cpp,
// einsum.cpp, linalg_composed.cpp).
#include "ir/primitive.h"
#include "ops/op_util.h"

namespace tessel::ops {

/// The diagonal of axes `a` and `b` of `x` (a != b, canonical): the result has the diagonal
/// (length min of the two sizes) as axis 0, followed by the other axes of x in order.
Array diagonal_front(const Array& x, int64_t a, int64_t b);
/// Diagonal `offset` of axes `a` and `b` (above the main one when offset > 0), laid out as
/// diagonal_front lays out the main one; empty when the offset passes the edge.
Array diagonal_offset_front(const Array& x, int64_t offset, int64_t a, int64_t b);

/// Dimensions of a dot_general operand that are neither batch nor contracting, in order.
Axes free_dims(int64_t ndim, const Axes& batch, const Axes& contracting);

/// The dtype dot_general computes in for result dtype `out`: BLAS dtypes as themselves,
/// half types in float32, integers and bool in the result dtype.
DType dot_compute_dtype(DType out);

/// The CPU kernel of dot_general.
void dot_general_kernel(const ir::KernelCall& c);

}  // namespace tessel::ops
