#pragma once
// Transposition of linear programs (the backward pass of reverse mode).
#include "ir/trace.h"

namespace tessel::detail {

/// Cotangents of the inputs of `p` that it is linear in, given the output cotangents (empty
/// = zero). `args[i]` is the value of a non-linear input, or empty for a linear one. Returns
/// one cotangent per input (empty for non-linear inputs and zeros).
std::vector<Array> backward_pass(const ir::Program& p, std::span<const Array> args, std::span<const Array> cts);

/// The transposed program: (non-linear inputs..., output cotangents...) -> (cotangents of the
/// linear inputs..., zeros instantiated).
ir::ProgramRef transpose_program(const ir::Program& p, const std::vector<bool>& linear_in);

}  // namespace tessel::detail
