// dot_general (the one contraction primitive; its kernel is in dot_general_kernel.cpp) and the
// jax.numpy products built on it: matmul, dot, vdot, outer, trace.
#include "ops/linalg.h"

#include <algorithm>
#include <numeric>

#include "ops/rule_util.h"

namespace tessel::ops {
namespace {

// ---- abstract evaluation ----

struct DotSpec {
  Axes lc, rc, lb, rb;
  static DotSpec from(const Params& p) {
    return {p.get_ints("lhs_contracting"), p.get_ints("rhs_contracting"), p.get_ints("lhs_batch"),
            p.get_ints("rhs_batch")};
  }
};

std::string dims_to_string(const DotSpec& d) {
  return "contracting " + shape_to_string(d.lc) + " x " + shape_to_string(d.rc) + ", batch " +
         shape_to_string(d.lb) + " x " + shape_to_string(d.rb);
}

void check_side(const std::string& ctx, const char* side, const Aval& x, const Axes& batch, const Axes& contr) {
  std::vector<bool> seen(size_t(x.ndim()), false);
  for (const Axes* list : {&batch, &contr})
    for (auto d : *list) {
      if (d < 0 || d >= x.ndim())
        throw IndexError("dot_general: " + std::string(side) + " dimension " + std::to_string(d) +
                         " is out of range for " + side + " of shape " + shape_to_string(x.shape) + " (" + ctx +
                         ")");
      if (seen[size_t(d)])
        throw ValueError("dot_general: " + std::string(side) + " dimension " + std::to_string(d) +
                         " is named more than once (" + ctx + "); each dimension is batch, contracting or free");
      seen[size_t(d)] = true;
    }
}

/// A preferred result dtype may widen, or go from integers to floats, never lose a kind.
void check_preferred(DType in, DType pref) {
  const bool ok = is_complex(in) ? is_complex(pref) : is_floating(in) ? is_inexact(pref) : true;
  if (!ok)
    throw DTypeError(std::string("dot_general: preferred_element_type ") + dtype_name(pref) +
                     " cannot hold products of " + dtype_name(in) + " operands; use a dtype of the same kind or wider");
}

std::vector<Aval> dot_general_aval(std::span<const Aval> ins, const Params& p) {
  const Aval &l = ins[0], &r = ins[1];
  const DotSpec d = DotSpec::from(p);
  const std::string ctx = "shapes " + shape_to_string(l.shape) + " and " + shape_to_string(r.shape) + ", " +
                          dims_to_string(d);
  if (l.dtype != r.dtype)
    throw DTypeError("dot_general: operands have different dtypes " + avals_to_string(ins) +
                     "; convert them to one dtype first (matmul, dot and einsum promote for you)");
  if (d.lc.size() != d.rc.size() || d.lb.size() != d.rb.size())
    throw ValueError("dot_general: lhs and rhs need as many contracting and as many batch dimensions, got " + ctx);
  check_side(ctx, "lhs", l, d.lb, d.lc);
  check_side(ctx, "rhs", r, d.rb, d.rc);
  for (size_t i = 0; i < d.lc.size(); ++i)
    if (l.shape[size_t(d.lc[i])] != r.shape[size_t(d.rc[i])])
      throw ShapeError("dot_general: contracting dimensions have different sizes: lhs dimension " +
                       std::to_string(d.lc[i]) + " has size " + std::to_string(l.shape[size_t(d.lc[i])]) +
                       ", rhs dimension " + std::to_string(d.rc[i]) + " has size " +
                       std::to_string(r.shape[size_t(d.rc[i])]) + " (" + ctx + ")");
  Shape out;
  for (size_t i = 0; i < d.lb.size(); ++i) {
    if (l.shape[size_t(d.lb[i])] != r.shape[size_t(d.rb[i])])
      throw ShapeError("dot_general: batch dimensions have different sizes: lhs dimension " +
                       std::to_string(d.lb[i]) + " has size " + std::to_string(l.shape[size_t(d.lb[i])]) +
                       ", rhs dimension " + std::to_string(d.rb[i]) + " has size " +
                       std::to_string(r.shape[size_t(d.rb[i])]) + " (" + ctx + ")");
    out.push_back(l.shape[size_t(d.lb[i])]);
  }
  for (auto i : free_dims(l.ndim(), d.lb, d.lc)) out.push_back(l.shape[size_t(i)]);
  for (auto i : free_dims(r.ndim(), d.rb, d.rc)) out.push_back(r.shape[size_t(i)]);
  DType dt = l.dtype;
  if (p.has("preferred_element_type")) {
    dt = p.get<DType>("preferred_element_type");
    check_preferred(l.dtype, dt);
  }
  return {Aval(out, dt, l.weak_type && r.weak_type)};
}

// ---- transformation rules ----

Params dot_params(const DotSpec& d, const Params& like) {
  Params p = like;
  p.set("lhs_contracting", d.lc);
  p.set("rhs_contracting", d.rc);
  p.set("lhs_batch", d.lb);
  p.set("rhs_batch", d.rb);
  return p;
}

// Bilinear: d(a . b) = da . b + a . db.
std::vector<Array> dot_general_jvp(const ir::Primitive& self, std::span<const Array> primals,
                                   std::span<const Array> tangents, std::span<const Array>, const Params& p) {
  Array r;
  if (!is_zero(tangents[0])) r = bind1(self, {tangents[0], primals[1]}, p);
  if (!is_zero(tangents[1])) r = add_tangents(r, bind1(self, {primals[0], tangents[1]}, p));
  return {r};
}

Axes iota_axes(int64_t start, size_t n) {
  Axes r(n);
  std::iota(r.begin(), r.end(), start);
  return r;
}

bool is_identity(const Axes& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != int64_t(i)) return false;
  return true;
}

Axes concat(std::initializer_list<const Axes*> parts) {
  Axes r;
  for (auto* p : parts) r.insert(r.end(), p->begin(), p->end());
  return r;
}

Axes argsort(const Axes& v) {
  Axes idx = iota_axes(0, v.size());
  std::sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return v[size_t(a)] < v[size_t(b)]; });
  return idx;
}

