#pragma once
// Forward-mode differentiation: the JVP trace, whose tracers carry a primal value and a
// tangent (an empty Array is a symbolic zero), and the program-to-program jvp.
#include "ir/trace.h"

namespace tessel::detail {

class JvpTrace final : public Trace {
 public:
  std::vector<Array> process_primitive(const ir::Primitive& p, std::span<const Array> ins,
                                       const ir::Params& params) override;
  /// A value of this trace: `primal` with `tangent`; a zero tangent gives `primal` itself.
  Array pack(const Array& primal, const Array& tangent);
  /// Splits a value into its primal and tangent (zero for values of other traces).
  std::pair<Array, Array> unpack(const Array& x) const;
};

class JvpTracer final : public Tracer {
 public:
  JvpTracer(Array primal, Array tangent, Trace* trace)
      : Tracer(primal.aval(), trace, trace->id()), primal(std::move(primal)), tangent(std::move(tangent)) {}
  Array primal, tangent;
};

/// Runs `fn` on primals with tangents (empty = zero); returns the outputs and their tangents
/// (empty where symbolically zero).
std::pair<std::vector<Array>, std::vector<Array>> jvp_eval(
    const std::function<std::vector<Array>(std::span<const Array>)>& fn, std::span<const Array> primals,
    std::span<const Array> tangents);

/// A program `(primals..., tangents of the nonzero inputs...) -> (outs..., tangents of the
/// nonzero outputs...)`.
struct JvpProgram {
  ir::ProgramRef program;
  std::vector<bool> out_nonzero;
};
/// `instantiate[i]` forces output i's tangent to be materialized (zeros) when it has a
/// tangent space (loop carries need fixed types).
JvpProgram jvp_program(const ir::Program& p, const std::vector<bool>& nonzero_in,
                       const std::vector<bool>& instantiate = {});

/// True for the dtypes that have tangents (floating and complex).
bool has_tangent_space(DType d);

}  // namespace tessel::detail
