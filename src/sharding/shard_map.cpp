// shard_map: a call of a per-device program (traced on the per-device avals, with the mesh
// set for the collectives in it) whose operands and results are laid out by partition
// specs. It partitions itself: the partitioner lays each operand out by its in_spec, binds
// the body on the per-device values and takes the results as laid out by the out_specs.
// Its transformation rules transform the body and adjust the specs.
//
//   params: program (the body), mesh (MeshParam), in_specs, out_specs (SpecsParam)
#include "ops/collectives.h"
#include "ops/rule_util.h"
#include "runtime/spmd_context.h"
#include "core/mesh_impl.h"
#include "tessel/error.h"
#include "tessel/shard_map.h"
#include "transforms/batching.h"
#include "transforms/jvp.h"
#include "transforms/partial_eval.h"
#include "transforms/transpose.h"

namespace tessel::detail {
namespace {

using ir::Params;
using ir::ProgramRef;

// ---- parameters ----

const Mesh& mesh_of(const Params& p) {
  return p.get_object<ir::MeshParam>("mesh").value;
}
const std::vector<PartitionSpec>& specs_of(const Params& p, const char* key) {
  return p.get_object<ir::SpecsParam>(key).value;
}
std::shared_ptr<const ir::ParamObject> specs_param(std::vector<PartitionSpec> s) {
  return std::make_shared<const ir::SpecsParam>(std::move(s));
}
Params make_params(ProgramRef body, const Mesh& mesh, std::vector<PartitionSpec> in_specs,
                   std::vector<PartitionSpec> out_specs) {
  return Params{{"program", std::move(body)},
                {"mesh", std::shared_ptr<const ir::ParamObject>(std::make_shared<const ir::MeshParam>(mesh))},
                {"in_specs", specs_param(std::move(in_specs))},
                {"out_specs", specs_param(std::move(out_specs))}};
}
/// `p` with a new body and specs (same mesh).
Params respecified(const Params& p, ProgramRef body, std::vector<PartitionSpec> in_specs,
                   std::vector<PartitionSpec> out_specs) {
  return make_params(std::move(body), mesh_of(p), std::move(in_specs), std::move(out_specs));
}

// ---- layout arithmetic ----

/// Checks `spec` against `mesh` and an array of type `global` (named `what`), and returns
/// each device's piece type.
Aval local_aval(const std::string& what, const Mesh& mesh, const PartitionSpec& spec, const Aval& global) {
  try {
    NamedSharding(mesh, spec);  // unknown axes, axes used twice
  } catch (const ValueError& e) {
    throw ValueError("shard_map: " + what + ": " + e.what());
  }
  if (spec.size() > global.shape.size())
    throw ValueError("shard_map: " + what + " " + global.to_string() + " has rank " +
                     std::to_string(global.shape.size()) + " but its spec " + spec.to_string() + " has " +
                     std::to_string(spec.size()) + " entries; give at most one entry per dimension");
  Shape s = global.shape;
  for (size_t d = 0; d < s.size(); ++d) {
    const int64_t k = axes_size(mesh, spec[d].axes());
    if (s[d] % k != 0)
      throw ShapeError("shard_map: dimension " + std::to_string(d) + " of " + what + " " + global.to_string() +
                       " has size " + std::to_string(s[d]) + ", which the " + std::to_string(k) +
                       " devices of its spec " + spec.to_string() + " cannot split evenly; pad it to a multiple of " +
                       std::to_string(k) + " or split it over other axes");
    s[d] /= k;
  }
  return Aval(s, global.dtype, global.weak_type);
}

/// The global type of per-device pieces `local` laid out by `spec`.
Aval global_aval(const std::string& what, const Mesh& mesh, const PartitionSpec& spec, const Aval& local) {
  try {
    NamedSharding(mesh, spec);
  } catch (const ValueError& e) {
    throw ValueError("shard_map: " + what + ": " + e.what());
  }
  if (spec.size() > local.shape.size())
    throw ValueError("shard_map: " + what + " " + local.to_string() + " (per device) has rank " +
                     std::to_string(local.shape.size()) + " but its spec " + spec.to_string() + " has " +
                     std::to_string(spec.size()) + " entries; give at most one entry per dimension");
  Shape s = local.shape;
  for (size_t d = 0; d < s.size(); ++d) s[d] *= axes_size(mesh, spec[d].axes());
  return Aval(s, local.dtype, local.weak_type);
}

/// The mesh axes `spec` does not name: along them the pieces are replicated.
std::vector<std::string> unmentioned_axes(const Mesh& mesh, const PartitionSpec& spec) {
  std::vector<std::string> r;
  for (const auto& a : mesh.axis_names()) {
    bool named = false;
    for (const auto& e : spec.entries())
      for (const auto& b : e.axes()) named |= a == b;
    if (!named) r.push_back(a);
  }
  return r;
}

/// `spec` with a whole (unsplit) dimension inserted at `dim` (a batch dimension).
PartitionSpec insert_whole(const PartitionSpec& spec, int64_t dim) {
  if (size_t(dim) >= spec.size()) return spec;
  std::vector<SpecEntry> e = spec.entries();
  e.insert(e.begin() + dim, SpecEntry());
  return PartitionSpec(std::move(e));
}

/// Traces `fn` into a body on `avals` with `mesh` set for the collectives in it.
ProgramRef trace_body(const FlatFn& fn, const Mesh& mesh, std::span<const Aval> avals, const std::string& name) {
  ScopedTraceMesh scope(&mesh);
  return std::make_shared<const ir::Program>(trace_to_program(fn, avals, name));
}

// ---- abstract evaluation ----

std::vector<Aval> shard_map_aval(std::span<const Aval> ins, const Params& p) {
  const ir::Program& body = *p.get<ProgramRef>("program");
  const Mesh& mesh = mesh_of(p);
  const auto& in_specs = specs_of(p, "in_specs");
  const auto& out_specs = specs_of(p, "out_specs");
  if (ins.size() != body.invars.size() || in_specs.size() != ins.size() || out_specs.size() != body.outvars.size())
    throw ValueError("shard_map: the body takes " + std::to_string(body.invars.size()) + " arguments and returns " +
                     std::to_string(body.outvars.size()) + " results, but it is called with " +
                     std::to_string(ins.size()) + " arguments, " + std::to_string(in_specs.size()) + " in_specs and " +
                     std::to_string(out_specs.size()) + " out_specs");
  std::vector<Aval> local;
  for (size_t i = 0; i < ins.size(); ++i)
    local.push_back(local_aval("argument " + std::to_string(i), mesh, in_specs[i], ins[i]));
  ops::check_same_types("shard_map", "per-device argument", local, body.in_avals(),
                        "call the function with the types it was traced for");
  std::vector<Aval> out;
  const auto locals_out = body.out_avals();
  for (size_t j = 0; j < locals_out.size(); ++j)
    out.push_back(global_aval("result " + std::to_string(j), mesh, out_specs[j], locals_out[j]));
  return out;
}

// ---- partitioning ----

std::vector<std::optional<Sharding>> shard_map_infer(const Mesh&, std::span<const std::optional<Sharding>>,
                                                     std::span<const Aval>, std::span<const Aval>, const Params& p) {
  std::vector<std::optional<Sharding>> r;
  for (const auto& s : specs_of(p, "out_specs")) r.push_back(NamedSharding(mesh_of(p), s));
  return r;
}

std::vector<std::optional<Sharding>> shard_map_propagate_user(const Mesh&, std::span<const std::optional<Sharding>>,
                                                              std::span<const Aval>, std::span<const Aval>,
                                                              const Params& p) {
  std::vector<std::optional<Sharding>> r;
  for (const auto& s : specs_of(p, "in_specs")) r.push_back(NamedSharding(mesh_of(p), s));
  return r;
}

void shard_map_partition(ir::SpmdBuilder& b, std::span<const Aval>, std::span<const Aval>, const Params& p) {
  const Mesh& mesh = mesh_of(p);
  const auto& in_specs = specs_of(p, "in_specs");
  const auto& out_specs = specs_of(p, "out_specs");
  ScopedTraceMesh scope(&mesh);
  std::vector<Array> locals;
  for (size_t i = 0; i < in_specs.size(); ++i) locals.push_back(b.operand(i, NamedSharding(mesh, in_specs[i])));
  std::vector<Array> outs = ir::eval_program(*p.get<ProgramRef>("program"), locals);
  for (size_t j = 0; j < outs.size(); ++j) b.set_result(j, outs[j], NamedSharding(mesh, out_specs[j]));
}

std::optional<Mesh> shard_map_mesh(const Params& p) { return mesh_of(p); }

const ir::SpmdRules shard_map_rules{
    .infer = &shard_map_infer,
    .propagate_user = &shard_map_propagate_user,
    .partition = &shard_map_partition,
    .mesh = &shard_map_mesh,
};

// ---- transformation rules ----

template <class T> std::vector<T> pick(const std::vector<T>& xs, const std::vector<bool>& mask, bool want = true) {
  std::vector<T> r;
  for (size_t i = 0; i < xs.size(); ++i)
    if (mask[i] == want) r.push_back(xs[i]);
  return r;
}
template <class T> std::vector<T> cat(std::vector<T> a, const std::vector<T>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// jvp: shard_map of the body's jvp; a tangent is laid out like its primal.
std::vector<Array> shard_map_jvp(const ir::Primitive& self, std::span<const Array> primals,
                                 std::span<const Array> tangents, const Params& p) {
  const auto& in_specs = specs_of(p, "in_specs");
  const auto& out_specs = specs_of(p, "out_specs");
  std::vector<bool> nonzero;
  std::vector<Array> args(primals.begin(), primals.end());
  for (const Array& t : tangents) {
    nonzero.push_back(t.valid());
    if (t.valid()) args.push_back(t);
  }
  JvpProgram jp = jvp_program(*p.get<ProgramRef>("program"), nonzero);
  std::vector<Array> outs = bind(self, args,
                                 respecified(p, jp.program, cat(in_specs, pick(in_specs, nonzero)),
                                             cat(out_specs, pick(out_specs, jp.out_nonzero))));
  const size_t n = out_specs.size();
  std::vector<Array> r(outs.begin(), outs.begin() + long(n));
  for (size_t j = 0, k = n; j < n; ++j) r.push_back(jp.out_nonzero[j] ? outs[k++] : Array());
  return r;
}

// transpose: shard_map of the body's transpose. The body is a function of all devices'
// pieces; a result replicated over some mesh axes is one value that every device along them
// holds, so its cotangent is shared among them (divided by their number), and an argument
// replicated over some axes gets the sum of its devices' cotangents.
std::vector<Array> shard_map_transpose(const ir::Primitive& self, std::span<const Array> cts,
                                       std::span<const Array> args, std::span<const Aval>, const Params& p) {
  const ir::Program& body = *p.get<ProgramRef>("program");
  const Mesh& mesh = mesh_of(p);
  const auto& in_specs = specs_of(p, "in_specs");
  const auto& out_specs = specs_of(p, "out_specs");
  std::vector<bool> linear;
  std::vector<Array> targs;
  for (const Array& a : args) {
    linear.push_back(!a.valid());
    if (a.valid()) targs.push_back(a);
  }
  const size_t n_res = targs.size();
  const auto local_out = body.out_avals();
  for (size_t j = 0; j < cts.size(); ++j) {
    Aval g = global_aval("result " + std::to_string(j), mesh, out_specs[j], local_out[j]);
    targs.push_back(ops::instantiate_zeros(cts[j], g));
  }
  ProgramRef tp = transpose_program(body, linear);
  std::vector<PartitionSpec> lin_specs = pick(in_specs, linear);
  auto wrapped = [&](std::span<const Array> xs) {
    std::vector<Array> ins(xs.begin(), xs.end());
    for (size_t j = 0; j < out_specs.size(); ++j) {
      Array& ct = ins[n_res + j];
      const int64_t k = axes_size(mesh, unmentioned_axes(mesh, out_specs[j]));
      if (k > 1 && is_inexact(ct.dtype())) ct = ct / Array(k);
    }
    std::vector<Array> outs = ir::eval_program(*tp, ins);
    for (size_t i = 0; i < outs.size(); ++i) {
      auto axes = unmentioned_axes(mesh, lin_specs[i]);
      if (!axes.empty()) outs[i] = all_reduce_named("shard_map", outs[i], axes, ir::Combine::kSum);
    }
    return outs;
  };
  ProgramRef body_t = trace_body(wrapped, mesh, tp->in_avals(), body.name + "_transpose");
  std::vector<Array> outs = bind(self, targs, respecified(p, body_t, cat(pick(in_specs, linear, false), out_specs), lin_specs));
  std::vector<Array> r;
  for (size_t i = 0, k = 0; i < args.size(); ++i) r.push_back(linear[i] ? outs[k++] : Array());
  return r;
}

// vmap: shard_map of the batched body; the batch dimension is whole on every device.
ir::Batched shard_map_batch(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                            const ir::BatchAxis& axis, const Params& p) {
  BatchedProgram bp = batch_program(*p.get<ProgramRef>("program"), {dims.begin(), dims.end()}, axis);
  std::vector<PartitionSpec> in_specs = specs_of(p, "in_specs"), out_specs = specs_of(p, "out_specs");
  for (size_t i = 0; i < in_specs.size(); ++i)
    if (dims[i] != ir::kNotBatched) in_specs[i] = insert_whole(in_specs[i], dims[i]);
  for (size_t j = 0; j < out_specs.size(); ++j)
    if (bp.out_dims[j] != ir::kNotBatched) out_specs[j] = insert_whole(out_specs[j], bp.out_dims[j]);
  return {bind(self, ins, respecified(p, bp.program, in_specs, out_specs)), bp.out_dims};
}

// Partial evaluation (reverse mode): the body splits into a known shard_map, run now, and
// an unknown one, recorded. Residuals are per-device values of any shape; each travels
// between the two as a global array with a new leading dimension split over all mesh axes.
std::vector<Array> shard_map_partial_eval(const ir::Primitive& self, Trace& trace, std::span<const Array> ins,
                                          const Params& p) {
  auto& pe = static_cast<PartialEvalTrace&>(trace);
  const Mesh& mesh = mesh_of(p);
  const auto& in_specs = specs_of(p, "in_specs");
  const auto& out_specs = specs_of(p, "out_specs");
  std::vector<bool> unknown;
  std::vector<Array> known_ins, unknown_ins;
  for (const Array& x : ins) {
    unknown.push_back(pe.owns(x));
    (unknown.back() ? unknown_ins : known_ins).push_back(x);
  }
  SplitProgram sp = partial_eval_program(*p.get<ProgramRef>("program"), unknown);
  const size_t n_res = sp.num_residuals, n_known = sp.known->outvars.size() - n_res;
  const PartitionSpec res_spec(std::vector<SpecEntry>{SpecEntry(mesh.axis_names())});
  std::vector<Aval> res_avals;  // per device, without the leading dimension
  for (size_t r = 0; r < n_res; ++r) res_avals.push_back(sp.known->outvars[n_known + r].aval());

  auto known_body = [&](std::span<const Array> xs) {
    std::vector<Array> outs = ir::eval_program(*sp.known, xs);
    for (size_t r = 0; r < n_res; ++r) {
      Shape s = res_avals[r].shape;
      s.insert(s.begin(), 1);
      outs[n_known + r] = reshape(outs[n_known + r], s);
    }
    return outs;
  };
  std::vector<PartitionSpec> known_out_specs = pick(out_specs, sp.out_unknown, false);
  known_out_specs.insert(known_out_specs.end(), n_res, res_spec);
  std::vector<Array> kouts =
      bind(self, known_ins,
           respecified(p, trace_body(known_body, mesh, sp.known->in_avals(), sp.known->name), pick(in_specs, unknown, false),
                       known_out_specs));

  auto unknown_body = [&](std::span<const Array> xs) {
    std::vector<Array> args(xs.begin(), xs.end());
    for (size_t r = 0; r < n_res; ++r) args[r] = reshape(args[r], res_avals[r].shape);
    return ir::eval_program(*sp.unknown, args);
  };
  std::vector<Aval> unknown_avals = sp.unknown->in_avals();
  for (size_t r = 0; r < n_res; ++r) unknown_avals[r].shape.insert(unknown_avals[r].shape.begin(), 1);
  std::vector<PartitionSpec> unknown_in_specs(n_res, res_spec);
  for (size_t i = 0; i < ins.size(); ++i)
    if (unknown[i]) unknown_in_specs.push_back(in_specs[i]);
  std::vector<Array> uargs(kouts.begin() + long(n_known), kouts.end());
  uargs.insert(uargs.end(), unknown_ins.begin(), unknown_ins.end());
  std::vector<Array> uouts =
      pe.record(self, uargs,
                respecified(p, trace_body(unknown_body, mesh, unknown_avals, sp.unknown->name), unknown_in_specs,
                            pick(out_specs, sp.out_unknown)));

  std::vector<Array> r;
  for (size_t j = 0, k = 0, u = 0; j < sp.out_unknown.size(); ++j) r.push_back(sp.out_unknown[j] ? uouts[u++] : kouts[k++]);
  return r;
}

const ir::Primitive& shard_map_p = ir::register_primitive({
    .name = "shard_map",
    .abstract_eval = shard_map_aval,
    .jvp_with_primals = shard_map_jvp,
    .transpose = shard_map_transpose,
    .batch = shard_map_batch,
    .partial_eval = shard_map_partial_eval,
    .spmd = &shard_map_rules,
});

}  // namespace

std::vector<Array> shard_map_flat(const FlatFn& fn, const Mesh& mesh, std::span<const Array> args,
                                  const std::vector<PartitionSpec>& in_specs,
                                  const std::vector<PartitionSpec>& out_specs) {
  if (!mesh.valid()) throw ValueError("shard_map: the mesh is empty (default-constructed); make one with make_mesh");
  if (in_specs.size() != args.size())
    throw Error("internal: shard_map got " + std::to_string(in_specs.size()) + " specs for " +
                std::to_string(args.size()) + " argument leaves");
  std::vector<Aval> local;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].valid()) throw ValueError("shard_map: argument leaf " + std::to_string(i) + " is an empty Array");
    local.push_back(local_aval("argument leaf " + std::to_string(i), mesh, in_specs[i], args[i].aval()));
  }
  ProgramRef traced = trace_body(fn, mesh, local, "shard_map_body");
  // Arrays of enclosing transformations the function closed over become leading arguments,
  // replicated: every device sees them whole.
  std::vector<Array> ins;
  auto body = std::make_shared<const ir::Program>(ir::hoist_tracer_consts(*traced, ins));
  std::vector<PartitionSpec> all_in(ins.size(), PartitionSpec());
  all_in.insert(all_in.end(), in_specs.begin(), in_specs.end());
  ins.insert(ins.end(), args.begin(), args.end());
  const size_t n_out = body->outvars.size();
  std::vector<PartitionSpec> outs = out_specs;
  if (outs.size() == 1 && n_out != 1) outs.assign(n_out, out_specs[0]);
  if (outs.size() != n_out)
    throw ValueError("shard_map: the function returns " + std::to_string(n_out) + " arrays but " +
                     std::to_string(out_specs.size()) + " out_specs were given; give one per result leaf (or one for all)");
  return bind(shard_map_p, ins, make_params(body, mesh, std::move(all_in), std::move(outs)));
}

void shard_map_bad_in_specs(size_t specs, size_t args) {
  throw ValueError("shard_map: " + std::to_string(specs) + " in_specs were given for a call with " +
                   std::to_string(args) + " arguments; give one partition spec per argument (or one for all)");
}

}  // namespace tessel::detail
