// Collective primitives (see collectives.h): abstract evaluation, kernels over the launch's
// CollectiveHub, and transformation rules.
//
// Differentiation follows the per-device view: a shard_map body is a function of every
// device's local values, and each collective's transpose is its exact linear transpose over
// all devices (psum -> psum, all_gather -> psum_scatter, all_to_all -> the inverse
// all_to_all, ppermute -> the inverse permutation). shard_map's own transpose rule then
// divides the cotangent of a result replicated over some mesh axes by their size and sums
// the cotangent of an argument replicated over some axes over them (src/sharding/
// shard_map.cpp), which makes gradients exact whatever the replication of values is,
// without tracking it (JAX's check_rep=False convention).
#include "ops/collectives.h"

#include <cstring>
#include <functional>
#include <memory>
#include <set>

#include "core/shape_check.h"
#include "ir/serialize.h"
#include "ops/rule_util.h"
#include "runtime/spmd_context.h"
#include "tessel/error.h"

namespace tessel::ops {
namespace {

using distributed::CollectiveGroup;

// ---- parameters ----

class AxesParam final : public ir::ParamObject {
 public:
  explicit AxesParam(std::vector<std::string> a) : axes(std::move(a)) {}
  size_t hash() const override {
    size_t h = 0x5eed;
    for (auto& a : axes) h = h * 1000003 ^ std::hash<std::string>()(a);
    return h;
  }
  bool equals(const ParamObject& o) const override {
    auto* p = dynamic_cast<const AxesParam*>(&o);
    return p && p->axes == axes;
  }
  std::string to_string() const override {
    std::string s = "(";
    for (size_t i = 0; i < axes.size(); ++i) s += (i ? ", " : "") + axes[i];
    return s + ")";
  }
  std::string_view serial_kind() const override { return "collective_axes"; }
  void write(ir::Writer& w) const override { w.strs(axes); }
  std::vector<std::string> axes;
};
[[maybe_unused]] const bool axes_registered =
    ir::register_param_reader("collective_axes", [](ir::Reader& r) -> std::shared_ptr<const ir::ParamObject> {
      return std::make_shared<AxesParam>(r.strs());
    });

using Pairs = std::vector<std::pair<int64_t, int64_t>>;
class PairsParam final : public ir::ParamObject {
 public:
  explicit PairsParam(Pairs p) : pairs(std::move(p)) {}
  size_t hash() const override {
    size_t h = 0x9a1f;
    for (auto& [s, d] : pairs) h = (h * 31 + size_t(s)) * 31 + size_t(d);
    return h;
  }
  bool equals(const ParamObject& o) const override {
    auto* p = dynamic_cast<const PairsParam*>(&o);
    return p && p->pairs == pairs;
  }
  std::string to_string() const override {
    std::string s = "(";
    for (size_t i = 0; i < pairs.size(); ++i)
      s += (i ? ", " : "") + std::to_string(pairs[i].first) + "->" + std::to_string(pairs[i].second);
    return s + ")";
  }
  std::string_view serial_kind() const override { return "collective_pairs"; }
  void write(ir::Writer& w) const override {
    w.count(pairs.size());
    for (auto& [s, d] : pairs) {
      w.i64(s);
      w.i64(d);
    }
  }
  Pairs pairs;
};
[[maybe_unused]] const bool pairs_registered =
    ir::register_param_reader("collective_pairs", [](ir::Reader& r) -> std::shared_ptr<const ir::ParamObject> {
      Pairs pairs(r.count(16));
      for (auto& [s, d] : pairs) {
        s = r.i64();
        d = r.i64();
      }
      return std::make_shared<PairsParam>(std::move(pairs));
    });

const Pairs& get_pairs(const Params& p) {
  return p.get_object<PairsParam>("pairs").pairs;
}

std::string axes_text(const Params& p) { return p.get_object<AxesParam>("axes").to_string(); }

ir::Combine parse_combine(const std::string& op, const std::string& s) {
  for (auto c : {ir::Combine::kSum, ir::Combine::kProd, ir::Combine::kMax, ir::Combine::kMin})
    if (s == ir::combine_name(c)) return c;
  throw ValueError(op + ": op must be sum, prod, max or min, got '" + s + "'");
}

/// Params shared by every collective: the axes and the size of their group.
Params base_params(const std::string& api, const std::vector<std::string>& axes) {
  return Params{{"axes", std::shared_ptr<const ir::ParamObject>(std::make_shared<AxesParam>(axes))},
                {"group_size", detail::collective_group_size(api, axes)}};
}

/// The size of the group a collective runs over (a program read from bytes may say anything).
int64_t group_size(const std::string& op, const Params& p) {
  const int64_t n = p.get_int("group_size");
  if (n < 1) throw ValueError(op + ": group_size " + std::to_string(n) + " must be at least 1");
  return n;
}

std::string group_text(const Params& p) {
  return "the group size " + std::to_string(p.get_int("group_size")) + " of axes " + axes_text(p);
}

// ---- abstract evaluation ----

int64_t check_dim(const std::string& op, const char* what, int64_t dim, int64_t bound, const Aval& x) {
  if (dim < 0 || dim >= bound)
    throw IndexError(op + ": " + what + " " + std::to_string(dim) + " is out of range for an operand " + x.to_string() +
                     " (expected 0 <= " + what + " < " + std::to_string(bound) + ")");
  return dim;
}

void check_divisible(const std::string& op, const Aval& x, int64_t dim, const Params& p) {
  const int64_t n = group_size(op, p);
  if (x.shape[size_t(dim)] % n != 0)
    throw ShapeError(op + ": dimension " + std::to_string(dim) + " of " + x.to_string() + " (size " +
                     std::to_string(x.shape[size_t(dim)]) + ") must be divisible by " + group_text(p));
}

std::vector<Aval> all_reduce_aval(std::span<const Aval> ins, const Params& p) {
  parse_combine("all_reduce", p.get<std::string>("op"));
  return {ins[0]};
}

std::vector<Aval> all_gather_aval(std::span<const Aval> ins, const Params& p) {
  const Aval& x = ins[0];
  const bool tiled = p.get<bool>("tiled");
  const int64_t dim = check_dim("all_gather", "dim", p.get_int("dim"), x.ndim() + (tiled ? 0 : 1), x);
  Shape s = x.shape;
  if (tiled) s[size_t(dim)] = detail::checked_dim_mul("all_gather", s[size_t(dim)], group_size("all_gather", p));
  else s.insert(s.begin() + dim, group_size("all_gather", p));
  return {Aval(s, x.dtype, x.weak_type)};
}

std::vector<Aval> all_to_all_aval(std::span<const Aval> ins, const Params& p) {
  const Aval& x = ins[0];
  const int64_t split = check_dim("all_to_all", "split_dim", p.get_int("split_dim"), x.ndim(), x);
  const int64_t concat = check_dim("all_to_all", "concat_dim", p.get_int("concat_dim"), x.ndim(), x);
  check_divisible("all_to_all", x, split, p);
  Shape s = x.shape;
  s[size_t(split)] /= group_size("all_to_all", p);
  s[size_t(concat)] = detail::checked_dim_mul("all_to_all", s[size_t(concat)], group_size("all_to_all", p));
  return {Aval(s, x.dtype, x.weak_type)};
}

std::vector<Aval> reduce_scatter_aval(std::span<const Aval> ins, const Params& p) {
  const Aval& x = ins[0];
  parse_combine("reduce_scatter", p.get<std::string>("op"));
  const int64_t dim = check_dim("reduce_scatter", "dim", p.get_int("dim"), x.ndim(), x);
  check_divisible("reduce_scatter", x, dim, p);
  Shape s = x.shape;
  s[size_t(dim)] /= group_size("reduce_scatter", p);
  return {Aval(s, x.dtype, x.weak_type)};
}

void check_pairs(const std::string& op, const Pairs& pairs, int64_t n) {
  std::set<int64_t> src, dst;  // (not vectors of size n: n may come from bytes)
  for (auto [s, d] : pairs) {
    if (s < 0 || s >= n || d < 0 || d >= n)
      throw ValueError(op + ": the pair (" + std::to_string(s) + ", " + std::to_string(d) +
                       ") names a device outside the group of " + std::to_string(n) + " (indices 0.." +
                       std::to_string(n - 1) + ")");
    const bool twice_src = !src.insert(s).second;
    if (twice_src || !dst.insert(d).second)
      throw ValueError(op + ": device " + std::to_string(twice_src ? s : d) + " is " +
                       (twice_src ? "a source" : "a destination") +
                       " twice; a permutation sends from and to each device at most once");
  }
}

std::vector<Aval> collective_permute_aval(std::span<const Aval> ins, const Params& p) {
  check_pairs("collective_permute", get_pairs(p), p.get_int("group_size"));
  return {ins[0]};
}

std::vector<Aval> axis_index_aval(std::span<const Aval>, const Params&) { return {Aval({}, DType::int32)}; }

// ---- kernels ----

struct Member {
  CollectiveGroup* group;
  int rank;
};

/// This device's group for the equation's axes, in the running launch.
Member member_of(const KernelCall& c, const std::string& op) {
  const detail::SpmdContext& ctx = detail::require_spmd_context(op);
  detail::AxisGroup g = detail::axis_group(ctx, detail::collective_axes(c.params), op);
  if (int64_t(g.members.size()) != c.params.get_int("group_size"))
    throw ValueError(op + ": the program was traced for " + group_text(c.params) + " but runs on the mesh " +
                     ctx.mesh.to_string() + ", where the group has " + std::to_string(g.members.size()) +
                     " devices; trace it again for this mesh");
  if (!ctx.hub) throw Error("internal: " + op + " runs in a partitioned program without collective groups");
  return {&ctx.hub->group(g.members), g.rank};
}

int64_t prod(const Shape& s, size_t from, size_t to) {
  int64_t r = 1;
  for (size_t i = from; i < to; ++i) r *= s[i];
  return r;
}

void all_reduce_kernel(const KernelCall& c) {
  Member m = member_of(c, "all_reduce");
  const Aval& x = c.in_avals[0];
  m.group->all_reduce(m.rank, c.ins[0], c.outs[0], size_t(x.size()), x.dtype,
                      parse_combine("all_reduce", c.params.get<std::string>("op")));
}

// Along a dimension other than the leading one, a buffer is [rows, n, piece] with `rows` the
// product of the dimensions before it; the group's strided calls handle that layout (the
// in-process backend reads peers' operands in place, without packing).
void all_gather_kernel(const KernelCall& c) {
  Member m = member_of(c, "all_gather");
  const Aval& x = c.in_avals[0];
  const int64_t rows = prod(x.shape, 0, size_t(c.params.get_int("dim")));
  m.group->all_gather_rows(m.rank, c.ins[0], c.outs[0], x.nbytes(), size_t(rows));
}

// The block for member j is piece j of split_dim (rows: the dimensions before it); the
// block from member j is piece j of concat_dim of the result.
void all_to_all_kernel(const KernelCall& c) {
  Member m = member_of(c, "all_to_all");
  const Aval& x = c.in_avals[0];
  const size_t split = size_t(c.params.get_int("split_dim")), concat = size_t(c.params.get_int("concat_dim"));
  const int64_t n = m.group->size();
  Shape block = x.shape;
  block[split] /= n;
  m.group->all_to_all_rows(m.rank, c.ins[0], c.outs[0], x.nbytes() / size_t(n), size_t(prod(x.shape, 0, split)),
                           size_t(prod(block, 0, concat)));
}

void reduce_scatter_kernel(const KernelCall& c) {
  Member m = member_of(c, "reduce_scatter");
  const Aval& x = c.in_avals[0];
  const int64_t n = m.group->size(), rows = prod(x.shape, 0, size_t(c.params.get_int("dim")));
  m.group->reduce_scatter_rows(m.rank, c.ins[0], c.outs[0], size_t(x.size() / n), x.dtype,
                               parse_combine("reduce_scatter", c.params.get<std::string>("op")), size_t(rows));
}

// Both halves at once: every permute of a group goes through permute_start/done, so a
// program that overlaps some (compiler/executable.cpp) meets one that does not.
void collective_permute_kernel(const KernelCall& c) { detail::collective_permute_done(detail::collective_permute_start(c)); }
std::function<void()> collective_permute_post(const KernelCall& c) {
  return [started = detail::collective_permute_start(c)] { detail::collective_permute_done(started); };
}

void axis_index_kernel(const KernelCall& c) {
  const std::string op = "axis_index";
  const detail::SpmdContext& ctx = detail::require_spmd_context(op);
  *c.out<int32_t>(0) = int32_t(detail::axis_group(ctx, detail::collective_axes(c.params), op).rank);
}

// ---- transformation rules ----

// Defined after the registrations below.
const ir::Primitive& all_gather_prim();
const ir::Primitive& reduce_scatter_prim();

Params with(Params p, const char* key, ir::ParamValue v) {
  p.set(key, std::move(v));
  return p;
}

// Sums are linear. max/min: the tangent of a maximum is the mean of the tangents of the
// members that attain it (like reduce_max's rule for ties).
std::vector<Array> all_reduce_jvp(const ir::Primitive& self, std::span<const Array> primals,
                                  std::span<const Array> tangents, std::span<const Array> outs, const Params& p) {
  const ir::Combine op = parse_combine("all_reduce", p.get<std::string>("op"));
  if (op == ir::Combine::kSum) return jvp_linear(self, primals, tangents, outs, p);
  if (op == ir::Combine::kProd)
    throw NotImplementedError("all_reduce: differentiation of op=prod over mesh axes is not implemented; write the "
                              "product as exp(psum(log(x))) or all_gather and prod");
  const Array& t = tangents[0];
  Array mask = astype(equal(primals[0], outs[0]), t.dtype());
  const Params sum = with(p, "op", std::string("sum"));
  return {bind1(self, {mask * t}, sum) / bind1(self, {mask}, sum)};
}

std::vector<Array> all_reduce_transpose(const ir::Primitive& self, std::span<const Array> cts, std::span<const Array>,
                                        std::span<const Aval>, const Params& p) {
  if (p.get<std::string>("op") != "sum")
    throw Error("internal: all_reduce with op=" + p.get<std::string>("op") + " is not linear and has no transpose");
  if (is_zero(cts[0])) return {Array()};
  return {bind1(self, {cts[0]}, p)};
}

// all_gather and reduce_scatter(sum) are each other's transposes; a stacked (untiled)
// gather is a tiled one along a new dimension of size 1.
std::vector<Array> all_gather_transpose(const ir::Primitive&, std::span<const Array> cts, std::span<const Array>,
                                        std::span<const Aval> avals, const Params& p) {
  if (is_zero(cts[0])) return {Array()};
  const int64_t dim = p.get_int("dim");
  Params q{{"axes", p.get<std::shared_ptr<const ir::ParamObject>>("axes")},
           {"group_size", p.get_int("group_size")},
           {"dim", dim},
           {"op", std::string("sum")}};
  Array r = bind1(reduce_scatter_prim(), {cts[0]}, q);
  return {p.get<bool>("tiled") ? r : reshape(r, avals[0].shape)};
}

std::vector<Array> reduce_scatter_jvp(const ir::Primitive& self, std::span<const Array> primals,
                                      std::span<const Array> tangents, std::span<const Array> outs, const Params& p) {
  if (p.get<std::string>("op") != "sum")
    throw NotImplementedError("reduce_scatter: differentiation of op=" + p.get<std::string>("op") +
                              " is not implemented; only sums (psum_scatter) are differentiable");
  return jvp_linear(self, primals, tangents, outs, p);
}

std::vector<Array> reduce_scatter_transpose(const ir::Primitive&, std::span<const Array> cts, std::span<const Array>,
                                            std::span<const Aval>, const Params& p) {
  if (is_zero(cts[0])) return {Array()};
  Params q{{"axes", p.get<std::shared_ptr<const ir::ParamObject>>("axes")},
           {"group_size", p.get_int("group_size")},
           {"dim", p.get_int("dim")},
           {"tiled", true}};
  return {bind1(all_gather_prim(), {cts[0]}, q)};
}

// all_to_all permutes blocks; its inverse swaps the split and concatenated dimensions.
std::vector<Array> all_to_all_transpose(const ir::Primitive& self, std::span<const Array> cts, std::span<const Array>,
                                        std::span<const Aval>, const Params& p) {
  if (is_zero(cts[0])) return {Array()};
  Params q = with(p, "split_dim", p.get_int("concat_dim"));
  q.set("concat_dim", p.get_int("split_dim"));
  return {bind1(self, {cts[0]}, q)};
}

std::vector<Array> collective_permute_transpose(const ir::Primitive& self, std::span<const Array> cts,
                                                std::span<const Array>, std::span<const Aval>, const Params& p) {
  if (is_zero(cts[0])) return {Array()};
  Pairs inv;
  for (auto [s, d] : get_pairs(p)) inv.emplace_back(d, s);
  return {bind1(self, {cts[0]}, with(p, "pairs", std::shared_ptr<const ir::ParamObject>(std::make_shared<const PairsParam>(std::move(inv)))))};
}

// Batching: the batch dimension moves to the front; dimension parameters shift by one.
Batched batch_shifting(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                       const BatchAxis& axis, const Params& p, std::initializer_list<const char*> keys) {
  Array x = move_batch_dim(ins[0], dims[0], 0, axis.size);
  Params q = p;
  for (const char* k : keys) q.set(k, p.get_int(k) + 1);
  return {{bind1(self, {x}, q)}, {0}};
}
Batched all_gather_batch(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                         const BatchAxis& axis, const Params& p) {
  return batch_shifting(self, ins, dims, axis, p, {"dim"});
}
Batched all_to_all_batch(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                         const BatchAxis& axis, const Params& p) {
  return batch_shifting(self, ins, dims, axis, p, {"split_dim", "concat_dim"});
}

// ---- communication per device ----
// What one device receives from the others, as the runtime's direct algorithms move it
// (each device reads its peers' pieces): k is the group size.

int64_t all_reduce_bytes(std::span<const Aval> ins, std::span<const Aval>, const Params& p) {
  return (group_size("all_reduce", p) - 1) * int64_t(ins[0].nbytes());  // every peer's partial result
}
int64_t all_gather_bytes(std::span<const Aval> ins, std::span<const Aval>, const Params& p) {
  return (group_size("all_gather", p) - 1) * int64_t(ins[0].nbytes());  // every peer's piece
}
int64_t all_to_all_bytes(std::span<const Aval> ins, std::span<const Aval>, const Params& p) {
  const int64_t k = group_size("all_to_all", p);
  return (k - 1) * (int64_t(ins[0].nbytes()) / k);  // one block from every peer
}
int64_t reduce_scatter_bytes(std::span<const Aval> ins, std::span<const Aval>, const Params& p) {
  const int64_t k = group_size("reduce_scatter", p);
  return (k - 1) * (int64_t(ins[0].nbytes()) / k);  // its block of every peer's partial result
}
int64_t collective_permute_bytes(std::span<const Aval> ins, std::span<const Aval>, const Params& p) {
  for (auto [s, d] : get_pairs(p))
    if (s != d) return int64_t(ins[0].nbytes());  // a device that receives gets one whole piece
  return 0;
}

// ---- registration ----

constexpr uint32_t kCollectiveEffects = ir::kSideEffect;

const ir::Primitive& all_reduce_p = ir::register_primitive({
    .name = "all_reduce",
    .arity = {1, 1},
    .abstract_eval = all_reduce_aval,
    .cpu_kernel = all_reduce_kernel,
    .effects = kCollectiveEffects,
    .jvp = all_reduce_jvp,
    .transpose = all_reduce_transpose,
    .batch = batch_vectorized,
    .comm_bytes = all_reduce_bytes,
});
const ir::Primitive& all_gather_p = ir::register_primitive({
    .name = "all_gather",
    .arity = {1, 1},
    .abstract_eval = all_gather_aval,
    .cpu_kernel = all_gather_kernel,
    .effects = kCollectiveEffects,
    .jvp = jvp_linear,
    .transpose = all_gather_transpose,
    .batch = all_gather_batch,
    .comm_bytes = all_gather_bytes,
});
const ir::Primitive& all_to_all_p = ir::register_primitive({
    .name = "all_to_all",
    .arity = {1, 1},
    .abstract_eval = all_to_all_aval,
    .cpu_kernel = all_to_all_kernel,
    .effects = kCollectiveEffects,
    .jvp = jvp_linear,
    .transpose = all_to_all_transpose,
    .batch = all_to_all_batch,
    .comm_bytes = all_to_all_bytes,
});
const ir::Primitive& reduce_scatter_p = ir::register_primitive({
    .name = "reduce_scatter",
    .arity = {1, 1},
    .abstract_eval = reduce_scatter_aval,
    .cpu_kernel = reduce_scatter_kernel,
    .effects = kCollectiveEffects,
    .jvp = reduce_scatter_jvp,
    .transpose = reduce_scatter_transpose,
    .batch = all_gather_batch,
    .comm_bytes = reduce_scatter_bytes,
});
const ir::Primitive& collective_permute_p = ir::register_primitive({
    .name = "collective_permute",
    .arity = {1, 1},
    .abstract_eval = collective_permute_aval,
    .cpu_kernel = collective_permute_kernel,
    .post = collective_permute_post,
    .effects = kCollectiveEffects,
    .jvp = jvp_linear,
    .transpose = collective_permute_transpose,
    .batch = batch_vectorized,
    .comm_bytes = collective_permute_bytes,
});
// No inputs, so no jvp or batching rule is ever asked for. Effectful so that constant
// folding never evaluates it outside the launch.
const ir::Primitive& axis_index_p = ir::register_primitive({
    .name = "axis_index",
    .arity = {0, 0},
    .abstract_eval = axis_index_aval,
    .cpu_kernel = axis_index_kernel,
    .effects = kCollectiveEffects,
});

const ir::Primitive& all_gather_prim() { return all_gather_p; }
const ir::Primitive& reduce_scatter_prim() { return reduce_scatter_p; }

}  // namespace
}  // namespace tessel::ops

