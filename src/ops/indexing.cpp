// Slicing and indexing primitives (slice, dynamic_slice, dynamic_update_slice, gather and
// scatter) and the lax-level functions built on them (slice, take, take_along_axis, ...).
// NumPy indexing (`x[...]`, `x.at(...)`) lives in numpy_indexing.cpp.
//
// gather and scatter mirror each other. Both see the operand through a strided window
// (start/limit/strides per dimension, like slice) on the dimensions that are not indexed,
// and through integer index arrays (all of one shape B) on the `axes` that are. Their
// "indexed shape" is the window sizes in dimension order with B inserted at `batch_pos`.
// gather reads that shape (index arrays wrap negative values, then clamp into range);
// scatter combines an update of that shape into the operand (negative values wrap,
// out-of-range ones are dropped, duplicates are applied in row-major order, so `set` keeps
// the last and `add` accumulates).
#include <algorithm>
#include <cstring>

#include "ops/indexing.h"
#include "ops/strided.h"

namespace tessel::ops {
namespace {

// ---- shared validation ----

/// Sizes of the strided window start:limit:strides of `s`, or an error naming `op`.
/// Dimensions in `skip` are not windowed (their size is left 0).
Shape window_sizes(const std::string& op, const Shape& s, const Shape& start, const Shape& limit,
                   const Shape& strides, const Axes& skip = {}) {
  const size_t r = s.size();
  if (start.size() != r || limit.size() != r || strides.size() != r)
    throw ShapeError(op + ": start_indices " + shape_to_string(start) + ", limit_indices " + shape_to_string(limit) +
                     " and strides " + shape_to_string(strides) + " need one entry per dimension of shape " +
                     shape_to_string(s));
  Shape out(r, 0);
  for (size_t d = 0; d < r; ++d) {
    if (std::find(skip.begin(), skip.end(), int64_t(d)) != skip.end()) continue;
    const std::string where = " dimension " + std::to_string(d) + " of size " + std::to_string(s[d]) +
                              " in shape " + shape_to_string(s);
    if (strides[d] <= 0)
      throw ValueError(op + ": stride " + std::to_string(strides[d]) + " in dimension " + std::to_string(d) +
                       " must be positive (reverse with flip/rev)");
    if (start[d] < 0) throw IndexError(op + ": start " + std::to_string(start[d]) + " is negative in" + where);
    if (start[d] > s[d]) throw IndexError(op + ": start " + std::to_string(start[d]) + " exceeds" + where);
    if (limit[d] > s[d]) throw IndexError(op + ": limit " + std::to_string(limit[d]) + " exceeds" + where);
    if (limit[d] < start[d])
      throw IndexError(op + ": limit " + std::to_string(limit[d]) + " is below start " + std::to_string(start[d]) +
                       " in" + where);
    out[d] = (limit[d] - start[d] + strides[d] - 1) / strides[d];
  }
  return out;
}

}  // namespace

void check_index_dtype(const std::string& op, DType d) {
  if (is_bool(d))
    throw IndexError(op + ": boolean mask indices are not supported: the result's shape would depend on the "
                          "mask's values, and tessel needs static shapes (as under jit). Select element-wise "
                          "with where(mask, x, other) instead");
  check_dtype(op, d, is_integer(d), "an integer index dtype");
}

namespace {

/// Reads an integer scalar of any integer dtype.
int64_t load_int(DType d, const void* p) {
  return visit_dtype(d, [&](auto z) -> int64_t {
    using T = decltype(z);
    if constexpr (std::is_integral_v<T>) {
      T v;
      std::memcpy(&v, p, sizeof(T));
      return int64_t(v);
    } else {
      return 0;  // unreachable: abstract evaluation accepts integer dtypes only
    }
  });
}

// ---- slice[start_indices, limit_indices, strides] ----

std::vector<Aval> slice_aval(std::span<const Aval> ins, const Params& p) {
  Shape out = window_sizes("slice", ins[0].shape, p.get_ints("start_indices"), p.get_ints("limit_indices"),
                           p.get_ints("strides"));
  return {Aval(out, ins[0].dtype, ins[0].weak_type)};
}

void slice_kernel(const KernelCall& c) {
  const auto& start = c.params.get_ints("start_indices");
  const auto& strides = c.params.get_ints("strides");
  auto ist = strides_of(c.in_avals[0].shape);
  int64_t base = 0;
  for (size_t d = 0; d < ist.size(); ++d) base += start[d] * ist[d];
  const Shape& os = c.out_avals[0].shape;
  strided_copy(itemsize(c.in_avals[0].dtype), os, c.outs[0], 0, strides_of(os), c.ins[0], base,
               scaled_strides(c.in_avals[0].shape, strides));
}

const ir::Primitive& slice_p = ir::register_primitive({
    .name = "slice", .abstract_eval = slice_aval, .cpu_kernel = slice_kernel, .fusion = ir::FusionKind::kShape});

// ---- dynamic_slice[slice_sizes](operand, *start_indices) and
//      dynamic_update_slice(operand, update, *start_indices); starts clamp so the window fits ----

void check_starts(const std::string& op, std::span<const Aval> starts, const Aval& x) {
  if (int64_t(starts.size()) != x.ndim())
    throw ShapeError(op + ": needs one start index per dimension of shape " + shape_to_string(x.shape) + ", got " +
                     std::to_string(starts.size()));
  for (const Aval& s : starts) {
    if (!s.shape.empty())
      throw ShapeError(op + ": start indices must be scalars, got shape " + shape_to_string(s.shape));
    check_dtype(op, s.dtype, is_integer(s.dtype), "an integer start index");
  }
}

std::vector<Aval> dynamic_slice_aval(std::span<const Aval> ins, const Params& p) {
  const Aval& x = ins[0];
  check_starts("dynamic_slice", ins.subspan(1), x);
  const Shape& sizes = p.get_ints("slice_sizes");
  if (sizes.size() != x.shape.size())
    throw ShapeError("dynamic_slice: slice_sizes " + shape_to_string(sizes) + " need one entry per dimension of shape " +
                     shape_to_string(x.shape));
  for (size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] < 0 || sizes[d] > x.shape[d])
      throw IndexError("dynamic_slice: slice size " + std::to_string(sizes[d]) + " does not fit dimension " +
                       std::to_string(d) + " of size " + std::to_string(x.shape[d]) + " in shape " +
                       shape_to_string(x.shape));
  return {Aval(sizes, x.dtype, x.weak_type)};
}

/// Offset of the clamped window start of shape `window` in an array of shape `s`.
int64_t clamped_base(const KernelCall& c, size_t first_start, const Shape& s, const Shape& window) {
  auto st = strides_of(s);
  int64_t base = 0;
  for (size_t d = 0; d < s.size(); ++d) {
    int64_t i = load_int(c.in_avals[first_start + d].dtype, c.ins[first_start + d]);
    base += std::clamp<int64_t>(i, 0, s[d] - window[d]) * st[d];
  }
  return base;
}

void dynamic_slice_kernel(const KernelCall& c) {
  const Shape& s = c.in_avals[0].shape;
  const Shape& os = c.out_avals[0].shape;
  auto st = strides_of(os);
  strided_copy(itemsize(c.in_avals[0].dtype), os, c.outs[0], 0, st, c.ins[0], clamped_base(c, 1, s, os), strides_of(s));
}

std::vector<Aval> dynamic_update_slice_aval(std::span<const Aval> ins, const Params&) {
  const Aval &x = ins[0], &u = ins[1];
  check_starts("dynamic_update_slice", ins.subspan(2), x);
  if (u.dtype != x.dtype)
    throw DTypeError("dynamic_update_slice: update dtype " + std::string(dtype_name(u.dtype)) +
                     " differs from the operand dtype " + dtype_name(x.dtype) + "; convert it with astype");
  bool fits = u.ndim() == x.ndim();
  for (size_t d = 0; fits && d < u.shape.size(); ++d) fits = u.shape[d] <= x.shape[d];
  if (!fits)
    throw ShapeError("dynamic_update_slice: update of shape " + shape_to_string(u.shape) +
                     " does not fit in the operand of shape " + shape_to_string(x.shape) +
                     " (same rank, each dimension at most the operand's)");
  return {x};
}

void dynamic_update_slice_kernel(const KernelCall& c) {
  const Shape& s = c.in_avals[0].shape;
  const Shape& us = c.in_avals[1].shape;
  if (c.outs[0] != c.ins[0]) std::memcpy(c.outs[0], c.ins[0], c.out_avals[0].nbytes());
  strided_copy(itemsize(c.in_avals[0].dtype), us, c.outs[0], clamped_base(c, 2, s, us), strides_of(s), c.ins[1], 0,
               strides_of(us));
}

const ir::Primitive& dynamic_slice_p = ir::register_primitive({
    .name = "dynamic_slice", .abstract_eval = dynamic_slice_aval, .cpu_kernel = dynamic_slice_kernel});
const ir::Primitive& dynamic_update_slice_p = ir::register_primitive({
    .name = "dynamic_update_slice", .abstract_eval = dynamic_update_slice_aval,
    .cpu_kernel = dynamic_update_slice_kernel});

}  // namespace

