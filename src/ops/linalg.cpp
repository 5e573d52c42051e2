// dot_general (the one contraction primitive; kernels call BLAS for f32/f64/c64/c128) and the
// jax.numpy products built on it: matmul, dot, vdot, outer, trace.
#include "ops/linalg.h"

#include <algorithm>
#include <numeric>

#include "backend/cpu/blas.h"
#include "ops/reduction_ops.h"
#include "ops/rule_util.h"
#include "ops/strided.h"

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

/// Dimensions of an operand that are neither batch nor contracting, in order.
Axes free_dims(int64_t ndim, const Axes& batch, const Axes& contracting) {
  Axes r;
  for (int64_t i = 0; i < ndim; ++i)
    if (std::find(batch.begin(), batch.end(), i) == batch.end() &&
        std::find(contracting.begin(), contracting.end(), i) == contracting.end())
      r.push_back(i);
  return r;
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

/// The dtype dot_general computes in for result dtype `out`: BLAS dtypes as themselves,
/// half types in float32, integers and bool in the result dtype.
DType compute_dtype(DType out) {
  if (out == DType::float16 || out == DType::bfloat16) return DType::float32;
  return out;
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

// ---- kernel ----

// Copies `in` (row-major `shape`) into `out` with its axes permuted by `perm`, converting
// elements to To (the inline conversions of the reductions).
template <class To, class From> void permute_convert(const From* in, const Shape& shape, const Axes& perm, To* out) {
  const auto st = strides_of(shape);
  Shape box;
  std::vector<int64_t> in_strides;
  for (auto d : perm) box.push_back(shape[size_t(d)]), in_strides.push_back(st[size_t(d)]);
  const auto out_strides = strides_of(box);
  for_each_offset(box, 0, out_strides, 0, in_strides,
                  [&](int64_t o, int64_t i) { out[o] = reduce::load<To>(in[i]); });
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

int64_t dims_size(const Shape& s, const Axes& dims) {
  int64_t n = 1;
  for (auto d : dims) n *= s[size_t(d)];
  return n;
}

// Writes operand `in` with its dims permuted to `order`, in dtype `ct`. Same-dtype copies
// move bytes; half operands widen to float32. Other conversions only arise when a program
// binds dot_general with a preferred dtype its operands do not have (the jax.numpy-level
// function converts operands first), so they take a slow per-element path.
void pack(const void* in, const Aval& av, DType ct, const Axes& order, void* out) {
  if (av.dtype == ct)
    return visit_itemsize(itemsize(ct), [&](auto z) {
      using E = decltype(z);
      permute_convert(static_cast<const E*>(in), av.shape, order, static_cast<E*>(out));
    });
  if (ct == DType::float32 && av.dtype == DType::float16)
    return permute_convert(static_cast<const float16_t*>(in), av.shape, order, static_cast<float*>(out));
  if (ct == DType::float32 && av.dtype == DType::bfloat16)
    return permute_convert(static_cast<const bfloat16_t*>(in), av.shape, order, static_cast<float*>(out));
  std::vector<unsigned char> tmp(av.nbytes());
  pack(in, av, av.dtype, order, tmp.data());
  const size_t is = itemsize(av.dtype), os = itemsize(ct);
  for (int64_t i = 0; i < av.size(); ++i)
    Scalar::load(av.dtype, tmp.data() + size_t(i) * is).astype(ct).store(static_cast<unsigned char*>(out) + size_t(i) * os);
}

// One operand as `batch` panels of rows x cols (row-major, or its transpose when `trans`),
// in the compute dtype. Points into the input when its layout and dtype already fit,
// otherwise into `storage`.
struct Panel {
  const void* data;
  bool trans;
  std::vector<unsigned char> storage;
};

// `order` lists dims in the panel layout (batch, rows, cols); `alt` the transposed layout
// (batch, cols, rows) that BLAS can read directly.
Panel make_panel(const void* in, const Aval& av, DType ct, const Axes& order, const Axes& alt, bool allow_trans) {
  if (av.dtype == ct) {
    if (is_identity(order)) return {in, false, {}};
    if (allow_trans && is_identity(alt)) return {in, true, {}};
  }
  Panel p{nullptr, false, std::vector<unsigned char>(size_t(av.size()) * itemsize(ct))};
  pack(in, av, ct, order, p.storage.data());
  p.data = p.storage.data();
  return p;
}

// C (m x n) = A (m x k) * B (k x n) for integers (wrapping) and bool (or of ands), blocked
// so that a k-by-n panel of B stays in cache while the rows of A stream past it.
template <class T> void int_gemm(int64_t m, int64_t n, int64_t k, const T* a, const T* b, T* c) {
  using A = reduce::arith_acc_t<T>;
  constexpr int64_t KB = 128, NB = 512;
  std::fill(c, c + m * n, T(0));
  for (int64_t j0 = 0; j0 < n; j0 += NB) {
    const int64_t j1 = std::min(n, j0 + NB);
    for (int64_t k0 = 0; k0 < k; k0 += KB) {
      const int64_t k1 = std::min(k, k0 + KB);
      for (int64_t i = 0; i < m; ++i) {
        T* crow = c + i * n;
        for (int64_t kk = k0; kk < k1; ++kk) {
          const A av = A(a[i * k + kk]);
          if (av == A(0)) continue;
          const T* brow = b + kk * n;
          for (int64_t j = j0; j < j1; ++j) {
            if constexpr (std::is_same_v<T, bool>) crow[j] = crow[j] || brow[j];
            else crow[j] = T(A(crow[j]) + av * A(brow[j]));
          }
        }
      }
    }
  }
}

void dot_general_kernel(const KernelCall& c) {
  const Aval &l = c.in_avals[0], &r = c.in_avals[1], &o = c.out_avals[0];
  const DotSpec d = DotSpec::from(c.params);
  const Axes lf = free_dims(l.ndim(), d.lb, d.lc), rf = free_dims(r.ndim(), d.rb, d.rc);
  const int64_t batch = dims_size(l.shape, d.lb), m = dims_size(l.shape, lf), n = dims_size(r.shape, rf),
                k = dims_size(l.shape, d.lc);
  if (o.size() == 0) return;
  const DType ct = compute_dtype(o.dtype);
  const bool blas = cpu::gemm_supported(ct);
  const Panel pa = make_panel(c.ins[0], l, ct, concat({&d.lb, &lf, &d.lc}), concat({&d.lb, &d.lc, &lf}), blas);
  const Panel pb = make_panel(c.ins[1], r, ct, concat({&d.rb, &d.rc, &rf}), concat({&d.rb, &rf, &d.rc}), blas);
  // Half results are computed in float and rounded at the end.
  std::vector<float> tmp(ct != o.dtype ? size_t(o.size()) : 0);
  void* out = ct != o.dtype ? static_cast<void*>(tmp.data()) : c.outs[0];
  const size_t es = itemsize(ct);
  for (int64_t bi = 0; bi < batch; ++bi) {
    const auto* a = static_cast<const unsigned char*>(pa.data) + size_t(bi * m * k) * es;
    const auto* b = static_cast<const unsigned char*>(pb.data) + size_t(bi * k * n) * es;
    auto* cc = static_cast<unsigned char*>(out) + size_t(bi * m * n) * es;
    if (blas) {
      cpu::gemm(ct, m, n, k, {a, pa.trans ? m : k, pa.trans}, {b, pb.trans ? k : n, pb.trans}, cc, n);
    } else {
      visit_dtype(ct, [&](auto z) {
        using T = decltype(z);
        if constexpr (std::is_integral_v<T>)
          int_gemm<T>(m, n, k, reinterpret_cast<const T*>(a), reinterpret_cast<const T*>(b), reinterpret_cast<T*>(cc));
      });
    }
  }
  if (ct != o.dtype)
    visit_dtype(o.dtype, [&](auto z) {
      using T = decltype(z);
      if constexpr (is_half_v<T>)
        for (int64_t i = 0; i < o.size(); ++i) c.out<T>(0)[i] = T(tmp[size_t(i)]);
    });
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

Axes argsort(const Axes& v) {
  Axes idx = iota_axes(0, v.size());
  std::sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return v[size_t(a)] < v[size_t(b)]; });
  return idx;
}

// The cotangent of operand x of x . y (JAX's _dot_general_transpose_lhs): contract the
// output cotangent g with y over y's free dimensions, which leaves (batch, x free, x
// contracting in y's order); transposing puts them back in x's order. `swap` says x is the
// rhs (its free dimensions come after y's in g).
Array dot_transpose_operand(const Array& g, const Aval& x, const Array& y, const Axes& x_contract,
                            const Axes& y_contract, const Axes& x_batch, const Axes& y_batch, bool swap) {
  const Axes x_kept = free_dims(x.ndim(), x_batch, x_contract), y_kept = free_dims(y.ndim(), y_batch, y_contract);
  const int64_t nb = int64_t(x_batch.size());
  const Axes g_batch = iota_axes(0, x_batch.size());
  const Axes g_y = iota_axes(swap ? nb : nb + int64_t(x_kept.size()), y_kept.size());
  // g's dtype may be a preferred result dtype wider than the operands': compute in it and
  // convert back.
  const Array yc = convert(y, g.dtype(), y.weak_type());
  const Array r = dot_general(g, yc, {g_y, y_kept, g_batch, y_batch});
  Axes order = x_batch;
  order.insert(order.end(), x_kept.begin(), x_kept.end());
  for (auto i : argsort(y_contract)) order.push_back(x_contract[size_t(i)]);
  return convert(transpose(r, argsort(order)), x.dtype, x.weak_type);
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

// Both operands batched: the batch dimensions become a leading batch dimension of the
// product. One batched: its batch dimension is one more free dimension, which appears in the
// output after the batch dimensions (and the lhs free dimensions, for the rhs) in order.
Batched dot_general_batch(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                          const BatchAxis&, const Params& p) {
  const DotSpec d = DotSpec::from(p);
  const int64_t lbd = dims[0], rbd = dims[1];
  if (lbd != kNotBatched && rbd != kNotBatched) {
    const Array l = moveaxis(ins[0], lbd, 0), r = moveaxis(ins[1], rbd, 0);
    DotSpec e{shift_dims(d.lc, 0), shift_dims(d.rc, 0), shift_dims(d.lb, 0), shift_dims(d.rb, 0)};
    e.lb.insert(e.lb.begin(), 0);
    e.rb.insert(e.rb.begin(), 0);
    return {detail::bind(self, std::vector<Array>{l, r}, dot_params(e, p)), {0}};
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

const ir::Primitive& dot_general_p = ir::register_primitive({.name = "dot_general",
                                                             .abstract_eval = dot_general_aval,
                                                             .cpu_kernel = dot_general_kernel,
                                                             .jvp = dot_general_jvp,
                                                             .transpose = dot_general_transpose,
                                                             .batch = dot_general_batch});

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

}  // namespace tessel::ops

namespace tessel {

Array dot_general(const Array& a, const Array& b, const DotDims& dims, std::optional<DType> preferred) {
  auto [x, y] = ops::promote_pair(a, b);
  if (preferred) {
    // Converting first lets the kernel multiply in the preferred dtype (int8 -> int32 or
    // float32 products use integer or BLAS loops without per-element conversion).
    ops::check_preferred(x.dtype(), *preferred);
    const DType ct = ops::compute_dtype(*preferred);
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

Array outer(const Array& a, const Array& b) { return multiply(reshape(a, {a.size(), 1}), reshape(b, {1, b.size()})); }

Array trace(const Array& x) {
  if (x.ndim() < 2)
    throw ValueError("trace: the array must be at least 2-D, got shape " + shape_to_string(x.shape()));
  return sum(ops::diagonal_front(x, 0, 1), {0});
}

}  // namespace tessel
