// Colocated calls (include/tessel/colocated.h, docs/colocated.md). A call checks its inputs,
// finds the hosts (processes) of their devices, and knows or learns the output specs. With
// known specs it returns output arrays at once whose buffers the call fills later; without,
// it runs synchronously once per input signature. Each caller thread has its own queue on
// every host, so calls from one thread run in program order and calls from different
// threads run concurrently. Remote hosts (the workers of a single-controller job) receive
// the call over the controller channel and run the registered function or method there.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <future>
#include <map>
#include <set>
#include <thread>
#include <unordered_map>

#include "core/array_impl.h"
#include "core/cache.h"
#include "core/dtype_check.h"
#include "core/lifetime.h"
#include "core/log.h"
#include "core/thread.h"
#include "distributed/controller.h"
#include "ir/serialize.h"
#include "ir/sharding_rule.h"
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
namespace {

// ---- registries (filled by static initializers in every process) ----

struct Registry {
  std::mutex mu;
  std::map<std::string, RemoteFn> functions;
  std::map<const void*, std::string> function_names;
  std::map<std::string, RemoteFactory> classes;
  std::map<std::type_index, std::string> class_names;
  std::map<std::string, RemoteMethod> methods;
  std::map<std::pair<std::type_index, std::string>, std::string> method_names;
};
Registry& registry() {
  static auto* r = new Registry();
  return *r;
}

void taken(const std::string& what, const std::string& name) {
  throw Error("TESSEL_REGISTER_COLOCATED: a colocated " + what + " named '" + name +
              "' is registered already; names must be unique in the program");
}

// ---- executors: one queue per caller thread ----

// The user code of the calls runs on the queue's thread with streams of its own (see
// tessel::detail::PrivateStreams), so device work waiting for a call's outputs cannot hold
// up the work the call issues. A queue outlives the thread that made it (its calls go on
// after that thread ends); at exit every queue finishes its calls first.
class SerialQueue {
 public:
  static std::shared_ptr<SerialQueue> make() {
    std::shared_ptr<SerialQueue> q(new SerialQueue());
    tessel::detail::start_thread("a colocated call queue", [q] {
      tessel::detail::ScopedPrivateStreams scope(&q->streams_);
      q->loop();
    }).detach();
    live().add(q);
    return q;
  }
  /// Claims an idle queue for a task the caller runs itself (run_claimed); false when the
  /// queue is busy (then push the task).
  bool claim_if_idle() {
    std::lock_guard lock(mu_);
    if (running_ || retired_ || !tasks_.empty()) return false;
    running_ = true;
    return true;
  }
  /// Runs `task` on the calling thread, in the queue's order and on its streams.
  void run_claimed(const std::function<void()>& task) {
    {
      tessel::detail::ScopedPrivateStreams scope(&streams_);
      task();
    }
    std::lock_guard lock(mu_);
    running_ = false;
    if (!tasks_.empty() || retired_) cv_.notify_all();  // else the queue's thread sleeps on
  }
  void push(std::function<void()> task) {
    {
      std::lock_guard lock(mu_);
      tasks_.push_back(std::move(task));
    }
    cv_.notify_all();
  }
  /// No more calls come: the thread ends after the queued ones.
  void retire() {
    {
      std::lock_guard lock(mu_);
      retired_ = true;
    }
    cv_.notify_all();
  }
  void wait_finished() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return finished_; });
  }

 private:
  SerialQueue() = default;
  void loop() {
    for (;;) {
      std::function<void()> task;
      spin_for_work();
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return !running_ && (retired_ || !tasks_.empty()); });
        if (tasks_.empty()) break;
        task = std::move(tasks_.front());
        tasks_.pop_front();
        running_ = true;
      }
      task();
      std::lock_guard lock(mu_);
      running_ = false;
    }
    std::lock_guard lock(mu_);
    finished_ = true;
    cv_.notify_all();
  }

  // Calls often come in quick succession: stay awake a little before sleeping, so the next
  // one does not pay for waking this thread.
  void spin_for_work() {
    tessel::detail::spin_until(
        [&] {
          std::lock_guard lock(mu_);
          return retired_ || (!tasks_.empty() && !running_);
        },
        std::chrono::microseconds(300));
  }

  // Every queue alive, for the exit handler.
  struct Live {
    std::mutex mu;
    std::vector<std::weak_ptr<SerialQueue>> queues;
    void add(const std::shared_ptr<SerialQueue>& q) {
      static const bool registered =
          (tessel::detail::at_exit(tessel::detail::ExitPhase::kCallers, [] { live().finish_all(); }), true);
      (void)registered;
      std::lock_guard lock(mu);
      std::erase_if(queues, [](auto& w) { return w.expired(); });
      queues.push_back(q);
    }
    void finish_all() {
      std::vector<std::shared_ptr<SerialQueue>> qs;
      {
        std::lock_guard lock(mu);
        for (auto& w : queues)
          if (auto q = w.lock()) qs.push_back(q);
      }
      for (auto& q : qs) q->retire();
      for (auto& q : qs) q->wait_finished();
    }
  };
  static Live& live() {
    static auto* l = new Live();
    return *l;
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool running_ = false;  // a task runs (on the queue's thread, or inline)
  bool retired_ = false, finished_ = false;
  tessel::detail::PrivateStreams streams_;
};