// ---- gather / scatter[axes, batch_pos, start_indices, limit_indices, strides] ----

IndexedView indexed_view(const std::string& op, const Aval& x, std::span<const Aval> idx, const Params& p) {
  const Axes& axes = p.get_ints("axes");
  const int64_t batch_pos = p.get_int("batch_pos");
  if (axes.size() != idx.size())
    throw ShapeError(op + ": " + std::to_string(axes.size()) + " indexed axes need as many index arrays, got " +
                     std::to_string(idx.size()));
  for (size_t j = 0; j < axes.size(); ++j) {
    if (axes[j] < 0 || axes[j] >= x.ndim() || std::count(axes.begin(), axes.end(), axes[j]) > 1)
      throw IndexError(op + ": indexed axes " + shape_to_string(axes) + " must be distinct dimensions of shape " +
                       shape_to_string(x.shape));
    check_index_dtype(op, idx[j].dtype);
    if (idx[j].shape != idx[0].shape)
      throw ShapeError(op + ": index arrays must have one shape, got " + avals_to_string(idx) +
                       "; broadcast them first");
  }
  const auto& start = p.get_ints("start_indices");
  const auto& strides = p.get_ints("strides");
  Shape sizes = window_sizes(op, x.shape, start, p.get_ints("limit_indices"), strides, axes);
  const Shape batch = idx.empty() ? Shape{} : idx[0].shape;
  auto xst = strides_of(x.shape), bst = strides_of(batch);
  IndexedView v;
  int64_t nwin = 0;
  auto add_batch = [&] {
    for (size_t k = 0; k < batch.size(); ++k) {
      v.shape.push_back(batch[k]);
      v.xstep.push_back(0);
      v.bstep.push_back(bst[k]);
    }
  };
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (std::find(axes.begin(), axes.end(), int64_t(d)) != axes.end()) continue;
    if (nwin++ == batch_pos) add_batch();
    v.shape.push_back(sizes[d]);
    v.xstep.push_back(strides[d] * xst[d]);
    v.bstep.push_back(0);
    v.xbase += start[d] * xst[d];
  }
  if (batch_pos < 0 || batch_pos > nwin)
    throw IndexError(op + ": batch_pos " + std::to_string(batch_pos) + " must be in [0, " + std::to_string(nwin) + "]");
  if (batch_pos == nwin) add_batch();
  return v;
}

