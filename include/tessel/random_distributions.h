#pragma once
// Distributions over ts::random's bits (jax.random's samplers), each composed the way JAX
// composes it so that draws equal jax.random's for the same raw key, shape and dtype. Samples
// through transcendental functions (log, tan, erf_inv, ...) agree to a few ulp; integer and
// boolean samples are exact.
//
//   ts::Array k = ts::random::key(0);
//   ts::Array i = ts::random::randint(k, {4}, 0, 10);          // int32[4] in [0, 10)
//   ts::Array b = ts::random::bernoulli(k, 0.3, ts::Shape{8});  // bool[8]
//   ts::Array c = ts::random::categorical(k, logits, -1);       // int32, logits' shape minus axis
#include <optional>

#include "tessel/array.h"

namespace tessel::random {

/// Uniform integers in [minval, maxval) of `shape` and integer `dtype` (jax.random.randint):
/// minval and maxval broadcast to `shape`; where maxval <= minval the result is minval, as in
/// JAX. 8- and 16-bit dtypes are drawn as int32 and converted.
TESSEL_API Array randint(const Array& key, const Shape& shape, const Array& minval, const Array& maxval,
                         DType dtype = DType::int32);
/// Booleans that are true with probability `p` (jax.random.bernoulli, mode "low"): p is a
/// floating array (integers convert to float32) broadcasting to `shape`, which defaults to p's.
TESSEL_API Array bernoulli(const Array& key, const Array& p = Array(0.5), std::optional<Shape> shape = std::nullopt);
/// Category indices (int32) drawn with probabilities softmax(logits) along `axis`
/// (jax.random.categorical, Gumbel-max). `shape` defaults to logits' shape without `axis`;
/// it must end with that batch shape. With replace = false the draws of one batch element are
/// distinct (Gumbel top-k), so shape's leading part may not exceed the number of categories.
TESSEL_API Array categorical(const Array& key, const Array& logits, int64_t axis = -1,
                             std::optional<Shape> shape = std::nullopt, bool replace = true);
/// Standard normal samples truncated to (lower, upper) (jax.random.truncated_normal): the
/// bounds broadcast to `shape`, which defaults to their broadcast shape.
TESSEL_API Array truncated_normal(const Array& key, const Array& lower, const Array& upper,
                                  std::optional<Shape> shape = std::nullopt, DType dtype = DType::float32);
/// Standard Gumbel samples (jax.random.gumbel, mode "low": -log(-log(u)), u in [tiny, 1)).
TESSEL_API Array gumbel(const Array& key, const Shape& shape = {}, DType dtype = DType::float32);
/// Standard exponential samples, -log1p(-u) (jax.random.exponential).
TESSEL_API Array exponential(const Array& key, const Shape& shape = {}, DType dtype = DType::float32);
/// Standard Laplace samples (jax.random.laplace).
TESSEL_API Array laplace(const Array& key, const Shape& shape = {}, DType dtype = DType::float32);
/// Standard logistic samples, log(u) - log1p(-u) (jax.random.logistic).
TESSEL_API Array logistic(const Array& key, const Shape& shape = {}, DType dtype = DType::float32);
/// Standard Cauchy samples, tan(pi (u - 1/2)) (jax.random.cauchy).
TESSEL_API Array cauchy(const Array& key, const Shape& shape = {}, DType dtype = DType::float32);
/// Random signs, -1 or +1 with probability 1/2 each, of `dtype` (jax.random.rademacher).
TESSEL_API Array rademacher(const Array& key, const Shape& shape = {}, DType dtype = DType::int32);
/// exp(sigma * normal) (jax.random.lognormal); `shape` defaults to sigma's.
TESSEL_API Array lognormal(const Array& key, const Array& sigma = Array(1.0), std::optional<Shape> shape = std::nullopt,
                           DType dtype = DType::float32);
/// Pareto samples of shape parameter b, exp(exponential / b) (jax.random.pareto); `shape`
/// defaults to b's.
TESSEL_API Array pareto(const Array& key, const Array& b, std::optional<Shape> shape = std::nullopt,
                        DType dtype = DType::float32);
/// Weibull samples by the inverse CDF, (-log1p(-u))^(1/concentration) * scale
/// (jax.random.weibull_min).
TESSEL_API Array weibull_min(const Array& key, const Array& scale, const Array& concentration,
                             const Shape& shape = {}, DType dtype = DType::float32);
/// Rayleigh samples, scale * sqrt(-2 log u) (jax.random.rayleigh); `shape` defaults to scale's.
TESSEL_API Array rayleigh(const Array& key, const Array& scale = Array(1.0), std::optional<Shape> shape = std::nullopt,
                          DType dtype = DType::float32);
/// Maxwell samples, the norm of three standard normals (jax.random.maxwell).
TESSEL_API Array maxwell(const Array& key, const Shape& shape = {}, DType dtype = DType::float32);
/// Double-sided Maxwell samples, random sign * maxwell * scale + loc
/// (jax.random.double_sided_maxwell); the result's shape is shape + broadcast(loc, scale).
TESSEL_API Array double_sided_maxwell(const Array& key, const Array& loc, const Array& scale, const Shape& shape = {},
                                      DType dtype = DType::float32);
/// Triangular samples on [left, right] with peak `mode` (jax.random.triangular); `shape`
/// defaults to the parameters' broadcast shape.
TESSEL_API Array triangular(const Array& key, const Array& left, const Array& mode, const Array& right,
                            std::optional<Shape> shape = std::nullopt, DType dtype = DType::float32);
/// Wald (inverse Gaussian) samples of the given mean (jax.random.wald); `shape` defaults to
/// mean's.
TESSEL_API Array wald(const Array& key, const Array& mean, std::optional<Shape> shape = std::nullopt,
                      DType dtype = DType::float32);
/// Geometric samples (trials to the first success, >= 1) of success probability p, of
/// integer `dtype` (jax.random.geometric); `shape` defaults to p's.
TESSEL_API Array geometric(const Array& key, const Array& p, std::optional<Shape> shape = std::nullopt,
                           DType dtype = DType::int32);
/// The raw uint32 data of a key or array of keys (jax.random.key_data): tessel keys are raw
/// already, so this checks the trailing dimension is 2 and returns the array.
TESSEL_API Array key_data(const Array& keys);
/// Keys from raw uint32 data of shape (..., 2) (jax.random.wrap_key_data, threefry).
TESSEL_API Array wrap_key_data(const Array& key_bits);
/// A copy of a key for reuse (jax.random.clone): the identity on values.
TESSEL_API Array clone(const Array& key);

}  // namespace tessel::random
