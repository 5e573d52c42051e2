// custom_jvp and custom_vjp: functions whose derivative rules the user supplies. Each is a
// call primitive carrying the function's program and the user's rules (as callables).
#include "ops/rule_util.h"
#include "tessel/error.h"
#include "tessel/transforms.h"
#include "transforms/batching.h"
#include "transforms/call_util.h"

namespace tessel::detail {
namespace {

using ir::Params;
using JvpRule = std::function<std::vector<Array>(std::span<const Array>, std::span<const Array>)>;
using FwdRule = std::function<std::vector<Array>(std::span<const Array>)>;
using BwdRule = std::function<std::vector<Array>(std::span<const Array>, std::span<const Array>)>;

void reject_closure_tangents(const char* op, std::span<const Array> tangents, size_t nconsts) {
  for (size_t i = 0; i < nconsts; ++i)
    if (tangents[i].valid())
      throw ValueError(std::string(op) + ": the function is differentiated with respect to a value it closes over "
                       "(captured from an enclosing transformation); its rule only covers the explicit arguments. "
                       "Pass that value as an argument instead");
}

void check_rule_outputs(const char* op, const char* what, std::span<const Array> got, std::span<const Aval> want) {
  std::vector<Aval> avals;
  for (size_t i = 0; i < got.size(); ++i)  // zeros (empty) always fit
    avals.push_back(got[i].valid() ? got[i].aval() : i < want.size() ? want[i] : Aval({}, DType::float32));
  ops::check_same_types(op, std::string("the ") + what, avals, want,
                        "tangents and cotangents must have the primal's shape and dtype");
}

/// Binds `self` with every input batched at 0; outputs are batched at 0. `p` holds the
/// vectorized rules; with `batch_program_param` its program is batched too.
ir::Batched bind_batched_at_front(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                                  const ir::BatchAxis& axis, Params p, bool batch_program_param) {
  if (batch_program_param) {
    std::vector<int64_t> front(ins.size(), 0);
    p.set("program", batch_program(*p.get<ir::ProgramRef>("program"), front, axis, {}, true).program);
  }
  std::vector<Array> args;
  for (size_t i = 0; i < ins.size(); ++i) args.push_back(ops::move_batch_dim(ins[i], dims[i], 0, axis.size));
  std::vector<Array> outs = bind(self, args, p);
  return {outs, std::vector<int64_t>(outs.size(), 0)};
}

/// `f` vectorized with every input and output batched at 0.
template <class Rule> Rule vmapped_rule(Rule f, const ir::BatchAxis& axis) {
  return [f, axis](auto... spans) {
    std::vector<Array> all;
    (all.insert(all.end(), spans.begin(), spans.end()), ...);
    std::vector<size_t> sizes{spans.size()...};
    return batch_at_front(
        [&](std::span<const Array> xs) {
          if constexpr (sizeof...(spans) == 1) return f(xs);
          else return f(xs.subspan(0, sizes[0]), xs.subspan(sizes[0]));
        },
        all, axis);
  };
}

// ---- custom_jvp ----

std::vector<Aval> custom_jvp_aval(std::span<const Aval> ins, const Params& p) { return call_avals("custom_jvp", ins, p); }

std::vector<Array> custom_jvp_jvp(const ir::Primitive&, std::span<const Array> primals, std::span<const Array> tangents,
                                  const Params& params) {
  size_t nconsts = size_t(params.get_int("num_consts"));
  reject_closure_tangents("custom_jvp", tangents, nconsts);
  std::vector<Array> ps(primals.begin() + long(nconsts), primals.end()), ts;
  for (size_t i = nconsts; i < primals.size(); ++i) ts.push_back(ops::instantiate_zeros(tangents[i], primals[i].aval()));
  std::vector<Array> r = get_fn<JvpRule>(params, "jvp")(ps, ts);
  auto want = params.get<ir::ProgramRef>("program")->out_avals();
  if (r.size() != 2 * want.size())
    throw ValueError("custom_jvp: the jvp rule returned " + std::to_string(r.size() / 2) + " outputs, expected " +
                     std::to_string(want.size()));
  check_rule_outputs("custom_jvp", "jvp rule's primal output", std::span<const Array>(r).subspan(0, want.size()), want);
  check_rule_outputs("custom_jvp", "jvp rule's tangent", std::span<const Array>(r).subspan(want.size()), want);
  return r;
}

ir::Batched custom_jvp_batch(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                             const ir::BatchAxis& axis, const Params& params) {
  Params p = params;
  p.set("jvp", fn_param(vmapped_rule(get_fn<JvpRule>(params, "jvp"), axis), "custom jvp rule"));
  return bind_batched_at_front(self, ins, dims, axis, p, true);
}

const ir::Primitive& custom_jvp_p = ir::register_primitive({
    .name = "custom_jvp_call",
    .abstract_eval = custom_jvp_aval,
    .cpu_kernel = call_kernel,
    .eager_impl = call_eager,
    .jvp_with_primals = custom_jvp_jvp,
    .batch = custom_jvp_batch,
    .inlinable_call = true,
});

// ---- custom_vjp ----

/// The output avals of custom_vjp_lin (stored with the rule).
struct LinInfo {
  BwdRule bwd;
  std::vector<Aval> out_avals;  // the tangent outputs
  size_t num_res;
};

std::vector<Aval> custom_vjp_aval(std::span<const Aval> ins, const Params& p) { return call_avals("custom_vjp", ins, p); }

std::vector<Aval> lin_aval(std::span<const Aval>, const Params& p) { return get_fn<LinInfo>(p, "lin").out_avals; }

[[noreturn]] void forward_mode_error() {
  throw NotImplementedError("custom_vjp: forward-mode differentiation (jvp, jacfwd, linearize's forward use) of a "
                            "custom_vjp function is not supported, since only its reverse-mode rule is given; use "
                            "reverse mode (grad, vjp, jacrev) or define it with custom_jvp");
}
std::vector<Array> lin_eager(std::span<const Array>, const Params&) { forward_mode_error(); }
// Under jit the error surfaces when the result is read (only reverse mode transposes it away).
void lin_kernel(const ir::KernelCall&) { forward_mode_error(); }

std::vector<Array> lin_transpose(const ir::Primitive&, std::span<const Array> cts, std::span<const Array> args,
                                 std::span<const Aval> avals, const Params& params) {
  const LinInfo& info = get_fn<LinInfo>(params, "lin");
  std::vector<Array> res(args.begin(), args.begin() + long(info.num_res)), c;
  for (size_t i = 0; i < cts.size(); ++i) c.push_back(ops::instantiate_zeros(cts[i], info.out_avals[i]));
  std::vector<Array> in_cts = info.bwd(res, c);
  check_rule_outputs("custom_vjp", "bwd rule's cotangent", in_cts, avals.subspan(info.num_res));
  std::vector<Array> r(info.num_res);
  r.insert(r.end(), in_cts.begin(), in_cts.end());
  return r;
}

ir::Batched lin_batch(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                      const ir::BatchAxis& axis, const Params& params) {
  LinInfo info = get_fn<LinInfo>(params, "lin");
  info.bwd = vmapped_rule(info.bwd, axis);
  for (auto& a : info.out_avals) a.shape.insert(a.shape.begin(), axis.size);
  Params p = params;
  p.set("lin", fn_param(info, "custom vjp bwd"));
  return bind_batched_at_front(self, ins, dims, axis, p, false);
}

const ir::Primitive& custom_vjp_lin_p = ir::register_primitive({
    .name = "custom_vjp_lin",
    .abstract_eval = lin_aval,
    .cpu_kernel = lin_kernel,
    .eager_impl = lin_eager,
    .transpose = lin_transpose,
    .batch = lin_batch,
});

std::vector<Array> custom_vjp_jvp(const ir::Primitive&, std::span<const Array> primals, std::span<const Array> tangents,
                                  const Params& params) {
  size_t nconsts = size_t(params.get_int("num_consts"));
  reject_closure_tangents("custom_vjp", tangents, nconsts);
  std::vector<Array> ps(primals.begin() + long(nconsts), primals.end());
  std::vector<Array> fr = get_fn<FwdRule>(params, "fwd")(ps);
  auto want = params.get<ir::ProgramRef>("program")->out_avals();
  std::vector<Array> outs(fr.begin(), fr.begin() + long(want.size())), res(fr.begin() + long(want.size()), fr.end());
  check_rule_outputs("custom_vjp", "fwd rule's primal output", outs, want);
  LinInfo info{get_fn<BwdRule>(params, "bwd"), want, res.size()};
  std::vector<Array> lin_ins = res;
  for (size_t i = nconsts; i < primals.size(); ++i) lin_ins.push_back(ops::instantiate_zeros(tangents[i], primals[i].aval()));
  std::vector<Array> touts = bind(custom_vjp_lin_p, lin_ins, Params{{"lin", fn_param(info, "custom vjp bwd")}});
  outs.insert(outs.end(), touts.begin(), touts.end());
  return outs;
}

ir::Batched custom_vjp_batch(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                             const ir::BatchAxis& axis, const Params& params) {
  Params p = params;
  p.set("fwd", fn_param(vmapped_rule(get_fn<FwdRule>(params, "fwd"), axis), "custom vjp fwd"));
  p.set("bwd", fn_param(vmapped_rule(get_fn<BwdRule>(params, "bwd"), axis), "custom vjp bwd"));
  return bind_batched_at_front(self, ins, dims, axis, p, true);
}

const ir::Primitive& custom_vjp_p = ir::register_primitive({
    .name = "custom_vjp_call",
    .abstract_eval = custom_vjp_aval,
    .cpu_kernel = call_kernel,
    .eager_impl = call_eager,
    .jvp_with_primals = custom_vjp_jvp,
    .batch = custom_vjp_batch,
    .inlinable_call = true,
});

ir::ProgramRef trace_call(const FlatFn& f, std::span<const Array> args, const char* name, std::vector<Array>& captured) {
  std::vector<Aval> avals;
  for (auto& a : args) avals.push_back(a.aval());
  return std::make_shared<const ir::Program>(ir::hoist_tracer_consts(trace_to_program(f, avals, name), captured));
}

}  // namespace

std::vector<Array> custom_jvp_flat(const FlatFn& f, const CustomJvpRule& rule, std::span<const Array> args) {
  std::vector<Array> ins;
  ir::ProgramRef p = trace_call(f, args, "custom_jvp_fn", ins);
  size_t nconsts = ins.size();
  ins.insert(ins.end(), args.begin(), args.end());
  return bind(custom_jvp_p, ins,
              Params{{"program", p}, {"jvp", fn_param(JvpRule(rule), "custom jvp rule")}, {"num_consts", int64_t(nconsts)}});
}

std::vector<Array> custom_vjp_flat(const FlatFn& f, const CustomFwdRule& fwd, const CustomBwdRule& bwd,
                                   std::span<const Array> args) {
  std::vector<Array> ins;
  ir::ProgramRef p = trace_call(f, args, "custom_vjp_fn", ins);
  size_t nconsts = ins.size();
  ins.insert(ins.end(), args.begin(), args.end());
  return bind(custom_vjp_p, ins,
              Params{{"program", p}, {"fwd", fn_param(FwdRule(fwd), "custom vjp fwd")},
                     {"bwd", fn_param(BwdRule(bwd), "custom vjp bwd")}, {"num_consts", int64_t(nconsts)}});
}

}  // namespace tessel::detail
