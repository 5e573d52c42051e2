#pragma once
// Global arrays assembled from their pieces (docs/sharding.md): what a program that computed
// or loaded each device's piece itself passes to jit, as in JAX.
#include <vector>

#include "tessel/array.h"
#include "tessel/export.h"
#include "tessel/sharding.h"

namespace tessel {

/// jax.make_array_from_single_device_arrays: the global array of `shape` laid out by
/// `sharding` whose pieces are `arrays`, one single-device array per device of the sharding
/// that this process holds (its addressable devices; under mpirun each process passes its
/// own), in any order, each of the shape of its device's block of the global array (see
/// Sharding::device_indices) and of one dtype. The pieces' buffers are shared, not copied
/// (an uneven last piece is padded once). A ValueError (ShapeError, DTypeError) names the
/// piece and the fix when a device has no piece or two, a piece is on another device, or
/// shapes or dtypes do not fit.
TESSEL_API Array make_array_from_single_device_arrays(const Shape& shape, const Sharding& sharding,
                                                      const std::vector<Array>& arrays);

}  // namespace tessel
