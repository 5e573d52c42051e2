// jax.numpy's splitting, joining and rearranging functions and index helpers, composed of
// slices, concatenations, reshapes and transposes (include/tessel/numpy.h).
#include <algorithm>
#include <numeric>

#include "numpy/numpy_util.h"
#include "tessel/error.h"
#include "tessel/numpy.h"
#include "tessel/ops.h"

namespace tessel {

namespace {

int64_t rank(const Array& x) { return int64_t(x.shape().size()); }

/// The pieces of x along `axis` between consecutive split points (0 and the size added).
std::vector<Array> pieces(const Array& x, std::vector<int64_t> points, int64_t axis) {
  const int64_t n = x.shape()[size_t(axis)];
  std::vector<Array> out;
  int64_t lo = 0;
  points.push_back(n);
  for (int64_t p : points) {
    const int64_t hi = std::clamp(p < 0 ? p + n : p, lo, n);
    out.push_back(slice_in_dim(x, lo, hi, 1, axis));
    lo = hi;
  }
  return out;
}

int64_t split_axis(const std::string& op, const Array& x, int64_t axis) {
  if (x.shape().empty()) throw ShapeError(op + ": cannot split a scalar; x needs at least one axis");
  return ops::canonicalize_axis(op, axis, rank(x));
}

/// x reshaped to `n` axes by the rule of atleast_2d/3d: added axes go first, and for 3-D a
/// trailing one too.
Array at_least(const Array& x, int64_t n) {
  const Shape& s = x.shape();
  if (rank(x) >= n) return x;
  if (n == 1) return reshape(x, {1});
  if (n == 2) return reshape(x, rank(x) == 0 ? Shape{1, 1} : Shape{1, s[0]});
  if (rank(x) == 0) return reshape(x, {1, 1, 1});
  if (rank(x) == 1) return reshape(x, {1, s[0], 1});
  return reshape(x, {s[0], s[1], 1});
}

}  // namespace

std::vector<Array> split(const Array& x, int64_t sections, int64_t axis0) {
  const int64_t axis = split_axis("split", x, axis0);
  const int64_t n = x.shape()[size_t(axis)];
  if (sections <= 0 || n % sections != 0)
    throw ValueError("split: " + std::to_string(sections) + " sections do not divide axis " + std::to_string(axis) +
                     " of size " + std::to_string(n) + "; use array_split for unequal pieces");
  std::vector<int64_t> points;
  for (int64_t i = 1; i < sections; ++i) points.push_back(i * (n / sections));
  return pieces(x, points, axis);
}

std::vector<Array> split(const Array& x, const std::vector<int64_t>& indices, int64_t axis0) {
  return pieces(x, indices, split_axis("split", x, axis0));
}

std::vector<Array> array_split(const Array& x, int64_t sections, int64_t axis0) {
  const int64_t axis = split_axis("array_split", x, axis0);
  if (sections <= 0) throw ValueError("array_split: sections = " + std::to_string(sections) + " must be positive");
  const int64_t n = x.shape()[size_t(axis)];
  const int64_t base = n / sections, extra = n % sections;
  std::vector<int64_t> points;
  int64_t at = 0;
  for (int64_t i = 0; i + 1 < sections; ++i) points.push_back(at += base + (i < extra ? 1 : 0));
  return pieces(x, points, axis);
}

std::vector<Array> hsplit(const Array& x, int64_t sections) { return split(x, sections, rank(x) == 1 ? 0 : 1); }
std::vector<Array> vsplit(const Array& x, int64_t sections) {
  if (rank(x) < 2) throw ShapeError("vsplit: x must have at least 2 axes; got shape " + shape_to_string(x.shape()));
  return split(x, sections, 0);
}
std::vector<Array> dsplit(const Array& x, int64_t sections) {
  if (rank(x) < 3) throw ShapeError("dsplit: x must have at least 3 axes; got shape " + shape_to_string(x.shape()));
  return split(x, sections, 2);
}

std::vector<Array> unstack(const Array& x, int64_t axis0) {
  const int64_t axis = split_axis("unstack", x, axis0);
  std::vector<Array> out;
  for (int64_t i = 0; i < x.shape()[size_t(axis)]; ++i) out.push_back(squeeze(slice_in_dim(x, i, i + 1, 1, axis), Axes{axis}));
  return out;
}

namespace {
std::vector<Array> each_at_least(const std::string& op, const std::vector<Array>& xs, int64_t n) {
  if (xs.empty()) throw ValueError(op + ": needs at least one array");
  std::vector<Array> out;
  for (const Array& x : xs) out.push_back(at_least(x, n));
  return out;
}
}  // namespace

Array hstack(const std::vector<Array>& xs) {
  const auto a = each_at_least("hstack", xs, 1);
  return concatenate(a, rank(a[0]) == 1 ? 0 : 1);
}
Array vstack(const std::vector<Array>& xs) { return concatenate(each_at_least("vstack", xs, 2), 0); }
Array dstack(const std::vector<Array>& xs) { return concatenate(each_at_least("dstack", xs, 3), 2); }

Array column_stack(const std::vector<Array>& xs) {
  if (xs.empty()) throw ValueError("column_stack: needs at least one array");
  std::vector<Array> cols;
  for (const Array& x : xs) cols.push_back(rank(x) < 2 ? transpose(at_least(x, 2)) : x);
  return concatenate(cols, 1);
}

Array atleast_1d(const Array& x) { return at_least(x, 1); }
Array atleast_2d(const Array& x) { return at_least(x, 2); }
Array atleast_3d(const Array& x) { return at_least(x, 3); }

namespace {
// One level of jnp.block: parts `depth` levels deep, given leading axes of size 1 up to
// max(depth, their ranks) and joined along axis -depth.
Array join_blocks(const std::vector<Array>& parts, int64_t depth) {
  if (parts.empty()) throw ValueError("block: a list of blocks is empty; every level needs at least one block");
  int64_t r = depth;
  for (const Array& p : parts) r = std::max(r, rank(p));
  std::vector<Array> xs;
  for (const Array& p : parts) {
    Shape s(size_t(r - rank(p)), 1);
    s.insert(s.end(), p.shape().begin(), p.shape().end());
    xs.push_back(reshape(p, s));
  }
  return concatenate(xs, r - depth);
}
}  // namespace

Array block(const std::vector<Array>& blocks) { return join_blocks(blocks, 1); }

Array block(const std::vector<std::vector<Array>>& blocks) {
  std::vector<Array> rows;
  for (const auto& row : blocks) rows.push_back(join_blocks(row, 1));
  return join_blocks(rows, 2);
}

Array block(const std::vector<std::vector<std::vector<Array>>>& blocks) {
  std::vector<Array> planes;
  for (const auto& plane : blocks) {
    std::vector<Array> rows;
    for (const auto& row : plane) rows.push_back(join_blocks(row, 1));
    planes.push_back(join_blocks(rows, 2));
  }
  return join_blocks(planes, 3);
}

Array rot90(const Array& x, int64_t k, std::pair<int64_t, int64_t> axes) {
  const int64_t nd = rank(x);
  if (nd < 2) throw ShapeError("rot90: x must have at least 2 axes; got shape " + shape_to_string(x.shape()));
  const int64_t a0 = ops::canonicalize_axis("rot90", axes.first, nd);
  const int64_t a1 = ops::canonicalize_axis("rot90", axes.second, nd);
  if (a0 == a1) throw ValueError("rot90: the two axes must differ; got " + std::to_string(a0) + " twice");
  k = ((k % 4) + 4) % 4;
  if (k == 0) return x;
  if (k == 2) return flip(x, Axes{a0, a1});
  Axes perm(static_cast<size_t>(nd));
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[size_t(a0)], perm[size_t(a1)]);
  return k == 1 ? transpose(flip(x, Axes{a1}), perm) : flip(transpose(x, perm), Axes{a1});
}

