// The CPU kernel of dot_general. Each operand is read as a batch of matrices — (M, K) for the
// lhs, (K, N) for the rhs — in place whenever its free and contracting dimensions each merge
// into one strided dimension and one of the two is contiguous: BLAS takes the other stride
// as its leading dimension and the transpose flag says which is which, and batch dimensions
// may sit anywhere (one offset per batch element). Only other layouts, and dtypes BLAS
// lacks as inputs (float16, bfloat16: widened to float32), are packed into a dense copy.
// Integers and bool, and products too small to pay for a BLAS call, use a blocked loop.
// Products are split over the shared arena (cpu::for_each_product_block).
#include <algorithm>
#include <cstring>
#include <optional>

#include "backend/cpu/blas.h"
#include "ops/linalg.h"
#include "backend/cpu/reduction_ops.h"
#include "ops/strided.h"

namespace tessel::ops {
namespace {

// Products of at most this many multiply-adds skip BLAS: its per-call cost (argument
// checks, buffer allocation, packing) is larger than the work.
constexpr int64_t kSmallProduct = 2048;

/// One operand as a batch of matrices: element (b, i, j) at offsets[b] + i * rs + j * cs
/// (in elements of `data`). A stride is 0 when its dimension has size <= 1.
struct MatrixView {
  const void* data = nullptr;
  std::vector<int64_t> offsets;
  int64_t rs = 0, cs = 0;
  std::vector<unsigned char> storage;  // the packed copy, when there is one
};

/// The stride of dims `g` of a row-major array, read as one dimension (row-major over g in
/// the order given), or nullopt when they do not merge; 0 when they hold at most 1 element.
std::optional<int64_t> merged_stride(const Shape& s, const std::vector<int64_t>& st, const Axes& g) {
  int64_t stride = 0;
  for (auto d : g) {
    if (s[size_t(d)] == 1) continue;
    if (stride != 0 && stride != st[size_t(d)] * s[size_t(d)]) return std::nullopt;
    stride = st[size_t(d)];
  }
  return stride;
}

/// Element offset of each batch element (row-major over `batch`, in the order given).
std::vector<int64_t> batch_offsets(const Shape& s, const std::vector<int64_t>& st, const Axes& batch) {
  Shape box;
  std::vector<int64_t> in;
  for (auto d : batch) box.push_back(s[size_t(d)]), in.push_back(st[size_t(d)]);
  std::vector<int64_t> r(size_t(shape_size(box)));
  for_each_offset(box, 0, strides_of(box), 0, in, [&](int64_t o, int64_t i) { r[size_t(o)] = i; });
  return r;
}

int64_t dims_size(const Shape& s, const Axes& dims) {
  int64_t n = 1;
  for (auto d : dims) n *= s[size_t(d)];
  return n;
}

/// How BLAS reads an (r x c) matrix view in place, if its rows or its columns are
/// contiguous; nullopt otherwise.
std::optional<cpu::GemmOperand> blas_operand(const MatrixView& v, int64_t r, int64_t c) {
  if ((c <= 1 || v.cs == 1) && (r <= 1 || v.rs >= std::max<int64_t>(c, 1)))
    return cpu::GemmOperand{v.data, r <= 1 ? std::max<int64_t>(c, 1) : v.rs, false, v.offsets};
  if ((r <= 1 || v.rs == 1) && (c <= 1 || v.cs >= std::max<int64_t>(r, 1)))
    return cpu::GemmOperand{v.data, c <= 1 ? std::max<int64_t>(r, 1) : v.cs, true, v.offsets};
  return std::nullopt;
}

// Copies `in` (row-major `shape`) into `out` with its axes permuted by `perm`, converting
// elements to To (the inline conversions of the reductions).
template <class To, class From> void permute_convert(const From* in, const Shape& shape, const Axes& perm, To* out) {
  const auto st = strides_of(shape);
  Shape box;
  std::vector<int64_t> in_strides;
  for (auto d : perm) box.push_back(shape[size_t(d)]), in_strides.push_back(st[size_t(d)]);
  for_each_offset(box, 0, strides_of(box), 0, in_strides,
                  [&](int64_t o, int64_t i) { out[o] = cpu::reduce::load<To>(in[i]); });
}

// Writes operand `in` with its dims permuted to `order`, in dtype `ct`. Same-dtype copies
// move bytes; half operands widen to float32. Other conversions only arise when a program
// binds dot_general with a preferred dtype its operands do not have (the jax.numpy-level
// function converts operands first), so they take a slow per-element path.
void pack(const void* in, const Aval& av, DType ct, const Axes& order, void* out) {
  if (av.dtype == ct) {
    Shape box;
    std::vector<int64_t> in_strides;
    const auto st = strides_of(av.shape);
    for (auto d : order) box.push_back(av.shape[size_t(d)]), in_strides.push_back(st[size_t(d)]);
    return strided_copy(itemsize(ct), box, out, 0, strides_of(box), in, 0, in_strides);
  }
  if (ct == DType::float32 && av.dtype == DType::float16)
    return permute_convert(static_cast<const float16_t*>(in), av.shape, order, static_cast<float*>(out));
  if (ct == DType::float32 && av.dtype == DType::bfloat16)
    return permute_convert(static_cast<const bfloat16_t*>(in), av.shape, order, static_cast<float*>(out));
  std::vector<unsigned char> tmp(av.nbytes());
  pack(in, av, av.dtype, order, tmp.data());
  const size_t is = itemsize(av.dtype), os = itemsize(ct);
  auto* o = static_cast<unsigned char*>(out);
  for (int64_t i = 0; i < av.size(); ++i)
    Scalar::load(av.dtype, tmp.data() + size_t(i) * is).astype(ct).store(o + size_t(i) * os);
}

Axes concat(const Axes& a, const Axes& b, const Axes& c) {
  Axes r = a;
  r.insert(r.end(), b.begin(), b.end());
  r.insert(r.end(), c.begin(), c.end());
  return r;
}

/// What the product needs of an operand's layout.
enum class Need {
  kBlas,        // rows or columns contiguous, leading dimension large enough
  kMerged,      // rows and columns each one strided dimension (small products)
  kColumnsUnit  // merged, and columns contiguous (the inner loop of the integer product)
};

/// Operand `in` (aval `av`) as a batch of (rows x cols) matrices in dtype `ct`, read in
/// place when its layout satisfies `need`, otherwise packed (batch, rows, cols) — or
/// (batch, cols, rows) when the operand's innermost dimension is a row dimension, which
/// keeps the copy's inner loop contiguous.
MatrixView operand_view(const void* in, const Aval& av, DType ct, const Axes& batch, const Axes& rows,
                        const Axes& cols, Need need) {
  const int64_t r = dims_size(av.shape, rows), c = dims_size(av.shape, cols);
  const auto st = strides_of(av.shape);
  if (av.dtype == ct) {
    const auto rs = merged_stride(av.shape, st, rows), cs = merged_stride(av.shape, st, cols);
    if (rs && cs) {
      MatrixView v{in, batch_offsets(av.shape, st, batch), *rs, *cs, {}};
      const bool ok = need == Need::kBlas     ? blas_operand(v, r, c).has_value()
                      : need == Need::kMerged ? true
                                              : c <= 1 || v.cs == 1;
      if (ok) return v;
    }
  }
  int64_t inner = -1;  // the innermost dimension of size > 1
  for (int64_t d = av.ndim() - 1; d >= 0 && inner < 0; --d)
    if (av.shape[size_t(d)] > 1) inner = d;
  const bool rows_inner = need != Need::kColumnsUnit && inner >= 0 &&
                          std::find(rows.begin(), rows.end(), inner) != rows.end();
  MatrixView v;
  v.storage.resize(size_t(av.size()) * itemsize(ct));
  pack(in, av, ct, rows_inner ? concat(batch, cols, rows) : concat(batch, rows, cols), v.storage.data());
  v.data = v.storage.data();
  v.rs = rows_inner ? 1 : c;
  v.cs = rows_inner ? r : 1;
  const int64_t nb = dims_size(av.shape, batch);
  for (int64_t b = 0; b < nb; ++b) v.offsets.push_back(b * r * c);
  return v;
}

// Block p of C_b = A_b * B_b for strided views, in i-k-j order (the inner loop runs along a
// row of B and of C), tiled so that a panel of B stays in cache while rows of A stream past.
// Integers wrap (accumulated in unsigned types, like the reductions); bool is or-of-ands.
template <class T>
void loop_product(const cpu::ProductBlock& p, int64_t m, int64_t n, int64_t k, const MatrixView& av,
                  const MatrixView& bv, T* out) {
  using A = cpu::reduce::arith_acc_t<T>;
  constexpr int64_t KB = 128, NB = 512;
  const T* a = static_cast<const T*>(av.data) + av.offsets[size_t(p.b)];
  const T* b = static_cast<const T*>(bv.data) + bv.offsets[size_t(p.b)];
  T* c = out + p.b * m * n;
  // A product with one term is that term (-1 * 0 is -0, as XLA gives); longer sums start at +0.
  const bool single_term = k == 1;
  for (int64_t i = p.i0; i < p.i1; ++i) std::fill(c + i * n + p.j0, c + i * n + p.j1, T(0));
  for (int64_t j0 = p.j0; j0 < p.j1; j0 += NB) {
    const int64_t j1 = std::min(p.j1, j0 + NB);
    for (int64_t k0 = 0; k0 < k; k0 += KB) {
      const int64_t k1 = std::min(k, k0 + KB);
      for (int64_t i = p.i0; i < p.i1; ++i) {
        T* crow = c + i * n;
        for (int64_t kk = k0; kk < k1; ++kk) {
          const A x = A(a[i * av.rs + kk * av.cs]);
          if constexpr (std::is_integral_v<T>)  // skipping zeros would lose NaN * 0 for floats
            if (x == A(0)) continue;
          const T* brow = b + kk * bv.rs;
          const auto update = [&](T& cj, T bj) {
            if constexpr (std::is_same_v<T, bool>) cj = cj || bj;
            else if constexpr (std::is_integral_v<T>) cj = T(A(cj) + x * A(bj));
            else cj = single_term ? T(x * A(bj)) : T(A(cj) + x * A(bj));
          };
          if (bv.cs == 1) {
            for (int64_t j = j0; j < j1; ++j) update(crow[j], brow[j]);
          } else {
            for (int64_t j = j0; j < j1; ++j) update(crow[j], brow[j * bv.cs]);
          }
        }
      }
    }
  }
}

}  // namespace

Axes free_dims(int64_t ndim, const Axes& batch, const Axes& contracting) {
  Axes r;
  for (int64_t i = 0; i < ndim; ++i)
    if (std::find(batch.begin(), batch.end(), i) == batch.end() &&
        std::find(contracting.begin(), contracting.end(), i) == contracting.end())
      r.push_back(i);
  return r;
}

DType dot_compute_dtype(DType out) {
  if (out == DType::float16 || out == DType::bfloat16) return DType::float32;
  return out;
}

void dot_general_kernel(const ir::KernelCall& c) {
  const Aval &l = c.in_avals[0], &r = c.in_avals[1], &o = c.out_avals[0];
  const Axes lc = c.params.get_ints("lhs_contracting"), rc = c.params.get_ints("rhs_contracting"),
             lb = c.params.get_ints("lhs_batch"), rb = c.params.get_ints("rhs_batch");
  const Axes lf = free_dims(l.ndim(), lb, lc), rf = free_dims(r.ndim(), rb, rc);
  const int64_t batch = dims_size(l.shape, lb), m = dims_size(l.shape, lf), n = dims_size(r.shape, rf),
                k = dims_size(l.shape, lc);
  if (o.size() == 0) return;
  if (k == 0) {  // empty sums: zeros (all-zero bytes in every dtype)
    std::memset(c.outs[0], 0, o.nbytes());
    return;
  }
  const DType ct = dot_compute_dtype(o.dtype);
  // k == 1 (outer products, batched element-wise products) stays off BLAS: the loop keeps
  // the sign of zero products, and there is no sum for BLAS to speed up.
  const bool blas = cpu::gemm_supported(ct) && m * n * k > kSmallProduct && k > 1;
  // The integer loop wants unit-stride rows of B; small floating products take any layout.
  const Need rhs_need = blas ? Need::kBlas : is_inexact(ct) ? Need::kMerged : Need::kColumnsUnit;
  const MatrixView a = operand_view(c.ins[0], l, ct, lb, lf, lc, blas ? Need::kBlas : Need::kMerged);
  const MatrixView b = operand_view(c.ins[1], r, ct, rb, rc, rf, rhs_need);
  // Half results are computed in float and rounded at the end.
  std::vector<float> tmp(ct != o.dtype ? size_t(o.size()) : 0);
  void* out = ct != o.dtype ? static_cast<void*>(tmp.data()) : c.outs[0];
  if (blas) {
    cpu::gemm(ct, batch, m, n, k, *blas_operand(a, m, k), *blas_operand(b, k, n), out, n, m * n);
  } else {
    visit_dtype(ct, [&](auto z) {
      using T = decltype(z);
      if constexpr (!is_half_v<T>)
        cpu::for_each_product_block(batch, m, n, k, [&](const cpu::ProductBlock& p) {
          loop_product<T>(p, m, n, k, a, b, static_cast<T*>(out));
        });
    });
  }
  if (ct != o.dtype)
    visit_dtype(o.dtype, [&](auto z) {
      using T = decltype(z);
      if constexpr (is_half_v<T>)
        for (int64_t i = 0; i < o.size(); ++i) c.out<T>(0)[i] = T(tmp[size_t(i)]);
    });
}

}  // namespace tessel::ops
