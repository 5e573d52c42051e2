// Running partitioned programs: the SPMD launch (one task per mesh device, collectives
// through one hub per launch), jit and eager dispatch of sharded arrays, device_put to a
// sharding, assembling and splitting arrays, and the sharding_constraint primitive.
#include <cstring>
#include <map>
#include <mutex>

#include "compiler/executable.h"
#include "compiler/fusion.h"
#include "compiler/passes.h"
#include "core/cache.h"
#include "core/lifetime.h"
#include "core/log.h"
#include "distributed/controller.h"
#include "ir/serialize.h"
#include "ir/trace.h"
#include "runtime/launch.h"
#include "runtime/spmd_context.h"
#include "runtime/spmd_dispatch.h"
#include "sharding/mesh_impl.h"
#include "sharding/partitioner.h"
#include "tessel/ops.h"

namespace tessel {
namespace detail {
namespace {

using sharding::Layout;

// Copies the block of `block` elements per dimension from `src` (shape src_shape, starting
// at src_start) to `dst` (shape dst_shape, starting at dst_start); row-major, innermost
// dimension by memcpy.
void copy_block(const char* src, const Shape& src_shape, const Shape& src_start, char* dst, const Shape& dst_shape,
                const Shape& dst_start, const Shape& block, size_t item) {
  size_t rank = block.size();
  for (auto b : block)
    if (b <= 0) return;
  if (rank == 0) {
    std::memcpy(dst, src, item);
    return;
  }
  std::vector<int64_t> ss(rank, 1), ds(rank, 1);
  for (size_t d = rank - 1; d > 0; --d) {
    ss[d - 1] = ss[d] * src_shape[d];
    ds[d - 1] = ds[d] * dst_shape[d];
  }
  size_t row = size_t(block[rank - 1]) * item;
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < rank; ++d) rows *= block[d];
  std::vector<int64_t> idx(rank, 0);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t so = 0, dof = 0;
    for (size_t d = 0; d < rank; ++d) {
      so += (src_start[d] + idx[d]) * ss[d];
      dof += (dst_start[d] + idx[d]) * ds[d];
    }
    std::memcpy(dst + dof * int64_t(item), src + so * int64_t(item), row);
    for (size_t d = rank - 1; d-- > 0;) {
      if (++idx[d] < block[d]) break;
      idx[d] = 0;
    }
  }
}

DeviceImpl* impl_of(const Device& d) { return d.impl(); }

// On the driver of a single-controller job: sends the value of `x` to the workers that own
// devices of `out`'s sharding; each keeps its own pieces under a fresh id.
void ship_pieces(const Array& x, ShardedArray& out) {
  namespace ctl = distributed::controller;
  std::vector<int> procs = ctl::remote_processes(out.sharding.device_set());
  if (procs.empty()) return;
  const uint64_t id = ctl::new_id();
  ir::Writer w;
  w.u64(id);
  ir::write_sharding(w, out.sharding);
  ir::write_array(w, x);
  ctl::post(procs, "array.put", w.bytes());
  out.remote = ctl::make_ref(id, std::move(procs));
}

// The pieces of a single-device array laid out by a named sharding (a copy per device;
// padding filled with zeros). Only the devices of this process get their piece: on a mesh
// that spans processes every process passes the same global value (multi-controller) and
// keeps its own pieces; the other devices' buffers stay null.
Array split_array(const Array& x, const Sharding& s) {
  ConcreteArray* src = require_concrete(x, "device_put");
  const Mesh& mesh = s.mesh();
  Shape local = s.shard_shape(x.shape());
  Aval local_aval(local, x.dtype(), x.weak_type());
  auto indices = s.device_indices(x.shape());
  std::vector<std::shared_ptr<Buffer>> shards;
  for (int pos = 0; pos < int(mesh.size()); ++pos) {
    DeviceImpl* dev = impl_of(mesh.devices()[size_t(pos)]);
    if (!dev->is_local()) {
      shards.push_back(nullptr);
      continue;
    }
    auto buf = Buffer::allocate(local_aval.nbytes(), dev, &local_aval);
    Shape start, block;
    for (auto& [b, e] : indices[size_t(pos)]) {
      start.push_back(b);
      block.push_back(e - b);
    }
    dev->stream().enqueue([in = src->buffer, buf, start, block, shape = x.shape(), local, item = itemsize(x.dtype())] {
      try {
        in->wait();
        if (buf->nbytes() == 0) return buf->set_ready();
        if (block != local) std::memset(buf->data(), 0, buf->nbytes());
        copy_block(static_cast<const char*>(in->data()), shape, start, static_cast<char*>(buf->data()), local,
                   Shape(local.size(), 0), block, item);
        buf->set_ready();
      } catch (...) {
        buf->set_error(std::current_exception());
      }
    });
    shards.push_back(std::move(buf));
  }
  auto out = std::make_shared<ShardedArray>(x.aval(), s, local_aval, std::move(shards));
  if (distributed::controller::is_driver()) ship_pieces(x, *out);
  return Array(std::move(out));
}

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

Prepared prepare(const ir::ProgramRef& program, std::span<const Array> args_in) {
  const std::string& name = program->name;
  std::vector<Array> args(args_in.begin(), args_in.end());
  std::vector<std::optional<Mesh>> arg_meshes;
  for (const Array& a : args) {
    if (!a.valid()) throw ValueError(name + ": an argument is an empty Array; give it a value");
    if (auto* s = as_sharded(a)) {
      for (auto& b : s->shards)
        if (b) b->check_not_donated();
      arg_meshes.push_back(s->sharding.mesh());
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
      if (auto* c = as_concrete(a); c && c->committed) dev = c->device;
    mesh = Mesh({Device(dev)}, {}, {});
  }
  const auto& mesh_devices = mesh->devices();
  std::vector<std::optional<Layout>> known;
  std::string key;
  for (size_t i = 0; i < args.size(); ++i) {
    if (auto* s = as_sharded(args[i])) {
      known.push_back(sharding::layout_of(s->sharding, size_t(args[i].ndim())));
      key += known.back()->to_string();
    } else {
      auto* c = as_concrete(args[i]);
      if (c && c->committed && std::find(mesh_devices.begin(), mesh_devices.end(), Device(c->device)) == mesh_devices.end())
        throw ValueError(name + ": argument " + std::to_string(i) + " is committed to cpu:" +
                         std::to_string(c->device->id()) + ", which is not a device of the program's mesh " +
                         mesh->to_string() + "; device_put it onto the mesh (or onto one of its devices) first");
      known.push_back(std::nullopt);
      key += "?";
    }
    key += ";";
  }
  key += mesh->to_string();
  for (auto& d : mesh_devices) key += "," + std::to_string(d.id());
  LayoutKey layout_key{program_key, std::move(key)};
  std::shared_ptr<const SpmdExecutable> exe;
  if (auto hit = partitioned_cache().find(layout_key)) exe = *hit;
  if (!exe) {
    auto made = std::make_shared<SpmdExecutable>();
    std::vector<Layout> in_layouts = sharding::choose_input_layouts(*simplified, *mesh, known);
    made->part = sharding::partition(*simplified, *mesh, in_layouts);
    made->global_out = simplified->out_avals();
    made->local_out = made->part.program->out_avals();
    exe = partitioned_cache().insert(std::move(layout_key), std::move(made));
  }
  for (size_t i = 0; i < args.size(); ++i)
    if (!as_sharded(args[i])) args[i] = split_array(args[i], sharding::sharding_of_layout(*mesh, exe->part.in_layouts[i]));
  return Prepared{exe, std::move(args)};
}

// ---- single-controller: launches on workers' devices ----

std::vector<Array> run_program(const ir::ProgramRef& program, std::span<const Array> args);

// The key under which workers keep a program the driver sent them (sent once per worker).
struct ShippedProgram {
  std::weak_ptr<const ir::Program> program;
  uint64_t key = 0;
  std::vector<int> sent_to;
};

// On the driver: asks the workers owning devices of `mesh` to run `program` on the
// arrays `args` name and to keep the results under fresh ids, which `outs` now carry.
void ship_launch(const ir::ProgramRef& program, const Mesh& mesh, std::span<const Array> args,
                 std::vector<std::shared_ptr<ShardedArray>>& outs) {
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

// On a worker: the programs the driver sent, by key.
std::map<uint64_t, ir::ProgramRef>& worker_programs() {
  static auto* m = new std::map<uint64_t, ir::ProgramRef>();
  return *m;
}

[[maybe_unused]] const bool handlers_registered = [] {
  namespace ctl = distributed::controller;
  ctl::register_handler("array.put", [](ir::Reader& r, ctl::Reply) {
    const uint64_t id = r.u64();
    try {
      Sharding s = ir::read_sharding(r);
      Array x = ir::read_array(r);
      ctl::store(id, plain_if_single_device(split_array(x, s)));
    } catch (...) {
      ctl::store_error(id, std::current_exception());
    }
  });
  ctl::register_handler("program.run", [](ir::Reader& r, ctl::Reply) {
    const uint64_t key = r.u64();
    std::string bytes = r.str();
    std::vector<uint64_t> in_ids(r.count(8)), out_ids;
    for (auto& id : in_ids) id = r.u64();
    out_ids.resize(r.count(8));
    for (auto& id : out_ids) id = r.u64();
    try {
      auto& programs = worker_programs();
      if (!bytes.empty()) programs[key] = std::make_shared<const ir::Program>(ir::deserialize(bytes));
      auto it = programs.find(key);
      if (it == programs.end()) throw Error("internal: worker has no program with key " + std::to_string(key));
      std::vector<Array> args;
      for (auto id : in_ids) args.push_back(ctl::lookup(id, it->second->name));
      std::vector<Array> outs = run_program(it->second, args);
      if (outs.size() != out_ids.size()) throw Error("internal: '" + it->second->name + "' gave an unexpected result count");
      for (size_t j = 0; j < outs.size(); ++j) ctl::store(out_ids[j], plain_if_single_device(outs[j]));
    } catch (...) {
      for (auto id : out_ids) ctl::store_error(id, std::current_exception());
    }
  });
  return true;
}();

// Every process of a job runs the launches of a mesh that spans processes in the same order
// (multi-controller): each queues the parts of its own devices, and their collectives meet
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
    for (const Array& a : args) ins.push_back(as_sharded(a)->shards[size_t(pos)]);
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
  std::vector<std::shared_ptr<ShardedArray>> outs;
  for (size_t j = 0; j < nout; ++j) {
    // A launch on one device without mesh axes (single-device arrays) keeps that layout.
    Sharding s = mesh.axis_names().empty() && n == 1 ? SingleDeviceSharding(mesh.devices()[0])
                                                     : sharding::sharding_of_layout(mesh, x.part.out_layouts[j]);
    outs.push_back(std::make_shared<ShardedArray>(x.global_out[j], std::move(s), x.local_out[j], std::move(out_bufs[j])));
  }
  // Still under launch_mu: workers see launches in the order this process queued them.
  if (distributed::controller::is_driver()) ship_launch(program, mesh, args, outs);
  return std::vector<Array>(outs.begin(), outs.end());
}

std::vector<Array> run_program(const ir::ProgramRef& program, std::span<const Array> args) {
  Prepared p = prepare(program, args);
  return launch(program, *p.exe, p.args);
}

std::string program_text(const ir::ProgramRef& program, std::span<const Array> args) {
  Prepared p = prepare(program, args);
  return "# partitioned over " + p.exe->part.mesh.to_string() + "\n" + p.exe->executable()->to_text();
}

// One primitive on sharded arrays: a one-equation program, cached by signature.
std::vector<Array> eval_primitive(const ir::Primitive& prim, std::span<const Array> ins, const ir::Params& params) {
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
  return run_program(program, ins);
}

[[maybe_unused]] const bool installed = (set_spmd_dispatch({&eval_primitive, &run_program, &program_text}), true);

// ---- sharding_constraint ----

const Sharding& constraint_of(const ir::Params& p) {
  return p.get_object<ir::ShardingParam>("sharding").value;
}
ir::Params constraint_params(const Sharding& s) {
  return ir::Params{{"sharding", std::shared_ptr<const ir::ParamObject>(std::make_shared<ir::ShardingParam>(s))}};
}

std::vector<Aval> constraint_aval(std::span<const Aval> ins, const ir::Params& p) {
  constraint_of(p).check_rank(ins[0].shape.size(), "with_sharding_constraint");
  return {ins[0]};
}

std::vector<std::optional<Sharding>> constraint_infer(const Mesh&, std::span<const std::optional<Sharding>>,
                                                     std::span<const Aval>, std::span<const Aval>, const ir::Params& p) {
  return {constraint_of(p)};
}

void constraint_partition(ir::SpmdBuilder& b, std::span<const Aval>, std::span<const Aval>, const ir::Params& p) {
  const Sharding& s = constraint_of(p);
  Sharding on_mesh = s.is_single_device() ? replicated_sharding(b.mesh()) : s;
  b.set_result(0, b.operand(0, on_mesh), on_mesh);
}

// A single-device constraint names no mesh: inside a partitioned program it means whole
// (replicated) on the program's devices.
std::optional<Mesh> constraint_mesh(const ir::Params& p) {
  const Sharding& s = constraint_of(p);
  if (s.is_single_device()) return std::nullopt;
  return s.mesh();
}

const ir::SpmdRules constraint_rules{
    .infer = &constraint_infer,
    .propagate_user = [](const Mesh&, std::span<const std::optional<Sharding>>, std::span<const Aval>,
                         std::span<const Aval>, const ir::Params& p) -> std::vector<std::optional<Sharding>> {
      return {constraint_of(p)};
    },
    .partition = &constraint_partition,
    .mesh = &constraint_mesh,
};

const ir::Primitive& constraint_primitive();

std::vector<Array> constraint_jvp(const ir::Primitive&, std::span<const Array>, std::span<const Array> tangents,
                                  std::span<const Array>, const ir::Params& p) {
  return {tangents[0].valid() ? with_sharding_constraint(tangents[0], constraint_of(p)) : Array()};
}
std::vector<Array> constraint_transpose(const ir::Primitive&, std::span<const Array> cts, std::span<const Array>,
                                        std::span<const Aval>, const ir::Params& p) {
  return {cts[0].valid() ? with_sharding_constraint(cts[0], constraint_of(p)) : Array()};
}
ir::Batched constraint_batch(const ir::Primitive&, std::span<const Array> ins, std::span<const int64_t> dims,
                             const ir::BatchAxis&, const ir::Params& p) {
  const Sharding& s = constraint_of(p);
  if (s.is_single_device()) return {{with_sharding_constraint(ins[0], s)}, {dims[0]}};
  std::vector<SpecEntry> entries;
  for (size_t d = 0; d < size_t(ins[0].ndim()); ++d) entries.push_back(s.spec()[d]);
  entries.insert(entries.begin() + dims[0], SpecEntry());
  entries.pop_back();
  return {{with_sharding_constraint(ins[0], NamedSharding(s.mesh(), PartitionSpec(entries)))}, {dims[0]}};
}

const ir::Primitive& constraint_primitive() {
  static const ir::Primitive& p = ir::register_primitive({
      .name = "sharding_constraint",
      .arity = {1, 1},
      .abstract_eval = &constraint_aval,
      .jvp = &constraint_jvp,
      .transpose = &constraint_transpose,
      .batch = &constraint_batch,
      .spmd = &constraint_rules,
  });
  return p;
}
[[maybe_unused]] const ir::Primitive& registered_constraint = constraint_primitive();

}  // namespace

namespace {

// One source position per distinct non-empty piece (replicas hold the same values): a
// device of this process holding it, else (-1 - the first position holding it) when only
// other processes' devices hold it.
std::vector<int> piece_sources(const std::vector<std::shared_ptr<Buffer>>& shards,
                               const std::vector<std::vector<std::pair<int64_t, int64_t>>>& indices) {
  std::vector<int> sources;
  for (int pos = 0; pos < int(shards.size()); ++pos) {
    const auto& idx = indices[size_t(pos)];
    bool empty = false, seen = false;
    for (auto& [b, e] : idx) empty |= e <= b;
    for (int q : sources) seen |= indices[size_t(q < 0 ? -1 - q : q)] == idx;
    if (seen || (empty && !idx.empty())) continue;
    int found = -1 - pos;
    for (int q = 0; q < int(shards.size()) && found < 0; ++q)
      if (shards[size_t(q)] && indices[size_t(q)] == idx) found = q;
    sources.push_back(found);
  }
  return sources;
}

// The local sources of every piece; on the driver of a single-controller job the pieces only
// workers hold are fetched into `shards` first. An Error naming `what` when a piece is held
// only by devices of other processes of a multi-controller job.
std::vector<int> local_sources(const ShardedArray& a, std::vector<std::shared_ptr<Buffer>>& shards,
                               const std::vector<std::vector<std::pair<int64_t, int64_t>>>& indices, const char* what) {
  std::vector<int> sources = piece_sources(shards, indices);
  std::vector<int> missing;
  for (int& q : sources)
    if (q < 0) missing.push_back(q = -1 - q);
  if (missing.empty()) return sources;
  if (a.remote && remote_hooks().fetch) {
    remote_hooks().fetch(a, missing, shards);
    return sources;
  }
  std::string names;
  for (int pos : missing)
    if (names.size() < 200) names += (names.empty() ? "" : ", ") + a.sharding.device_set()[size_t(pos)].to_string();
  throw ValueError(std::string(what) + ": the array " + a.aval.to_string() + " laid out by " + a.sharding.to_string() +
                   " spans processes, and process " + std::to_string(process_index()) +
                   " holds only part of it (the pieces on " + names +
                   " are in other processes); read this process's pieces with addressable_shards(), or, in every "
                   "process, reshard it to a replicated sharding (device_put(x, NamedSharding(mesh, P()))) or "
                   "gather it with ts::comm::allgather");
}

}  // namespace

ConcreteArray* ShardedArray::gathered(const char* what) const {
  std::call_once(gathered_once_, [&] {  // a throw leaves it to the next call
    auto indices = sharding.device_indices(aval.shape);
    std::vector<std::shared_ptr<Buffer>> pieces = shards;
    std::vector<int> sources = local_sources(*this, pieces, indices, what);
    if (sources.size() == 1 && local_aval.shape == aval.shape && pieces[size_t(sources[0])]) {
      // One piece holds the whole value (one device, or replicated): it is the value.
      auto& whole = pieces[size_t(sources[0])];
      gathered_ = std::make_shared<ConcreteArray>(aval, whole->device(), whole, true);
      return;
    }
    DeviceImpl* dev = nullptr;  // the first device of the mesh in this process
    for (const Device& d : sharding.device_set())
      if (!dev && d.impl()->is_local()) dev = d.impl();
    if (!dev) dev = default_device();  // a value with no elements held elsewhere
    auto buf = Buffer::allocate(aval.nbytes(), dev, &aval);
    run_on_stream(dev, aval.nbytes(), [buf, shards = std::move(pieces), sources, indices, global = aval.shape, local = local_aval.shape,
                           item = itemsize(aval.dtype)] {
      try {
        for (int pos : sources) {
          auto& s = shards[size_t(pos)];
          s->wait();
          Shape start, block;
          for (auto& [b, e] : indices[size_t(pos)]) {
            start.push_back(b);
            block.push_back(e - b);
          }
          if (buf->nbytes())
            copy_block(static_cast<const char*>(s->data()), local, Shape(local.size(), 0), static_cast<char*>(buf->data()),
                       global, start, block, item);
        }
        buf->set_ready();
      } catch (...) {
        buf->set_error(std::current_exception());
      }
    });
    gathered_ = std::make_shared<ConcreteArray>(aval, dev, buf, true);
  });
  return gathered_.get();
}

}  // namespace detail