// The cotangent of operand x of x . y (JAX's _dot_general_transpose_lhs): contract the
// output cotangent g with y over y's free dimensions. Product g . y leaves (batch, x free, x
// contracting in y's order), y . g leaves (batch, x contracting, x free); a transpose puts
// them in x's order. The product whose result is already in x's order is taken when there
// is one (dx = g . b^T for a = x of a @ b, db = a^T . g for b), so no transpose runs: the
// kernel reads transposed operands in place, a transposed result costs a copy. `swap` says
// x is the rhs (its free dimensions come after y's in g).
Array dot_transpose_operand(const Array& g, const Aval& x, const Array& y, const Axes& x_contract,
                            const Axes& y_contract, const Axes& x_batch, const Axes& y_batch, bool swap) {
  const Axes x_kept = free_dims(x.ndim(), x_batch, x_contract), y_kept = free_dims(y.ndim(), y_batch, y_contract);
  const int64_t nb = int64_t(x_batch.size());
  const Axes g_batch = iota_axes(0, x_batch.size());
  const Axes g_y = iota_axes(swap ? nb : nb + int64_t(x_kept.size()), y_kept.size());
  Axes x_contract_by_y;
  for (auto i : argsort(y_contract)) x_contract_by_y.push_back(x_contract[size_t(i)]);
  const Axes g_first = argsort(concat({&x_batch, &x_kept, &x_contract_by_y}));
  const Axes y_first = argsort(concat({&x_batch, &x_contract_by_y, &x_kept}));
  // g's dtype may be a preferred result dtype wider than the operands': compute in it and
  // convert back.
  const Array yc = convert(y, g.dtype(), y.weak_type());
  const Array r = is_identity(y_first) && !is_identity(g_first)
                      ? transpose(dot_general(yc, g, {y_kept, g_y, y_batch, g_batch}), y_first)
                      : transpose(dot_general(g, yc, {g_y, y_kept, g_batch, y_batch}), g_first);
  return convert(r, x.dtype, x.weak_type);
}

std::vector<Array> dot_general_transpose(const ir::Primitive&, std::span<const Array> cts,
                                         std::span<const Array> args, std::span<const Aval> avals, const Params& p) {
  if (is_zero(cts[0])) return {Array(), Array()};
  const DotSpec d = DotSpec::from(p);
  if (is_zero(args[0]))
    return {dot_transpose_operand(cts[0], avals[0], args[1], d.lc, d.rc, d.lb, d.rb, false), Array()};
  return {Array(), dot_transpose_operand(cts[0], avals[1], args[0], d.rc, d.lc, d.rb, d.lb, true)};
}

