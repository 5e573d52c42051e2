#pragma once
// Helpers shared by the composed linear-algebra functions (linalg_composed.cpp,
// linalg_spectral.cpp, linalg_matrix_functions.cpp): dtype promotion and machine epsilon
// (the matrix helpers and shape checks of the factorizations are in linalg_factor.h).
#include <string>
#include <vector>

#include "ops/op_util.h"

namespace tessel::ops {

/// x converted to a floating or complex dtype: its own when it has one, else the default
/// float (what jnp's promote_dtypes_inexact does for integers and bool).
Array to_inexact(const Array& x);
/// The arrays promoted to one dtype (jnp's promote_dtypes).
std::vector<Array> promote_all(std::vector<Array> xs);
/// The machine epsilon of x's real dtype (float32: 2^-23, float64: 2^-52).
double eps_of(DType d);

}  // namespace tessel::ops
