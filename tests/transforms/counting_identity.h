#pragma once
// A test-only primitive: the identity, counting how often its kernel runs (primal
// evaluations), optionally with effects; its tangent passes through and it batches in place.
#include <atomic>
#include <cstring>

#include "ir/primitive.h"
#include "ir/trace.h"
#include "tessel/tessel.h"

namespace transform_testing {

/// One counting identity per `Tag` type: `CountingIdentity<Tag>::define("name")` registers it.
template <class Tag> struct CountingIdentity {
  static inline std::atomic<int> runs{0};
  static void kernel(const tessel::ir::KernelCall& c) {
    ++runs;
    std::memcpy(c.outs[0], c.ins[0], c.out_avals[0].nbytes());
  }
  static std::vector<tessel::Aval> aval(std::span<const tessel::Aval> in, const tessel::ir::Params&) { return {in[0]}; }
  static std::vector<tessel::Array> jvp(const tessel::ir::Primitive&, std::span<const tessel::Array>,
                                        std::span<const tessel::Array> t, std::span<const tessel::Array>,
                                        const tessel::ir::Params&) {
    return {t[0]};
  }
  static tessel::ir::Batched batch(const tessel::ir::Primitive& self, std::span<const tessel::Array> ins,
                                   std::span<const int64_t> dims, const tessel::ir::BatchAxis&,
                                   const tessel::ir::Params& params) {
    return {tessel::detail::bind(self, ins, params), {dims[0]}};
  }
  static const tessel::ir::Primitive& define(const char* name, uint32_t effects = tessel::ir::kNoEffect) {
    return tessel::ir::register_primitive(
        {.name = name, .abstract_eval = aval, .cpu_kernel = kernel, .effects = effects, .jvp = jvp, .batch = batch});
  }
};

}  // namespace transform_testing
