// The flat entry points behind include/tessel/transforms.h, and stop_gradient.
#include <cstring>

#include "ops/rule_util.h"
#include "tessel/error.h"
#include "tessel/transforms.h"
#include "transforms/batching.h"
#include "transforms/jvp.h"
#include "transforms/partial_eval.h"
#include "transforms/transpose.h"

namespace tessel {
namespace detail {

struct LinearState {
  ir::ProgramRef program;
  std::vector<Aval> in_avals, out_avals;
};

namespace {

// Always a ShapeError: a tangent or cotangent is described by its whole type.
void check_same(const char* op, const char* what, size_t i, const Aval& got, const Aval& want) {
  if (got.shape != want.shape || got.dtype != want.dtype)
    throw ShapeError(std::string(op) + ": " + what + " " + std::to_string(i) + " has type " + got.to_string() +
                     " but must match " + want.to_string() + "; give it the same shape and dtype");
}

std::shared_ptr<const LinearState> make_state(ir::ProgramRef p) {
  auto s = std::make_shared<LinearState>();
  s->in_avals = p->in_avals();
  s->out_avals = p->out_avals();
  s->program = std::move(p);
  return s;
}

std::vector<Aval> strong(std::vector<Aval> avals) {
  for (auto& a : avals) a.weak_type = false;
  return avals;
}

}  // namespace

void transform_error(const std::string& message) { throw ValueError(message); }

void check_grad_output(const char* op, const Array& out, size_t num_outputs) {
  if (num_outputs != 1 || out.ndim() != 0 || !is_floating(out.dtype()))
    throw ShapeError(std::string(op) + ": the function must return one scalar (rank-0) real floating-point "
                     "Array, got " + (num_outputs != 1 ? std::to_string(num_outputs) + " arrays" : out.aval().to_string()) +
                     "; for other outputs use vjp, jacrev or jacfwd (or sum the output first)");
}

void check_differentiable(const char* op, const Array& x, int i, const char* fix) {
  if (!is_inexact(x.dtype()))
    throw DTypeError(std::string(op) + ": argument leaf " + std::to_string(i) + " has dtype " +
                     dtype_name(x.dtype()) + "; gradients are defined for floating and complex inputs only. " +
                     (fix ? std::string(fix) : "Convert it with astype, or leave it out of argnums"));
}

std::pair<std::vector<Array>, std::vector<Array>> jvp_flat(const FlatFn& fn, std::span<const Array> primals,
                                                           std::span<const Array> tangents) {
  if (primals.size() != tangents.size())
    throw ValueError("jvp: got " + std::to_string(primals.size()) + " primal arrays and " +
                     std::to_string(tangents.size()) + " tangent arrays; give one tangent per primal");
  std::vector<Array> ts;
  for (size_t i = 0; i < primals.size(); ++i) {
    // Integer and bool inputs have no tangent space: JAX wants a float0 tangent for them,
    // which is tessel's empty Array (a symbolic zero).
    if (tangents[i].valid() && !is_inexact(primals[i].dtype()))
      throw DTypeError("jvp: primal leaf " + std::to_string(i) + " has dtype " + dtype_name(primals[i].dtype()) +
                       " and tangent dtype " + dtype_name(tangents[i].dtype()) +
                       "; integer and bool inputs have no tangent. Pass an empty ts::Array() as its tangent (JAX's "
                       "float0 zero), or convert the primal to a floating dtype with astype");
    if (tangents[i].valid()) check_same("jvp", "tangent", i, tangents[i].aval(), primals[i].aval());
    ts.push_back(tangents[i]);
  }
  auto [outs, touts] = jvp_eval(fn, primals, ts);
  for (size_t i = 0; i < outs.size(); ++i) touts[i] = ops::instantiate_zeros(touts[i], outs[i].aval());
  return {outs, touts};
}

std::pair<std::vector<Array>, std::shared_ptr<const LinearState>> linearize_flat(const FlatFn& fn,
                                                                                 std::span<const Array> primals) {
  auto [outs, program] = linearize_eval(fn, primals);
  return {outs, make_state(program)};
}

std::shared_ptr<const LinearState> trace_linear_flat(const FlatFn& fn, std::span<const Aval> in_avals) {
  std::vector<Aval> avals = strong({in_avals.begin(), in_avals.end()});
  return make_state(std::make_shared<const ir::Program>(trace_to_program(fn, avals, "linear")));
}

std::vector<Array> linear_apply(const LinearState& s, std::span<const Array> tangents) {
  if (tangents.size() != s.in_avals.size())
    throw ValueError("linearize: the linear function takes " + std::to_string(s.in_avals.size()) +
                     " tangent arrays, got " + std::to_string(tangents.size()));
  for (size_t i = 0; i < tangents.size(); ++i) check_same("linearize", "tangent", i, tangents[i].aval(), s.in_avals[i]);
  return ir::eval_program(*s.program, tangents);
}

std::vector<Array> linear_transpose_apply(const LinearState& s, std::span<const Array> cts, const char* op) {
  if (cts.size() != s.out_avals.size())
    throw ValueError(std::string(op) + ": the cotangent has " + std::to_string(cts.size()) +
                     " arrays but the function returned " + std::to_string(s.out_avals.size()));
  for (size_t i = 0; i < cts.size(); ++i)
    if (cts[i].valid()) check_same(op, "cotangent", i, cts[i].aval(), s.out_avals[i]);
  std::vector<Array> args(s.in_avals.size());
  std::vector<Array> r = backward_pass(*s.program, args, cts);
  for (size_t i = 0; i < r.size(); ++i) r[i] = ops::instantiate_zeros(r[i], s.in_avals[i]);
  return r;
}

std::vector<Array> vmap_flat(const FlatFn& fn, std::span<const Array> args, std::span<const std::optional<int64_t>> in_axes,
                             std::span<const std::optional<int64_t>> out_axes, std::optional<int64_t> axis_size) {
  std::vector<int64_t> dims;
  int64_t size = -1;
  size_t first = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!in_axes[i]) {
      dims.push_back(ir::kNotBatched);
      continue;
    }
    int64_t r = args[i].ndim(), d = *in_axes[i] < 0 ? *in_axes[i] + r : *in_axes[i];
    if (d < 0 || d >= r)
      throw IndexError("vmap: in_axes " + std::to_string(*in_axes[i]) + " is out of range for argument leaf " +
                       std::to_string(i) + " of shape " + args[i].aval().to_string() +
                       "; map an existing axis or use ts::none");
    int64_t n = args[i].shape()[size_t(d)];
    if (size >= 0 && n != size)
      throw ShapeError("vmap: inconsistent sizes for the mapped axis: argument leaf " + std::to_string(first) +
                       " has size " + std::to_string(size) + " and argument leaf " + std::to_string(i) + " has size " +
                       std::to_string(n) + " (shape " + args[i].aval().to_string() + ", axis " + std::to_string(d) +
                       "); all mapped axes must have one size");
    if (size < 0) first = i;
    size = n;
    dims.push_back(d);
  }
  if (size < 0) {
    if (!axis_size)
      throw ValueError("vmap: no argument is mapped (every in_axes entry is none, or there are no arguments); "
                       "pass axis_size to say how many times to map");
    size = *axis_size;
  } else if (axis_size && *axis_size != size) {
    throw ShapeError("vmap: axis_size is " + std::to_string(*axis_size) + " but the mapped arguments have size " +
                     std::to_string(size));
  }
  return vmap_eval(fn, args, dims, out_axes, ir::BatchAxis{size, ""});
}

}  // namespace detail

