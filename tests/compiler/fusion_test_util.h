#pragma once
// Helpers shared by the fusion and streaming tests: tracing a function of arrays into a
// simplified program, running a program as an executable, counting its equations.
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "compiler/executable.h"
#include "compiler/passes.h"
#include "ir/trace.h"
#include "tessel/tessel.h"

namespace fusion_test {

using Fn = std::function<std::vector<tessel::Array>(std::span<const tessel::Array>)>;

/// `f` traced on the avals of `args` and simplified, as jit does before fusing.
inline tessel::ir::Program lower(const Fn& f, const std::vector<tessel::Array>& args,
                                 const std::string& name = "random_program") {
  std::vector<tessel::Aval> avals;
  for (const auto& a : args) avals.push_back(a.aval());
  return tessel::compiler::simplify(tessel::detail::trace_to_program(f, avals, name));
}

/// Equations of primitive `name`, including the loop nests inside streamed chains.
inline size_t count_prim(const tessel::ir::Program& p, const std::string& name) {
  size_t n = 0;
  for (const auto& e : p.eqns) {
    n += e.prim->name == name;
    if (e.prim->name == "fused_chain") n += count_prim(*e.params.get<tessel::ir::ProgramRef>("program"), name);
  }
  return n;
}

/// `p` run as an executable on `args`.
inline std::vector<tessel::Array> run(const tessel::ir::Program& p, const std::vector<tessel::Array>& args) {
  auto exe = std::make_shared<tessel::compiler::Executable>(std::make_shared<const tessel::ir::Program>(p));
  return exe->run(args);
}

}  // namespace fusion_test
