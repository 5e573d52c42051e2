#pragma once
// LAPACK drivers for the structured problems of the composed linear-algebra functions
// (src/ops/linalg_tridiagonal.cpp, linalg_schur.cpp): tridiagonal systems (gtsv) and Schur
// decompositions (gees). Conventions as lapack.h: `batch` dense row-major problems back to
// back in float32, float64, complex64 or complex128, split over the shared intra-op arena;
// inputs are never written; a problem LAPACK fails on gives NaNs in all its outputs.
#include <cstdint>

#include "tessel/dtype.h"

namespace tessel::cpu {

/// Solves A X = B (gtsv, Gaussian elimination with partial pivoting) for tridiagonal n x n
/// matrices A given by their diagonals, n entries each as lax.linalg.tridiagonal_solve takes
/// them: the sub-diagonal dl (dl[0] unused), the diagonal d and the super-diagonal du
/// (du[n - 1] unused); B and X are n x nrhs. A singular A gives NaN in its X.
void tridiagonal_solve(DType d, int64_t batch, int64_t n, int64_t nrhs, const void* dl, const void* diag,
                       const void* du, const void* b, void* x);

/// Schur decompositions A = Z T Z^H (gees, unsorted) of n x n matrices: T is upper
/// triangular (complex dtypes) or quasi-triangular with 2 x 2 blocks for complex conjugate
/// eigenvalue pairs (real dtypes: the real Schur form); Z unitary, written when not null.
void schur(DType d, int64_t batch, int64_t n, const void* a, void* t, void* z);

}  // namespace tessel::cpu
