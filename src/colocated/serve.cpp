// The worker side of colocated calls: the objects a worker holds, and the handlers of the
// call, discover, bind and delete_object messages (registered at static initialization).
#include <memory>
#include <mutex>
#include <unordered_map>

#include "colocated/colocated_impl.h"
#include "colocated/serial_queue.h"
#include "distributed/controller.h"
#include "ir/serialize.h"

namespace tessel::colocated::detail {

namespace ctl = distributed::controller;

namespace {

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

}  // namespace tessel::colocated::detail
