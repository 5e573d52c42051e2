// jnp.i0 and the Kaiser window, over the bessel_i0e primitive (src/ops/special.cpp).
#include <cmath>

#include "ops/linalg_composed.h"
#include "tessel/error.h"
#include "tessel/numpy.h"
#include "tessel/ops.h"
#include "tessel/special.h"
#include "tessel/transforms.h"

namespace tessel {
namespace {

// exp(|x|) i0e(x), whose derivative through abs would be 1 at x = 0 (abs's derivative there
// is 1): JAX gives jnp.i0 a custom rule, exp(|x|) i1e(x), which is 0 at 0.
Array i0_value(const Array& x) { return exp(abs(x)) * bessel_i0e(x); }
const auto i0_fn = custom_jvp([](const Array& x) { return i0_value(x); },
                              [](const std::tuple<Array>& p, const std::tuple<Array>& t) {
                                const Array& x = std::get<0>(p);
                                return std::pair(i0_value(x), std::get<0>(t) * (exp(abs(x)) * bessel_i1e(x)));
                              });

}  // namespace

Array i0(const Array& x0) {
  Array x = ops::to_inexact(x0);
  if (is_complex(x.dtype()))
    throw DTypeError(std::string("i0: complex arguments (") + dtype_name(x.dtype()) +
                     ") are not supported; pass a real floating or integer array");
  return i0_fn(x);
}

Array kaiser(int64_t M, double beta) {
  if (M <= 0) return zeros({0}, default_float);
  if (M == 1) return ones({1}, default_float);
  const Array n = arange(0.0, double(M), 1.0, default_float);
  const double alpha = 0.5 * double(M - 1);
  const Array b = full({}, Scalar(beta, default_float));
  const Array r = (n - Array(alpha)) / Array(alpha);
  return i0(b * sqrt(Array(1.0) - r * r)) / i0(b);
}

}  // namespace tessel
