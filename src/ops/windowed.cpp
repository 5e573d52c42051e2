// Windowed reductions: reduce_window_sum, reduce_window_max, reduce_window_min (lax's
// monoid reduce_window primitives) and the two primitives their gradients need,
// select_and_gather_add (the tangent at each window's maximum or minimum) and
// select_and_scatter_add (its transpose: each window's cotangent added at that position).
//
// Params, one entry per operand dimension: window_dimensions, window_strides, padding_low,
// padding_high, base_dilation, window_dilation; the select primitives also `select` ("max"
// or "min"). Padding and the holes of the base dilation hold the reduction's identity.
#include <memory>

#include "backend/cpu/reduction_ops.h"
#include "ops/conv.h"
#include "ops/rule_util.h"

namespace tessel::ops {
namespace {

using namespace cpu::reduce;

struct WindowSpec {
  Shape dims, strides, pad_lo, pad_hi, base_dilation, window_dilation;
  static WindowSpec from(const Params& p) {
    return {p.get_ints("window_dimensions"), p.get_ints("window_strides"), p.get_ints("padding_low"),
            p.get_ints("padding_high"),      p.get_ints("base_dilation"),  p.get_ints("window_dilation")};
  }
  Params params() const {
    return Params{{"window_dimensions", dims},   {"window_strides", strides},       {"padding_low", pad_lo},
                  {"padding_high", pad_hi},      {"base_dilation", base_dilation}, {"window_dilation", window_dilation}};
  }
  /// Dimension d is not windowed: each output element reads its own input element.
  bool trivial(size_t d) const {
    return dims[d] == 1 && strides[d] == 1 && pad_lo[d] == 0 && pad_hi[d] == 0 && base_dilation[d] == 1 &&
           window_dilation[d] == 1;
  }
  /// The same windows with a trivial dimension inserted at `d` (a vmapped dimension).
  WindowSpec with_trivial(int64_t d) const {
    WindowSpec w = *this;
    for (auto [v, one] : {std::pair{&w.dims, 1}, {&w.strides, 1}, {&w.pad_lo, 0}, {&w.pad_hi, 0},
                          {&w.base_dilation, 1}, {&w.window_dilation, 1}})
      v->insert(v->begin() + d, one);
    return w;
  }
};

Shape window_out_shape(const std::string& op, const Shape& in, const WindowSpec& w) {
  const size_t n = in.size();
  for (const Shape* v : {&w.dims, &w.strides, &w.pad_lo, &w.pad_hi, &w.base_dilation, &w.window_dilation})
    if (v->size() != n)
      throw ValueError(op + ": window parameters need one entry per operand dimension, " + std::to_string(n) +
                       " of them (operand shape " + shape_to_string(in) + ")");
  per_dim(op, "window_dimensions", w.dims, n, 1, true);
  per_dim(op, "window_strides", w.strides, n, 1, true);
  per_dim(op, "base_dilation", w.base_dilation, n, 1, true);
  per_dim(op, "window_dilation", w.window_dilation, n, 1, true);
  Shape out;
  for (size_t d = 0; d < n; ++d) {
    const int64_t padded = dilate_dim(in[d], w.base_dilation[d]) + w.pad_lo[d] + w.pad_hi[d];
    if (padded < 0)
      throw ValueError(op + ": negative padding (" + std::to_string(w.pad_lo[d]) + ", " + std::to_string(w.pad_hi[d]) +
                       ") is larger than dimension " + std::to_string(d) + " of shape " + shape_to_string(in));
    out.push_back(stride_dim(padded, dilate_dim(w.dims[d], w.window_dilation[d]), w.strides[d]));
  }
  return out;
}

// ---- kernels ----
// The trailing dimensions no window spans (the features of an NHWC pooling) are one
// contiguous `inner` run per position: the kernels walk windows over the leading ones and
// combine whole runs, which vectorizes.

/// Where the windows read: per leading dimension, for each (output position, window tap),
/// the input position or -1 (padding, or a hole of the base dilation).
struct Taps {
  Shape in, out, window;  // the leading dimensions
  int64_t inner = 1;      // elements per position: the product of the trailing unwindowed dims
  std::vector<int64_t> in_strides;
  std::vector<std::vector<int64_t>> table;
  Taps(const Shape& in_shape, const Shape& out_shape, const WindowSpec& w) {
    size_t lead = in_shape.size();
    while (lead > 0 && w.trivial(lead - 1)) inner *= in_shape[--lead];
    in.assign(in_shape.begin(), in_shape.begin() + int64_t(lead));
    out.assign(out_shape.begin(), out_shape.begin() + int64_t(lead));
    window.assign(w.dims.begin(), w.dims.begin() + int64_t(lead));
    in_strides = strides_of(in);
    for (auto& s : in_strides) s *= inner;
    for (size_t d = 0; d < lead; ++d) {
      std::vector<int64_t> t(size_t(out[d] * window[d]));
      for (int64_t y = 0; y < out[d]; ++y)
        for (int64_t k = 0; k < window[d]; ++k)
          t[size_t(y * window[d] + k)] =
              window_tap(y, k, w.strides[d], w.window_dilation[d], w.pad_lo[d], w.base_dilation[d], in[d]);
      table.push_back(std::move(t));
    }
  }
  int64_t positions() const { return shape_size(out); }
  /// Calls f(input offset of the run) for each tap of the window of output position `y`
  /// that reads the input (taps in row-major order).
  template <class F> void for_each_tap(const Shape& y, Shape& k, F&& f) const {
    const size_t n = in.size();
    std::fill(k.begin(), k.end(), 0);
    const int64_t count = shape_size(window);
    for (int64_t t = 0; t < count; ++t) {
      int64_t off = 0;
      bool hit = true;
      for (size_t d = 0; d < n && hit; ++d) {
        const int64_t x = table[d][size_t(y[d] * window[d] + k[d])];
        hit = x >= 0;
        off += x * in_strides[d];
      }
      if (hit) f(off);
      for (size_t d = n; d-- > 0;) {
        if (++k[d] < window[d]) break;
        k[d] = 0;
      }
    }
  }
};

/// Calls f(output position index, output position) for every position of [lo, hi).
template <class F> void for_each_position(const Shape& out, int64_t lo, int64_t hi, F&& f) {
  Shape y(out.size());
  int64_t rest = lo;
  for (size_t d = out.size(); d-- > 0;) y[d] = rest % out[d], rest /= out[d];
  for (int64_t i = lo; i < hi; ++i) {
    f(i, y);
    for (size_t d = out.size(); d-- > 0;) {
      if (++y[d] < out[d]) break;
      y[d] = 0;
    }
  }
}

int64_t grain_for(const Taps& t) {
  return std::max<int64_t>(1, 16384 / std::max<int64_t>(1, shape_size(t.window) * t.inner));
}

template <class Op, class T> void reduce_window_t(const KernelCall& c) {
  using A = typename Op::template Acc<T>;
  const WindowSpec w = WindowSpec::from(c.params);
  const Taps taps(c.in_avals[0].shape, c.out_avals[0].shape, w);
  const T* x = c.in<T>(0);
  T* out = c.out<T>(0);
  const int64_t m = taps.inner;
  cpu::parallel_for(taps.positions(), grain_for(taps), [&](int64_t lo, int64_t hi) {
    Shape k(taps.in.size());
    const std::unique_ptr<A[]> acc(new A[size_t(m)]);  // not std::vector: vector<bool> has no data()
    for_each_position(taps.out, lo, hi, [&](int64_t i, const Shape& y) {
      A* a = acc.get();
      std::fill(a, a + m, Op::template identity<A>());
      taps.for_each_tap(y, k, [&](int64_t off) {
        const T* run = x + off;
        for (int64_t j = 0; j < m; ++j) a[j] = Op::combine(a[j], load<A>(run[j]));
      });
      T* o = out + i * m;
      for (int64_t j = 0; j < m; ++j) o[j] = store<T>(a[j]);
    });
  });
}

template <class Op> void reduce_window_kernel(const KernelCall& c) {
  visit_dtype(c.in_avals[0].dtype, [&](auto z) { reduce_window_t<Op, decltype(z)>(c); });
}

bool selects_max(const Params& p) { return p.get<std::string>("select") == "max"; }

/// For each element j of the run at output position y: the offset (run offset + j) of the
/// first tap of its window holding the maximum (minimum when !max), or -1 for a window that
/// reads only padding. `best` is scratch of the run's length.
template <class A, class T>
void select_taps(const Taps& taps, const Shape& y, Shape& k, const T* operand, bool max, A* best, int64_t* at) {
  const int64_t m = taps.inner;
  std::fill(at, at + m, int64_t(-1));
  taps.for_each_tap(y, k, [&](int64_t off) {
    const T* run = operand + off;
    for (int64_t j = 0; j < m; ++j) {
      const A v = load<A>(run[j]);
      const bool better = at[j] < 0 || (max ? greater(v, best[j]) : greater(best[j], v));
      best[j] = better ? v : best[j];
      at[j] = better ? off + j : at[j];
    }
  });
}

// select_and_gather_add(tangent, operand): the tangent at each window's selected position.
template <class T> void gather_t(const KernelCall& c) {
  using A = compute_t<T>;
  const WindowSpec w = WindowSpec::from(c.params);
  const bool max = selects_max(c.params);
  const Taps taps(c.in_avals[0].shape, c.out_avals[0].shape, w);
  const T *t = c.in<T>(0), *x = c.in<T>(1);
  T* out = c.out<T>(0);
  const int64_t m = taps.inner;
  cpu::parallel_for(taps.positions(), grain_for(taps), [&](int64_t lo, int64_t hi) {
    Shape k(taps.in.size());
    std::vector<A> best(static_cast<size_t>(m));
    std::vector<int64_t> at(static_cast<size_t>(m));
    for_each_position(taps.out, lo, hi, [&](int64_t i, const Shape& y) {
      select_taps<A>(taps, y, k, x, max, best.data(), at.data());
      for (int64_t j = 0; j < m; ++j) out[i * m + j] = at[size_t(j)] < 0 ? T(0) : t[at[size_t(j)]];
    });
  });
}

// select_and_scatter_add(source, operand): each window's source value added at its selected
// position. Windows that overlap write the same elements, so the work splits only along
// the leading dimensions that no window spans.
template <class T> void scatter_t(const KernelCall& c) {
  using A = compute_t<T>;
  const WindowSpec w = WindowSpec::from(c.params);
  const bool max = selects_max(c.params);
  const Taps taps(c.out_avals[0].shape, c.in_avals[0].shape, w);
  const T *src = c.in<T>(0), *x = c.in<T>(1);
  T* out = c.out<T>(0);
  std::fill(out, out + c.out_avals[0].size(), T(0));
  const int64_t m = taps.inner;
  size_t lead = 0;
  int64_t slices = 1;
  while (lead < taps.in.size() && w.trivial(lead)) slices *= taps.in[lead++];
  const int64_t per_slice = slices == 0 ? 0 : taps.positions() / slices;
  cpu::parallel_for(slices, 1, [&](int64_t lo, int64_t hi) {
    Shape k(taps.in.size());
    std::vector<A> best(static_cast<size_t>(m));
    std::vector<int64_t> at(static_cast<size_t>(m));
    for_each_position(taps.out, lo * per_slice, hi * per_slice, [&](int64_t i, const Shape& y) {
      select_taps<A>(taps, y, k, x, max, best.data(), at.data());
      for (int64_t j = 0; j < m; ++j)
        if (const int64_t p = at[size_t(j)]; p >= 0) out[p] = store<T>(load<A>(out[p]) + load<A>(src[i * m + j]));
    });
  });
}

template <template <class> class K> void float_kernel(const KernelCall& c) {
  visit_dtype(c.in_avals[0].dtype, [&](auto z) {
    using T = decltype(z);
    if constexpr (std::is_same_v<T, bool>) throw DTypeError("select_and_gather_add: bool operands have no gradient");
    else K<T>{}(c);
  });
}
template <class T> struct Gather {
  void operator()(const KernelCall& c) const { gather_t<T>(c); }
};
template <class T> struct Scatter {
  void operator()(const KernelCall& c) const { scatter_t<T>(c); }
};

// ---- abstract evaluation ----

template <class Op> const char* window_name() {
  if constexpr (std::is_same_v<Op, SumOp>) return "reduce_window_sum";
  else if constexpr (std::is_same_v<Op, MaxOp>) return "reduce_window_max";
  else return "reduce_window_min";
}

template <class Op> std::vector<Aval> reduce_window_aval(std::span<const Aval> ins, const Params& p) {
  const Aval& x = ins[0];
  if constexpr (std::is_same_v<Op, SumOp>)
    if (is_bool(x.dtype))
      throw DTypeError("reduce_window_sum: bool operands are not supported; convert them to a numeric dtype");
  return {Aval(window_out_shape(window_name<Op>(), x.shape, WindowSpec::from(p)), x.dtype, x.weak_type)};
}

void check_select(const char* op, std::span<const Aval> ins, const Params& p) {
  const std::string& s = p.get<std::string>("select");
  if (s != "max" && s != "min") throw ValueError(std::string(op) + ": select must be \"max\" or \"min\", got " + s);
  if (ins[0].dtype != ins[1].dtype)
    throw DTypeError(std::string(op) + ": operands have different dtypes " + avals_to_string(ins));
}

std::vector<Aval> gather_aval(std::span<const Aval> ins, const Params& p) {
  check_select("select_and_gather_add", ins, p);
  check_same_type("select_and_gather_add", "the tangent", ins[0], ins[1], "it must have the operand's shape");
  return {Aval(window_out_shape("select_and_gather_add", ins[1].shape, WindowSpec::from(p)), ins[0].dtype,
               ins[0].weak_type)};
}

std::vector<Aval> scatter_aval(std::span<const Aval> ins, const Params& p) {
  check_select("select_and_scatter_add", ins, p);
  const Shape windows = window_out_shape("select_and_scatter_add", ins[1].shape, WindowSpec::from(p));
  check_same_type("select_and_scatter_add", "the source", ins[0], Aval(windows, ins[1].dtype),
                  "it needs one value per window of the operand");
  return {Aval(ins[1].shape, ins[0].dtype, ins[0].weak_type)};
}

// ---- transformation rules ----

Params with_select(Params p, bool max) {
  p.set("select", std::string(max ? "max" : "min"));
  return p;
}

const ir::Primitive& gather_prim();
const ir::Primitive& scatter_prim();

// The transpose of a windowed sum (JAX's _reduce_window_sum_transpose_rule): the cotangent,
// spread back by interior padding of stride - 1 and padded like a convolution's lhs
// cotangent, summed over windows moving by the base dilation.
std::vector<Array> sum_transpose(const ir::Primitive& self, std::span<const Array> cts, std::span<const Array>,
                                 std::span<const Aval> avals, const Params& p) {
  if (is_zero(cts[0])) return {Array()};
  const WindowSpec w = WindowSpec::from(p);
  const Shape& in = avals[0].shape;
  const Array& ct = cts[0];
  std::vector<std::array<int64_t, 3>> cfg;
  for (size_t d = 0; d < in.size(); ++d) {
    const int64_t in_d = dilate_dim(in[d], w.base_dilation[d]), k = dilate_dim(w.dims[d], w.window_dilation[d]);
    const int64_t out_d = dilate_dim(ct.dim(int64_t(d)), w.strides[d]);
    const auto [lo, hi] = vjp_lhs_padding(in_d, k, out_d, w.pad_lo[d]);
    cfg.push_back({lo, hi, w.strides[d] - 1});
  }
  WindowSpec t = w;
  t.strides = w.base_dilation;
  t.pad_lo.assign(in.size(), 0);
  t.pad_hi.assign(in.size(), 0);
  t.base_dilation.assign(in.size(), 1);
  return {bind1(self, {lax_pad(ct, 0.0, cfg)}, t.params())};
}

template <bool Max> std::vector<Array> extremum_jvp(const ir::Primitive&, std::span<const Array> primals,
                                                    std::span<const Array> tangents, std::span<const Array>,
                                                    const Params& p) {
  if (is_complex(primals[0].dtype()))
    throw NotImplementedError(std::string(Max ? "reduce_window_max" : "reduce_window_min") +
                              ": differentiation of complex operands is not implemented (their order is not "
                              "differentiable)");
  return {bind1(gather_prim(), {tangents[0], primals[0]}, with_select(p, Max))};
}

std::vector<Array> select_jvp(const ir::Primitive& self, std::span<const Array> primals, std::span<const Array> tangents,
                              std::span<const Array>, const Params& p) {
  return jvp_linear_in_first(1, self, primals, tangents, p);
}

// Each transposes to the other, the operand (which decides the selection) held fixed.
std::vector<Array> gather_transpose(const ir::Primitive&, std::span<const Array> cts, std::span<const Array> args,
                                    std::span<const Aval>, const Params& p) {
  if (is_zero(cts[0])) return {Array(), Array()};
  return {bind1(scatter_prim(), {cts[0], args[1]}, p), Array()};
}
std::vector<Array> scatter_transpose(const ir::Primitive&, std::span<const Array> cts, std::span<const Array> args,
                                     std::span<const Aval>, const Params& p) {
  if (is_zero(cts[0])) return {Array(), Array()};
  return {bind1(gather_prim(), {cts[0], args[1]}, p), Array()};
}

// vmap: the batch dimension becomes one more, unwindowed, dimension (all operands batched
// at the same place).
Batched window_batch(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                     const BatchAxis& axis, const Params& p) {
  int64_t bd = dims[0];
  std::vector<Array> xs(ins.begin(), ins.end());
  bool same = true;
  for (size_t i = 1; i < dims.size(); ++i) same &= dims[i] == bd;
  if (!same) {
    bd = 0;
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = move_batch_dim(xs[i], dims[i], 0, axis.size);
  }
  Params q = WindowSpec::from(p).with_trivial(bd).params();
  if (p.has("select")) q.set("select", p.get<std::string>("select"));
  return {detail::bind(self, xs, q), {bd}};
}

// SPMD: unwindowed dimensions pass through; windowed ones stay whole.
ir::ShardingRule window_sharding_rule(std::span<const Aval> ins, std::span<const Aval> outs, const Params& p) {
  const WindowSpec w = WindowSpec::from(p);
  std::vector<DimRule> kinds;
  for (size_t d = 0; d < w.dims.size(); ++d) kinds.push_back(w.trivial(d) ? DimRule::kPass : DimRule::kWhole);
  return aligned_sharding_rule(ins, outs, kinds);
}

template <class Op> ir::Primitive window_primitive() {
  ir::Primitive p{.name = window_name<Op>(), .arity = {1, 1}, .abstract_eval = reduce_window_aval<Op>,
                  .cpu_kernel = reduce_window_kernel<Op>, .batch = window_batch,
                  .sharding_rule = window_sharding_rule};
  if constexpr (std::is_same_v<Op, SumOp>) p.jvp = jvp_linear, p.transpose = sum_transpose;
  else p.jvp = extremum_jvp<std::is_same_v<Op, MaxOp>>;
  return p;
}

const ir::Primitive& gather_prim() {
  static const ir::Primitive& p = ir::register_primitive({.name = "select_and_gather_add",
                                                          .arity = {2, 2},
                                                          .abstract_eval = gather_aval,
                                                          .cpu_kernel = float_kernel<Gather>,
                                                          .jvp = select_jvp,
                                                          .transpose = gather_transpose,
                                                          .batch = window_batch,
                                                          .sharding_rule = window_sharding_rule});
  return p;
}
const ir::Primitive& scatter_prim() {
  static const ir::Primitive& p = ir::register_primitive({.name = "select_and_scatter_add",
                                                          .arity = {2, 2},
                                                          .abstract_eval = scatter_aval,
                                                          .cpu_kernel = float_kernel<Scatter>,
                                                          .jvp = select_jvp,
                                                          .transpose = scatter_transpose,
                                                          .batch = window_batch,
                                                          .sharding_rule = window_sharding_rule});
  return p;
}
// Registered at start-up like every primitive, so programs read from bytes find them.
[[maybe_unused]] const ir::Primitive& gather_registered = gather_prim();
[[maybe_unused]] const ir::Primitive& scatter_registered = scatter_prim();

const ir::Primitive& reduce_window_sum_p = ir::register_primitive(window_primitive<SumOp>());
const ir::Primitive& reduce_window_max_p = ir::register_primitive(window_primitive<MaxOp>());
const ir::Primitive& reduce_window_min_p = ir::register_primitive(window_primitive<MinOp>());

}  // namespace

Array reduce_window_bind(WindowOp op, const Array& x, const Shape& dims, const Shape& strides, const Pads& pads,
                         const Shape& base_dilation, const Shape& window_dilation) {
  WindowSpec w{dims, strides, {}, {}, base_dilation, window_dilation};
  for (auto [lo, hi] : pads) w.pad_lo.push_back(lo), w.pad_hi.push_back(hi);
  const ir::Primitive& p = op == WindowOp::kSum   ? reduce_window_sum_p
                           : op == WindowOp::kMax ? reduce_window_max_p
                                                  : reduce_window_min_p;
  return bind1(p, {x}, w.params());
}

}  // namespace tessel::ops
