// Running partitioned programs: partitioned executables cached per program and input
// layouts, and the SPMD launch (one task per mesh device, collectives through one hub per
// launch; on the driver of a single-controller job, the workers' parts by message).
#include <cstring>
#include <functional>
#include <map>
#include <mutex>

#include "compiler/executable.h"
#include "compiler/fusion.h"
#include "compiler/passes.h"
#include "core/cache.h"
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

// ---- partitioned executables ----

/// A partitioned program worth one executable per device: it depends on the device's place
/// (axis_index: halo windows, masks) and works on values large enough that testing
/// positions at every point costs more than compiling once per device.
bool worth_specializing(const ir::Program& p, const Mesh& mesh) {
  constexpr int64_t kMinElements = int64_t(1) << 16;
  if (mesh.size() < 2) return false;
  bool place = false, large = false;
  std::function<void(const ir::Program&)> visit = [&](const ir::Program& q) {
    for (const ir::Equation& e : q.eqns) {
      place |= e.prim->name == "axis_index";
      for (const ir::Var& v : e.outputs) large |= v->aval.size() >= kMinElements;
      ir::for_each_program(e.params, visit);
    }
  };
  visit(p);
  return place && large;
}

struct SpmdExecutable {
  sharding::Partitioned part;
  std::vector<Aval> global_out, local_out;
  /// What the partitioner was given, to lower the program again for one device.
  std::shared_ptr<const ir::Program> source;
  bool per_device = false;
  /// Per input: the donated argument's number, or -1 (jit's donate_argnums). Used by the
  /// launch on one local device, which runs the executable with its buffer plan.
  std::vector<int> donated;

  /// The executable of the program every device runs, built on first use: a driver whose
  /// devices are not in the mesh never compiles it.
  const std::shared_ptr<compiler::Executable>& executable() const {
    std::call_once(exe_once, [this] { exe = compile(part, donated); });
    return exe;
  }
  /// The executable the device at mesh position `pos` runs: its own specialization
  /// (sharding::partition with a position) when `per_device`.
  std::shared_ptr<compiler::Executable> executable_for(int pos) const {
    if (!per_device) return executable();
    std::lock_guard lock(mu);
    if (by_position.empty()) by_position.resize(part.mesh.size());
    auto& x = by_position[size_t(pos)];
    if (!x) {
      sharding::Partitioned mine = sharding::partition(*source, part.mesh, part.in_layouts, pos);
      if (mine.program->out_avals() != local_out || mine.out_layouts != part.out_layouts)
        throw Error("internal: the program lowered for mesh position " + std::to_string(pos) + " of '" +
                    source->name + "' returns other pieces than the one every device runs");
      x = compile(mine);
    }
    return x;
  }

 private:
  static std::shared_ptr<compiler::Executable> compile(const sharding::Partitioned& p, std::vector<int> donated = {}) {
    return std::make_shared<compiler::Executable>(std::make_shared<const ir::Program>(compiler::fuse(*p.program)),
                                                  std::move(donated));
  }
  mutable std::once_flag exe_once;
  mutable std::shared_ptr<compiler::Executable> exe;
  mutable std::mutex mu;
  mutable std::vector<std::shared_ptr<compiler::Executable>> by_position;
};

// Simplified programs, and partitioned executables by program and argument layouts, keyed
// by program identity (core/cache.h). Never destroyed: work queued at exit may launch.
constexpr size_t kSpmdCacheCapacity = 256;
using ProgramKey = IdentityKey<ir::Program>;
struct LayoutKey {
  ProgramKey program;
  std::string layouts;  // per argument, then the mesh and its devices
  bool operator==(const LayoutKey&) const = default;
};
struct HashLayoutKey {
  size_t operator()(const LayoutKey& k) const { return k.program.hash() ^ std::hash<std::string>()(k.layouts); }
};
auto& simplified_cache() {
  static auto* c = new Cache<ProgramKey, std::shared_ptr<const ir::Program>>("spmd.simplified", kSpmdCacheCapacity);
  return *c;
}
auto& partitioned_cache() {
  static auto* c = new Cache<LayoutKey, std::shared_ptr<const SpmdExecutable>, HashLayoutKey>("spmd.partitioned",
                                                                                              kSpmdCacheCapacity);
  return *c;
}

struct Prepared {
  std::shared_ptr<const SpmdExecutable> exe;
  std::vector<Array> args;  // laid out as the executable wants
};

