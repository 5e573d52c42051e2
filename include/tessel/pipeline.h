#pragma once
// Pipeline schedules (seed jaxpp_design.md, docs/pipeline.md): which stage of which
// microbatch each worker runs, in what order, and a simulator that checks a schedule against
// the data dependencies of a pipeline before it runs. The pipelined() runtime builds on it.
#include <string>
#include <variant>
#include <vector>

#include "tessel/array.h"
#include "tessel/export.h"

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

struct Task {
  TaskKind kind = TaskKind::forward;
  int stage = 0;
  int microbatch = 0;
  bool operator==(const Task& o) const { return kind == o.kind && stage == o.stage && microbatch == o.microbatch; }
  /// "F(s=1,m=3)", "B(...)", "Bi(...)", "Bw(...)"
  std::string to_string() const;
};

/// The shape of a pipeline: stages, microbatches, workers, and which worker runs each stage.
struct Plan {
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

}  // namespace tessel::pipeline
