// Temporal blocking of loops over carries. A scan whose body is one pass over its carries
// (a stencil time step: element-wise arithmetic and windows) reads and writes every carry
// once per step; with the body unrolled, the fusion pass computes consecutive steps in one
// loop nest, so an iteration passes through memory once for kLoopBlockSteps steps. The
// partitioner blocks the steps of a partitioned loop the same way, with one halo exchange
// for all of them (sharding/partition_nested.cpp): blocking the one-device loop too keeps
// the comparison between the two about devices, not memory passes.
#include "compiler/loop_blocking.h"

#include "compiler/codegen.h"
#include "compiler/passes.h"
#include "core/log.h"
#include "ir/loop_steps.h"
#include "ir/trace.h"

namespace tessel::compiler {
namespace {

/// The most equations of an unrolled body: larger bodies are not one cheap loop nest.
constexpr size_t kMaxBlockedEquations = 512;

/// Whether a loop's one region (its body) is one loop nest over large values that runs only
/// on its carries.
bool blockable(const ir::Regions& regions, int64_t min_elements) {
  if (regions.regions.size() != 1) return false;
  const ir::Region& ports = regions.regions[0];
  for (const ir::Port& port : ports.inputs)
    if (port.kind != ir::Port::kOperand && port.kind != ir::Port::kCarry) return false;
  for (const ir::Port& port : ports.outputs)
    if (port.kind != ir::Port::kCarry) return false;
  const ir::Program& body = *ports.program;
  if (body.eqns.empty() || body.eqns.size() * size_t(kLoopBlockSteps) > kMaxBlockedEquations) return false;
  bool large = false;
  for (const ir::Equation& q : body.eqns) {
    if (!can_generate(q) || is_fusible_reduction(q) || q.effects() != ir::kNoEffect) return false;
    for (const ir::Var& v : q.outputs) large |= v->aval.size() >= min_elements;
  }
  return large;
}

}  // namespace

ir::Program unrolled_steps(const ir::Program& body, const ir::Region& ports, int64_t steps) {
  std::vector<Aval> avals;
  for (const ir::Var& v : body.invars) avals.push_back(v->aval);
  return detail::trace_to_program(
      [&](std::span<const Array> args) {
        std::vector<Array> state(args.begin(), args.end()), outs;
        for (int64_t t = 0; t < steps; ++t) {
          outs = ir::eval_program(body, state);
          for (size_t k = 0; k < outs.size(); ++k)
            for (size_t i = 0; i < ports.inputs.size(); ++i)
              if (ports.inputs[i].kind == ir::Port::kCarry && ports.inputs[i].index == ports.outputs[k].index)
                state[i] = outs[k];
        }
        return outs;
      },
      avals, body.name);
}

ir::Program block_loop_steps(const ir::Program& p, int64_t min_elements) {
  ir::Program out = p;
  bool changed = false;
  for (ir::Equation& e : out.eqns) {
    const ir::LoopSteps* loop = ir::loop_steps(*e.prim);
    if (!loop || !e.prim->regions) continue;
    const int64_t length = loop->steps(e.params);
    ir::Regions regions = e.prim->regions(e.inputs.size(), e.params);
    if (length < kLoopBlockSteps || length % kLoopBlockSteps != 0 || regions.regions.size() != 1) continue;
    regions.regions[0].program = std::make_shared<const ir::Program>(simplify(*regions.regions[0].program, false));
    if (!blockable(regions, min_elements)) continue;
    const ir::Program body = unrolled_steps(*regions.regions[0].program, regions.regions[0], kLoopBlockSteps);
    e.params = loop->with_steps(
        regions.with_programs(e.params, {std::make_shared<const ir::Program>(simplify(body, false))}),
        length / kLoopBlockSteps);
    changed = true;
    TESSEL_DEBUG_LOG("fusion '" + p.name + "': a loop of " + std::to_string(length) + " steps runs " +
                     std::to_string(kLoopBlockSteps) + " steps per iteration");
  }
  return changed ? out : p;
}

}  // namespace tessel::compiler
