#pragma once
// Runs a unary block form of backend/cpu/vector_math.h over a kernel's whole (contiguous)
// operand, split over the shared thread arena: the unfused kernels of the element-wise
// transcendental and special-function primitives.
#include "backend/cpu/vector_math.h"
#include "ops/op_util.h"

namespace tessel::ops {

/// out = block(in) element-wise over the kernel's single operand; false when `block` is null
/// (the function has no block form for T).
template <class T> bool run_unary_block(const KernelCall& c, cpu::VectorUnaryFn<T> block) {
  if (!block) return false;
  const int64_t n = c.out_avals[0].size();
  const T* x = c.in<T>(0);
  T* out = c.out<T>(0);
  auto body = [&](int64_t lo, int64_t hi) { block(x + lo, out + lo, hi - lo); };
  if (n <= kElementwiseGrain) body(0, n);
  else cpu::parallel_for(n, kElementwiseGrain, body);
  return true;
}

}  // namespace tessel::ops
