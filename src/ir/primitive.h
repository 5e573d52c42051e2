#pragma once
// A primitive operation, declared once with all its rules side by side (ARCHITECTURE.md
// principle 2). Transformation issues add their rule slots here, beside the kernel.
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ir/index_map.h"
#include "ir/params.h"
#include "ir/regions.h"
#include "ir/sharding_rule.h"
#include "tessel/array.h"

namespace tessel::detail {
class DeviceImpl;
class Trace;
}

namespace tessel::ir {

/// Effects of an equation. An effectful equation is never removed by DCE, merged by CSE or
/// folded; ordered effects keep their program order.
enum Effect : uint32_t {
  kNoEffect = 0,
  kSideEffect = 1u << 0,  ///< must run even if its outputs are unused
  kOrdered = 1u << 1,     ///< must run in program order with other ordered effects
  kRematReplay = 1u << 2, ///< repeats are harmless: checkpoint replays it, vmap repeats it (host taps)
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
/// A kernel that exchanges data, in two halves, for a caller that computes in between
/// (compiler/executable.cpp overlaps halo exchanges with the work that does not need them):
/// sends the inputs (their buffers may be reused once it returns) and starts the receive;
/// returns the second half, which waits for the message and writes the outputs (their
/// buffers must stay until then). Destroyed without being called, it leaves no pending
/// operation on the caller's memory.
using PostFn = std::function<void()> (*)(const KernelCall& call);
/// For primitives whose evaluation is not one kernel (jit calls, transfers): runs eagerly on
/// concrete arrays.
using EagerImplFn = std::vector<Array> (*)(std::span<const Array> ins, const Params& params);

// ---- transformation rules (src/transforms/ drives them; docs/transformations.md) ----
// Symbolic zeros: a tangent or cotangent that is an empty Array (`!valid()`) is zero; rules
// never see all-zero tangents (the trace skips them) but may see some zero.

struct Primitive;
/// Forward mode: tangents of the outputs (empty = zero) given the primal inputs, their
/// tangents and the primal outputs (already computed by binding the primitive).
using JvpFn = std::vector<Array> (*)(const Primitive& self, std::span<const Array> primals, std::span<const Array> tangents,
                                     std::span<const Array> outs, const Params& params);
/// Forward mode for primitives that compute their primal outputs themselves (calls, control
/// flow, custom rules): returns the primal outputs followed by the output tangents.
using JvpWithPrimalsFn = std::vector<Array> (*)(const Primitive& self, std::span<const Array> primals, std::span<const Array> tangents,
                                                const Params& params);
/// Reverse mode of a linear primitive. `args[i]` is the value of a non-linear input (a
/// residual), or empty for an input the primitive is linear in (its aval is `avals[i]`).
/// `cts` are the output cotangents (some may be empty = zero). Returns one cotangent per
/// input: empty for non-linear inputs and for zeros.
using TransposeFn = std::vector<Array> (*)(const Primitive& self, std::span<const Array> cts, std::span<const Array> args,
                                           std::span<const Aval> avals, const Params& params);
/// An input or output dimension that is not batched.
inline constexpr int64_t kNotBatched = -1;
/// The batched axis of vmap: its size, (for collectives over it) its name, and the trace
/// that maps it (rules that run user code, like custom_jvp's, re-enter it).
struct BatchAxis {
  int64_t size;
  std::string name;
  detail::Trace* trace = nullptr;
  uint64_t trace_id = 0;
};
/// Batching: outputs and their batch dimensions (kNotBatched allowed) given inputs whose
/// batch dimension is `dims[i]` (kNotBatched for unbatched inputs; at least one is batched).
struct Batched {
  std::vector<Array> outs;
  std::vector<int64_t> dims;
};
using BatchFn = Batched (*)(const Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims, const BatchAxis& axis,
                            const Params& params);
/// Partial evaluation (reverse mode splits programs into a known primal part and an
/// unknown linear part): for primitives that must split themselves (calls, control flow,
/// remat). `trace` is the partial-evaluation trace; inputs that are its tracers are unknown.
using PartialEvalFn = std::vector<Array> (*)(const Primitive& self, detail::Trace& trace, std::span<const Array> ins, const Params& params);

/// Code generation of an element-wise primitive (src/compiler/codegen.cpp): the C++
/// expression of one output element, of the output's C++ type, given the operands' element
/// expressions. Returns "" where a dtype or parameter has no generated form (the equation
/// then stays an unfused kernel).
using CodegenFn = std::string (*)(std::span<const std::string> operands, std::span<const Aval> in_avals,
                                  const Aval& out, const Params& params);

/// Code generation of a reduction fused as the epilogue of a loop nest
/// (src/compiler/codegen.cpp): C++ text of the accumulator's type, of its initial value, and
/// of the statement folding the value {v} into the accumulator {a}.
struct ReductionEpilogue {
  std::string acc_type;
  std::string identity;
  std::string combine;
};
/// The epilogue of a reduction of an operand of dtype `operand`, or nullopt where the dtype
/// has no generated form (the equation then stays an unfused kernel).
using ReductionEpilogueFn = std::optional<ReductionEpilogue> (*)(DType operand);

/// Work of computing one element inside a fused loop nest (Primitive::point_cost), counted in
/// cheap arithmetic operations; index mapping alone costs 0.
inline constexpr int kCheapPointCost = 1;       ///< add, compare, select, conversion, range test
inline constexpr int kDivisionPointCost = 4;    ///< div, sqrt, rsqrt
inline constexpr int kExpensivePointCost = 16;  ///< transcendental functions, pow, rem

/// In-place execution: the inputs whose buffer the kernel may write output `out` into (the
/// kernel is correct when outs[out] == ins[j] and no other input aliases ins[j]). An
/// executable writes in place when input j dies at this equation and its buffer belongs
/// to the run: an intermediate, or a donated argument (src/compiler/executable.cpp).
using InplaceFn = std::vector<size_t> (*)(size_t out, std::span<const Aval> in_avals, std::span<const Aval> out_avals,
                                          const Params& params);
/// InplaceFn of element-wise kernels (output element i computed from input elements i
/// only): every input with the output's shape and dtype.
std::vector<size_t> inplace_elementwise(size_t out, std::span<const Aval> in_avals, std::span<const Aval> out_avals,
                                        const Params& params);
/// InplaceFn of update kernels (scatter, dynamic_update_slice) that copy operand 0 into the
/// output and then write a region: they skip the copy when the output is the operand.
std::vector<size_t> inplace_operand(size_t out, std::span<const Aval> in_avals, std::span<const Aval> out_avals,
                                    const Params& params);

/// How many operands a primitive's rules and kernel read: at least `min`, at most `max`
/// (-1: no bound; the rules of such primitives check the count themselves).
struct Arity {
  int min = 0;
  int max = -1;
};

/// The bytes one device receives from the other devices when the equation runs (a
/// collective), from its per-device operand and result avals.
using CommBytesFn = int64_t (*)(std::span<const Aval> ins, std::span<const Aval> outs, const Params& params);

struct Primitive {
  std::string name;
  /// Abstract evaluation (ir/abstract_eval.h) rejects an equation with another operand
  /// count, so that no program (one read from bytes included) makes a rule read past them.
  Arity arity = {};
  /// Output avals from input avals; throws a tessel::Error naming the op on bad input.
  AbstractEvalFn abstract_eval = nullptr;
  /// The CPU kernel.
  KernelFn cpu_kernel = nullptr;
  /// The kernel in two halves (PostFn), for exchanges that overlap compute; null: it runs
  /// whole. Equal to cpu_kernel when the halves run back to back.
  PostFn post = nullptr;
  /// Outputs the kernel may write into a dead input's buffer (see InplaceFn); null: never.
  InplaceFn inplace = nullptr;
  /// Overrides kernel dispatch for eager evaluation, when set.
  EagerImplFn eager_impl = nullptr;
  uint32_t effects = kNoEffect;
  FusionKind fusion = FusionKind::kOpaque;
  CodegenFn codegen = nullptr;
  /// Code generation of an index-mapping primitive (ir/index_map.h): where each output
  /// element is read from, so that slices, pads, broadcasts, ... fuse into loop nests.
  IndexMapFn index_map = nullptr;
  /// Code generation of a reduction over params["axes"] as the epilogue of a loop nest that
  /// computes its operand (reduce_sum/max/min), so the operand is never stored.
  ReductionEpilogueFn reduction_epilogue = nullptr;
  /// Work per element in a fused loop nest (kCheapPointCost, ...): the fusion pass adds these
  /// to bound what a loop nest recomputes (TESSEL_FUSION_MAX_POINT_COST) and stores an
  /// expensive value that several loop nests read.
  int point_cost = kCheapPointCost;
  JvpFn jvp = nullptr;
  JvpWithPrimalsFn jvp_with_primals = nullptr;
  TransposeFn transpose = nullptr;
  BatchFn batch = nullptr;
  PartialEvalFn partial_eval = nullptr;
  /// SPMD partitioning (src/sharding/, ir/sharding_rule.h): the factor rule, the
  /// per-device parameters when they hold global sizes, or the rules of a primitive that
  /// partitions itself. None of them: computed on whole operands.
  ShardingRuleFn sharding_rule = nullptr;
  LocalizeFn localize = nullptr;
  const SpmdRules* spmd = nullptr;
  /// Control flow: how the nested programs in the parameters connect to the operands and
  /// results (ir/regions.h), so the partitioner works inside them; null for primitives
  /// without nested programs and for calls (which are inlined before partitioning).
  RegionsFn regions = nullptr;
  /// A collective's communication per device, printed next to it in a partitioned program's
  /// text (docs/sharding.md); null: the equation moves nothing between devices.
  CommBytesFn comm_bytes = nullptr;
  /// The equation calls params["program"] on its inputs (jit, checkpoint, custom_jvp/vjp):
  /// once transformations are done, the compiler may inline it.
  bool inlinable_call = false;
  /// The output is operand 0 with a region replaced by, or combined with, operand 1
  /// (scatter, dynamic_update_slice); run in place (inplace_operand), the kernel writes only
  /// the region. The fusion pass leaves a small update of a stored array such a step rather
  /// than a loop nest that writes the whole output.
  bool region_update = false;
  /// A matrix product (dot_general): what checkpoint's dots_saveable policy saves, as JAX's
  /// checkpoint_policies.dots_saveable saves dot_general and conv_general_dilated.
  bool matrix_product = false;
  /// The output is operand 0 divided by operand 1, element by element (div). Where operand 1
  /// does not change along the innermost loop of a fused loop nest (a row's sum, a constant),
  /// the generated code multiplies by its reciprocal, computed once per row, as XLA rewrites
  /// x / broadcast(s) into x * broadcast(1 / s): at most 1 ulp from the quotient
  /// (docs/performance.md, "Division by a row's value").
  bool quotient = false;
};

/// Runs `program` synchronously on dense buffers of `device` (for the kernels of control
/// flow, which run bodies inside a device task), through ir::evaluator() (ir/evaluator.h).
void run_program(const std::shared_ptr<const struct Program>& program, std::span<const void* const> ins,
                 std::span<void* const> outs, detail::DeviceImpl* device);

/// Registers a primitive; the returned reference is stable for the program's life.
/// Throws if the name is taken.
const Primitive& register_primitive(Primitive p);
/// Looks a primitive up by name (for deserialization); throws if unknown.
const Primitive& lookup_primitive(std::string_view name);

}  // namespace tessel::ir
