#pragma once
// Block forms of the transcendental element-wise functions for the unfused kernels: loops over
// the scalar functions of backend/cpu/scalar.h, compiled (vector_math.cpp) so that GCC
// vectorises them with glibc's libmvec, as it does in generated kernels. One build runs on any
// x86-64: each loop is compiled for AVX-512, AVX2 and the baseline, chosen at load time.
#include <cstdint>
#include <string_view>

namespace tessel::cpu {

/// out[i] = f(x[i]) for i < n.
template <class T> using VectorUnaryFn = void (*)(const T* x, T* out, int64_t n);
/// out[i] = f(a[i], b[i]) for i < n.
template <class T> using VectorBinaryFn = void (*)(const T* a, const T* b, T* out, int64_t n);

/// The block form of the unary scalar::<name> for T (float or double), or nullptr when it has
/// none (the caller then loops over the scalar function).
template <class T> VectorUnaryFn<T> vector_unary(std::string_view name);
/// The block form of the binary scalar::<name> (pow, atan2), or nullptr.
template <class T> VectorBinaryFn<T> vector_binary(std::string_view name);
/// out[i] = scalar::fma(a[i], b[i], c[i]) for i < n (T float or double), in the processor's
/// fused multiply-add instructions where it has them (the library itself is built for plain
/// x86-64, where std::fma is a libm call per element). Bit k of `broadcast` set: operand k
/// (a, b, c) is one value, read for every i.
template <class T> void fma_block(const T* a, const T* b, const T* c, T* out, int64_t n, unsigned broadcast);

}  // namespace tessel::cpu
