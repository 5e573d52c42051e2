#pragma once
// What the files of src/colocated/ share: the registry, pending outputs and their filling,
// the wire format of targets and specs, and the out-spec cache of a site.
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <typeindex>
#include <utility>
#include <vector>

#include "core/array_impl.h"
#include "core/cache.h"
#include "ir/serialize.h"
#include "tessel/colocated.h"

namespace tessel::colocated::detail {

/// The registered functions, classes and methods of this process, and their names.
struct Registry {
  std::mutex mu;
  std::map<std::string, RemoteFn> functions;
  std::map<const void*, std::string> function_names;
  std::map<std::string, RemoteFactory> classes;
  std::map<std::type_index, std::string> class_names;
  std::map<std::string, RemoteMethod> methods;
  std::map<std::pair<std::type_index, std::string>, std::string> method_names;
};
/// The process's registry, made on first use (static initializers fill it in every process).
Registry& registry();

/// An output array of `spec` whose local pieces the call fills later (remote pieces by id).
Array make_pending(const Spec& spec, const std::vector<int>& remote, uint64_t remote_id);
/// Copies the results' local pieces into the pending outputs (or records the error there).
void fill(const std::vector<Array>& pending, const std::vector<Array>& results, std::exception_ptr error);
/// The task that runs `run` and fills `pending` with its checked results.
std::function<void()> filling(std::function<Outputs()> run, std::vector<Array> pending, Specs specs,
                              std::string structure, std::string name);

/// Writes a call's target: the registered name, and the object's id, class and constructor.
void write_target(ir::Writer& w, const Target& t);
/// Writes output specs (read_specs reads them).
void write_specs(ir::Writer& w, const Specs& specs);
/// Reads output specs written by write_specs.
Specs read_specs(ir::Reader& r);

// Output specs one colocated callable keeps, by input signature (core/cache.h). Fixed
// (docs/performance.md, "Caches"); a signature evicted or cleared is learned again by its
// next call.
/// The most output specs one colocated callable keeps (by input signature).
constexpr size_t kOutSpecCapacity = 64;
/// Hashes an input signature: the input avals and the device ids.
struct SignatureHash {
  size_t operator()(const Site::Signature& s) const {
    size_t h = s.in.size();
    for (const Spec& spec : s.in) h = tessel::detail::hash_aval(h, Aval(spec.shape, spec.dtype));
    for (int d : s.devices) h = h * 31 + size_t(d);
    return h;
  }
};
/// Output specs one colocated callable keeps, by input signature (Site::known).
struct OutSpecCache {
  tessel::detail::Cache<Site::Signature, Site::Known, SignatureHash> cache{"colocated.out_specs", kOutSpecCapacity};
};

}  // namespace tessel::colocated::detail
