#pragma once
// Linear algebra, named and behaving like jax.numpy.linalg (namespace tessel::linalg),
// jax.scipy.linalg (tessel::scipy::linalg) and lax.linalg's primitives (tessel::lax::linalg).
// Factorizations call LAPACK (src/backend/cpu/lapack.h); every function batches over leading
// dimensions and works under jit, grad and vmap (docs/linalg.md).
#include <optional>
#include <string>
#include <vector>

#include "tessel/array.h"

namespace tessel::lax::linalg {
// ---- primitives (src/ops/linalg_factor.cpp) ----
}  // namespace tessel::lax::linalg

namespace tessel::linalg {
// ---- factorizations and solves (src/ops/linalg_factor.cpp) ----

// ---- composed functions (src/ops/linalg_composed.cpp) ----
}  // namespace tessel::linalg

namespace tessel::scipy::linalg {
// ---- factorizations and solves (src/ops/linalg_factor.cpp) ----

// ---- composed functions (src/ops/linalg_composed.cpp) ----
}  // namespace tessel::scipy::linalg