/// Dimensions renumbered for an operand batched at `bd` (kNotBatched: unchanged).
Axes shift_dims(const Axes& dims, int64_t bd) {
  Axes r;
  for (auto i : dims) r.push_back(bd != kNotBatched && i >= bd ? i + 1 : i);
  return r;
}

// Both operands batched: the batched dimensions become the first batch dimension of the
// product, where they are (the kernel reads batch dimensions anywhere, so no operand is
// moved). One batched: its batch dimension is one more free dimension, which appears in the
// output after the batch dimensions (and the lhs free dimensions, for the rhs) in order.
Batched dot_general_batch(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                          const BatchAxis&, const Params& p) {
  const DotSpec d = DotSpec::from(p);
  const int64_t lbd = dims[0], rbd = dims[1];
  if (lbd != kNotBatched && rbd != kNotBatched) {
    DotSpec e{shift_dims(d.lc, lbd), shift_dims(d.rc, rbd), shift_dims(d.lb, lbd), shift_dims(d.rb, rbd)};
    e.lb.insert(e.lb.begin(), lbd);
    e.rb.insert(e.rb.begin(), rbd);
    return {detail::bind(self, ins, dot_params(e, p)), {0}};
  }
  const DotSpec e{shift_dims(d.lc, lbd), shift_dims(d.rc, rbd), shift_dims(d.lb, lbd), shift_dims(d.rb, rbd)};
  int64_t out = int64_t(d.lb.size());
  if (lbd != kNotBatched) {
    for (auto i : free_dims(ins[0].ndim(), e.lb, e.lc)) out += i < lbd;
  } else {
    out += int64_t(free_dims(ins[0].ndim(), e.lb, e.lc).size());
    for (auto i : free_dims(ins[1].ndim(), e.rb, e.rc)) out += i < rbd;
  }
  return {detail::bind(self, ins, dot_params(e, p)), {out}};
}

// SPMD: batch dimensions are shared by both operands and the result, free dimensions by
// their operand and the result; each contracting pair is a reduction factor (every device
// multiplies its pieces; partial products add up, or `or` together for bool results).
ir::ShardingRule dot_general_sharding_rule(std::span<const Aval> ins, std::span<const Aval> outs, const Params& p) {
  const DotSpec d = DotSpec::from(p);
  const ir::Combine contract = is_bool(outs[0].dtype) ? ir::Combine::kMax : ir::Combine::kSum;
  ir::ShardingRule r;
  std::vector<int> l(size_t(ins[0].ndim()), ir::kWhole), rt(size_t(ins[1].ndim()), ir::kWhole), out;
  for (size_t i = 0; i < d.lb.size(); ++i) {
    out.push_back(add_factor(r));
    l[size_t(d.lb[i])] = rt[size_t(d.rb[i])] = out.back();
  }
  for (auto i : free_dims(ins[0].ndim(), d.lb, d.lc)) out.push_back(l[size_t(i)] = add_factor(r));
  for (auto i : free_dims(ins[1].ndim(), d.rb, d.rc)) out.push_back(rt[size_t(i)] = add_factor(r));
  for (size_t i = 0; i < d.lc.size(); ++i) l[size_t(d.lc[i])] = rt[size_t(d.rc[i])] = add_factor(r, contract);
  r.operands = {l, rt};
  r.results = {out};
  return r;
}

const ir::Primitive& dot_general_p = ir::register_primitive({.name = "dot_general",
                                                             .arity = {2, 2},
                                                             .abstract_eval = dot_general_aval,
                                                             .cpu_kernel = dot_general_kernel,
                                                             .jvp = dot_general_jvp,
                                                             .transpose = dot_general_transpose,
                                                             .batch = dot_general_batch,
                                                             .sharding_rule = dot_general_sharding_rule,
                                                             .matrix_product = true});

// ---- jax.numpy level ----

/// Both operands converted to their promoted dtype.
std::pair<Array, Array> promote_pair(const Array& a, const Array& b) {
  const PromotedType t = result_type({a, b});
  return {convert(a, t.dtype, t.weak), convert(b, t.dtype, t.weak)};
}

std::string shapes_of(const Array& a, const Array& b) {
  return "shapes " + shape_to_string(a.shape()) + " and " + shape_to_string(b.shape());
}

