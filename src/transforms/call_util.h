#pragma once
// Shared pieces of the call-like primitives (checkpoint, custom_jvp, custom_vjp): a kernel
// and eager evaluation that run params["program"], and callables carried in params.
#include <functional>
#include <memory>
#include <string>

#include "ir/program.h"
#include "ir/serialize.h"
#include "ir/trace.h"

namespace tessel::detail {

/// Runs params["program"] on the kernel's buffers.
void call_kernel(const ir::KernelCall& c);
/// Evaluates params["program"] on the inputs.
std::vector<Array> call_eager(std::span<const Array> ins, const ir::Params& params);
/// params["program"]'s output avals (inputs checked against its inputs, errors name `op`).
std::vector<Aval> call_avals(const std::string& op, std::span<const Aval> ins, const ir::Params& params);

/// `params` with params["program"] replaced.
ir::Params with_program(const ir::Params& params, ir::ProgramRef program);

// Rules shared by call primitives whose program is transformed as a whole (jit, checkpoint):
/// jvp: calls the jvp of the program (inputs: primals, nonzero tangents).
std::vector<Array> call_jvp(const ir::Primitive& self, std::span<const Array> primals, std::span<const Array> tangents,
                            const ir::Params& params);
/// transpose: calls the transposed program (inputs: non-linear arguments, output cotangents).
std::vector<Array> call_transpose(const ir::Primitive& self, std::span<const Array> cts, std::span<const Array> args,
                                  std::span<const Aval> avals, const ir::Params& params);
/// batching: calls the batched program.
ir::Batched call_batch(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                       const ir::BatchAxis& axis, const ir::Params& params);

/// partial evaluation of a call: splits the program (saving what `save` allows, all if
/// null), runs the known part with `run_known` and records a call of the unknown part.
std::vector<Array> call_partial_eval(
    const ir::Primitive& self, Trace& trace, std::span<const Array> ins, const ir::Params& params,
    bool (*save)(const ir::Equation&),
    const std::function<std::vector<Array>(const ir::ProgramRef&, std::span<const Array>)>& run_known);

/// A C++ callable as an equation parameter (compared by identity).
template <class Fn> class FnParam final : public ir::ParamObject {
 public:
  explicit FnParam(Fn f, std::string what) : f(std::move(f)), what_(std::move(what)) {}
  size_t hash() const override { return std::hash<const void*>()(this); }
  bool equals(const ParamObject& o) const override { return this == &o; }
  std::string to_string() const override { return "<" + what_ + ">"; }
  void write(ir::Writer&) const override {
    ir::throw_closure_param("the " + what_,
                            "apply the transformation the rule is for (jvp, grad, vjp) before serializing, so "
                            "that the rule is traced into plain equations, or ship a function without custom rules");
  }
  Fn f;

 private:
  std::string what_;
};
template <class Fn> std::shared_ptr<const ir::ParamObject> fn_param(Fn f, std::string what) {
  return std::make_shared<FnParam<Fn>>(std::move(f), std::move(what));
}
template <class Fn> const Fn& get_fn(const ir::Params& p, std::string_view key) {
  return p.get_object<FnParam<Fn>>(key).f;
}

}  // namespace tessel::detail
