#pragma once
// Eager dispatch of one primitive on arrays of one device.
#include <span>
#include <vector>

#include "ir/primitive.h"
#include "tessel/array.h"

namespace tessel::detail {

/// Applies `p` to concrete arrays that live on one device each (not laid out over several):
/// its eager implementation if it has one, else its CPU kernel queued on the result device
/// (runtime/launch.h's result_device), with abstract evaluation cached per signature.
std::vector<Array> eager_eval(const ir::Primitive& p, std::span<const Array> ins, const ir::Params& params);

}  // namespace tessel::detail
