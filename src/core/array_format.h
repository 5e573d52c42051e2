#pragma once
// NumPy's text of arrays (Array::to_string, id_print, debug::print).
#include <cstdint>
#include <string>

#include "tessel/array.h"

namespace tessel::detail {

/// NumPy's array2string of `a` with its default options (precision 8, the shortest digits
/// that identify each value in its dtype, scientific notation when magnitudes call for it),
/// summarizing arrays of more than `threshold` elements with `...` (to_string uses NumPy's
/// 1000; id_print passes its threshold option). Lines are not wrapped.
std::string array_to_string(const Array& a, int64_t threshold);

}  // namespace tessel::detail
