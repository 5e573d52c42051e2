#pragma once
// Internal interface of the element-wise primitive table (elementwise.cpp) for the
// jax.numpy-level functions (numpy_elementwise.cpp): dtype classes and primitive handles.
#include <cstdint>
#include <string>

#include "ops/op_util.h"

namespace tessel::ops {

// ---- dtype classes ----
enum Class : uint8_t { kBool = 1, kSigned = 2, kUnsigned = 4, kFloat = 8, kComplex = 16 };
constexpr uint8_t kInt = kSigned | kUnsigned, kReal = kInt | kFloat, kNum = kReal | kComplex,
                  kInexact = kFloat | kComplex, kAll = kNum | kBool, kLogic = kBool | kInt,
                  kOrderable = kBool | kReal;

/// Throws DTypeError "op: dtype X is not supported; expected <the classes of mask>" unless
/// `d` belongs to one of the classes in `mask`.
void check_class(const std::string& op, DType d, uint8_t mask);

/// An element-wise primitive and the dtype classes it accepts.
struct Elementwise {
  const ir::Primitive& prim;
  uint8_t mask;
};

// The rows of the table in elementwise.cpp; identifiers that would be C++ keywords end in '_'.
extern const Elementwise add_p, sub_p, mul_p, div_p, rem_p, pow_p, max_p, min_p, atan2_p;
extern const Elementwise neg_p, abs_p, sign_p, floor_p, ceil_p, round_p, is_finite_p;
extern const Elementwise exp_p, exp2_p, expm1_p, log_p, log1p_p, sqrt_p, rsqrt_p, cbrt_p, sin_p, cos_p, tan_p,
    asin_p, acos_p, atan_p, sinh_p, cosh_p, tanh_p, asinh_p, acosh_p, atanh_p, erf_p, erfc_p, logistic_p;
extern const Elementwise eq_p, ne_p, lt_p, le_p, gt_p, ge_p;
extern const Elementwise and__p, or__p, xor__p, not__p, shift_left_p, shift_right_p;
extern const Elementwise real_p, imag_p, conj_p, complex_p;

/// integer_pow[y](x): x^y for a static integer y.
extern const ir::Primitive& integer_pow_p;
/// select_n(pred, on_false, on_true), as lax.select_n with two cases.
extern const ir::Primitive& select_n_p;

}  // namespace tessel::ops
