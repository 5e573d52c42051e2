#pragma once
// oneDNN binding: float32 convolutions (forward, data gradient, weights gradient) on dense
// tensors of any layout, described by their logical dimensions in oneDNN's order and the
// strides of the memory that holds them, so callers hand over their buffers in place.
//
// oneDNN picks its implementation (a JIT kernel for the machine's vector ISA where one fits)
// and the weights layout it wants; tensors whose layout the chosen implementation does not
// read are reordered into and out of scratch buffers. Primitives are cached per problem.
// oneDNN runs on its own OpenMP threads (Debian's libdnnl is built with OpenMP).
#include <cstdint>
#include <string>
#include <vector>

namespace tessel::cpu::dnnl {

/// A tensor as oneDNN sees it: logical dimensions in oneDNN's order ({N, C, spatial...} for
/// data, {O, I, spatial...} or {G, O/G, I/G, spatial...} for grouped weights) and the
/// strides, in elements, of the memory that holds them.
struct TensorView {
  std::vector<int64_t> dims, strides;
};

/// Which oneDNN convolution runs: forward reads src and weights and writes dst; backward
/// data reads weights and dst (the output gradient) and writes src (the input gradient);
/// backward weights reads src and dst and writes weights.
enum class ConvPass { kForward, kBackwardData, kBackwardWeights };

/// One convolution in oneDNN's terms. `dilates` counts the gaps between kernel taps
/// (oneDNN's convention: a dilation of d is d - 1); padding may be negative.
struct ConvProblem {
  ConvPass pass = ConvPass::kForward;
  TensorView src, weights, dst;
  std::vector<int64_t> strides, dilates, pad_l, pad_r;
};

/// The buffers of a ConvProblem (the one its pass writes is written, the others read).
struct ConvBuffers {
  float* src;
  float* weights;
  float* dst;
};

/// Runs `p` on `b`; false (nothing written) where oneDNN has no implementation for it, or
/// only its reference one (the caller's own loops are then as good).
bool convolution(const ConvProblem& p, const ConvBuffers& b);

/// C (M x N, row-major, leading dimension ldc) = op(A) * op(B) in float32 with oneDNN's
/// sgemm, on the calling thread only (its OpenMP team is set to one thread for the call and
/// restored afterwards, so callers split products over tessel's arena as they split BLAS
/// calls). op(A) is M x K: A stored row-major with leading dimension lda, or its transpose
/// when `trans_a`; likewise op(B), K x N. False (C untouched) where oneDNN refuses the call.
bool sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
           const float* b, int64_t ldb, float* c, int64_t ldc);

/// The name of the implementation oneDNN chose for `p` ("brgconv:avx512_core", "jit:avx2",
/// "gemm:jit"), or "" where it has none it would run; for documentation and benchmarks.
std::string convolution_impl(const ConvProblem& p);

}  // namespace tessel::cpu::dnnl
