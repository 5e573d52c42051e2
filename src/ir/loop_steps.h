#pragma once
// Loops that run their body a number of times known from their parameters, one step after
// the other (scan): how many steps, and the same loop with another number. A primitive
// declares it where it is defined (transforms/control_flow.cpp); passes that change how many
// steps of the body one iteration runs read it (compiler/loop_blocking.cpp, the
// partitioner's blocked loops), instead of knowing the primitive by name; the work of a
// loop's steps (nested_work_bytes) decides where an executable runs.
#include <cstddef>
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

/// The bytes the nested programs of an equation of `prim` with `num_operands` operands and
/// `params` read and write when it runs once, an estimate of its work beyond its own
/// operands and results: a loop's regions (ir/regions.h: a loop has carries) times its
/// steps, the largest of a cond's branches, a call's program; nested programs counted the
/// same way, recursively. A loop whose steps its parameters do not tell (a while loop, a
/// reverse scan) is large work: SIZE_MAX, as is any sum that overflows. 0 without nested
/// programs. Executables and eager operations add it to their operands' and results' bytes
/// when they decide whether to run on the caller's thread (the inline limit), so a loop of
/// small carries running many steps is queued on the device's stream and the call returns.
size_t nested_work_bytes(const Primitive& prim, size_t num_operands, const Params& params);

/// a + b, or SIZE_MAX where it overflows: sums of work bytes (nested_work_bytes).
inline size_t add_work_bytes(size_t a, size_t b) { return a > SIZE_MAX - b ? SIZE_MAX : a + b; }

}  // namespace tessel::ir