// This thread's queue on this host, and its id for queues on remote hosts.
SerialQueue& caller_queue() {
  struct Holder {
    std::shared_ptr<SerialQueue> q = SerialQueue::make();
    ~Holder() { q->retire(); }
  };
  thread_local Holder h;
  return *h.q;
}
uint64_t caller_id() {
  static std::atomic<uint64_t> next{1};
  thread_local uint64_t id = next.fetch_add(1);
  return id;
}

// A worker's queue for one caller thread of the driver.
SerialQueue& remote_caller_queue(uint64_t caller) {
  static std::mutex mu;
  static auto* queues = new std::map<uint64_t, std::shared_ptr<SerialQueue>>();
  std::lock_guard lock(mu);
  auto& q = (*queues)[caller];
  if (!q) q = SerialQueue::make();
  return *q;
}

// ---- specs and outputs ----

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

// An output array of `spec` whose local pieces the call fills later; on the driver of a
// single-controller job its remote pieces are kept by `remote` under `remote_id`.
Array make_pending(const Spec& spec, const std::vector<int>& remote, uint64_t remote_id) {
  Aval aval(spec.shape, spec.dtype);
  Aval local(spec.sharding.shard_shape(spec.shape), spec.dtype);
  std::vector<std::shared_ptr<tessel::detail::Buffer>> shards;
  for (const Device& d : spec.sharding.device_set())
    shards.push_back(d.impl()->is_local() ? tessel::detail::Buffer::deferred(local.nbytes(), d.impl()) : nullptr);
  auto out = std::make_shared<tessel::detail::ConcreteArray>(aval, spec.sharding, local, std::move(shards));
  if (!remote.empty()) out->remote = ctl::make_ref(remote_id, remote);
  return Array(std::move(out));
}

// A result tree of another structure than the one callers were given (a std::map's keys or
// a std::vector's size that changed for the same input specs).
void check_structure(const std::string& name, const std::string& got, const std::string& want) {
  if (!want.empty() && got != want)
    throw ValueError(name + ": the function returned a result of tree structure '" + got + "', but an earlier call "
                     "with the same input specs returned '" + want + "' (its callers rebuilt that one); return the "
                     "same containers, sizes and keys for the same input specs");
}

void check_results(const std::string& name, const std::vector<Array>& results, const Specs& specs) {
  if (results.size() != specs.size())
    throw ValueError(name + ": the function returned " + std::to_string(results.size()) + " arrays, but its output specs list " +
                     std::to_string(specs.size()) + "; make out_specs_fn describe every output leaf");
  for (size_t j = 0; j < results.size(); ++j) {
    if (!results[j].valid() || results[j].is_tracer())
      throw ValueError(name + ": output " + std::to_string(j) + " is not a concrete array");
    Spec got = Spec::of(results[j]);
    if (!(got == specs[j]))
      throw ValueError(name + ": output " + std::to_string(j) + " is " + got.to_string() + ", but its spec says " +
                       specs[j].to_string() + "; return arrays as out_specs_fn describes them (device_put them)");
  }
}

// Copies the results' local pieces into the pending outputs (or records the error there).
void fill(const std::vector<Array>& pending, const std::vector<Array>& results, std::exception_ptr error) {
  for (size_t j = 0; j < pending.size(); ++j) {
    auto outs = tessel::detail::piece_buffers(pending[j]);
    std::vector<std::shared_ptr<tessel::detail::Buffer>> ins;
    if (!error) ins = tessel::detail::piece_buffers(results[j]);
    for (size_t pos = 0; pos < outs.size(); ++pos) {
      auto& out = outs[pos];
      if (!out) continue;
      try {
        if (error) std::rethrow_exception(error);
        auto& in = ins.at(pos);
        if (!in) throw Error("internal: colocated: a result lacks a piece this process owns");
        in->wait();
        out->attach(tessel::detail::Memory(out->nbytes()));
        if (out->nbytes()) std::memcpy(out->data(), in->data(), out->nbytes());
        out->set_ready();
      } catch (...) {
        out->set_error(std::current_exception());
      }
    }
  }
}

