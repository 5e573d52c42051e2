#pragma once
// Helpers shared by the files defining ts::comm primitives.
#include "ir/primitive.h"
#include "tessel/comm.h"

namespace tessel::comm::detail {

/// Every comm equation: kept although its result may be unused, and run in program order
/// with the other communication of the device.
inline constexpr uint32_t kCommEffects = ir::kSideEffect | ir::kOrdered;

/// Params {comm} for `c` (initializes MPI).
ir::Params comm_params(const Comm& c);

/// Eagerly, waits for a token result (barrier, send) and rethrows the call's error; under
/// a trace, nothing.
void finish_token(const Array& token);

}  // namespace tessel::comm::detail
