// Colocated calls (include/tessel/colocated.h, docs/colocated.md): planning a call (its
// inputs, devices and hosts), knowing or learning its output specs, and running it here and
// on the workers; also the small public functions (Spec, colocated_cpu_devices).
#include <algorithm>
#include <future>
#include <optional>

#include "colocated/colocated_impl.h"
#include "colocated/serial_queue.h"
#include "core/array_impl.h"
#include "core/dtype_check.h"
#include "distributed/controller.h"
#include "ir/serialize.h"
#include "tessel/colocated.h"

namespace tessel::colocated {

namespace ctl = distributed::controller;

Spec Spec::of(const Array& a) { return Spec(a.shape(), a.dtype(), a.sharding()); }

std::string Spec::to_string() const {
  return Aval(shape, dtype).to_string() + " " + (sharding.valid() ? sharding.to_string() : "(no sharding)");
}

std::vector<Device> colocated_cpu_devices(const std::vector<Device>& devices) {
  for (size_t i = 0; i < devices.size(); ++i)
    if (!devices[i].valid())
      throw ValueError("colocated_cpu_devices: device " + std::to_string(i) +
                       " of the list is an empty Device handle; pass devices from ts::devices()");
  return devices;  // every tessel device is a CPU device of its host
}

Mesh colocated_cpu_devices(const Mesh& mesh) {
  return Mesh(colocated_cpu_devices(mesh.devices()), mesh.shape(), mesh.axis_names());
}

namespace detail {

void bad_rebuild(const std::string& what, size_t want, size_t got) {
  throw ValueError(what + ": expected " + std::to_string(want) + " array leaves, got " + std::to_string(got) +
                   "; the tree structure and the leaves of a colocated call's values disagree");
}

// ---- the call ----

namespace {

std::string device_set_text(const std::vector<Device>& devs) {
  std::string r = "{";
  for (size_t i = 0; i < devs.size() && i < 16; ++i) r += (i ? ", " : "") + devs[i].to_string();
  return r + (devs.size() > 16 ? ", ...}" : "}");
}

std::vector<int> sorted_ids(const std::vector<Device>& devs) {
  std::vector<int> ids;
  for (auto& d : devs) ids.push_back(d.id());
  std::sort(ids.begin(), ids.end());
  return ids;
}

// Runs `run` on `queue` and waits for its results.
Outputs run_sync(SerialQueue& queue, std::function<Outputs()> run) {
  auto done = std::make_shared<std::promise<Outputs>>();
  auto result = done->get_future();
  queue.push([run = std::move(run), done] {
    try {
      done->set_value(run());
    } catch (...) {
      done->set_exception(std::current_exception());
    }
  });
  return result.get();
}

// What one call runs on: its checked inputs, its device set, and its hosts.
struct CallPlan {
  std::string name;
  Specs in_specs;
  std::vector<Device> devs;
  std::vector<int> dev_ids;      // sorted, to compare device sets
  bool here = false;             // this process owns some of the devices
  std::vector<int> remote;       // on a single-controller driver: the workers owning the others
  std::vector<uint64_t> in_ids;  // the inputs' ids on those workers
};

CallPlan plan_call(const Site& site, std::span<const Array> leaves) {
  CallPlan c;
  c.name = site.target.display;
  const std::string& name = c.name;
  for (size_t k = 0; k < leaves.size(); ++k) {
    const Array& a = leaves[k];
    if (!a.valid()) throw ValueError(name + ": input leaf " + std::to_string(k) + " is an empty Array; give it a value");
    if (a.is_tracer())
      throw ValueError(name + ": input leaf " + std::to_string(k) +
                       " is a tracer; colocated functions run host code on concrete arrays, so call them outside "
                       "jit/grad/vmap (or use ts::host::call inside)");
    c.in_specs.push_back(Spec::of(a));
  }
  // One common device set.
  if (!c.in_specs.empty()) {
    c.devs = c.in_specs[0].sharding.device_set();
    c.dev_ids = sorted_ids(c.devs);
    for (size_t k = 1; k < c.in_specs.size(); ++k)
      if (sorted_ids(c.in_specs[k].sharding.device_set()) != c.dev_ids)
        throw ValueError(name + ": input leaf " + std::to_string(k) + " is on devices " +
                         device_set_text(c.in_specs[k].sharding.device_set()) + " but input leaf 0 is on " +
                         device_set_text(c.devs) + "; the inputs of a colocated call share one device set (device_put them)");
  }
  if (site.spec.devices) {
    if (!c.devs.empty() && c.dev_ids != sorted_ids(*site.spec.devices))
      throw ValueError(name + ": the inputs are on devices " + device_set_text(c.devs) +
                       " but the function was specialized to " + device_set_text(*site.spec.devices));
    c.devs = *site.spec.devices;
    c.dev_ids = sorted_ids(c.devs);
  }
  if (c.devs.empty())
    throw ValueError(name + ": the call has no input arrays, so it does not know which hosts to run on; specialize it "
                     "with devices (f.specialize({.devices = ts::colocated::colocated_cpu_devices(ts::devices())}))");
  if (site.spec.in_specs) {
    const Specs& want = *site.spec.in_specs;
    if (want.size() != c.in_specs.size())
      throw ValueError(name + ": the call has " + std::to_string(c.in_specs.size()) + " input leaves but in_specs lists " +
                       std::to_string(want.size()));
    for (size_t k = 0; k < want.size(); ++k)
      if (!(want[k] == c.in_specs[k]))
        throw ValueError(name + ": input leaf " + std::to_string(k) + " is " + c.in_specs[k].to_string() +
                         ", but in_specs says " + want[k].to_string());
  }
  for (auto& d : c.devs) c.here |= d.impl()->is_local();
  if (ctl::is_driver()) c.remote = ctl::remote_processes(c.devs);
  if (!c.remote.empty() && site.target.registered.empty())
    throw ValueError(name + " runs on the hosts of devices " + device_set_text(c.devs) +
                     ", which are other processes, but it is not registered; C++ cannot ship code: register it in every "
                     "process (TESSEL_REGISTER_COLOCATED(fn) for a free function, TESSEL_REGISTER_COLOCATED_CLASS/_METHOD "
                     "for a class) and wrap the registered function");
  if (!c.remote.empty())
    for (auto& a : leaves) c.in_ids.push_back(ctl::remote_id(a, name));
  if (site.target.object)
    for (int p : c.remote) site.target.object->used_on(p);
  return c;
}

// A colocated function's outputs are on the devices of its inputs.
void check_output_devices(const CallPlan& c, const std::vector<Device>& got, const std::string& what) {
  if (sorted_ids(got) != c.dev_ids)
    throw ValueError(c.name + ": " + what + " on " + device_set_text(got) + ", but the call runs on " +
                     device_set_text(c.devs) + "; a colocated function's outputs are on the devices of its inputs");
}

// The call as the workers read it (read_call, read_remote_target).
void write_call(ir::Writer& w, const CallPlan& c, std::span<const std::string> arg_structures,
                const Target& target) {
  w.u64(caller_id());
  w.count(c.in_ids.size());
  for (auto id : c.in_ids) w.u64(id);
  w.count(arg_structures.size());
  for (auto& s : arg_structures) w.str(s);
  write_target(w, target);
}

// The output specs when known — learned by an earlier call of this signature, or computed
// by out_specs_fn (and kept) — with the result's structure: learned, or told by its type.
// Unknown when the result's structure needs a call to learn it (a std::map's keys).
std::optional<Site::Known> known_outputs(Site& site, const CallPlan& c, const Site::Signature& key,
                                         const ResultType& result) {
  auto with_structure = [&](Site::Known k) -> std::optional<Site::Known> {
    if (!k.structure.empty()) return k;
    if (result.flat_vector) k.structure = "[" + std::string(k.specs.size(), '*') + "]";
    else k.structure = result.fixed;
    if (k.structure.empty() && !k.specs.empty()) return std::nullopt;
    return k;
  };
  if (std::optional<Site::Known> k = site.known->cache.find(key)) return with_structure(std::move(*k));
  if (!site.spec.out_specs_fn) return std::nullopt;
  Specs specs = site.spec.out_specs_fn(c.in_specs);
  for (size_t j = 0; j < specs.size(); ++j) {
    tessel::detail::checked_dtype(specs[j].dtype, c.name + ": out_specs_fn's output " + std::to_string(j));
    if (!specs[j].sharding.valid())
      throw ValueError(c.name + ": out_specs_fn gave output " + std::to_string(j) +
                       " no sharding; give each output spec the sharding of its devices");
    check_output_devices(c, specs[j].sharding.device_set(), "out_specs_fn puts output " + std::to_string(j));
  }
  site.known->cache.insert(key, Site::Known{specs, ""});
  return with_structure(Site::Known{specs, ""});
}

// A prepared call of this signature whose inputs match `leaves` and `arg_structures` (same
// avals, shardings and argument structures), or null. Found, it is the most recent.
std::shared_ptr<PreparedCall> find_prepared(const Site& site, std::span<const Array> leaves,
                                            std::span<const std::string> arg_structures) {
  OutSpecCache& k = *site.known;
  const uint64_t generation = k.cache.generation();
  std::lock_guard lock(k.prepared_mu);
  for (size_t i = 0; i < k.prepared.size(); ++i) {
    const PreparedCall& p = *k.prepared[i];
    if (p.avals.size() != leaves.size() || p.cache_generation != generation ||
        !std::equal(p.arg_structures.begin(), p.arg_structures.end(), arg_structures.begin(), arg_structures.end()))
      continue;
    bool same = true;
    for (size_t j = 0; j < leaves.size() && same; ++j) {
      const auto* a = tessel::detail::as_concrete(leaves[j]);  // null for empty arrays and tracers
      same = a && a->aval == p.avals[j] && a->sharding() == p.shardings[j];
    }
    if (!same) continue;
    if (i) std::rotate(k.prepared.begin(), k.prepared.begin() + ptrdiff_t(i), k.prepared.begin() + ptrdiff_t(i) + 1);
    return k.prepared.front();
  }
  return nullptr;
}

// Prepares the calls of a signature whose outputs are known (after a full check and plan).
std::shared_ptr<PreparedCall> prepare_call(const Site& site, const CallPlan& c, std::span<const Array> leaves,
                                           std::span<const std::string> arg_structures, const Site::Known& known,
                                           uint64_t generation) {
  auto p = std::make_shared<PreparedCall>();
  for (const Array& a : leaves) {
    const auto* concrete = tessel::detail::as_concrete(a);  // plan_call rejected the others
    p->avals.push_back(concrete->aval);
    p->shardings.push_back(concrete->sharding());
  }
  p->arg_structures.assign(arg_structures.begin(), arg_structures.end());
  p->cache_generation = generation;
  p->expected = std::make_shared<const Expected>(Expected{known.specs, known.structure, c.name});
  for (const Spec& s : known.specs) p->outputs.emplace_back(s);
  p->here = c.here;
  p->remote = c.remote;
  if (!c.remote.empty()) {
    ir::Writer w;
    write_frame(w, known.specs, known.structure, p->arg_structures, site.target);  // ctor bytes may throw
    p->frame_bytes = w.take();
    p->frame = ctl::new_id();
  }
  OutSpecCache& k = *site.known;
  std::shared_ptr<PreparedCall> dropped;  // destroyed outside the lock (it forgets its frame)
  std::lock_guard lock(k.prepared_mu);
  k.prepared.insert(k.prepared.begin(), p);
  if (k.prepared.size() > kPreparedCapacity) {
    dropped = std::move(k.prepared.back());
    k.prepared.pop_back();
  }
  return p;
}

// A prepared call: pending outputs now, filled by the hosts later. A worker gets the frame
// with the first call (then keeps it) and only ids after that:
// [frame id][frame bytes, or empty][caller][output ids][input ids].
Outputs call_prepared(PreparedCall& p, std::span<const Array> leaves, const LocalMaker& local) {
  const bool remote = !p.remote.empty();
  std::vector<Array> outs;
  outs.reserve(p.outputs.size());
  if (!remote) {
    for (const OutputTemplate& t : p.outputs) outs.push_back(make_pending(t, {}, 0));
  } else {
    std::lock_guard lock(p.shipped_mu);
    // Framed in a buffer the thread keeps (no allocation per call), as ir::Writer would.
    thread_local std::string* buffer = new std::string();  // never freed: exit handlers may call
    std::string& w = *buffer;
    w.clear();
    const std::string_view frame = p.shipped ? std::string_view() : std::string_view(p.frame_bytes);
    ir::wire::append_le<uint64_t>(w, p.frame);
    ir::wire::append_le<uint64_t>(w, frame.size());
    w += frame;
    ir::wire::append_le<uint64_t>(w, caller_id());
    ir::wire::append_le<uint64_t>(w, p.outputs.size());
    for (const OutputTemplate& t : p.outputs) {
      const uint64_t id = ctl::new_id();
      ir::wire::append_le<uint64_t>(w, id);
      outs.push_back(make_pending(t, p.remote, id));
    }
    ir::wire::append_le<uint64_t>(w, leaves.size());
    for (const Array& a : leaves) ir::wire::append_le<uint64_t>(w, ctl::remote_id(a, p.expected->name));
    static const std::string kind = "colocated.call";  // made once, not per call
    ctl::post(p.remote, kind, w);
    p.shipped = true;
    if (w.capacity() > (64u << 10)) std::string().swap(w);  // after a large frame
  }
  if (p.here) caller_queue().push(filling(local(), outs, p.expected));
  return {outs, p.expected->structure};
}

// Unknown output specs: run synchronously on every host, learn the specs (kept for the
// next call), and bind the workers' results to ids.
Outputs call_learning(Site& site, const CallPlan& c, std::span<const std::string> arg_structures, const LocalMaker& local,
                      const Site::Signature& key) {
  std::vector<Array> results;
  std::optional<Specs> learned;
  std::string structure;
  if (c.here) {
    Outputs outs = run_sync(caller_queue(), local());
    results = std::move(outs.leaves);
    structure = std::move(outs.structure);
    learned.emplace();
    for (auto& a : results) {
      learned->push_back(Spec::of(a));
      check_output_devices(c, learned->back().sharding.device_set(), "the function returned an array");
    }
  }
  const uint64_t call_id = c.remote.empty() ? 0 : ctl::new_id();
  for (int p : c.remote) {
    ir::Writer w;
    w.u64(call_id);
    write_call(w, c, arg_structures, site.target);
    std::string reply = ctl::request(p, "colocated.discover", w.bytes());
    ir::Reader r(reply, c.name);
    Specs specs = read_specs(r);
    std::string remote_structure = r.str();
    if ((learned && !(specs == *learned)) || (!structure.empty() && remote_structure != structure))
      throw ValueError(c.name + ": the hosts returned different outputs (process " + std::to_string(p) +
                       " differs from an earlier host); a colocated function returns the same specs and tree "
                       "structure on every host");
    learned = specs;
    structure = remote_structure;
  }
  site.known->cache.insert(key, Site::Known{*learned, structure}, /*replace=*/true);  // over out_specs_fn's, if any
  {
    std::lock_guard lock(site.mu);
    ++site.discoveries;
  }
  if (c.remote.empty()) return {results, structure};
  std::vector<Array> outs;
  ir::Writer w;
  w.u64(call_id);
  w.count(learned->size());
  for (size_t j = 0; j < learned->size(); ++j) {
    const Spec& s = (*learned)[j];
    const uint64_t id = ctl::new_id();
    w.u64(id);
    auto shards = c.here ? tessel::detail::piece_buffers(results[j])
                         : std::vector<std::shared_ptr<tessel::detail::Buffer>>(s.sharding.device_set().size());
    auto out = std::make_shared<tessel::detail::ConcreteArray>(Aval(s.shape, s.dtype), s.sharding,
                                                              Aval(s.sharding.shard_shape(s.shape), s.dtype), std::move(shards));
    out->remote = ctl::make_ref(id, c.remote);
    outs.push_back(Array(std::move(out)));
  }
  ctl::post(c.remote, "colocated.bind", w.bytes());
  return {outs, structure};
}

}  // namespace

// A call checks its inputs, finds the hosts (processes) of their devices, and knows or learns
// the output specs. With known specs it returns output arrays at once whose buffers the call
// fills later; without, it runs synchronously once per input signature. Each caller thread
// has its own queue on every host, so calls from one thread run in program order and calls
// from different threads run concurrently. Remote hosts (the workers of a single-controller
// job) receive the call over the controller channel and run the registered function or method
// there (serve.cpp).
Outputs call(Site& site, std::span<const Array> leaves, std::span<const std::string> arg_structures, LocalMaker local,
             const ResultType& result) {
  if (auto p = find_prepared(site, leaves, arg_structures)) return call_prepared(*p, leaves, local);
  const uint64_t generation = site.known->cache.generation();
  const CallPlan c = plan_call(site, leaves);
  const Site::Signature key{c.in_specs, c.dev_ids};
  if (std::optional<Site::Known> known = known_outputs(site, c, key, result)) {
    auto p = prepare_call(site, c, leaves, arg_structures, *known, generation);
    return call_prepared(*p, leaves, local);
  }
  return call_learning(site, c, arg_structures, local, key);
}

// The workers forget the frame with the entry (they ignore an id they never kept).
PreparedCall::~PreparedCall() {
  if (frame) ctl::forget(remote, frame);
}

}  // namespace detail
}  // namespace tessel::colocated
