// The driver side of pipelined(): RemoteMpmdMesh, compiling a step into per-worker
// instruction streams, and calls (docs/pipeline.md). The workers' side is worker.cpp.
#include <algorithm>
#include <chrono>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <optional>

#include "compiler/jit_primitive.h"
#include "core/array_impl.h"
#include "core/config.h"
#include "distributed/controller.h"
#include "ir/sharding_rule.h"
#include "pipeline/instructions.h"
#include "pipeline/pipelined.h"
#include "tessel/error.h"
#include "tessel/ops.h"

namespace tessel::pipeline {
namespace ctl = distributed::controller;

RemoteMpmdMesh::RemoteMpmdMesh(int num_workers, const Shape& local_mesh_shape,
                               const std::vector<std::string>& axis_names)
    : RemoteMpmdMesh(num_workers, 1, local_mesh_shape, axis_names) {}

RemoteMpmdMesh::RemoteMpmdMesh(int pp, int dp, const Shape& local_mesh_shape, const std::vector<std::string>& axis_names)
    : pp_(pp) {
  if (!ctl::is_driver())
    throw ValueError("RemoteMpmdMesh: needs the driver of a single-controller job; call "
                     "ts::distributed::initialize({.mode = ts::distributed::Mode::single_controller}) and run under "
                     "mpirun -np 1+W");
  if (pp < 1 || dp < 1)
    throw ValueError("RemoteMpmdMesh: pp = " + std::to_string(pp) + " stage workers and dp = " + std::to_string(dp) +
                     " replicas; give at least 1 of each");
  const int num_workers = pp * dp;
  const int available = process_count() - 1;
  if (num_workers > available)
    throw ValueError("RemoteMpmdMesh: asked for " + std::to_string(num_workers) + " workers" +
                     (dp > 1 ? " (" + std::to_string(pp) + " stage workers x " + std::to_string(dp) + " replicas)" : "") +
                     " but the job has " + std::to_string(available) + " worker processes; run under mpirun -np " +
                     std::to_string(num_workers + 1) + " (or ask for fewer)");
  int64_t per_worker = 1;
  for (int64_t d : local_mesh_shape) per_worker *= d;
  for (int w = 0; w < num_workers; ++w) {
    std::vector<Device> mine;
    for (const Device& d : devices())
      if (d.process_index() == w + 1 && int64_t(mine.size()) < per_worker) mine.push_back(d);
    if (int64_t(mine.size()) < per_worker)
      throw ValueError("RemoteMpmdMesh: worker " + std::to_string(w) + " (process " + std::to_string(w + 1) + ") has " +
                       std::to_string(mine.size()) + " devices but the local mesh needs " + std::to_string(per_worker) +
                       "; start the job with TESSEL_CPU_DEVICES=" + std::to_string(per_worker) + " or more");
    local_meshes_.emplace_back(std::move(mine), local_mesh_shape, axis_names);
  }
}

const Mesh& RemoteMpmdMesh::local_mesh(int worker) const {
  if (worker < 0 || worker >= num_workers())
    throw IndexError("RemoteMpmdMesh::local_mesh: worker " + std::to_string(worker) + " of " +
                     std::to_string(num_workers()));
  return local_meshes_[size_t(worker)];
}

Mesh RemoteMpmdMesh::global_mesh() const {
  std::vector<Device> all;
  for (const Mesh& m : local_meshes_) all.insert(all.end(), m.devices().begin(), m.devices().end());
  Shape shape{int64_t(num_workers())};
  const Mesh& first = local_meshes_[0];
  shape.insert(shape.end(), first.shape().begin(), first.shape().end());
  std::vector<std::string> names{"mpmd"};
  names.insert(names.end(), first.axis_names().begin(), first.axis_names().end());
  return Mesh(std::move(all), std::move(shape), std::move(names));
}

namespace detail {
namespace {

// One signature of a pipelined step, compiled.
struct Compiled {
  std::vector<Aval> in_avals;  // of the whole batch
  StagedProgram staged;
  Plan plan;
  Streams streams;
  uint64_t key = 0;  // how the workers name it
  uint64_t next_seq = 0;  // the number of its next step (the workers run them in this order)
  std::shared_ptr<const void> structure;
  std::vector<int> loaded_on;  // the workers that keep it under `key`
  // The workers drop their stages and streams once the pipeline is gone.
  ~Compiled() { ctl::forget(loaded_on, key); }
};

bool contains(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

std::string schedule_name(const Schedule& s) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, GPipe>) return "GPipe";
        else if constexpr (std::is_same_v<T, OneF1B>) return "OneF1B";
        else if constexpr (std::is_same_v<T, Eager1F1B>) return "Eager1F1B";
        else if constexpr (std::is_same_v<T, Interleaved1F1B>) return "Interleaved1F1B";
        else return "ZeroBubbleH1";
      },
      s);
}

