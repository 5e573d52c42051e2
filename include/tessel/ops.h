#pragma once
// Array operations, named and behaving like jax.numpy / jax.lax. Every function works
// eagerly and under transformations. Binary functions broadcast like NumPy and promote
// dtypes like jax.numpy (C++ scalars are weak: `x * 2.0` keeps x's float dtype).
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "tessel/array.h"

namespace tessel {

using Axes = std::vector<int64_t>;

// ---- creation (src/ops/creation.cpp) ----
/// Zeros of `shape` and `dtype`.
TESSEL_API Array zeros(const Shape& shape, DType dtype = default_float);
/// Ones of `shape` and `dtype`.
TESSEL_API Array ones(const Shape& shape, DType dtype = default_float);
/// `shape` filled with `value`, which broadcasts to it (jnp.full). The dtype is `dtype` when
/// given, else value's, where a weak value (a C++ scalar) takes the default dtype of its kind
/// and stays weak: `full({2}, 7.5)` is a weak float32, as for a Python scalar in JAX. Pass
/// `dtype` (or a strong `Scalar(7.5, f64)`) for another one.
TESSEL_API Array full(const Shape& shape, const Array& value, std::optional<DType> dtype = std::nullopt);
TESSEL_API Array zeros_like(const Array& x);
TESSEL_API Array ones_like(const Array& x);
TESSEL_API Array full_like(const Array& x, Scalar value);
/// Like zeros_like (tessel never hands out uninitialised memory).
TESSEL_API Array empty_like(const Array& x);
/// 0, 1, ..., n-1 along `dimension` of `shape` (lax.broadcasted_iota).
TESSEL_API Array iota(DType dtype, const Shape& shape, int64_t dimension = 0);
/// [0, stop) with step 1.
TESSEL_API Array arange(int64_t stop, DType dtype = default_int);
/// [start, stop) with `step`.
TESSEL_API Array arange(double start, double stop, double step = 1.0, DType dtype = default_float);
/// `num` evenly spaced values from start to stop (inclusive when `endpoint`).
TESSEL_API Array linspace(double start, double stop, int64_t num, bool endpoint = true, DType dtype = default_float);
/// n x m identity-like matrix with ones on diagonal `k`.
TESSEL_API Array eye(int64_t n, std::optional<int64_t> m = std::nullopt, int64_t k = 0, DType dtype = default_float);
/// Copies `x` to `device` (committing it there: operations with it run on that device).
TESSEL_API Array device_put(const Array& x, const Device& device);

// ---- element-wise (src/ops/elementwise.cpp: primitives; numpy_elementwise.cpp: these functions) ----
TESSEL_API Array add(const Array& a, const Array& b);
TESSEL_API Array subtract(const Array& a, const Array& b);
TESSEL_API Array multiply(const Array& a, const Array& b);
/// True division (integers promote to float, as jnp.divide).
TESSEL_API Array divide(const Array& a, const Array& b);
TESSEL_API Array true_divide(const Array& a, const Array& b);
/// Division rounded toward -inf (jnp.floor_divide, Python //). Bool operands count as int32;
/// floats by zero give +-inf or NaN as a / b does; integers by zero give what JAX gives.
TESSEL_API Array floor_divide(const Array& a, const Array& b);
/// Remainder with the sign of the divisor (jnp.remainder / Python %; an integer x % 0 is 0).
TESSEL_API Array remainder(const Array& a, const Array& b);
/// Remainder with the sign of the dividend (lax.rem; an integer x rem 0 is x).
TESSEL_API Array rem(const Array& a, const Array& b);
/// Remainder with the sign of the dividend (jnp.fmod, C fmod; an integer x fmod 0 is 0).
TESSEL_API Array fmod(const Array& a, const Array& b);
TESSEL_API Array pow(const Array& a, const Array& b);
TESSEL_API Array maximum(const Array& a, const Array& b);
TESSEL_API Array minimum(const Array& a, const Array& b);
TESSEL_API Array atan2(const Array& a, const Array& b);
TESSEL_API Array negative(const Array& x);
TESSEL_API Array abs(const Array& x);
TESSEL_API Array sign(const Array& x);
TESSEL_API Array floor(const Array& x);
TESSEL_API Array ceil(const Array& x);
/// Round half to even (jnp.round).
TESSEL_API Array round(const Array& x);
TESSEL_API Array exp(const Array& x);
TESSEL_API Array exp2(const Array& x);
TESSEL_API Array expm1(const Array& x);
TESSEL_API Array log(const Array& x);
TESSEL_API Array log1p(const Array& x);
TESSEL_API Array log2(const Array& x);
TESSEL_API Array log10(const Array& x);
TESSEL_API Array sqrt(const Array& x);
TESSEL_API Array rsqrt(const Array& x);
TESSEL_API Array cbrt(const Array& x);
TESSEL_API Array square(const Array& x);
TESSEL_API Array reciprocal(const Array& x);
TESSEL_API Array sin(const Array& x);
TESSEL_API Array cos(const Array& x);
TESSEL_API Array tan(const Array& x);
TESSEL_API Array arcsin(const Array& x);
TESSEL_API Array arccos(const Array& x);
TESSEL_API Array arctan(const Array& x);
TESSEL_API Array sinh(const Array& x);
TESSEL_API Array cosh(const Array& x);
TESSEL_API Array tanh(const Array& x);
TESSEL_API Array arcsinh(const Array& x);
TESSEL_API Array arccosh(const Array& x);
TESSEL_API Array arctanh(const Array& x);
TESSEL_API Array erf(const Array& x);
TESSEL_API Array erfc(const Array& x);
/// 1 / (1 + exp(-x)) (jax.nn.sigmoid, lax.logistic).
TESSEL_API Array logistic(const Array& x);
TESSEL_API Array equal(const Array& a, const Array& b);
TESSEL_API Array not_equal(const Array& a, const Array& b);
TESSEL_API Array less(const Array& a, const Array& b);
TESSEL_API Array less_equal(const Array& a, const Array& b);
TESSEL_API Array greater(const Array& a, const Array& b);
TESSEL_API Array greater_equal(const Array& a, const Array& b);
TESSEL_API Array logical_and(const Array& a, const Array& b);
TESSEL_API Array logical_or(const Array& a, const Array& b);
TESSEL_API Array logical_xor(const Array& a, const Array& b);
TESSEL_API Array logical_not(const Array& x);
TESSEL_API Array bitwise_and(const Array& a, const Array& b);
TESSEL_API Array bitwise_or(const Array& a, const Array& b);
TESSEL_API Array bitwise_xor(const Array& a, const Array& b);
TESSEL_API Array bitwise_not(const Array& x);
TESSEL_API Array left_shift(const Array& a, const Array& b);
TESSEL_API Array right_shift(const Array& a, const Array& b);
/// `pred ? a : b` element-wise, broadcasting all three (pred must be bool).
TESSEL_API Array where(const Array& pred, const Array& a, const Array& b);
/// Alias of where with lax.select's name.
TESSEL_API Array select(const Array& pred, const Array& a, const Array& b);
/// min(max(x, lo), hi).
TESSEL_API Array clip(const Array& x, const Array& lo, const Array& hi);
TESSEL_API Array clamp(const Array& lo, const Array& x, const Array& hi);
TESSEL_API Array isnan(const Array& x);
TESSEL_API Array isinf(const Array& x);
TESSEL_API Array isfinite(const Array& x);
TESSEL_API Array astype(const Array& x, DType dtype);
TESSEL_API Array real(const Array& x);
TESSEL_API Array imag(const Array& x);
TESSEL_API Array conj(const Array& x);
/// Builds a complex array from real and imaginary parts.
TESSEL_API Array complex(const Array& re, const Array& im);

TESSEL_API Array operator+(const Array& a, const Array& b);
TESSEL_API Array operator-(const Array& a, const Array& b);
TESSEL_API Array operator*(const Array& a, const Array& b);
TESSEL_API Array operator/(const Array& a, const Array& b);
TESSEL_API Array operator%(const Array& a, const Array& b);
TESSEL_API Array operator-(const Array& x);
TESSEL_API Array operator<(const Array& a, const Array& b);
TESSEL_API Array operator<=(const Array& a, const Array& b);
TESSEL_API Array operator>(const Array& a, const Array& b);
TESSEL_API Array operator>=(const Array& a, const Array& b);
TESSEL_API Array operator==(const Array& a, const Array& b);
TESSEL_API Array operator!=(const Array& a, const Array& b);
TESSEL_API Array operator&(const Array& a, const Array& b);
TESSEL_API Array operator|(const Array& a, const Array& b);
TESSEL_API Array operator^(const Array& a, const Array& b);
TESSEL_API Array operator~(const Array& x);
TESSEL_API Array operator!(const Array& x);

// ---- shape (src/ops/shape.cpp) ----
/// Reshape; one dimension may be -1.
TESSEL_API Array reshape(const Array& x, const Shape& shape);
TESSEL_API Array ravel(const Array& x);
/// Permutes axes (default: reversed).
TESSEL_API Array transpose(const Array& x, std::optional<Axes> axes = std::nullopt);
TESSEL_API Array moveaxis(const Array& x, int64_t source, int64_t destination);
TESSEL_API Array swapaxes(const Array& x, int64_t a, int64_t b);
/// Removes size-1 axes (all of them, or the given ones).
TESSEL_API Array squeeze(const Array& x, std::optional<Axes> axes = std::nullopt);
TESSEL_API Array expand_dims(const Array& x, Axes axes);
TESSEL_API Array broadcast_to(const Array& x, const Shape& shape);
/// lax.broadcast_in_dim: operand dimension i becomes output dimension dims[i].
TESSEL_API Array broadcast_in_dim(const Array& x, const Shape& shape, const Axes& dims);
TESSEL_API Shape broadcast_shapes(const std::vector<Shape>& shapes);
TESSEL_API Array concatenate(const std::vector<Array>& xs, int64_t axis = 0);
TESSEL_API Array stack(const std::vector<Array>& xs, int64_t axis = 0);
/// jnp.pad: `widths` holds (before, after) per axis, or one pair for all axes. Modes:
/// "constant" (pads with `value`), "edge", "reflect", "symmetric", "wrap", "linear_ramp",
/// "maximum", "minimum", "mean", "median" and "empty" (zeros), as jnp.pad; the overload
/// with PadOptions takes their arguments.
TESSEL_API Array pad(const Array& x, const std::vector<std::pair<int64_t, int64_t>>& widths,
                     const std::string& mode = "constant", Scalar value = 0);
/// The keyword arguments of jnp.pad's modes.
struct PadOptions {
  /// "constant": the padding value.
  Scalar constant_values = 0;
  /// "maximum", "minimum", "mean", "median": how many values at each edge (before, after)
  /// the statistic reads, per axis or one pair for all; empty: the whole axis.
  std::vector<std::pair<int64_t, int64_t>> stat_length = {};
  /// "linear_ramp": the values the ramps end at (before, after), per axis or one pair for
  /// all; empty: 0.
  std::vector<std::pair<Scalar, Scalar>> end_values = {};
  /// "reflect", "symmetric": "even" mirrors the values, "odd" mirrors them through the edge
  /// value (2 * edge - value).
  std::string reflect_type = "even";
};
TESSEL_API Array pad(const Array& x, const std::vector<std::pair<int64_t, int64_t>>& widths, const std::string& mode,
                     const PadOptions& options);
/// lax.pad: low/high/interior padding per axis (negative low/high crop).
TESSEL_API Array lax_pad(const Array& x, Scalar value, const std::vector<std::array<int64_t, 3>>& config);
TESSEL_API Array flip(const Array& x, std::optional<Axes> axes = std::nullopt);
/// Rolls elements along `axis` by `shift` (periodic).
TESSEL_API Array roll(const Array& x, int64_t shift, int64_t axis);
TESSEL_API Array tile(const Array& x, const Shape& reps);
/// jnp.repeat's keyword arguments.
struct RepeatOptions {
  /// The length of the result along the axis: needed when the counts are traced (under
  /// jit); extra positions repeat the last element, surplus ones are cut off.
  std::optional<int64_t> total_repeat_length = std::nullopt;
};
/// Repeats each element `repeats` times along `axis` (none: of the flattened array).
TESSEL_API Array repeat(const Array& x, int64_t repeats, std::optional<int64_t> axis = std::nullopt,
                        const RepeatOptions& options = {});
/// Repeats element i along `axis` repeats[i] times (a scalar `repeats` applies to all;
/// negative counts act as 0), as jnp.repeat.
TESSEL_API Array repeat(const Array& x, const Array& repeats, std::optional<int64_t> axis = std::nullopt,
                        const RepeatOptions& options = {});

// ---- slicing and indexing (src/ops/indexing.cpp; NumPy index expressions in numpy_indexing.cpp) ----
/// lax.slice: static start (inclusive), limit (exclusive), optional strides.
TESSEL_API Array slice(const Array& x, const Shape& start, const Shape& limit, const Shape& strides = {});
/// Slices one axis.
TESSEL_API Array slice_in_dim(const Array& x, int64_t start, int64_t limit, int64_t stride = 1, int64_t axis = 0);
/// lax.dynamic_slice: start indices are scalar integer arrays; as in JAX, a negative start
/// counts from the end, then the start is clamped so that the window fits.
TESSEL_API Array dynamic_slice(const Array& x, const std::vector<Array>& start, const Shape& sizes);
/// lax.dynamic_update_slice (start indices as in dynamic_slice).
TESSEL_API Array dynamic_update_slice(const Array& x, const Array& update, const std::vector<Array>& start);
/// jnp.take: elements at integer `indices` along `axis` (none: of the flattened array).
/// Negative indices count from the end. Modes: "fill" (the default: out-of-range indices
/// read options.fill_value, NaN for floats), "clip" (clamps raw indices, so -1 reads 0,
/// as jnp.take) and "wrap".
TESSEL_API Array take(const Array& x, const Array& indices, std::optional<int64_t> axis = std::nullopt,
                      const IndexOptions& options = {});
/// jnp.take_along_axis (none: of the flattened array, with 1-D indices). Modes: "fill"
/// (the default), "clip", "wrap" and "promise_in_bounds".
TESSEL_API Array take_along_axis(const Array& x, const Array& indices, std::optional<int64_t> axis = -1,
                                 const IndexOptions& options = {});

// ---- reductions (src/ops/reduction.cpp); axes empty = all axes ----
TESSEL_API Array sum(const Array& x, Axes axes = {}, bool keepdims = false);
TESSEL_API Array prod(const Array& x, Axes axes = {}, bool keepdims = false);
TESSEL_API Array max(const Array& x, Axes axes = {}, bool keepdims = false);
TESSEL_API Array min(const Array& x, Axes axes = {}, bool keepdims = false);
TESSEL_API Array mean(const Array& x, Axes axes = {}, bool keepdims = false);
/// Variance, dividing by N - ddof (NaN where N - ddof <= 0, as jnp.var); real for complex x.
TESSEL_API Array var(const Array& x, Axes axes = {}, bool keepdims = false, double ddof = 0);
/// Standard deviation: sqrt(var(x, axes, keepdims, ddof)) (jnp.std).
TESSEL_API Array std(const Array& x, Axes axes = {}, bool keepdims = false, double ddof = 0);
TESSEL_API Array any(const Array& x, Axes axes = {}, bool keepdims = false);
TESSEL_API Array all(const Array& x, Axes axes = {}, bool keepdims = false);
/// Index of the maximum along `axis` (none: in the flattened array; first occurrence; NaN
/// counts as maximal), int32. keepdims keeps the reduced axes (all of them for none).
TESSEL_API Array argmax(const Array& x, std::optional<int64_t> axis = std::nullopt, bool keepdims = false);
TESSEL_API Array argmin(const Array& x, std::optional<int64_t> axis = std::nullopt, bool keepdims = false);
TESSEL_API Array cumsum(const Array& x, int64_t axis, bool reverse = false);
TESSEL_API Array cumprod(const Array& x, int64_t axis, bool reverse = false);
TESSEL_API Array cummax(const Array& x, int64_t axis, bool reverse = false);
TESSEL_API Array cummin(const Array& x, int64_t axis, bool reverse = false);

// ---- linear algebra (src/ops/linalg.cpp) ----
/// lax.dot_general: contracting and batch dimensions of each operand; the result has
/// batch dims, then a's free dims, then b's free dims.
struct DotDims {
  Axes lhs_contracting, rhs_contracting;
  Axes lhs_batch, rhs_batch;
};
TESSEL_API Array dot_general(const Array& a, const Array& b, const DotDims& dims,
                             std::optional<DType> preferred = std::nullopt);
/// jnp.matmul (batched, with 1-D promotion rules).
TESSEL_API Array matmul(const Array& a, const Array& b);
/// jnp.dot.
TESSEL_API Array dot(const Array& a, const Array& b);
TESSEL_API Array vdot(const Array& a, const Array& b);
TESSEL_API Array outer(const Array& a, const Array& b);
/// jnp.tensordot with an integer `axes`: contracts the last `axes` dimensions of a with the
/// first `axes` of b (in order); the result has a's other dimensions, then b's.
TESSEL_API Array tensordot(const Array& a, const Array& b, int64_t axes = 2);
/// jnp.tensordot with axes ([a_axes], [b_axes]): contracts a_axes[i] of a with b_axes[i] of
/// b (negative axes count from the end).
TESSEL_API Array tensordot(const Array& a, const Array& b, const Axes& a_axes, const Axes& b_axes);
/// jnp.einsum with explicit output ("ij,jk->ik") or implicit output ("ij,jk").
TESSEL_API Array einsum(const std::string& spec, const std::vector<Array>& operands);
/// Sum of diagonal `offset` (above the main one when positive) of the planes spanned by
/// axes axis1 and axis2 (jnp.trace); the result drops those two axes.
TESSEL_API Array trace(const Array& x, int64_t offset = 0, int64_t axis1 = 0, int64_t axis2 = 1);

}  // namespace tessel
