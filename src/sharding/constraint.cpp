// The sharding_constraint primitive (with_sharding_constraint, and device_put inside a
// traced function): an identity whose partitioning rule lays its operand out as it says.
#include "ir/trace.h"
#include "core/mesh_impl.h"
#include "tessel/ops.h"

namespace tessel {
namespace detail {
namespace {

const Sharding& constraint_of(const ir::Params& p) {
  return p.get_object<ir::ShardingParam>("sharding").value;
}
ir::Params constraint_params(const Sharding& s) {
  return ir::Params{{"sharding", std::shared_ptr<const ir::ParamObject>(std::make_shared<ir::ShardingParam>(s))}};
}

std::vector<Aval> constraint_aval(std::span<const Aval> ins, const ir::Params& p) {
  constraint_of(p).check_rank(ins[0].shape.size(), "with_sharding_constraint");
  return {ins[0]};
}

std::vector<std::optional<Sharding>> constraint_infer(const Mesh&, std::span<const std::optional<Sharding>>,
                                                     std::span<const Aval>, std::span<const Aval>, const ir::Params& p) {
  return {constraint_of(p)};
}

void constraint_partition(ir::SpmdBuilder& b, std::span<const Aval>, std::span<const Aval>, const ir::Params& p) {
  const Sharding& s = constraint_of(p);
  Sharding on_mesh = s.is_single_device() ? replicated_sharding(b.mesh()) : s;
  b.set_result(0, b.operand(0, on_mesh), on_mesh);
}

// A single-device constraint names no mesh: inside a partitioned program it means whole
// (replicated) on the program's devices.
std::optional<Mesh> constraint_mesh(const ir::Params& p) {
  const Sharding& s = constraint_of(p);
  if (s.is_single_device()) return std::nullopt;
  return s.mesh();
}

const ir::SpmdRules constraint_rules{
    .infer = &constraint_infer,
    .propagate_user = [](const Mesh&, std::span<const std::optional<Sharding>>, std::span<const Aval>,
                         std::span<const Aval>, const ir::Params& p) -> std::vector<std::optional<Sharding>> {
      return {constraint_of(p)};
    },
    .partition = &constraint_partition,
    .mesh = &constraint_mesh,
};


std::vector<Array> constraint_jvp(const ir::Primitive&, std::span<const Array>, std::span<const Array> tangents,
                                  std::span<const Array>, const ir::Params& p) {
  return {tangents[0].valid() ? with_sharding_constraint(tangents[0], constraint_of(p)) : Array()};
}
std::vector<Array> constraint_transpose(const ir::Primitive&, std::span<const Array> cts, std::span<const Array>,
                                        std::span<const Aval>, const ir::Params& p) {
  return {cts[0].valid() ? with_sharding_constraint(cts[0], constraint_of(p)) : Array()};
}
ir::Batched constraint_batch(const ir::Primitive&, std::span<const Array> ins, std::span<const int64_t> dims,
                             const ir::BatchAxis&, const ir::Params& p) {
  const Sharding& s = constraint_of(p);
  if (s.is_single_device()) return {{with_sharding_constraint(ins[0], s)}, {dims[0]}};
  std::vector<SpecEntry> entries;
  for (size_t d = 0; d < size_t(ins[0].ndim()); ++d) entries.push_back(s.spec()[d]);
  entries.insert(entries.begin() + dims[0], SpecEntry());
  entries.pop_back();
  return {{with_sharding_constraint(ins[0], NamedSharding(s.mesh(), PartitionSpec(entries)))}, {dims[0]}};
}

const ir::Primitive& constraint_primitive() {
  static const ir::Primitive& p = ir::register_primitive({
      .name = "sharding_constraint",
      .arity = {1, 1},
      .abstract_eval = &constraint_aval,
      .jvp = &constraint_jvp,
      .transpose = &constraint_transpose,
      .batch = &constraint_batch,
      .spmd = &constraint_rules,
  });
  return p;
}
[[maybe_unused]] const ir::Primitive& registered_constraint = constraint_primitive();

}  // namespace
}  // namespace detail

Array with_sharding_constraint(const Array& x, const Sharding& s) {
  if (!s.valid()) throw ValueError("with_sharding_constraint: the sharding is empty (default-constructed)");
  return detail::bind1(detail::constraint_primitive(), {x}, detail::constraint_params(s));
}

}  // namespace tessel
