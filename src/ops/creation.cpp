// Array creation: the iota primitive, and zeros/ones/full (a broadcast of a
// scalar, so under jit they stage as broadcast_in_dim of a literal, not a big constant),
// arange, linspace and eye built on them.
#include <cmath>
#include <cstring>

#include "core/dtype_check.h"
#include "core/shape_check.h"
#include "ops/rule_util.h"
#include "ops/strided.h"
#include "tessel/sharding.h"

namespace tessel::ops {
namespace {

// ---- iota[dtype, shape, dimension] ----

std::vector<Aval> iota_aval(std::span<const Aval>, const Params& p) {
  const Shape& s = p.get_ints("shape");
  const int64_t dim = p.get_int("dimension");
  detail::checked_size("iota", s, p.get<DType>("dtype"));
  if (dim < 0 || dim >= int64_t(s.size()))
    throw IndexError("iota: dimension " + std::to_string(dim) + " is out of range for shape " + shape_to_string(s));
  return {Aval(s, p.get<DType>("dtype"), false)};
}

void iota_kernel(const KernelCall& c) {
  const Shape& s = c.out_avals[0].shape;
  const size_t dim = size_t(c.params.get_int("dimension"));
  const int64_t n = s[dim], inner = strides_of(s)[dim], outer = c.out_avals[0].size() / std::max<int64_t>(1, n * inner);
  visit_dtype(c.out_avals[0].dtype, [&](auto z) {
    using T = decltype(z);
    T* out = c.out<T>(0);
    // Runs of `inner` equal values, one per (outer, j), split over the arena for large outputs.
    auto body = [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) std::fill_n(out + r * inner, inner, convert_value<T>(r % n));
    };
    const int64_t runs = outer * n;
    if (runs * inner <= kCopyGrain) body(0, runs);
    else cpu::parallel_for(runs, std::max<int64_t>(1, kCopyGrain / std::max<int64_t>(1, inner)), body);
  });
}

// SPMD: every device fills its piece; along the counted dimension (a permutation factor)
// the partitioner adds the piece's offset to a local count (sharding/halo.cpp).
ir::ShardingRule iota_sharding_rule(std::span<const Aval>, std::span<const Aval> outs, const Params& p) {
  std::vector<DimRule> dims(outs[0].shape.size(), DimRule::kPass);
  dims[size_t(p.get_int("dimension"))] = DimRule::kPermute;
  return aligned_sharding_rule({}, outs, dims);
}

Params iota_localize(const Params& p, std::span<const Aval>, std::span<const Aval> local_outs) {
  Params q = p;
  q.set("shape", local_outs[0].shape);
  return q;
}

// Code generation: the element is its index along `dimension`.
std::vector<ir::IndexCase> iota_index_map(const ir::IndexMap& m, std::span<const Aval>, const Aval&, const Params& p) {
  return {{.operand = ir::kIndexValue, .at = {m[size_t(p.get_int("dimension"))]}}};
}

const ir::Primitive& iota_p = ir::register_primitive({
    .name = "iota", .arity = {0, 0}, .abstract_eval = iota_aval, .cpu_kernel = iota_kernel,
    .index_map = iota_index_map, .point_cost = 0, .sharding_rule = iota_sharding_rule, .localize = iota_localize});

Array filled(const char* op, const Shape& shape, const Scalar& v, bool weak) {
  detail::checked_size(op, shape, v.dtype());
  return broadcast_in_dim(detail::scalar_array(v, weak), shape, {});
}

/// The dtype arange/linspace compute in before converting to `dtype`: the dtype itself
/// when it is inexact (float for the half types, for accuracy), else float64 (int64 when
/// every value is an integer).
DType compute_dtype(DType dtype, bool integral) {
  if (is_inexact(dtype)) return itemsize(dtype) < 4 ? float32 : dtype;
  return integral ? int64 : float64;
}

/// start + step * iota(n) in `c`.
Array affine_iota(DType c, int64_t n, double start, double step) {
  Array y = iota(c, {n}, 0);
  if (step != 1) y = y * Array(Scalar(step, c));
  if (start != 0) y = y + Array(Scalar(start, c));
  return y;
}

}  // namespace
}  // namespace tessel::ops