Prepared prepare(const ir::ProgramRef& program, std::span<const Array> args_in, std::span<const int> donated = {}) {
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
  const ProgramKey program_key(program);
  std::shared_ptr<const ir::Program> simplified;
  if (auto hit = simplified_cache().find(program_key)) {
    simplified = *hit;
  } else {
    // Entries of programs that are gone would only wait for eviction.
    simplified_cache().erase_if([](const ProgramKey& k, const auto&) { return k.expired(); });
    partitioned_cache().erase_if([](const LayoutKey& k, const auto&) { return k.program.expired(); });
    simplified = simplified_cache().insert(program_key,
                                           std::make_shared<const ir::Program>(compiler::simplify(*program)));
  }
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
  if (!donated.empty()) {
    key += ";donated";
    for (int d : donated) key += "," + std::to_string(d);
  }
  LayoutKey layout_key{program_key, std::move(key)};
  std::shared_ptr<const SpmdExecutable> exe;
  if (auto hit = partitioned_cache().find(layout_key)) exe = *hit;
  if (!exe) {
    auto made = std::make_shared<SpmdExecutable>();
    std::vector<Layout> in_layouts = sharding::choose_input_layouts(*simplified, *mesh, known);
    made->part = sharding::partition(*simplified, *mesh, in_layouts);
    made->global_out = simplified->out_avals();
    made->local_out = made->part.program->out_avals();
    made->source = simplified;
    made->per_device = worth_specializing(*made->part.program, *mesh);
    if (made->part.program->invars.size() == donated.size()) made->donated.assign(donated.begin(), donated.end());
    exe = partitioned_cache().insert(std::move(layout_key), std::move(made));
  }
  for (size_t i = 0; i < args.size(); ++i) {
    if (as_sharded(args[i])) continue;
    // A value on the one device of a one-device mesh is its own piece: no copy.
    if (mesh_devices.size() == 1 && as_concrete(args[i])->device() == mesh_devices[0].impl()) continue;
    args[i] = split_array(args[i], sharding::sharding_of_layout(*mesh, exe->part.in_layouts[i]));
  }
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
    static uint64_t launches = 0;
    auto it = shipped.find(program.get());
    const bool fresh = it == shipped.end() || it->second.program.expired();
    if (fresh || ++launches % 256 == 0) {
      // Programs shipped before and gone since (their jitted function or eager-op cache entry
      // died): their workers forget them, with the next message each gets. Looked for with
      // every new program, and every 256 launches of known ones.
      std::erase_if(shipped, [](const auto& kv) {
        if (!kv.second.program.expired()) return false;
        ctl::forget(kv.second.sent_to, kv.second.key);
        return true;
      });
      it = fresh ? shipped.insert_or_assign(program.get(), ShippedProgram{program, ctl::new_id(), {}}).first
                 : shipped.find(program.get());
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

// A program that partitions itself over a mesh of one local device without axes (one that
// only has host callbacks or comm calls, say) is the program every device would run: it
// runs as an ordinary executable with the partitioned program's context installed, so
// donated arguments, in-place steps and buffer reuse apply as they do to any jit (no copy
// of a donated argument before a scatter, no output allocated before the run starts).
std::vector<Array> launch_on_one_device(const SpmdExecutable& x, std::span<const Array> args) {
  struct Scope {
    std::shared_ptr<distributed::CollectiveHub> hub;
    SpmdContext context;
  };
  const Mesh& mesh = x.part.mesh;
  DeviceImpl* dev = mesh.devices()[0].impl();
  auto scope = std::make_shared<Scope>();
  scope->hub = distributed::make_in_process_hub(1);
  scope->context = SpmdContext{mesh, 0, scope->hub.get()};
  TESSEL_DEBUG_LOG("run partitioned '" + x.part.program->name + "' on " + mesh.to_string() + " as one executable");
  // An executable reads an argument's one buffer: an argument laid out over the one-device
  // mesh (a value a single-controller driver sent to a worker, say) runs as its only piece.
  std::vector<Array> plain;
  for (const Array& a : args) {
    const ConcreteArray* c = as_concrete(a);
    const bool laid_out = c && !c->buffer() && c->shards().size() == 1 && c->shards()[0];
    plain.push_back(laid_out ? make_concrete(c->aval, dev, c->shards()[0], /*committed=*/true) : a);
  }
  // Outputs are committed to the device, as a launch's laid-out results are.
  return x.executable()->run(plain, {.device = dev,
                                    .context = std::shared_ptr<const SpmdContext>(scope, &scope->context),
                                    .commit_outputs = true});
}


// across processes through the hub (shared memory within a process, MPI across).
std::vector<Array> launch(const ir::ProgramRef& program, const SpmdExecutable& x, std::span<const Array> args) {
  const Mesh& mesh = x.part.mesh;
  int n = int(mesh.size());
  if (n == 1 && mesh.axis_names().empty() && mesh.devices()[0].impl()->is_local())
    return launch_on_one_device(x, args);
  // A driver whose devices are not in the mesh runs no part: no hub, no contexts.
  bool any_local = false;
  for (const Device& d : mesh.devices()) any_local |= d.impl()->is_local();
  std::shared_ptr<distributed::CollectiveHub> hub;
  auto contexts = std::make_shared<std::vector<SpmdContext>>();
  if (any_local) {
    std::vector<distributed::Participant> participants;
    for (const Device& d : mesh.devices()) participants.push_back({d.process_index(), d.id()});
    hub = distributed::make_hub(participants, process_index());
    for (int pos = 0; pos < n; ++pos) contexts->push_back(SpmdContext{mesh, pos, hub.get()});
  }
  size_t nout = x.local_out.size();
  std::vector<std::vector<std::shared_ptr<Buffer>>> out_bufs(nout);
  // Every device's part is queued under one lock: two launches sharing devices reach their
  // collectives in the same order on every device.
  static std::mutex launch_mu;
  std::lock_guard lock(launch_mu);
  for (int pos = 0; pos < n; ++pos) {
    DeviceImpl* dev = mesh.devices()[size_t(pos)].impl();
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
    dev->stream().enqueue([exe = x.executable_for(pos), hub, contexts, pos, dev, ins = std::move(ins), outs = std::move(outs)] {
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

std::vector<Array> spmd_run_program(const ir::ProgramRef& program, std::span<const Array> args,
                                    std::span<const int> donated) {
  Prepared p = prepare(program, args, donated);
  return launch(program, *p.exe, p.args);
}

namespace {

// The bytes a collective equation moves per device (its primitive's comm_bytes rule).
int64_t equation_comm_bytes(const ir::Equation& e) {
  std::vector<Aval> ins, outs;
  for (auto& a : e.inputs) ins.push_back(a.aval());
  for (auto& v : e.outputs) outs.push_back(v->aval);
  return e.prim->comm_bytes(ins, outs, e.params);
}

// Counts the collectives of `p` and of its nested programs (a loop body's once) and adds
// up their bytes per device.
void count_collectives(const ir::Program& p, int64_t& count, int64_t& bytes) {
  for (const ir::Equation& e : p.eqns) {
    if (e.prim && e.prim->comm_bytes) {
      ++count;
      bytes += equation_comm_bytes(e);
    }
    ir::for_each_program(e.params, [&](const ir::Program& q) { count_collectives(q, count, bytes); });
  }
}

}  // namespace

std::string spmd_program_text(const ir::ProgramRef& program, std::span<const Array> args,
                              std::span<const int> donated) {
  Prepared p = prepare(program, args, donated);
  // Compiling builds what this process's devices run; with a lowering per device, the text
  // is the first local device's (the program every device would run is never built then).
  std::shared_ptr<compiler::Executable> shown;
  int shown_pos = -1;
  if (p.exe->per_device)
    for (int pos = 0; pos < int(p.exe->part.mesh.size()); ++pos)
      if (p.exe->part.mesh.devices()[size_t(pos)].impl()->is_local()) {
        std::shared_ptr<compiler::Executable> mine = p.exe->executable_for(pos);
        if (!shown) shown = mine, shown_pos = pos;
      }
  if (!shown) shown = p.exe->executable();
  const compiler::Executable& exe = *shown;
  int64_t count = 0, bytes = 0;
  count_collectives(exe.program(), count, bytes);
  std::string summary = count == 0 ? "# no collectives: nothing moves between devices\n"
                                   : "# " + std::to_string(count) + (count == 1 ? " collective moves " : " collectives move ") +
                                         bytes_text(bytes) + (bytes >= 1024 ? " (" + std::to_string(bytes) + " bytes)" : "") +
                                         " per device\n";
  ir::EquationNote note = [](const ir::Equation& e) -> std::string {
    if (!e.prim->comm_bytes) return "";
    return "moves " + bytes_text(equation_comm_bytes(e)) + " per device";
  };
  const std::string specialized =
      !p.exe->per_device ? ""
      : "# each device runs this program lowered for its place in the mesh: window starts and halo rows are "
        "constants there" +
            (shown_pos >= 0 ? " (shown: the device at mesh position " + std::to_string(shown_pos) + ")" : std::string()) +
            "\n";
  return "# partitioned over " + p.exe->part.mesh.to_string() + "\n" + summary + specialized + exe.to_text(note);
}

// One primitive on sharded arrays: a one-equation program, cached by signature.
std::vector<Array> spmd_eval_primitive(const ir::Primitive& prim, std::span<const Array> ins, const ir::Params& params) {
  struct Entry {
    const ir::Primitive* prim;
    ir::Params params;
    std::vector<Aval> avals;
  };
  struct SameEntry {
    bool operator()(const Entry& a, const Entry& b) const {
      return a.prim == b.prim && a.avals == b.avals && a.params == b.params;
    }
  };
  struct HashEntry {
    size_t operator()(const Entry& e) const {
      size_t h = std::hash<const void*>()(e.prim) ^ e.params.hash();
      for (const Aval& av : e.avals) h = hash_aval(h, av);
      return h;
    }
  };
  // Never destroyed: used by work still queued at exit (core/lifetime.h).
  static auto* cache = new Cache<Entry, ir::ProgramRef, HashEntry, SameEntry>("spmd.primitive_programs",
                                                                            kSpmdCacheCapacity);
  Entry key{&prim, params, {}};
  for (const Array& a : ins) key.avals.push_back(a.aval());
  ir::ProgramRef program;
  if (auto hit = cache->find(key)) program = *hit;
  if (!program) {
    program = std::make_shared<const ir::Program>(trace_to_program(
        [&](std::span<const Array> xs) { return detail::bind(prim, xs, params); }, key.avals, prim.name));
    program = cache->insert(std::move(key), program);
  }
  return spmd_run_program(program, ins);
}


}  // namespace detail
}  // namespace tessel
