// jax.nn over tessel's primitives (include/tessel/nn.h, docs/nn.md). Every function follows
// JAX's formula step by step (same operations in the same order), so values match JAX's to
// rounding; the custom derivatives are JAX's (relu, relu6, log1mexp, softplus through
// logaddexp's rule).
#include "tessel/nn.h"

#include <cmath>
#include <limits>
#include <numbers>

#include "ops/linalg_composed.h"
#include "ops/op_util.h"
#include "tessel/error.h"
#include "tessel/ops.h"
#include "tessel/transforms.h"

namespace tessel::nn {

using ops::to_inexact;

namespace {

/// `g` where `keep`, else 0: the tangent of a clamp-like function.
Array pass_where(const Array& keep, const Array& g) { return select(keep, g, zeros_like(g)); }

const auto relu_fn = custom_jvp([](const Array& x) { return maximum(x, Array(0)); },
                                [](const std::tuple<Array>& p, const std::tuple<Array>& t) {
                                  const Array& x = std::get<0>(p);
                                  return std::pair(maximum(x, Array(0)), pass_where(x > Array(0), std::get<0>(t)));
                                });

const auto relu6_fn = custom_jvp(
    [](const Array& x) { return minimum(maximum(x, Array(0)), Array(6.0)); },
    [](const std::tuple<Array>& p, const std::tuple<Array>& t) {
      const Array& x = std::get<0>(p);
      return std::pair(minimum(maximum(x, Array(0)), Array(6.0)),
                       pass_where(logical_and(x > Array(0), x < Array(6.0)), std::get<0>(t)));
    });

/// logaddexp(x, 0) as jnp.logaddexp computes it: max(x, 0) + log1p(exp(-|x|)), NaN kept.
Array logaddexp_zero(const Array& x) {
  return where(isnan(x), x + Array(0.0), maximum(x, Array(0.0)) + log1p(exp(-abs(x))));
}

// jnp.logaddexp's rule: d/dx logaddexp(x, 0) = exp(x - out).
const auto softplus_fn = custom_jvp([](const Array& x) { return logaddexp_zero(x); },
                                    [](const std::tuple<Array>& p, const std::tuple<Array>& t) {
                                      const Array out = logaddexp_zero(std::get<0>(p));
                                      return std::pair(out, std::get<0>(t) * exp(std::get<0>(p) - out));
                                    });

Array log1mexp_value(const Array& x) {
  return where(x < Array(std::numbers::ln2), log(-expm1(-x)), log1p(-exp(-x)));
}

const auto log1mexp_fn = custom_jvp([](const Array& x) { return log1mexp_value(x); },
                                    [](const std::tuple<Array>& p, const std::tuple<Array>& t) {
                                      const Array& x = std::get<0>(p);
                                      return std::pair(log1mexp_value(x), std::get<0>(t) / expm1(x));
                                    });

/// The largest finite value of a floating dtype.
double finfo_max(DType d) {
  switch (d) {
    case DType::float16: return 65504.0;
    case DType::bfloat16: return 3.3895313892515355e38;
    case DType::float32: return std::numeric_limits<float>::max();
    default: return std::numeric_limits<double>::max();
  }
}

/// Number of elements `axes` (canonical) of `shape` hold.
int64_t count_over(const Shape& shape, const Axes& axes) {
  int64_t n = 1;
  for (int64_t a : axes) n *= shape[size_t(a)];
  return n;
}

/// x with elements outside `mask` replaced by `fill` (x itself without a mask).
Array masked(const Array& x, const std::optional<Array>& mask, double fill) {
  return mask ? where(*mask, x, full_like(x, fill)) : x;
}

}  // namespace

// ---- element-wise activations ----

Array identity(const Array& x) { return x; }
Array relu(const Array& x) { return relu_fn(x); }
Array relu6(const Array& x) { return relu6_fn(x); }
Array sigmoid(const Array& x) { return logistic(to_inexact(x)); }
Array softplus(const Array& x) { return softplus_fn(to_inexact(x)); }
Array log_sigmoid(const Array& x) { return -softplus(-to_inexact(x)); }

Array sparse_plus(const Array& x) {
  const Array y = to_inexact(x);
  return where(y <= Array(-1.0), Array(0.0), where(y >= Array(1.0), y, square(y + Array(1.0)) / Array(4.0)));
}

Array sparse_sigmoid(const Array& x) {
  return Array(0.5) * clip(to_inexact(x) + Array(1.0), Array(0.0), Array(2.0));
}

Array soft_sign(const Array& x) {
  const Array y = to_inexact(x);
  return y / (abs(y) + Array(1));
}

Array silu(const Array& x) {
  const Array y = to_inexact(x);
  return y * sigmoid(y);
}
Array swish(const Array& x) { return silu(x); }

Array mish(const Array& x) {
  const Array y = to_inexact(x);
  return y * tanh(softplus(y));
}

Array elu(const Array& x, double alpha) {
  const Array y = to_inexact(x), positive = y > Array(0);
  return where(positive, y, Array(alpha) * expm1(where(positive, Array(0.0), y)));
}

Array celu(const Array& x, double alpha) {
  const Array y = to_inexact(x);
  return maximum(y, Array(0.0)) + Array(alpha) * expm1(minimum(y, Array(0.0)) / Array(alpha));
}

Array selu(const Array& x) {
  constexpr double alpha = 1.6732632423543772848170429916717, scale = 1.0507009873554804934193349852946;
  return Array(scale) * elu(x, alpha);
}

Array leaky_relu(const Array& x, double negative_slope) {
  const Array y = to_inexact(x);
  return where(y >= Array(0), y, Array(negative_slope) * y);
}

Array hard_tanh(const Array& x) {
  return where(x > Array(1), Array(1), where(x < Array(-1), Array(-1), x));
}

Array hard_sigmoid(const Array& x) { return relu6(x + Array(3.0)) / Array(6.0); }

Array hard_silu(const Array& x) {
  const Array y = to_inexact(x);
  return y * hard_sigmoid(y);
}
Array hard_swish(const Array& x) { return hard_silu(x); }

Array squareplus(const Array& x, double b) {
  const Array y = to_inexact(x);
  return (y + sqrt(square(y) + Array(b))) / Array(2);
}

Array gelu(const Array& x, bool approximate) {
  const Array y = to_inexact(x);
  if (approximate) {
    const Array cdf =
        Array(0.5) * (Array(1.0) + tanh(Array(std::sqrt(2.0 / std::numbers::pi)) * (y + Array(0.044715) * (y * y * y))));
    return y * cdf;
  }
  return Array(0.5) * y * erfc(-y * Array(std::sqrt(0.5)));
}

Array glu(const Array& x, int64_t axis) {
  const int64_t a = ops::canonicalize_axis("nn::glu", axis, x.ndim());
  const int64_t n = x.shape()[size_t(a)];
  if (n % 2 != 0)
    throw ValueError("nn::glu: axis " + std::to_string(axis) + " of an input of shape " + shape_to_string(x.shape()) +
                     " has odd size " + std::to_string(n) + "; glu splits it into two equal halves");
  const Array first = slice_in_dim(x, 0, n / 2, 1, a), second = slice_in_dim(x, n / 2, n, 1, a);
  return first * sigmoid(second);
}

Array log1mexp(const Array& x) { return log1mexp_fn(to_inexact(x)); }

// ---- normalizations ----

Array softmax(const Array& x, const Axes& axes, const std::optional<Array>& where) {
  const Array y = to_inexact(x);
  const Axes dims = ops::canonicalize_axes("nn::softmax", axes, y.ndim(), true);
  const Array safe = masked(y, where, -INFINITY);
  const Array x_max = max(safe, dims, true);
  const Array unnormalized = exp(safe - stop_gradient(x_max));
  const Array result = unnormalized / sum(masked(unnormalized, where, 0.0), dims, true);
  return masked(result, where, 0.0);
}

Array log_softmax(const Array& x, const Axes& axes, const std::optional<Array>& where) {
  const Array y = to_inexact(x);
  const Axes dims = ops::canonicalize_axes("nn::log_softmax", axes, y.ndim(), true);
  const Array safe = masked(y, where, -INFINITY);
  const Array shifted = safe - stop_gradient(max(safe, dims, true));
  const Array result = shifted - log(sum(masked(exp(shifted), where, 0.0), dims, true));
  return masked(result, where, -INFINITY);
}

namespace {

/// sum(b * exp(a - amax)) over `dims` and amax, the maximum of a's real part (0 where it is
/// not finite, under stop_gradient): logsumexp is log(sum) + amax.
std::pair<Array, Array> shifted_sum(const Array& a, const Axes& dims, bool keepdims, const std::optional<Array>& b) {
  Array amax = max(is_complex(a.dtype()) ? real(a) : a, dims, keepdims);
  amax = stop_gradient(select(isfinite(amax), amax, zeros_like(amax)));
  const Array amax_with_dims = keepdims ? amax : expand_dims(amax, dims);
  Array exp_a = exp(a - astype(amax_with_dims, a.dtype()));
  if (b) exp_a = exp_a * *b;
  return {sum(exp_a, dims, keepdims), amax};
}

}  // namespace

std::pair<Array, Array> logsumexp_with_sign(const Array& x, const Axes& axes, const LogSumExpOptions& options) {
  Array a = to_inexact(x);
  std::optional<Array> b;
  if (options.b) {
    std::vector<Array> ab = ops::promote_all({a, to_inexact(*options.b)});
    b = ab[1];
    a = where(*b != Array(0), ab[0], full_like(ab[0], -INFINITY));
  }
  const Axes dims = ops::canonicalize_axes("nn::logsumexp", axes, a.ndim(), true);
  auto [sumexp, amax] = shifted_sum(a, dims, options.keepdims, b);
  const Array sign = tessel::sign(sumexp);
  sumexp = abs(sumexp);
  return {log(sumexp) + astype(amax, sumexp.dtype()), sign};
}

Array logsumexp(const Array& x, const Axes& axes, const LogSumExpOptions& options) {
  if (is_complex(x.dtype()) && !options.b) {
    // Complex logsumexp keeps the phase: log of the complex sum.
    const Axes dims = ops::canonicalize_axes("nn::logsumexp", axes, x.ndim(), true);
    const auto [sumexp, amax] = shifted_sum(x, dims, options.keepdims, std::nullopt);
    return log(sumexp) + astype(amax, sumexp.dtype());
  }
  auto [out, sign] = logsumexp_with_sign(x, axes, options);
  if (options.b) out = where(sign < Array(0), full_like(out, NAN), out);
  return out;
}

Array logmeanexp(const Array& x, const Axes& axes, bool keepdims) {
  const Array lse = logsumexp(x, axes, {.keepdims = keepdims});
  const Axes dims = ops::canonicalize_axes("nn::logmeanexp", axes, x.ndim(), true);
  return lse - log(full_like(lse, double(count_over(x.shape(), dims))));
}

Array standardize(const Array& x, const Axes& axes, const StandardizeOptions& options) {
  const Array y = to_inexact(x);
  const Axes dims = ops::canonicalize_axes("nn::standardize", axes, y.ndim(), true);
  const Array mu = options.mean ? *options.mean : mean(y, dims, true);
  Array variance;
  if (options.variance) {
    variance = *options.variance;
  } else if (options.algorithm == "stable") {
    variance = mean(square(y - mu), dims, true);
  } else if (options.algorithm == "fast") {
    // mean(x^2) - mean(x)^2 can round below zero: clipped, as JAX does, before the rsqrt.
    variance = maximum(Array(0), mean(square(y), dims, true) - square(mu));
  } else {
    throw ValueError("nn::standardize: unknown algorithm '" + options.algorithm + "'; use \"fast\" or \"stable\"");
  }
  return (y - mu) * rsqrt(variance + Array(options.epsilon));
}

Array one_hot(const Array& x, int64_t num_classes, DType dtype, int64_t axis) {
  if (num_classes < 0)
    throw ValueError("nn::one_hot: num_classes must be >= 0, got " + std::to_string(num_classes));
  const int64_t pos = ops::canonicalize_axis("nn::one_hot", axis, x.ndim() + 1);
  Shape classes(size_t(x.ndim()) + 1, 1);
  classes[size_t(pos)] = num_classes;
  const Array indices = x.dtype() == DType::bool_ ? astype(x, DType::int32) : x;
  return astype(expand_dims(indices, {pos}) == iota(ops::strong_dtype(indices), classes, pos), dtype);
}

// ---- attention ----

namespace {

/// t with leading axes of size 1 added up to rank 4 (JAX's _ensure_4d).
Array ensure_4d(const Array& t) {
  if (t.ndim() >= 4) return t;
  Axes lead;
  for (int64_t i = 0; i < 4 - t.ndim(); ++i) lead.push_back(i);
  return expand_dims(t, lead);
}

/// A (B, N, T, S) bias or mask as (B, K, G, T, S) (N == K * G) or (B, 1, 1, T, S).
Array grouped(const Array& t, int64_t k, int64_t g, const char* name) {
  const Shape& s = t.shape();
  if (s[1] == 1) return expand_dims(t, {2});
  if (s[1] != k * g)
    throw ShapeError("nn::dot_product_attention: " + std::string(name) + " of shape " + shape_to_string(s) +
                     " has " + std::to_string(s[1]) + " heads; it needs 1 or the query's " + std::to_string(k * g));
  return reshape(t, {s[0], k, g, s[2], s[3]});
}

void check_attention(const Array& q, const Array& k, const Array& v, const AttentionOptions& o) {
  const std::string op = "nn::dot_product_attention: ";
  if (q.ndim() != 4 || k.ndim() != 4 || v.ndim() != 4)
    throw ShapeError(op + "query, key and value must be (B, T, N, H) / (B, S, K, H) or without B; got " +
                     shape_to_string(q.shape()) + ", " + shape_to_string(k.shape()) + ", " +
                     shape_to_string(v.shape()));
  if (v.shape() != k.shape() || v.dtype() != k.dtype())
    throw ShapeError(op + "value " + shape_to_string(v.shape()) + " " + dtype_name(v.dtype()) +
                     " must have key's shape and dtype " + shape_to_string(k.shape()) + " " + dtype_name(k.dtype()));
  if (q.shape()[0] != k.shape()[0] || q.shape()[3] != k.shape()[3] || q.dtype() != k.dtype())
    throw ShapeError(op + "query " + shape_to_string(q.shape()) + " " + dtype_name(q.dtype()) +
                     " must share the batch size, head size and dtype of key " + shape_to_string(k.shape()) + " " +
                     dtype_name(k.dtype()));
  if (k.shape()[2] == 0 || q.shape()[2] % k.shape()[2] != 0)
    throw ShapeError(op + "the number of query heads (" + std::to_string(q.shape()[2]) +
                     ") must be a multiple of the key/value heads (" + std::to_string(k.shape()[2]) + ")");
  if (o.mask && o.mask->dtype() != DType::bool_)
    throw DTypeError(op + "mask must be bool, got " + dtype_name(o.mask->dtype()));
  for (const auto* len : {&o.query_seq_lengths, &o.key_value_seq_lengths})
    if (*len && ((*len)->dtype() != DType::int32 || (*len)->shape() != Shape{q.shape()[0]}))
      throw ShapeError(op + "sequence lengths must be int32 of shape (" + std::to_string(q.shape()[0]) + "), got " +
                       dtype_name((*len)->dtype()) + shape_to_string((*len)->shape()));
}

}  // namespace

Array dot_product_attention(const Array& query, const Array& key, const Array& value, const AttentionOptions& o) {
  const Array q = ensure_4d(query), k = ensure_4d(key), v = ensure_4d(value);
  check_attention(q, k, v, o);
  const int64_t B = q.shape()[0], T = q.shape()[1], N = q.shape()[2], H = q.shape()[3];
  const int64_t S = k.shape()[1], K = k.shape()[2], G = N / K;
  const double scale = o.scale ? *o.scale : 1.0 / std::sqrt(double(H));
  // Logits in at least float32 (JAX's preferred_element_type), grouped as (B, K, G, T, S).
  const DType logits_dtype = q.dtype() == DType::float64 ? DType::float64 : DType::float32;
  const Array qg = reshape(astype(q, logits_dtype), {B, T, K, G, H});
  Array logits = einsum("BTKGH,BSKH->BKGTS", {qg, astype(k, logits_dtype)});
  logits = logits * Array(scale);
  if (o.bias) logits = astype(logits + grouped(ensure_4d(*o.bias), K, G, "bias"), logits_dtype);
  std::optional<Array> mask;
  auto both = [&](const Array& m) { mask = mask ? logical_and(*mask, m) : m; };
  if (o.mask) both(grouped(ensure_4d(*o.mask), K, G, "mask"));
  const Array tq = reshape(iota(DType::int32, {T, 1}, 0), {1, 1, 1, T, 1});
  const Array sk = reshape(iota(DType::int32, {1, S}, 1), {1, 1, 1, 1, S});
  if (o.is_causal) both(tq >= sk);
  if (o.local_window_size) {
    const auto [left, right] = *o.local_window_size;
    both(logical_and(tq >= sk - Array(int32_t(right)), tq <= sk + Array(int32_t(left))));
  }
  if (o.query_seq_lengths) both(tq < reshape(*o.query_seq_lengths, {B, 1, 1, 1, 1}));
  if (o.key_value_seq_lengths) both(sk < reshape(*o.key_value_seq_lengths, {B, 1, 1, 1, 1}));
  if (mask) {
    const double large_negative = -0.7 * std::min(finfo_max(logits_dtype), double(std::numeric_limits<float>::max()));
    logits = where(*mask, logits, full_like(logits, large_negative));
  }
  const Array probs = astype(softmax(astype(logits, DType::float32), {-1}), k.dtype());
  Array encoded = einsum("BKGTS,BSKH->BTKGH", {probs, v});
  if (o.query_seq_lengths)
    encoded = encoded * astype(reshape(iota(DType::int32, {T}, 0), {1, T, 1, 1, 1}) <
                                   reshape(*o.query_seq_lengths, {B, 1, 1, 1, 1}),
                               encoded.dtype());
  return reshape(encoded, query.shape());
}

}  // namespace tessel::nn
