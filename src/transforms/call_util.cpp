#include "transforms/call_util.h"

#include "ops/rule_util.h"
#include "tessel/error.h"
#include "transforms/batching.h"
#include "transforms/jvp.h"
#include "transforms/partial_eval.h"
#include "transforms/transpose.h"

namespace tessel::detail {

void call_kernel(const ir::KernelCall& c) {
  ir::run_program(c.params.get<ir::ProgramRef>("program"), c.ins, c.outs, c.device);
}

std::vector<Array> call_eager(std::span<const Array> ins, const ir::Params& params) {
  return ir::eval_program(*params.get<ir::ProgramRef>("program"), ins);
}

std::vector<Aval> call_avals(const std::string& op, std::span<const Aval> ins, const ir::Params& params) {
  const auto& p = *params.get<ir::ProgramRef>("program");
  ops::check_same_types(op, "argument", ins, p.in_avals(), "call the function with the types it was traced for");
  return p.out_avals();
}

ir::Params with_program(const ir::Params& params, ir::ProgramRef program) {
  ir::Params p = params;
  p.set("program", std::move(program));
  return p;
}

std::vector<Array> call_jvp(const ir::Primitive& self, std::span<const Array> primals, std::span<const Array> tangents,
                            const ir::Params& params) {
  const auto& prog = *params.get<ir::ProgramRef>("program");
  std::vector<bool> nonzero;
  std::vector<Array> args(primals.begin(), primals.end());
  for (const Array& t : tangents) {
    nonzero.push_back(t.valid());
    if (t.valid()) args.push_back(t);
  }
  JvpProgram jp = jvp_program(prog, nonzero);
  std::vector<Array> outs = bind(self, args, with_program(params, jp.program));
  const size_t n = prog.outvars.size();
  std::vector<Array> result(outs.begin(), outs.begin() + long(n));
  for (size_t i = 0, k = n; i < n; ++i) result.push_back(jp.out_nonzero[i] ? outs[k++] : Array());
  return result;
}

std::vector<Array> call_transpose(const ir::Primitive& self, std::span<const Array> cts, std::span<const Array> args,
                                  std::span<const Aval>, const ir::Params& params) {
  const auto& prog = *params.get<ir::ProgramRef>("program");
  std::vector<bool> linear;
  std::vector<Array> targs;
  for (const Array& a : args) {
    linear.push_back(!a.valid());
    if (a.valid()) targs.push_back(a);
  }
  auto out_avals = prog.out_avals();
  for (size_t i = 0; i < cts.size(); ++i) targs.push_back(ops::instantiate_zeros(cts[i], out_avals[i]));
  std::vector<Array> outs = bind(self, targs, with_program(params, transpose_program(prog, linear))), result;
  for (size_t i = 0, k = 0; i < args.size(); ++i) result.push_back(linear[i] ? outs[k++] : Array());
  return result;
}

ir::Batched call_batch(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                       const ir::BatchAxis& axis, const ir::Params& params) {
  BatchedProgram bp = batch_program(*params.get<ir::ProgramRef>("program"), {dims.begin(), dims.end()}, axis);
  return {bind(self, ins, with_program(params, bp.program)), bp.out_dims};
}

std::vector<Array> call_partial_eval(
    const ir::Primitive& self, Trace& trace, std::span<const Array> ins, const ir::Params& params,
    bool (*save)(const ir::Equation&),
    const std::function<std::vector<Array>(const ir::ProgramRef&, std::span<const Array>)>& run_known) {
  auto& pe = static_cast<PartialEvalTrace&>(trace);
  std::vector<bool> unknown;
  std::vector<Array> known_ins, unknown_ins;
  for (const Array& x : ins) {
    unknown.push_back(pe.owns(x));
    (unknown.back() ? unknown_ins : known_ins).push_back(x);
  }
  SplitProgram sp = partial_eval_program(*params.get<ir::ProgramRef>("program"), unknown, save);
  std::vector<Array> kouts = run_known(sp.known, known_ins);
  const size_t n_known = kouts.size() - sp.num_residuals;
  std::vector<Array> uargs(kouts.begin() + long(n_known), kouts.end());
  uargs.insert(uargs.end(), unknown_ins.begin(), unknown_ins.end());
  std::vector<Array> uouts = pe.record(self, uargs, with_program(params, sp.unknown)), result;
  for (size_t i = 0, k = 0, u = 0; i < sp.out_unknown.size(); ++i)
    result.push_back(sp.out_unknown[i] ? uouts[u++] : kouts[k++]);
  return result;
}

}  // namespace tessel::detail