namespace {

/// The index arrays of a gather/scatter call as int64, with negative values wrapped.
std::vector<std::vector<int64_t>> load_indices(const KernelCall& c, size_t first) {
  const Axes& axes = c.params.get_ints("axes");
  std::vector<std::vector<int64_t>> out;
  for (size_t j = 0; j < axes.size(); ++j) {
    const Aval& a = c.in_avals[first + j];
    const int64_t n = c.in_avals[0].shape[size_t(axes[j])];
    std::vector<int64_t> v(size_t(a.size()));
    visit_dtype(a.dtype, [&](auto z) {
      using T = decltype(z);
      if constexpr (std::is_integral_v<T>) {
        const T* p = c.in<T>(first + j);
        for (size_t i = 0; i < v.size(); ++i) v[i] = int64_t(p[i]) < 0 ? int64_t(p[i]) + n : int64_t(p[i]);
      }
    });
    out.push_back(std::move(v));
  }
  return out;
}

/// Calls f(out_pos, x_offset) for each element of the indexed view; x_offset is -1 for an
/// out-of-range index when `clamp` is false.
template <class F> void for_each_indexed(const KernelCall& c, size_t first_index, bool clamp, F&& f) {
  const Aval& x = c.in_avals[0];
  auto v = indexed_view(clamp ? "gather" : "scatter", x, c.in_avals.subspan(first_index), c.params);
  const Axes& axes = c.params.get_ints("axes");
  auto idx = load_indices(c, first_index);
  auto xst = strides_of(x.shape);
  int64_t pos = 0;
  for_each_offset(v.shape, v.xbase, v.xstep, 0, v.bstep, [&](int64_t off, int64_t b) {
    for (size_t j = 0; j < axes.size() && off >= 0; ++j) {
      const int64_t n = x.shape[size_t(axes[j])];
      int64_t i = idx[j][size_t(b)];
      if (i < 0 || i >= n) {
        if (!clamp) {
          off = -1;
          break;
        }
        i = std::clamp<int64_t>(i, 0, n - 1);
      }
      off += i * xst[size_t(axes[j])];
    }
    f(pos++, off);
  });
}

std::vector<Aval> gather_aval(std::span<const Aval> ins, const Params& p) {
  auto v = indexed_view("gather", ins[0], ins.subspan(1), p);
  if (shape_size(v.shape) > 0)  // clamping needs an element to clamp to
    for (auto d : p.get_ints("axes"))
      if (ins[0].shape[size_t(d)] == 0)
        throw IndexError("gather: cannot take indices from dimension " + std::to_string(d) + " of size 0 in shape " +
                         shape_to_string(ins[0].shape));
  return {Aval(v.shape, ins[0].dtype, ins[0].weak_type)};
}

void gather_kernel(const KernelCall& c) {
  visit_itemsize(itemsize(c.in_avals[0].dtype), [&](auto z) {
    using E = decltype(z);
    const E* in = c.in<E>(0);
    E* out = c.out<E>(0);
    for_each_indexed(c, 1, true, [&](int64_t o, int64_t off) { out[o] = in[off]; });
  });
}

}  // namespace

