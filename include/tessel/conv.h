#pragma once
// Convolutions and windowed reductions, named and behaving like jax.lax's
// (conv_general_dilated, conv, conv_with_general_padding, conv_transpose, reduce_window,
// cumlogsumexp), jax.numpy's convolve and correlate, and flax's pooling layers
// (nn::max_pool, nn::avg_pool, nn::min_pool). Everything works eagerly and under jit, grad
// and vmap (docs/convolution.md).
//
//   ts::Array x = ts::ones({8, 32, 32, 3});                        // NHWC images
//   ts::Array w = ts::ones({3, 3, 3, 16});                         // HWIO kernel
//   ts::Array y = ts::conv_general_dilated(x, w, {1, 1}, "SAME",
//                                          {.dimension_numbers = {"NHWC", "HWIO", "NHWC"}});
//   ts::Array p = ts::nn::max_pool(y, {2, 2}, ts::Shape{2, 2});    // (8, 16, 16, 16)
//
// float32 convolutions of 1 to 3 spatial dimensions run on oneDNN; the others (float64,
// complex, integers, half types, batch groups, other ranks) on tessel's own loops.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tessel/array.h"
#include "tessel/ops.h"

namespace tessel {

/// Which dimensions of a convolution's operands and result are the batch, the features and
/// the spatial ones (lax.ConvDimensionNumbers). Either three permutations — lhs_spec =
/// (batch, feature, spatial...), rhs_spec = (out feature, in feature, spatial...),
/// out_spec = (batch, feature, spatial...) — or three strings such as ("NHWC", "HWIO",
/// "NHWC"): 'N' and 'C' name the batch and feature dimensions of lhs and out, 'O' and 'I'
/// those of the kernel, other letters the spatial ones; spatial dimensions are matched by
/// letter and ordered as they appear in the kernel's string (window_strides[0] is the
/// kernel's first spatial letter). Default (all empty): (0, 1, 2, ...) for all three, i.e.
/// ("NCHW", "OIHW", "NCHW") in 2-D.
struct TESSEL_API ConvDimensionNumbers {
  Axes lhs_spec, rhs_spec, out_spec;
  ConvDimensionNumbers() = default;
  ConvDimensionNumbers(Axes lhs, Axes rhs, Axes out)
      : lhs_spec(std::move(lhs)), rhs_spec(std::move(rhs)), out_spec(std::move(out)) {}
  /// Parses three layout strings (ValueError for a missing or repeated letter, strings of
  /// different lengths or different spatial letters).
  ConvDimensionNumbers(const std::string& lhs, const std::string& rhs, const std::string& out);
  ConvDimensionNumbers(const char* lhs, const char* rhs, const char* out)
      : ConvDimensionNumbers(std::string(lhs), std::string(rhs), std::string(out)) {}
  bool is_default() const { return lhs_spec.empty() && rhs_spec.empty() && out_spec.empty(); }
};

/// The padding of a convolution or a window: "VALID" (none), "SAME" (the output has
/// ceil(in / stride) positions; an odd total puts the extra one at the end), "SAME_LOWER"
/// (the extra one at the start), or explicit (low, high) pairs, one per spatial (window)
/// dimension; negative values crop.
struct TESSEL_API WindowPadding {
  std::string mode;                                  ///< empty when `pads` are explicit
  std::vector<std::pair<int64_t, int64_t>> pads;
  WindowPadding(const char* m) : mode(m) {}          // NOLINT: implicit, as JAX takes a string
  WindowPadding(std::string m) : mode(std::move(m)) {}  // NOLINT
  WindowPadding(std::vector<std::pair<int64_t, int64_t>> p) : pads(std::move(p)) {}  // NOLINT
  WindowPadding(std::initializer_list<std::pair<int64_t, int64_t>> p) : pads(p) {}   // NOLINT
};

/// lax.Precision: accepted for JAX compatibility and ignored (tessel's CPU kernels always
/// compute in the operands' precision or wider).
enum class Precision { kDefault, kHigh, kHighest };

/// The keyword arguments of lax.conv_general_dilated.
struct ConvOptions {
  /// Dilation of the input (a transposed convolution): empty means 1 in every spatial dim.
  Shape lhs_dilation = {};
  /// Dilation of the kernel (atrous convolution): empty means 1.
  Shape rhs_dilation = {};
  ConvDimensionNumbers dimension_numbers = {};
  /// The input features split into this many groups, each convolved with its own slice of
  /// the kernel's output features (depthwise convolution: as many groups as features).
  int64_t feature_group_count = 1;
  /// The batch split into this many groups, each convolved with its own slice of the
  /// kernel's output features (what the gradient of a grouped convolution's kernel is).
  int64_t batch_group_count = 1;
  Precision precision = Precision::kDefault;
  /// The result's dtype (operands are converted to it first; it must be of the same kind or
  /// wider, or a float for integer operands).
  std::optional<DType> preferred_element_type = std::nullopt;
};

/// lax.conv_general_dilated: the general n-D convolution (a cross-correlation: the kernel
/// is not flipped). lhs and rhs have rank n + 2; `window_strides` has one entry per spatial
/// dimension (empty: all 1). Operands are promoted to a common dtype (bool is rejected).
/// String padding is not allowed with lhs_dilation (use conv_transpose).
TESSEL_API Array conv_general_dilated(const Array& lhs, const Array& rhs, const Shape& window_strides,
                                      const WindowPadding& padding, const ConvOptions& options = {});

/// lax.conv: conv_general_dilated with the default dimension numbers (NCHW, OIHW, NCHW).
TESSEL_API Array conv(const Array& lhs, const Array& rhs, const Shape& window_strides, const WindowPadding& padding,
                      Precision precision = Precision::kDefault,
                      std::optional<DType> preferred_element_type = std::nullopt);

/// lax.conv_with_general_padding: conv with lhs and rhs dilation (empty: 1).
TESSEL_API Array conv_with_general_padding(const Array& lhs, const Array& rhs, const Shape& window_strides,
                                           const WindowPadding& padding, const Shape& lhs_dilation,
                                           const Shape& rhs_dilation, Precision precision = Precision::kDefault,
                                           std::optional<DType> preferred_element_type = std::nullopt);

/// The keyword arguments of lax.conv_transpose.
struct ConvTransposeOptions {
  Shape rhs_dilation = {};
  /// Default by rank, as JAX: ("NC", "IO", "NC"), ("NHC", "HIO", "NHC"), ("NHWC", "HWIO",
  /// "NHWC"), ("NHWDC", "HWDIO", "NHWDC").
  std::optional<ConvDimensionNumbers> dimension_numbers = std::nullopt;
  /// Flip the kernel's spatial dimensions and swap its I and O dimensions, so the result
  /// equals the gradient of conv_general_dilated with this kernel (Keras' Conv2DTranspose).
  bool transpose_kernel = false;
  Precision precision = Precision::kDefault;
  std::optional<DType> preferred_element_type = std::nullopt;
  /// Explicit pads are the forward convolution's too (PyTorch's convention), not the
  /// transposed convolution's.
  bool use_consistent_padding = false;
};

/// lax.conv_transpose: the fractionally strided convolution (lhs dilated by `strides`),
/// with padding "SAME", "VALID" (read as the forward convolution's) or explicit pairs.
TESSEL_API Array conv_transpose(const Array& lhs, const Array& rhs, const Shape& strides, const WindowPadding& padding,
                                const ConvTransposeOptions& options = {});

/// jnp.convolve: the discrete 1-D convolution of a and v, mode "full" (default), "same"
/// (a's length) or "valid". Operands are promoted to an inexact dtype (or converted to
/// `preferred_element_type`).
TESSEL_API Array convolve(const Array& a, const Array& v, const std::string& mode = "full",
                          Precision precision = Precision::kDefault,
                          std::optional<DType> preferred_element_type = std::nullopt);
/// jnp.correlate: c[k] = sum_j a[k + j] * conj(v[j]), mode "valid" (default), "same" or
/// "full".
TESSEL_API Array correlate(const Array& a, const Array& v, const std::string& mode = "valid",
                           Precision precision = Precision::kDefault,
                           std::optional<DType> preferred_element_type = std::nullopt);

/// The binary function of a reduce_window: ts::add, ts::maximum or ts::minimum.
using WindowComputation = Array (*)(const Array&, const Array&);

/// lax.reduce_window: reduces each window of `x` with `computation` (ts::add, ts::maximum
/// or ts::minimum; another function is a NotImplementedError) starting from `init_value`.
/// One entry per dimension of x in window_dimensions, window_strides (empty: 1),
/// base_dilation (empty: 1) and window_dilation (empty: 1). Padding and the holes of the
/// base dilation count as the computation's identity; init_value joins each window once
/// (as JAX computes it on CPU).
TESSEL_API Array reduce_window(const Array& x, Scalar init_value, WindowComputation computation,
                               const Shape& window_dimensions, const Shape& window_strides = {},
                               const WindowPadding& padding = "VALID", const Shape& base_dilation = {},
                               const Shape& window_dilation = {});

/// lax.cumlogsumexp: log(cumsum(exp(x))) along `axis`, computed without overflow (a scan of
/// logaddexp); `reverse` scans from the end. Floating-point x only.
TESSEL_API Array cumlogsumexp(const Array& x, int64_t axis = 0, bool reverse = false);

}  // namespace tessel

/// Pooling layers as flax.linen.pooling (and jax.example_libraries.stax's MaxPool and
/// AvgPool): `inputs` is (batch..., spatial..., features) and the window covers the
/// window_shape.size() spatial dimensions just before the features; strides default to 1;
/// padding is "VALID", "SAME" or explicit pairs for the spatial dimensions.
namespace tessel::nn {

/// The maximum of each window (padding counts as -inf).
TESSEL_API Array max_pool(const Array& inputs, const Shape& window_shape,
                          const std::optional<Shape>& strides = std::nullopt, const WindowPadding& padding = "VALID");
/// The minimum of each window (padding counts as +inf).
TESSEL_API Array min_pool(const Array& inputs, const Shape& window_shape,
                          const std::optional<Shape>& strides = std::nullopt, const WindowPadding& padding = "VALID");
/// The mean of each window; `count_include_pad` divides by the window's size, else by the
/// number of non-padding elements it covers.
TESSEL_API Array avg_pool(const Array& inputs, const Shape& window_shape,
                          const std::optional<Shape>& strides = std::nullopt, const WindowPadding& padding = "VALID",
                          bool count_include_pad = true);

}  // namespace tessel::nn
