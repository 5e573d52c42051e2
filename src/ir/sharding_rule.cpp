#include "ir/sharding_rule.h"

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

}  // namespace tessel::ir
