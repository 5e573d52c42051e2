// The CPU kernel of conv_general_dilated: oneDNN for float32 convolutions of 1 to 3 spatial
// dimensions that map onto one of its passes, tessel's direct loops for everything else
// (docs/convolution.md says which runs when).
//
// Both read the operands in place in whatever layout the dimension numbers give: oneDNN is
// handed each tensor's strides (and reorders what its chosen implementation cannot read).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "backend/cpu/dnnl.h"
#include "backend/cpu/reduction_ops.h"
#include "core/config.h"
#include "ops/conv.h"

namespace tessel::ops {
namespace {

namespace dnnl = cpu::dnnl;

/// A convolution's sizes and the strides (in elements) of each operand's dimensions, in
/// canonical order: lhs (batch, feature, spatial...), rhs (out feature, in feature,
/// spatial...), out (batch, feature, spatial...).
struct Geometry {
  size_t nsp;
  int64_t batch, features, out_features, group_features;  // N, C, O, C / feature groups
  Shape in, kernel, out;                                  // spatial sizes
  Shape lhs_strides, rhs_strides, out_strides;            // canonical order
};

Shape canonical(const Shape& v, const Axes& spec) {
  Shape r;
  for (auto d : spec) r.push_back(v[size_t(d)]);
  return r;
}

Geometry geometry(const Aval& lhs, const Aval& rhs, const Aval& out, const ConvSpec& s) {
  Geometry g;
  g.nsp = s.spatial();
  const Shape l = canonical(lhs.shape, s.lhs_spec), r = canonical(rhs.shape, s.rhs_spec),
              o = canonical(out.shape, s.out_spec);
  g.batch = l[0], g.features = l[1], g.out_features = r[0], g.group_features = r[1];
  g.in.assign(l.begin() + 2, l.end());
  g.kernel.assign(r.begin() + 2, r.end());
  g.out.assign(o.begin() + 2, o.end());
  g.lhs_strides = canonical(strides_of(lhs.shape), s.lhs_spec);
  g.rhs_strides = canonical(strides_of(rhs.shape), s.rhs_spec);
  g.out_strides = canonical(strides_of(out.shape), s.out_spec);
  return g;
}

// ---- direct loops ----

/// Per spatial dimension, for each (output position, kernel tap): the lhs position it reads,
/// or -1 where it falls on padding or a hole of the lhs dilation.
std::vector<std::vector<int64_t>> tap_tables(const Geometry& g, const ConvSpec& s) {
  std::vector<std::vector<int64_t>> t(g.nsp);
  for (size_t d = 0; d < g.nsp; ++d) {
    t[d].resize(size_t(g.out[d] * g.kernel[d]));
    for (int64_t y = 0; y < g.out[d]; ++y)
      for (int64_t k = 0; k < g.kernel[d]; ++k)
        t[d][size_t(y * g.kernel[d] + k)] = window_tap(y, k, s.window_strides[d], s.rhs_dilation[d], s.padding_low[d],
                                                       s.lhs_dilation[d], g.in[d]);
  }
  return t;
}

/// out[n, o, y] = sum over the group's input features i and kernel taps k of
/// lhs[batch-group row of n, group feature i, position of (y, k)] * rhs[o, i, k]. Each
/// (n, o) pair is one task of the thread arena.
template <class T> void direct(const Geometry& g, const ConvSpec& s, const T* lhs, const T* rhs, T* out) {
  using A = cpu::reduce::arith_acc_t<T>;
  using cpu::reduce::load;
  using cpu::reduce::store;
  const int64_t fgc = s.feature_group_count, bgc = s.batch_group_count;
  const int64_t out_batch = g.batch / bgc, per_fgroup = g.out_features / fgc, per_bgroup = g.out_features / bgc;
  const auto taps = tap_tables(g, s);
  const int64_t out_points = shape_size(g.out), kernel_points = shape_size(g.kernel);
  const int64_t work = out_points * kernel_points * g.group_features;
  cpu::parallel_for(out_batch * g.out_features, std::max<int64_t>(1, 32768 / std::max<int64_t>(1, work)),
                    [&](int64_t lo, int64_t hi) {
    Shape y(g.nsp), k(g.nsp);
    for (int64_t task = lo; task < hi; ++task) {
      const int64_t n = task / g.out_features, o = task % g.out_features;
      const int64_t lhs_row = (o / per_bgroup) * out_batch + n, first_feature = (o / per_fgroup) * g.group_features;
      const T* lbase = lhs + lhs_row * g.lhs_strides[0] + first_feature * g.lhs_strides[1];
      const T* rbase = rhs + o * g.rhs_strides[0];
      T* obase = out + n * g.out_strides[0] + o * g.out_strides[1];
      std::fill(y.begin(), y.end(), 0);
      for (int64_t yp = 0; yp < out_points; ++yp) {
        A acc = A(0);
        std::fill(k.begin(), k.end(), 0);
        for (int64_t kp = 0; kp < kernel_points; ++kp) {
          int64_t loff = 0, roff = 0;
          bool hit = true;
          for (size_t d = 0; d < g.nsp && hit; ++d) {
            const int64_t x = taps[d][size_t(y[d] * g.kernel[d] + k[d])];
            hit = x >= 0;
            loff += x * g.lhs_strides[2 + d];
            roff += k[d] * g.rhs_strides[2 + d];
          }
          if (hit)
            for (int64_t i = 0; i < g.group_features; ++i)
              acc = A(acc + load<A>(lbase[loff + i * g.lhs_strides[1]]) * load<A>(rbase[roff + i * g.rhs_strides[1]]));
          for (size_t d = g.nsp; d-- > 0;) {  // next kernel tap
            if (++k[d] < g.kernel[d]) break;
            k[d] = 0;
          }
        }
        int64_t ooff = 0;
        for (size_t d = 0; d < g.nsp; ++d) ooff += y[d] * g.out_strides[2 + d];
        obase[ooff] = store<T>(acc);
        for (size_t d = g.nsp; d-- > 0;) {  // next output position
          if (++y[d] < g.out[d]) break;
          y[d] = 0;
        }
      }
    }
  });
}

// ---- oneDNN ----

dnnl::TensorView view(int64_t a, int64_t sa, int64_t b, int64_t sb, const Shape& sp, const Shape& strides) {
  dnnl::TensorView v{{a, b}, {sa, sb}};
  for (size_t d = 0; d < sp.size(); ++d) v.dims.push_back(sp[d]), v.strides.push_back(strides[2 + d]);
  return v;
}

/// Appends a spatial dimension to `p`: `count` windows `stride` apart, of taps `dilation`
/// apart spanning `window` elements, over `in` elements padded by (lo, hi). oneDNN's output
/// size formula has no slack, so high padding past the last window (never read) is cut off.
void add_spatial(dnnl::ConvProblem& p, int64_t stride, int64_t dilation, int64_t in, int64_t lo, int64_t hi,
                 int64_t window, int64_t count) {
  p.strides.push_back(stride);
  p.dilates.push_back(dilation - 1);
  p.pad_l.push_back(lo);
  p.pad_r.push_back(hi - (in + lo + hi - window - (count - 1) * stride));
}

/// oneDNN's weights dimensions {O, I, spatial...}, or {G, O / G, I, spatial...} with groups,
/// over memory whose O and I strides are `so` and `si`.
dnnl::TensorView weights_view(int64_t o, int64_t so, int64_t i, int64_t si, const Shape& sp, const Shape& strides,
                              int64_t groups) {
  dnnl::TensorView w = view(o, so, i, si, sp, strides);
  if (groups > 1) {
    w.dims[0] = o / groups;
    w.dims.insert(w.dims.begin(), groups);
    w.strides.insert(w.strides.begin(), so * (o / groups));
  }
  return w;
}

/// The convolution as oneDNN's forward pass (no lhs dilation).
dnnl::ConvProblem forward_problem(const Geometry& g, const ConvSpec& s) {
  dnnl::ConvProblem p;
  for (size_t d = 0; d < g.nsp; ++d)
    add_spatial(p, s.window_strides[d], s.rhs_dilation[d], g.in[d], s.padding_low[d], s.padding_high[d],
                dilate_dim(g.kernel[d], s.rhs_dilation[d]), g.out[d]);
  const Shape &ls = g.lhs_strides, &rs = g.rhs_strides, &os = g.out_strides;
  p.src = view(g.batch, ls[0], g.features, ls[1], g.in, ls);
  p.dst = view(g.batch, os[0], g.out_features, os[1], g.out, os);
  p.weights = weights_view(g.out_features, rs[0], g.group_features, rs[1], g.kernel, rs, s.feature_group_count);
  return p;
}

/// The convolution as oneDNN's weights-gradient pass (no lhs dilation, no groups): the
/// rhs cotangent of a convolution, whose sum runs over the lhs features (the forward
/// batch) and whose output is the forward kernel. oneDNN's kernel is our output and its
/// output our kernel, so strides and kernel dilation swap.
dnnl::ConvProblem weights_problem(const Geometry& g, const ConvSpec& s) {
  dnnl::ConvProblem p;
  p.pass = dnnl::ConvPass::kBackwardWeights;
  for (size_t d = 0; d < g.nsp; ++d)
    add_spatial(p, s.rhs_dilation[d], s.window_strides[d], g.in[d], s.padding_low[d], s.padding_high[d],
                dilate_dim(g.out[d], s.window_strides[d]), g.kernel[d]);
  const Shape &ls = g.lhs_strides, &rs = g.rhs_strides, &os = g.out_strides;
  p.src = view(g.features, ls[1], g.batch, ls[0], g.in, ls);
  p.dst = view(g.group_features, rs[1], g.out_features, rs[0], g.kernel, rs);
  p.weights = view(g.out_features, os[1], g.batch, os[0], g.out, os);
  return p;
}

/// The convolution as oneDNN's data-gradient pass (unit window strides, lhs dilation: the
/// lhs cotangent of a strided convolution). oneDNN's output gradient is our lhs, its input
/// gradient our output, its strides our lhs dilation; its weights are our kernel spatially
/// reversed with I and O swapped, which the caller writes contiguously (flipped_kernel).
dnnl::ConvProblem data_problem(const Geometry& g, const ConvSpec& s) {
  dnnl::ConvProblem p;
  p.pass = dnnl::ConvPass::kBackwardData;
  for (size_t d = 0; d < g.nsp; ++d) {
    const int64_t reach = (g.kernel[d] - 1) * s.rhs_dilation[d];  // the kernel's span, less one
    add_spatial(p, s.lhs_dilation[d], s.rhs_dilation[d], g.out[d], reach - s.padding_low[d],
                reach - s.padding_high[d], reach + 1, g.in[d]);
  }
  const Shape &ls = g.lhs_strides, &os = g.out_strides;
  p.dst = view(g.batch, ls[0], g.features, ls[1], g.in, ls);
  p.src = view(g.batch, os[0], g.out_features, os[1], g.out, os);
  const int64_t groups = s.feature_group_count, per_group = g.out_features / groups;
  // Contiguous {G, I, O / G, spatial...}: strides of that row-major layout.
  Shape dims{groups, g.group_features, per_group};
  dims.insert(dims.end(), g.kernel.begin(), g.kernel.end());
  const Shape st = strides_of(dims);
  p.weights = weights_view(g.features, st[1], per_group, st[2], g.kernel, Shape(st.begin() + 1, st.end()), groups);
  if (groups > 1) p.weights.strides[0] = st[0], p.weights.strides[1] = st[1];
  return p;
}

/// Our kernel in data_problem's weights layout: W[g][i][o][k] = rhs[g * O/G + o][i][K-1-k].
std::vector<float> flipped_kernel(const Geometry& g, const ConvSpec& s, const float* rhs) {
  const int64_t groups = s.feature_group_count, per_group = g.out_features / groups;
  const int64_t taps = shape_size(g.kernel);
  std::vector<float> w(static_cast<size_t>(g.out_features * g.group_features * taps));
  Shape k(g.nsp);
  size_t at = 0;
  for (int64_t gr = 0; gr < groups; ++gr)
    for (int64_t i = 0; i < g.group_features; ++i)
      for (int64_t o = 0; o < per_group; ++o) {
        const float* src = rhs + (gr * per_group + o) * g.rhs_strides[0] + i * g.rhs_strides[1];
        std::fill(k.begin(), k.end(), 0);
        for (int64_t t = 0; t < taps; ++t) {
          int64_t off = 0;
          for (size_t d = 0; d < g.nsp; ++d) off += (g.kernel[d] - 1 - k[d]) * g.rhs_strides[2 + d];
          w[at++] = src[off];
          for (size_t d = g.nsp; d-- > 0;) {
            if (++k[d] < g.kernel[d]) break;
            k[d] = 0;
          }
        }
      }
  return w;
}

/// The convolution as one of oneDNN's passes, where one fits: the forward pass, the
/// weights-gradient pass when the output is smaller than the kernel (a rhs cotangent), the
/// data-gradient pass for lhs dilation with unit strides (the lhs cotangent of a strided
/// convolution). None for batch groups, other ranks and empty arrays.
std::optional<dnnl::ConvProblem> onednn_problem(const Geometry& g, const ConvSpec& s) {
  if (g.nsp < 1 || g.nsp > 3 || s.batch_group_count != 1) return std::nullopt;
  if (g.batch == 0 || g.features == 0 || g.out_features == 0 || shape_size(g.out) == 0 || shape_size(g.in) == 0)
    return std::nullopt;
  const bool unit = [](const Shape& v) {
    return std::all_of(v.begin(), v.end(), [](int64_t x) { return x == 1; });
  }(s.lhs_dilation);
  if (!unit) {
    for (auto v : s.window_strides)
      if (v != 1) return std::nullopt;
    return data_problem(g, s);
  }
  if (s.feature_group_count == 1 && shape_size(g.out) < shape_size(g.kernel)) return weights_problem(g, s);
  return forward_problem(g, s);
}

bool onednn_enabled() { return config::get_flag(config::kConvOnednn); }

/// Operand i of the call in dtype `to` (a converted copy when it has another).
const void* operand_as(const KernelCall& c, size_t i, DType to, std::unique_ptr<char[]>& holder) {
  const Aval& a = c.in_avals[i];
  if (a.dtype == to) return c.ins[i];
  holder.reset(new char[size_t(a.size()) * itemsize(to)]);
  visit_dtype(a.dtype, [&](auto zs) {
    using S = decltype(zs);
    visit_dtype(to, [&](auto zd) {
      using D = decltype(zd);
      const S* in = static_cast<const S*>(c.ins[i]);
      D* out = reinterpret_cast<D*>(holder.get());
      for (int64_t j = 0; j < a.size(); ++j) out[j] = convert_value<D>(in[j]);
    });
  });
  return holder.get();
}

}  // namespace

void conv_kernel(const KernelCall& c) {
  const ConvSpec s = ConvSpec::from(c.params);
  const Aval& out = c.out_avals[0];
  if (out.size() == 0) return;
  const Geometry g = geometry(c.in_avals[0], c.in_avals[1], out, s);
  // A preferred result dtype: the operands are converted to it and multiplied there.
  std::unique_ptr<char[]> lhs_copy, rhs_copy;
  const void* lhs = operand_as(c, 0, out.dtype, lhs_copy);
  const void* rhs = operand_as(c, 1, out.dtype, rhs_copy);
  if (out.dtype == DType::float32 && onednn_enabled())
    if (auto p = onednn_problem(g, s)) {
      float* l = const_cast<float*>(static_cast<const float*>(lhs));  // read only
      float* r = const_cast<float*>(static_cast<const float*>(rhs));
      float* o = c.out<float>(0);
      std::vector<float> flipped;
      dnnl::ConvBuffers b{l, r, o};
      if (p->pass == dnnl::ConvPass::kBackwardWeights) b = {l, o, r};
      if (p->pass == dnnl::ConvPass::kBackwardData) flipped = flipped_kernel(g, s, r), b = {o, flipped.data(), l};
      if (dnnl::convolution(*p, b)) return;
    }
  visit_dtype(out.dtype, [&](auto z) {
    using T = decltype(z);
    if constexpr (std::is_same_v<T, bool>) {
      throw DTypeError("conv_general_dilated: bool operands are not supported");
    } else {
      direct<T>(g, s, static_cast<const T*>(lhs), static_cast<const T*>(rhs), c.out<T>(0));
    }
  });
}

std::string conv_onednn_impl(const Aval& lhs, const Aval& rhs, const ConvSpec& s) {
  if (lhs.dtype != DType::float32 || !onednn_enabled()) return "";
  const Aval out = conv_general_dilated_p.abstract_eval(std::array<Aval, 2>{lhs, rhs}, s.params())[0];
  const auto p = onednn_problem(geometry(lhs, rhs, out, s), s);
  return p ? dnnl::convolution_impl(*p) : "";
}

}  // namespace tessel::ops
