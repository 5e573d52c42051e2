#include "core/shape_check.h"

#include <algorithm>
#include <string>

#include "tessel/error.h"

namespace tessel::detail {

int64_t checked_size(std::string_view op, const Shape& shape, std::optional<DType> dtype) {
  int64_t nonzero = 1;
  bool empty = false;
  for (int64_t d : shape) {
    if (d < 0)
      throw ShapeError(std::string(op) + ": negative dimension in shape " + shape_to_string(shape) +
                       "; every size must be >= 0");
    if (d == 0) {
      empty = true;
      continue;
    }
    if (__builtin_mul_overflow(nonzero, d, &nonzero)) {
      const bool has_zero = std::find(shape.begin(), shape.end(), 0) != shape.end();
      throw ShapeError(std::string(op) + ": shape " + shape_to_string(shape) +
                       (has_zero ? " has sizes whose product (without the zeros, as its strides have) overflows a "
                                   "64-bit count; use smaller sizes"
                                 : " has more elements than a 64-bit count holds (the product of its sizes "
                                   "overflows); use smaller sizes"));
    }
  }
  int64_t bytes = 0;
  if (dtype && __builtin_mul_overflow(nonzero, int64_t(itemsize(*dtype)), &bytes))
    throw ShapeError(std::string(op) + ": an array of shape " + shape_to_string(shape) + " and dtype " +
                     dtype_name(*dtype) + " has more bytes than a 64-bit count holds (" + std::to_string(nonzero) +
                     " elements of " + std::to_string(itemsize(*dtype)) + " bytes overflow it); use smaller sizes");
  return empty ? 0 : nonzero;
}

int64_t checked_dim_add(std::string_view op, int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    throw ShapeError(std::string(op) + ": the size " + std::to_string(a) + " + " + std::to_string(b) +
                     " overflows a 64-bit count; use smaller sizes");
  return r;
}

int64_t checked_dim_mul(std::string_view op, int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    throw ShapeError(std::string(op) + ": the size " + std::to_string(a) + " * " + std::to_string(b) +
                     " overflows a 64-bit count; use smaller sizes");
  return r;
}

}  // namespace tessel::detail
