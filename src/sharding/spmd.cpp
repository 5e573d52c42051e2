// Running partitioned programs: partitioned executables cached per program and input
// layouts, and the SPMD launch (one task per mesh device, collectives through one hub per
// launch; on the driver of a single-controller job, the workers' parts by message).
#include <cstring>
#include <map>
#include <mutex>

#include "compiler/executable.h"
#include "compiler/fusion.h"
#include "compiler/passes.h"
#include "core/lifetime.h"
#include "core/mesh_impl.h"
#include "core/log.h"
#include "distributed/controller.h"
#include "ir/serialize.h"
#include "ir/trace.h"
#include "runtime/launch.h"
#include "runtime/spmd_context.h"
#include "sharding/partitioner.h"
#include "sharding/placement.h"
#include "sharding/spmd.h"
#include "tessel/ops.h"

namespace tessel {
namespace detail {
namespace {

using sharding::Layout;

DeviceImpl* impl_of(const Device& d) { return d.impl(); }

// ---- partitioned executables ----

struct SpmdExecutable {
  sharding::Partitioned part;
  std::vector<Aval> global_out, local_out;
  /// The per-device executable, built on first use: a driver whose devices are not in the
  /// mesh never compiles it.
  const std::shared_ptr<compiler::Executable>& executable() const {
    std::call_once(exe_once, [this] {
      exe = std::make_shared<compiler::Executable>(std::make_shared<const ir::Program>(compiler::fuse(*part.program)));
    });
    return exe;
  }

