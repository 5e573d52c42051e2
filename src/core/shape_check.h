#pragma once
// The one check of every shape that enters the library (creation functions, shape
// functions, the outputs of every primitive's abstract evaluation, deserialized avals): no
// negative dimension, and element and byte counts that fit in int64. docs/arrays.md
// ("Shapes") states the rule.
#include <cstdint>
#include <optional>
#include <string_view>

#include "tessel/array.h"

namespace tessel::detail {

/// The element count of `shape`. Throws ShapeError naming `op` and the shape for a negative
/// dimension, or when the product of its nonzero dimensions (so every stride) or, given a
/// `dtype`, that product times the item size (so every byte offset) overflows int64.
int64_t checked_size(std::string_view op, const Shape& shape, std::optional<DType> dtype = std::nullopt);
/// checked_size of an aval's shape and dtype.
inline int64_t checked_size(std::string_view op, const Aval& aval) { return checked_size(op, aval.shape, aval.dtype); }

/// Sum and product of dimension sizes for shape rules (padding, concatenation, tiling):
/// throw ShapeError naming `op` and the operands when the result overflows int64.
int64_t checked_dim_add(std::string_view op, int64_t a, int64_t b);
int64_t checked_dim_mul(std::string_view op, int64_t a, int64_t b);

}  // namespace tessel::detail
