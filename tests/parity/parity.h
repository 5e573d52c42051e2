#pragma once
// The parity suite's registry (docs/parity.md): tessel's side of every case that
// tests/parity/generate.py wrote from JAX into tests/parity/data/<module>.txt. A case names a
// function key (`func`); its registry entry calls tessel on the case's inputs and static
// parameters and returns the outputs, in JAX's order. parity_test.cpp runs every entry on
// every case of its key, eagerly and under jit, and its jvp and vjp when the case has them.
//
// Adding a function takes one line in a tests/parity/cases_<module>.cpp:
//
//   TESSEL_PARITY_CASES(numpy) {
//     reg("sin", unary(ts::sin));
//     reg("sum", [](const In& x, const Params& p) { return out(ts::sum(x[0], p.ints("axis"), p.flag("keepdims"))); });
//   }
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tessel/array.h"
#include "tessel/ops.h"

namespace tessel::parity {

/// A case's static parameters (`param <key> <type> <value>` lines): keyword arguments of the
/// JAX function, read back with the accessor of their type. A missing key or another type
/// throws, naming the key.
class Params {
 public:
  void set(const std::string& key, std::string type, std::string value);
  bool has(const std::string& key) const { return values_.count(key) != 0; }
  /// The key's type: none, bool, int, float, str, ints, floats or intss.
  const std::string& type(const std::string& key) const { return get(key, nullptr).first; }
  /// True when the key holds Python's None.
  bool is_none(const std::string& key) const;
  int64_t i(const std::string& key) const;
  std::optional<int64_t> opt_i(const std::string& key) const;
  double f(const std::string& key) const;
  bool flag(const std::string& key) const;
  std::string s(const std::string& key) const;
  DType dtype(const std::string& key) const { return dtype_from_name(s(key)); }
  /// A tuple of ints (`ints 1,2`; `-` is empty).
  std::vector<int64_t> ints(const std::string& key) const;
  std::optional<std::vector<int64_t>> opt_ints(const std::string& key) const;
  /// A tuple of numbers, one of them not an int (`floats 0x1p-1,0x1p+0`).
  std::vector<double> floats(const std::string& key) const;
  /// A tuple of tuples of ints (`intss 1,2;3,4`).
  std::vector<std::vector<int64_t>> intss(const std::string& key) const;

 private:
  const std::pair<std::string, std::string>& get(const std::string& key, const char* type) const;
  std::map<std::string, std::pair<std::string, std::string>> values_;
};

using Array = tessel::Array;
using In = std::vector<Array>;
using Out = std::vector<Array>;
/// tessel's side of a function key: outputs from inputs and parameters.
using Fn = std::function<Out(const In&, const Params&)>;

/// Registers `fn` as the entry of function key `func` (a duplicate key throws at start-up).
void reg(const std::string& func, Fn fn);
/// Every registered entry, by function key.
const std::map<std::string, Fn>& registry();
/// Marks `func`'s cases as known to differ from JAX, saying why: their mismatches are printed,
/// not failed, and the test fails once they all match (so the mark is removed with the fix).
void known_difference(const std::string& func, const std::string& reason);
/// The reason `func` is marked, or null.
const std::string* known_difference_reason(const std::string& func);
/// Runs `func`'s cases eagerly only, saying why: for functions JAX itself evaluates only on
/// concrete values (a result size that depends on the values, without a static `size`),
/// which neither jit nor vmap can trace, in tessel as in JAX.
void eager_only(const std::string& func, const std::string& reason);
/// The reason `func` runs eagerly only, or null.
const std::string* eager_only_reason(const std::string& func);
/// Checks `func`'s recorded derivatives through vjp only, saying why: for tessel functions
/// defined with a custom vjp rule, which (as every custom_vjp function) have no forward mode.
void reverse_mode_only(const std::string& func, const std::string& reason);
/// The reason `func`'s jvp is not checked, or null.
const std::string* reverse_mode_only_reason(const std::string& func);

/// One output.
inline Out out(Array a) { return {std::move(a)}; }
/// An entry calling a one-argument function (pass `ts::sin` or a lambda).
inline Fn unary(Array (*f)(const Array&)) {
  return [f](const In& x, const Params&) { return out(f(x.at(0))); };
}
/// An entry calling a two-argument function.
inline Fn binary(Array (*f)(const Array&, const Array&)) {
  return [f](const In& x, const Params&) { return out(f(x.at(0), x.at(1))); };
}

namespace detail {
struct Registrar {
  explicit Registrar(void (*fill)()) { fill(); }
};
}  // namespace detail
}  // namespace tessel::parity

/// Defines the registry entries of one cases_<module>.cpp; its body calls reg(...).
#define TESSEL_PARITY_CASES(module)                                                       \
  static void tessel_parity_cases_##module();                                             \
  static const ::tessel::parity::detail::Registrar tessel_parity_registrar_##module(      \
      &tessel_parity_cases_##module);                                                     \
  static void tessel_parity_cases_##module()
