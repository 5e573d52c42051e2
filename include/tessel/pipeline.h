#pragma once
// Pipeline schedules (seed jaxpp_design.md, docs/pipeline.md): which stage of which
// microbatch each worker runs, in what order, and a simulator that checks a schedule against
// the data dependencies of a pipeline before it runs. The pipelined() runtime builds on it.
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "tessel/array.h"
#include "tessel/export.h"
#include "tessel/jit.h"
#include "tessel/sharding.h"
#include "tessel/tree.h"

namespace tessel::pipeline {

/// Ends one pipeline stage and begins the next: the identity on `x`, recorded as a marker in
/// traced programs. Its transpose is the marker of the matching boundary of the backward
/// pass, so `grad` of a staged function is staged too; under jvp the tangent crosses with
/// the value, under vmap the batch dimension stays. Outside a pipeline it only copies.
TESSEL_API Array enter_stage(const Array& x);
/// Several values crossing the same boundary (one marker).
TESSEL_API std::vector<Array> enter_stage(const std::vector<Array>& xs);

/// All forwards, then all backwards (GPipe).
struct GPipe {};
/// One forward, one backward: after a warm-up of (stages - stage - 1) forwards, each worker
/// alternates, so at most (stages - stage) microbatches are in flight on a stage.
struct OneF1B {};
/// 1F1B with one more forward in the warm-up, so sends overlap the next forward.
struct Eager1F1B {};
/// Several stages per worker, placed round-robin (stage s on worker s % workers); Megatron's
/// interleaved 1F1B. The microbatch count must be a multiple of the worker count.
struct Interleaved1F1B {
  int stages_per_worker = 2;
};
/// Zero-bubble H1: the backward split into the input gradient (on the critical path) and
/// the weight gradient (deferred into the bubbles); 1F1B's memory.
struct ZeroBubbleH1 {};
using Schedule = std::variant<GPipe, OneF1B, Eager1F1B, Interleaved1F1B, ZeroBubbleH1>;

/// What a task computes: a stage's forward, its whole backward, or (ZeroBubbleH1) the input
/// and weight halves of the backward.
enum class TaskKind { forward, backward, backward_input, backward_weight };

struct TESSEL_API Task {
  TaskKind kind = TaskKind::forward;
  int stage = 0;
  int microbatch = 0;
  bool operator==(const Task& o) const { return kind == o.kind && stage == o.stage && microbatch == o.microbatch; }
  /// "F(s=1,m=3)", "B(...)", "Bi(...)", "Bw(...)"
  std::string to_string() const;
};

/// The shape of a pipeline: stages, microbatches, workers, and which worker runs each stage.
struct TESSEL_API Plan {
  int num_workers = 0;
  int num_stages = 0;
  int num_microbatches = 0;
  std::vector<int> stage_worker;       ///< worker of each stage
  std::vector<std::vector<Task>> tasks;  ///< per worker, in the order it runs them
  /// One line per worker: "worker 0: F(s=0,m=0) F(s=0,m=1) ..."
  std::string to_string() const;
};

/// The tasks of `schedule` for a pipeline of `num_stages` stages over `num_workers` workers
/// and `num_microbatches` microbatches. ValueError for shapes the schedule cannot run (a
/// stage count other than workers x stages_per_worker, microbatches not a multiple of the
/// workers for Interleaved1F1B, non-positive counts).
TESSEL_API Plan make_plan(const Schedule& schedule, int num_workers, int num_stages, int num_microbatches);

/// What running a plan with unit-time forwards (backwards take 2, or 1 + 1 when split)
/// gives: the makespan, each worker's idle fraction, and each stage's peak number of
/// microbatches whose forward ran but whose (input) backward did not (activations held).
struct Simulation {
  double makespan = 0;
  std::vector<double> idle_fraction;  ///< per worker
  std::vector<int> peak_in_flight;    ///< per stage
  /// The idle fraction of the whole pipeline: idle worker-time over workers x makespan.
  double bubble_fraction = 0;
};

/// Runs `plan` on the dependency rules: a stage's forward needs the previous stage's forward
/// of that microbatch; a backward (or its input half) needs its own forward and the next
/// stage's backward (input half); a weight half needs its input half. Each worker runs its
/// tasks in order. Throws ValueError naming the problem when a task is missing, repeated or
/// on the wrong worker, or when the workers would wait on each other forever (naming each
/// blocked worker's next task and what it waits for).
TESSEL_API Simulation simulate(const Plan& plan);

/// The theoretical bubble fraction of a synchronous schedule, (P - 1) / (M + P - 1).
TESSEL_API double theoretical_bubble(int num_stages, int num_microbatches);

// ---- timeline ----

/// One instruction a worker ran, with wall-clock times (microseconds since the Unix epoch,
/// comparable across the processes of one host).
struct TimelineEvent {
  int worker = 0;
  std::string name;      ///< "F(s=0,m=1)", "send %12 -> w1", ...
  std::string kind;      ///< "forward", "backward", "backward_input", "backward_weight", "send", "recv", "other"
  int stage = -1;        ///< the task's stage (-1 for communication and bookkeeping)
  int microbatch = -1;   ///< the task's microbatch (-1 when none)
  double start_us = 0, end_us = 0;
};

/// Writes `events` as a Chrome trace / Perfetto JSON file (one track per worker, times
/// relative to the earliest event). Throws Error naming the path when it cannot be written.
TESSEL_API void write_chrome_trace(const std::string& path, const std::vector<TimelineEvent>& events);

/// Per worker, the fraction of [earliest start, latest end] of `events` during which it ran
/// no stage task (communication and bookkeeping count as idle): the measured bubble.
TESSEL_API std::vector<double> idle_fractions(const std::vector<TimelineEvent>& events, int num_workers);

// ---- pipelined execution (single-controller jobs) ----

/// The workers of a pipeline (the seed's RemoteMpmdMesh): in a single-controller job
/// (`mpirun -np 1+W`, docs/single_controller.md), worker i is process i + 1 and owns a local
/// mesh of shape `local_mesh_shape` over its first devices. Together they form the global
/// mesh of shape (num_workers, local_mesh_shape...), whose first axis is "mpmd".
/// ValueError outside the driver of a single-controller job, for more workers than the job
/// has, or for a worker with too few devices (naming TESSEL_CPU_DEVICES).
class TESSEL_API RemoteMpmdMesh {
 public:
  RemoteMpmdMesh(int num_workers, const Shape& local_mesh_shape, const std::vector<std::string>& axis_names);
  /// A pipeline of `pp` stage workers replicated `dp` times for data parallelism (JaxPP's
  /// pp x dp): worker `replica * pp + stage_worker` (process worker + 1) runs that stage
  /// worker's part of the pipeline on replica `replica`'s share of the microbatches, and
  /// the gradients (every output averaged over the microbatches) are all-reduced among the
  /// replicas inside the instruction stream. The job needs pp x dp workers (`mpirun -np
  /// 1+pp*dp`); ValueError otherwise, or for pp or dp < 1.
  RemoteMpmdMesh(int pp, int dp, const Shape& local_mesh_shape, const std::vector<std::string>& axis_names);
  /// Every worker of the mesh: pp x dp.
  int num_workers() const { return int(local_meshes_.size()); }
  /// Stage workers per replica (pp).
  int pipeline_workers() const { return pp_; }
  /// Data-parallel replicas of the pipeline (dp).
  int replicas() const { return int(local_meshes_.size()) / pp_; }
  /// The mesh of worker `worker`'s devices.
  const Mesh& local_mesh(int worker) const;
  /// Every worker's mesh stacked along a leading "mpmd" axis.
  Mesh global_mesh() const;
  /// The process (rank) of worker `worker`.
  int process_of(int worker) const { return worker + 1; }

