#pragma once
// The `jit` primitive: a call of a compiled program, recorded when a jitted function is
// called under a trace (nested jit, later grad/vmap of jit).
#include "ir/primitive.h"
#include "ir/program.h"
#include "tessel/jit.h"

namespace tessel::compiler {

/// The IR behind a public `Program` (make_program, jit's traced/lowered programs): for
/// modules that work on programs (serialization, pipeline stage slicing). Throws for an
/// empty Program.
const ir::Program& program_of(const Program& p);

/// Params: program (ProgramRef), name (string).
const ir::Primitive& jit_primitive();

}  // namespace tessel::compiler
