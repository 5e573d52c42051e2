#pragma once
// An executable: a simplified program turned into a flat list of kernel steps over numbered
// buffer slots, with intermediate buffers freed after their last use. It runs as one task
// on the device stream.
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/array_impl.h"
#include "ir/program.h"

namespace tessel::compiler {

class Executable : public std::enable_shared_from_this<Executable> {
 public:
  /// Throws NotImplementedError if an equation has no CPU kernel.
  explicit Executable(std::shared_ptr<const ir::Program> program);
  /// Runs on concrete arrays (dispatch returns at once; outputs become ready later).
  std::vector<Array> run(std::span<const Array> args) const;
  /// Runs synchronously on the calling thread, on dense input and output buffers (control
  /// flow kernels run their bodies this way).
  void run_sync(std::span<const void* const> ins, std::span<void* const> outs, detail::DeviceImpl* dev) const;
  /// The program with the buffer plan (slots and their release points).
  std::string to_text() const;
  const ir::Program& program() const { return *program_; }

 private:
  enum class SlotKind { kInput, kConst, kIntermediate };
  struct Step {
    const ir::Primitive* prim;
    std::vector<int> ins, outs;
    std::vector<Aval> in_avals, out_avals;
    const ir::Params* params;
    std::vector<int> release;  // intermediate slots dead after this step
  };
  struct Output {
    int slot;  // -1 for a literal output
    Scalar literal;
    bool weak = false;
  };
  /// Runs the steps; ptr holds the inputs' data, direct[s] (when set) is where slot s is
  /// written instead of a fresh buffer.
  void run_steps(std::vector<void*>& ptr, const std::vector<void*>& direct, detail::DeviceImpl* dev) const;
  std::shared_ptr<const ir::Program> program_;
  std::vector<SlotKind> slot_kind_;
  std::vector<Aval> slot_aval_;
  std::vector<std::shared_ptr<detail::Buffer>> const_buffer_;  // by slot (consts and literals)
  std::vector<Array> const_arrays_;                            // keeps consts alive
  std::vector<Step> steps_;
  std::vector<Output> outputs_;
  size_t work_bytes_ = 0;  // bytes written by all steps (decides inline execution)
};

}  // namespace tessel::compiler