// The step's unique number across every pipeline of the job (workers tag transfers with it).
std::atomic<uint64_t> next_step{0};
// Steps of one pipeline issued and not yet over, at most (the next call waits for the oldest).
constexpr size_t kMaxStepsInFlight = 8;
std::mutex call_mu;  // one pipelined call at a time

}  // namespace

class PipelineState;
namespace {
PipelineState* active_pipeline = nullptr;  // the pipeline whose steps may be in flight
}  // namespace

class PipelineState {
 public:
  PipelineState(const RemoteMpmdMesh& mesh, PipelineOptions options) : mesh(mesh), opts(std::move(options)) {}
  RemoteMpmdMesh mesh;
  PipelineOptions opts;
  std::mutex mu;
  std::vector<std::shared_ptr<Compiled>> compiled;
  std::shared_ptr<Compiled> last;
  std::vector<TimelineEvent> timeline;  // of the last step collected
  // Steps issued and not yet collected, oldest first: what each worker reported of it
  // (timeline bytes or error), and the arrays the step reads (kept alive until it ran).
  struct InFlight {
    uint64_t key = 0, seq = 0;  // the compiled signature's workers' name, and its step number
    std::vector<std::optional<std::string>> bytes;
    std::vector<std::exception_ptr> errors;
    std::vector<Array> keep;
    bool reported(size_t w) const { return bytes[w] || errors[w]; }
  };
  std::deque<InFlight> in_flight;
  std::exception_ptr failed;  // a collected step's failure, thrown by the next call

  ~PipelineState() {
    {
      std::lock_guard lock(call_mu);
      if (active_pipeline == this) active_pipeline = nullptr;
    }
    try {
      collect(true);
    } catch (...) {  // the step failed: nobody is left to tell
    }
  }
  // Records what worker `w` reported (a "pipeline.step" or "pipeline.done" reply): the steps
  // of this pipeline it finished.
  void record(size_t w, uint64_t key, const std::string& reply);
  // Collects the steps every worker reported (with `wait`, asks for the others first and
  // waits): the last one's timeline, and the first failure (a worker that failed stopped the
  // others, whose errors only say so: the failure itself is kept).
  // Stops when `leave` steps are left in flight.
  void collect(bool wait, size_t leave = 0);

  Sharding sharding_of(int worker, const std::vector<std::optional<PartitionSpec>>& specs, size_t leaf) const {
    const PartitionSpec spec = leaf < specs.size() && specs[leaf] ? *specs[leaf] : PartitionSpec();
    return NamedSharding(mesh.local_mesh(worker), spec);
  }
  // The workers' processes, in worker order.
  std::vector<int> processes() const {
    std::vector<int> all;
    for (int k = 0; k < mesh.num_workers(); ++k) all.push_back(mesh.process_of(k));
    return all;
  }
  // Sends every worker its message of `kind` at once (payloads[w]); one future reply each.
  // A wait watches every worker, so one that dies ends the others' waits too.
  // With `only`, asks those workers alone (one future each, in that order). `wait` says how
  // the threads waiting for the replies poll (Wait::long_work for a reply after a step).
  std::vector<std::future<std::string>> ask_all(const std::string& kind, std::vector<std::string> payloads,
                                                std::vector<size_t> only = {}, ctl::Wait wait = ctl::Wait::prompt) const {
    const std::vector<int> watch = processes();
    if (only.empty())
      for (int w = 0; w < mesh.num_workers(); ++w) only.push_back(size_t(w));
    std::vector<std::future<std::string>> replies;
    for (size_t w : only)
      replies.push_back(std::async(std::launch::async, [kind, p = mesh.process_of(int(w)), bytes = std::move(payloads[w]),
                                                        watch, wait] { return ctl::request(p, kind, bytes, watch, wait); }));
    return replies;
  }
  std::shared_ptr<Compiled> compile(const tessel::detail::FlatFn& trace, std::span<const Array> leaves, const std::vector<int>& leaf_args,
                                    const std::shared_ptr<const void>& fresh);
  std::vector<Array> run(Compiled& c, std::span<const Array> leaves);
};

