#pragma once
// Partial evaluation, the half of reverse mode that splits a computation into what can be
// computed now (known: the primal values) and what must wait (unknown: the tangents). The
// trace records only operations on its own (unknown) tracers; everything else evaluates
// below it, so known values are ordinary arrays and residuals are the known values that
// unknown operations read (the recorded program's constants).
#include "ir/trace.h"

namespace tessel::detail {

class PartialEvalTrace final : public ProgramTrace {
 public:
  PartialEvalTrace() : ProgramTrace(/*dynamic=*/false) {}
  /// Primitives with a partial_eval rule split themselves; others are recorded whole.
  std::vector<Array> process_primitive(const ir::Primitive& p, std::span<const Array> ins,
                                       const ir::Params& params) override;
};

/// A program split into known and unknown parts:
///   known:   (known inputs...) -> (known outputs..., residuals...)
///   unknown: (residuals..., unknown inputs...) -> (unknown outputs...)
struct SplitProgram {
  ir::ProgramRef known, unknown;
  std::vector<bool> out_unknown;
  size_t num_residuals = 0;
};
/// Splits `p` given which inputs are unknown. `save` (when set) picks the equations of the
/// known part whose outputs may be saved as residuals; the unknown part recomputes the
/// others (remat). Without `save` every known value the unknown part needs is saved.
/// `force_unknown[i]` makes output i unknown even when it could be computed now (branches
/// and loop carries need one split for all paths).
SplitProgram partial_eval_program(const ir::Program& p, const std::vector<bool>& unknown_in,
                                  bool (*save)(const ir::Equation&) = nullptr,
                                  const std::vector<bool>& force_unknown = {});

/// Linearizes `fn` at `primals`: returns the primal outputs and the linear program from
/// input tangents to output tangents (residuals are its constants).
std::pair<std::vector<Array>, ir::ProgramRef> linearize_eval(
    const std::function<std::vector<Array>(std::span<const Array>)>& fn, std::span<const Array> primals);

}  // namespace tessel::detail
