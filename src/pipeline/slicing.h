#pragma once
// Stage slicing (docs/pipeline.md "Stages"): a traced step of one microbatch becomes one
// program per task kind and stage (forward, backward, or the backward's input and weight
// halves), with the values that cross between them named, so that instruction streams can
// run, send and free them.
#include <string>
#include <vector>

#include "ir/program.h"
#include "tessel/pipeline.h"

namespace tessel::pipeline::detail {

/// A value of the sliced step: a step input or a segment's result that another segment
/// uses or the step returns.
struct Value {
  Aval aval;
  int producer = -1;    ///< the segment computing it, or -1 for a step input
  int step_input = -1;  ///< the step input it is, or -1
  bool per_microbatch = true;  ///< differs between microbatches (false: a non-batch step input)
};

/// One task kind of one stage as a program: inputs and outputs are values.
struct Segment {
  TaskKind kind = TaskKind::forward;
  int stage = 0;
  ir::ProgramRef program;
  std::vector<int> inputs, outputs;
  bool empty() const { return program->eqns.empty() && outputs.empty(); }
};

/// A value read by several stages' backwards whose gradient is the sum of what each stage
/// computes (a tied weight): `result` is the sum of the microbatch means of `parts`, made
/// by an AllReduce among the workers computing them (and the epilogue's).
struct CrossStageSum {
  int result = -1;
  std::vector<int> parts;
  std::vector<bool> part_depends_on_batch;  ///< false: the same in every microbatch (kept, not averaged)
};

struct StagedProgram {
  int num_stages = 1;
  bool split_backward = false;  ///< backward_input / backward_weight segments instead of backward
  std::vector<Value> values;
  std::vector<Segment> segments;  ///< see `segment`; the epilogue (if any) comes last
  /// The segment run once per step after every microbatch (-1: none): what reads the
  /// cross-stage sums, on the averaged values. Its `stage` places it (on that stage's worker).
  int epilogue = -1;
  std::vector<CrossStageSum> sums;
  std::vector<int> outputs;       ///< the value of each step output
  std::vector<bool> output_per_microbatch;  ///< whether each step output depends on the batch
  /// The index of the segment of `kind` for `stage` (kind must match split_backward).
  int segment(TaskKind kind, int stage) const;
};

/// Slices `p` (a step traced on one microbatch; calls are inlined first) at its stage
/// markers. `input_is_batch[i]` says whether input i is split into microbatches. Within a
/// stage, the forward is what its outgoing marker needs (for the last stage: what the step
/// outputs computed without any constant-only equation need, i.e. the loss and not the
/// gradients seeded by a constant cotangent); the rest is its backward, split (with
/// `split_backward`) into the input half (what the incoming backward marker of the previous
/// stage needs) and the weight half. A sum of values of segments that no schedule orders (the
/// gradient of a weight used by two stages) becomes a CrossStageSum, and what reads it (the
/// update of that weight, the gradient output) the epilogue, which may read only cross-stage
/// sums, step inputs that are not split into microbatches, and constants. Throws ValueError
/// for any other flow between segments that no schedule orders (a forward that reads a
/// backward value) and for an epilogue that reads anything else, naming the equation and
/// segments.
StagedProgram slice_program(const ir::Program& p, const std::vector<bool>& input_is_batch, bool split_backward);

/// "F0", "B1", "Bi2", "Bw0"
std::string segment_name(TaskKind kind, int stage);

}  // namespace tessel::pipeline::detail
