// Compiled with -fno-math-errno and -ffp-contract=off (CMakeLists.txt): scalar.h then declares
// libmvec's vector forms, and the loops below round each operation as generated code does.
#include "backend/cpu/vector_math.h"

#include <algorithm>
#include <cstring>

#include "backend/cpu/scalar.h"
#include "backend/cpu/scalar_special.h"

namespace tessel::cpu {
namespace {

#if defined(TESSEL_VECTOR_LIBM)
// One clone per ISA; the loader's resolver picks the widest the CPU has, and in each clone the
// vectoriser calls libmvec's forms of that width.
#define TESSEL_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define TESSEL_CLONES
#endif

// Every element goes through the same vector form, whatever the length and offset of the
// block: the loop runs whole groups of kLanes elements, and the last partial group is padded
// in a local buffer (a compiler's remainder loop would call narrower or scalar forms, whose
// last bits differ, so a vmapped array and its examples computed apart would disagree).
// The group loop is kept rolled (unroll 1), as the vectoriser uses libmvec only in loops.
// Groups are copied into locals, so the output may be the input (unfused kernels write in
// place) without run-time overlap checks.
constexpr int64_t kLanes = 16;

/// Runs `group(in, out, count)` over [0, n) in groups of kLanes elements copied in and out of
/// locals (constant-size copies on whole groups; the last one padded with zeros).
template <class T, class Group> __attribute__((always_inline)) inline void by_groups(int64_t n, Group&& group) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) group(i, kLanes);
  if (i < n) group(i, n - i);
}

#define TESSEL_VECTOR_UNARY(NAME)                                                                   \
  template <class T> TESSEL_CLONES void NAME##_block(const T* x, T* out, int64_t n) {              \
    by_groups<T>(n, [&](int64_t i, int64_t m) __attribute__((always_inline)) {                     \
      T in[kLanes] = {}, res[kLanes];                                                              \
      if (m == kLanes) std::memcpy(in, x + i, sizeof in);                                          \
      else std::memcpy(in, x + i, size_t(m) * sizeof(T));                                          \
      _Pragma("GCC unroll 1") for (int64_t j = 0; j < kLanes; ++j) res[j] = scalar::NAME(in[j]);   \
      if (m == kLanes) std::memcpy(out + i, res, sizeof res);                                      \
      else std::memcpy(out + i, res, size_t(m) * sizeof(T));                                       \
    });                                                                                            \
  }
#define TESSEL_VECTOR_BINARY(NAME)                                                                  \
  template <class T> TESSEL_CLONES void NAME##_block(const T* a, const T* b, T* out, int64_t n) {  \
    by_groups<T>(n, [&](int64_t i, int64_t m) __attribute__((always_inline)) {                     \
      T in_a[kLanes] = {}, in_b[kLanes] = {}, res[kLanes];                                         \
      if (m == kLanes) {                                                                           \
        std::memcpy(in_a, a + i, sizeof in_a);                                                     \
        std::memcpy(in_b, b + i, sizeof in_b);                                                     \
      } else {                                                                                     \
        std::memcpy(in_a, a + i, size_t(m) * sizeof(T));                                           \
        std::memcpy(in_b, b + i, size_t(m) * sizeof(T));                                           \
      }                                                                                            \
      _Pragma("GCC unroll 1") for (int64_t j = 0; j < kLanes; ++j) res[j] =                        \
          scalar::NAME(in_a[j], in_b[j]);                                                          \
      if (m == kLanes) std::memcpy(out + i, res, sizeof res);                                      \
      else std::memcpy(out + i, res, size_t(m) * sizeof(T));                                       \
    });                                                                                            \
  }
// The functions libmvec has (scalar.h), logistic (exp and a select), erf_inv and XLA's exp, log
// and log1p (polynomials) and the special functions written as selects (scalar_special.h).
#define TESSEL_VECTOR_UNARY_FUNCTIONS(X)                                                                      \
  X(exp) X(exp2) X(expm1) X(log) X(log1p) X(cbrt) X(sin) X(cos) X(tan) X(asin) X(acos) X(atan) X(sinh) X(cosh) \
  X(tanh) X(asinh) X(acosh) X(atanh) X(erf) X(erfc) X(logistic) X(erf_inv) X(lgamma) X(digamma) X(bessel_i0e)  \
  X(bessel_i1e) X(xla_exp) X(xla_log) X(xla_log1p) X(xla_erf)
#define TESSEL_VECTOR_BINARY_FUNCTIONS(X) X(pow) X(atan2)
TESSEL_VECTOR_UNARY_FUNCTIONS(TESSEL_VECTOR_UNARY)
TESSEL_VECTOR_BINARY_FUNCTIONS(TESSEL_VECTOR_BINARY)

#if defined(__x86_64__)
// The FMA instructions came with AVX2 but are a separate ISA flag: "fma" is the AVX2-era clone.
#define TESSEL_FMA_CLONES __attribute__((target_clones("avx512f", "fma", "default")))
#else
#define TESSEL_FMA_CLONES
#endif

template <class T> TESSEL_FMA_CLONES void fma_groups(const T* a, const T* b, const T* c, T* out, int64_t n, unsigned broadcast) {
  by_groups<T>(n, [&](int64_t i, int64_t m) __attribute__((always_inline)) {
    T in[3][kLanes] = {}, res[kLanes];
    const T* src[3] = {a, b, c};
    for (int k = 0; k < 3; ++k) {
      if (broadcast >> k & 1) std::fill_n(in[k], kLanes, src[k][0]);
      else if (m == kLanes) std::memcpy(in[k], src[k] + i, sizeof in[k]);
      else std::memcpy(in[k], src[k] + i, size_t(m) * sizeof(T));
    }
    for (int64_t j = 0; j < kLanes; ++j) res[j] = scalar::fma(in[0][j], in[1][j], in[2][j]);
    if (m == kLanes) std::memcpy(out + i, res, sizeof res);
    else std::memcpy(out + i, res, size_t(m) * sizeof(T));
  });
}

}  // namespace

template <class T> void fma_block(const T* a, const T* b, const T* c, T* out, int64_t n, unsigned broadcast) {
  fma_groups(a, b, c, out, n, broadcast);
}

template <class T> VectorUnaryFn<T> vector_unary(std::string_view name) {
#define TESSEL_FIND(NAME) \
  if (name == #NAME) return NAME##_block<T>;
  TESSEL_VECTOR_UNARY_FUNCTIONS(TESSEL_FIND)
  return nullptr;
}
template <class T> VectorBinaryFn<T> vector_binary(std::string_view name) {
  TESSEL_VECTOR_BINARY_FUNCTIONS(TESSEL_FIND)
  return nullptr;
#undef TESSEL_FIND
}

template VectorUnaryFn<float> vector_unary<float>(std::string_view);
template VectorUnaryFn<double> vector_unary<double>(std::string_view);
template VectorBinaryFn<float> vector_binary<float>(std::string_view);
template VectorBinaryFn<double> vector_binary<double>(std::string_view);
template void fma_block<float>(const float*, const float*, const float*, float*, int64_t, unsigned);
template void fma_block<double>(const double*, const double*, const double*, double*, int64_t, unsigned);

}  // namespace tessel::cpu