Axes range(int64_t lo, int64_t hi) {
  Axes r;
  for (int64_t i = lo; i < hi; ++i) r.push_back(i);
  return r;
}

}  // namespace

Array diagonal_front(const Array& x, int64_t a, int64_t b) {
  const Shape& s = x.shape();
  const int64_t n = s[size_t(a)], m = s[size_t(b)], len = std::min(n, m);
  Axes perm{a, b};
  Shape flat{n * m};
  for (int64_t i = 0; i < x.ndim(); ++i)
    if (i != a && i != b) perm.push_back(i), flat.push_back(s[size_t(i)]);
  // Element (i, i) of the flattened (n * m) axis sits at i * (m + 1).
  const Array f = reshape(transpose(x, perm), flat);
  return slice_in_dim(f, 0, len == 0 ? 0 : (len - 1) * (m + 1) + 1, m + 1, 0);
}

Array diagonal_offset_front(const Array& x, int64_t offset, int64_t a, int64_t b) {
  // Diagonal `offset` of (a, b) is the main diagonal once the first |offset| columns
  // (offset > 0) or rows (offset < 0) are cut off; an offset past the edge leaves none.
  const int64_t cut_axis = offset >= 0 ? b : a, cut = offset >= 0 ? offset : -offset;
  const int64_t n = x.dim(cut_axis);
  const Array y = cut == 0 ? x : slice_in_dim(x, std::min(cut, n), n, 1, cut_axis);
  return diagonal_front(y, a, b);
}

}  // namespace tessel::ops