namespace tessel::detail {

using ops::base_params;

int64_t collective_group_size(const std::string& api, const std::vector<std::string>& axes) {
  const Mesh* mesh = current_trace_mesh();
  if (!mesh)
    if (const SpmdContext* ctx = current_spmd_context()) mesh = &ctx->mesh;
  if (!mesh)
    throw ValueError(api + ": collectives over mesh axes run only inside shard_map or a jit with shardings, where "
                           "every device runs its part of the program; call it inside ts::shard_map");
  int64_t n = 1;
  for (size_t i = 0; i < axes.size(); ++i) {
    for (size_t j = 0; j < i; ++j)
      if (axes[j] == axes[i])
        throw ValueError(api + ": the mesh axis '" + axes[i] + "' is named twice; name each axis once");
    try {
      n *= mesh->axis_size(axes[i]);
    } catch (const ValueError& e) {
      throw ValueError(api + ": " + e.what());
    }
  }
  return n;
}

const std::vector<std::string>& collective_axes(const ir::Params& params) {
  return params.get_object<ops::AxesParam>("axes").axes;
}

Array all_reduce_named(const std::string& api, const Array& x, const std::vector<std::string>& axes, ir::Combine op) {
  if (op == ir::Combine::kNone) throw ValueError(api + ": a reduction needs an operation (sum, prod, max or min)");
  return ops::bind1(ops::all_reduce_p, {x}, base_params(api, axes).set("op", std::string(ir::combine_name(op))));
}

Array all_gather_named(const std::string& api, const Array& x, const std::vector<std::string>& axes, int64_t dim,
                       bool tiled) {
  return ops::bind1(ops::all_gather_p, {x}, base_params(api, axes).set("dim", dim).set("tiled", tiled));
}

Array all_to_all_named(const std::string& api, const Array& x, const std::vector<std::string>& axes,
                       int64_t split_dim, int64_t concat_dim) {
  return ops::bind1(ops::all_to_all_p, {x},
                    base_params(api, axes).set("split_dim", split_dim).set("concat_dim", concat_dim));
}

Array reduce_scatter_named(const std::string& api, const Array& x, const std::vector<std::string>& axes, int64_t dim,
                           ir::Combine op) {
  if (op == ir::Combine::kNone) throw ValueError(api + ": a reduction needs an operation (sum, prod, max or min)");
  return ops::bind1(ops::reduce_scatter_p, {x},
                    base_params(api, axes).set("dim", dim).set("op", std::string(ir::combine_name(op))));
}

StartedPermute collective_permute_start(const ir::KernelCall& c) {
  ops::Member m = ops::member_of(c, "collective_permute");
  int source = -1, dest = -1;
  for (auto [s, d] : ops::get_pairs(c.params)) {
    if (d == m.rank) source = int(s);
    if (s == m.rank) dest = int(d);
  }
  const size_t bytes = c.in_avals[0].nbytes();
  if (source < 0) std::memset(c.outs[0], 0, bytes);  // all-zero bits are zero in every dtype
  return {m.group, m.rank, m.group->permute_start(m.rank, c.ins[0], bytes, source, dest), c.outs[0]};
}

void collective_permute_done(const StartedPermute& p) { p.group->permute_done(p.rank, p.ticket, p.out); }

Array collective_permute_named(const std::string& api, const Array& x, const std::vector<std::string>& axes,
                               const std::vector<std::pair<int64_t, int64_t>>& pairs) {
  ir::Params p = base_params(api, axes);
  ops::check_pairs(api, pairs, p.get_int("group_size"));
  p.set("pairs", std::shared_ptr<const ir::ParamObject>(std::make_shared<const ops::PairsParam>(pairs)));
  return ops::bind1(ops::collective_permute_p, {x}, p);
}

Array axis_index_named(const std::string& api, const std::vector<std::string>& axes) {
  return ops::bind1(ops::axis_index_p, std::span<const Array>(), base_params(api, axes));
}

Array all_reduce(const Array& x, const std::vector<std::string>& axes, ir::Combine op) {
  return all_reduce_named("all_reduce", x, axes, op);
}
Array all_gather(const Array& x, const std::vector<std::string>& axes, int64_t dim, bool tiled) {
  return all_gather_named("all_gather", x, axes, dim, tiled);
}
Array all_to_all(const Array& x, const std::vector<std::string>& axes, int64_t split_dim, int64_t concat_dim) {
  return all_to_all_named("all_to_all", x, axes, split_dim, concat_dim);
}
Array reduce_scatter(const Array& x, const std::vector<std::string>& axes, int64_t dim, ir::Combine op) {
  return reduce_scatter_named("reduce_scatter", x, axes, dim, op);
}
Array collective_permute(const Array& x, const std::vector<std::string>& axes,
                         const std::vector<std::pair<int64_t, int64_t>>& pairs) {
  return collective_permute_named("collective_permute", x, axes, pairs);
}
Array axis_index(const std::vector<std::string>& axes) { return axis_index_named("axis_index", axes); }

}  // namespace tessel::detail