std::shared_ptr<PipelineState> make_pipeline(const RemoteMpmdMesh& mesh, PipelineOptions options) {
  if (options.num_microbatches < 1)
    throw ValueError("pipelined: num_microbatches is " + std::to_string(options.num_microbatches) +
                     "; give at least 1");
  return std::make_shared<PipelineState>(mesh, std::move(options));
}

std::shared_ptr<Compiled> PipelineState::compile(const tessel::detail::FlatFn& trace, std::span<const Array> leaves,
                                                 const std::vector<int>& leaf_args,
                                                 const std::shared_ptr<const void>& fresh) {
  auto c = std::make_shared<Compiled>();
  const int W = mesh.pipeline_workers(), dp = mesh.replicas();
  if (opts.num_microbatches % dp != 0)
    throw ValueError("pipelined: num_microbatches = " + std::to_string(opts.num_microbatches) + " cannot be shared by " +
                     std::to_string(dp) + " data-parallel replicas; give a multiple of " + std::to_string(dp));
  const int M = opts.num_microbatches / dp;  // per replica
  std::vector<Aval> micro;
  std::vector<bool> is_batch, donated;
  for (size_t i = 0; i < leaves.size(); ++i) {
    Aval a = leaves[i].aval();
    c->in_avals.push_back(a);
    const bool batch = contains(opts.batch_argnums, leaf_args[i]);
    is_batch.push_back(batch);
    donated.push_back(contains(opts.donate_argnums, leaf_args[i]));
    if (batch) {
      if (a.shape.empty() || a.shape[0] % opts.num_microbatches != 0)
        throw ValueError("pipelined: leaf " + std::to_string(i) + " of batch argument " + std::to_string(leaf_args[i]) +
                         " has shape " + a.to_string() + "; num_microbatches = " + std::to_string(opts.num_microbatches) +
                         " must divide its leading dimension. Change the batch size or num_microbatches");
      a.shape[0] /= opts.num_microbatches;
    }
    micro.push_back(a);
  }
  Program program = tessel::detail::make_program_flat(trace, micro, "step");
  c->structure = fresh;
  const bool split = std::holds_alternative<ZeroBubbleH1>(opts.schedule);
  c->staged = slice_program(compiler::program_of(program), is_batch, split);
  const int per_worker = std::holds_alternative<Interleaved1F1B>(opts.schedule)
                             ? std::get<Interleaved1F1B>(opts.schedule).stages_per_worker
                             : 1;
  if (c->staged.num_stages != W * per_worker)
    throw ValueError("pipelined: the step has " + std::to_string(c->staged.num_stages) + " stages (" +
                     std::to_string(c->staged.num_stages - 1) + " enter_stage markers) but " +
                     schedule_name(opts.schedule) + " over " + std::to_string(W) + " workers needs " +
                     std::to_string(W * per_worker) + "; add or remove enter_stage markers");
  c->plan = make_plan(opts.schedule, W, c->staged.num_stages, M);
  simulate(c->plan);  // rejects a plan that misses the data dependencies or deadlocks
  const auto out_avals = compiler::program_of(program).out_avals();
  for (size_t o = 0; o < out_avals.size(); ++o)
    if (c->staged.output_per_microbatch[o] && !is_floating(out_avals[o].dtype))
      throw ValueError("pipelined: output " + std::to_string(o) + " (" + out_avals[o].to_string() +
                       ") depends on the batch but is not floating-point, so it cannot be averaged over "
                       "microbatches; return a floating-point value");
  c->streams = make_streams(c->staged, c->plan, donated, 1, dp, opts.overlap_reductions);
  check_streams(c->streams, c->staged);
  c->key = ctl::new_id();

  // Each worker gets its segments, its stream and its output layouts, and compiles (every
  // replica the streams of its stage workers).
  std::vector<std::string> loads;
  for (int g = 0; g < W * dp; ++g) {
    const int w = g % W;
    ir::Writer wr;
    wr.u64(c->key);
    ir::write_sharding(wr, NamedSharding(mesh.local_mesh(g), PartitionSpec()));
    wr.i64(W);
    wr.i64(dp);
    wr.i64(g / W);
    wr.i64(M);
    wr.i64(c->streams.num_transfers);
    std::vector<int> mine;
    for (size_t s = 0; s < c->staged.segments.size(); ++s)
      if (c->plan.stage_worker[size_t(c->staged.segments[s].stage)] == w && !c->staged.segments[s].empty())
        mine.push_back(int(s));
    wr.count(mine.size());
    for (int s : mine) {
      wr.i64(s);
      wr.str(ir::serialize(*c->staged.segments[size_t(s)].program));
    }
    write_stream(wr, c->streams.per_worker[size_t(w)]);
    std::vector<size_t> outs;
    for (size_t o = 0; o < c->streams.output_worker.size(); ++o)
      if (c->streams.output_worker[o] == w) outs.push_back(o);
    wr.count(outs.size());
    for (size_t o : outs) ir::write_sharding(wr, sharding_of(g, opts.out_shardings, o));
    wr.count(outs.size());
    for (size_t o : outs) ir::write_aval(wr, c->staged.values[size_t(c->staged.outputs[o])].aval);
    loads.push_back(wr.take());
  }
  for (int w = 0; w < mesh.num_workers(); ++w) c->loaded_on.push_back(mesh.process_of(w));  // every worker loads it
  for (auto& f : ask_all("pipeline.load", std::move(loads))) f.get();
  return c;
}

