#pragma once
// The exponential-integral primitives (special.cpp) for scipy::special, which has their public
// names: jax.lax has no such functions, so they get no lax-level entry point. And the
// primitives that let ts::random's samplers compute what JAX computes, bit for bit.
#include "ir/primitive.h"
#include "tessel/array.h"

namespace tessel::ops {

/// Ei(x) (scipy.special.expi).
Array expi(const Array& x);
/// E_1(x) (scipy.special.exp1).
Array exp1(const Array& x);
/// E_n(x) for integer n >= 0 (scipy.special.expn); n and x promoted and broadcast together.
Array expn(const Array& n, const Array& x);

/// e^x as XLA's CPU backend computes it (scalar::xla_exp: Cephes' polynomial in float32,
/// XLA's rational intrinsic in float64; half types through float32). Used by the random
/// samplers so that lognormal, pareto, ... equal JAX's draws; ts::exp stays libm's.
Array xla_exp(const Array& x);
/// log(x) as XLA's CPU backend computes it (Cephes' polynomial in float32, libm's scalar log
/// in float64).
Array xla_log(const Array& x);
/// log(1 + x) as XLA's CPU backend computes it (a Cephes rational below sqrt(2) - 1, xla_log
/// of 1 + x above).
Array xla_log1p(const Array& x);
/// erf(x) as XLA's CPU backend computes it (Eigen's rational interpolant in float32, as
/// tessel::erf; libm's scalar erf in float64, where tessel::erf takes libmvec's vector form).
Array xla_erf(const Array& x);
/// x^y as XLA's CPU backend computes it: glibc's scalar powf/pow with subnormals flushed to
/// zero as XLA's kernels run (half types through float32); x and y promoted and broadcast
/// together. ts::pow stays libmvec's vector form.
Array xla_pow(const Array& x, const Array& y);
/// The primitive xla_pow binds (jit rewrites its literal exponents 2, 3 and -1 as XLA does).
extern const ir::Primitive& xla_pow_p;
/// tan(x) as XLA's CPU backend computes it: glibc's scalar tanf/tan, subnormals flushed.
Array xla_tan(const Array& x);
/// 1/sqrt(x) as XLA's CPU backend computes it: the processor's estimate (rsqrtss in float32,
/// AVX-512's rsqrt14 in float64) refined by Newton steps, so equal to JAX's on the same
/// processor (half types through float32). Without AVX-512, float64 starts from 1/sqrt(x).
Array xla_rsqrt(const Array& x);
/// a * b + c rounded once (a fused multiply-add), floating operands promoted and broadcast
/// together: what XLA computes for JAX's `a * b + c` where its CPU code contracts the two.
Array fma(const Array& a, const Array& b, const Array& c);
/// The primitive `fma` binds (jit's multiply-add contraction emits its equations).
extern const ir::Primitive& fma_p;

}  // namespace tessel::ops
