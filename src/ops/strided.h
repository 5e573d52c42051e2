#pragma once
// Index-remapping loops shared by the shape and indexing kernels. Kernels see dense
// row-major buffers, so slice, transpose, rev, pad, concatenate and the windows of
// gather/scatter are all walks over a box whose elements map affinely to offsets in an
// output and an input buffer.
#include <algorithm>
#include <cstring>
#include <span>
#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "ops/op_util.h"

namespace tessel::ops {

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

/// Elements one task of a parallel copy or fill holds at least; smaller arrays stay on the
/// calling thread (a task costs a few microseconds, a 32K-element copy about as much).
inline constexpr int64_t kCopyGrain = int64_t(1) << 15;

/// Calls f(a, b) with the offsets of the first element of rows [row_lo, row_hi) of `box`, a
/// row being one index of every dimension but the last (row-major order; offsets as for
/// for_each_offset). A rank-0 box has one row.
template <class F>
void for_each_row_start(const Shape& box, int64_t row_lo, int64_t row_hi, int64_t a0, std::span<const int64_t> sa,
                        int64_t b0, std::span<const int64_t> sb, F&& f) {
  const size_t outer = box.empty() ? 0 : box.size() - 1;
  std::vector<int64_t> idx(outer, 0);
  int64_t a = a0, b = b0;
  for (size_t d = outer, rest = size_t(row_lo); d-- > 0;) {  // the index of row_lo
    idx[d] = int64_t(rest % size_t(box[d]));
    rest /= size_t(box[d]);
    a += idx[d] * sa[d];
    b += idx[d] * sb[d];
  }
  for (int64_t row = row_lo; row < row_hi; ++row) {
    f(a, b);
    for (size_t d = outer; d-- > 0;) {  // odometer over the outer dimensions
      a += sa[d];
      b += sb[d];
      if (++idx[d] < box[d]) break;
      a -= sa[d] * box[d];
      b -= sb[d] * box[d];
      idx[d] = 0;
    }
  }
}

/// Like for_each_offset, for the elements of rows [row_lo, row_hi) of `box` only.
template <class F>
void for_each_offset_in_rows(const Shape& box, int64_t row_lo, int64_t row_hi, int64_t a0, std::span<const int64_t> sa,
                             int64_t b0, std::span<const int64_t> sb, F&& f) {
  const int64_t n = box.empty() ? 1 : box.back(), da = box.empty() ? 0 : sa.back(), db = box.empty() ? 0 : sb.back();
  for_each_row_start(box, row_lo, row_hi, a0, sa, b0, sb, [&](int64_t a, int64_t b) {
    for (int64_t k = 0; k < n; ++k) f(a + k * da, b + k * db);
  });
}

/// Calls f(a, b) for every element of `box` in row-major order, where
/// a = a0 + sum_d i_d * sa[d] and b = b0 + sum_d i_d * sb[d].
template <class F>
void for_each_offset(const Shape& box, int64_t a0, std::span<const int64_t> sa, int64_t b0,
                     std::span<const int64_t> sb, F&& f) {
  const int64_t n = shape_size(box);
  if (n == 0) return;
  for_each_offset_in_rows(box, 0, box.empty() ? 1 : n / box.back(), a0, sa, b0, sb, f);
}

/// Calls fn(row_lo, row_hi) over the rows of `box` (every dimension but the last), split over
/// the shared arena in chunks of at least kCopyGrain elements; inline for small boxes.
template <class F> void parallel_box_rows(const Shape& box, F&& fn) {
  const int64_t len = box.empty() ? 1 : std::max<int64_t>(box.back(), 1);
  const int64_t rows = box.empty() ? 1 : shape_size(box) / len;
  if (rows * len <= kCopyGrain) return fn(int64_t(0), rows);
  cpu::parallel_for(rows, std::max<int64_t>(1, kCopyGrain / len), fn);
}

/// Fills n items of `out` with `value`, split over the arena for large n.
template <class E> void parallel_fill(E* out, int64_t n, const E& value) {
  auto body = [&](int64_t lo, int64_t hi) { std::fill(out + lo, out + hi, value); };
  if (n <= kCopyGrain) body(0, n);
  else cpu::parallel_for(n, kCopyGrain, body);
}

/// Copies n bytes, split over the arena for large n.
inline void parallel_memcpy(void* out, const void* in, size_t n) {
  constexpr int64_t kGrainBytes = kCopyGrain * 8;
  auto body = [&](int64_t lo, int64_t hi) {
    std::memcpy(static_cast<char*>(out) + lo, static_cast<const char*>(in) + lo, size_t(hi - lo));
  };
  if (int64_t(n) <= kGrainBytes) body(0, int64_t(n));
  else cpu::parallel_for(int64_t(n), kGrainBytes, body);
}

/// Side of the square tiles of a transposing copy (twice this for items of up to 4 bytes):
/// a tile's buffer stays in L1, and consecutive tiles walk along the input's rows.
inline constexpr int64_t kTransposeTile = 32;

/// dst[r * ld + c] = src[c * stride + r] for a 4 x 4 block of 4-byte items (SSE2, which
/// every x86-64 has; a scalar loop elsewhere).
inline void transpose4x4(const uint32_t* src, int64_t stride, uint32_t* dst, int64_t ld) {
#if defined(__SSE2__)
  __m128 r0 = _mm_castsi128_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src)));
  __m128 r1 = _mm_castsi128_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + stride)));
  __m128 r2 = _mm_castsi128_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * stride)));
  __m128 r3 = _mm_castsi128_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 3 * stride)));
  _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm_castps_si128(r0));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + ld), _mm_castps_si128(r1));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 2 * ld), _mm_castps_si128(r2));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 3 * ld), _mm_castps_si128(r3));