namespace tessel {

Array dot_general(const Array& a, const Array& b, const DotDims& dims, std::optional<DType> preferred) {
  auto [x, y] = ops::promote_pair(a, b);
  if (preferred) {
    // Converting first lets the kernel multiply in the preferred dtype (int8 -> int32 or
    // float32 products use integer or BLAS loops without per-element conversion).
    ops::check_preferred(x.dtype(), *preferred);
    const DType ct = ops::dot_compute_dtype(*preferred);
    if (ct != x.dtype() && !(is_floating(x.dtype()) && ct == DType::float32 && itemsize(x.dtype()) == 2))
      x = ops::convert(x, ct), y = ops::convert(y, ct);
  }
  ops::Params p{{"lhs_contracting", dims.lhs_contracting}, {"rhs_contracting", dims.rhs_contracting},
                {"lhs_batch", dims.lhs_batch}, {"rhs_batch", dims.rhs_batch}};
  if (preferred) p.set("preferred_element_type", *preferred);
  return ops::bind1(ops::dot_general_p, {x, y}, p);
}

Array matmul(const Array& a_in, const Array& b_in) {
  if (a_in.ndim() == 0 || b_in.ndim() == 0)
    throw ValueError("matmul: operands must be at least 1-D, got " + ops::shapes_of(a_in, b_in) +
                     "; use multiply for scalars");
  auto [a, b] = ops::promote_pair(a_in, b_in);
  // 1-D operands become a row (lhs) or a column (rhs); that axis is removed at the end.
  const bool a_vec = a.ndim() == 1, b_vec = b.ndim() == 1;
  if (a_vec) a = reshape(a, {1, a.dim(0)});
  if (b_vec) b = reshape(b, {b.dim(0), 1});
  if (a.dim(-1) != b.dim(-2))
    throw ShapeError("matmul: contracting dimensions differ for " + ops::shapes_of(a_in, b_in) + " (" +
                     std::to_string(a.dim(-1)) + " != " + std::to_string(b.dim(-2)) +
                     "); the last axis of a must match the " + (b_vec ? "only" : "second-to-last") + " axis of b");
  Array r;
  if (b.ndim() == 2) {  // no rhs batch: a's leading dims are free dims of one product
    r = dot_general(a, b, {{a.ndim() - 1}, {0}, {}, {}});
  } else {
    const Shape ab(a.shape().begin(), a.shape().end() - 2), bb(b.shape().begin(), b.shape().end() - 2);
    Shape batch;
    try {
      batch = broadcast_shapes({ab, bb});
    } catch (const ShapeError&) {
      throw ShapeError("matmul: batch dimensions of " + ops::shapes_of(a_in, b_in) + " do not broadcast (" +
                       shape_to_string(ab) + " and " + shape_to_string(bb) + "); sizes must match or be 1");
    }
    const int64_t nb = int64_t(batch.size());
    Shape as = batch, bs = batch;
    as.insert(as.end(), a.shape().end() - 2, a.shape().end());
    bs.insert(bs.end(), b.shape().end() - 2, b.shape().end());
    r = dot_general(broadcast_to(a, as), broadcast_to(b, bs), {{nb + 1}, {nb}, ops::range(0, nb), ops::range(0, nb)});
  }
  if (a_vec || b_vec) {
    Shape s(r.shape().begin(), r.shape().end() - 2);
    if (!a_vec) s.push_back(r.dim(-2));
    if (!b_vec) s.push_back(r.dim(-1));
    r = reshape(r, s);
  }
  return r;
}

Array dot(const Array& a_in, const Array& b_in) {
  if (a_in.ndim() == 0 || b_in.ndim() == 0) return multiply(a_in, b_in);
  auto [a, b] = ops::promote_pair(a_in, b_in);
  const int64_t bc = b.ndim() == 1 ? 0 : b.ndim() - 2;
  if (a.dim(-1) != b.dim(bc))
    throw ShapeError("dot: " + ops::shapes_of(a_in, b_in) + " are not aligned: the last axis of a has size " +
                     std::to_string(a.dim(-1)) + " but axis " + std::to_string(bc) + " of b has size " +
                     std::to_string(b.dim(bc)));
  return dot_general(a, b, {{a.ndim() - 1}, {bc}, {}, {}});
}

Array vdot(const Array& a, const Array& b) {
  if (a.size() != b.size())
    throw ShapeError("vdot: arguments must have the same number of elements, got " + ops::shapes_of(a, b) + " (" +
                     std::to_string(a.size()) + " and " + std::to_string(b.size()) + " elements)");
  const Array af = reshape(a, {a.size()}), bf = reshape(b, {b.size()});
  return dot(is_complex(a.dtype()) ? conj(af) : af, bf);
}

Array tensordot(const Array& a, const Array& b, int64_t axes) {
  if (axes < 0 || axes > a.ndim() || axes > b.ndim())
    throw ValueError("tensordot: axes=" + std::to_string(axes) + " must be between 0 and the rank of each operand (" +
                     ops::shapes_of(a, b) + ")");
  return tensordot(a, b, ops::range(a.ndim() - axes, a.ndim()), ops::range(0, axes));
}

Array tensordot(const Array& a, const Array& b, const Axes& a_axes, const Axes& b_axes) {
  if (a_axes.size() != b_axes.size())
    throw ValueError("tensordot: a_axes and b_axes must have the same length, got " + std::to_string(a_axes.size()) +
                     " and " + std::to_string(b_axes.size()));
  DotDims dims;
  for (size_t i = 0; i < a_axes.size(); ++i) {
    const int64_t x = ops::canonicalize_axis("tensordot", a_axes[i], a.ndim());
    const int64_t y = ops::canonicalize_axis("tensordot", b_axes[i], b.ndim());
    if (a.dim(x) != b.dim(y))
      throw ShapeError("tensordot: axis " + std::to_string(x) + " of a (size " + std::to_string(a.dim(x)) +
                       ") cannot contract with axis " + std::to_string(y) + " of b (size " + std::to_string(b.dim(y)) +
                       ") for " + ops::shapes_of(a, b) + "; contracted sizes must match");
    dims.lhs_contracting.push_back(x);
    dims.rhs_contracting.push_back(y);
  }
  return dot_general(a, b, dims);
}

Array outer(const Array& a, const Array& b) { return multiply(reshape(a, {a.size(), 1}), reshape(b, {1, b.size()})); }

Array trace(const Array& x, int64_t offset, int64_t axis1, int64_t axis2) {
  if (x.ndim() < 2)
    throw ValueError("trace: the array must be at least 2-D, got shape " + shape_to_string(x.shape()));
  const int64_t a = ops::canonicalize_axis("trace", axis1, x.ndim()), b = ops::canonicalize_axis("trace", axis2, x.ndim());
  if (a == b)
    throw ValueError("trace: axis1 and axis2 must differ, got " + std::to_string(axis1) + " and " +
                     std::to_string(axis2));
  return sum(ops::diagonal_offset_front(x, offset, a, b), {0});
}

}  // namespace tessel
