#pragma once
// Runs a unary block form of backend/cpu/vector_math.h over a kernel's whole (contiguous)
// operand, split over the shared thread arena: the unfused kernels of the element-wise
// transcendental and special-function primitives, and of fma.
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

/// out = fma(a, b, c) element-wise with fma_block, each operand of the output's shape or of
/// rank 0 (broadcast): the unfused kernel of the fma primitive on float and double.
template <class T> void run_fma_block(const KernelCall& c) {
  const int64_t n = c.out_avals[0].size();
  unsigned broadcast = 0;
  for (unsigned k = 0; k < 3; ++k) broadcast |= unsigned(c.in_avals[k].shape.empty() && n != 1) << k;
  const T *a = c.in<T>(0), *b = c.in<T>(1), *x = c.in<T>(2);
  T* out = c.out<T>(0);
  auto at = [&](const T* p, unsigned k, int64_t lo) { return broadcast >> k & 1 ? p : p + lo; };
  auto body = [&](int64_t lo, int64_t hi) { cpu::fma_block(at(a, 0, lo), at(b, 1, lo), at(x, 2, lo), out + lo, hi - lo, broadcast); };
  if (n <= kElementwiseGrain) body(0, n);
  else cpu::parallel_for(n, kElementwiseGrain, body);
}

}  // namespace tessel::ops