std::vector<Array> PipelineState::run(Compiled& c, std::span<const Array> leaves) {
  const int W = mesh.num_workers(), M = opts.num_microbatches;
  // Steps of one signature run in issue order on each worker (seq); those of another are
  // collected first.
  if (!in_flight.empty() && in_flight.back().key != c.key) collect(true);
  const uint64_t step = next_step++, seq = c.next_seq++;
  std::vector<Array> keep;  // the pieces sent for this call
  std::map<std::pair<size_t, int>, Array> micro;
  auto piece = [&](size_t leaf, int m) -> Array {
    if (m < 0) return leaves[leaf];
    auto it = micro.find({leaf, m});
    if (it != micro.end()) return it->second;
    const int64_t n = leaves[leaf].shape()[0] / M;
    return micro[{leaf, m}] = slice_in_dim(leaves[leaf], n * m, n * (m + 1));
  };
  std::vector<std::string> payloads;
  std::vector<std::vector<uint64_t>> out_ids(static_cast<size_t>(W));
  const int pp = mesh.pipeline_workers(), per_replica = M / mesh.replicas();
  for (int w = 0; w < W; ++w) {  // worker w runs stage worker w % pp of replica w / pp
    ir::Writer wr;
    wr.u64(c.key);
    wr.u64(step);
    wr.u64(seq);
    const auto& inputs = c.streams.inputs[size_t(w % pp)];
    wr.count(inputs.size());
    for (auto [leaf, m] : inputs) {
      const Sharding target = sharding_of(w, opts.in_shardings, size_t(leaf));
      Array x = piece(size_t(leaf), m < 0 ? m : (w / pp) * per_replica + m);
      const auto* s = tessel::detail::as_sharded(x);
      if (!(s && s->remote && s->sharding() == target)) {
        x = device_put(x, target);
        keep.push_back(x);
      }
      wr.u64(ctl::remote_id(x, "pipelined"));
    }
    size_t n = 0;  // results: replica 0's
    for (int ow : c.streams.output_worker) n += ow == w;
    wr.count(n);
    for (size_t k = 0; k < n; ++k) {
      out_ids[size_t(w)].push_back(ctl::new_id());
      wr.u64(out_ids[size_t(w)].back());
    }
    payloads.push_back(wr.take());
  }
  // Every worker takes the step (its results exist there from now on, filled when the step
  // has run) and tells which earlier steps it finished; the call returns while they run it.
  in_flight.push_back({c.key, seq, std::vector<std::optional<std::string>>(size_t(W)), std::vector<std::exception_ptr>(size_t(W)),
                       std::move(keep)});
  in_flight.back().keep.insert(in_flight.back().keep.end(), leaves.begin(), leaves.end());
  // One worker after the other, on this thread: each answers at once (its step thread runs
  // the step), so a round trip costs less than starting a thread to wait for it. The first
  // stage's worker first: it starts the step, and the others wait for its values.
  std::exception_ptr refused;
  const std::vector<int> watch = processes();
  for (int w = 0; w < W; ++w) {
    try {
      record(size_t(w), c.key, ctl::request(mesh.process_of(w), "pipeline.step", payloads[size_t(w)], watch));
    } catch (...) {
      if (!refused) refused = std::current_exception();
    }
  }
  if (refused) {  // a worker did not take the step (it is gone): the call fails
    in_flight.pop_back();
    std::rethrow_exception(refused);
  }
  collect(false);

  std::vector<Array> outs;
  for (size_t o = 0; o < c.staged.outputs.size(); ++o) {
    const int w = c.streams.output_worker[o];
    if (w < 0) {  // an input returned as it is
      outs.push_back(leaves[size_t(c.staged.values[size_t(c.staged.outputs[o])].step_input)]);
      continue;
    }
    Sharding s = sharding_of(w, opts.out_shardings, o);
    const Aval aval = c.staged.values[size_t(c.staged.outputs[o])].aval;
    auto a = std::make_shared<tessel::detail::ConcreteArray>(aval, s, Aval(s.shard_shape(aval.shape), aval.dtype, aval.weak_type),
                                            std::vector<std::shared_ptr<tessel::detail::Buffer>>(s.mesh().size()));
    // Reading it waits for the step: the driver sleeps then, leaving the cores to the workers.
    a->remote = ctl::make_ref(out_ids[size_t(w)][size_t(c.streams.output_ext[o])], {mesh.process_of(w)},
                              /*long_work=*/true);
    outs.push_back(Array(a));
  }
  return outs;
}

