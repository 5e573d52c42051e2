#pragma once
// Control-flow primitives (cond, while, scan). They live above the ops layer because their
// rules transform their body programs (jvp_program, partial_eval_program, ...).
#include "ir/trace.h"

namespace tessel::detail {

extern const ir::Primitive& cond_p;   // (index, operands...) params: branches
extern const ir::Primitive& while_p;  // (cond consts..., body consts..., carry...) params: cond, body, cond_nconsts, body_nconsts
extern const ir::Primitive& scan_p;   // (consts..., carry..., xs...) params: program, num_consts, num_carry, length, reverse

/// `p` with its inputs reordered: new input i is old input order[i].
ir::ProgramRef permute_inputs(const ir::Program& p, const std::vector<size_t>& order);

}  // namespace tessel::detail
