#pragma once
// The order of the sort primitive written as element-wise comparisons (numpy_sort.cpp), for
// the functions that compare instead of sorting (searchsorted, unique, set operations).
#include "ops/op_util.h"

namespace tessel::ops {

/// x < y (x <= y when `or_equal`) in lax.sort's order: NaNs after +inf and equal to each
/// other, -0.0 equal to 0.0, complex numbers by (real, imag). Same dtypes, broadcasting.
Array sort_less(const Array& x, const Array& y, bool or_equal = false);
/// x == y in that order (NaN equals NaN).
Array sort_equal(const Array& x, const Array& y);
/// The dtype of positions along an axis of n elements: int32 unless n needs int64.
DType position_dtype(int64_t n);

}  // namespace tessel::ops
