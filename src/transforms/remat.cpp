// checkpoint (remat): a call whose reverse-mode split saves only what its policy allows and
// recomputes the rest in the backward pass.
#include "tessel/transforms.h"
#include "transforms/call_util.h"

namespace tessel::detail {
namespace {

using ir::Params;

bool save_nothing(const ir::Equation&) { return false; }
bool save_dots(const ir::Equation& e) { return e.prim->matrix_product; }
bool save_everything(const ir::Equation&) { return true; }

auto policy_fn(const std::string& name) {
  if (name == "dots_saveable") return &save_dots;
  if (name == "everything_saveable") return &save_everything;
  return &save_nothing;
}

std::vector<Aval> remat_aval(std::span<const Aval> ins, const Params& p) { return call_avals("checkpoint", ins, p); }

std::vector<Array> remat_partial_eval(const ir::Primitive& self, Trace& trace, std::span<const Array> ins,
                                      const Params& params) {
  return call_partial_eval(self, trace, ins, params, policy_fn(params.get<std::string>("policy")),
                           [](const ir::ProgramRef& known, std::span<const Array> xs) { return ir::eval_program(*known, xs); });
}

const ir::Primitive& remat_p = ir::register_primitive({
    .name = "checkpoint",
    .abstract_eval = remat_aval,
    .cpu_kernel = call_kernel,
    .eager_impl = call_eager,
    .jvp_with_primals = call_jvp,
    .transpose = call_transpose,
    .batch = call_batch,
    .partial_eval = remat_partial_eval,
    .inlinable_call = true,
});

}  // namespace

namespace {
const char* policy_name(CheckpointPolicy policy) {
  switch (policy) {
    case CheckpointPolicy::nothing_saveable: return "nothing_saveable";
    case CheckpointPolicy::dots_saveable: return "dots_saveable";
    case CheckpointPolicy::everything_saveable: return "everything_saveable";
  }
  throw ValueError("checkpoint: CheckpointPolicy(" + std::to_string(int(policy)) +
                   ") is not a policy (an integer cast to CheckpointPolicy?); use nothing_saveable, dots_saveable or "
                   "everything_saveable");
}
}  // namespace

std::vector<Array> checkpoint_flat(const FlatFn& f, std::span<const Array> args, CheckpointPolicy policy) {
  const char* name = policy_name(policy);  // before tracing: a bad policy is the caller's first mistake
  std::vector<Aval> avals;
  for (auto& a : args) avals.push_back(a.aval());
  std::vector<Array> ins;
  auto p = std::make_shared<const ir::Program>(ir::hoist_tracer_consts(trace_to_program(f, avals, "checkpointed"), ins));
  ins.insert(ins.end(), args.begin(), args.end());
  return bind(remat_p, ins, Params{{"program", p}, {"policy", std::string(name)}});
}

}  // namespace tessel::detail