 private:
  mutable std::once_flag exe_once;
  mutable std::shared_ptr<compiler::Executable> exe;
};

struct ProgramEntry {
  std::weak_ptr<const ir::Program> program;
  std::shared_ptr<const ir::Program> simplified;
  std::map<std::string, std::shared_ptr<const SpmdExecutable>> by_layouts;
};

std::mutex cache_mu;
std::map<const ir::Program*, ProgramEntry>& program_cache() {
  static auto* c = new std::map<const ir::Program*, ProgramEntry>();
  return *c;
}

struct Prepared {
  std::shared_ptr<const SpmdExecutable> exe;
  std::vector<Array> args;  // laid out as the executable wants
};

Prepared prepare(const ir::ProgramRef& program, std::span<const Array> args_in) {
  const std::string& name = program->name;
  std::vector<Array> args(args_in.begin(), args_in.end());
  std::vector<std::optional<Mesh>> arg_meshes;
  for (const Array& a : args) {
    if (!a.valid()) throw ValueError(name + ": an argument is an empty Array; give it a value");
    if (auto* s = as_sharded(a)) {
      for (auto& b : s->shards())
        if (b) b->check_not_donated();
      arg_meshes.push_back(s->sharding().mesh());
    } else {
      arg_meshes.push_back(std::nullopt);
    }
  }
  std::shared_ptr<const ir::Program> simplified;
  {
    std::lock_guard lock(cache_mu);
    auto& cache = program_cache();
    auto it = cache.find(program.get());
    if (it == cache.end() || it->second.program.expired()) {
      std::erase_if(cache, [](const auto& kv) { return kv.second.program.expired(); });
      it = cache.insert_or_assign(program.get(), ProgramEntry{program, nullptr, {}}).first;
    }
    simplified = it->second.simplified;
  }
  if (!simplified) simplified = std::make_shared<const ir::Program>(compiler::simplify(*program));
  std::optional<Mesh> mesh = sharding::program_mesh(*simplified, arg_meshes, name);
  if (!mesh) {  // only self-partitioning equations that name no mesh: the default device
    DeviceImpl* dev = default_device();
    for (const Array& a : args)
      if (auto* c = as_concrete(a); c && c->committed) dev = c->device();
    mesh = Mesh({Device(dev)}, {}, {});
  }
  const auto& mesh_devices = mesh->devices();
  std::vector<std::optional<Layout>> known;
  std::string key;
  for (size_t i = 0; i < args.size(); ++i) {
    if (auto* s = as_sharded(args[i])) {
      known.push_back(sharding::layout_of(s->sharding(), size_t(args[i].ndim())));
      key += known.back()->to_string();
    } else {
      auto* c = as_concrete(args[i]);
      if (c && c->committed && std::find(mesh_devices.begin(), mesh_devices.end(), Device(c->device())) == mesh_devices.end())
        throw ValueError(name + ": argument " + std::to_string(i) + " is committed to cpu:" +
                         std::to_string(c->device()->id()) + ", which is not a device of the program's mesh " +
                         mesh->to_string() + "; device_put it onto the mesh (or onto one of its devices) first");
      known.push_back(std::nullopt);
      key += "?";
    }
    key += ";";
  }
  key += mesh->to_string();
  for (auto& d : mesh_devices) key += "," + std::to_string(d.id());
  std::shared_ptr<const SpmdExecutable> exe;
  {
    std::lock_guard lock(cache_mu);
    auto& entry = program_cache()[program.get()];
    entry.simplified = simplified;
    auto it = entry.by_layouts.find(key);
    if (it != entry.by_layouts.end()) exe = it->second;
  }
  if (!exe) {
    auto made = std::make_shared<SpmdExecutable>();
    std::vector<Layout> in_layouts = sharding::choose_input_layouts(*simplified, *mesh, known);
    made->part = sharding::partition(*simplified, *mesh, in_layouts);
    made->global_out = simplified->out_avals();
    made->local_out = made->part.program->out_avals();
    exe = made;
    std::lock_guard lock(cache_mu);
    program_cache()[program.get()].by_layouts[key] = exe;
  }
  for (size_t i = 0; i < args.size(); ++i)
    if (!as_sharded(args[i])) args[i] = split_array(args[i], sharding::sharding_of_layout(*mesh, exe->part.in_layouts[i]));
  return Prepared{exe, std::move(args)};
}

// ---- single-controller: launches on workers' devices ----

// The key under which workers keep a program the driver sent them (sent once per worker).
struct ShippedProgram {
  std::weak_ptr<const ir::Program> program;
  uint64_t key = 0;
  std::vector<int> sent_to;
};

// On the driver: asks the workers owning devices of `mesh` to run `program` on the
// arrays `args` name and to keep the results under fresh ids, which `outs` now carry.
void ship_launch(const ir::ProgramRef& program, const Mesh& mesh, std::span<const Array> args,
                 std::vector<std::shared_ptr<ConcreteArray>>& outs) {
  namespace ctl = distributed::controller;
  std::vector<int> procs = ctl::remote_processes(mesh.devices());
  if (procs.empty()) return;
  static std::mutex mu;
  static auto& shipped = make_global<std::map<const ir::Program*, ShippedProgram>>();  // core/lifetime.h
  std::string bytes;
  uint64_t key;
  {
    std::lock_guard lock(mu);
    auto it = shipped.find(program.get());
    if (it == shipped.end() || it->second.program.expired()) {
      std::erase_if(shipped, [](const auto& kv) { return kv.second.program.expired(); });
      it = shipped.insert_or_assign(program.get(), ShippedProgram{program, ctl::new_id(), {}}).first;
    }
    key = it->second.key;
    for (int p : procs)
      if (std::find(it->second.sent_to.begin(), it->second.sent_to.end(), p) == it->second.sent_to.end()) {
        if (bytes.empty()) bytes = ir::serialize(*program);  // names a closure that cannot travel
        it->second.sent_to.push_back(p);
      }
  }
  ir::Writer w;
  w.u64(key);
  w.str(bytes);
  w.count(args.size());
  for (const Array& a : args) w.u64(ctl::remote_id(a, program->name));
  w.count(outs.size());
  for (auto& o : outs) {
    o->remote = ctl::make_ref(ctl::new_id(), procs);
    w.u64(o->remote->id);
  }
  ctl::post(procs, "program.run", w.bytes());
}

// across processes through the hub (shared memory within a process, MPI across).
std::vector<Array> launch(const ir::ProgramRef& program, const SpmdExecutable& x, std::span<const Array> args) {
  const Mesh& mesh = x.part.mesh;
  int n = int(mesh.size());
  std::vector<distributed::Participant> participants;
  for (const Device& d : mesh.devices()) participants.push_back({d.process_index(), d.id()});
  auto hub = distributed::make_hub(participants, process_index());
  auto contexts = std::make_shared<std::vector<SpmdContext>>();
  for (int pos = 0; pos < n; ++pos) contexts->push_back(SpmdContext{mesh, pos, hub.get()});
  size_t nout = x.local_out.size();
  std::vector<std::vector<std::shared_ptr<Buffer>>> out_bufs(nout);
  // Every device's part is queued under one lock: two launches sharing devices reach their
  // collectives in the same order on every device.
  static std::mutex launch_mu;
  std::lock_guard lock(launch_mu);
  for (int pos = 0; pos < n; ++pos) {
    DeviceImpl* dev = impl_of(mesh.devices()[size_t(pos)]);
    if (!dev->is_local()) {  // another process runs this part
      for (size_t j = 0; j < nout; ++j) out_bufs[j].push_back(nullptr);
      continue;
    }
    std::vector<std::shared_ptr<Buffer>> ins, outs;
    for (const Array& a : args) ins.push_back(as_concrete(a)->shards()[size_t(pos)]);
    for (size_t j = 0; j < nout; ++j) {
      outs.push_back(Buffer::allocate(x.local_out[j].nbytes(), dev, &x.local_out[j]));
      out_bufs[j].push_back(outs.back());
    }
    dev->stream().enqueue([exe = x.executable(), hub, contexts, pos, dev, ins = std::move(ins), outs = std::move(outs)] {
      try {
        std::vector<const void*> ip;
        std::vector<void*> op;
        for (auto& b : ins) {
          b->wait();
          ip.push_back(b->data());
        }
        for (auto& b : outs) op.push_back(b->data());
        ScopedSpmdContext scope(&(*contexts)[size_t(pos)]);
        exe->run_sync(ip, op, dev);
        for (auto& b : outs) b->set_ready();
      } catch (...) {
        hub->abort(pos, std::current_exception());
        for (auto& b : outs) b->set_error(std::current_exception());
      }
    });
  }
  TESSEL_DEBUG_LOG("run partitioned '" + x.part.program->name + "' on " + mesh.to_string());
  std::vector<std::shared_ptr<ConcreteArray>> outs;
  for (size_t j = 0; j < nout; ++j) {
    // A launch on one device without mesh axes (single-device arrays) keeps that layout.
    Sharding s = mesh.axis_names().empty() && n == 1 ? SingleDeviceSharding(mesh.devices()[0])
                                                     : sharding::sharding_of_layout(mesh, x.part.out_layouts[j]);
    outs.push_back(std::make_shared<ConcreteArray>(x.global_out[j], std::move(s), x.local_out[j], std::move(out_bufs[j])));
  }
  // Still under launch_mu: workers see launches in the order this process queued them.
  if (distributed::controller::is_driver()) ship_launch(program, mesh, args, outs);
  return std::vector<Array>(outs.begin(), outs.end());
}

}  // namespace

std::vector<Array> spmd_run_program(const ir::ProgramRef& program, std::span<const Array> args) {
  Prepared p = prepare(program, args);
  return launch(program, *p.exe, p.args);
}

std::string spmd_program_text(const ir::ProgramRef& program, std::span<const Array> args) {
  Prepared p = prepare(program, args);
  return "# partitioned over " + p.exe->part.mesh.to_string() + "\n" + p.exe->executable()->to_text();
}

// One primitive on sharded arrays: a one-equation program, cached by signature.
std::vector<Array> spmd_eval_primitive(const ir::Primitive& prim, std::span<const Array> ins, const ir::Params& params) {
  struct Entry {
    const ir::Primitive* prim;
    ir::Params params;
    std::vector<Aval> avals;
    ir::ProgramRef program;
  };
  static std::mutex mu;
  static auto& cache = make_global<std::vector<Entry>>();  // used by work still queued at exit (core/lifetime.h)
  std::vector<Aval> avals;
  for (const Array& a : ins) avals.push_back(a.aval());
  ir::ProgramRef program;
  {
    std::lock_guard lock(mu);
    for (auto& e : cache)
      if (e.prim == &prim && e.avals == avals && e.params == params) program = e.program;
  }
  if (!program) {
    program = std::make_shared<const ir::Program>(trace_to_program(
        [&](std::span<const Array> xs) { return detail::bind(prim, xs, params); }, avals, prim.name));
    std::lock_guard lock(mu);
    if (cache.size() >= 256) cache.erase(cache.begin());
    cache.push_back(Entry{&prim, params, avals, program});
  }
  return spmd_run_program(program, ins);
}


}  // namespace detail
}  // namespace tessel
