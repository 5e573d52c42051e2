// lax's convolution shape helpers and the convolutions built from conv_general_dilated
// (include/tessel/lax_extra.h): patches (a grouped convolution with an identity kernel) and
// unshared ("local") convolutions (patches contracted with a kernel per output position),
// both as JAX composes them.
#include <algorithm>
#include <numeric>

#include "ops/conv.h"
#include "ops/op_util.h"
#include "tessel/lax_extra.h"
#include "tessel/numpy.h"

namespace tessel::lax {
namespace {

Shape take(const Shape& s, const Axes& perm) {
  Shape r;
  for (int64_t p : perm) r.push_back(s.at(size_t(p)));
  return r;
}

/// s laid out by `perm` (out[perm[i]] = s[i]): the inverse of take.
Shape untake(const Shape& s, const Axes& perm) {
  Shape r(s.size());
  for (size_t i = 0; i < perm.size(); ++i) r.at(size_t(perm[i])) = s[i];
  return r;
}

ConvDimensionNumbers resolved(const std::string& op, const Shape& lhs, const Shape& rhs, const ConvDimensionNumbers& dn) {
  if (lhs.size() != rhs.size())
    throw ShapeError(op + ": lhs and rhs must have one rank, got " + shape_to_string(lhs) + " and " + shape_to_string(rhs));
  if (lhs.size() < 2) throw ShapeError(op + ": operands need rank >= 2 (batch, feature, spatial...), got " + shape_to_string(lhs));
  if (!dn.is_default()) {
    for (const Axes* a : {&dn.lhs_spec, &dn.rhs_spec, &dn.out_spec})
      if (a->size() != lhs.size())
        throw ShapeError(op + ": the dimension numbers have " + std::to_string(a->size()) + " entries but the operands rank " +
                         std::to_string(lhs.size()));
    return dn;
  }
  Axes iota(lhs.size());
  std::iota(iota.begin(), iota.end(), 0);
  return {iota, iota, iota};
}

Shape spatial(const Shape& s) { return Shape(s.begin() + 2, s.end()); }

/// x with axes a and b moved to positions pa and pb, the others keeping their order
/// (util.moveaxis with two axes).
Array move_two(const Array& x, int64_t a, int64_t b, int64_t pa, int64_t pb) {
  Axes perm(size_t(x.ndim()), -1);
  perm[size_t(pa)] = a;
  perm[size_t(pb)] = b;
  int64_t next = 0;
  for (auto& p : perm) {
    if (p >= 0) continue;
    while (next == a || next == b) ++next;
    p = next++;
  }
  return transpose(x, perm);
}

}  // namespace

ConvDimensionNumbers conv_dimension_numbers(const Shape& lhs_shape, const Shape& rhs_shape,
                                            const ConvDimensionNumbers& dimension_numbers) {
  return resolved("conv_dimension_numbers", lhs_shape, rhs_shape, dimension_numbers);
}

std::vector<Axes> conv_general_permutations(const std::string& lhs, const std::string& rhs, const std::string& out) {
  const ConvDimensionNumbers dn(lhs, rhs, out);
  return {dn.lhs_spec, dn.rhs_spec, dn.out_spec};
}

Shape conv_shape_tuple(const Shape& lhs_shape, const Shape& rhs_shape, const Shape& strides, const WindowPadding& pads,
                       int64_t batch_group_count) {
  const std::string op = "conv_shape_tuple";
  if (lhs_shape.size() != rhs_shape.size() || lhs_shape.size() < 2)
    throw ShapeError(op + ": lhs " + shape_to_string(lhs_shape) + " and rhs " + shape_to_string(rhs_shape) +
                     " must have one rank >= 2");
  const size_t n = lhs_shape.size() - 2;
  if (strides.size() != n)
    throw ValueError(op + ": " + std::to_string(strides.size()) + " strides for " + std::to_string(n) + " spatial dimensions");
  const ops::Pads p = ops::resolve_padding(op, pads, spatial(lhs_shape), spatial(rhs_shape), strides);
  if (batch_group_count < 1 || lhs_shape[0] % batch_group_count != 0)
    throw ValueError(op + ": batch_group_count " + std::to_string(batch_group_count) + " must divide the batch " +
                     std::to_string(lhs_shape[0]));
  Shape out{lhs_shape[0] / batch_group_count, rhs_shape[0]};
  for (size_t d = 0; d < n; ++d) {
    const int64_t padded = lhs_shape[d + 2] + p[d].first + p[d].second;
    if (padded < 0)
      throw ValueError(op + ": negative padding (" + std::to_string(p[d].first) + ", " + std::to_string(p[d].second) +
                       ") is larger than spatial dimension " + std::to_string(d) + " of size " + std::to_string(lhs_shape[d + 2]));
    out.push_back(ops::stride_dim(padded, rhs_shape[d + 2], strides[d]));
  }
  return out;
}

Shape conv_general_shape_tuple(const Shape& lhs_shape, const Shape& rhs_shape, const Shape& window_strides,
                               const WindowPadding& padding, const ConvDimensionNumbers& dimension_numbers) {
  const ConvDimensionNumbers dn = resolved("conv_general_shape_tuple", lhs_shape, rhs_shape, dimension_numbers);
  const Shape out = conv_shape_tuple(take(lhs_shape, dn.lhs_spec), take(rhs_shape, dn.rhs_spec), window_strides, padding);
  return untake(out, dn.out_spec);
}

Shape conv_transpose_shape_tuple(const Shape& lhs_shape, const Shape& rhs_shape, const Shape& window_strides,
                                 const WindowPadding& padding, const ConvDimensionNumbers& dimension_numbers) {
  const std::string op = "conv_transpose_shape_tuple";
  const ConvDimensionNumbers dn = resolved(op, lhs_shape, rhs_shape, dimension_numbers);
  const Shape lhs = take(lhs_shape, dn.lhs_spec), rhs = take(rhs_shape, dn.rhs_spec);
  const size_t n = lhs.size() - 2;
  if (window_strides.size() != n)
    throw ValueError(op + ": " + std::to_string(window_strides.size()) + " strides for " + std::to_string(n) +
                     " spatial dimensions");
  std::string mode = padding.mode;
  std::transform(mode.begin(), mode.end(), mode.begin(), [](unsigned char c) { return char(std::toupper(c)); });
  if (mode.empty() && padding.pads.size() != n)
    throw ValueError(op + ": padding needs one (low, high) pair per spatial dimension, " + std::to_string(n));
  Shape out{lhs[0], rhs[0]};
  for (size_t d = 0; d < n; ++d) {
    const int64_t k = rhs[d + 2], s = window_strides[d];
    int64_t total;  // JAX's _conv_transpose_padding, summed
    if (mode == "SAME") total = k + s - 2;
    else if (mode == "VALID") total = k + s - 2 + std::max<int64_t>(k - s, 0);
    else if (mode.empty()) total = padding.pads[d].first + padding.pads[d].second;  // taken as the transposed conv's
    else throw ValueError(op + ": unknown padding '" + padding.mode + "'; expected \"SAME\", \"VALID\" or (low, high) pairs");
    out.push_back((lhs[d + 2] - 1) * s - k + 2 + total);
  }
  return untake(out, dn.out_spec);
}

std::vector<std::pair<int64_t, int64_t>> padtype_to_pads(const Shape& in_shape, const Shape& window_shape,
                                                         const Shape& window_strides, const std::string& padding) {
  if (window_shape.size() != in_shape.size() || window_strides.size() != in_shape.size())
    throw ValueError("padtype_to_pads: in_shape " + shape_to_string(in_shape) + ", window_shape " +
                     shape_to_string(window_shape) + " and window_strides " + shape_to_string(window_strides) +
                     " need one entry per dimension");
  return ops::resolve_padding("padtype_to_pads", WindowPadding(padding), in_shape, window_shape, window_strides);
}

Shape reduce_window_shape_tuple(const Shape& operand_shape, const Shape& window_dimensions, const Shape& window_strides,
                                const std::vector<std::pair<int64_t, int64_t>>& padding, const Shape& base_dilation,
                                const Shape& window_dilation) {
  const std::string op = "reduce_window_shape_tuple";
  const size_t n = operand_shape.size();
  if (window_dimensions.size() != n || window_strides.size() != n || padding.size() != n)
    throw ValueError(op + ": window_dimensions, window_strides and padding need one entry per dimension of " +
                     shape_to_string(operand_shape));
  const Shape bd = ops::per_dim(op, "base_dilation", base_dilation, n, 1, true);
  const Shape wd = ops::per_dim(op, "window_dilation", window_dilation, n, 1, true);
  Shape out;
  for (size_t d = 0; d < n; ++d) {
    const int64_t padded = ops::dilate_dim(operand_shape[d], bd[d]) + padding[d].first + padding[d].second;
    out.push_back(ops::stride_dim(padded, ops::dilate_dim(window_dimensions[d], wd[d]), window_strides[d]));
  }
  return out;
}

Array conv_general_dilated_patches(const Array& lhs, const Shape& filter_shape, const Shape& window_strides,
                                   const WindowPadding& padding, const ConvPatchesOptions& options) {
  const std::string op = "conv_general_dilated_patches";
  if (lhs.ndim() != int64_t(filter_shape.size()) + 2)
    throw ShapeError(op + ": lhs " + lhs.aval().to_string() + " needs rank " + std::to_string(filter_shape.size() + 2) +
                     " for a filter of spatial shape " + shape_to_string(filter_shape));
  Shape rhs_shape{1, 1};
  rhs_shape.insert(rhs_shape.end(), filter_shape.begin(), filter_shape.end());
  const ConvDimensionNumbers dn = resolved(op, lhs.shape(), rhs_shape, options.dimension_numbers);
  const int64_t spatial_size = std::accumulate(filter_shape.begin(), filter_shape.end(), int64_t(1), std::multiplies<>());
  const int64_t c = lhs.dim(dn.lhs_spec[1]);
  // One output feature per (channel, tap): an identity over the taps, per channel.
  Array rhs = broadcast_in_dim(eye(spatial_size, std::nullopt, 0, lhs.dtype()), {c, spatial_size, spatial_size}, {1, 2});
  Shape rs{c * spatial_size, 1};
  rs.insert(rs.end(), filter_shape.begin(), filter_shape.end());
  rhs = move_two(reshape(rhs, rs), 0, 1, dn.rhs_spec[0], dn.rhs_spec[1]);
  return conv_general_dilated(lhs, rhs, window_strides, padding,
                              {.lhs_dilation = options.lhs_dilation, .rhs_dilation = options.rhs_dilation,
                               .dimension_numbers = dn, .feature_group_count = c, .precision = options.precision,
                               .preferred_element_type = options.preferred_element_type});
}

Array conv_general_dilated_local(const Array& lhs, const Array& rhs, const Shape& window_strides,
                                 const WindowPadding& padding, const Shape& filter_shape,
                                 const ConvPatchesOptions& options) {
  const std::string op = "conv_general_dilated_local";
  const Array patches = conv_general_dilated_patches(lhs, filter_shape, window_strides, padding, options);
  Shape rhs_shape{1, 1};
  rhs_shape.insert(rhs_shape.end(), filter_shape.begin(), filter_shape.end());
  const ConvDimensionNumbers dn = resolved(op, lhs.shape(), rhs_shape, options.dimension_numbers);
  if (rhs.ndim() != lhs.ndim())
    throw ShapeError(op + ": rhs " + rhs.aval().to_string() + " must have lhs's rank " + std::to_string(lhs.ndim()));
  Axes lhs_b(dn.out_spec.begin() + 2, dn.out_spec.end()), rhs_b(dn.rhs_spec.begin() + 2, dn.rhs_spec.end());
  // rhs's spatial dims ordered as the patches' spatial dims appear.
  std::vector<size_t> order(lhs_b.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return lhs_b[a] < lhs_b[b]; });
  Axes rb;
  for (size_t i : order) rb.push_back(rhs_b[i]);
  std::sort(lhs_b.begin(), lhs_b.end());
  for (size_t i = 0; i < lhs_b.size(); ++i)
    if (patches.dim(lhs_b[i]) != rhs.dim(rb[i]))
      throw ShapeError(op + ": rhs " + rhs.aval().to_string() + " needs spatial dimension " + std::to_string(rb[i]) +
                       " of the output's size " + std::to_string(patches.dim(lhs_b[i])));
  if (patches.dim(dn.out_spec[1]) != rhs.dim(dn.rhs_spec[1]))
    throw ShapeError(op + ": rhs's input feature dimension has size " + std::to_string(rhs.dim(dn.rhs_spec[1])) +
                     " but the patches have " + std::to_string(patches.dim(dn.out_spec[1])) +
                     " features (input features x filter size)");
  Array out = dot_general(patches, rhs,
                          {.lhs_contracting = {dn.out_spec[1]}, .rhs_contracting = {dn.rhs_spec[1]},
                           .lhs_batch = lhs_b, .rhs_batch = rb},
                          options.preferred_element_type);
  // (spatial..., batch, out features) -> out_spec's layout.
  return move_two(out, out.ndim() - 2, out.ndim() - 1, dn.out_spec[0], dn.out_spec[1]);
}

}  // namespace tessel::lax
