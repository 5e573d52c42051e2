// checkpoint (remat): a call whose reverse-mode split saves only what its policy allows and
// recomputes the rest in the backward pass.
#include "tessel/transforms.h"
#include "transforms/call_util.h"
#include "transforms/partial_eval.h"

namespace tessel::detail {
namespace {

using ir::Params;

bool save_nothing(const ir::Equation&) { return false; }
bool save_dots(const ir::Equation& e) { return e.prim->name == "dot_general"; }
bool save_everything(const ir::Equation&) { return true; }

auto policy_fn(const std::string& name) {
  if (name == "dots_saveable") return &save_dots;
  if (name == "everything_saveable") return &save_everything;
  return &save_nothing;
}

std::vector<Aval> remat_aval(std::span<const Aval> ins, const Params& p) { return call_avals("checkpoint", ins, p); }

std::vector<Array> remat_partial_eval(const ir::Primitive& self, Trace& trace, std::span<const Array> ins,
                                      const Params& params) {
  auto& pe = static_cast<PartialEvalTrace&>(trace);
  std::vector<bool> unknown;
  std::vector<Array> known, unk;
  for (auto& x : ins) {
    unknown.push_back(pe.owns(x));
    (unknown.back() ? unk : known).push_back(x);
  }
  SplitProgram sp = partial_eval_program(*params.get<ir::ProgramRef>("program"), unknown,
                                         policy_fn(params.get<std::string>("policy")));
  std::vector<Array> kouts = ir::eval_program(*sp.known, known);
  const size_t nk = kouts.size() - sp.num_residuals;
  std::vector<Array> uargs(kouts.begin() + long(nk), kouts.end());
  uargs.insert(uargs.end(), unk.begin(), unk.end());
  std::vector<Array> uouts = pe.record(self, uargs, with_program(params, sp.unknown)), r;
  for (size_t i = 0, k = 0, u = 0; i < sp.out_unknown.size(); ++i) r.push_back(sp.out_unknown[i] ? uouts[u++] : kouts[k++]);
  return r;
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

std::vector<Array> checkpoint_flat(const FlatFn& f, std::span<const Array> args, CheckpointPolicy policy) {
  std::vector<Aval> avals;
  for (auto& a : args) avals.push_back(a.aval());
  std::vector<Array> ins;
  auto p = std::make_shared<const ir::Program>(ir::hoist_tracer_consts(trace_to_program(f, avals, "checkpointed"), ins));
  ins.insert(ins.end(), args.begin(), args.end());
  const char* name = policy == CheckpointPolicy::dots_saveable        ? "dots_saveable"
                     : policy == CheckpointPolicy::everything_saveable ? "everything_saveable"
                                                                       : "nothing_saveable";
  return bind(remat_p, ins, Params{{"program", p}, {"policy", std::string(name)}});
}

}  // namespace tessel::detail
