#pragma once
// Placement helpers shared by the partitioner and the worker side of single-controller jobs
// (src/sharding/placement.cpp).
#include "tessel/array.h"
#include "tessel/sharding.h"

namespace tessel::detail {

/// `x` laid out by the named sharding `s` (core/pieces.h's split_into_pieces); on the driver
/// of a single-controller job the workers owning devices of `s` are sent the value and keep
/// their pieces.
Array split_array(const Array& x, const Sharding& s);

}  // namespace tessel::detail
