#pragma once
// The `jit` primitive: a call of a compiled program, recorded when a jitted function is
// called under a trace (nested jit, later grad/vmap of jit).
#include "ir/primitive.h"

namespace tessel::compiler {

/// Params: program (ProgramRef), name (string).
const ir::Primitive& jit_primitive();

}  // namespace tessel::compiler
