#pragma once
// Validation of DType values received from users: a DType made by casting an integer
// (`static_cast<DType>(99)`) is not a dtype, and every table indexed by it would be read
// out of bounds. Public entry points that take a DType pass it through checked_dtype.
#include <string_view>

#include "tessel/dtype.h"

namespace tessel::detail {

/// True when `d` is one of the kNumDTypes enumerators.
inline bool is_valid_dtype(DType d) { return int(d) < kNumDTypes; }

/// Throws DTypeError naming `op` and the value `d`, which is not a dtype.
[[noreturn]] void throw_not_a_dtype(DType d, std::string_view op);

/// `d` itself when it is a dtype; otherwise throws DTypeError naming `op` and the value.
/// Inline, with the operation's name as a view: every itemsize() comes through here.
inline DType checked_dtype(DType d, std::string_view op) {
  if (!is_valid_dtype(d)) throw_not_a_dtype(d, op);
  return d;
}

}  // namespace tessel::detail
