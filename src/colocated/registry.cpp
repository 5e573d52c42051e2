// The registry of colocated functions, classes and methods (filled by static initializers
// in every process): registering them, and the names they were registered under.
#include <map>
#include <mutex>
#include <string>
#include <typeindex>

#include "colocated/colocated_impl.h"
#include "tessel/colocated.h"

namespace tessel::colocated::detail {

Registry& registry() {
  static auto* r = new Registry();
  return *r;
}

namespace {

void taken(const std::string& what, const std::string& name) {
  throw Error("TESSEL_REGISTER_COLOCATED: a colocated " + what + " named '" + name +
              "' is registered already; names must be unique in the program");
}

}  // namespace

bool register_function(const std::string& name, const void* address, RemoteFn fn) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  if (!r.functions.emplace(name, std::move(fn)).second) taken("function", name);
  r.function_names[address] = name;
  return true;
}

bool register_class(const std::string& name, std::type_index type, RemoteFactory factory) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  if (!r.classes.emplace(name, std::move(factory)).second) taken("class", name);
  r.class_names.emplace(type, name);
  return true;
}

bool register_method(const std::string& method, std::type_index pm_type, std::string pm_bytes, RemoteMethod fn) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  if (!r.methods.emplace(method, std::move(fn)).second) taken("method", method);
  r.method_names.emplace(std::make_pair(pm_type, std::move(pm_bytes)), method);
  return true;
}

std::string function_name(const void* address) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  auto it = r.function_names.find(address);
  return it == r.function_names.end() ? "" : it->second;
}

std::string class_name(std::type_index type) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  auto it = r.class_names.find(type);
  return it == r.class_names.end() ? "" : it->second;
}

std::string method_name(std::type_index pm_type, const std::string& pm_bytes) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  auto it = r.method_names.find({pm_type, pm_bytes});
  return it == r.method_names.end() ? "" : it->second;
}

}  // namespace tessel::colocated::detail
