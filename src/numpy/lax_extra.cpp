// The rest of jax.lax (include/tessel/lax_extra.h): element-wise integer and rounding
// functions, reductions and scans over callables, shape and slicing helpers, products,
// convolution shape helpers and collectives, each composed of tessel's primitives
// (gather and scatter with JAX's dimension numbers are in lax_gather.cpp).
#include <algorithm>
#include <numeric>

#include "ops/collectives.h"
#include "ops/conv.h"
#include "ops/elementwise.h"
#include "ops/op_util.h"
#include "tessel/control_flow.h"
#include "tessel/lax_extra.h"
#include "tessel/numpy.h"
#include "tessel/random.h"
#include "tessel/sort.h"
#include "tessel/transforms.h"

namespace tessel::lax {
namespace {

std::string dt(DType d) { return dtype_name(d); }

/// The unsigned integer dtype of d's width.
DType unsigned_of(DType d) {
  switch (itemsize(d)) {
    case 1: return DType::uint8;
    case 2: return DType::uint16;
    case 4: return DType::uint32;
    default: return DType::uint64;
  }
}

/// A scalar of dtype d holding v (bit pattern for unsigned d).
Array scalar_of(uint64_t v, DType d) { return Array(Scalar(v, d)); }

void check_integer(const std::string& op, const Array& x) {
  if (!is_integer(x.dtype()))
    throw DTypeError(op + ": dtype " + dt(x.dtype()) + " is not supported; expected an integer dtype (convert with astype)");
}

/// Both operands with one dtype (jnp promotion, so C++ scalars are weak) and one shape.
std::vector<Array> binary_operands(const std::string& op, const Array& x, const Array& y) {
  return ops::promote_broadcast(op, {x, y});
}

Array shift_right_unsigned(const Array& u, int64_t n) { return right_shift(u, scalar_of(uint64_t(n), u.dtype())); }

}  // namespace

// ---- element-wise ----

Array div(const Array& x, const Array& y) {
  auto xs = binary_operands("div", x, y);
  ops::check_class("div", xs[0].dtype(), ops::kNum);
  return ops::bind1(ops::div_p.prim, {xs[0], xs[1]});
}

Array round(const Array& x, RoundingMethod rounding_method) {
  if (!is_floating(x.dtype()))
    throw DTypeError("round: dtype " + dt(x.dtype()) + " is not supported; lax.round takes floating dtypes");
  if (rounding_method == RoundingMethod::kToNearestEven) return tessel::round(x);
  // Halves away from zero: x - trunc(x) is exact, so the comparison with 0.5 is too.
  const Array t = trunc(x);
  return where(abs(x - t) >= Array(0.5), t + sign(x), t);
}

Array integer_pow(const Array& x, int64_t y) {
  if (is_bool(x.dtype()))
    throw DTypeError("integer_pow: dtype bool is not supported; convert x to an integer or float dtype");
  if (is_integer(x.dtype()) && y < 0)
    throw ValueError("integer_pow: integers cannot be raised to the negative power " + std::to_string(y) +
                     "; convert x to a float dtype first");
  return ops::bind1(ops::integer_pow_p, {x}, ops::Params{{"y", y}});
}

Array shift_right_logical(const Array& x, const Array& y) {
  auto xs = binary_operands("shift_right_logical", x, y);
  check_integer("shift_right_logical", xs[0]);
  const DType d = xs[0].dtype(), u = unsigned_of(d);
  if (d == u) return right_shift(xs[0], xs[1]);
  return bitcast_convert_type(right_shift(bitcast_convert_type(xs[0], u), bitcast_convert_type(xs[1], u)), d);
}

Array population_count(const Array& x) {
  check_integer("population_count", x);
  return bitwise_count(bitcast_convert_type(x, unsigned_of(x.dtype()))).astype(x.dtype());
}

Array clz(const Array& x) {
  check_integer("clz", x);
  const DType u = unsigned_of(x.dtype());
  const int64_t bits = int64_t(itemsize(x.dtype())) * 8;
  // Smearing the highest set bit into every lower bit leaves (bits - clz) ones.
  Array v = bitcast_convert_type(x, u);
  for (int64_t s = 1; s < bits; s *= 2) v = v | shift_right_unsigned(v, s);
  Array ones_count = bitwise_count(v).astype(x.dtype());
  return Array(Scalar(bits, x.dtype())) - ones_count;
}

Array mulhi(const Array& x, const Array& y) {
  auto xs = binary_operands("mulhi", x, y);
  check_integer("mulhi", xs[0]);
  const DType d = xs[0].dtype();
  const bool is_signed = is_signed_int(d);
  const size_t bytes = itemsize(d);
  if (bytes < 8) {
    // The double-width product fits a wider integer.
    const DType wide = is_signed ? (bytes == 4 ? DType::int64 : DType::int32) : (bytes == 4 ? DType::uint64 : DType::uint32);
    const Array p = xs[0].astype(wide) * xs[1].astype(wide);
    return right_shift(p, Array(Scalar(int64_t(bytes) * 8, wide))).astype(d);
  }
  // 64 bits: the unsigned high word from 32-bit halves, then the signed correction
  // hi_s = hi_u - (a < 0 ? b : 0) - (b < 0 ? a : 0) (mod 2^64).
  const DType u = DType::uint64;
  const Array a = bitcast_convert_type(xs[0], u), b = bitcast_convert_type(xs[1], u);
  const Array lo_mask = scalar_of(0xffffffffull, u);
  const Array al = a & lo_mask, ah = shift_right_unsigned(a, 32), bl = b & lo_mask, bh = shift_right_unsigned(b, 32);
  const Array ll = al * bl, hl = ah * bl, lh = al * bh, hh = ah * bh;
  const Array cross = shift_right_unsigned(ll, 32) + (hl & lo_mask) + lh;
  Array hi = hh + shift_right_unsigned(hl, 32) + shift_right_unsigned(cross, 32);
  if (!is_signed) return hi;
  const Array zero = scalar_of(0, u);
  hi = hi - where(xs[0] < Array(Scalar(0, d)), b, zero) - where(xs[1] < Array(Scalar(0, d)), a, zero);
  return bitcast_convert_type(hi, d);
}

namespace {

/// XLA's ReducePrecision on the bits of a float of (src_exp, src_mant) bits.
Array reduce_precision_value(const Array& x, int exponent_bits, int mantissa_bits) {
  const DType d = x.dtype(), u = unsigned_of(d);
  const int nbits = int(itemsize(d)) * 8;
  const int src_mant = d == DType::float64 ? 52 : d == DType::float32 ? 23 : d == DType::float16 ? 10 : 7;
  const int src_exp = nbits - 1 - src_mant;
  const auto c = [&](uint64_t v) { return scalar_of(v, u); };
  Array bits = bitcast_convert_type(x, u);
  if (mantissa_bits < src_mant) {
    // Round to nearest even at the last kept mantissa bit, then truncate.
    const int drop = src_mant - mantissa_bits;
    const uint64_t last_bit = uint64_t(1) << drop;
    const Array bias = shift_right_unsigned(bits & c(last_bit), drop) + c((last_bit >> 1) - 1);
    bits = (bits + bias) & c(~(last_bit - 1));
  }
  if (exponent_bits < src_exp) {
    const uint64_t sign_mask = uint64_t(1) << (nbits - 1);
    const uint64_t exp_mask = ((uint64_t(1) << src_exp) - 1) << src_mant;
    const uint64_t bias = (uint64_t(1) << (src_exp - 1)) - 1;
    const uint64_t reduced_bias = (uint64_t(1) << (exponent_bits - 1)) - 1;
    const Array exponent = bits & c(exp_mask);
    const Array overflows = exponent > c((bias + reduced_bias) << src_mant);
    const Array underflows = exponent <= c((bias - reduced_bias) << src_mant);
    const Array signed_zero = bits & c(sign_mask);
    bits = where(overflows, signed_zero | c(exp_mask), where(underflows, signed_zero, bits));
  }
  const Array r = bitcast_convert_type(bits, d);
  return where(isnan(x), x, r);
}

}  // namespace

Array reduce_precision(const Array& x, int exponent_bits, int mantissa_bits) {
  if (!is_floating(x.dtype()))
    throw DTypeError("reduce_precision: dtype " + dt(x.dtype()) + " is not supported; expected a floating dtype");
  if (exponent_bits < 1 || mantissa_bits < 0)
    throw ValueError("reduce_precision: exponent_bits " + std::to_string(exponent_bits) + " and mantissa_bits " +
                     std::to_string(mantissa_bits) + " must be >= 1 and >= 0 (bfloat16: 8 and 7)");
  // The derivative is the identity: JAX rounds the tangent as well (it declares the
  // function linear), but bit manipulation has no transpose; the two differ by one rounding.
  const auto f = custom_jvp([=](const Array& v) { return reduce_precision_value(v, exponent_bits, mantissa_bits); },
                            [=](const std::tuple<Array>& v, const std::tuple<Array>& t) {
                              return std::make_pair(reduce_precision_value(std::get<0>(v), exponent_bits, mantissa_bits),
                                                    std::get<0>(t));
                            });
  return f(x);
}

namespace {

/// cases[lo..hi) selected by `which` as XLA lowers select_n: a balanced tree of selects on
/// which < mid (so values below range pick the first case, above it the last).
Array select_tree(const Array& which, const std::vector<Array>& cases, size_t lo, size_t hi) {
  if (hi - lo == 1) return cases[lo];
  const size_t mid = lo + (hi - lo) / 2;
  const Array pred = which < Array(Scalar(int64_t(mid), which.dtype()));
  return ops::bind1(ops::select_n_p, {pred, select_tree(which, cases, mid, hi), select_tree(which, cases, lo, mid)});
}

}  // namespace

Array select_n(const Array& which, const std::vector<Array>& cases) {
  if (cases.empty()) throw ValueError("select_n: no cases; pass at least one array");
  for (const Array& c : cases)
    if (c.dtype() != cases[0].dtype() || c.shape() != cases[0].shape())
      throw ShapeError("select_n: the cases must have one shape and dtype, got " + cases[0].aval().to_string() +
                       " and " + c.aval().to_string() + "; broadcast or convert them first");
  if (which.ndim() != 0 && which.shape() != cases[0].shape())
    throw ShapeError("select_n: `which` has shape " + shape_to_string(which.shape()) + " but the cases have " +
                     shape_to_string(cases[0].shape()) + "; pass a scalar or an array of the cases' shape");
  if (is_bool(which.dtype())) {
    if (cases.size() > 2)
      throw ValueError("select_n: a boolean `which` selects from 2 cases, got " + std::to_string(cases.size()) +
                       "; pass an int32 `which`");
    if (cases.size() == 1) return cases[0];
    return ops::bind1(ops::select_n_p, {which, cases[0], cases[1]});
  }
  if (which.dtype() != DType::int32)
    throw DTypeError("select_n: `which` has dtype " + dt(which.dtype()) + "; expected bool or int32");
  return select_tree(which, cases, 0, cases.size());
}

// ---- reductions ----

namespace {
Array arg_reduce(const char* op, bool is_max, const Array& x, int64_t axis, DType index_dtype) {
  if (!is_integer(index_dtype))
    throw DTypeError(std::string(op) + ": index_dtype " + dt(index_dtype) + " is not an integer dtype; use int32");
  const int64_t a = ops::canonicalize_axis(op, axis, x.ndim());
  if (x.dim(a) == 0)
    throw ValueError(std::string(op) + ": axis " + std::to_string(axis) + " of shape " + shape_to_string(x.shape()) +
                     " is empty; there is no index to return");
  return (is_max ? tessel::argmax(x, a) : tessel::argmin(x, a)).astype(index_dtype);
}
}  // namespace

Array argmax(const Array& operand, int64_t axis, DType index_dtype) {
  return arg_reduce("argmax", true, operand, axis, index_dtype);
}
Array argmin(const Array& operand, int64_t axis, DType index_dtype) {
  return arg_reduce("argmin", false, operand, axis, index_dtype);
}

std::vector<Array> reduce(const std::vector<Array>& operands, const std::vector<Array>& init_values,
                          const ReduceComputation& computation, const Axes& dimensions) {
  const std::string op = "reduce";
  if (operands.empty()) throw ValueError(op + ": no operands; pass at least one array");
  if (init_values.size() != operands.size())
    throw ValueError(op + ": " + std::to_string(operands.size()) + " operands need as many init_values, got " +
                     std::to_string(init_values.size()));
  for (size_t i = 0; i < operands.size(); ++i) {
    if (operands[i].shape() != operands[0].shape())
      throw ShapeError(op + ": the operands must have one shape, got " + shape_to_string(operands[0].shape()) + " and " +
                       shape_to_string(operands[i].shape()));
    if (init_values[i].ndim() != 0)
      throw ShapeError(op + ": init_values[" + std::to_string(i) + "] has shape " +
                       shape_to_string(init_values[i].shape()) + "; each init value must be a scalar");
  }
  const Axes dims = ops::canonicalize_axes(op, dimensions, operands[0].ndim(), false);
  std::vector<Array> inits;
  for (size_t i = 0; i < operands.size(); ++i) inits.push_back(init_values[i].astype(operands[i].dtype()));
  const auto call = [&](const std::vector<Array>& a, const std::vector<Array>& b) {
    std::vector<Array> r = computation(a, b);
    if (r.size() != a.size())
      throw ValueError(op + ": the computation returned " + std::to_string(r.size()) + " arrays for " +
                       std::to_string(a.size()) + " operands; return one per operand");
    for (size_t i = 0; i < r.size(); ++i)
      if (r[i].dtype() != a[i].dtype())
        throw DTypeError(op + ": the computation turned operand " + std::to_string(i) + " of dtype " + dt(a[i].dtype()) +
                         " into " + dt(r[i].dtype()) + "; it must keep the operands' dtypes");
    return r;
  };
  std::vector<Array> vals = operands;
  // Fold the axes from the last, so the earlier ones keep their numbers; each by halving.
  for (auto it = dims.rbegin(); it != dims.rend(); ++it) {
    const int64_t a = *it;
    while (vals[0].dim(a) > 1) {
      const int64_t n = vals[0].dim(a);
      std::vector<Array> lo, hi;
      for (size_t i = 0; i < vals.size(); ++i) {
        Array v = vals[i];
        if (n % 2 == 1) {
          Shape s = v.shape();
          s[size_t(a)] = 1;
          v = concatenate({v, broadcast_to(inits[i], s)}, a);
        }
        lo.push_back(slice_in_dim(v, 0, v.dim(a), 2, a));
        hi.push_back(slice_in_dim(v, 1, v.dim(a), 2, a));
      }
      vals = call(lo, hi);
    }
    for (size_t i = 0; i < vals.size(); ++i) {
      if (vals[i].dim(a) == 0) {
        Shape s = vals[i].shape();
        s.erase(s.begin() + a);
        vals[i] = broadcast_to(inits[i], s);
      } else {
        vals[i] = squeeze(vals[i], Axes{a});
      }
    }
  }
  // The init value enters once (XLA's reduce starts from it).
  std::vector<Array> init_b;
  for (size_t i = 0; i < vals.size(); ++i) init_b.push_back(broadcast_to(inits[i], vals[i].shape()));
  return call(init_b, vals);
}

Array reduce(const Array& operand, const Array& init_value,
             const std::function<Array(const Array&, const Array&)>& computation, const Axes& dimensions) {
  return lax::reduce(std::vector<Array>{operand}, std::vector<Array>{init_value},
                [&](const std::vector<Array>& a, const std::vector<Array>& b) {
                  return std::vector<Array>{computation(a[0], b[0])};
                },
                dimensions)[0];
}

Array reduce_xor(const Array& operand, const Axes& axes) {
  if (!is_integer(operand.dtype()) && !is_bool(operand.dtype()))
    throw DTypeError("reduce_xor: dtype " + dt(operand.dtype()) + " is not supported; expected integers or bool");
  return lax::reduce(operand, Array(Scalar(0, operand.dtype())),
                [](const Array& a, const Array& b) { return bitwise_xor(a, b); }, axes);
}

// ---- scans and maps ----

namespace {

/// a and b interleaved along `axis` (a first), as JAX does: both padded with zeros between
/// their elements, then added (or'ed for bool).
Array interleave(const Array& a, const Array& b, int64_t axis) {
  const bool same = a.dim(axis) == b.dim(axis);
  std::vector<std::array<int64_t, 3>> pa(size_t(a.ndim()), {0, 0, 0}), pb = pa;
  pa[size_t(axis)] = {0, same ? 1 : 0, 1};
  pb[size_t(axis)] = {1, same ? 0 : 1, 1};
  const Array x = lax_pad(a, Scalar(0, a.dtype()), pa), y = lax_pad(b, Scalar(0, b.dtype()), pb);
  return is_bool(a.dtype()) ? bitwise_or(x, y) : x + y;
}

std::vector<Array> slices(const std::vector<Array>& xs, int64_t start, int64_t stop_from_end, int64_t stride,
                          int64_t axis) {
  std::vector<Array> r;
  for (const Array& x : xs) r.push_back(slice_in_dim(x, start, x.dim(axis) - stop_from_end, stride, axis));
  return r;
}

}  // namespace

std::vector<Array> associative_scan(const AssociativeFn& fn, const std::vector<Array>& elems, bool reverse,
                                    int64_t axis_in) {
  const std::string op = "associative_scan";
  if (elems.empty()) throw ValueError(op + ": no arrays to scan; pass at least one");
  const int64_t axis = ops::canonicalize_axis(op, axis_in, elems[0].ndim());
  for (const Array& e : elems)
    if (e.ndim() <= axis || e.dim(axis) != elems[0].dim(axis))
      throw ShapeError(op + ": the arrays must have one length along axis " + std::to_string(axis) + ", got " +
                       shape_to_string(elems[0].shape()) + " and " + shape_to_string(e.shape()));
  const auto combine = [&](const std::vector<Array>& a, const std::vector<Array>& b) {
    std::vector<Array> c = fn(a, b);
    if (c.size() != a.size())
      throw ValueError(op + ": fn returned " + std::to_string(c.size()) + " arrays for " + std::to_string(a.size()) +
                       " inputs; return one per input");
    return c;
  };
  std::function<std::vector<Array>(const std::vector<Array>&)> scan_rec = [&](const std::vector<Array>& xs) {
    const int64_t n = xs[0].dim(axis);
    if (n < 2) return xs;
    const std::vector<Array> odd = scan_rec(combine(slices(xs, 0, 1, 2, axis), slices(xs, 1, 0, 2, axis)));
    std::vector<Array> even = n % 2 == 0 ? combine(slices(odd, 0, 1, 1, axis), slices(xs, 2, 0, 2, axis))
                                         : combine(odd, slices(xs, 2, 0, 2, axis));
    std::vector<Array> out;
    for (size_t i = 0; i < xs.size(); ++i)
      out.push_back(interleave(concatenate({slice_in_dim(xs[i], 0, 1, 1, axis), even[i]}, axis), odd[i], axis));
    return out;
  };
  std::vector<Array> xs = elems;
  if (reverse)
    for (Array& x : xs) x = flip(x, Axes{axis});
  std::vector<Array> r = scan_rec(xs);
  if (reverse)
    for (Array& x : r) x = flip(x, Axes{axis});
  return r;
}

Array associative_scan(const std::function<Array(const Array&, const Array&)>& fn, const Array& elems, bool reverse,
                       int64_t axis) {
  return associative_scan([&](const std::vector<Array>& a, const std::vector<Array>& b) {
    return std::vector<Array>{fn(a[0], b[0])};
  }, std::vector<Array>{elems}, reverse, axis)[0];
}

Array map(const std::function<Array(const Array&)>& f, const Array& xs, std::optional<int64_t> batch_size) {
  if (xs.ndim() == 0) throw ShapeError("map: xs is a scalar; map runs over a leading axis");
  const auto step = [&](const std::tuple<>& c, const Array& x) { return std::make_pair(c, f(x)); };
  if (!batch_size) return scan(step, std::tuple<>{}, xs).second;
  if (*batch_size < 1) throw ValueError("map: batch_size " + std::to_string(*batch_size) + " must be at least 1");
  const int64_t n = xs.dim(0), b = *batch_size, full = n / b * b;
  const auto vf = vmap([&](const Array& x) { return f(x); });
  std::vector<Array> parts;
  if (full > 0) {
    Shape s = xs.shape();
    s[0] = b;
    s.insert(s.begin(), full / b);
    const Array batched = reshape(slice_in_dim(xs, 0, full), s);
    const auto bstep = [&](const std::tuple<>& c, const Array& x) { return std::make_pair(c, Array(vf(x))); };
    const Array ys = scan(bstep, std::tuple<>{}, batched).second;
    Shape ys_shape = ys.shape();
    ys_shape.erase(ys_shape.begin());
    ys_shape[0] = full;
    parts.push_back(reshape(ys, ys_shape));
  }
  if (full < n) parts.push_back(vf(slice_in_dim(xs, full, n)));
  return parts.size() == 1 ? parts[0] : concatenate(parts, 0);
}

// ---- shape ----

Array broadcast(const Array& operand, const Shape& sizes) {
  Shape out = sizes;
  out.insert(out.end(), operand.shape().begin(), operand.shape().end());
  Axes dims(size_t(operand.ndim()));
  std::iota(dims.begin(), dims.end(), int64_t(sizes.size()));
  return broadcast_in_dim(operand, out, dims);
}

Array broadcast_to_rank(const Array& x, int64_t rank) {
  if (rank < x.ndim())
    throw ValueError("broadcast_to_rank: rank " + std::to_string(rank) + " is below the rank " +
                     std::to_string(x.ndim()) + " of shape " + shape_to_string(x.shape()) + "; pass at least that");
  return broadcast(x, Shape(size_t(rank - x.ndim()), 1));
}

Array broadcast_like(const Array& arr, const Array& like_arr) { return broadcast_to(arr, like_arr.shape()); }

Array collapse(const Array& operand, int64_t start_dimension, std::optional<int64_t> stop_dimension) {
  const int64_t nd = operand.ndim();
  const auto norm = [nd](int64_t d) { return std::clamp<int64_t>(d < 0 ? d + nd : d, 0, nd); };
  const int64_t lo = norm(start_dimension), hi = stop_dimension ? norm(*stop_dimension) : nd;
  if (hi < lo)
    throw ValueError("collapse: stop_dimension " + std::to_string(stop_dimension.value_or(nd)) +
                     " comes before start_dimension " + std::to_string(start_dimension) + " in shape " +
                     shape_to_string(operand.shape()));
  const Shape& s = operand.shape();
  Shape out(s.begin(), s.begin() + lo);
  out.push_back(std::accumulate(s.begin() + lo, s.begin() + hi, int64_t(1), std::multiplies<>()));
  out.insert(out.end(), s.begin() + hi, s.end());
  return reshape(operand, out);
}

Array empty(const Shape& shape, DType dtype) { return tessel::empty(shape, dtype); }

std::vector<Array> optimization_barrier(const std::vector<Array>& operands) { return operands; }

// ---- slicing ----

Array index_in_dim(const Array& operand, int64_t index, int64_t axis_in, bool keepdims) {
  const int64_t axis = ops::canonicalize_axis("index_in_dim", axis_in, operand.ndim());
  const int64_t n = operand.dim(axis), i = index < 0 ? index + n : index;
  if (i < 0 || i >= n)
    throw IndexError("index_in_dim: index " + std::to_string(index) + " is out of bounds for axis " +
                     std::to_string(axis) + " of size " + std::to_string(n));
  const Array r = slice_in_dim(operand, i, i + 1, 1, axis);
  return keepdims ? r : squeeze(r, Axes{axis});
}

namespace {
std::vector<Array> starts_at(const Array& x, int64_t axis, const Array& start) {
  if (start.ndim() != 0 || !is_integer(start.dtype()))
    throw DTypeError("dynamic slicing: the start index must be an integer scalar, got " + start.aval().to_string() +
                     "; pass e.g. Array(int32_t(i))");
  std::vector<Array> st(size_t(x.ndim()), zeros({}, start.dtype()));
  st[size_t(axis)] = start;
  return st;
}
}  // namespace

Array dynamic_slice_in_dim(const Array& operand, const Array& start_index, int64_t slice_size, int64_t axis_in) {
  const int64_t axis = ops::canonicalize_axis("dynamic_slice_in_dim", axis_in, operand.ndim());
  Shape sizes = operand.shape();
  sizes[size_t(axis)] = slice_size;
  return dynamic_slice(operand, starts_at(operand, axis, start_index), sizes);
}

Array dynamic_index_in_dim(const Array& operand, const Array& index, int64_t axis_in, bool keepdims) {
  const int64_t axis = ops::canonicalize_axis("dynamic_index_in_dim", axis_in, operand.ndim());
  const Array r = dynamic_slice_in_dim(operand, index, 1, axis);
  return keepdims ? r : squeeze(r, Axes{axis});
}

Array dynamic_update_slice_in_dim(const Array& operand, const Array& update, const Array& start_index, int64_t axis_in) {
  const int64_t axis = ops::canonicalize_axis("dynamic_update_slice_in_dim", axis_in, operand.ndim());
  return dynamic_update_slice(operand, update, starts_at(operand, axis, start_index));
}

Array dynamic_update_index_in_dim(const Array& operand, const Array& update, const Array& index, int64_t axis_in) {
  const int64_t axis = ops::canonicalize_axis("dynamic_update_index_in_dim", axis_in, operand.ndim());
  const Array u = update.ndim() == operand.ndim() - 1 ? expand_dims(update, Axes{axis}) : update;
  return dynamic_update_slice_in_dim(operand, u, index, axis);
}

// ---- products ----

Array batch_matmul(const Array& lhs, const Array& rhs) {
  const int64_t nd = lhs.ndim();
  if (nd < 2 || rhs.ndim() != nd)
    throw ShapeError("batch_matmul: operands must have one rank of at least 2, got " + lhs.aval().to_string() + " and " +
                     rhs.aval().to_string());
  for (int64_t d = 0; d < nd - 2; ++d)
    if (lhs.dim(d) != rhs.dim(d))
      throw ShapeError("batch_matmul: batch dimensions differ: " + shape_to_string(lhs.shape()) + " and " +
                       shape_to_string(rhs.shape()) + "; broadcast them first");
  Axes batch(size_t(nd - 2));
  std::iota(batch.begin(), batch.end(), 0);
  return dot_general(lhs, rhs, {.lhs_contracting = {nd - 1}, .rhs_contracting = {nd - 2}, .lhs_batch = batch, .rhs_batch = batch});
}

namespace {

/// One-hot (batch..., n, g) of the group of each of `n` positions split in consecutive
/// groups of `group_sizes` (integers (batch..., g)); positions after the last group match
/// none.
Array group_onehot(const std::string& op, const Array& group_sizes, int64_t n) {
  if (group_sizes.ndim() < 1 || !is_integer(group_sizes.dtype()))
    throw ShapeError(op + ": group_sizes must be an integer array (batch..., g), got " + group_sizes.aval().to_string());
  const int64_t nd = group_sizes.ndim(), g = group_sizes.shape().back();
  const Array ends = expand_dims(cumsum(group_sizes.astype(DType::int32), nd - 1), Axes{nd - 1});  // (..., 1, g)
  const Array pos = iota(DType::int32, {n, 1}, 0);
  const Array gid = sum((pos >= ends).astype(DType::int32), {nd});  // (..., n)
  return expand_dims(gid, Axes{nd}) == iota(DType::int32, {1, g}, 1);
}

std::string dims_str(const Axes& a) { return shape_to_string(a); }

}  // namespace

Array ragged_dot_general(const Array& lhs, const Array& rhs, const Array& group_sizes,
                         const RaggedDotDimensionNumbers& dn, std::optional<DType> preferred) {
  const std::string op = "ragged_dot_general";
  if (dn.lhs_ragged_dimensions.size() != 1)
    throw ValueError(op + ": lhs_ragged_dimensions " + dims_str(dn.lhs_ragged_dimensions) + " must name one dimension");
  const DotDims& dd = dn.dot_dimension_numbers;
  const int64_t rd = ops::canonicalize_axis(op, dn.lhs_ragged_dimensions[0], lhs.ndim());
  const int64_t g = group_sizes.ndim() >= 1 ? group_sizes.shape().back() : 0;
  const int64_t nb = int64_t(dd.lhs_batch.size()), gs_batch = group_sizes.ndim() - 1;
  const auto in = [](const Axes& a, int64_t d) { return std::find(a.begin(), a.end(), d) != a.end(); };
  if (in(dd.lhs_batch, rd)) {
    if (!dn.rhs_group_dimensions.empty())
      throw ValueError(op + ": a ragged batch dimension takes no rhs_group_dimensions, got " +
                       dims_str(dn.rhs_group_dimensions));
    return dot_general(lhs, rhs, dd, preferred);
  }
  // (group_sizes batch..., n, g): which group each ragged position belongs to.
  const Array onehot = group_onehot(op, group_sizes, lhs.dim(rd));
  if (in(dd.lhs_contracting, rd)) {
    if (gs_batch != 0)
      throw ShapeError(op + ": a ragged contracting dimension takes 1-D group_sizes, got " + group_sizes.aval().to_string());
    // Ragged contraction: group i contracts only its positions; the result leads with g.
    if (!dn.rhs_group_dimensions.empty())
      throw ValueError(op + ": a ragged contracting dimension takes no rhs_group_dimensions, got " +
                       dims_str(dn.rhs_group_dimensions));
    Shape ms(size_t(lhs.ndim()) + 1, 1);
    ms[size_t(rd)] = lhs.dim(rd);
    ms.back() = g;
    const Array mask = broadcast_in_dim(onehot, ms, {int64_t(rd), lhs.ndim()}).astype(lhs.dtype());
    Shape es = lhs.shape();
    es.push_back(g);
    const Array lhs_g = broadcast_in_dim(lhs, es, [&] { Axes a(size_t(lhs.ndim())); std::iota(a.begin(), a.end(), 0); return a; }()) * mask;
    Array out = dot_general(lhs_g, rhs, dd, preferred);  // (batch..., lhs free..., g, rhs free...)
    const int64_t lhs_free = lhs.ndim() - nb - int64_t(dd.lhs_contracting.size());
    return moveaxis(out, nb + lhs_free, 0);
  }
  // Ragged non-contracting dimension: rhs's group dimension picks the group's matrix.
  if (dn.rhs_group_dimensions.size() != 1)
    throw ValueError(op + ": a ragged non-contracting dimension needs one rhs_group_dimensions entry, got " +
                     dims_str(dn.rhs_group_dimensions));
  const int64_t gd = ops::canonicalize_axis(op, dn.rhs_group_dimensions[0], rhs.ndim());
  if (rhs.dim(gd) != g)
    throw ShapeError(op + ": rhs's group dimension " + std::to_string(gd) + " has size " + std::to_string(rhs.dim(gd)) +
                     " but group_sizes has " + std::to_string(g) + " groups");
  // group_sizes's leading dimensions, if any, are the dot's batch dimensions (in order).
  if (gs_batch != 0 && gs_batch != nb)
    throw ShapeError(op + ": group_sizes " + group_sizes.aval().to_string() + " must be (g,) or (batch..., g) with the " +
                     std::to_string(nb) + " batch dimensions of the product");
  for (int64_t b = 0; b < gs_batch; ++b)
    if (group_sizes.dim(b) != lhs.dim(dd.lhs_batch[size_t(b)]))
      throw ShapeError(op + ": group_sizes " + group_sizes.aval().to_string() + " and lhs " + lhs.aval().to_string() +
                       " differ in batch dimension " + std::to_string(b));
  Array full = dot_general(lhs, rhs, dd, preferred);  // (batch..., lhs free..., rhs free incl. g...)
  // Positions of the ragged dim among lhs's free dims and of g among rhs's free dims.
  int64_t lpos = nb, rpos = 0;
  for (int64_t d = 0; d < rd; ++d)
    if (!in(dd.lhs_batch, d) && !in(dd.lhs_contracting, d)) ++lpos;
  const int64_t lhs_free = lhs.ndim() - nb - int64_t(dd.lhs_contracting.size());
  for (int64_t d = 0; d < gd; ++d)
    if (!in(dd.rhs_batch, d) && !in(dd.rhs_contracting, d)) ++rpos;
  const int64_t gpos = nb + lhs_free + rpos;
  Shape ms(size_t(full.ndim()), 1);
  ms[size_t(lpos)] = lhs.dim(rd);
  ms[size_t(gpos)] = g;
  for (int64_t b = 0; b < gs_batch; ++b) ms[size_t(b)] = group_sizes.dim(b);
  Axes mdims(static_cast<size_t>(gs_batch));
  std::iota(mdims.begin(), mdims.end(), 0);
  mdims.push_back(lpos);
  mdims.push_back(gpos);
  const Array mask = broadcast_in_dim(onehot, ms, mdims);
  return sum(where(mask, full, zeros({}, full.dtype())), {gpos});
}

Array ragged_dot(const Array& lhs, const Array& rhs, const Array& group_sizes, std::optional<DType> preferred) {
  if (lhs.ndim() != 2 || rhs.ndim() != 3)
    throw ShapeError("ragged_dot: expected lhs (m, k) and rhs (g, k, n), got " + lhs.aval().to_string() + " and " +
                     rhs.aval().to_string());
  RaggedDotDimensionNumbers dn;
  dn.dot_dimension_numbers.lhs_contracting = {1};
  dn.dot_dimension_numbers.rhs_contracting = {1};
  dn.lhs_ragged_dimensions = {0};
  dn.rhs_group_dimensions = {0};
  return ragged_dot_general(lhs, rhs, group_sizes, dn, preferred);
}

namespace {
std::pair<Array, Array> approx_k(const char* op, bool is_max, const Array& x, int64_t k, int64_t dim,
                                 double recall_target) {
  const int64_t axis = ops::canonicalize_axis(op, dim, x.ndim());
  if (k <= 0 || k > x.dim(axis))
    throw ValueError(std::string(op) + ": k " + std::to_string(k) + " must be in [1, " + std::to_string(x.dim(axis)) +
                     "] (the size of reduction_dimension " + std::to_string(dim) + ")");
  if (!(recall_target > 0 && recall_target <= 1))
    throw ValueError(std::string(op) + ": recall_target " + std::to_string(recall_target) + " must be in (0, 1]");
  const Array m = moveaxis(x, axis, -1);
  Array vals, idx;
  if (is_max) {
    std::tie(vals, idx) = top_k(m, k);
  } else {
    idx = slice_in_dim(argsort(m, -1, true), 0, k, 1, m.ndim() - 1).astype(DType::int32);
    vals = take_along_axis(m, idx, -1);
  }
  return {moveaxis(vals, -1, axis), moveaxis(idx, -1, axis)};
}
}  // namespace

std::pair<Array, Array> approx_max_k(const Array& operand, int64_t k, int64_t reduction_dimension, double recall_target,
                                     int64_t, bool) {
  return approx_k("approx_max_k", true, operand, k, reduction_dimension, recall_target);
}
std::pair<Array, Array> approx_min_k(const Array& operand, int64_t k, int64_t reduction_dimension, double recall_target,
                                     int64_t, bool) {
  return approx_k("approx_min_k", false, operand, k, reduction_dimension, recall_target);
}

// ---- random bits ----

namespace {
/// Threefry-2x32 with 20 rounds (Salmon et al. 2011) on arrays of uint32 words, as XLA's
/// ThreeFry bit generator applies it: key (k0, k1), counters (x0, x1).
std::pair<Array, Array> threefry2x32(Array x0, Array x1, const Array& k0, const Array& k1) {
  const DType u32 = DType::uint32;
  constexpr int kRotations[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  const Array k2 = scalar_of(0x1BD11BDAu, u32) ^ k0 ^ k1;
  const Array ks[3] = {k0, k1, k2};
  x0 = x0 + k0;
  x1 = x1 + k1;
  for (int block = 0; block < 5; ++block) {
    for (int r = 0; r < 4; ++r) {
      const int d = kRotations[(block % 2) * 4 + r];
      x0 = x0 + x1;
      x1 = left_shift(x1, scalar_of(uint64_t(d), u32)) | shift_right_unsigned(x1, 32 - d);
      x1 = x0 ^ x1;
    }
    x0 = x0 + ks[(block + 1) % 3];
    x1 = x1 + ks[(block + 2) % 3] + scalar_of(uint64_t(block + 1), u32);
  }
  return {x0, x1};
}

/// rng_bit_generator with RandomAlgorithm::kThreeFry, bit for bit with XLA: the key's words
/// (k0 | k1 << 32, s0 | s1 << 32) are the Threefry key and a 64-bit counter state; element i
/// hashes the counter state + i (low and high words). 32-bit outputs hash half as many
/// counters and interleave the two output words along the first even dimension (else the
/// longest, rounded up), as XLA splits the shape; the new state is state + counters used.
std::pair<Array, Array> threefry_bit_generator(const Array& key, const Shape& shape, DType dtype) {
  const DType u32 = DType::uint32, u64 = DType::uint64;
  if (dtype != u32 && dtype != u64)
    throw DTypeError("rng_bit_generator: the ThreeFry algorithm generates uint32 or uint64 bits (as XLA's), got " +
                     std::string(dtype_name(dtype)) + "; generate uint32 and convert");
  const auto word = [&](int64_t i) { return index_in_dim(key, i, 0, false); };
  const Array state = word(2).astype(u64) | left_shift(word(3).astype(u64), scalar_of(32, u64));
  // The counters' shape: the whole shape for 64-bit outputs, else half of it along split.
  Shape counters = shape;
  int64_t split = -1;
  if (dtype == u32) {
    if (shape.empty()) {
      counters = {1};
    } else {
      for (size_t i = 0; i < shape.size() && split < 0; ++i)
        if (shape[i] % 2 == 0) split = int64_t(i);
      if (split < 0) split = int64_t(std::max_element(shape.begin(), shape.end()) - shape.begin());
      counters[size_t(split)] = (shape[size_t(split)] + 1) / 2;
    }
  }
  const int64_t n = std::accumulate(counters.begin(), counters.end(), int64_t(1), std::multiplies<>());
  const Array ctr = reshape(state + iota(u64, {n}, 0), counters);
  auto [y0, y1] = threefry2x32(ctr.astype(u32), shift_right_unsigned(ctr, 32).astype(u32), word(0), word(1));
  Array bits;
  if (dtype == u64) {
    bits = y0.astype(u64) | left_shift(y1.astype(u64), scalar_of(32, u64));
  } else if (shape.empty()) {
    bits = reshape(y0, {});
  } else {
    Shape rounded = shape;
    rounded[size_t(split)] = counters[size_t(split)] * 2;
    bits = reshape(stack({y0, y1}, split + 1), rounded);
    if (rounded != shape) bits = slice_in_dim(bits, 0, shape[size_t(split)], 1, split);
  }
  const Array next = state + scalar_of(uint64_t(n), u64);
  const Array new_key = stack({word(0), word(1), next.astype(u32), shift_right_unsigned(next, 32).astype(u32)});
  return {new_key, bits};
}
}  // namespace

std::pair<Array, Array> rng_bit_generator(const Array& key, const Shape& shape, DType dtype, RandomAlgorithm algorithm) {
  const std::string op = "rng_bit_generator";
  if (key.dtype() != DType::uint32 || key.shape() != Shape{4})
    throw ShapeError(op + ": the key must be uint32[4] (XLA's Philox state), got " + key.aval().to_string());
  if (!is_unsigned_int(dtype))
    throw DTypeError(op + ": dtype " + dt(dtype) + " is not supported; expected uint8, uint16, uint32 or uint64");
  if (algorithm == RandomAlgorithm::kThreeFry) return threefry_bit_generator(key, shape, dtype);
  const DType u32 = DType::uint32, u64 = DType::uint64;
  const int64_t n = std::accumulate(shape.begin(), shape.end(), int64_t(1), std::multiplies<>());
  const int64_t words = n * (itemsize(dtype) == 8 ? 2 : 1), blocks = (words + 3) / 4;
  const auto word = [&](int64_t i) { return index_in_dim(key, i, 0, false); };
  const auto c32 = [&](uint64_t v) { return scalar_of(v, u32); };
  const auto lo = [&](const Array& v) { return v.astype(u32); };
  const auto hi = [&](const Array& v) { return shift_right_unsigned(v, 32).astype(u32); };
  const Array counter = word(2).astype(u64) | left_shift(word(3).astype(u64), scalar_of(32, u64));
  // The 128-bit counters: the key's counter in the low half, the key itself in the high
  // half, plus the block index (carrying into the high half).
  const Array ctr = counter + iota(u64, {blocks}, 0);
  const Array key64 = word(0).astype(u64) | left_shift(word(1).astype(u64), scalar_of(32, u64));
  const Array high = key64 + (ctr < counter).astype(u64);
  Array k0 = word(0), k1 = word(1);
  Array c0 = lo(ctr), c1 = hi(ctr), c2 = lo(high), c3 = hi(high);
  for (int round = 0; round < 10; ++round) {
    const Array p0 = scalar_of(0xD2511F53u, u64) * c0.astype(u64), p1 = scalar_of(0xCD9E8D57u, u64) * c2.astype(u64);
    c0 = hi(p1) ^ c1 ^ k0;
    c1 = lo(p1);
    c2 = hi(p0) ^ c3 ^ k1;
    c3 = lo(p0);
    k0 = k0 + c32(0x9E3779B9u);
    k1 = k1 + c32(0xBB67AE85u);
  }
  const Array all = slice_in_dim(ravel(stack({c0, c1, c2, c3}, 1)), 0, words);
  Array bits;
  if (itemsize(dtype) == 8) {
    const Array pairs = reshape(all, {n, 2});
    bits = index_in_dim(pairs, 0, 1, false).astype(u64) | left_shift(index_in_dim(pairs, 1, 1, false).astype(u64), scalar_of(32, u64));
  } else {
    bits = all.astype(dtype);
  }
  const Array next = counter + scalar_of(uint64_t(blocks), u64);
  const Array new_key = stack({word(0), word(1), lo(next), hi(next)});
  return {new_key, reshape(bits, shape)};
}

// ---- collectives ----

int64_t axis_size(const AxisNames& axis_name) { return detail::collective_group_size("axis_size", axis_name.names()); }

Array pbroadcast(const Array& x, const AxisNames& axis_name, int64_t source) {
  const int64_t n = axis_size(axis_name);
  if (source < 0 || source >= n)
    throw ValueError("pbroadcast: source " + std::to_string(source) + " is not a device index of the axes (size " +
                     std::to_string(n) + ")");
  return index_in_dim(all_gather(x, axis_name), source, 0, false);
}

Array pcast(const Array& x, const AxisNames& axis_name, const std::string& to) {
  if (to != "varying" && to != "invariant" && to != "unreduced" && to != "reduced")
    throw ValueError("pcast: to='" + to + "'; expected \"varying\", \"invariant\", \"unreduced\" or \"reduced\"");
  (void)axis_size(axis_name);  // checks that the axes are bound
  return x;
}

Array pshuffle(const Array& x, const AxisNames& axis_name, const std::vector<int64_t>& perm) {
  const int64_t n = axis_size(axis_name);
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> want(static_cast<size_t>(n));
  std::iota(want.begin(), want.end(), 0);
  if (sorted != want)
    throw ValueError("pshuffle: perm " + shape_to_string(perm) + " is not a permutation of the " + std::to_string(n) +
                     " device indices");
  std::vector<std::pair<int64_t, int64_t>> pairs;
  for (int64_t i = 0; i < n; ++i) pairs.push_back({perm[size_t(i)], i});
  return ppermute(x, axis_name, pairs);
}

Array pswapaxes(const Array& x, const AxisNames& axis_name, int64_t axis) {
  return all_to_all(x, axis_name, axis, axis);
}

Array ragged_all_to_all(const Array& operand, const Array& output, const Array& input_offsets, const Array& send_sizes,
                        const Array& output_offsets, const Array& recv_sizes, const AxisNames& axis_name) {
  const std::string op = "ragged_all_to_all";
  const int64_t n = axis_size(axis_name);
  for (const Array* a : {&input_offsets, &send_sizes, &output_offsets, &recv_sizes})
    if (a->ndim() != 1 || !is_integer(a->dtype()) || a->dim(0) != input_offsets.dim(0))
      throw ShapeError(op + ": offsets and sizes must be 1-D integer arrays of one length, got " +
                       input_offsets.aval().to_string() + ", " + send_sizes.aval().to_string() + ", " +
                       output_offsets.aval().to_string() + " and " + recv_sizes.aval().to_string());
  const int64_t k_total = input_offsets.dim(0);
  if (k_total % n != 0)
    throw ShapeError(op + ": " + std::to_string(k_total) + " slices do not divide among the " + std::to_string(n) +
                     " devices of the axes; pass a multiple of the group size");
  if (operand.ndim() < 1 || output.ndim() != operand.ndim() || operand.dtype() != output.dtype() ||
      !std::equal(operand.shape().begin() + 1, operand.shape().end(), output.shape().begin() + 1))
    throw ShapeError(op + ": operand " + operand.aval().to_string() + " and output " + output.aval().to_string() +
                     " must have one dtype and the same shape after the leading axis");
  if (operand.dim(0) == 0) return output;
  const int64_t per_device = k_total / n, m = output.dim(0);
  const Array all_operand = all_gather(operand, axis_name);
  const Array all_in = all_gather(input_offsets.astype(DType::int32), axis_name);
  const Array all_out = all_gather(output_offsets.astype(DType::int32), axis_name);
  const Array me = axis_index(axis_name);
  const Array rows = iota(DType::int32, {m}, 0);
  Array result = output;
  for (int64_t src = 0; src < n; ++src) {
    const Array data = index_in_dim(all_operand, src, 0, false);
    for (int64_t t = 0; t < per_device; ++t) {
      // Slice me * per_device + t of device src comes here.
      const Array i = me * Array(int32_t(per_device)) + Array(int32_t(t));
      const Array in_off = dynamic_index_in_dim(index_in_dim(all_in, src, 0, false), i, 0, false);
      const Array out_off = dynamic_index_in_dim(index_in_dim(all_out, src, 0, false), i, 0, false);
      const Array size = index_in_dim(recv_sizes, src * per_device + t, 0, false).astype(DType::int32);
      const Array within = rows - out_off;
      const Array hit = (within >= Array(int32_t(0))) & (within < size);
      const Array src_rows = clip(in_off + within, Array(int32_t(0)), Array(int32_t(operand.dim(0) - 1)));
      Shape mask_shape = output.shape();
      const Array mask = broadcast_in_dim(hit, mask_shape, {0});
      result = where(mask, take(data, src_rows, 0), result);
    }
  }
  return result;
}

// ---- solves ----

Array custom_linear_solve(const linalg::LinearOperator& matvec, const std::vector<Array>& params, const Array& b,
                          const linalg::LinearSolver& solve, const linalg::LinearSolver& transpose_solve, bool symmetric) {
  return linalg::custom_linear_solve(matvec, params, b, solve, transpose_solve, symmetric);
}

Array custom_root(const linalg::RootFunction& f, const std::vector<Array>& params, const Array& initial_guess,
                  const linalg::RootSolver& solve, const linalg::LinearSolver& tangent_solve) {
  return linalg::custom_root(f, params, initial_guess, solve, tangent_solve);
}

}  // namespace tessel::lax
