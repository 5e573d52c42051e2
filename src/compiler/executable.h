#pragma once
// An executable: a simplified program turned into a flat list of kernel steps over numbered
// buffer slots, with a buffer plan: which step writes in place into an input that dies
// there, which output takes the memory of a buffer that died before, and when the rest is
// freed. It runs as one task on the device stream.
#include <iosfwd>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/array_impl.h"
#include "ir/program.h"
#include "runtime/spmd_context.h"

namespace tessel::compiler {

class Executable : public std::enable_shared_from_this<Executable> {
 public:
  /// `donated[i]` >= 0 marks input i as donated: it is argument `donated[i]` of the jitted
  /// function (named in errors), and `run` may reuse its buffer, invalidating the array.
  /// Throws NotImplementedError if an equation has no CPU kernel.
  explicit Executable(std::shared_ptr<const ir::Program> program, std::vector<int> donated = {});
  /// How `run` places a run (all optional).
  struct RunOptions {
    /// The device to run on; null: where the arguments are (detail::result_device).
    detail::DeviceImpl* device = nullptr;
    /// Installed on the device's thread while the steps run: a partitioned program on a
    /// one-device mesh runs this way (its collectives and callbacks read the context).
    std::shared_ptr<const detail::SpmdContext> context;
    /// Outputs are committed to the device even when no argument is.
    bool commit_outputs = false;
  };
  /// Runs on concrete arrays (dispatch returns at once; outputs become ready later).
  std::vector<Array> run(std::span<const Array> args, const RunOptions& options) const;
  std::vector<Array> run(std::span<const Array> args) const { return run(args, RunOptions{}); }
  /// Runs synchronously on the calling thread, on dense input and output buffers (control
  /// flow kernels run their bodies this way). Inputs are never written.
  void run_sync(std::span<const void* const> ins, std::span<void* const> outs, detail::DeviceImpl* dev) const;
  /// The program with the buffer plan (steps in place, reused buffers, peak bytes); `note`
  /// adds a comment to equations' lines (ir::print_program).
  std::string to_text(const ir::EquationNote& note = {}) const;
  const ir::Program& program() const { return *program_; }

 private:
  /// The overlap schedule's lines (make_overlap), each starting with `prefix`, then those of
  /// the executables the steps' nested programs run as (a loop body, a cond branch: the
  /// cached ones their kernels run), prefixed with the step and the program's name.
  void overlap_lines(std::ostream& os, const std::string& prefix) const;
  enum class SlotKind { kInput, kConst, kIntermediate };
  struct Step {
    const ir::Primitive* prim;
    std::vector<int> ins, outs;
    std::vector<Aval> in_avals, out_avals;
    const ir::Params* params;
  };
  /// Where each step's outputs get their memory and which slots' memory it frees.
  struct StepPlan {
    std::vector<int> take;       // per output: the slot whose memory it takes, or -1 (allocate)
    std::vector<char> in_place;  // per output: `take` is an input of this step
    std::vector<int> release;    // slots whose memory goes back to the allocator after the step
  };
  struct Output {
    int slot;  // -1 for a literal output
    Scalar literal;
    bool weak = false;
  };
  /// How a step runs when collective_permutes overlap the steps after them (make_overlap):
  /// kStart posts a permute (it finishes at the next flush); kDefer postpones a cheap step
  /// that reads received rows (slices of the message) to the next flush; kSplit runs the
  /// rows of a loop nest that read no received rows, flushes, then runs the rest; kFlush
  /// flushes before the step runs. A flush finishes the posted permutes in order, then runs
  /// the postponed steps; one ends every run.
  enum class Overlap : char { kRun, kStart, kDefer, kSplit, kFlush };
  struct OverlapStep {
    Overlap how = Overlap::kRun;
    int64_t begin = 0, end = 0, rows = 0;  // kSplit: the rows run before the flush, of `rows`
    std::vector<char> late;                // kSplit: per input, whether it is received rows
  };
  /// Memory of one run: the slots' data pointers and the memory the run owns.
  struct RunState;
  /// The overlap schedule for buffer plan `plan` (all kRun when nothing overlaps).
  std::vector<OverlapStep> make_overlap(const std::vector<StepPlan>& plan) const;
  /// Runs step t whole (allocating its outputs and releasing what the plan says).
  void run_step(RunState& rs, size_t t, const StepPlan& sp, detail::DeviceImpl* dev) const;
  /// Gives step t's outputs their memory.
  void allocate_outputs(RunState& rs, size_t t, const StepPlan& sp, detail::DeviceImpl* dev,
                        std::vector<void*>& outs) const;
  /// Plans the buffers; `outputs_own_memory` is false when program outputs are written
  /// into the caller's memory (run_sync).
  std::vector<StepPlan> make_plan(bool outputs_own_memory) const;
  void run_steps(RunState& rs, const std::vector<StepPlan>& plan, detail::DeviceImpl* dev) const;
  bool reusable(size_t slot) const;

  std::shared_ptr<const ir::Program> program_;
  std::vector<SlotKind> slot_kind_;
  std::vector<Aval> slot_aval_;
  std::vector<int> last_use_;     // by slot: the last step reading it, or -1
  std::vector<char> is_output_;   // by slot: a program output
  std::vector<int> donated_;      // by input: the donated argument's number, or -1
  std::vector<std::shared_ptr<detail::Buffer>> const_buffer_;  // by slot (consts and literals)
  std::vector<Array> const_arrays_;                            // keeps consts alive
  std::vector<Step> steps_;
  std::vector<StepPlan> plan_run_, plan_sync_;
  std::vector<OverlapStep> overlap_run_, overlap_sync_;  // empty: nothing overlaps
  std::vector<Output> outputs_;
  size_t work_bytes_ = 0;  // bytes all steps read and write (decides inline execution)
};

}  // namespace tessel::compiler
