#pragma once
// Temporal blocking (loop_blocking.cpp): several steps of a loop body per iteration, so that
// a loop whose body is one pass over its carries (a stencil time step) passes through memory
// once for several steps.
#include <cstdint>

#include "ir/program.h"
#include "ir/regions.h"

namespace tessel::compiler {

/// Scan body `body` run `steps` times in a row as one program: each step's carry outputs
/// (by `ports`, the body's region) feed the next step's carry inputs; the other inputs are
/// read by every step; the outputs are the last step's.
ir::Program unrolled_steps(const ir::Program& body, const ir::Region& ports, int64_t steps);

/// Steps of a blocked loop per iteration (kLoopBlockSteps): fusion computes them in one loop
/// nest, recomputing what a step reads of the one before at several offsets (a 3-point
/// stencil: 3x its arithmetic at 2 steps, about 6x at 5), so more steps pay only when each
/// step is stored and the steps stream through cache together.
inline constexpr int64_t kLoopBlockSteps = 2;

/// `p` with every loop of a known number of steps (ir/loop_steps.h: a forward scan)
/// over carries only (no scanned operands, no stacked results)
/// whose body is one loop nest of large values (every equation fused by the compiler, none
/// a reduction, some of kLoopBlockMinElements points or more) running kLoopBlockSteps
/// steps per iteration when that divides its length. The values are the same bit for bit:
/// the same operations on the same values. `p` itself when no scan qualifies.
ir::Program block_loop_steps(const ir::Program& p, int64_t min_elements);

}  // namespace tessel::compiler
