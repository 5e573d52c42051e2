#pragma once
// What the files of src/colocated/ share: the registry, pending outputs and their filling,
// the wire format of targets and specs, and the out-spec cache of a site.
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <span>
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

/// What a call's results must be: their specs, their tree structure (empty: any) and the
/// callable's name for errors. Shared by the calls of one signature.
struct Expected {
  Specs specs;
  std::string structure;
  std::string name;
};
/// An output of one spec as calls make it again and again: its avals and layout worked out once.
struct OutputTemplate {
  explicit OutputTemplate(const Spec& spec);
  Aval aval, local;
  Sharding sharding;
  std::vector<tessel::detail::DeviceImpl*> local_devices;  // by position; null: another process's
};
/// An output array whose local pieces the call fills later (remote pieces by id).
Array make_pending(const OutputTemplate& out, const std::vector<int>& remote, uint64_t remote_id);
/// Gives the pending outputs the results' local pieces (or records the error there): a
/// result piece nobody else holds is adopted, not copied.
void fill(const std::vector<Array>& pending, std::vector<Array>&& results, std::exception_ptr error);
/// Runs `run` now: its result leaves, checked against `expected`; or none, and `error` set.
std::vector<Array> run_checked(const std::function<Outputs()>& run, const Expected& expected, std::exception_ptr& error);
/// A worker's call that ran before any message could need its outputs: stores its results
/// under `ids` (each with its pieces as they are: a computed value's, or an input's it
/// returned, shared), or `error` under every id.
void store_results(const std::vector<OutputTemplate>& outputs, std::span<const uint64_t> ids,
                   std::vector<Array>&& results, std::exception_ptr error);
/// Runs `run` now and fills `pending` with its results, checked against `expected` (or
/// with its error).
void run_and_fill(const std::function<Outputs()>& run, const std::vector<Array>& pending, const Expected& expected);
/// The task that runs `run` and fills `pending` with its results, checked against `expected`.
std::function<void()> filling(std::function<Outputs()> run, std::vector<Array> pending,
                              std::shared_ptr<const Expected> expected);

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
/// One input signature's call, prepared once (call.cpp): what a later call with inputs of the
/// same avals, shardings and argument structures needs, without checking, planning or
/// serializing again. On the driver of a single-controller job its workers keep the frame
/// (the output specs and structure, the argument structures, the target) under `frame`, so
/// a call sends only ids; when the entry dies, they forget it.
struct PreparedCall {
  ~PreparedCall();
  // what a call must match
  std::vector<Aval> avals;
  std::vector<Sharding> shardings;
  std::vector<std::string> arg_structures;
  uint64_t cache_generation = 0;  // of the out-spec cache it was made from (clear_caches drops it)
  // what the call does
  std::shared_ptr<const Expected> expected;
  std::vector<OutputTemplate> outputs;
  bool here = false;
  std::vector<int> remote;
  uint64_t frame = 0;
  std::string frame_bytes;
  std::mutex shipped_mu;  // orders the frame's first message before the calls that use it
  bool shipped = false;
};
/// The most prepared calls one callable keeps (the most recently used).
constexpr size_t kPreparedCapacity = 8;

/// Output specs one colocated callable keeps, by input signature (Site::known), and its
/// prepared calls.
struct OutSpecCache {
  tessel::detail::Cache<Site::Signature, Site::Known, SignatureHash> cache{"colocated.out_specs", kOutSpecCapacity};
  std::mutex prepared_mu;
  std::vector<std::shared_ptr<PreparedCall>> prepared;  // most recent first
};

/// The frame of a prepared call as workers read it (serve.cpp): the output specs and
/// structure, the argument structures, and the target.
void write_frame(ir::Writer& w, const Specs& specs, const std::string& structure,
                 const std::vector<std::string>& arg_structures, const Target& target);

}  // namespace tessel::colocated::detail
