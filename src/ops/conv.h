#pragma once
// Helpers shared by the convolution primitive (conv.cpp), its kernels (conv_kernel.cpp), the
// windowed reductions (windowed.cpp) and the functions built on them (numpy_conv.cpp).
#include <utility>
#include <vector>

#include "ir/primitive.h"
#include "ops/op_util.h"
#include "tessel/conv.h"

namespace tessel::ops {

using Pads = std::vector<std::pair<int64_t, int64_t>>;

/// The length of a dimension of `d` elements dilated by `dilation` (d - 1 holes of
/// dilation - 1 elements): lax's dilate_dim.
inline int64_t dilate_dim(int64_t d, int64_t dilation) { return d == 0 ? 0 : 1 + dilation * (d - 1); }
/// The number of windows of `window` elements, `stride` apart, in `d` elements.
inline int64_t stride_dim(int64_t d, int64_t window, int64_t stride) {
  return d < window ? 0 : (d - window) / stride + 1;
}

/// Where tap `k` of window `y` reads along a dimension of `in` elements dilated by
/// `base_dilation` and padded by `pad_lo` below, windows `stride` apart with taps `dilation`
/// apart: the element's index, or -1 on padding or a hole of the dilation. (A convolution's
/// lhs dilation is a base dilation, its rhs dilation the tap dilation.)
inline int64_t window_tap(int64_t y, int64_t k, int64_t stride, int64_t dilation, int64_t pad_lo,
                          int64_t base_dilation, int64_t in) {
  const int64_t p = y * stride + k * dilation - pad_lo;
  return p >= 0 && p % base_dilation == 0 && p / base_dilation < in ? p / base_dilation : -1;
}

/// The (low, high) padding that spreads a windowed operation's output cotangent back over its
/// input (JAX's _conv_general_vjp_lhs_padding), along a dimension of `in` elements (after
/// base dilation), windows of `window` (after tap dilation), `out` cotangent elements
/// (after dilation by the strides), for a forward low padding `pad_lo`.
inline std::pair<int64_t, int64_t> vjp_lhs_padding(int64_t in, int64_t window, int64_t out, int64_t pad_lo) {
  const int64_t before = window - pad_lo - 1;
  return {before, in + window - 1 - out - before};
}

/// `values`, or `n` copies of `fill` when empty; a ValueError naming `op` and `what` when it
/// has another length or (positive) a value below 1.
Shape per_dim(const std::string& op, const char* what, const Shape& values, size_t n, int64_t fill, bool positive);

/// lax.padtype_to_pads for a window of `window` elements (already dilated) moving by
/// `strides` over `in`: explicit pads are checked (one pair per dimension) and returned.
Pads resolve_padding(const std::string& op, const WindowPadding& padding, const Shape& in, const Shape& window,
                     const Shape& strides);

/// The static parameters of conv_general_dilated (lax's names): specs as in
/// ConvDimensionNumbers, padding as low and high lists.
struct ConvSpec {
  Axes lhs_spec, rhs_spec, out_spec;
  Shape window_strides, padding_low, padding_high, lhs_dilation, rhs_dilation;
  int64_t feature_group_count = 1, batch_group_count = 1;
  std::optional<DType> preferred_element_type;

  static ConvSpec from(const Params& p);
  Params params() const;
  size_t spatial() const { return window_strides.size(); }
};

/// The conv_general_dilated primitive.
extern const ir::Primitive& conv_general_dilated_p;
/// Binds conv_general_dilated on operands of one dtype.
Array conv_bind(const Array& lhs, const Array& rhs, const ConvSpec& spec);

/// The monoid of a windowed reduction primitive.
enum class WindowOp { kSum, kMax, kMin };
/// Binds reduce_window_sum / _max / _min (windowed.cpp): one entry per dimension of x in
/// each list (explicit padding pairs).
Array reduce_window_bind(WindowOp op, const Array& x, const Shape& dims, const Shape& strides, const Pads& pads,
                         const Shape& base_dilation, const Shape& window_dilation);

/// The CPU kernel of conv_general_dilated (conv_kernel.cpp).
void conv_kernel(const ir::KernelCall& c);
/// Whether `spec` on operands `lhs` and `rhs` runs on oneDNN, and which of its
/// implementations ("" when tessel's own loops run it).
std::string conv_onednn_impl(const Aval& lhs, const Aval& rhs, const ConvSpec& spec);

}  // namespace tessel::ops
