// The functions of tessel/conv.h over the conv_general_dilated and reduce_window
// primitives: lax's conv wrappers and reduce_window, jnp.convolve/correlate and flax's
// pooling layers.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/conv.h"

namespace tessel {

// ---- dimension numbers ----

ConvDimensionNumbers::ConvDimensionNumbers(const std::string& lhs, const std::string& rhs, const std::string& out) {
  const std::string strings = "(\"" + lhs + "\", \"" + rhs + "\", \"" + out + "\")";
  const std::string op = "conv_general_dilated";
  auto check = [&](const std::string& s, char a, char b, const char* which) {
    if (std::count(s.begin(), s.end(), a) != 1 || std::count(s.begin(), s.end(), b) != 1)
      throw ValueError(op + ": dimension_numbers' " + which + " \"" + s + "\" must contain '" + a + "' and '" + b +
                       "' exactly once, got " + strings);
    for (size_t i = 0; i < s.size(); ++i)
      if (s.find(s[i], i + 1) != std::string::npos)
        throw ValueError(op + ": dimension_numbers' " + which + " \"" + s + "\" names '" + s[i] + "' twice");
  };
  check(lhs, 'N', 'C', "lhs spec");
  check(rhs, 'O', 'I', "rhs spec");
  check(out, 'N', 'C', "out spec");
  if (lhs.size() != rhs.size() || out.size() != rhs.size())
    throw ValueError(op + ": dimension_numbers " + strings + " must all have the operands' rank");
  auto spatial = [](std::string s, const char* skip) {
    std::erase_if(s, [&](char c) { return c == skip[0] || c == skip[1]; });
    std::sort(s.begin(), s.end());
    return s;
  };
  if (spatial(lhs, "NC") != spatial(rhs, "OI") || spatial(out, "NC") != spatial(rhs, "OI"))
    throw ValueError(op + ": dimension_numbers " + strings + " must name the same spatial dimensions in each");
  // Spatial dimensions in the order the kernel's string names them.
  std::string order;
  for (char c : rhs)
    if (c != 'O' && c != 'I') order += c;
  auto perm = [&](const std::string& s, char a, char b) {
    Axes p{int64_t(s.find(a)), int64_t(s.find(b))};
    for (char c : order) p.push_back(int64_t(s.find(c)));
    return p;
  };
  lhs_spec = perm(lhs, 'N', 'C');
  rhs_spec = perm(rhs, 'O', 'I');
  out_spec = perm(out, 'N', 'C');
}

namespace {

using ops::ConvSpec;

Axes iota_spec(int64_t rank) {
  Axes r = Axes(size_t(rank));
  for (int64_t i = 0; i < rank; ++i) r[size_t(i)] = i;
  return r;
}

/// Both operands in their promoted dtype, or in the preferred dtype when one is given.
std::pair<Array, Array> promote_operands(const std::string& op, const Array& a, const Array& b,
                                         std::optional<DType> preferred, bool inexact) {
  PromotedType t = ops::result_type({a, b});
  if (preferred) {
    const DType in = t.dtype;
    const bool ok = is_complex(in) ? is_complex(*preferred) : is_floating(in) ? is_inexact(*preferred) : true;
    if (!ok)
      throw DTypeError(op + ": preferred_element_type " + dtype_name(*preferred) + " cannot hold products of " +
                       dtype_name(in) + " operands; use a dtype of the same kind or wider");
    t = {*preferred, false};
  } else if (inexact && !is_inexact(t.dtype)) {
    t = {default_float, t.weak};
  }
  return {ops::convert(a, t.dtype, t.weak), ops::convert(b, t.dtype, t.weak)};
}

Shape spatial_of(const Shape& shape, const Axes& spec) {
  Shape r;
  for (size_t d = 2; d < spec.size(); ++d) r.push_back(shape[size_t(spec[d])]);
  return r;
}

bool all_ones(const Shape& v) {
  return std::all_of(v.begin(), v.end(), [](int64_t x) { return x == 1; });
}

}  // namespace

Array conv_general_dilated(const Array& lhs_in, const Array& rhs_in, const Shape& window_strides,
                           const WindowPadding& padding, const ConvOptions& o) {
  const std::string op = "conv_general_dilated";
  if (lhs_in.ndim() != rhs_in.ndim() || lhs_in.ndim() < 2)
    throw ShapeError(op + ": lhs and rhs must have the same rank, at least 2 (batch, feature, spatial...), got shapes " +
                     shape_to_string(lhs_in.shape()) + " and " + shape_to_string(rhs_in.shape()));
  auto [lhs, rhs] = promote_operands(op, lhs_in, rhs_in, o.preferred_element_type, false);
  if (is_bool(lhs.dtype()))
    throw DTypeError(op + ": bool operands are not supported; convert them to a numeric dtype");
  const int64_t rank = lhs.ndim();
  const size_t nsp = size_t(rank - 2);
  ConvSpec s;
  if (o.dimension_numbers.is_default()) {
    s.lhs_spec = s.rhs_spec = s.out_spec = iota_spec(rank);
  } else {
    s.lhs_spec = o.dimension_numbers.lhs_spec, s.rhs_spec = o.dimension_numbers.rhs_spec;
    s.out_spec = o.dimension_numbers.out_spec;
    for (const Axes* spec : {&s.lhs_spec, &s.rhs_spec, &s.out_spec})
      if (int64_t(spec->size()) != rank)
        throw ValueError(op + ": dimension_numbers' specs " + shape_to_string(s.lhs_spec) + ", " +
                         shape_to_string(s.rhs_spec) + ", " + shape_to_string(s.out_spec) +
                         " must each have one entry per operand dimension, " + std::to_string(rank) +
                         " for operands of shapes " + shape_to_string(lhs.shape()) + " and " +
                         shape_to_string(rhs.shape()));
  }
  s.window_strides = ops::per_dim(op, "window_strides", window_strides, nsp, 1, true);
  s.lhs_dilation = ops::per_dim(op, "lhs_dilation", o.lhs_dilation, nsp, 1, true);
  s.rhs_dilation = ops::per_dim(op, "rhs_dilation", o.rhs_dilation, nsp, 1, true);
  if (!padding.mode.empty() && !all_ones(s.lhs_dilation))
    throw ValueError(op + ": string padding \"" + padding.mode + "\" has no meaning with lhs_dilation " +
                     shape_to_string(s.lhs_dilation) +
                     " (as in JAX); give explicit (low, high) pairs or use conv_transpose");
  s.feature_group_count = o.feature_group_count;
  s.batch_group_count = o.batch_group_count;
  Shape window;
  const Shape k = spatial_of(rhs.shape(), s.rhs_spec);
  for (size_t d = 0; d < nsp; ++d) window.push_back(ops::dilate_dim(k[d], s.rhs_dilation[d]));
  const ops::Pads pads = ops::resolve_padding(op, padding, spatial_of(lhs.shape(), s.lhs_spec), window, s.window_strides);
  for (auto [lo, hi] : pads) s.padding_low.push_back(lo), s.padding_high.push_back(hi);
  return ops::conv_bind(lhs, rhs, s);
}

Array conv(const Array& lhs, const Array& rhs, const Shape& window_strides, const WindowPadding& padding,
           Precision precision, std::optional<DType> preferred_element_type) {
  return conv_general_dilated(lhs, rhs, window_strides, padding,
                              {.precision = precision, .preferred_element_type = preferred_element_type});
}

Array conv_with_general_padding(const Array& lhs, const Array& rhs, const Shape& window_strides,
                                const WindowPadding& padding, const Shape& lhs_dilation, const Shape& rhs_dilation,
                                Precision precision, std::optional<DType> preferred_element_type) {
  return conv_general_dilated(lhs, rhs, window_strides, padding,
                              {.lhs_dilation = lhs_dilation,
                               .rhs_dilation = rhs_dilation,
                               .precision = precision,
                               .preferred_element_type = preferred_element_type});
}

namespace {

/// The (before, after) padding of a transposed convolution with kernel size k (dilated)
/// and stride s, from the forward convolution's padding (JAX's _conv_transpose_padding).
std::pair<int64_t, int64_t> transpose_padding(int64_t k, int64_t s, const std::string& mode,
                                              std::pair<int64_t, int64_t> explicit_pads) {
  int64_t pad_len, pad_a;
  if (mode == "SAME") {
    pad_len = k + s - 2;
    pad_a = s > k - 1 ? k - 1 : (pad_len + 1) / 2;
  } else if (mode == "VALID") {
    pad_len = k + s - 2 + std::max<int64_t>(k - s, 0);
    pad_a = k - 1;
  } else if (mode.empty()) {
    pad_a = k - explicit_pads.first - 1;
    pad_len = pad_a + k - explicit_pads.second - 1;
  } else {
    throw ValueError("conv_transpose: unknown padding '" + mode + "'; expected \"SAME\", \"VALID\" or (low, high) pairs");
  }
  return {pad_a, pad_len - pad_a};
}

}  // namespace

Array conv_transpose(const Array& lhs, const Array& rhs_in, const Shape& strides, const WindowPadding& padding,
                     const ConvTransposeOptions& o) {
  const std::string op = "conv_transpose";
  if (lhs.ndim() != rhs_in.ndim() || lhs.ndim() < 2)
    throw ShapeError(op + ": lhs and rhs must have the same rank, at least 2, got shapes " +
                     shape_to_string(lhs.shape()) + " and " + shape_to_string(rhs_in.shape()));
  const int64_t rank = lhs.ndim();
  const size_t nsp = size_t(rank - 2);
  ConvDimensionNumbers dn;
  if (o.dimension_numbers) {
    dn = *o.dimension_numbers;
  } else {
    static const char* const kDefaults[][3] = {
        {"NC", "IO", "NC"}, {"NHC", "HIO", "NHC"}, {"NHWC", "HWIO", "NHWC"}, {"NHWDC", "HWDIO", "NHWDC"}};
    if (rank > 5)
      throw ValueError(op + ": no default dimension_numbers for rank " + std::to_string(rank) + "; pass them");
    const auto& d = kDefaults[rank - 2];
    dn = ConvDimensionNumbers(d[0], d[1], d[2]);
  }
  if (dn.is_default()) dn = ConvDimensionNumbers(iota_spec(rank), iota_spec(rank), iota_spec(rank));
  if (int64_t(dn.rhs_spec.size()) != rank)
    throw ValueError(op + ": dimension_numbers must have one entry per operand dimension, " + std::to_string(rank));
  const Shape rhs_dil = ops::per_dim(op, "rhs_dilation", o.rhs_dilation, nsp, 1, true);
  const Shape s = ops::per_dim(op, "strides", strides, nsp, 1, true);
  const Shape k = spatial_of(rhs_in.shape(), dn.rhs_spec);
  std::vector<std::pair<int64_t, int64_t>> pads;
  std::string mode = padding.mode;
  std::transform(mode.begin(), mode.end(), mode.begin(), [](unsigned char c) { return char(std::toupper(c)); });
  if (o.use_consistent_padding || !mode.empty()) {
    if (mode.empty() && padding.pads.size() != nsp)
      throw ValueError(op + ": padding needs one (low, high) pair per spatial dimension, " + std::to_string(nsp));
    for (size_t d = 0; d < nsp; ++d)
      pads.push_back(transpose_padding(ops::dilate_dim(k[d], rhs_dil[d]), s[d], mode,
                                       mode.empty() ? padding.pads[d] : std::pair<int64_t, int64_t>{0, 0}));
  } else {
    pads = padding.pads;
  }
  Array rhs = rhs_in;
  if (o.transpose_kernel) {
    rhs = flip(rhs, Axes(dn.rhs_spec.begin() + 2, dn.rhs_spec.end()));
    rhs = swapaxes(rhs, dn.rhs_spec[0], dn.rhs_spec[1]);
  }
  return conv_general_dilated(lhs, rhs, Shape(nsp, 1), pads,
                              {.lhs_dilation = s,
                               .rhs_dilation = rhs_dil,
                               .dimension_numbers = dn,
                               .precision = o.precision,
                               .preferred_element_type = o.preferred_element_type});
}

namespace {

/// jnp.convolve and jnp.correlate (JAX's _conv): one 1-D conv_general_dilated.
Array conv_1d(const std::string& op, const Array& a, const Array& v, const std::string& mode,
              std::optional<DType> preferred) {
  if (a.ndim() != 1 || v.ndim() != 1)
    throw ValueError(op + ": only 1-D inputs are supported, got shapes " + shape_to_string(a.shape()) + " and " +
                     shape_to_string(v.shape()));
  auto [x, y] = promote_operands(op, a, v, preferred, true);
  if (x.size() == 0 || y.size() == 0)
    throw ValueError(op + ": inputs cannot be empty, got shapes " + shape_to_string(a.shape()) + " and " +
                     shape_to_string(v.shape()));
  bool reversed = false;
  if (op == "correlate") {
    if (is_complex(y.dtype())) y = conj(y);
    if (x.size() < y.size()) std::swap(x, y), reversed = true;
  } else {
    if (x.size() < y.size()) std::swap(x, y);
    y = flip(y);
  }
  const int64_t n = y.size();
  std::pair<int64_t, int64_t> pad;
  if (mode == "valid") pad = {0, 0};
  else if (mode == "same") pad = {n / 2, n - n / 2 - 1};
  else if (mode == "full") pad = {n - 1, n - 1};
  else throw ValueError(op + ": mode must be \"full\", \"same\" or \"valid\", got \"" + mode + "\"");
  const Array r = conv_general_dilated(reshape(x, {1, 1, x.size()}), reshape(y, {1, 1, n}), {1}, {pad},
                                       {.preferred_element_type = preferred});
  const Array flat = reshape(r, {r.size()});
  return reversed ? flip(flat) : flat;
}

}  // namespace

Array convolve(const Array& a, const Array& v, const std::string& mode, Precision,
               std::optional<DType> preferred_element_type) {
  return conv_1d("convolve", a, v, mode, preferred_element_type);
}

Array correlate(const Array& a, const Array& v, const std::string& mode, Precision,
                std::optional<DType> preferred_element_type) {
  return conv_1d("correlate", a, v, mode, preferred_element_type);
}

// ---- reduce_window ----

namespace {

/// The identity of `op` in `dtype`: what padding and base-dilation holes hold.
Scalar window_identity(ops::WindowOp op, DType dtype) {
  return visit_dtype(dtype, [&](auto z) -> Scalar {
    using T = decltype(z);
    if (op == ops::WindowOp::kSum) return Scalar(0, dtype);
    if constexpr (std::is_same_v<T, bool>) return Scalar(op == ops::WindowOp::kMin, dtype);
    else if constexpr (cpu::is_complex_v<T>) return Scalar(0, dtype);  // rejected below
    else if constexpr (std::numeric_limits<cpu::compute_t<T>>::has_infinity)
      return Scalar(op == ops::WindowOp::kMax ? -INFINITY : INFINITY, dtype);
    else return Scalar(op == ops::WindowOp::kMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max(), dtype);
  });
}

}  // namespace

Array reduce_window(const Array& x, Scalar init_value, WindowComputation computation, const Shape& window_dimensions,
                    const Shape& window_strides, const WindowPadding& padding, const Shape& base_dilation,
                    const Shape& window_dilation) {
  const std::string op = "reduce_window";
  ops::WindowOp wop;
  if (computation == static_cast<WindowComputation>(&add)) wop = ops::WindowOp::kSum;
  else if (computation == static_cast<WindowComputation>(&maximum)) wop = ops::WindowOp::kMax;
  else if (computation == static_cast<WindowComputation>(&minimum)) wop = ops::WindowOp::kMin;
  else
    throw NotImplementedError(op + ": only ts::add, ts::maximum and ts::minimum are supported as the computation; "
                              "compose other reductions from them (a product: exp of a windowed sum of logs)");
  if (is_complex(x.dtype()) && wop != ops::WindowOp::kSum)
    throw DTypeError(op + ": complex operands have no order; maximum and minimum need real ones");
  const size_t n = size_t(x.ndim());
  if (window_dimensions.size() != n)
    throw ValueError(op + ": window_dimensions " + shape_to_string(window_dimensions) +
                     " needs one entry per dimension of the operand of shape " + shape_to_string(x.shape()));
  const Shape strides = ops::per_dim(op, "window_strides", window_strides, n, 1, true);
  const Shape base = ops::per_dim(op, "base_dilation", base_dilation, n, 1, true);
  const Shape wdil = ops::per_dim(op, "window_dilation", window_dilation, n, 1, true);
  ops::per_dim(op, "window_dimensions", window_dimensions, n, 1, true);
  Shape dilated;
  for (size_t d = 0; d < n; ++d) dilated.push_back(ops::dilate_dim(window_dimensions[d], wdil[d]));
  const ops::Pads pads = ops::resolve_padding(op, padding, x.shape(), dilated, strides);
  const Scalar init = init_value.astype(x.dtype());
  const Array r = ops::reduce_window_bind(wop, x, window_dimensions, strides, pads, base, wdil);
  if (init == window_identity(wop, x.dtype())) return r;
  // Another initial value joins each window once (what JAX computes on CPU; padding and
  // holes still hold the identity).
  return computation(r, full_like(r, init));
}

}  // namespace tessel

