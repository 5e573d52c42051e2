#pragma once
// LAPACK's Schur decomposition (gees), for the `schur` primitive (src/ops/linalg_structured.cpp).
// Conventions as lapack.h: `batch` dense row-major matrices back to back in float32, float64,
// complex64 or complex128, split over the shared intra-op arena; inputs are never written;
// a matrix LAPACK fails on gives NaNs in all its outputs.
#include <cstdint>

#include "tessel/dtype.h"

namespace tessel::cpu {

/// Schur decompositions A = Z T Z^H (gees, unsorted) of n x n matrices: T is upper
/// triangular (complex dtypes) or quasi-triangular with 2 x 2 blocks for complex conjugate
/// eigenvalue pairs (real dtypes: the real Schur form); Z unitary, written when not null.
void schur(DType d, int64_t batch, int64_t n, const void* a, void* t, void* z);

}  // namespace tessel::cpu
