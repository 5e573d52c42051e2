#pragma once
// How the IR layer runs what it does not trace. `bind` outside every trace applies a
// primitive to concrete arrays, and the kernels of control flow run body programs inside a
// device task; both need layers above ir (eager dispatch in runtime, executables in
// compiler, the SPMD partitioner in sharding). This is the one interface through which ir
// reaches them: it has one implementation, the top of dispatch in src/sharding/dispatch.cpp,
// which installs it when the library loads.
#include <memory>
#include <span>
#include <vector>

#include "ir/params.h"
#include "tessel/array.h"

namespace tessel::detail {
class DeviceImpl;
}

namespace tessel::ir {

struct Primitive;
struct Program;

class Evaluator {
 public:
  virtual ~Evaluator() = default;
  /// Applies `p` to concrete arrays (eager dispatch): on their device, or partitioned when
  /// they span several devices or `p` partitions itself.
  virtual std::vector<Array> eval_primitive(const Primitive& p, std::span<const Array> ins,
                                            const Params& params) const = 0;
  /// Runs `program` synchronously on dense buffers of `device` (inside a device task).
  virtual void run_program(const std::shared_ptr<const Program>& program, std::span<const void* const> ins,
                           std::span<void* const> outs, detail::DeviceImpl* device) const = 0;
};

/// Installs the implementation (once; src/sharding/dispatch.cpp).
void install_evaluator(const Evaluator& e);
/// The installed implementation; an internal Error if there is none.
const Evaluator& evaluator();

}  // namespace tessel::ir