Array fliplr(const Array& x) {
  if (rank(x) < 2) throw ShapeError("fliplr: x must have at least 2 axes; got shape " + shape_to_string(x.shape()));
  return flip(x, Axes{1});
}
Array flipud(const Array& x) {
  if (rank(x) < 1) throw ShapeError("flipud: x must have at least 1 axis; got a scalar");
  return flip(x, Axes{0});
}

Array resize(const Array& x, const Shape& shape) {
  int64_t total = 1;
  for (int64_t d : shape) {
    if (d < 0) throw ValueError("resize: shape " + shape_to_string(shape) + " has a negative dimension");
    total *= d;
  }
  const Array flat = ravel(x);
  const int64_t n = flat.shape()[0];
  if (total == 0 || n == 0) return zeros(shape, x.dtype());
  const int64_t reps = (total + n - 1) / n;
  return reshape(slice_in_dim(tile(flat, {reps}), 0, total), shape);
}

Array rollaxis(const Array& x, int64_t axis0, int64_t start) {
  const int64_t nd = rank(x);
  const int64_t axis = ops::canonicalize_axis("rollaxis", axis0, nd);
  if (start < 0) start += nd;
  if (start < 0 || start > nd)
    throw IndexError("rollaxis: start = " + std::to_string(start) + " is out of range for " + std::to_string(nd) + " axes");
  if (axis < start) --start;
  return moveaxis(x, axis, start);
}

Array delete_(const Array& x0, const std::vector<int64_t>& idx, std::optional<int64_t> axis0) {
  const Array x = axis0 ? x0 : ravel(x0);
  const int64_t axis = split_axis("delete", x, axis0.value_or(0));
  const int64_t n = x.shape()[size_t(axis)];
  std::vector<bool> drop(size_t(n), false);
  for (int64_t i : idx) {
    const int64_t j = i < 0 ? i + n : i;
    if (j < 0 || j >= n)
      throw IndexError("delete: index " + std::to_string(i) + " is out of range for axis " + std::to_string(axis) +
                       " of size " + std::to_string(n));
    drop[size_t(j)] = true;
  }
  std::vector<int32_t> keep;
  for (int64_t j = 0; j < n; ++j)
    if (!drop[size_t(j)]) keep.push_back(int32_t(j));
  return take(x, Array(keep), axis);
}

