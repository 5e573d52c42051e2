// jax.numpy's selection and scatter helpers (compress, extract, choose, place, put,
// put_along_axis, trim_zeros, setxor1d), bit packing, and the dtype queries, composed of
// gathers, scatters and sorts (include/tessel/numpy.h).
#include <algorithm>

#include "numpy/numpy_util.h"
#include "tessel/error.h"
#include "tessel/numpy.h"
#include "tessel/ops.h"
#include "tessel/sort.h"

namespace tessel {

namespace {

int64_t rank(const Array& x) { return int64_t(x.shape().size()); }

/// v flattened and repeated cyclically to n elements (JAX's _tile_to_size).
Array tile_to_size(const Array& v, int64_t n) {
  const Array flat = ravel(v);
  const int64_t m = flat.shape()[0];
  if (m == n) return flat;
  return slice_in_dim(tile(flat, {(n + m - 1) / m}), 0, n);
}

/// x's elements as host booleans (x != 0); ConcretizationError naming `op` under a trace.
std::vector<bool> concrete_mask(const std::string& op, const Array& x) {
  if (x.is_tracer())
    throw ConcretizationError(op + ": the result's size depends on the values, which are not known under jit/vmap/grad; "
                              "call it outside the transformation or pass a static size");
  const auto v = (x != Array(0)).astype(DType::uint8).to_vector<uint8_t>();
  return std::vector<bool>(v.begin(), v.end());
}

}  // namespace

Array compress(const Array& condition, const Array& a, std::optional<int64_t> axis0, const SizeOptions& options) {
  if (rank(condition) != 1)
    throw ShapeError("compress: condition must be 1-D; got shape " + shape_to_string(condition.shape()));
  const Array arr = axis0 ? moveaxis(a, ops::canonicalize_axis("compress", *axis0, rank(a)), 0) : ravel(a);
  if (arr.shape().empty()) throw ShapeError("compress: a must have at least one axis");
  const int64_t n = arr.shape()[0];
  const int64_t nc = condition.shape()[0];
  const Array cond = slice_in_dim(condition != Array(0), 0, std::min(n, nc));
  if (!options.size && nc > n) {
    const auto extra = concrete_mask("compress", slice_in_dim(condition, n, nc));
    if (std::find(extra.begin(), extra.end(), true) != extra.end())
      throw IndexError("compress: condition has " + std::to_string(nc) + " entries, more than a's " +
                       std::to_string(n) + " along the axis, and one beyond is true");
  }
  if (options.size && (*options.size < 0 || *options.size > n))
    throw ValueError("compress: size = " + std::to_string(*options.size) + " must be in [0, " + std::to_string(n) + "]");
  // Positions of the true entries; with a size, the missing ones point past the end.
  const Array idx = options.size ? flatnonzero(cond, {.size = options.size, .fill_value = Scalar(n)}) : flatnonzero(cond);
  Array taken = take(arr, idx, 0, {.mode = "fill", .fill_value = options.fill_value.value_or(Scalar(0))});
  return axis0 ? moveaxis(taken, 0, ops::canonicalize_axis("compress", *axis0, rank(a))) : taken;
}

Array extract(const Array& condition, const Array& arr, const SizeOptions& options) {
  return compress(ravel(condition), ravel(arr), std::nullopt, options);
}

Array choose(const Array& a, const std::vector<Array>& choices, const std::string& mode) {
  if (!is_integer(a.dtype()))
    throw DTypeError(std::string("choose: a of dtype ") + dtype_name(a.dtype()) + " is not supported; expected integers");
  if (choices.empty()) throw ValueError("choose: choices is empty; give at least one array");
  const int64_t n = int64_t(choices.size());
  Array idx = a;
  if (mode == "raise") {
    if (!a.is_tracer()) {
      for (int64_t v : a.astype(DType::int64).to_vector<int64_t>())
        if (v < 0 || v >= n)
          throw IndexError("choose: entry " + std::to_string(v) + " of a is not in [0, " + std::to_string(n) +
                           "); use mode 'wrap' or 'clip'");
    }
  } else if (mode == "wrap") {
    idx = remainder(a, full_like(a, Scalar(n)));
  } else if (mode == "clip") {
    idx = clip(a, Array(0), Array(n - 1)).astype(a.dtype());
  } else {
    throw ValueError("choose: mode '" + mode + "' is not one of 'raise', 'wrap', 'clip'");
  }
  std::vector<Array> all{idx};
  all.insert(all.end(), choices.begin(), choices.end());
  all = broadcast_arrays(all);
  const Array stacked = stack(std::vector<Array>(all.begin() + 1, all.end()), 0);
  return squeeze(take_along_axis(stacked, expand_dims(all[0], {0}), 0), Axes{0});
}

Array place(const Array& arr, const Array& mask, const Array& vals) {
  if (arr.shape() != mask.shape())
    throw ShapeError("place: mask of shape " + shape_to_string(mask.shape()) + " must have arr's shape " +
                     shape_to_string(arr.shape()));
  const Array flat = ravel(arr);
  const int64_t n = flat.shape()[0];
  if (n == 0 || size(vals) == 0) return arr;
  // The k-th true position gets vals[k mod len(vals)]; unused slots point past the end.
  const Array pos = flatnonzero(ravel(mask), {.size = n, .fill_value = Scalar(n)});
  return reshape(flat.at({pos}).set(tile_to_size(vals, n).astype(arr.dtype()), {.mode = "drop"}), arr.shape());
}

Array put(const Array& a, const Array& ind, const Array& v, const std::string& mode) {
  if (!is_integer(ind.dtype()))
    throw DTypeError(std::string("put: indices of dtype ") + dtype_name(ind.dtype()) + " are not supported; expected integers");
  const int64_t n = size(a);
  Array i = ravel(ind);
  if (n == 0 || size(i) == 0 || size(v) == 0) return a;
  std::string scatter_mode;
  if (mode.empty() || mode == "fill" || mode == "drop") {
    scatter_mode = "drop";
  } else if (mode == "clip") {
    i = clip(i, Array(0), Array(n - 1)).astype(i.dtype());
    scatter_mode = "promise_in_bounds";
  } else if (mode == "wrap") {
    i = remainder(i, full_like(i, Scalar(n)));
    scatter_mode = "promise_in_bounds";
  } else {
    throw ValueError("put: mode '" + mode + "' is not one of '' (drop out-of-bounds), 'clip', 'wrap'");
  }
  // As JAX: flat indices become multi-indices (unravel_index clips them), then one scatter.
  std::vector<Index> at;
  for (const Array& c : unravel_index(i, a.shape())) at.emplace_back(c);
  return a.at(at).set(tile_to_size(v, size(i)).astype(a.dtype()), {.mode = scatter_mode});
}

Array put_along_axis(const Array& arr, const Array& indices, const Array& values, int64_t axis0, const std::string& mode) {
  const int64_t nd = rank(arr);
  if (rank(indices) != nd)
    throw ShapeError("put_along_axis: indices of shape " + shape_to_string(indices.shape()) + " must have arr's rank " +
                     std::to_string(nd) + " (arr " + shape_to_string(arr.shape()) + ")");
  const int64_t axis = ops::canonicalize_axis("put_along_axis", axis0, nd);
  // The index of each element: `indices` along `axis`, its own coordinate along the others.
  Shape s = broadcast_shapes({indices.shape(), [&] {
                                Shape t = arr.shape();
                                t[size_t(axis)] = indices.shape()[size_t(axis)];
                                return t;
                              }()});
  std::vector<Index> idx;
  for (int64_t d = 0; d < nd; ++d)
    idx.emplace_back(d == axis ? broadcast_to(indices, s) : iota(indices.dtype(), s, d));
  return arr.at(idx).set(broadcast_to(values, s).astype(arr.dtype()), {.mode = mode});
}

Array trim_zeros(const Array& filt, const std::string& trim) {
  if (rank(filt) != 1) throw ShapeError("trim_zeros: filt must be 1-D; got shape " + shape_to_string(filt.shape()));
  const auto nz = concrete_mask("trim_zeros", filt);
  const int64_t n = int64_t(nz.size());
  const auto first = std::find(nz.begin(), nz.end(), true);
  if (first == nz.end()) return slice_in_dim(filt, 0, 0);
  std::string t = trim;
  std::transform(t.begin(), t.end(), t.begin(), ::tolower);
  const int64_t lo = t.find('f') != std::string::npos ? int64_t(first - nz.begin()) : 0;
  const int64_t hi = t.find('b') != std::string::npos ? n - int64_t(std::find(nz.rbegin(), nz.rend(), true) - nz.rbegin()) : n;
  return slice_in_dim(filt, lo, hi);
}

Array setxor1d(const Array& ar1, const Array& ar2, bool assume_unique) {
  const Array a = assume_unique ? ravel(ar1) : unique(ar1).values;
  const Array b = assume_unique ? ravel(ar2) : unique(ar2).values;
  const Array aux = sort(concatenate({a, b}, 0));
  const int64_t n = aux.shape()[0];
  if (n == 0) return aux;
  // An element is in exactly one input when it differs from both neighbours.
  const Array t = Array(true);
  const Array differs = n > 1 ? not_equal(slice_in_dim(aux, 1, n), slice_in_dim(aux, 0, n - 1)) : zeros({0}, DType::bool_);
  const Array flag = concatenate({reshape(t, {1}), differs, reshape(t, {1})}, 0);
  const Array keep = logical_and(slice_in_dim(flag, 1, n + 1), slice_in_dim(flag, 0, n));
  return extract(keep, aux);
}

Array packbits(const Array& a, std::optional<int64_t> axis0, const std::string& bitorder) {
  if (!is_integer(a.dtype()) && !is_bool(a.dtype()))
    throw DTypeError(std::string("packbits: dtype ") + dtype_name(a.dtype()) + " is not supported; expected integers or bool");
  if (bitorder != "big" && bitorder != "little")
    throw ValueError("packbits: bitorder '" + bitorder + "' is not one of 'big', 'little'");
  Array bits = (a != Array(0)).astype(DType::uint8);
  if (!axis0) bits = ravel(bits);
  const int64_t axis = ops::canonicalize_axis("packbits", axis0.value_or(0), rank(bits));
  bits = swapaxes(bits, axis, -1);
  const int64_t len = bits.shape().back();
  if (len % 8) {
    std::vector<std::pair<int64_t, int64_t>> w(bits.shape().size(), {0, 0});
    w.back() = {0, 8 - len % 8};
    bits = pad(bits, w);
  }
  Shape s = bits.shape();
  s.back() /= 8;
  s.push_back(8);
  Array shifts = arange(8, DType::uint8);
  if (bitorder == "big") shifts = flip(shifts);
  const Array packed = sum(left_shift(reshape(bits, s), shifts), {-1}).astype(DType::uint8);
  return swapaxes(packed, axis, -1);
}

Array unpackbits(const Array& a, std::optional<int64_t> axis0, std::optional<int64_t> count, const std::string& bitorder) {
  if (a.dtype() != DType::uint8)
    throw DTypeError(std::string("unpackbits: dtype ") + dtype_name(a.dtype()) + " is not supported; expected uint8");
  if (bitorder != "big" && bitorder != "little")
    throw ValueError("unpackbits: bitorder '" + bitorder + "' is not one of 'big', 'little'");
  Array x = axis0 ? a : ravel(a);
  const int64_t axis = ops::canonicalize_axis("unpackbits", axis0.value_or(0), rank(x));
  x = swapaxes(x, axis, -1);
  Array masks = left_shift(full({8}, Array(1), DType::uint8), arange(8, DType::uint8));
  if (bitorder == "big") masks = flip(masks);
  Array bits = ((expand_dims(x, {-1}) & masks) > Array(0)).astype(DType::uint8);
  Shape s = x.shape();
  s.back() *= 8;
  bits = reshape(bits, s);
  if (count) {
    const int64_t have = s.back();
    if (*count > have) {
      std::vector<std::pair<int64_t, int64_t>> w(s.size(), {0, 0});
      w.back() = {0, *count - have};
      bits = pad(bits, w);
    } else {
      bits = slice_in_dim(bits, 0, std::max<int64_t>(*count, 0), 1, int64_t(s.size()) - 1);
    }
  }
  return swapaxes(bits, axis, -1);
}

Array piecewise(const Array& x, const std::vector<Array>& conditions,
                const std::vector<std::function<Array(const Array&)>>& funcs) {
  const size_t nc = conditions.size(), nf = funcs.size();
  if (nf != nc && nf != nc + 1)
    throw ValueError("piecewise: " + std::to_string(nf) + " functions for " + std::to_string(nc) +
                     " conditions; give one per condition, plus optionally a default");
  Array r = nf == nc + 1 ? broadcast_to(funcs[nc](x).astype(x.dtype()), x.shape()) : zeros_like(x);
  // Later conditions take precedence, as in numpy.
  for (size_t k = 0; k < nc; ++k)
    r = where(conditions[k] != Array(0), broadcast_to(funcs[k](x).astype(x.dtype()), x.shape()), r);
  return r;
}

DType result_type(const std::vector<Array>& xs) {
  if (xs.empty()) throw ValueError("result_type: needs at least one array");
  return ops::result_type(xs).dtype;
}

namespace {
/// Float precision ranks for numpy's safe casts: float16 and bfloat16 hold 8-bit integers,
/// float32 16-bit ones, float64 everything wider (numpy counts int64 -> float64 as safe).
int float_rank(DType d) {
  switch (d) {
    case DType::float16: case DType::bfloat16: return 1;
    case DType::float32: case DType::complex64: return 2;
    default: return 3;  // float64, complex128
  }
}
int int_bits(DType d) { return int(itemsize(d)) * 8; }

/// numpy's can_cast(from, to, "safe") (jnp.can_cast is numpy's, with ml_dtypes' bfloat16).
bool safe_cast(DType from, DType to) {
  if (from == to || is_bool(from)) return true;
  if (is_bool(to)) return false;
  if (is_integer(from)) {
    if (is_integer(to)) {
      if (is_unsigned_int(from)) return is_unsigned_int(to) ? int_bits(to) >= int_bits(from) : int_bits(to) > int_bits(from);
      return is_signed_int(to) && int_bits(to) >= int_bits(from);
    }
    // An integer of w bits needs a float whose rank holds it (bfloat16 holds 8 bits as float16 does).
    const int need = int_bits(from) == 8 ? 1 : int_bits(from) == 16 ? 2 : 3;
    return float_rank(to) >= need;
  }
  if (is_integer(to)) return false;
  if (is_floating(from)) {
    if (is_complex(to)) return float_rank(to) >= float_rank(from);
    return float_rank(to) > float_rank(from);  // float16 and bfloat16 do not hold each other
  }
  return is_complex(to) && float_rank(to) > float_rank(from);  // complex64 -> complex128
}
}  // namespace

bool can_cast(DType from, DType to, const std::string& casting) {
  if (casting == "unsafe") return true;
  if (casting == "no" || casting == "equiv") return from == to;
  if (casting == "same_kind") {
    if (safe_cast(from, to)) return true;
    // ml_dtypes registers bfloat16 as castable from complex (and float16 not from bfloat16)
    // within the kind; numpy's same_kind, which jnp.can_cast is, follows its registrations.
    if (to == DType::bfloat16 && is_complex(from)) return true;
    if (from == DType::bfloat16 && to == DType::float16) return false;
    const auto kind = [](DType d) { return is_bool(d) ? 0 : is_unsigned_int(d) ? 1 : is_signed_int(d) ? 2 : is_floating(d) ? 3 : 4; };
    // Unsigned integers may go to signed ones (a wider kind); otherwise a kind may not shrink.
    return kind(from) <= kind(to);
  }
  if (casting != "safe") throw ValueError("can_cast: casting '" + casting + "' is not one of 'no', 'equiv', 'safe', 'same_kind', 'unsafe'");
  return safe_cast(from, to);
}

bool isdtype(DType d, const std::string& kind) {
  if (kind == "bool") return is_bool(d);
  if (kind == "signed integer") return is_signed_int(d);
  if (kind == "unsigned integer") return is_unsigned_int(d);
  if (kind == "integral") return is_integer(d);
  if (kind == "real floating") return is_floating(d);
  if (kind == "complex floating") return is_complex(d);
  if (kind == "numeric") return !is_bool(d);
  throw ValueError("isdtype: kind '" + kind +
                   "' is not one of 'bool', 'signed integer', 'unsigned integer', 'integral', 'real floating', "
                   "'complex floating', 'numeric'");
}

bool issubdtype(DType d, const std::string& category) {
  if (category == "generic") return true;
  if (category == "bool" || category == "bool_") return is_bool(d);
  if (category == "number") return !is_bool(d);
  if (category == "integer") return is_integer(d);
  if (category == "signedinteger") return is_signed_int(d);
  if (category == "unsignedinteger") return is_unsigned_int(d);
  if (category == "inexact") return is_inexact(d);
  if (category == "floating") return is_floating(d);
  if (category == "complexfloating") return is_complex(d);
  return d == dtype_from_name(category);
}

}  // namespace tessel
