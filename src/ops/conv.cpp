// conv_general_dilated (lax.conv_general_dilated_p): the one convolution primitive, with its
// abstract evaluation and transformation rules; the kernels are in conv_kernel.cpp, the
// functions built on it (conv, conv_transpose, jnp.convolve, ...) in numpy_conv.cpp.
//
// Params: lhs_spec, rhs_spec, out_spec (ConvDimensionNumbers' permutations),
// window_strides, padding_low, padding_high, lhs_dilation, rhs_dilation (one entry per
// spatial dimension, in the kernel's spatial order), feature_group_count,
// batch_group_count and, when set, preferred_element_type.
#include "ops/conv.h"

#include <algorithm>
#include <numeric>

#include "ops/rule_util.h"

namespace tessel::ops {

// ---- parameters ----

ConvSpec ConvSpec::from(const Params& p) {
  ConvSpec s{p.get_ints("lhs_spec"),     p.get_ints("rhs_spec"),     p.get_ints("out_spec"),
             p.get_ints("window_strides"), p.get_ints("padding_low"), p.get_ints("padding_high"),
             p.get_ints("lhs_dilation"), p.get_ints("rhs_dilation"), p.get_int("feature_group_count"),
             p.get_int("batch_group_count"), std::nullopt};
  if (p.has("preferred_element_type")) s.preferred_element_type = p.get<DType>("preferred_element_type");
  return s;
}

Params ConvSpec::params() const {
  Params p{{"lhs_spec", lhs_spec},
           {"rhs_spec", rhs_spec},
           {"out_spec", out_spec},
           {"window_strides", window_strides},
           {"padding_low", padding_low},
           {"padding_high", padding_high},
           {"lhs_dilation", lhs_dilation},
           {"rhs_dilation", rhs_dilation},
           {"feature_group_count", feature_group_count},
           {"batch_group_count", batch_group_count}};
  if (preferred_element_type) p.set("preferred_element_type", *preferred_element_type);
  return p;
}

Shape per_dim(const std::string& op, const char* what, const Shape& values, size_t n, int64_t fill, bool positive) {
  if (values.empty()) return Shape(n, fill);
  if (values.size() != n)
    throw ValueError(op + ": " + what + " " + shape_to_string(values) + " needs one entry per spatial (window) dimension, " +
                     std::to_string(n) + " of them");
  if (positive)
    for (auto v : values)
      if (v < 1) throw ValueError(op + ": " + what + " must be positive, got " + shape_to_string(values));
  return values;
}

Pads resolve_padding(const std::string& op, const WindowPadding& padding, const Shape& in, const Shape& window,
                     const Shape& strides) {
  const size_t n = in.size();
  if (padding.mode.empty()) {
    if (padding.pads.size() != n)
      throw ValueError(op + ": padding needs one (low, high) pair per spatial (window) dimension, " +
                       std::to_string(n) + " of them, got " + std::to_string(padding.pads.size()));
    return padding.pads;
  }
  std::string mode = padding.mode;
  std::transform(mode.begin(), mode.end(), mode.begin(), [](unsigned char c) { return char(std::toupper(c)); });
  if (mode == "VALID") return Pads(n, {0, 0});
  if (mode != "SAME" && mode != "SAME_LOWER")
    throw ValueError(op + ": unknown padding '" + padding.mode + "'; expected \"VALID\", \"SAME\", \"SAME_LOWER\" " +
                     "or explicit (low, high) pairs");
  Pads r;
  for (size_t d = 0; d < n; ++d) {
    const int64_t out = (in[d] + strides[d] - 1) / strides[d];
    const int64_t total = std::max<int64_t>(0, (out - 1) * strides[d] + window[d] - in[d]);
    const int64_t small = total / 2, large = total - small;
    r.push_back(mode == "SAME" ? std::pair{small, large} : std::pair{large, small});
  }
  return r;
}

namespace {

const char* kOp = "conv_general_dilated";

// ---- abstract evaluation ----

void check_spec(const Axes& spec, const char* name, int64_t rank) {
  Axes sorted = spec;
  std::sort(sorted.begin(), sorted.end());
  Axes iota = Axes(size_t(rank));
  std::iota(iota.begin(), iota.end(), 0);
  if (sorted != iota)
    throw ValueError(std::string(kOp) + ": dimension_numbers' " + name + " " + shape_to_string(spec) +
                     " must be a permutation of the " + std::to_string(rank) + " dimensions of the operands");
}

std::vector<Aval> conv_aval(std::span<const Aval> ins, const Params& p) {
  const Aval &l = ins[0], &r = ins[1];
  const ConvSpec s = ConvSpec::from(p);
  const std::string op = kOp;
  if (l.dtype != r.dtype)
    throw DTypeError(op + ": operands have different dtypes " + avals_to_string(ins) +
                     "; convert them to one dtype first (ts::conv_general_dilated promotes for you)");
  if (is_bool(l.dtype))
    throw DTypeError(op + ": bool operands are not supported; convert them to a numeric dtype");
  if (l.ndim() != r.ndim() || l.ndim() < 2)
    throw ShapeError(op + ": lhs and rhs must have the same rank, at least 2 (batch, feature, spatial...), got " +
                     avals_to_string(ins));
  const int64_t rank = l.ndim();
  const size_t nsp = size_t(rank - 2);
  check_spec(s.lhs_spec, "lhs_spec", rank);
  check_spec(s.rhs_spec, "rhs_spec", rank);
  check_spec(s.out_spec, "out_spec", rank);
  per_dim(op, "window_strides", s.window_strides, nsp, 1, true);
  per_dim(op, "lhs_dilation", s.lhs_dilation, nsp, 1, true);
  per_dim(op, "rhs_dilation", s.rhs_dilation, nsp, 1, true);
  per_dim(op, "padding_low", s.padding_low, nsp, 0, false);
  per_dim(op, "padding_high", s.padding_high, nsp, 0, false);
  if (s.window_strides.size() != nsp || s.lhs_dilation.size() != nsp || s.rhs_dilation.size() != nsp ||
      s.padding_low.size() != nsp || s.padding_high.size() != nsp)
    throw ValueError(op + ": strides, padding and dilations need one entry per spatial dimension, " +
                     std::to_string(nsp) + " of them");
  const int64_t fgc = s.feature_group_count, bgc = s.batch_group_count;
  if (fgc < 1 || bgc < 1)
    throw ValueError(op + ": feature_group_count and batch_group_count must be positive, got " + std::to_string(fgc) +
                     " and " + std::to_string(bgc));
  if (fgc > 1 && bgc > 1)
    throw ValueError(op + ": at most one of feature_group_count (" + std::to_string(fgc) + ") and batch_group_count (" +
                     std::to_string(bgc) + ") may exceed 1");
  const int64_t n = l.shape[size_t(s.lhs_spec[0])], c = l.shape[size_t(s.lhs_spec[1])];
  const int64_t o = r.shape[size_t(s.rhs_spec[0])], i = r.shape[size_t(s.rhs_spec[1])];
  const std::string shapes = " (lhs " + shape_to_string(l.shape) + ", rhs " + shape_to_string(r.shape) + ")";
  if (c % fgc != 0 || c / fgc != i)
    throw ShapeError(op + ": the lhs feature dimension (" + std::to_string(c) + ") divided by feature_group_count (" +
                     std::to_string(fgc) + ") must equal the rhs input feature dimension (" + std::to_string(i) + ")" +
                     shapes + "; check dimension_numbers and the kernel's layout");
  if (o % fgc != 0)
    throw ShapeError(op + ": the rhs output feature dimension (" + std::to_string(o) +
                     ") must be a multiple of feature_group_count (" + std::to_string(fgc) + ")" + shapes);
  if (n % bgc != 0 || o % bgc != 0)
    throw ShapeError(op + ": batch_group_count (" + std::to_string(bgc) + ") must divide the lhs batch dimension (" +
                     std::to_string(n) + ") and the rhs output feature dimension (" + std::to_string(o) + ")" + shapes);
  Shape canon{n / bgc, o};
  for (size_t d = 0; d < nsp; ++d) {
    const int64_t in = dilate_dim(l.shape[size_t(s.lhs_spec[2 + d])], s.lhs_dilation[d]) + s.padding_low[d] +
                       s.padding_high[d];
    if (in < 0)
      throw ValueError(op + ": negative padding (" + std::to_string(s.padding_low[d]) + ", " +
                       std::to_string(s.padding_high[d]) + ") is larger than spatial dimension " + std::to_string(d) +
                       shapes);
    const int64_t k = dilate_dim(r.shape[size_t(s.rhs_spec[2 + d])], s.rhs_dilation[d]);
    canon.push_back(stride_dim(in, k, s.window_strides[d]));
  }
  Shape out = Shape(size_t(rank));
  for (size_t d = 0; d < size_t(rank); ++d) out[size_t(s.out_spec[d])] = canon[d];
  DType dt = l.dtype;
  if (s.preferred_element_type) {
    dt = *s.preferred_element_type;
    const bool ok = is_complex(l.dtype) ? is_complex(dt) : is_floating(l.dtype) ? is_inexact(dt) : !is_bool(dt);
    if (!ok)
      throw DTypeError(op + ": preferred_element_type " + dtype_name(dt) + " cannot hold products of " +
                       dtype_name(l.dtype) + " operands; use a dtype of the same kind or wider");
  }
  return {Aval(out, dt, l.weak_type && r.weak_type)};
}

// ---- reshapes that fold one dimension into another (JAX's _reshape_axis_into/_out_of) ----

/// Merges dimension `src` of x into dimension `dst` (numbered without src) as its major part.
Array reshape_axis_into(int64_t src, int64_t dst, const Array& x) {
  Axes perm;
  for (int64_t i = 0; i < x.ndim(); ++i)
    if (i != src) perm.push_back(i);
  perm.insert(perm.begin() + dst, src);
  Shape shape;
  for (int64_t i = 0; i < x.ndim(); ++i)
    if (i != src) shape.push_back(x.dim(i));
  shape[size_t(dst)] *= x.dim(src);
  return reshape(transpose(x, perm), shape);
}

/// Splits dimension `src` of x into (size1, rest).
Array reshape_axis_out_of(int64_t src, int64_t size1, const Array& x) {
  Shape shape = x.shape();
  const int64_t size2 = shape[size_t(src)] / size1;
  shape[size_t(src)] = size2;
  shape.insert(shape.begin() + src, size1);
  return reshape(x, shape);
}

Axes swap_front(Axes spec) {
  std::swap(spec[0], spec[1]);
  return spec;
}

Shape spatial_sizes(const Shape& shape, const Axes& spec) {
  Shape r;
  for (size_t d = 2; d < spec.size(); ++d) r.push_back(shape[size_t(spec[d])]);
  return r;
}

Shape dilated(const Shape& sizes, const Shape& dilation) {
  Shape r;
  for (size_t d = 0; d < sizes.size(); ++d) r.push_back(dilate_dim(sizes[d], dilation[d]));
  return r;
}

// ---- transformation rules ----

// Bilinear: d(lhs * rhs) = dlhs * rhs + lhs * drhs.
std::vector<Array> conv_jvp(const ir::Primitive& self, std::span<const Array> primals, std::span<const Array> tangents,
                            std::span<const Array>, const Params& p) {
  Array r;
  if (!is_zero(tangents[0])) r = bind1(self, {tangents[0], primals[1]}, p);
  if (!is_zero(tangents[1])) r = add_tangents(r, bind1(self, {primals[0], tangents[1]}, p));
  return {r};
}

// The transposes follow JAX's: ignoring spatial dimensions a convolution is the product
// [batch, in] x [in, out] -> [batch, out]; the lhs cotangent is g x rhs^T (a convolution of
// g with the spatially reversed kernel, its I and O swapped, the strides becoming lhs
// dilation), the rhs cotangent lhs^T x g (a convolution whose batch is the lhs features).
// Feature groups become feature groups of the lhs cotangent and batch groups of the rhs
// cotangent, and batch groups the reverse.
Array transpose_lhs(const Array& g, const Aval& lhs, const Array& rhs_in, const ConvSpec& s) {
  Array rhs = rhs_in;
  int64_t groups = s.feature_group_count;
  if (s.feature_group_count > 1 || s.batch_group_count > 1) {
    // The groups move from the kernel's output features to its input features.
    groups = std::max(s.feature_group_count, s.batch_group_count);
    rhs = reshape_axis_into(s.rhs_spec[0], s.rhs_spec[1], reshape_axis_out_of(s.rhs_spec[0], groups, rhs));
  }
  const size_t nsp = s.spatial();
  const Shape in = dilated(spatial_sizes(lhs.shape, s.lhs_spec), s.lhs_dilation);
  const Shape k = dilated(spatial_sizes(rhs.shape(), s.rhs_spec), s.rhs_dilation);
  const Shape out = dilated(spatial_sizes(g.shape(), s.out_spec), s.window_strides);
  ConvSpec t{s.out_spec, swap_front(s.rhs_spec), s.lhs_spec, s.lhs_dilation, {}, {}, s.window_strides,
             s.rhs_dilation, groups, 1, std::nullopt};
  for (size_t d = 0; d < nsp; ++d) {
    const auto [lo, hi] = vjp_lhs_padding(in[d], k[d], out[d], s.padding_low[d]);
    t.padding_low.push_back(lo);
    t.padding_high.push_back(hi);
  }
  const Axes sdims(s.rhs_spec.begin() + 2, s.rhs_spec.end());
  const Array reversed = convert(flip(rhs, sdims), g.dtype());
  Array r = convert(conv_bind(g, reversed, t), lhs.dtype, lhs.weak_type);
  if (s.batch_group_count > 1)
    r = reshape_axis_into(s.lhs_spec[1], s.lhs_spec[0], reshape_axis_out_of(s.lhs_spec[1], s.batch_group_count, r));
  return r;
}

Array transpose_rhs(const Array& g, const Array& lhs, const Aval& rhs, const ConvSpec& s) {
  if (g.size() == 0) return zeros(rhs.shape, rhs.dtype);
  const size_t nsp = s.spatial();
  const Shape in = dilated(spatial_sizes(lhs.shape(), s.lhs_spec), s.lhs_dilation);
  const Shape k = dilated(spatial_sizes(rhs.shape, s.rhs_spec), s.rhs_dilation);
  const Shape out = dilated(spatial_sizes(g.shape(), s.out_spec), s.window_strides);
  ConvSpec t{swap_front(s.lhs_spec), swap_front(s.out_spec), swap_front(s.rhs_spec), s.rhs_dilation,
             s.padding_low, {}, s.lhs_dilation, s.window_strides, s.batch_group_count, s.feature_group_count,
             std::nullopt};
  for (size_t d = 0; d < nsp; ++d) t.padding_high.push_back(out[d] - in[d] + k[d] - s.padding_low[d] - 1);
  return convert(conv_bind(convert(lhs, g.dtype()), g, t), rhs.dtype, rhs.weak_type);
}

std::vector<Array> conv_transpose_rule(const ir::Primitive&, std::span<const Array> cts, std::span<const Array> args,
                                       std::span<const Aval> avals, const Params& p) {
  if (is_zero(cts[0])) return {Array(), Array()};
  const ConvSpec s = ConvSpec::from(p);
  if (is_zero(args[0])) return {transpose_lhs(cts[0], avals[0], args[1], s), Array()};
  return {Array(), transpose_rhs(cts[0], args[0], avals[1], s)};
}

// vmap folds the batch dimension into one the convolution already has, as JAX does: both
// operands batched, into the feature groups (or batch groups); the lhs alone, into its
// batch; the rhs alone, into its output features (inside each group).
Batched conv_batch(const ir::Primitive&, std::span<const Array> ins, std::span<const int64_t> dims, const BatchAxis&,
                   const Params& p) {
  ConvSpec s = ConvSpec::from(p);
  const int64_t lbd = dims[0], rbd = dims[1];
  const Array &lhs = ins[0], &rhs = ins[1];
  const Axes &ls = s.lhs_spec, &rs = s.rhs_spec, &os = s.out_spec;
  const int64_t size = lbd != kNotBatched ? lhs.dim(lbd) : rhs.dim(rbd);
  if (size == 0) {  // folding an empty axis would make empty groups: the result is empty
    auto unbatched = [](const Array& x, int64_t bd) {
      Shape sh = x.shape();
      if (bd != kNotBatched) sh.erase(sh.begin() + bd);
      return Aval(sh, x.dtype());
    };
    const Aval out = conv_aval(std::array<Aval, 2>{unbatched(lhs, lbd), unbatched(rhs, rbd)}, p)[0];
    Shape sh{0};
    sh.insert(sh.end(), out.shape.begin(), out.shape.end());
    return {{zeros(sh, out.dtype)}, {0}};
  }
  if (lbd != kNotBatched && rbd != kNotBatched) {
    const int64_t b = lhs.dim(lbd);
    Array new_lhs;
    if (s.batch_group_count > 1) {
      new_lhs = reshape_axis_into(lbd, ls[0], lhs);
      s.batch_group_count *= b;
    } else {
      new_lhs = reshape_axis_into(lbd, ls[1], lhs);
      s.feature_group_count *= b;
    }
    const Array out = conv_bind(new_lhs, reshape_axis_into(rbd, rs[0], rhs), s);
    return {{reshape_axis_out_of(os[1], b, out)}, {os[1]}};
  }
  if (lbd != kNotBatched) {
    const int64_t b = lhs.dim(lbd);
    Array new_lhs;
    if (s.batch_group_count == 1) {
      new_lhs = reshape_axis_into(lbd, ls[0], lhs);
    } else {  // the vmapped dimension goes inside each batch group
      new_lhs = reshape_axis_out_of(ls[0] + (lbd <= ls[0]), s.batch_group_count, lhs);
      new_lhs = reshape_axis_into(lbd + (ls[0] < lbd), ls[0] + 1, new_lhs);
      new_lhs = reshape_axis_into(ls[0], ls[0], new_lhs);
    }
    return {{reshape_axis_out_of(os[0], b, conv_bind(new_lhs, rhs, s))}, {os[0]}};
  }
  const int64_t b = rhs.dim(rbd);
  if (s.feature_group_count == 1 && s.batch_group_count == 1)
    return {{reshape_axis_out_of(os[1], b, conv_bind(lhs, reshape_axis_into(rbd, rs[0], rhs), s))}, {os[1]}};
  // Groups stay outermost in the output features: the vmapped dimension goes inside each.
  const int64_t groups = std::max(s.feature_group_count, s.batch_group_count);
  Array new_rhs = reshape_axis_out_of(rs[0] + (rbd <= rs[0]), groups, rhs);
  new_rhs = reshape_axis_into(rbd + (rs[0] < rbd), rs[0] + 1, new_rhs);
  new_rhs = reshape_axis_into(rs[0], rs[0], new_rhs);
  Array out = reshape_axis_out_of(os[1], groups, conv_bind(lhs, new_rhs, s));
  out = reshape_axis_out_of(os[1] + 1, b, out);
  return {{reshape_axis_into(os[1], os[1] + 1, out)}, {os[1]}};
}

// SPMD: the batch passes through (unless batch groups mix it with the output features), so
// does the kernel's output feature dimension (without groups); the input features are a
// reduction (each device convolves its slice of the channels, the partial results add up).
// Spatial dimensions stay whole: a window reads its neighbours.
ir::ShardingRule conv_sharding_rule(std::span<const Aval> ins, std::span<const Aval> outs, const Params& p) {
  const ConvSpec s = ConvSpec::from(p);
  ir::ShardingRule r;
  std::vector<int> l(size_t(ins[0].ndim()), ir::kWhole), k(size_t(ins[1].ndim()), ir::kWhole),
      o(size_t(outs[0].ndim()), ir::kWhole);
  const bool grouped = s.feature_group_count > 1 || s.batch_group_count > 1;
  if (s.batch_group_count == 1) l[size_t(s.lhs_spec[0])] = o[size_t(s.out_spec[0])] = add_factor(r);
  if (!grouped) {
    k[size_t(s.rhs_spec[0])] = o[size_t(s.out_spec[1])] = add_factor(r);
    l[size_t(s.lhs_spec[1])] = k[size_t(s.rhs_spec[1])] = add_factor(r, ir::Combine::kSum);
  }
  r.operands = {l, k};
  r.results = {o};
  return r;
}

}  // namespace

const ir::Primitive& conv_general_dilated_p = ir::register_primitive({.name = "conv_general_dilated",
                                                                      .arity = {2, 2},
                                                                      .abstract_eval = conv_aval,
                                                                      .cpu_kernel = conv_kernel,
                                                                      .jvp = conv_jvp,
                                                                      .transpose = conv_transpose_rule,
                                                                      .batch = conv_batch,
                                                                      .sharding_rule = conv_sharding_rule,
                                                                      .matrix_product = true});

Array conv_bind(const Array& lhs, const Array& rhs, const ConvSpec& spec) {
  return bind1(conv_general_dilated_p, {lhs, rhs}, spec.params());
}

}  // namespace tessel::ops
