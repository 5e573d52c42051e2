// NumPy-style indexing: `x[...]` with ints, slices, newaxis, ellipsis and integer index
// arrays, and functional updates (`x.at(...).set/add/mul/min/max`), planned as a strided
// window plus gather/scatter (src/ops/indexing.cpp). Out-of-bounds indices follow JAX:
// reads clamp by default, updates drop; IndexOptions picks another mode.
#include <algorithm>

#include "ops/indexing.h"

namespace tessel::ops {
namespace {

// ---- NumPy indexing: x[items] as a plan of window, index arrays and final reshape ----

struct IndexPlan {
  Shape start, limit, stride;  // window per operand dimension (full on indexed dimensions)
  Axes reversed;               // operand dimensions read by a negative-step slice
  Axes axes;                   // dimensions indexed by arrays, with their arrays (broadcast to one shape)
  std::vector<Array> arrays;
  int64_t batch_pos = 0;
  Shape result;  // NumPy's result shape
  /// Dimensions of the indexed shape (as gather/scatter define it) that `reversed` maps to.
  Axes reversed_in_view() const {
    const int64_t brank = arrays.empty() ? 0 : arrays[0].ndim();
    Axes r;
    int64_t k = 0;
    for (size_t d = 0; d < start.size(); ++d) {
      if (std::find(axes.begin(), axes.end(), int64_t(d)) != axes.end()) continue;
      if (std::find(reversed.begin(), reversed.end(), int64_t(d)) != reversed.end())
        r.push_back(k + (k >= batch_pos ? brank : 0));
      ++k;
    }
    return r;
  }
};

/// Plans x[index]. An in-range integer becomes a one-element window; an out-of-range one is
/// clamped or wrapped into a window for those modes, else (fill/drop) it becomes a rank-0
/// index array, so that the gather fills or the scatter drops at it.
IndexPlan plan_index(const std::string& op, const Array& x, const std::vector<Index>& index, OutOfBounds mode) {
  const int64_t ndim = x.ndim();
  int64_t consumed = 0, ellipses = 0;
  for (const Index& it : index) {
    const auto& v = it.value();
    if (std::holds_alternative<Ellipsis>(v)) ++ellipses;
    else if (!std::holds_alternative<NewAxis>(v)) ++consumed;
  }
  if (ellipses > 1) throw IndexError(op + ": an index can only have a single ellipsis");
  if (consumed > ndim)
    throw IndexError(op + ": too many indices for an array of shape " + shape_to_string(x.shape()) + ": " +
                     std::to_string(consumed) + " were given, at most " + std::to_string(ndim) + " fit");
  // Expand the ellipsis (or append it) into full slices.
  std::vector<Index> items;
  bool expanded = false;
  for (const Index& it : index) {
    if (std::holds_alternative<Ellipsis>(it.value())) {
      for (int64_t k = consumed; k < ndim; ++k) items.emplace_back(Slice());
      expanded = true;
    } else {
      items.push_back(it);
    }
  }
  if (!expanded)
    for (int64_t k = consumed; k < ndim; ++k) items.emplace_back(Slice());

  IndexPlan plan;
  std::vector<Shape> array_shapes;
  std::vector<size_t> advanced;  // item positions of ints and arrays
  size_t result_at_first_advanced = 0;
  int64_t d = 0;
  for (size_t pos = 0; pos < items.size(); ++pos) {
    const auto& v = items[pos].value();
    if (std::holds_alternative<NewAxis>(v)) {
      plan.result.push_back(1);
      continue;
    }
    const int64_t n = x.shape()[size_t(d)];
    const auto* i = std::get_if<int64_t>(&v);
    std::optional<Array> oob_index;
    if (i && (*i < -n || *i >= n)) {
      if (n == 0)
        throw IndexError(op + ": index " + std::to_string(*i) + " is out of bounds for axis " + std::to_string(d) +
                         " with size 0 (it has no element to clamp to)");
      if (mode == OutOfBounds::fill) oob_index = Array(Scalar(*i, DType::int64));
    }
    if (i && !oob_index) {
      const int64_t w = *i < 0 ? *i + n : *i;  // negative indices count from the end once
      const int64_t k = mode == OutOfBounds::wrap ? ((*i % n) + n) % n : std::clamp<int64_t>(w, 0, n - 1);
      plan.start.push_back(k);
      plan.limit.push_back(k + 1);
      plan.stride.push_back(1);
      if (advanced.empty()) result_at_first_advanced = plan.result.size();
      advanced.push_back(pos);
    } else if (const auto* s = std::get_if<Slice>(&v)) {
      // Python's slice.indices, then the window in increasing order.
      const int64_t step = s->step.value_or(1);
      if (step == 0) throw ValueError(op + ": slice step cannot be zero (axis " + std::to_string(d) + ")");
      auto norm = [&](std::optional<int64_t> b, int64_t dflt) {
        if (!b) return dflt;
        int64_t v2 = *b < 0 ? *b + n : *b;
        return step > 0 ? std::clamp<int64_t>(v2, 0, n) : std::clamp<int64_t>(v2, -1, n - 1);
      };
      const int64_t lo = norm(s->start, step > 0 ? 0 : n - 1), hi = norm(s->stop, step > 0 ? n : -1);
      const int64_t count = step > 0 ? std::max<int64_t>(0, (hi - lo + step - 1) / step)
                                     : std::max<int64_t>(0, (lo - hi - step - 1) / -step);
      const int64_t first = count == 0 ? 0 : (step > 0 ? lo : lo + (count - 1) * step);
      const int64_t stride = step > 0 ? step : -step;
      plan.start.push_back(first);
      plan.limit.push_back(count == 0 ? 0 : first + (count - 1) * stride + 1);
      plan.stride.push_back(stride);
      if (step < 0 && count > 1) plan.reversed.push_back(d);
      plan.result.push_back(count);
    } else {
      Array a;
      if (oob_index) {
        a = *oob_index;
      } else {
        const auto& impl = std::get<std::shared_ptr<detail::ArrayImpl>>(v);
        if (!impl) throw ValueError(op + ": an index Array is empty (default-constructed)");
        a = Array(impl);
        check_index_dtype(op, a.dtype());
        if (mode == OutOfBounds::wrap && n > 0) a = wrap_indices(a, n);
      }
      plan.start.push_back(0);
      plan.limit.push_back(n);
      plan.stride.push_back(1);
      plan.axes.push_back(d);
      plan.arrays.push_back(a);
      array_shapes.push_back(a.shape());
      if (advanced.empty()) result_at_first_advanced = plan.result.size();
      advanced.push_back(pos);
    }
    ++d;
  }
  if (plan.arrays.empty()) return plan;
  // NumPy: the broadcast index shape replaces the advanced indices when they are adjacent,
  // else it goes first.
  Shape batch = broadcast_shapes(op, array_shapes);
  for (auto& a : plan.arrays) a = broadcast_to(a, batch);
  const bool adjacent = advanced.back() - advanced.front() + 1 == advanced.size();
  const size_t at = adjacent ? result_at_first_advanced : 0;
  plan.result.insert(plan.result.begin() + int64_t(at), batch.begin(), batch.end());
  if (adjacent) plan.batch_pos = plan.axes[0];  // the dimensions before the first array are all windows
  return plan;
}

Array index_get(const std::string& op, const Array& x, const std::vector<Index>& index, const IndexOptions& o) {
  const OutOfBounds mode = index_mode(op, o, OutOfBounds::clip);  // JAX's reads clamp by default
  IndexPlan plan = plan_index(op, x, index, mode);
  Array y;
  if (plan.arrays.empty()) {
    y = slice(x, plan.start, plan.limit, plan.stride);
  } else {
    std::vector<Array> ins{x};
    ins.insert(ins.end(), plan.arrays.begin(), plan.arrays.end());
    Params p = indexed_params(plan.axes, plan.batch_pos, plan.start, plan.limit, plan.stride);
    y = bind1(gather_p, ins, mode == OutOfBounds::fill ? with_fill(p, o, x.dtype()) : p);
  }
  if (!plan.reversed.empty()) y = flip(y, plan.reversed_in_view());
  return reshape(y, plan.result);
}

Array index_update(const char* mode, const Array& x, const std::vector<Index>& index, const Array& v,
                   const IndexOptions& o) {
  const std::string op = std::string("at().") + mode;
  if (o.fill_value)
    throw ValueError(op + ": fill_value applies to reads (at().get, take) only; out-of-bounds updates are dropped "
                          "in mode \"fill\"/\"drop\"");
  const OutOfBounds oob = index_mode(op, o, OutOfBounds::fill);  // JAX drops out-of-bounds updates
  IndexPlan plan = plan_index(op, x, index, oob);
  if (!v.valid()) throw ValueError(op + ": the update value is an empty Array (default-constructed)");
  bool fits = v.ndim() <= int64_t(plan.result.size());
  for (int64_t k = 1; fits && k <= v.ndim(); ++k) {
    const int64_t vd = v.shape()[size_t(v.ndim() - k)];
    fits = vd == 1 || vd == plan.result[plan.result.size() - size_t(k)];
  }
  if (!fits)
    throw ShapeError(op + ": cannot broadcast the update of shape " + shape_to_string(v.shape()) +
                     " to the indexed shape " + shape_to_string(plan.result));
  // x's dtype wins, as in JAX.
  Array u = broadcast_to(convert(v, x.dtype(), x.weak_type()), plan.result);
  Shape view = plan.result;  // the indexed shape without newaxis dims, with int dims
  {
    std::vector<Aval> idx;
    for (auto& a : plan.arrays) idx.push_back(a.aval());
    view = indexed_view("scatter", x.aval(), idx,
                        indexed_params(plan.axes, plan.batch_pos, plan.start, plan.limit, plan.stride))
               .shape;
  }
  u = reshape(u, view);
  if (!plan.reversed.empty()) u = flip(u, plan.reversed_in_view());
  std::vector<Array> ins{x, u};
  ins.insert(ins.end(), plan.arrays.begin(), plan.arrays.end());
  Params p = indexed_params(plan.axes, plan.batch_pos, plan.start, plan.limit, plan.stride);
  p.set("mode", std::string(mode));
  if (oob == OutOfBounds::clip) p.set("out_of_bounds", std::string("clip"));
  return bind1(scatter_p, ins, p);
}

}  // namespace
}  // namespace tessel::ops

namespace tessel {

Index::Index(const Array& a) : v_(a.impl()) {}

Array Array::operator[](std::vector<Index> index) const { return ops::index_get("index", *this, index, {}); }

AtProxy::AtProxy(const Array& x, std::vector<Index> index) : x_(x.impl()), index_(std::move(index)) {}
Array AtProxy::get(const IndexOptions& o) const { return ops::index_get("at().get", Array(x_), index_, o); }
Array AtProxy::set(const Array& v, const IndexOptions& o) const {
  return ops::index_update("set", Array(x_), index_, v, o);
}
Array AtProxy::add(const Array& v, const IndexOptions& o) const {
  return ops::index_update("add", Array(x_), index_, v, o);
}
Array AtProxy::mul(const Array& v, const IndexOptions& o) const {
  return ops::index_update("mul", Array(x_), index_, v, o);
}
Array AtProxy::min(const Array& v, const IndexOptions& o) const {
  return ops::index_update("min", Array(x_), index_, v, o);
}
Array AtProxy::max(const Array& v, const IndexOptions& o) const {
  return ops::index_update("max", Array(x_), index_, v, o);
}

}  // namespace tessel
