#pragma once
// Index-remapping loops shared by the shape and indexing kernels. Kernels see dense
// row-major buffers, so slice, transpose, rev, pad, concatenate and the windows of
// gather/scatter are all walks over a box whose elements map affinely to offsets in an
// output and an input buffer.
#include <cstring>
#include <span>

#include "ops/op_util.h"

namespace tessel::ops {

/// Calls f(a, b) for every element of `box` in row-major order, where
/// a = a0 + sum_d i_d * sa[d] and b = b0 + sum_d i_d * sb[d].
template <class F>
void for_each_offset(const Shape& box, int64_t a0, std::span<const int64_t> sa, int64_t b0,
                     std::span<const int64_t> sb, F&& f) {
  const size_t r = box.size();
  if (shape_size(box) == 0) return;
  if (r == 0) return f(a0, b0);
  const int64_t n = box[r - 1], da = sa[r - 1], db = sb[r - 1];
  std::vector<int64_t> idx(r, 0);
  int64_t a = a0, b = b0;
  for (;;) {
    for (int64_t k = 0; k < n; ++k) f(a + k * da, b + k * db);
    for (size_t d = r - 1;;) {  // odometer over the outer dimensions
      if (d == 0) return;
      --d;
      a += sa[d];
      b += sb[d];
      if (++idx[d] < box[d]) break;
      a -= sa[d] * box[d];
      b -= sb[d] * box[d];
      idx[d] = 0;
    }
  }
}

struct alignas(8) Elem16 {
  uint64_t lo, hi;
};

/// Calls f(E{}) with E a trivially copyable type of `itemsize` bytes: copies do not care
/// about the dtype, only its size.
template <class F> decltype(auto) visit_itemsize(size_t itemsize, F&& f) {
  switch (itemsize) {
    case 1: return f(uint8_t{});
    case 2: return f(uint16_t{});
    case 4: return f(uint32_t{});
    case 8: return f(uint64_t{});
    default: return f(Elem16{});
  }
}

/// out[a] = in[b] over `box` (offsets in elements, as for for_each_offset).
inline void strided_copy(size_t itemsize, const Shape& box, void* out, int64_t a0, std::span<const int64_t> sa,
                         const void* in, int64_t b0, std::span<const int64_t> sb) {
  visit_itemsize(itemsize, [&](auto z) {
    using E = decltype(z);
    E* o = static_cast<E*>(out);
    const E* i = static_cast<const E*>(in);
    if (!box.empty() && sa.back() == 1 && sb.back() == 1) {  // contiguous rows: copy them whole
      const size_t row = size_t(box.back()) * sizeof(E);
      const Shape outer(box.begin(), box.end() - 1);
      for_each_offset(outer, a0, sa, b0, sb, [&](int64_t a, int64_t b) { std::memcpy(o + a, i + b, row); });
      return;
    }
    for_each_offset(box, a0, sa, b0, sb, [&](int64_t a, int64_t b) { o[a] = i[b]; });
  });
}

/// Row-major strides of `shape`, scaled per dimension by `scale` (for strided windows).
inline std::vector<int64_t> scaled_strides(const Shape& shape, std::span<const int64_t> scale) {
  auto st = strides_of(shape);
  for (size_t d = 0; d < st.size(); ++d) st[d] *= scale[d];
  return st;
}

}  // namespace tessel::ops
