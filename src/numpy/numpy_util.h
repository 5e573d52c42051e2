#pragma once
// Helpers shared by src/numpy/ (jax.numpy's composed functions, include/tessel/numpy.h):
// JAX's promotion helpers and the floating-point layout numbers of a dtype.
#include <string>
#include <vector>

#include "ops/linalg_composed.h"
#include "ops/op_util.h"

namespace tessel::numpy {

/// jnp's promote_args_inexact: one common dtype, then integers and bool as the default float.
std::vector<Array> promote_inexact(std::vector<Array> xs);

/// The bit layout of a floating dtype (numpy.finfo's nmant, nexp and minexp) and the signed
/// integer dtype of the same width.
struct FloatLayout {
  int nmant;    ///< explicit mantissa bits
  int nexp;     ///< exponent bits
  int minexp;   ///< exponent of the smallest normal number
  DType bits;   ///< int16, int32 or int64
  double max;   ///< the largest finite value
  double tiny;  ///< the smallest positive normal value
};
/// d's layout; DTypeError naming `op` unless d is a floating dtype.
FloatLayout float_layout(const std::string& op, DType d);

/// Throws DTypeError naming `op` when x is complex (functions JAX defines on reals only).
void check_real(const std::string& op, const Array& x);

}  // namespace tessel::numpy
