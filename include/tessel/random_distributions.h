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
#include <string>

#include "tessel/array.h"

namespace tessel::random {

/// How many random bits a sampler spends on probabilities near 0 (JAX's `mode`). `low`: one
/// uniform per draw, so in float32 events of probability below about 1e-7 are never drawn.
/// `high`: two uniforms per draw, down to about 1e-14, at about twice the cost (bernoulli,
/// gumbel, and categorical and choice through gumbel). `highest`: gumbel in float32 only, 64
/// random bits turned into a float without rounding small values to 0.
enum class Mode { low, high, highest };

/// Uniform integers in [minval, maxval) of `shape` and integer `dtype` (jax.random.randint):
/// minval and maxval broadcast to `shape`; where maxval <= minval the result is minval, as in
/// JAX. 8- and 16-bit dtypes are drawn as int32 and converted.
TESSEL_API Array randint(const Array& key, const Shape& shape, const Array& minval, const Array& maxval,
                         DType dtype = DType::int32);
/// Booleans that are true with probability `p` (jax.random.bernoulli): p is a floating array
/// (integers convert to float32) broadcasting to `shape`, which defaults to p's. `mode` low
/// or high (see Mode).
TESSEL_API Array bernoulli(const Array& key, const Array& p = Array(0.5), std::optional<Shape> shape = std::nullopt,
                           Mode mode = Mode::low);
/// Category indices (int32) drawn with probabilities softmax(logits) along `axis`
/// (jax.random.categorical, Gumbel-max). `shape` defaults to logits' shape without `axis`;
/// it must end with that batch shape. With replace = false the draws of one batch element are
/// distinct (Gumbel top-k), so shape's leading part may not exceed the number of categories.
/// `mode` is the Gumbel draws' (see gumbel).
TESSEL_API Array categorical(const Array& key, const Array& logits, int64_t axis = -1,
                             std::optional<Shape> shape = std::nullopt, bool replace = true, Mode mode = Mode::low);
/// Standard normal samples truncated to (lower, upper) (jax.random.truncated_normal): the
/// bounds broadcast to `shape`, which defaults to their broadcast shape.
TESSEL_API Array truncated_normal(const Array& key, const Array& lower, const Array& upper,
                                  std::optional<Shape> shape = std::nullopt, DType dtype = DType::float32);
/// Standard Gumbel samples (jax.random.gumbel): mode low -log(-log(u)), u in [tiny, 1); high
/// -log(-log1p(-u)) with u from two uniforms; highest (float32 only) from 64 bits, through
/// log1p below 1/2 and log above (see Mode).
TESSEL_API Array gumbel(const Array& key, const Shape& shape = {}, DType dtype = DType::float32, Mode mode = Mode::low);
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
/// A random permutation of arange(n), as int32 (jax.random.permutation with an integer).
TESSEL_API Array permutation(const Array& key, int64_t n, int64_t axis = 0);
/// x shuffled along `axis` (jax.random.permutation): sorted by fresh random 32-bit keys as
/// JAX does. With independent = false the slices along axis move together; with true each
/// 1-D fibre along axis is shuffled on its own. A rank-0 integer x means arange(x) and must
/// be concrete (not traced).
TESSEL_API Array permutation(const Array& key, const Array& x, int64_t axis = 0, bool independent = false);
/// Samples of `shape` from a's elements along `axis` (jax.random.choice): with replacement
/// uniformly (randint) or by the probabilities p (an inverse-CDF search); without
/// replacement a shuffle's first elements or, with p, Gumbel top-k. A rank-0 integer a means
/// arange(a) and gives int32 indices. The result's shape is a.shape[:axis] + shape +
/// a.shape[axis + 1:]. `mode` is the Gumbel draws' without replacement with p (see gumbel).
TESSEL_API Array choice(const Array& key, const Array& a, const Shape& shape = {}, bool replace = true,
                        const std::optional<Array>& p = std::nullopt, int64_t axis = 0, Mode mode = Mode::low);
/// Standard gamma samples of shape parameter a > 0 (jax.random.gamma): one Marsaglia–Tsang
/// rejection loop per element with its own key (split(key, size)), a < 1 boosted to a + 1.
/// `shape` defaults to a's. Differentiable in a by JAX's implicit reparameterization.
TESSEL_API Array gamma(const Array& key, const Array& a, std::optional<Shape> shape = std::nullopt,
                       DType dtype = DType::float32);
/// The logarithm of gamma samples, drawn in log space so small a keep their precision
/// (jax.random.loggamma; exp(loggamma(k, a)) equals gamma(k, a) to rounding).
TESSEL_API Array loggamma(const Array& key, const Array& a, std::optional<Shape> shape = std::nullopt,
                          DType dtype = DType::float32);
/// Beta(a, b) samples from two log-gamma draws (jax.random.beta); `shape` defaults to the
/// parameters' broadcast shape.
TESSEL_API Array beta(const Array& key, const Array& a, const Array& b, std::optional<Shape> shape = std::nullopt,
                      DType dtype = DType::float32);
/// Dirichlet samples of concentration alpha (..., n) (jax.random.dirichlet): the result is
/// shape + (n,), shape defaulting to alpha's batch shape alpha.shape[:-1].
TESSEL_API Array dirichlet(const Array& key, const Array& alpha, std::optional<Shape> shape = std::nullopt,
                           DType dtype = DType::float32);
/// Chi-square samples with df degrees of freedom, 2 * exp(loggamma(df / 2))
/// (jax.random.chisquare); `shape` defaults to df's.
TESSEL_API Array chisquare(const Array& key, const Array& df, std::optional<Shape> shape = std::nullopt,
                           DType dtype = DType::float32);
/// Student's t samples with df degrees of freedom (jax.random.t); `shape` defaults to df's.
TESSEL_API Array t(const Array& key, const Array& df, std::optional<Shape> shape = std::nullopt,
                   DType dtype = DType::float32);
/// F(dfnum, dfden) samples, a ratio of scaled chi-squares (jax.random.f); `shape` defaults to
/// the parameters' broadcast shape.
TESSEL_API Array f(const Array& key, const Array& dfnum, const Array& dfden, std::optional<Shape> shape = std::nullopt,
                   DType dtype = DType::float32);
/// Generalized normal samples of exponent p > 0, density proportional to exp(-|x|^p)
/// (jax.random.generalized_normal).
TESSEL_API Array generalized_normal(const Array& key, double p, const Shape& shape = {},
                                    DType dtype = DType::float32);
/// Points uniform in the d-dimensional unit p-norm ball, of shape shape + (d,)
/// (jax.random.ball).
TESSEL_API Array ball(const Array& key, int64_t d, double p = 2.0, const Shape& shape = {},
                      DType dtype = DType::float32);
/// Poisson samples of rate lam, of integer `dtype` (jax.random.poisson): Knuth's product of
/// uniforms for lam < 10, Hormann's transformed rejection above, each one while_loop over
/// the sample with one key split per round as in JAX. lam is drawn as float32; `shape`
/// defaults to lam's.
TESSEL_API Array poisson(const Array& key, const Array& lam, std::optional<Shape> shape = std::nullopt,
                         DType dtype = DType::int32);
/// Binomial(n, p) samples as floats (jax.random.binomial): geometric-waiting-time inversion
/// where n min(p, 1 - p) <= 10, BTRS rejection above; NaN for a negative or NaN n or a NaN
/// p, inf for an infinite n. `shape` defaults to the parameters' broadcast shape.
TESSEL_API Array binomial(const Array& key, const Array& n, const Array& p, std::optional<Shape> shape = std::nullopt,
                          DType dtype = DType::float32);
/// Multinomial counts of n trials over the outcomes along p's last axis
/// (jax.random.multinomial): a scan of conditional binomials. `shape` is the full result
/// shape (ending with p.shape[-1]; JAX's code reads it so) and defaults to p's shape; n
/// broadcasts to shape[:-1].
TESSEL_API Array multinomial(const Array& key, const Array& n, const Array& p, std::optional<Shape> shape = std::nullopt,
                             DType dtype = DType::float32);
/// Multivariate normal samples mean + F z with F a factor of cov, F F^T = cov, by `method`
/// "cholesky", "eigh" or "svd" (jax.random.multivariate_normal). mean is (..., n), cov
/// (..., n, n); the result is shape + (n,), shape defaulting to the broadcast batch shape;
/// dtype defaults to the promoted type of mean and cov.
TESSEL_API Array multivariate_normal(const Array& key, const Array& mean, const Array& cov,
                                     std::optional<Shape> shape = std::nullopt, std::optional<DType> dtype = std::nullopt,
                                     const std::string& method = "cholesky");
/// Haar-random orthogonal (unitary for complex dtypes) n x m matrices, of shape shape + (n, m)
/// (jax.random.orthogonal; m defaults to n; for n != m the rows or columns are orthonormal).
TESSEL_API Array orthogonal(const Array& key, int64_t n, const Shape& shape = {}, DType dtype = DType::float32,
                            std::optional<int64_t> m = std::nullopt);
/// The raw uint32 data of a key or array of keys (jax.random.key_data): tessel keys are raw
/// already, so this checks the trailing dimension is 2 and returns the array.
TESSEL_API Array key_data(const Array& keys);
/// Keys from raw uint32 data of shape (..., 2) (jax.random.wrap_key_data, threefry).
TESSEL_API Array wrap_key_data(const Array& key_bits);
/// A copy of a key for reuse (jax.random.clone): the identity on values.
TESSEL_API Array clone(const Array& key);

}  // namespace tessel::random