const ir::Primitive& gather_p = ir::register_primitive({
    .name = "gather", .abstract_eval = gather_aval, .cpu_kernel = gather_kernel});

namespace {

std::vector<Aval> scatter_aval(std::span<const Aval> ins, const Params& p) {
  const std::string& mode = p.get<std::string>("mode");
  if (mode != "set" && mode != "add" && mode != "mul" && mode != "min" && mode != "max")
    throw ValueError("scatter: unknown mode '" + mode + "'; use set, add, mul, min or max");
  const Aval &x = ins[0], &u = ins[1];
  auto v = indexed_view("scatter", x, ins.subspan(2), p);
  if (u.dtype != x.dtype)
    throw DTypeError("scatter: update dtype " + std::string(dtype_name(u.dtype)) + " differs from the operand dtype " +
                     dtype_name(x.dtype) + "; convert it first");
  if (u.shape != v.shape)
    throw ShapeError("scatter: the update has shape " + shape_to_string(u.shape) + " but the indexed part of " +
                     shape_to_string(x.shape) + " has shape " + shape_to_string(v.shape));
  return {x};
}

template <class T> T combine_max(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return a || b;
  } else if constexpr (is_complex_v<T>) {  // lexicographic, as lax.max on complex numbers
    return (a.real() > b.real() || (a.real() == b.real() && a.imag() >= b.imag())) ? a : b;
  } else {
    compute_t<T> x = a, y = b;
    if (x != x) return a;  // NaN propagates
    if (y != y) return b;
    return x >= y ? a : b;
  }
}
template <class T> T combine_min(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return a && b;
  } else if constexpr (is_complex_v<T>) {
    return (a.real() < b.real() || (a.real() == b.real() && a.imag() <= b.imag())) ? a : b;
  } else {
    compute_t<T> x = a, y = b;
    if (x != x) return a;
    if (y != y) return b;
    return x <= y ? a : b;
  }
}
template <class T> T combine_add(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) return a || b;
  else return T(compute_t<T>(a) + compute_t<T>(b));
}
template <class T> T combine_mul(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) return a && b;
  else return T(compute_t<T>(a) * compute_t<T>(b));
}

void scatter_kernel(const KernelCall& c) {
  if (c.outs[0] != c.ins[0]) std::memcpy(c.outs[0], c.ins[0], c.out_avals[0].nbytes());
  const std::string& mode = c.params.get<std::string>("mode");
  visit_dtype(c.in_avals[0].dtype, [&](auto z) {
    using T = decltype(z);
    const T* u = c.in<T>(1);
    T* out = c.out<T>(0);
    auto run = [&](auto combine) {
      for_each_indexed(c, 2, false, [&](int64_t o, int64_t off) {
        if (off >= 0) out[off] = combine(out[off], u[o]);
      });
    };
    if (mode == "set") run([](T, T b) { return b; });
    else if (mode == "add") run(combine_add<T>);
    else if (mode == "mul") run(combine_mul<T>);
    else if (mode == "min") run(combine_min<T>);
    else run(combine_max<T>);
  });
}

}  // namespace

const ir::Primitive& scatter_p = ir::register_primitive({
    .name = "scatter", .abstract_eval = scatter_aval, .cpu_kernel = scatter_kernel});