#else
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t c = 0; c < 4; ++c) dst[r * ld + c] = src[c * stride + r];
#endif
}

/// out[a] = in[b] over `box` where the output's last dimension is contiguous (sa = 1) and the
/// input is contiguous along dimension k (sb[k] = 1): a transpose. Copies tile by tile, so
/// both sides are read and written whole cache lines at a time; tiles are split over the arena.
template <class E>
void tiled_transpose_copy(const Shape& box, size_t k, E* o, int64_t a0, std::span<const int64_t> sa, const E* i,
                          int64_t b0, std::span<const int64_t> sb) {
  constexpr int64_t T = sizeof(E) <= 4 ? 2 * kTransposeTile : kTransposeTile;
  const size_t l = box.size() - 1;
  const int64_t nk = box[k], nl = box[l], tk = (nk + T - 1) / T, tl = (nl + T - 1) / T;
  Shape outer;
  std::vector<int64_t> sa_o, sb_o;
  for (size_t d = 0; d < l; ++d)
    if (d != k) outer.push_back(box[d]), sa_o.push_back(sa[d]), sb_o.push_back(sb[d]);
  const int64_t tiles = shape_size(outer) * tk * tl;
  auto body = [&](int64_t lo, int64_t hi) {
    E buf[T][T];
    for (int64_t t = lo; t < hi; ++t) {
      int64_t rest = t / (tk * tl), a = a0, b = b0;
      for (size_t d = outer.size(); d-- > 0;) {
        const int64_t x = rest % outer[d];
        rest /= outer[d];
        a += x * sa_o[d];
        b += x * sb_o[d];
      }
      const int64_t k0 = (t % tk) * T, l0 = (t / tk % tl) * T;
      const int64_t mk = std::min(nk, k0 + T) - k0, ml = std::min(nl, l0 + T) - l0, sbl = sb[l];
      // Through a buffer in L1: input rows are read whole and output rows written whole, so
      // power-of-two strides (whose lines share a cache set) are each touched once.
      if constexpr (sizeof(E) == 4) {
        if (mk == T && ml == T) {  // a full tile of 4-byte items: 4 x 4 blocks in registers
          for (int64_t j = 0; j < T; j += 4)
            for (int64_t kk = 0; kk < T; kk += 4) transpose4x4(i + b + k0 + kk + (l0 + j) * sbl, sbl, &buf[kk][j], T);
          for (int64_t kk = 0; kk < T; ++kk) {
            E* dst = o + a + (k0 + kk) * sa[k] + l0;
            for (int64_t j = 0; j < T; ++j) dst[j] = buf[kk][j];
          }
          continue;
        }
      }
      for (int64_t j = 0; j < ml; ++j) {
        const E* src = i + b + k0 + (l0 + j) * sbl;
        for (int64_t kk = 0; kk < mk; ++kk) buf[kk][j] = src[kk];
      }
      for (int64_t kk = 0; kk < mk; ++kk) std::memcpy(o + a + (k0 + kk) * sa[k] + l0, buf[kk], size_t(ml) * sizeof(E));
    }
  };
  if (tiles * T * T <= kCopyGrain) body(0, tiles);
  else cpu::parallel_for(tiles, std::max<int64_t>(1, kCopyGrain / (T * T)), body);
}

/// out[a] = in[b] over `box` (offsets in elements, as for for_each_offset), split over the
/// shared arena for large boxes: whole contiguous rows by memcpy, transposes by tiles, other
/// layouts element by element. Every output element is written once, so the result does not
/// depend on the thread count.
inline void strided_copy(size_t itemsize, const Shape& box, void* out, int64_t a0, std::span<const int64_t> sa,
                         const void* in, int64_t b0, std::span<const int64_t> sb) {
  if (shape_size(box) == 0) return;
  visit_itemsize(itemsize, [&](auto z) {
    using E = decltype(z);
    E* o = static_cast<E*>(out);
    const E* i = static_cast<const E*>(in);
    if (!box.empty() && sa.back() == 1 && sb.back() == 1) {  // contiguous rows: copy them whole
      const size_t row = size_t(box.back()) * sizeof(E);
      parallel_box_rows(box, [&](int64_t lo, int64_t hi) {
        for_each_row_start(box, lo, hi, a0, sa, b0, sb, [&](int64_t a, int64_t b) { std::memcpy(o + a, i + b, row); });
      });
      return;
    }
    if (box.size() >= 2 && sa.back() == 1 && box.back() > 1) {
      for (size_t k = 0; k + 1 < box.size(); ++k)
        if (sb[k] == 1 && box[k] > 1) return tiled_transpose_copy(box, k, o, a0, sa, i, b0, sb);
    }
    parallel_box_rows(box, [&](int64_t lo, int64_t hi) {
      for_each_offset_in_rows(box, lo, hi, a0, sa, b0, sb, [&](int64_t a, int64_t b) { o[a] = i[b]; });
    });
  });
}

/// Row-major strides of `shape`, scaled per dimension by `scale` (for strided windows).
inline std::vector<int64_t> scaled_strides(const Shape& shape, std::span<const int64_t> scale) {
  auto st = strides_of(shape);
  for (size_t d = 0; d < st.size(); ++d) st[d] *= scale[d];
  return st;
}

}  // namespace tessel::ops
