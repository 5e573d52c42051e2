// custom_partitioning: a call primitive that carries the function's program (run whole
// wherever the program is not partitioned) and the user's partitioning callbacks, which the
// partitioner consults through SpmdRules (ir/sharding_rule.h). docs/custom_partitioning.md.
#include "tessel/custom_partitioning.h"

#include <algorithm>

#include "compiler/jit_primitive.h"
#include "ir/program.h"
#include "ir/serialize.h"
#include "ir/trace.h"
#include "core/mesh_impl.h"
#include "sharding/rule_string.h"
#include "transforms/call_util.h"

namespace tessel::detail {

struct CustomPartitioningRules {
  PartitionOptions opts;
  std::optional<sharding::RuleString> rule;
};

namespace {

using ir::Params;
constexpr const char* kOp = "custom_partitioning";

/// One call's rules: the user's callbacks, the call's static arguments and the sharding
/// rule bound to the call's avals. Compared by identity.
class RulesParam final : public ir::ParamObject {
 public:
  RulesParam(std::shared_ptr<const CustomPartitioningRules> r, StaticArgs s, std::optional<ir::ShardingRule> b,
             std::string n)
      : rules(std::move(r)), statics(std::move(s)), bound_rule(std::move(b)), name(std::move(n)) {}
  size_t hash() const override { return std::hash<const void*>()(this); }
  bool equals(const ParamObject& o) const override { return this == &o; }
  std::string to_string() const override {
    if (!rules) return "<no partitioning rules>";
    return rules->rule ? "<rule '" + rules->rule->text + "'>" : "<partitioning callbacks>";
  }
  void write(ir::Writer&) const override {
    ir::throw_closure_param("the partitioning rules of '" + name + "'",
                            "partition the program (jit with shardings) before serializing, so that the rules are "
                            "applied and only per-device equations remain");
  }
  std::shared_ptr<const CustomPartitioningRules> rules;
  StaticArgs statics;
  std::optional<ir::ShardingRule> bound_rule;
  std::string name;
};

const RulesParam& rules_of(const Params& p) {
  return p.get_object<RulesParam>("rules");
}

std::string who(const RulesParam& r) { return std::string(kOp) + ": '" + r.name + "'"; }

Sharding named_or_replicated(const std::optional<Sharding>& s, const Mesh& mesh) {
  if (!s || !s->valid() || s->is_single_device()) return replicated_sharding(mesh);
  return *s;
}

/// Checks shardings a callback returned for `what` ("argument"/"result") values of `avals`.
void check_shardings(const RulesParam& r, const char* callback, const char* what, const std::vector<Sharding>& got,
                     std::span<const Aval> avals, const Mesh& mesh) {
  const std::string from = std::string(kOp) + ": the " + callback + " callback of '" + r.name + "' ";
  if (got.size() != avals.size())
    throw ValueError(from + "returned " + std::to_string(got.size()) + " " + what +
                     " sharding(s), but the function has " + std::to_string(avals.size()) + " " + what +
                     "(s) (Array leaves); return one per " + what);
  for (size_t i = 0; i < got.size(); ++i) {
    const Sharding& s = got[i];
    const std::string which = std::string(what) + " " + std::to_string(i) + " (" + avals[i].to_string() + ")";
    if (!s.valid()) throw ValueError(from + "returned an empty Sharding for " + which + "; give a NamedSharding");
    if (s.is_single_device())
      throw ValueError(from + "returned " + s.to_string() + " for " + which + "; give a NamedSharding over " +
                       mesh.to_string());
    if (s.mesh() != mesh)
      throw ValueError(from + "returned a sharding over " + s.mesh().to_string() + " for " + which +
                       ", but the program runs over " + mesh.to_string() + "; use the mesh it was given");
    size_t rank = avals[i].shape.size();
    if (s.spec().size() > rank)
      throw ValueError(from + "returned a sharding of rank " + std::to_string(s.spec().size()) + " (" +
                       s.spec().to_string() + ") for " + which + ", which has rank " + std::to_string(rank) +
                       "; give a spec of at most " + std::to_string(rank) + " entries");
  }
}

std::vector<ShardedShape> sharded_shapes(std::span<const Aval> avals, const std::vector<Sharding>& shardings) {
  std::vector<ShardedShape> r;
  for (size_t i = 0; i < avals.size(); ++i) r.push_back({avals[i].shape, avals[i].dtype, shardings[i]});
  return r;
}

// ---- SPMD rules ----

std::vector<std::optional<Sharding>> cp_infer(const Mesh& mesh, std::span<const std::optional<Sharding>> operands,
                                              std::span<const Aval> ins, std::span<const Aval> outs,
                                              const Params& params) {
  const RulesParam& r = rules_of(params);
  std::vector<std::optional<Sharding>> none(outs.size());
  if (r.bound_rule) return sharding::infer_with_rule(*r.bound_rule, mesh, operands);
  if (!r.rules || !r.rules->opts.infer_sharding_from_operands) return none;
  if (std::none_of(operands.begin(), operands.end(), [](const auto& s) { return s && s->valid(); })) return none;
  std::vector<Sharding> in_s, out_s(outs.size());  // results: not known yet (empty)
  for (size_t i = 0; i < ins.size(); ++i) in_s.push_back(named_or_replicated(operands[i], mesh));
  std::vector<Sharding> got = r.rules->opts.infer_sharding_from_operands(r.statics, mesh, sharded_shapes(ins, in_s),
                                                                         sharded_shapes(outs, out_s));
  check_shardings(r, "infer_sharding_from_operands", "result", got, outs, mesh);
  return {got.begin(), got.end()};
}

std::vector<std::optional<Sharding>> cp_propagate_user(const Mesh& mesh,
                                                       std::span<const std::optional<Sharding>> results,
                                                       std::span<const Aval> ins, std::span<const Aval> outs,
                                                       const Params& params) {
  const RulesParam& r = rules_of(params);
  if (r.bound_rule) return sharding::propagate_with_rule(*r.bound_rule, mesh, results);
  // The layouts the results should have (the user's propagate_user_sharding, by default
  // the layout their users want) pass to the arguments of the same shape: a callback says
  // nothing else about how arguments relate to results (a sharding_rule does).
  std::vector<std::optional<Sharding>> wanted(outs.size()), r_ins(ins.size());
  for (size_t j = 0; j < outs.size(); ++j) {
    if (!results[j] || !results[j]->valid()) continue;
    if (r.rules && r.rules->opts.propagate_user_sharding) {
      Sharding s = r.rules->opts.propagate_user_sharding(r.statics, mesh,
                                                         ShardedShape{outs[j].shape, outs[j].dtype, *results[j]});
      check_shardings(r, "propagate_user_sharding", "result", {s}, outs.subspan(j, 1), mesh);
      wanted[j] = s;
    } else {
      wanted[j] = results[j];
    }
  }
  for (size_t i = 0; i < ins.size(); ++i)
    for (size_t j = 0; j < outs.size() && !r_ins[i]; ++j)
      if (wanted[j] && outs[j].shape == ins[i].shape) r_ins[i] = wanted[j];
  return r_ins;
}

void cp_partition(ir::SpmdBuilder& b, std::span<const Aval> ins, std::span<const Aval> outs, const Params& params) {
  const RulesParam& r = rules_of(params);
  const Mesh& mesh = b.mesh();
  if (mesh.size() == 1) {  // nothing to split (a program on one device): the function itself
    Sharding whole = replicated_sharding(mesh);
    std::vector<Array> locals;
    for (size_t i = 0; i < ins.size(); ++i) locals.push_back(b.operand(i, whole));
    std::vector<Array> louts = ir::eval_program(*params.get<ir::ProgramRef>("program"), locals);
    for (size_t j = 0; j < outs.size(); ++j) b.set_result(j, louts[j], whole);
    return;
  }
  if (!r.rules || !r.rules->opts.partition)
    throw ValueError(who(r) + " is partitioned over " + mesh.to_string() +
                     " but has no partition callback; call def_partition({.partition = ...}) before using it "
                     "in a partitioned jit");
  std::vector<Sharding> in_s, out_s;
  for (size_t i = 0; i < ins.size(); ++i) in_s.push_back(named_or_replicated(b.operand_sharding(i), mesh));
  for (size_t j = 0; j < outs.size(); ++j) out_s.push_back(named_or_replicated(b.result_sharding(j), mesh));
  PartitionResult pr = r.rules->opts.partition(r.statics, mesh, sharded_shapes(ins, in_s), sharded_shapes(outs, out_s));
  if (pr.mesh.valid() && pr.mesh != mesh)
    throw ValueError(std::string(kOp) + ": the partition callback of '" + r.name + "' returned " + pr.mesh.to_string() +
                     ", but the program runs over " + mesh.to_string() + "; return the mesh it was given");
  if (!pr.lower_fn)
    throw ValueError(std::string(kOp) + ": the partition callback of '" + r.name +
                     "' returned no lower_fn; return the per-device function");
  check_shardings(r, "partition", "argument", pr.arg_shardings, ins, mesh);
  check_shardings(r, "partition", "result", pr.result_shardings, outs, mesh);
  std::vector<Array> locals;
  for (size_t i = 0; i < ins.size(); ++i) locals.push_back(b.operand(i, pr.arg_shardings[i]));
  std::vector<Array> louts = pr.lower_fn(locals);
  if (louts.size() != outs.size())
    throw ValueError(std::string(kOp) + ": the lower_fn of '" + r.name + "' returned " + std::to_string(louts.size()) +
                     " array(s), but the function has " + std::to_string(outs.size()) + " result(s)");
  for (size_t j = 0; j < outs.size(); ++j) {
    Aval want(pr.result_shardings[j].shard_shape(outs[j].shape), outs[j].dtype);
    if (!louts[j].valid() || !louts[j].aval().same_type(want))
      throw ShapeError(std::string(kOp) + ": the lower_fn of '" + r.name + "' returned " +
                       (louts[j].valid() ? louts[j].aval().to_string() : std::string("an empty Array")) +
                       " for result " + std::to_string(j) + "; its per-device piece laid out by " +
                       pr.result_shardings[j].spec().to_string() + " is " + want.to_string() + " (global " +
                       outs[j].to_string() + ")");
    b.set_result(j, louts[j], pr.result_shardings[j]);
  }
}

std::optional<Mesh> cp_mesh(const Params&) { return std::nullopt; }

const ir::SpmdRules cp_rules{
    .infer = cp_infer,
    .propagate_user = cp_propagate_user,
    .partition = cp_partition,
    .mesh = cp_mesh,
};

// ---- evaluation and transformations: the function's program, as a plain call ----

std::vector<Aval> cp_aval(std::span<const Aval> ins, const Params& p) { return call_avals(kOp, ins, p); }

/// The parameters of a `jit` call of this equation's program: transformed functions are
/// partitioned like any other code (their derivative or batched form is not the function
/// the callbacks describe).
Params as_plain_call(const Params& p) {
  return Params{{"name", p.get<std::string>("name")}, {"program", p.get<ir::ProgramRef>("program")}};
}

std::vector<Array> cp_jvp(const ir::Primitive&, std::span<const Array> primals, std::span<const Array> tangents,
                          const Params& params) {
  return call_jvp(compiler::jit_primitive(), primals, tangents, as_plain_call(params));
}

std::vector<Array> cp_transpose(const ir::Primitive&, std::span<const Array> cts, std::span<const Array> args,
                                std::span<const Aval> avals, const Params& params) {
  return call_transpose(compiler::jit_primitive(), cts, args, avals, as_plain_call(params));
}

ir::Batched cp_batch(const ir::Primitive&, std::span<const Array> ins, std::span<const int64_t> dims,
                     const ir::BatchAxis& axis, const Params& params) {
  return call_batch(compiler::jit_primitive(), ins, dims, axis, as_plain_call(params));
}

// Not an inlinable call: the simplifier must keep the equation (and its callbacks) until
// the partitioner has seen it; unpartitioned, the kernel runs the program.
const ir::Primitive& custom_partitioning_p = ir::register_primitive({
    .name = kOp,
    .abstract_eval = cp_aval,
    .cpu_kernel = call_kernel,
    .eager_impl = call_eager,
    .jvp_with_primals = cp_jvp,
    .transpose = cp_transpose,
    .batch = cp_batch,
    .spmd = &cp_rules,
});

}  // namespace

std::shared_ptr<const CustomPartitioningRules> make_partitioning_rules(PartitionOptions opts, const std::string& name) {
  auto r = std::make_shared<CustomPartitioningRules>();
  if (!opts.sharding_rule.empty())
    r->rule = sharding::parse_rule_string(opts.sharding_rule, std::string(kOp) + ": '" + name + "'");
  r->opts = std::move(opts);
  return r;
}

std::vector<Array> custom_partitioning_flat(const FlatFn& fn, std::span<const Array> args, StaticArgs statics,
                                            const std::shared_ptr<const CustomPartitioningRules>& rules,
                                            const std::string& name) {
  std::vector<Aval> avals;
  for (const Array& a : args) {
    if (!a.valid())
      throw ValueError(std::string(kOp) + ": '" + name + "' got an empty Array argument; give it a value");
    avals.push_back(a.aval());
  }
  std::vector<Array> captured;
  auto p = std::make_shared<const ir::Program>(ir::hoist_tracer_consts(trace_to_program(fn, avals, name), captured));
  if (!captured.empty())
    throw ValueError(std::string(kOp) + ": '" + name + "' uses a traced value it closes over (" +
                     captured[0].aval().to_string() +
                     " from an enclosing jit or transformation); pass it as an argument instead");
  std::optional<ir::ShardingRule> bound;
  if (rules && rules->rule) {
    std::vector<Aval> outs = p->out_avals();
    bound = sharding::bind_rule_string(*rules->rule, avals, outs, std::string(kOp) + ": '" + name + "'");
  }
  auto rp = std::make_shared<const RulesParam>(rules, std::move(statics), std::move(bound), name);
  return bind(
      custom_partitioning_p, args,
      Params{{"name", name}, {"program", ir::ProgramRef(p)}, {"rules", std::shared_ptr<const ir::ParamObject>(rp)}});
}

void custom_partitioning_bad_static_argnum(const std::string& name, int argnum, int nargs, bool is_array) {
  if (is_array)
    throw ValueError(std::string(kOp) + ": '" + name + "': static_argnums lists argument " + std::to_string(argnum) +
                     ", which holds Arrays; arrays cannot be static. Drop it from static_argnums");
  throw IndexError(std::string(kOp) + ": '" + name + "': static_argnums lists argument " + std::to_string(argnum) +
                   " but the function is called with " + std::to_string(nargs) + " arguments");
}

}  // namespace tessel::detail