Sharding sharding_of(const Array& x) {
  if (auto* s = detail::as_sharded(x)) return s->sharding;
  return SingleDeviceSharding(Device(detail::require_concrete(x, "sharding")->device));
}
Sharding Array::sharding() const { return sharding_of(*this); }
std::vector<Device> Array::devices() const { return sharding_of(*this).device_set(); }

std::vector<Shard> Array::addressable_shards() const {
  std::vector<Shard> r;
  auto* s = detail::as_sharded(*this);
  if (!s) {
    Shard one{device(), {}, *this};
    for (auto d : shape()) one.index.push_back({0, d});
    return {one};
  }
  auto indices = s->sharding.device_indices(shape());
  for (size_t pos = 0; pos < s->shards.size(); ++pos) {
    Device dev = s->sharding.device_set()[pos];
    if (!s->shards[pos]) continue;  // a device of another process
    Array piece = detail::make_concrete(s->local_aval, dev.impl(), s->shards[pos], true);
    Shape start(size_t(ndim()), 0), limit;
    for (auto& [b, e] : indices[pos]) limit.push_back(e - b);
    if (limit != s->local_aval.shape) piece = slice(piece, start, limit);
    r.push_back(Shard{dev, indices[pos], piece});
  }
  return r;
}

Array with_sharding_constraint(const Array& x, const Sharding& s) {
  if (!s.valid()) throw ValueError("with_sharding_constraint: the sharding is empty (default-constructed)");
  return detail::bind1(detail::constraint_primitive(), {x}, detail::constraint_params(s));
}

Array device_put(const Array& x, const Sharding& s) {
  if (!s.valid()) throw ValueError("device_put: the sharding is empty (default-constructed)");
  if (!x.valid()) throw ValueError("device_put: the Array is empty (default-constructed)");
  if (x.is_tracer() || detail::tracing_active()) return with_sharding_constraint(x, s);
  s.check_rank(size_t(x.ndim()), "device_put");
  if (s.is_single_device() && s.device_set()[0].impl()->is_local()) return device_put(x, s.device_set()[0]);
  if (auto* sh = detail::as_sharded(x)) {
    if (sh->sharding == s) return x;
    if (sh->sharding.mesh() != s.mesh())  // another mesh: through one device
      return detail::split_array(Array(std::make_shared<detail::ConcreteArray>(*sh->gathered("device_put"))), s);
    return with_sharding_constraint(x, s);  // a partitioned program of one constraint: collectives
  }
  return detail::split_array(x, s);
}

}  // namespace tessel
