#pragma once
// jax.nn: activation functions, softmax and its relatives, one_hot, standardize and
// dot_product_attention (docs/nn.md). Each is a composition of tessel's primitives with
// JAX's numerically stable form and JAX's custom derivatives (relu at 0, relu6 at 0 and 6,
// log1mexp), so it works eagerly and under jit, grad, vmap and sharding like any other
// composition. Integer inputs are promoted to float32 where JAX promotes them.
//
//   ts::Array h = ts::nn::gelu(ts::matmul(x, w1));
//   ts::Array p = ts::nn::softmax(logits);                       // over the last axis
//   ts::Array lse = ts::nn::logsumexp(logits, {-1});
//   ts::Array y = ts::nn::one_hot(labels, 10);                   // float32 (..., 10)
//   ts::Array o = ts::nn::dot_product_attention(q, k, v, {.is_causal = true});
#include <optional>
#include <string>
#include <utility>

#include "tessel/array.h"
#include "tessel/export.h"
#include "tessel/ops.h"

namespace tessel::nn {

// ---- element-wise activations ----

/// x itself (jax.nn.identity).
TESSEL_API Array identity(const Array& x);
/// max(x, 0); its derivative at 0 is 0 (jax.nn.relu).
TESSEL_API Array relu(const Array& x);
/// min(max(x, 0), 6); its derivative at 0 and 6 is 0 (jax.nn.relu6).
TESSEL_API Array relu6(const Array& x);
/// 1 / (1 + exp(-x)) (jax.nn.sigmoid, lax.logistic).
TESSEL_API Array sigmoid(const Array& x);
/// log(sigmoid(x)) = -softplus(-x) (jax.nn.log_sigmoid).
TESSEL_API Array log_sigmoid(const Array& x);
/// log(1 + exp(x)), computed as logaddexp(x, 0) (jax.nn.softplus).
TESSEL_API Array softplus(const Array& x);
/// 0 for x <= -1, x for x >= 1, (x + 1)^2 / 4 between (jax.nn.sparse_plus).
TESSEL_API Array sparse_plus(const Array& x);
/// clip(x + 1, 0, 2) / 2 (jax.nn.sparse_sigmoid).
TESSEL_API Array sparse_sigmoid(const Array& x);
/// x / (|x| + 1) (jax.nn.soft_sign).
TESSEL_API Array soft_sign(const Array& x);
/// x * sigmoid(x) (jax.nn.silu; `swish` is the same function).
TESSEL_API Array silu(const Array& x);
/// Same as silu (jax.nn.swish).
TESSEL_API Array swish(const Array& x);
/// x * tanh(softplus(x)) (jax.nn.mish).
TESSEL_API Array mish(const Array& x);
/// x for x > 0, alpha * (exp(x) - 1) otherwise (jax.nn.elu).
TESSEL_API Array elu(const Array& x, double alpha = 1.0);
/// max(x, 0) + alpha * expm1(min(x, 0) / alpha) (jax.nn.celu).
TESSEL_API Array celu(const Array& x, double alpha = 1.0);
/// scale * elu(x, alpha) with the self-normalizing constants (jax.nn.selu).
TESSEL_API Array selu(const Array& x);
/// x for x >= 0, negative_slope * x otherwise (jax.nn.leaky_relu).
TESSEL_API Array leaky_relu(const Array& x, double negative_slope = 1e-2);
/// clip(x, -1, 1) (jax.nn.hard_tanh).
TESSEL_API Array hard_tanh(const Array& x);
/// relu6(x + 3) / 6 (jax.nn.hard_sigmoid).
TESSEL_API Array hard_sigmoid(const Array& x);
/// x * hard_sigmoid(x) (jax.nn.hard_silu; `hard_swish` is the same function).
TESSEL_API Array hard_silu(const Array& x);
/// Same as hard_silu (jax.nn.hard_swish).
TESSEL_API Array hard_swish(const Array& x);
/// (x + sqrt(x^2 + b)) / 2 (jax.nn.squareplus).
TESSEL_API Array squareplus(const Array& x, double b = 4.0);
/// Gaussian error linear unit: with `approximate`, x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715
/// x^3))); otherwise x/2 erfc(-x / sqrt(2)) (jax.nn.gelu).
TESSEL_API Array gelu(const Array& x, bool approximate = true);
/// Gated linear unit: x split in two halves a, b along `axis`, a * sigmoid(b)
/// (jax.nn.glu). The axis must have an even size.
TESSEL_API Array glu(const Array& x, int64_t axis = -1);
/// log(1 - exp(-x)) for x >= 0, stable near 0 and for large x; its derivative is
/// 1 / expm1(x) (jax.nn.log1mexp).
TESSEL_API Array log1mexp(const Array& x);

// ---- normalizations over axes ----
// `axes` lists the axes reduced (negative counts from the end); empty means all axes, like
// JAX's axis=None.

/// exp(x) / sum(exp(x)) over `axes`, computed as exp(x - max) / sum(exp(x - max)) (max
/// under stop_gradient, as JAX computes it). `where`: elements outside it do not take part
/// and get 0 (jax.nn.softmax).
TESSEL_API Array softmax(const Array& x, const Axes& axes = {-1}, const std::optional<Array>& where = std::nullopt);
/// x - logsumexp(x) over `axes`, stable for large |x|. `where`: elements outside it get
/// -inf (jax.nn.log_softmax).
TESSEL_API Array log_softmax(const Array& x, const Axes& axes = {-1},
                             const std::optional<Array>& where = std::nullopt);

/// Options of logsumexp.
struct LogSumExpOptions {
  /// Scaling factors of the exponentials (broadcast to x's shape): log(sum(b * exp(x))).
  std::optional<Array> b = std::nullopt;
  bool keepdims = false;
};
/// log(sum(exp(x))) over `axes`, without overflow; a negative sum (with `b`) gives NaN
/// (jax.nn.logsumexp, jax.scipy.special.logsumexp).
TESSEL_API Array logsumexp(const Array& x, const Axes& axes = {}, const LogSumExpOptions& options = {});
/// logsumexp with return_sign=True: log|sum(b * exp(x))| and the sum's sign.
TESSEL_API std::pair<Array, Array> logsumexp_with_sign(const Array& x, const Axes& axes = {},
                                                        const LogSumExpOptions& options = {});
/// logsumexp(x) - log(n), n the number of elements reduced (jax.nn.logmeanexp).
TESSEL_API Array logmeanexp(const Array& x, const Axes& axes = {}, bool keepdims = false);

/// Options of standardize.
struct StandardizeOptions {
  std::optional<Array> mean = std::nullopt;      // default: mean of x over the axes
  std::optional<Array> variance = std::nullopt;  // default: by `algorithm`
  double epsilon = 1e-5;
  /// "fast": mean(x^2) - mean(x)^2 clipped at 0 (JAX's default); "stable": mean((x - mean)^2).
  std::string algorithm = "fast";
};
/// (x - mean) / sqrt(variance + epsilon) over `axes` (jax.nn.standardize).
TESSEL_API Array standardize(const Array& x, const Axes& axes = {-1}, const StandardizeOptions& options = {});

/// One-hot encoding: x's integer indices as vectors of `num_classes` with a one at the
/// index, inserted at `axis` of the result (default last); indices outside [0, num_classes)
/// give all zeros (jax.nn.one_hot).
TESSEL_API Array one_hot(const Array& x, int64_t num_classes, DType dtype = DType::float32, int64_t axis = -1);

// ---- attention ----

/// Options of dot_product_attention (jax.nn.dot_product_attention's keyword arguments).
struct AttentionOptions {
  /// Added to the logits, broadcast to (B, N, T, S) (N may be 1).
  std::optional<Array> bias = std::nullopt;
  /// Boolean, broadcast to (B, N, T, S): false positions are excluded.
  std::optional<Array> mask = std::nullopt;
  /// Multiplies the logits; default 1 / sqrt(H).
  std::optional<double> scale = std::nullopt;
  /// Query t attends to keys s <= t.
  bool is_causal = false;
  /// int32 (B,): valid query / key lengths per batch element (padding masks).
  std::optional<Array> query_seq_lengths = std::nullopt;
  std::optional<Array> key_value_seq_lengths = std::nullopt;
  /// (left, right): query t attends to keys in [t - left, t + right].
  std::optional<std::pair<int64_t, int64_t>> local_window_size = std::nullopt;
};
/// Scaled dot-product attention softmax(q k^T * scale + bias, masked) v on query (B, T, N,
/// H), key and value (B, S, K, H) (or without the batch axis), N a multiple of K (grouped
/// queries). The softmax runs in float32 (jax.nn.dot_product_attention, XLA implementation).
TESSEL_API Array dot_product_attention(const Array& query, const Array& key, const Array& value,
                                       const AttentionOptions& options = {});

}  // namespace tessel::nn