// The task that runs `run` and fills `pending` with its results, which must have `specs`
// and the result structure `structure` (when not empty).
std::function<void()> filling(std::function<Outputs()> run, std::vector<Array> pending, Specs specs,
                              std::string structure, std::string name) {
  return [run = std::move(run), pending = std::move(pending), specs = std::move(specs),
          structure = std::move(structure), name = std::move(name)] {
    Outputs results;
    std::exception_ptr error;
    try {
      results = run();
      check_results(name, results.leaves, specs);
      check_structure(name, results.structure, structure);
    } catch (...) {
      error = std::current_exception();
    }
    fill(pending, results.leaves, error);
  };
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

// ---- the target as it travels ----

void write_target(ir::Writer& w, const Target& t) {
  w.str(t.registered);
  w.boolean(t.object != nullptr);
  if (!t.object) return;
  w.u64(t.object->id());
  w.str(t.object->registered());
  w.str(t.object->ctor_bytes());
}

void write_specs(ir::Writer& w, const Specs& specs) {
  w.count(specs.size());
  for (auto& s : specs) {
    ir::write_aval(w, Aval(s.shape, s.dtype));
    ir::write_sharding(w, s.sharding);
  }
}

Specs read_specs(ir::Reader& r) {
  Specs specs(r.count(8));
  for (auto& s : specs) {
    Aval a = ir::read_aval(r);
    s = Spec(a.shape, a.dtype, ir::read_sharding(r));
  }
  return specs;
}

// ---- worker side ----

struct RemoteObject {
  std::once_flag made;
  std::shared_ptr<void> instance;
  std::exception_ptr error;
};

struct WorkerState {
  std::mutex mu;
  std::unordered_map<uint64_t, std::shared_ptr<RemoteObject>> objects;
  std::unordered_map<uint64_t, std::vector<Array>> discovered;  // by call id, until bound
};
WorkerState& worker() {
  static auto* w = new WorkerState();
  return *w;
}

// What a worker runs for one call message: the registered function, or the method of the
// object (made on first use, from its constructor arguments' bytes).
std::function<Outputs()> read_remote_target(ir::Reader& r, std::vector<Array> leaves,
                                            std::vector<std::string> structures) {
  std::string name = r.str();
  const bool is_method = r.boolean();
  Registry& reg = registry();
  if (!is_method) {
    RemoteFn fn;
    {
      std::lock_guard lock(reg.mu);
      auto it = reg.functions.find(name);
      if (it == reg.functions.end()) throw ValueError("colocated: no function '" + name + "' is registered in this worker");
      fn = it->second;
    }
    return [fn, leaves = std::move(leaves), structures = std::move(structures)] { return fn(leaves, structures); };
  }
  const uint64_t object_id = r.u64();
  std::string cls = r.str();
  std::string ctor = r.str();
  RemoteFactory factory;
  RemoteMethod method;
  {
    std::lock_guard lock(reg.mu);
    auto c = reg.classes.find(cls);
    auto m = reg.methods.find(name);
    if (c == reg.classes.end()) throw ValueError("colocated: no class '" + cls + "' is registered in this worker");
    if (m == reg.methods.end()) throw ValueError("colocated: no method '" + name + "' is registered in this worker");
    factory = c->second;
    method = m->second;
  }
  std::shared_ptr<RemoteObject> obj;
  {
    WorkerState& w = worker();
    std::lock_guard lock(w.mu);
    auto& slot = w.objects[object_id];
    if (!slot) slot = std::make_shared<RemoteObject>();
    obj = slot;
  }
  return [obj, factory, method, ctor = std::move(ctor), leaves = std::move(leaves),
          structures = std::move(structures)] {
    std::call_once(obj->made, [&] {
      try {
        obj->instance = factory(ctor);
      } catch (...) {
        obj->error = std::current_exception();
      }
    });
    if (obj->error) std::rethrow_exception(obj->error);
    return method(obj->instance.get(), leaves, structures);
  };
}

struct CallMessage {
  uint64_t caller;
  std::vector<Array> leaves;
  std::vector<std::string> structures;  // of each argument
};
CallMessage read_call(ir::Reader& r) {
  CallMessage m;
  m.caller = r.u64();
  std::vector<uint64_t> ids(r.count(8));
  for (auto& id : ids) id = r.u64();
  m.structures.resize(r.count(1));
  for (auto& s : m.structures) s = r.str();
  for (auto id : ids) m.leaves.push_back(ctl::lookup(id, "colocated call"));
  return m;
}

[[maybe_unused]] const bool handlers_registered = [] {
  ctl::register_handler("colocated.call", [](ir::Reader& r, ctl::Reply) {
    std::vector<uint64_t> out_ids(r.count(8));
    for (auto& id : out_ids) id = r.u64();
    Specs specs = read_specs(r);
    if (specs.size() != out_ids.size())
      r.fail(std::to_string(out_ids.size()) + " result ids for " + std::to_string(specs.size()) + " result specs");
    std::string structure = r.str();
    std::vector<Array> pending;
    for (size_t j = 0; j < specs.size(); ++j) {
      pending.push_back(make_pending(specs[j], {}, 0));
      ctl::store(out_ids[j], pending.back());
    }
    try {
      CallMessage m = read_call(r);
      auto run = read_remote_target(r, std::move(m.leaves), std::move(m.structures));
      // An idle queue runs the call on this thread while another serves: no hand-over.
      auto task =
          filling(std::move(run), std::move(pending), std::move(specs), std::move(structure), "colocated call");
      SerialQueue& q = remote_caller_queue(m.caller);
      if (q.claim_if_idle()) ctl::run_while_others_serve([&] { q.run_claimed(task); });
      else q.push(std::move(task));
    } catch (...) {
      fill(pending, {}, std::current_exception());
    }
  });
  ctl::register_handler("colocated.discover", [](ir::Reader& r, ctl::Reply reply) {
    const uint64_t call_id = r.u64();
    CallMessage m = read_call(r);
    auto run = read_remote_target(r, std::move(m.leaves), std::move(m.structures));
    remote_caller_queue(m.caller).push([run = std::move(run), reply, call_id] {
      try {
        Outputs results = run();
        Specs specs;
        for (auto& a : results.leaves) specs.push_back(Spec::of(a));
        ir::Writer w;
        write_specs(w, specs);
        w.str(results.structure);
        {
          WorkerState& ws = worker();
          std::lock_guard lock(ws.mu);
          ws.discovered[call_id] = std::move(results.leaves);
        }
        reply.ok(w.bytes());
      } catch (...) {
        reply.fail(std::current_exception());
      }
    });
  });
  ctl::register_handler("colocated.bind", [](ir::Reader& r, ctl::Reply) {
    const uint64_t call_id = r.u64();
    std::vector<Array> results;
    {
      WorkerState& w = worker();
      std::lock_guard lock(w.mu);
      results = std::move(w.discovered[call_id]);
      w.discovered.erase(call_id);
    }
    size_t n = r.count(8);
    for (size_t j = 0; j < n && j < results.size(); ++j) ctl::store(r.u64(), results[j]);
  });
  ctl::register_handler("colocated.delete_object", [](ir::Reader& r, ctl::Reply) {
    WorkerState& w = worker();
    std::lock_guard lock(w.mu);
    w.objects.erase(r.u64());  // calls still queued keep it until they ran
  });
  return true;
}();

}  // namespace