namespace tessel {

Array zeros(const Shape& shape, DType dtype) {
  return ops::filled("zeros", shape, Scalar(0, detail::checked_dtype(dtype, "zeros")), false);
}
Array ones(const Shape& shape, DType dtype) {
  return ops::filled("ones", shape, Scalar(1, detail::checked_dtype(dtype, "ones")), false);
}
Array full(const Shape& shape, const Array& value, std::optional<DType> dtype) {
  // A weak value stays weak with its kind's default dtype (lax.full of a Python scalar).
  const bool weak = !dtype && value.weak_type();
  const DType d = dtype ? detail::checked_dtype(*dtype, "full") : weak ? ops::kind_default(value.dtype()) : value.dtype();
  detail::checked_size("full", shape, d);
  const Shape& vs = value.shape();
  bool fits = vs.size() <= shape.size();
  for (size_t i = 0; fits && i < vs.size(); ++i) fits = vs[i] == 1 || vs[i] == shape[shape.size() - vs.size() + i];
  if (!fits)
    throw ShapeError("full: a value of shape " + shape_to_string(vs) + " does not broadcast to shape " +
                     shape_to_string(shape) + "; pass a scalar or a value whose trailing sizes match or are 1");
  if (weak && is_integer(d) && vs.empty() && !value.is_tracer()) {
    const int64_t v = value.scalar().to<int64_t>();
    if (v != int64_t(int32_t(v)))
      throw ValueError("full: the value " + std::to_string(v) + " does not fit the default integer dtype int32; " +
                       "pass dtype int64");
  }
  return broadcast_to(ops::convert(value, d, weak), shape);
}
// The *_like functions keep weak types, as lax.full_like does.
Array full_like(const Array& x, Scalar value) {
  return ops::filled("full_like", x.shape(), value.astype(x.dtype()), x.weak_type());
}
Array zeros_like(const Array& x) { return full_like(x, 0); }
Array ones_like(const Array& x) { return full_like(x, 1); }
Array empty_like(const Array& x) { return zeros_like(x); }

Array iota(DType dtype, const Shape& shape, int64_t dimension) {
  detail::checked_dtype(dtype, "iota");
  dimension = ops::canonicalize_axis("iota", dimension, int64_t(shape.size()));
  return ops::bind1(ops::iota_p, {},
                    ops::Params{{"dtype", dtype}, {"shape", shape}, {"dimension", dimension}});
}

Array arange(int64_t stop, DType dtype) {
  return iota(detail::checked_dtype(dtype, "arange"), {std::max<int64_t>(0, stop)}, 0);
}

Array arange(double start, double stop, double step, DType dtype) {
  detail::checked_dtype(dtype, "arange");
  if (step == 0) throw ValueError("arange: step must not be zero");
  if (!std::isfinite(start) || !std::isfinite(stop) || !std::isfinite(step))
    throw ValueError("arange: start, stop and step must be finite");
  const double count = std::ceil((stop - start) / step);
  if (count >= 0x1p63)  // (converting a larger double to int64 is undefined)
    throw ShapeError("arange: start=" + std::to_string(start) + ", stop=" + std::to_string(stop) + ", step=" +
                     std::to_string(step) + " give " + std::to_string(count) +
                     " values, which overflows a 64-bit count; use a larger step or a smaller range");
  const int64_t n = std::max<int64_t>(0, int64_t(count));
  const bool integral = start == std::floor(start) && step == std::floor(step);
  if (integral && start == 0 && step == 1 && is_integer(dtype)) return iota(dtype, {n}, 0);
  return astype(ops::affine_iota(ops::compute_dtype(dtype, integral), n, start, step), dtype);
}

Array linspace(double start, double stop, int64_t num, bool endpoint, DType dtype) {
  detail::checked_dtype(dtype, "linspace");
  if (num < 0) throw ValueError("linspace: num must be >= 0, got " + std::to_string(num));
  detail::checked_size("linspace", {num}, dtype);
  const DType c = ops::compute_dtype(dtype, false);
  if (num == 0) return zeros({0}, dtype);
  const int64_t div = endpoint ? num - 1 : num;
  const double step = div > 0 ? (stop - start) / double(div) : 0.0;
  Array y = ops::affine_iota(c, endpoint && num > 1 ? num - 1 : num, start, step);
  if (endpoint && num > 1) y = concatenate({y, full({1}, Scalar(stop, c))});  // exactly stop at the end
  if (is_integer(dtype)) y = floor(y);  // round towards -inf, as NumPy 2 and JAX do
  return astype(y, dtype);
}

Array eye(int64_t n, std::optional<int64_t> m_, int64_t k, DType dtype) {
  detail::checked_dtype(dtype, "eye");
  const int64_t m = m_.value_or(n);
  if (n < 0 || m < 0)
    throw ValueError("eye: sizes must be >= 0, got n=" + std::to_string(n) + ", m=" + std::to_string(m));
  detail::checked_size("eye", {n, m}, dtype);  // (n * m below must not overflow)
  // Row i holds its one at column i + k, i.e. at flat position i * (m + 1) + k: a vector of
  // ones with m zeros of interior padding, padded to n * m and reshaped.
  const int64_t first = std::max<int64_t>(0, -k), count = std::min(n, m - k) - first;
  if (count <= 0) return zeros({n, m}, dtype);
  const int64_t lo = first * (m + 1) + k, last = lo + (count - 1) * (m + 1);
  Array flat = lax_pad(ones({count}, dtype), Scalar(0, dtype), {{lo, n * m - 1 - last, m}});
  return reshape(flat, {n, m});
}

}  // namespace tessel
