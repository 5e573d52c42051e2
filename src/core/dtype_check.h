#pragma once
// Validation of DType values received from users: a DType made by casting an integer
// (`static_cast<DType>(99)`) is not a dtype, and every table indexed by it would be read
// out of bounds. Public entry points that take a DType pass it through checked_dtype.
#include <string>

#include "tessel/dtype.h"

namespace tessel::detail {

/// True when `d` is one of the kNumDTypes enumerators.
inline bool is_valid_dtype(DType d) { return int(d) < kNumDTypes; }

/// `d` itself when it is a dtype; otherwise throws DTypeError naming `op` and the value.
DType checked_dtype(DType d, const std::string& op);

}  // namespace tessel::detail