// ---- registration ----

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

void bad_rebuild(const std::string& what, size_t want, size_t got) {
  throw ValueError(what + ": expected " + std::to_string(want) + " array leaves, got " + std::to_string(got) +
                   "; the tree structure and the leaves of a colocated call's values disagree");
}

// ---- objects ----

ObjectState::ObjectState(std::string class_display, std::string class_registered,
                         std::function<std::shared_ptr<void>()> make, std::function<std::string()> encode_ctor)
    : display_(std::move(class_display)), registered_(std::move(class_registered)), make_(std::move(make)),
      encode_ctor_(std::move(encode_ctor)), id_(ctl::is_driver() ? ctl::new_id() : 0) {}

ObjectState::~ObjectState() {
  std::vector<int> procs;
  {
    std::lock_guard lock(mu_);
    procs = remote_;
  }
  if (procs.empty()) return;
  ir::Writer w;
  w.u64(id_);
  try {
    ctl::post(procs, "colocated.delete_object", w.bytes());
  } catch (const std::exception& e) {  // a worker that is gone holds nothing any more
    TESSEL_DEBUG_LOG(std::string("colocated: freeing ") + display_ + ": " + e.what());
  }
}

void* ObjectState::local_instance() {
  std::call_once(made_, [&] {
    try {
      instance_ = make_();
    } catch (...) {
      error_ = std::current_exception();
    }
  });
  if (error_) std::rethrow_exception(error_);
  return instance_.get();
}