// ---- pooling (flax.linen.pooling) ----

namespace tessel::nn {
namespace {

/// flax's pool: the window covers the spatial dimensions before the last (features) one.
Array pool(const char* name, const Array& x, Scalar init, WindowComputation f, const Shape& window,
           const std::optional<Shape>& strides, const WindowPadding& padding) {
  const int64_t nw = int64_t(window.size());
  if (x.ndim() < nw + 1)
    throw ShapeError(std::string(name) + ": inputs of shape " + shape_to_string(x.shape()) + " need at least " +
                     std::to_string(nw + 1) + " dimensions for a window of " + std::to_string(nw) +
                     " (spatial..., features)");
  const size_t batch = size_t(x.ndim() - nw - 1);
  const Shape s = strides.value_or(Shape(window.size(), 1));
  if (s.size() != window.size())
    throw ValueError(std::string(name) + ": strides " + shape_to_string(s) + " need one entry per window dimension " +
                     shape_to_string(window));
  Shape dims(batch, 1), st(batch, 1);
  dims.insert(dims.end(), window.begin(), window.end());
  st.insert(st.end(), s.begin(), s.end());
  dims.push_back(1), st.push_back(1);
  WindowPadding p = padding;
  if (p.mode.empty()) {
    if (p.pads.size() != window.size())
      throw ValueError(std::string(name) + ": padding needs one (low, high) pair per window dimension, " +
                       std::to_string(window.size()));
    p.pads.insert(p.pads.begin(), batch, {0, 0});
    p.pads.push_back({0, 0});
  }
  return reduce_window(x, init, f, dims, st, p);
}

}  // namespace

Array max_pool(const Array& inputs, const Shape& window_shape, const std::optional<Shape>& strides,
               const WindowPadding& padding) {
  return pool("max_pool", inputs, -INFINITY, maximum, window_shape, strides, padding);
}

Array min_pool(const Array& inputs, const Shape& window_shape, const std::optional<Shape>& strides,
               const WindowPadding& padding) {
  return pool("min_pool", inputs, INFINITY, minimum, window_shape, strides, padding);
}

Array avg_pool(const Array& inputs, const Shape& window_shape, const std::optional<Shape>& strides,
               const WindowPadding& padding, bool count_include_pad) {
  const Array y = pool("avg_pool", inputs, 0.0, add, window_shape, strides, padding);
  if (count_include_pad) return y / double(shape_size(window_shape));
  // Divide by how many real elements each window covers.
  Shape one_shape = inputs.shape();
  one_shape.back() = 1;
  const Array counts = pool("avg_pool", ones(one_shape, y.dtype()), 0.0, add, window_shape, strides, padding);
  return y / counts;
}

}  // namespace tessel::nn
