#pragma once
// Helpers shared by the jax.scipy.special and jax.scipy.stats compositions (src/scipy/*.cpp).
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "tessel/array.h"
#include "tessel/error.h"
#include "ops/linalg_composed.h"
#include "tessel/ops.h"

namespace tessel::scipy::detail {

/// x converted as jnp's promote_args_inexact does (integers and bool to the default float);
/// complex input is rejected. `fn` is the qualified function name used in the message.
inline Array real_inexact(const std::string& fn, const Array& x) {
  Array r = ops::to_inexact(x);
  if (is_complex(r.dtype()))
    throw DTypeError("scipy::" + fn + ": complex arguments (" + dtype_name(r.dtype()) +
                     ") are not supported; pass a real floating or integer array");
  return r;
}

/// The arguments promoted to one real inexact dtype (jnp's promote_args_inexact).
inline std::vector<Array> real_inexact_all(const std::string& fn, std::vector<Array> xs) {
  std::vector<Array> v = ops::promote_all(xs);
  for (Array& a : v) a = real_inexact(fn, a);
  return v;
}

/// The same for functions whose algorithm has float32 and float64 forms only.
inline Array f32_or_f64(const std::string& fn, const Array& x) {
  Array r = real_inexact(fn, x);
  if (r.dtype() != DType::float32 && r.dtype() != DType::float64)
    throw DTypeError("scipy::" + fn + ": dtype " + dtype_name(r.dtype()) +
                     " is not supported; expected float32 or float64 (convert with astype(float32))");
  return r;
}

/// The polynomial with coefficients `c` (highest power first) at w, by Horner's rule
/// (jnp.polyval's order of operations).
inline Array horner(std::initializer_list<double> c, const Array& w) {
  auto it = c.begin();
  Array acc = full_like(w, Scalar(*it));
  for (++it; it != c.end(); ++it) acc = acc * w + Array(*it);
  return acc;
}

}  // namespace tessel::scipy::detail
