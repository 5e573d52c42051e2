#pragma once
// Loops that run their body a number of times known from their parameters, one step after
// the other (scan): how many steps, and the same loop with another number. A primitive
// declares it where it is defined (transforms/control_flow.cpp); passes that change how many
// steps of the body one iteration runs read it (compiler/loop_blocking.cpp, the
// partitioner's blocked loops), instead of knowing the primitive by name.
#include <cstdint>

#include "ir/params.h"

namespace tessel::ir {

struct Primitive;

struct LoopSteps {
  /// The number of steps of the loop with these parameters, or -1 when it does not run its
  /// body forward a known number of times (a reverse scan).
  int64_t (*steps)(const Params& params) = nullptr;
  /// The parameters of the same loop running `steps` steps.
  Params (*with_steps)(const Params& params, int64_t steps) = nullptr;
};

/// Declares `prim` a loop of known steps (once, at its definition). Returns true, for use in
/// a static initializer.
bool register_loop_steps(const Primitive& prim, LoopSteps rule);

/// The rule `prim` declared, or null.
const LoopSteps* loop_steps(const Primitive& prim);

}  // namespace tessel::ir