Params indexed_params(const Axes& axes, int64_t batch_pos, const Shape& start, const Shape& limit,
                      const Shape& strides) {
  return Params{{"axes", axes}, {"batch_pos", batch_pos}, {"start_indices", start}, {"limit_indices", limit},
                {"strides", strides}};
}

}  // namespace tessel::ops

namespace tessel {

Array slice(const Array& x, const Shape& start, const Shape& limit, const Shape& strides) {
  Shape st = strides.empty() ? Shape(size_t(x.ndim()), 1) : strides;
  ops::window_sizes("slice", x.shape(), start, limit, st);  // validate before the identity shortcut
  if (start == Shape(size_t(x.ndim()), 0) && limit == x.shape() && st == Shape(size_t(x.ndim()), 1)) return x;
  return ops::bind1(ops::slice_p, {x},
                    ops::Params{{"start_indices", start}, {"limit_indices", limit}, {"strides", st}});
}

Array slice_in_dim(const Array& x, int64_t start, int64_t limit, int64_t stride, int64_t axis) {
  axis = ops::canonicalize_axis("slice_in_dim", axis, x.ndim());
  const int64_t n = x.dim(axis);
  Shape s(size_t(x.ndim()), 0), l = x.shape(), st(size_t(x.ndim()), 1);
  s[size_t(axis)] = start < 0 ? start + n : start;  // negative bounds count from the end, as in lax
  l[size_t(axis)] = limit < 0 ? limit + n : limit;
  st[size_t(axis)] = stride;
  return slice(x, s, l, st);
}

Array dynamic_slice(const Array& x, const std::vector<Array>& start, const Shape& sizes) {
  std::vector<Array> ins{x};
  ins.insert(ins.end(), start.begin(), start.end());
  if (sizes == x.shape() && int64_t(start.size()) == x.ndim()) {  // only one window fits
    bool scalars = true;
    for (auto& s : start) scalars &= s.valid() && s.ndim() == 0 && is_integer(s.dtype());
    if (scalars) return x;
  }
  return ops::bind1(ops::dynamic_slice_p, ins, ops::Params{{"slice_sizes", sizes}});
}

Array dynamic_update_slice(const Array& x, const Array& update, const std::vector<Array>& start) {
  Array u = update;
  if (u.valid() && u.weak_type() && u.dtype() != x.dtype()) u = ops::convert(u, x.dtype(), x.weak_type());
  std::vector<Array> ins{x, u};
  ins.insert(ins.end(), start.begin(), start.end());
  return ops::bind1(ops::dynamic_update_slice_p, ins);
}

Array take(const Array& x, const Array& indices, int64_t axis) {
  if (x.ndim() == 0) throw IndexError("take: cannot take from a rank-0 array; reshape it first");
  axis = ops::canonicalize_axis("take", axis, x.ndim());
  ops::check_index_dtype("take", indices.dtype());
  Shape start(size_t(x.ndim()), 0), st(size_t(x.ndim()), 1);
  return ops::bind1(ops::gather_p, {x, indices}, ops::indexed_params({axis}, axis, start, x.shape(), st));
}

Array take_along_axis(const Array& x, const Array& indices, int64_t axis) {
  const int64_t n = x.ndim();
  if (indices.ndim() != n)
    throw ShapeError("take_along_axis: indices of shape " + shape_to_string(indices.shape()) +
                     " must have the rank of the array of shape " + shape_to_string(x.shape()));
  axis = ops::canonicalize_axis("take_along_axis", axis, n);
  ops::check_index_dtype("take_along_axis", indices.dtype());
  // Other dimensions broadcast; index them with iotas so one gather reads every element.
  Shape out = indices.shape(), xs = x.shape();
  for (int64_t d = 0; d < n; ++d) {
    if (d == axis) continue;
    Shape b = ops::broadcast_shapes("take_along_axis", {{x.dim(d)}, {indices.dim(d)}});
    out[size_t(d)] = xs[size_t(d)] = b[0];
  }
  Array xb = broadcast_to(x, xs);
  std::vector<Array> ins{xb};
  Axes axes;
  for (int64_t d = 0; d < n; ++d) {
    axes.push_back(d);
    ins.push_back(d == axis ? broadcast_to(indices, out) : iota(int32, out, d));
  }
  Shape start(size_t(n), 0), st(size_t(n), 1);
  return ops::bind1(ops::gather_p, ins, ops::indexed_params(axes, 0, start, xs, st));
}

}  // namespace tessel
