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

// A call's target as a worker resolved it in its registry: the registered function, or the
// method and the class of an object (with its id and constructor arguments' bytes).
struct ResolvedTarget {
  RemoteFn fn;
  RemoteFactory factory;
  RemoteMethod method;
  uint64_t object_id = 0;
  std::string ctor;
};

ResolvedTarget read_target(ir::Reader& r) {
  ResolvedTarget t;
  std::string name = r.str();
  const bool is_method = r.boolean();
  Registry& reg = registry();
  if (!is_method) {
    std::lock_guard lock(reg.mu);
    auto it = reg.functions.find(name);
    if (it == reg.functions.end()) throw ValueError("colocated: no function '" + name + "' is registered in this worker");
    t.fn = it->second;
    return t;
  }
  t.object_id = r.u64();
  std::string cls = r.str();
  t.ctor = r.str();
  std::lock_guard lock(reg.mu);
  auto c = reg.classes.find(cls);
  auto m = reg.methods.find(name);
  if (c == reg.classes.end()) throw ValueError("colocated: no class '" + cls + "' is registered in this worker");
  if (m == reg.methods.end()) throw ValueError("colocated: no method '" + name + "' is registered in this worker");
  t.factory = c->second;
  t.method = m->second;
  return t;
}

// What a worker runs for one call: the registered function, or the method of the object
// (made on first use, from its constructor arguments' bytes).
std::function<Outputs()> bind_target(const ResolvedTarget& t, std::vector<Array> leaves,
                                     std::vector<std::string> structures) {
  if (t.fn)
    return [fn = t.fn, leaves = std::move(leaves), structures = std::move(structures)] { return fn(leaves, structures); };
  std::shared_ptr<RemoteObject> obj;
  {
    WorkerState& w = worker();
    std::lock_guard lock(w.mu);
    auto& slot = w.objects[t.object_id];
    if (!slot) slot = std::make_shared<RemoteObject>();
    obj = slot;
  }
  return [obj, factory = t.factory, method = t.method, ctor = t.ctor, leaves = std::move(leaves),
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

std::function<Outputs()> read_remote_target(ir::Reader& r, std::vector<Array> leaves,
                                            std::vector<std::string> structures) {
  return bind_target(read_target(r), std::move(leaves), std::move(structures));
}

// The frame of a prepared call (call.cpp), kept under its id until the driver forgets it:
// the outputs' specs and structure, the arguments' structures, the resolved target. A frame
// that cannot be resolved (an unregistered name) keeps its error, which every call using it
// gives its outputs.
struct CallFrame {
  std::shared_ptr<const Expected> expected;
  std::vector<OutputTemplate> outputs;
  std::vector<std::string> arg_structures;
  ResolvedTarget target;
  std::exception_ptr error;
};

std::shared_ptr<const CallFrame> read_frame(std::string_view bytes) {
  auto f = std::make_shared<CallFrame>();
  ir::Reader r(bytes, "colocated call");
  Expected e;
  e.specs = read_specs(r);
  // An output on one device of this process takes that device's own sharding, which a
  // value computed there carries: checking a result is then a pointer comparison.
  for (Spec& s : e.specs)
    if (const auto& devs = s.sharding.device_set(); devs.size() == 1 && devs[0].impl()->is_local())
      if (const Sharding& own = devs[0].impl()->sharding(); own == s.sharding) s.sharding = own;
  e.structure = r.str();
  e.name = "colocated call";
  for (const Spec& s : e.specs) f->outputs.emplace_back(s);
  f->expected = std::make_shared<const Expected>(std::move(e));
  f->arg_structures.resize(r.count(1));
  for (auto& s : f->arg_structures) s = r.str();
  try {
    f->target = read_target(r);
  } catch (...) {
    f->error = std::current_exception();
  }
  return f;
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
  // [frame id][frame bytes: with the first call of a prepared call][caller][output ids][input ids]
  ctl::register_handler("colocated.call", [](ir::Reader& r, ctl::Reply) {
    const uint64_t frame_id = r.u64();
    if (std::string_view bytes = r.raw(r.count(1)); !bytes.empty()) ctl::keep(frame_id, read_frame(bytes));
    // The frame this thread used last: calls of one signature come in runs, and then need
    // no lookup in the table. Ids are never reused, so a hit is the right frame (a forgotten
    // one lives on here only until this thread serves another). Never freed: exit handlers
    // may still serve.
    struct LastFrame {
      uint64_t id = 0;
      std::shared_ptr<const CallFrame> frame;
    };
    thread_local auto* last = new LastFrame();
    if (last->id != frame_id) {
      last->frame = ctl::kept_as<CallFrame>(frame_id);
      last->id = last->frame ? frame_id : 0;
    }
    const std::shared_ptr<const CallFrame>& frame = last->frame;
    if (!frame) throw Error("internal: worker has no colocated call frame " + std::to_string(frame_id));
    const uint64_t caller = r.u64();
    // The call's ids and input leaves, in vectors this thread keeps (no allocation per
    // call); emptied when the handler ends, so no array outlives its call here.
    thread_local std::vector<uint64_t> out_ids;
    thread_local std::vector<Array> leaves;
    struct Clear {
      ~Clear() { out_ids.clear(), leaves.clear(); }
    } clear_at_end;
    out_ids.resize(r.count(8));
    for (auto& id : out_ids) id = r.u64();
    if (out_ids.size() != frame->outputs.size())
      r.fail(std::to_string(out_ids.size()) + " result ids for " + std::to_string(frame->outputs.size()) + " results");
    // Outputs that later messages may name before the call ran: kept under their ids now,
    // filled when it ran.
    std::vector<Array> pending;
    auto store_pending = [&] {
      pending.reserve(out_ids.size());
      for (size_t j = 0; j < out_ids.size(); ++j) {
        pending.push_back(make_pending(frame->outputs[j], {}, 0));
        ctl::store(out_ids[j], pending.back());
      }
    };
    try {
      if (frame->error) std::rethrow_exception(frame->error);
      leaves.resize(r.count(8));
      for (auto& a : leaves) a = ctl::lookup(r.u64(), "colocated call");
      SerialQueue& q = remote_caller_queue(caller);
      if (frame->target.fn && q.claim_if_idle()) {
        // An idle queue runs a function on this thread while another serves: no hand-over,
        // and nothing packaged for a queue. No message behind this one is read before it
        // ran, unless another thread takes over serving: only then are pending outputs
        // kept first (`publish`, on that thread); otherwise the results are kept as they
        // are. Each closure holds one or two references (no std::function allocates for
        // them); they all end before this handler returns.
        struct Direct {
          const CallFrame& frame;
          const std::vector<Array>& leaves;
          const std::vector<uint64_t>& out_ids;
          SerialQueue& queue;
          std::mutex mu;
          bool ran = false, published = false;
          std::vector<Array> pending;
        } d{*frame, leaves, out_ids, q, {}, false, false, {}};
        const std::function<void()> publish = [&d] {
          std::lock_guard lock(d.mu);
          if (d.ran) return;
          for (size_t j = 0; j < d.out_ids.size(); ++j) {
            d.pending.push_back(make_pending(d.frame.outputs[j], {}, 0));
            ctl::store(d.out_ids[j], d.pending.back());
          }
          d.published = true;
        };
        const std::function<Outputs()> run = [&d] { return d.frame.target.fn(d.leaves, d.frame.arg_structures); };
        const std::function<void()> task = [&d, &run] {
          std::exception_ptr error;
          std::vector<Array> results = run_checked(run, *d.frame.expected, error);
          std::lock_guard lock(d.mu);
          d.ran = true;
          if (d.published) fill(d.pending, std::move(results), error);
          else store_results(d.frame.outputs, d.out_ids, std::move(results), error);
        };
        ctl::run_while_others_serve([&d, &task] { d.queue.run_claimed(task); }, publish);
        return;
      }
      store_pending();
      std::function<Outputs()> run =
          frame->target.fn ? [frame, leaves = std::move(leaves)] { return frame->target.fn(leaves, frame->arg_structures); }
                           : bind_target(frame->target, std::move(leaves), frame->arg_structures);
      // An idle queue runs the call on this thread while another serves: no hand-over.
      auto task = filling(std::move(run), pending, frame->expected);
      if (q.claim_if_idle()) ctl::run_while_others_serve([&] { q.run_claimed(task); });
      else q.push(std::move(task));
    } catch (...) {
      if (pending.empty()) store_results(frame->outputs, out_ids, {}, std::current_exception());
      else fill(pending, {}, std::current_exception());
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
