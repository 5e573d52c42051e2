#pragma once
// Instruction streams (docs/pipeline.md "Instructions"): what each worker does in one call
// of a pipelined step, generated from one global schedule. Values live in numbered slots
// (fixed for the compiled pipeline, the same in every call); Rename binds the call's array
// ids to slots and slots to result ids.
#include <cstdint>
#include <string>
#include <vector>

#include "pipeline/slicing.h"

namespace tessel::pipeline::detail {

enum class Op {
  rename_in,   ///< slot outs[0] := the call's input `ext` (donated: the caller's handle dies)
  recv,        ///< posts the receive of what `peer` sends under `tag` into slot outs[0] (non-blocking)
  run,         ///< slots outs := segment(ins)
  send,        ///< sends slot ins[0] to `peer` under `tag`
  accumulate,  ///< slot outs[0] := ins[0] (first), outs[0] + ins[0] (add), then / count (last)
  rename_out,  ///< the call's result `ext` := slot ins[0]
  del,         ///< frees slot ins[0]
  wait,        ///< completes the receive posted into slot outs[0]: the slot holds the value
  all_reduce,  ///< slot outs[0] := the sum over the workers of `group` of each one's ins[0] (zeros without)
  /// all_reduce posted without waiting (the workers exchange ins[0] while the next tasks
  /// run): its result lands in a slot at the all_reduce_wait of the same tag
  all_reduce_start,
  all_reduce_wait,  ///< completes the all_reduce_start of `tag`: slot outs[0] := its result
};

enum class AccumulateMode { keep, first, add, add_and_scale };

struct Instruction {
  Op op = Op::run;
  std::vector<int64_t> ins, outs;  ///< slots
  int segment = -1;                ///< run: the segment (StagedProgram::segments)
  Task task;                       ///< run: the task it performs
  int peer = -1;                   ///< send/recv: the other worker
  int tag = 0;                     ///< send/recv: the transfer (unique in a call)
  Aval aval;                       ///< recv: what arrives
  int ext = -1;                    ///< rename: index into the call's inputs / results on this worker
  bool donated = false;            ///< rename_in
  AccumulateMode mode = AccumulateMode::keep;
  int count = 0;                   ///< accumulate: the divisor of add_and_scale
  std::vector<int> group;          ///< all_reduce: the workers taking part, ascending (tag: the reduction)
  bool across_replicas = false;    ///< all_reduce: the group's workers of every data-parallel replica (divided by `count`)
  /// "run F0(m=1) [%3 %8] -> [%12]", "send %12 -> w1 #4", "all_reduce [%9] -> [%10] w0,w1 #7", ...
  std::string to_string() const;
};

/// The streams of every worker for one compiled pipeline.
struct Streams {
  int num_workers = 0, num_microbatches = 0;  ///< per replica
  int replicas = 1;                            ///< data-parallel replicas running these streams
  std::vector<std::vector<Instruction>> per_worker;
  /// Per worker, what each of the call's input ids holds: (step input, microbatch or -1).
  std::vector<std::vector<std::pair<int, int>>> inputs;
  /// Per step output: the worker that returns it (-1: an input returned as it is) and its
  /// index among that worker's results.
  std::vector<int> output_worker, output_ext;
  int num_transfers = 0;
  /// Every worker's stream, one instruction per line.
  std::string to_string() const;
};

/// The streams that run `plan` on `staged`: per task, receive the inputs other workers
/// computed, run the segment, send its results to the workers that use them and add the
/// step's outputs into their (mean) accumulators; free every slot after its last use.
/// With `replicas` > 1 (data parallelism: each replica runs these streams on its own
/// microbatches), every output averaged over the microbatches is averaged over the replicas
/// by an AllReduce right after its last accumulation, and the cross-stage sums span the
/// replicas too. Each cross-stage sum (staged.sums) is an AllReduce among the workers computing its parts and
/// the epilogue's, after their last task; the epilogue runs after it.
/// Receives are posted `recv_lookahead` tasks ahead of the task that reads them (before the
/// worker runs the tasks in between, so the transfer completes while they compute) and
/// waited for just before it; sends follow the run that produces their value.
/// Empty segments (a stage without a weight half) run nothing. `donated[i]` marks step
/// inputs whose arrays the call may free. With `overlap_reductions`, the replicas' AllReduce
/// of an output is an all_reduce_start right after its last accumulation and an
/// all_reduce_wait after the worker's last task (before the cross-stage sums and the
/// epilogue), so that it travels while the remaining backward tasks run; the sums are the same.
Streams make_streams(const StagedProgram& staged, const Plan& plan, const std::vector<bool>& donated,
                     int recv_lookahead = 1, int replicas = 1, bool overlap_reductions = true);

/// Checks what the runtime relies on: every send has exactly one receive (same tag, the two
/// workers, same aval) and the reverse; every posted receive is waited for once, before its
/// slot is read; every slot is written before it is read and never read after it is freed;
/// every slot written is freed. Throws Error naming the worker and
/// instruction.
void check_streams(const Streams& streams, const StagedProgram& staged);

/// Per worker, the largest number of microbatches whose computed values (run results and
/// received values, from their wait) are held at once: the activation memory the schedule
/// keeps in flight. Receives posted ahead (the lookahead's transfer buffers: one task's
/// inputs) are not counted.
std::vector<int> peak_live_microbatches(const Streams& streams, const StagedProgram& staged);

}  // namespace tessel::pipeline::detail

namespace tessel::ir {
class Writer;
class Reader;
}  // namespace tessel::ir

namespace tessel::pipeline::detail {
/// A stream as bytes (the driver sends each worker its own).
void write_stream(ir::Writer& w, const std::vector<Instruction>& stream);
std::vector<Instruction> read_stream(ir::Reader& r);
}  // namespace tessel::pipeline::detail