void ObjectState::used_on(int p) {
  std::lock_guard lock(mu_);
  if (std::find(remote_.begin(), remote_.end(), p) == remote_.end()) remote_.push_back(p);
}

// ---- sites ----

// Output specs one colocated callable keeps, by input signature (core/cache.h). Fixed
// (docs/performance.md, "Caches"); a signature evicted or cleared is learned again by its
// next call.
constexpr size_t kOutSpecCapacity = 64;
struct SignatureHash {
  size_t operator()(const Site::Signature& s) const {
    size_t h = s.in.size();
    for (const Spec& spec : s.in) h = tessel::detail::hash_aval(h, Aval(spec.shape, spec.dtype));
    for (int d : s.devices) h = h * 31 + size_t(d);
    return h;
  }
};
struct OutSpecCache {
  tessel::detail::Cache<Site::Signature, Site::Known, SignatureHash> cache{"colocated.out_specs", kOutSpecCapacity};
};

Site::Site() : known(std::make_unique<OutSpecCache>()) {}
Site::~Site() = default;

std::shared_ptr<Site> Site::specialized(const Specialization& more) const {
  auto twice = [&](const char* field) {
    throw ValueError(target.display + ": specialize: " + field +
                     " was specialized already; each of in_specs, out_specs_fn and devices may be given once");
  };
  auto s = std::make_shared<Site>();
  s->target = target;
  s->spec = spec;
  if (more.in_specs) {
    if (spec.in_specs) twice("in_specs");
    s->spec.in_specs = more.in_specs;
  }
  if (more.out_specs_fn) {
    if (spec.out_specs_fn) twice("out_specs_fn");
    s->spec.out_specs_fn = more.out_specs_fn;
  }
  if (more.devices) {
    if (spec.devices) twice("devices");
    if (more.devices->empty()) throw ValueError(target.display + ": specialize: devices is empty; list the devices to run on");
    s->spec.devices = more.devices;
  }
  return s;
}

// ---- the call ----

namespace {

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

CallPlan plan_call(const Site& site, const std::vector<Array>& leaves) {
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
void write_call(ir::Writer& w, const CallPlan& c, const std::vector<std::string>& arg_structures,
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

// Known output specs: pending outputs now, filled by the hosts later.
Outputs call_async(const Site& site, const CallPlan& c, const std::vector<std::string>& arg_structures,
                   LocalThunk local, const Site::Known& known) {
  const Specs& out_specs = known.specs;
  std::vector<uint64_t> out_ids;
  if (!c.remote.empty())
    for (size_t j = 0; j < out_specs.size(); ++j) out_ids.push_back(ctl::new_id());
  std::vector<Array> outs;
  for (size_t j = 0; j < out_specs.size(); ++j)
    outs.push_back(make_pending(out_specs[j], c.remote, c.remote.empty() ? 0 : out_ids[j]));
  if (!c.remote.empty()) {
    ir::Writer w;
    w.count(out_ids.size());
    for (auto id : out_ids) w.u64(id);
    write_specs(w, out_specs);
    w.str(known.structure);
    write_call(w, c, arg_structures, site.target);
    ctl::post(c.remote, "colocated.call", w.bytes());
  }
  if (c.here) caller_queue().push(filling(std::move(local), outs, out_specs, known.structure, c.name));
  return {outs, known.structure};
}

// Unknown output specs: run synchronously on every host, learn the specs (kept for the
// next call), and bind the workers' results to ids.
Outputs call_learning(Site& site, const CallPlan& c, const std::vector<std::string>& arg_structures, LocalThunk local,
                      const Site::Signature& key) {
  std::vector<Array> results;
  std::optional<Specs> learned;
  std::string structure;
  if (c.here) {
    Outputs outs = run_sync(caller_queue(), std::move(local));
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

Outputs call(Site& site, const std::vector<Array>& leaves, const std::vector<std::string>& arg_structures,
             LocalThunk local, const ResultType& result) {
  const CallPlan c = plan_call(site, leaves);
  const Site::Signature key{c.in_specs, c.dev_ids};
  if (std::optional<Site::Known> known = known_outputs(site, c, key, result))
    return call_async(site, c, arg_structures, std::move(local), *known);
  return call_learning(site, c, arg_structures, std::move(local), key);
}

}  // namespace detail
}  // namespace tessel::colocated
