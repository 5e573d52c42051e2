#include "ir/sharding_rule.h"

#include "ir/serialize.h"

namespace tessel::ir {

const char* combine_name(Combine c) {
  switch (c) {
    case Combine::kNone: return "none";
    case Combine::kSum: return "sum";
    case Combine::kProd: return "prod";
    case Combine::kMax: return "max";
    case Combine::kMin: return "min";
  }
  return "?";
}

ShardingRule elementwise_sharding_rule(std::span<const Aval> ins, std::span<const Aval> outs, const Params&) {
  ShardingRule r;
  size_t rank = outs[0].shape.size();
  std::vector<int> dims(rank);
  for (size_t d = 0; d < rank; ++d) dims[d] = int(d);
  r.factors.assign(rank, Combine::kNone);
  for (const Aval& a : ins) r.operands.push_back(a.shape == outs[0].shape ? dims : std::vector<int>(a.shape.size(), kWhole));
  for (size_t i = 0; i < outs.size(); ++i) r.results.push_back(outs[i].shape == outs[0].shape ? dims : std::vector<int>(outs[i].shape.size(), kWhole));
  return r;
}

}  // namespace tessel::ir

namespace tessel::ir {

size_t MeshParam::hash() const { return std::hash<std::string>()(value.to_string()); }
bool MeshParam::equals(const ParamObject& o) const {
  auto* m = dynamic_cast<const MeshParam*>(&o);
  return m && m->value == value;
}
size_t ShardingParam::hash() const { return std::hash<std::string>()(value.to_string()); }
bool ShardingParam::equals(const ParamObject& o) const {
  auto* m = dynamic_cast<const ShardingParam*>(&o);
  return m && m->value == value;
}
size_t SpecsParam::hash() const { return std::hash<std::string>()(to_string()); }
bool SpecsParam::equals(const ParamObject& o) const {
  auto* m = dynamic_cast<const SpecsParam*>(&o);
  return m && m->value == value;
}
std::string SpecsParam::to_string() const {
  std::string r = "(";
  for (size_t i = 0; i < value.size(); ++i) r += (i ? ", " : "") + value[i].to_string();
  return r + (value.size() == 1 ? ",)" : ")");
}

// ---- serialization (ir/serialize.h): devices travel by global id ----

namespace {

void write_mesh(Writer& w, const Mesh& m) {
  w.strs(m.axis_names());
  w.ints(m.shape());
  std::vector<int64_t> ids;
  for (auto& d : m.devices()) ids.push_back(d.id());
  w.ints(ids);
}
Mesh read_mesh(Reader& r) {
  auto names = r.strs();
  auto shape = r.ints();
  std::vector<Device> devs;
  for (auto id : r.ints()) devs.push_back(device_by_id(id, r.what()));
  try {
    return Mesh(std::move(devs), std::move(shape), std::move(names));
  } catch (const Error& e) {
    r.fail(std::string("invalid mesh: ") + e.what());
  }
}
void write_spec(Writer& w, const PartitionSpec& s) {
  w.count(s.size());
  for (auto& e : s.entries()) w.strs(e.axes());
}
PartitionSpec read_spec(Reader& r) {
  std::vector<SpecEntry> entries(r.count(8));
  for (auto& e : entries) e = SpecEntry(r.strs());
  return PartitionSpec(std::move(entries));
}

[[maybe_unused]] const bool mesh_registered = register_param_reader("mesh", [](Reader& r) -> std::shared_ptr<const ParamObject> {
  return std::make_shared<MeshParam>(read_mesh(r));
});
[[maybe_unused]] const bool sharding_registered =
    register_param_reader("sharding", [](Reader& r) -> std::shared_ptr<const ParamObject> {
      return std::make_shared<ShardingParam>(read_sharding(r));
    });
[[maybe_unused]] const bool specs_registered = register_param_reader("specs", [](Reader& r) -> std::shared_ptr<const ParamObject> {
  std::vector<PartitionSpec> specs(r.count(8));
  for (auto& s : specs) s = read_spec(r);
  return std::make_shared<SpecsParam>(std::move(specs));
});

}  // namespace

void MeshParam::write(Writer& w) const { write_mesh(w, value); }
void ShardingParam::write(Writer& w) const { write_sharding(w, value); }

void write_sharding(Writer& w, const Sharding& s) {
  w.boolean(s.is_single_device());
  if (s.is_single_device()) return w.i64(s.device_set().at(0).id());
  write_mesh(w, s.mesh());
  write_spec(w, s.spec());
}

Sharding read_sharding(Reader& r) {
  if (r.boolean()) return SingleDeviceSharding(device_by_id(r.i64(), r.what()));
  Mesh mesh = read_mesh(r);
  PartitionSpec spec = read_spec(r);
  try {
    return NamedSharding(mesh, spec);
  } catch (const Error& e) {
    r.fail(std::string("invalid sharding: ") + e.what());
  }
}
void SpecsParam::write(Writer& w) const {
  w.count(value.size());
  for (auto& s : value) write_spec(w, s);
}

}  // namespace tessel::ir
