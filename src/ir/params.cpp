#include "ir/params.h"

#include <algorithm>
#include <sstream>

#include "ir/program.h"

namespace tessel::ir {
namespace {

size_t mix(size_t h, size_t v) { return (h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2))); }

size_t hash_value(const ParamValue& v) {
  size_t h = v.index();
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          for (auto e : x) h = mix(h, std::hash<int64_t>()(e));
        } else if constexpr (std::is_same_v<T, Scalar>) {
          h = mix(h, x.hash());
        } else if constexpr (std::is_same_v<T, DType>) {
          h = mix(h, size_t(x));
        } else if constexpr (std::is_same_v<T, ProgramRef>) {
          h = mix(h, std::hash<const void*>()(x.get()));
        } else if constexpr (std::is_same_v<T, std::vector<ProgramRef>>) {
          for (auto& p : x) h = mix(h, std::hash<const void*>()(p.get()));
        } else if constexpr (std::is_same_v<T, std::shared_ptr<const ParamObject>>) {
          h = mix(h, x ? x->hash() : 0);
        } else {
          h = mix(h, std::hash<T>()(x));
        }
      },
      v);
  return h;
}

bool equal_value(const ParamValue& a, const ParamValue& b) {
  if (a.index() != b.index()) return false;
  if (auto* pa = std::get_if<std::shared_ptr<const ParamObject>>(&a)) {
    auto& pb = std::get<std::shared_ptr<const ParamObject>>(b);
    if (!*pa || !pb || *pa == pb) return *pa == pb;  // the same object: no virtual call
    return (*pa)->equals(*pb);
  }
  return a == b;  // programs compare by identity
}

}  // namespace

Params::Params(std::initializer_list<std::pair<std::string, ParamValue>> items) {
  for (auto& [k, v] : items) set(k, v);
}

Params& Params::set(std::string key, ParamValue value) {
  auto it = std::lower_bound(items_.begin(), items_.end(), key,
                             [](const auto& item, const std::string& k) { return item.first < k; });
  if (it != items_.end() && it->first == key) it->second = std::move(value);
  else items_.insert(it, {std::move(key), std::move(value)});
  return *this;
}

const ParamValue* Params::find(std::string_view key) const {
  for (auto& [k, v] : items_)
    if (k == key) return &v;
  return nullptr;
}

void Params::missing(std::string_view key) const {
  throw Error("internal: parameter '" + std::string(key) + "' is missing or has another type in {" +
              to_string() + "}");
}

void Params::wrong_object(std::string_view key) const {
  throw ValueError("parameter '" + std::string(key) + "' is missing, null or not the kind of value its primitive uses in {" +
                   to_string() + "}");
}

size_t Params::hash() const {
  size_t h = items_.size();
  for (auto& [k, v] : items_) h = mix(mix(h, std::hash<std::string>()(k)), hash_value(v));
  return h;
}

bool Params::operator==(const Params& o) const {
  if (items_.size() != o.items_.size()) return false;
  for (size_t i = 0; i < items_.size(); ++i)
    if (items_[i].first != o.items_[i].first || !equal_value(items_[i].second, o.items_[i].second)) return false;
  return true;
}

std::string param_value_to_string(const ParamValue& v) {
  std::ostringstream os;
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) {
          os << (x ? "True" : "False");
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          os << "(";
          for (size_t i = 0; i < x.size(); ++i) os << (i ? ", " : "") << x[i];
          os << (x.size() == 1 ? ",)" : ")");
        } else if constexpr (std::is_same_v<T, DType>) {
          os << dtype_name(x);
        } else if constexpr (std::is_same_v<T, Scalar>) {
          os << x.to_string();
        } else if constexpr (std::is_same_v<T, ProgramRef>) {
          os << "{ program " << (x ? x->name : "null") << " }";
        } else if constexpr (std::is_same_v<T, std::vector<ProgramRef>>) {
          os << "(" << x.size() << " programs)";
        } else if constexpr (std::is_same_v<T, std::shared_ptr<const ParamObject>>) {
          os << (x ? x->to_string() : "None");
        } else {
          os << x;
        }
      },
      v);
  return os.str();
}

std::string Params::to_string() const {
  std::string s;
  for (auto& [k, v] : items_) {
    if (!s.empty()) s += ", ";
    s += k + "=" + param_value_to_string(v);
  }
  return s;
}

}  // namespace tessel::ir

namespace tessel::ir {

void ParamObject::write(Writer&) const {
  throw ValueError("the value " + to_string() +
                   " has no serialized form (its class does not implement ParamObject::serial_kind and write)");
}

}  // namespace tessel::ir
