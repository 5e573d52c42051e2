#include "transforms/call_util.h"

#include "ops/op_util.h"
#include "tessel/error.h"

namespace tessel::detail {

void call_kernel(const ir::KernelCall& c) {
  ir::run_program(c.params.get<ir::ProgramRef>("program"), c.ins, c.outs, c.device);
}

std::vector<Array> call_eager(std::span<const Array> ins, const ir::Params& params) {
  return ir::eval_program(*params.get<ir::ProgramRef>("program"), ins);
}

std::vector<Aval> call_avals(const std::string& op, std::span<const Aval> ins, const ir::Params& params) {
  const auto& p = *params.get<ir::ProgramRef>("program");
  auto want = p.in_avals();
  if (want.size() != ins.size())
    throw ValueError(op + ": the function takes " + std::to_string(want.size()) + " arrays, got " +
                     std::to_string(ins.size()));
  for (size_t i = 0; i < ins.size(); ++i)
    if (ins[i].shape != want[i].shape || ins[i].dtype != want[i].dtype)
      throw ShapeError(op + ": argument " + std::to_string(i) + " has type " + ins[i].to_string() + ", expected " +
                       want[i].to_string());
  return p.out_avals();
}

}  // namespace tessel::detail