 private:
  std::vector<Mesh> local_meshes_;
  int pp_ = 1;
};

/// A driver's handle to an array on a worker (the seed's ArrayRef): an Array whose pieces
/// live in that worker's process. Reading it (to_vector, printing) fetches the value;
/// destroying the last handle deletes the remote array; it can be passed back to a pipelined
/// step, or to jit and eager operations, which then run on the worker.
using ArrayRef = Array;

/// Options of `pipelined`.
struct PipelineOptions {
  /// Microbatches per call: every batch argument is split into this many equal parts along
  /// its leading dimension. With dp replicas, each replica takes num_microbatches / dp
  /// consecutive ones (dp must divide it).
  int num_microbatches = 1;
  /// Arguments whose leaves are split into microbatches (the others, e.g. the parameters,
  /// go whole to every worker that reads them).
  std::vector<int> batch_argnums;
  /// Arguments whose arrays the call may free (a train state replaced by the result): an
  /// ArrayRef among them is invalid after the call (using it is an error naming the
  /// donation); a driver array is copied to the workers and stays valid.
  std::vector<int> donate_argnums;
  Schedule schedule = OneF1B{};
  /// Per input leaf: how it is laid out over its worker's local mesh (unset: replicated).
  std::vector<std::optional<PartitionSpec>> in_shardings;
  /// Per output leaf: how it is laid out over its worker's local mesh (unset: replicated).
  std::vector<std::optional<PartitionSpec>> out_shardings;
  /// With dp replicas: start each gradient's all-reduce among the replicas as soon as its
  /// last microbatch is accumulated and wait for it after the worker's last task, so that it
  /// travels while the remaining backward tasks run (false: reduce on the spot, waiting).
  /// The results are the same bits either way.
  bool overlap_reductions = true;
};

namespace detail {
class PipelineState;
TESSEL_API std::shared_ptr<PipelineState> make_pipeline(const RemoteMpmdMesh& mesh, PipelineOptions options);
/// Runs one call: `trace` traces the step on microbatch-shaped tracers (first call of a
/// signature); `leaf_args` gives each leaf's argument number; `structure` is set to the
/// output tree the trace of this signature stored through `fresh_structure`.
TESSEL_API std::vector<Array> pipeline_call(PipelineState& state, const tessel::detail::FlatFn& trace,
                                            std::span<const Array> leaves, const std::vector<int>& leaf_args,
                                            int num_args, const std::shared_ptr<const void>& fresh_structure,
                                            std::shared_ptr<const void>& structure);
TESSEL_API std::string pipeline_instructions(const PipelineState& state);
TESSEL_API Plan pipeline_plan(const PipelineState& state);
TESSEL_API std::vector<TimelineEvent> pipeline_timeline(const PipelineState& state);
}  // namespace detail

/// A step split into pipeline stages over the workers of a RemoteMpmdMesh (see `pipelined`).
template <class F> class Pipelined {
 public:
  Pipelined(F f, const RemoteMpmdMesh& mesh, PipelineOptions options)
      : f_(std::move(f)), state_(detail::make_pipeline(mesh, std::move(options))) {}

  /// Runs the step on every microbatch of the batch arguments, each stage on its worker in
  /// the schedule's order, and returns the step's outputs, each averaged over the
  /// microbatches (kept as is when it does not depend on the batch), as ArrayRefs on the
  /// worker that computed them. Returns once every worker took the step, before it ran:
  /// several steps may be in flight (up to 8; each worker runs them in order); reading a
  /// result waits for it; a step that failed on a worker surfaces, naming that worker, on the
  /// read of its results and on the next call after the driver learned of it.
  template <class... Args> auto operator()(const Args&... args) const {
    using Tuple = std::tuple<std::decay_t<Args>...>;
    using R = std::decay_t<decltype(std::apply(f_, std::declval<Tuple>()))>;
    Tuple values{args...};
    std::vector<Array> leaves;
    std::vector<int> leaf_args;
    tessel::detail::flatten_args(values, {}, leaves, nullptr, std::index_sequence_for<Args...>{}, &leaf_args);
    auto fresh = std::make_shared<std::optional<R>>();
    tessel::detail::FlatFn trace = [&](std::span<const Array> tracers) {
      std::vector<Array> tv(tracers.begin(), tracers.end());
      Tuple traced = tessel::detail::replace_arg_leaves(values, tv, std::index_sequence_for<Args...>{});
      fresh->emplace(std::apply(f_, traced));
      return tree_leaves(**fresh);
    };
    std::shared_ptr<const void> structure;
    std::vector<Array> outs =
        detail::pipeline_call(*state_, trace, leaves, leaf_args, int(sizeof...(Args)), fresh, structure);
    size_t pos = 0;
    return tree_replace_leaves(**std::static_pointer_cast<const std::optional<R>>(structure), outs, pos);
  }
  /// Every worker's instruction stream for the signature called last.
  std::string instructions() const { return detail::pipeline_instructions(*state_); }
  /// The schedule's task plan for the signature called last.
  Plan plan() const { return detail::pipeline_plan(*state_); }
  /// What each worker ran when during the last call (TESSEL_PIPELINE_TRACE=file.json also
  /// writes every call's timeline as a Chrome trace). Waits for the steps in flight.
  std::vector<TimelineEvent> timeline() const { return detail::pipeline_timeline(*state_); }

 private:
  F f_;
  std::shared_ptr<detail::PipelineState> state_;
};

/// Pipelines `step` over the workers of `mesh` (seed jaxpp_design.md): traces it on one
/// microbatch, slices the program into stages at its enter_stage markers (each stage's
/// forward and backward on one worker; unmarked equations where their inputs live), checks
/// the schedule by simulating it, compiles every stage on its worker and returns a callable
/// whose calls send each worker its instruction stream. The outputs are averaged over the
/// microbatches: a step returning a mean loss, its gradients, or parameters updated by an
/// update affine in the gradients (SGD, momentum) gives the full-batch result; apply other
/// updates (Adam) to the averaged gradients afterwards.
template <class F> Pipelined<std::decay_t<F>> pipelined(F&& step, const RemoteMpmdMesh& mesh, PipelineOptions options) {
  return Pipelined<std::decay_t<F>>(std::forward<F>(step), mesh, std::move(options));
}

}  // namespace tessel::pipeline