void PipelineState::record(size_t w, uint64_t key, const std::string& reply) {
  ir::Reader r(reply, "pipelined");
  for (size_t n = r.count(9); n-- > 0;) {
    const uint64_t seq = r.u64();
    const bool failed_there = r.boolean();
    std::exception_ptr error;
    std::string bytes;
    if (failed_there) {
      try {
        ctl::throw_error(r, "pipelined");
      } catch (const ValueError& e) {  // named after the worker where the step failed
        error = std::make_exception_ptr(ValueError(std::string(e.what()) + " [pipelined step on worker " +
                                                   std::to_string(w) + ", process " +
                                                   std::to_string(mesh.process_of(int(w))) + "]"));
      } catch (const std::exception& e) {
        error = std::make_exception_ptr(Error(std::string(e.what()) + " [pipelined step on worker " + std::to_string(w) +
                                              ", process " + std::to_string(mesh.process_of(int(w))) + "]"));
      }
    } else {
      bytes = r.str();
    }
    for (InFlight& f : in_flight)
      if (f.seq == seq && f.key == key) {
        if (error) f.errors[w] = error;
        else f.bytes[w] = std::move(bytes);
      }
  }
}

void PipelineState::collect(bool wait, size_t leave) {
  while (in_flight.size() > leave) {
    InFlight& f = in_flight.front();
    std::vector<size_t> missing;
    for (size_t w = 0; w < f.bytes.size(); ++w)
      if (!f.reported(w)) missing.push_back(w);
    if (!missing.empty()) {
      if (!wait) return;
      std::vector<std::string> asks(size_t(mesh.num_workers()));
      for (size_t w : missing) {
        ir::Writer wr;
        wr.u64(f.key);
        wr.u64(f.seq);
        asks[w] = wr.take();
      }
      auto replies = ask_all("pipeline.done", std::move(asks), missing, ctl::Wait::long_work);
      for (size_t k = 0; k < missing.size(); ++k) {
        try {
          record(missing[k], f.key, replies[k].get());
        } catch (...) {  // the worker is gone
          f.errors[missing[k]] = std::current_exception();
        }
      }
    }
    std::vector<TimelineEvent> events;
    std::exception_ptr first, cause;
    for (size_t w = 0; w < f.bytes.size(); ++w) {
      try {
        if (f.errors[w]) std::rethrow_exception(f.errors[w]);
        ir::Reader r(*f.bytes[w], "pipelined");
        for (size_t k = r.count(8); k-- > 0;) {
          TimelineEvent e;
          e.worker = int(w);
          e.name = r.str();
          e.kind = r.str();
          e.stage = int(r.i64());
          e.microbatch = int(r.i64());
          e.start_us = r.f64();
          e.end_us = r.f64();
          events.push_back(std::move(e));
        }
      } catch (const std::exception& e) {
        if (!first) first = std::current_exception();
        if (!cause && std::string(e.what()).find(kStoppedByPeer) == std::string::npos) cause = std::current_exception();
      }
    }
    in_flight.pop_front();
    if (cause || first) {
      if (!failed) failed = cause ? cause : first;
      continue;
    }
    timeline = std::move(events);
    if (const std::string path = config::get_path(config::kPipelineTrace); !path.empty())
      write_chrome_trace(path, timeline);
  }
}