namespace {

std::vector<Aval> identity_aval(std::span<const Aval> ins, const ir::Params&) { return {ins[0]}; }
void copy_kernel(const ir::KernelCall& c) { std::memcpy(c.outs[0], c.ins[0], c.out_avals[0].nbytes()); }
std::vector<Array> stop_gradient_jvp(const ir::Primitive&, std::span<const Array>, std::span<const Array>,
                                     std::span<const Array>, const ir::Params&) {
  return {Array()};
}
ir::Batched identity_batch(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                           const ir::BatchAxis&, const ir::Params& params) {
  return {detail::bind(self, ins, params), {dims[0]}};
}

// In a fused loop nest stop_gradient is its operand (jit compiles after differentiation),
// so a user's softmax with a stop_gradient on its max still fuses into one loop nest.
std::string stop_gradient_codegen(std::span<const std::string> xs, std::span<const Aval>, const Aval&,
                                  const ir::Params&) {
  return xs[0];
}

const ir::Primitive& stop_gradient_p = ir::register_primitive({
    .name = "stop_gradient",
    .arity = {1, 1},
    .abstract_eval = identity_aval,
    .cpu_kernel = copy_kernel,
    .fusion = ir::FusionKind::kElementwise,
    .codegen = stop_gradient_codegen,
    .point_cost = 0,
    .jvp = stop_gradient_jvp,
    .batch = identity_batch,
    .sharding_rule = ir::elementwise_sharding_rule,
});

}  // namespace

Array stop_gradient(const Array& x) {
  if (!x.is_tracer()) return x;
  return detail::bind1(stop_gradient_p, {x});
}

}  // namespace tessel
