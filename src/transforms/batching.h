#pragma once
// Vectorization (vmap): the batch trace, whose tracers carry a value and the index of its
// batch dimension, and the program-to-program batching used by calls and control flow.
#include <optional>

#include "ir/trace.h"

namespace tessel::detail {

class BatchTrace final : public Trace {
 public:
  explicit BatchTrace(ir::BatchAxis axis) : axis_(std::move(axis)) {
    axis_.trace = this;
    axis_.trace_id = id();
  }
  std::vector<Array> process_primitive(const ir::Primitive& p, std::span<const Array> ins,
                                       const ir::Params& params) override;
  /// A value of this trace (dim == kNotBatched gives `value` itself).
  Array pack(const Array& value, int64_t dim);
  /// The value and its batch dimension (kNotBatched for values of other traces).
  std::pair<Array, int64_t> unpack(const Array& x) const;
  const ir::BatchAxis& axis() const { return axis_; }

 private:
  ir::BatchAxis axis_;
};

class BatchTracer final : public Tracer {
 public:
  BatchTracer(Array value, int64_t dim, Trace* trace);
  Array value;
  int64_t dim;
};

/// Runs `fn` vectorized: `in_dims[i]` is the batch dimension of args[i] (kNotBatched for
/// unbatched ones); outputs are returned with their batch dimension moved to `out_dims[i]`
/// (nullopt: the output must be unbatched; one entry applies to all outputs, none means 0).
/// `axis.size` must agree with the inputs.
std::vector<Array> vmap_eval(const std::function<std::vector<Array>(std::span<const Array>)>& fn,
                             std::span<const Array> args, std::span<const int64_t> in_dims,
                             std::span<const std::optional<int64_t>> out_dims, const ir::BatchAxis& axis,
                             const std::string& op = "vmap");

/// Runs `fn` with every input and output batched at 0: on the trace of `axis` while it is
/// live (so values `fn` closed over from that vmap batch correctly), else on a fresh one.
std::vector<Array> batch_at_front(const std::function<std::vector<Array>(std::span<const Array>)>& fn,
                                  std::span<const Array> args, const ir::BatchAxis& axis);

/// The batched program and its output batch dims: batched outputs are moved to dimension 0;
/// unbatched ones stay unbatched (kNotBatched) unless `force[i]` (or `force_all`) broadcasts
/// them, as loop carries and branches need.
struct BatchedProgram {
  ir::ProgramRef program;
  std::vector<int64_t> out_dims;
};
BatchedProgram batch_program(const ir::Program& p, const std::vector<int64_t>& in_dims, const ir::BatchAxis& axis,
                             const std::vector<bool>& force = {}, bool force_all = false);

}  // namespace tessel::detail
