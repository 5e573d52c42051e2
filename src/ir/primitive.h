#pragma once
// A primitive operation, declared once with all its rules side by side (ARCHITECTURE.md
// principle 2). Transformation issues add their rule slots here, beside the kernel.
#include <span>
#include <string>
#include <vector>

#include "ir/params.h"
#include "tessel/array.h"

namespace tessel::detail {
class DeviceImpl;
}

namespace tessel::ir {

/// Effects of an equation. An effectful equation is never removed by DCE, merged by CSE or
/// folded; ordered effects keep their program order.
enum Effect : uint32_t {
  kNoEffect = 0,
  kSideEffect = 1u << 0,  ///< must run even if its outputs are unused
  kOrdered = 1u << 1,     ///< must run in program order with other ordered effects
};

/// How the fusion pass may group the primitive (used by the compiler issue).
enum class FusionKind { kOpaque, kElementwise, kBroadcast, kShape, kReduction };

/// The arguments of a CPU kernel: input and output buffers (dense, row-major) and avals.
struct KernelCall {
  std::span<const Aval> in_avals;
  std::span<const void* const> ins;
  std::span<const Aval> out_avals;
  std::span<void* const> outs;
  const Params& params;
  detail::DeviceImpl* device;
  template <class T> const T* in(size_t i) const { return static_cast<const T*>(ins[i]); }
  template <class T> T* out(size_t i) const { return static_cast<T*>(outs[i]); }
};

using AbstractEvalFn = std::vector<Aval> (*)(std::span<const Aval> ins, const Params& params);
using KernelFn = void (*)(const KernelCall& call);
/// For primitives whose evaluation is not one kernel (jit calls, transfers): runs eagerly on
/// concrete arrays.
using EagerImplFn = std::vector<Array> (*)(std::span<const Array> ins, const Params& params);

struct Primitive {
  std::string name;
  /// Output avals from input avals; throws a tessel::Error naming the op on bad input.
  AbstractEvalFn abstract_eval = nullptr;
  /// The CPU kernel.
  KernelFn cpu_kernel = nullptr;
  /// Overrides kernel dispatch for eager evaluation, when set.
  EagerImplFn eager_impl = nullptr;
  uint32_t effects = kNoEffect;
  FusionKind fusion = FusionKind::kOpaque;
};

/// Registers a primitive; the returned reference is stable for the program's life.
/// Throws if the name is taken.
const Primitive& register_primitive(Primitive p);
/// Looks a primitive up by name (for deserialization); throws if unknown.
const Primitive& lookup_primitive(std::string_view name);

}  // namespace tessel::ir