std::vector<Array> pipeline_call(PipelineState& st, const tessel::detail::FlatFn& trace, std::span<const Array> leaves,
                                 const std::vector<int>& leaf_args, int num_args,
                                 const std::shared_ptr<const void>& fresh, std::shared_ptr<const void>& structure) {
  for (int a : st.opts.batch_argnums)
    if (a < 0 || a >= num_args)
      throw IndexError("pipelined: batch_argnums lists argument " + std::to_string(a) + " but the step is called with " +
                       std::to_string(num_args) + " arguments");
  for (int a : st.opts.donate_argnums)
    if (a < 0 || a >= num_args)
      throw IndexError("pipelined: donate_argnums lists argument " + std::to_string(a) + " but the step is called with " +
                       std::to_string(num_args) + " arguments");
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (!leaves[i].valid()) throw ValueError("pipelined: input leaf " + std::to_string(i) + " is an empty Array");
    if (leaves[i].is_tracer())
      throw ValueError("pipelined: input leaf " + std::to_string(i) + " is traced (inside jit, grad or vmap); call the "
                       "pipelined step outside transformations");
  }
  // One call at a time: workers tag transfers by step. Steps of one pipeline may be in
  // flight together (each worker runs them in order); another pipeline's are collected
  // first, so that the steps on a worker never interleave.
  std::lock_guard call_lock(call_mu);
  if (active_pipeline && active_pipeline != &st) active_pipeline->collect(true);
  active_pipeline = &st;
  st.collect(false);
  if (st.in_flight.size() >= kMaxStepsInFlight) st.collect(true, kMaxStepsInFlight - 1);
  if (st.failed) {  // an earlier step failed: its error surfaces now
    std::exception_ptr e = std::exchange(st.failed, nullptr);
    std::rethrow_exception(e);
  }
  std::shared_ptr<Compiled> c;
  {
    std::lock_guard lock(st.mu);
    for (auto& k : st.compiled) {
      bool same = k->in_avals.size() == leaves.size();
      for (size_t i = 0; same && i < leaves.size(); ++i) same = k->in_avals[i] == leaves[i].aval();
      if (same) c = k;
    }
  }
  if (!c) {
    c = st.compile(trace, leaves, leaf_args, fresh);
    std::lock_guard lock(st.mu);
    st.compiled.push_back(c);
  }
  st.last = c;
  structure = c->structure;
  return st.run(*c, leaves);
}

std::string pipeline_instructions(const PipelineState& st) {
  if (!st.last) return "";
  return st.last->streams.to_string();
}
Plan pipeline_plan(const PipelineState& st) { return st.last ? st.last->plan : Plan{}; }
std::vector<TimelineEvent> pipeline_timeline(const PipelineState& st) {
  auto& state = const_cast<PipelineState&>(st);  // collecting the steps in flight changes no result
  state.collect(true);
  return state.timeline;
}

}  // namespace detail
}  // namespace tessel::pipeline
