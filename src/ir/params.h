#pragma once
// Static parameters of an equation (`reduce_sum[axes=(0,)]`): a small sorted map with
// hashing, equality and printing, so executables can be cached and equations compared.
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "tessel/array.h"

namespace tessel::ir {

struct Program;
using ProgramRef = std::shared_ptr<const Program>;

class Writer;  // ir/serialize.h

/// Extension point for parameter values of later modules (shardings, callbacks, ...).
class ParamObject {
 public:
  virtual ~ParamObject() = default;
  virtual size_t hash() const = 0;
  virtual bool equals(const ParamObject& other) const = 0;
  virtual std::string to_string() const = 0;
  /// Serialization (ir/serialize.h), opt-in: a value that can travel to another process
  /// names its kind (the key its reader is registered under with register_param_reader)
  /// and writes its data. By default a value cannot travel: `write` throws ValueError
  /// saying why (classes holding closures say so and give the fix).
  virtual std::string_view serial_kind() const { return {}; }
  virtual void write(Writer& w) const;
};

using ParamValue = std::variant<bool, int64_t, double, std::string, std::vector<int64_t>, DType, Scalar,
                                ProgramRef, std::vector<ProgramRef>, std::shared_ptr<const ParamObject>>;

class Params {
 public:
  Params() = default;
  Params(std::initializer_list<std::pair<std::string, ParamValue>> items);

  /// Sets `key` (replacing an earlier value).
  Params& set(std::string key, ParamValue value);
  bool has(std::string_view key) const { return find(key) != nullptr; }
  /// The value of `key` as T; an internal error if absent or of another type.
  template <class T> const T& get(std::string_view key) const {
    const ParamValue* v = find(key);
    if (!v || !std::holds_alternative<T>(*v)) missing(key);
    return std::get<T>(*v);
  }
  /// The parameter object of `key` as T; ValueError when absent, null or of another class
  /// (a program read from bytes may hold any object under any key).
  template <class T> const T& get_object(std::string_view key) const {
    const ParamValue* v = find(key);
    const auto* o = v && std::holds_alternative<std::shared_ptr<const ParamObject>>(*v)
                        ? dynamic_cast<const T*>(std::get<std::shared_ptr<const ParamObject>>(*v).get())
                        : nullptr;
    if (!o) wrong_object(key);
    return *o;
  }
  int64_t get_int(std::string_view key) const { return get<int64_t>(key); }
  const std::vector<int64_t>& get_ints(std::string_view key) const { return get<std::vector<int64_t>>(key); }
  const auto& items() const { return items_; }
  bool empty() const { return items_.empty(); }

  size_t hash() const;
  bool operator==(const Params& o) const;
  /// "axes=(0, 1), keepdims=False"; nested programs are printed by the program printer.
  std::string to_string() const;

 private:
  const ParamValue* find(std::string_view key) const;
  [[noreturn]] void missing(std::string_view key) const;
  [[noreturn]] void wrong_object(std::string_view key) const;
  std::vector<std::pair<std::string, ParamValue>> items_;
};

std::string param_value_to_string(const ParamValue& v);

}  // namespace tessel::ir