Array insert(const Array& x0, int64_t index, const Array& values, std::optional<int64_t> axis0) {
  const Array x = axis0 ? x0 : ravel(x0);
  const int64_t axis = split_axis("insert", x, axis0.value_or(0));
  const int64_t n = x.shape()[size_t(axis)];
  const int64_t at = index < 0 ? index + n : index;
  if (at < 0 || at > n)
    throw IndexError("insert: index " + std::to_string(index) + " is out of range for axis " + std::to_string(axis) +
                     " of size " + std::to_string(n));
  // As numpy: values get x's rank (leading 1s), their first axis moves to `axis`, and the
  // slab inserted has their length there.
  if (rank(values) > rank(x))
    throw ShapeError("insert: values of shape " + shape_to_string(values.shape()) + " have more axes than x " +
                     shape_to_string(x.shape()));
  Shape vs(size_t(rank(x) - rank(values)), 1);
  vs.insert(vs.end(), values.shape().begin(), values.shape().end());
  const Array v = moveaxis(reshape(values, vs), 0, axis);
  Shape s = x.shape();
  s[size_t(axis)] = v.shape()[size_t(axis)];
  const Array slab = broadcast_to(v, s).astype(x.dtype());
  return concatenate({slice_in_dim(x, 0, at, 1, axis), slab, slice_in_dim(x, at, n, 1, axis)}, axis);
}

Array append(const Array& x, const Array& values, std::optional<int64_t> axis) {
  if (!axis) return concatenate({ravel(x), ravel(values)}, 0);
  return concatenate({x, values}, *axis);
}

std::vector<Array> broadcast_arrays(const std::vector<Array>& xs) {
  std::vector<Shape> shapes;
  for (const Array& x : xs) shapes.push_back(x.shape());
  const Shape s = broadcast_shapes(shapes);
  std::vector<Array> out;
  for (const Array& x : xs) out.push_back(broadcast_to(x, s));
  return out;
}

int64_t ndim(const Array& x) { return rank(x); }
int64_t size(const Array& x) {
  int64_t n = 1;
  for (int64_t d : x.shape()) n *= d;
  return n;
}
// A select keeps every bit (adding zero would turn -0.0 into +0.0) and writes a new buffer.
Array copy(const Array& x) { return where(ones_like(x).astype(DType::bool_), x, x); }

std::vector<Array> unravel_index(const Array& indices, const Shape& shape) {
  if (!is_integer(indices.dtype()))
    throw DTypeError(std::string("unravel_index: indices of dtype ") + dtype_name(indices.dtype()) +
                     " are not supported; expected integers");
  int64_t total = 1;
  for (int64_t d : shape) total *= d;
  // JAX clips out-of-range flat indices (negative ones count from the end first).
  Array i = where(indices < Array(0), indices + Array(total), indices);
  i = clip(i, Array(0), Array(std::max<int64_t>(total - 1, 0))).astype(indices.dtype());
  std::vector<Array> out(shape.size());
  for (size_t a = shape.size(); a-- > 0;) {
    const Array d = full_like(i, Scalar(shape[a]));
    out[a] = rem(i, d);
    i = floor_divide(i, d);
  }
  return out;
}

Array ravel_multi_index(const std::vector<Array>& multi_index, const Shape& dims, const std::string& mode) {
  if (multi_index.size() != dims.size())
    throw ValueError("ravel_multi_index: " + std::to_string(multi_index.size()) + " index arrays for " +
                     std::to_string(dims.size()) + " dimensions; give one per dimension");
  if (mode != "raise" && mode != "wrap" && mode != "clip")
    throw ValueError("ravel_multi_index: mode '" + mode + "' is not one of 'raise', 'wrap', 'clip'");
  if (dims.empty()) throw ValueError("ravel_multi_index: dims is empty; give at least one dimension");
  std::optional<Array> flat;
  int64_t stride = 1;
  for (size_t a = dims.size(); a-- > 0;) {
    Array i = multi_index[a];
    if (!is_integer(i.dtype()))
      throw DTypeError(std::string("ravel_multi_index: indices of dtype ") + dtype_name(i.dtype()) +
                       " are not supported; expected integers");
    const Array d = full_like(i, Scalar(dims[a]));
    if (mode == "wrap") {
      i = remainder(i, d);
    } else if (mode == "clip") {
      i = clip(i, Array(0), Array(dims[a] - 1)).astype(i.dtype());
    } else if (!i.is_tracer()) {
      for (int64_t v : i.astype(DType::int64).to_vector<int64_t>())
        if (v < 0 || v >= dims[a])
          throw IndexError("ravel_multi_index: index " + std::to_string(v) + " is out of bounds for dimension " +
                           std::to_string(a) + " of size " + std::to_string(dims[a]) + "; use mode 'wrap' or 'clip'");
    }
    const Array term = i * full_like(i, Scalar(stride));
    flat = flat ? *flat + term : term;
    stride *= dims[a];
  }
  return *flat;
}

}  // namespace tessel
