// Sorting rows by order-preserving unsigned keys. A key of up to 32 bits and the element's
// current position are packed into one 64-bit word (key high, position low), so sorting the
// words is a stable sort of the keys. Long rows are sorted by a radix sort over the key's
// bytes (8-bit digits, skipping digits that never differ): very long ones split by their top
// byte first, then sort the buckets in cache, in parallel; short rows by std::sort. Wider keys
// (64-bit types) and several keys (lax.sort's num_keys, complex parts) are sorted one
// 32-bit word at a time from the least significant, each pass stable (LSD over words).
#include "ops/sort_kernel.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <complex>
#include <cstring>

#include <sys/mman.h>

#include "backend/cpu/parallel.h"
#include "tessel/error.h"

namespace tessel::ops::sortk {
namespace {

/// Rows shorter than this are sorted by std::sort; longer ones by radix passes.
constexpr int64_t kRadixMin = 2048;
/// Elements per task when one long row's passes are split over threads.
constexpr int64_t kParallelGrain = int64_t(1) << 16;

/// fn(lo, hi) over [0, n), split over the arena when `parallel` and n is large.
template <class F> void chunked(int64_t n, bool parallel, F&& fn) {
  if (!parallel || n <= kParallelGrain) fn(int64_t(0), n);
  else cpu::parallel_for(n, kParallelGrain, fn);
}

/// The order-preserving key of IEEE bits `b` (sign bit `sign`, infinity `inf`): negative
/// values reversed below the positive ones.
template <class U> U float_key(U b, U sign, U inf, FloatOrder order) {
  if (order == FloatOrder::kSort) {
    if (U(b & U(~sign)) > inf) return U(~U(0));  // every NaN: above +inf, equal to the others
    if (b == sign) b = 0;                       // -0.0 equals 0.0
  }
  return (b & sign) ? U(~b) : U(b | sign);
}

template <class T> uint64_t key_of(T v, FloatOrder order) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? 1 : 0;
  } else if constexpr (std::is_same_v<T, float16_t>) {
    return float_key<uint16_t>(v.bits, 0x8000, 0x7c00, order);
  } else if constexpr (std::is_same_v<T, bfloat16_t>) {
    return float_key<uint16_t>(v.bits, 0x8000, 0x7f80, order);
  } else if constexpr (std::is_same_v<T, float>) {
    uint32_t b;
    std::memcpy(&b, &v, 4);
    return float_key<uint32_t>(b, 0x80000000u, 0x7f800000u, order);
  } else if constexpr (std::is_same_v<T, double>) {
    uint64_t b;
    std::memcpy(&b, &v, 8);
    return float_key<uint64_t>(b, uint64_t(1) << 63, 0x7ff0000000000000ull, order);
  } else if constexpr (std::is_signed_v<T>) {
    using U = std::make_unsigned_t<T>;
    return uint64_t(U(U(v) ^ (U(1) << (sizeof(T) * 8 - 1))));
  } else {
    return uint64_t(v);
  }
}

/// One 32-bit word of a key: the whole key (up to 32 bits), or the high or low half of a
/// 64-bit one.
struct Word {
  const KeyColumn* column;
  int shift;  // 0 or 32
  int bytes;  // significant bytes of the word
};

template <class T> constexpr bool is_complex_type = false;
template <class F> constexpr bool is_complex_type<std::complex<F>> = true;

/// Word `shift` (0 or 32) of v's key, the key reversed (within its width) when descending.
template <class E> uint32_t word_of(E v, FloatOrder order, bool descending, int shift) {
  constexpr int bits = std::is_same_v<E, bool> ? 8 : int(sizeof(E) * 8);
  constexpr uint64_t mask = bits == 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1;
  uint64_t k = key_of(v, order);
  if (descending) k = ~k & mask;
  return uint32_t(k >> shift);
}

/// Whether kSort's key of v stands for other values too (-0.0 and NaNs): then the sorted
/// keys do not give the values back.
template <class T> bool merged_key(T v) {
  if constexpr (std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>) {
    return v.bits == 0x8000 || std::isnan(float(v));
  } else if constexpr (std::is_floating_point_v<T>) {
    return std::isnan(v) || (v == 0 && std::signbit(v));
  } else {
    return false;
  }
}

/// Packs word `w` of the elements at positions perm[i] (i when perm is empty) with i.
/// Sets `merged` when a packed key stands for several values (merged_key).
template <class T> void pack_word(const Word& w, const Rows& rows, int64_t r, FloatOrder order, bool descending,
                                  std::span<const uint32_t> perm, uint64_t* items, bool parallel,
                                  std::atomic<bool>& merged) {
  const int64_t base = rows.base(r), inner = rows.inner, n = rows.n;
  auto at = [&](int64_t i) { return perm.empty() ? i : int64_t(perm[size_t(i)]); };
  if constexpr (is_complex_type<T>) {
    using F = typename T::value_type;
    const F* parts = static_cast<const F*>(w.column->data);
    const int64_t off = w.column->imag ? 1 : 0;
    chunked(n, parallel, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i)
        items[i] = uint64_t(word_of(parts[2 * (base + at(i) * inner) + off], order, descending, w.shift)) << 32 |
                   uint64_t(i);
    });
  } else {
    const T* x = static_cast<const T*>(w.column->data) + base;
    chunked(n, parallel, [&](int64_t lo, int64_t hi) {
      if (perm.empty() && inner == 1) {
        bool any = false;
        for (int64_t i = lo; i < hi; ++i) {
          items[i] = uint64_t(word_of(x[i], order, descending, w.shift)) << 32 | uint64_t(i);
          any |= merged_key(x[i]);
        }
        if (any && order == FloatOrder::kSort) merged = true;
      } else {
        merged = true;  // (only single contiguous keys are written back from their keys)
        for (int64_t i = lo; i < hi; ++i)
          items[i] = uint64_t(word_of(x[at(i) * inner], order, descending, w.shift)) << 32 | uint64_t(i);
      }
    });
  }
}

/// Bits of one radix digit (measured: 8-bit digits beat 11-bit ones on 16M float32 keys,
/// 4 passes against 3, as their scatter writes to fewer places at once).
constexpr int kDigitBits = 8;
constexpr int kBuckets = 1 << kDigitBits;

/// fn(t) for t in [0, chunks), in parallel on the arena when there are several.
template <class F> void each_chunk(int64_t chunks, const F& fn) {
  if (chunks == 1) fn(int64_t(0));
  else cpu::parallel_for(chunks, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) fn(t);
  });
}

/// Sorts packed words by their low `bytes` key bytes (of the high half), LSD: returns the
/// buffer holding the result (a or b). Each pass counts digits per chunk, then each chunk
/// scatters its elements to its own ranges; a pass whose digit is the same everywhere is
/// skipped.
uint64_t* lsd_sort(uint64_t* a, uint64_t* b, int64_t n, int bytes, int64_t chunks) {
  std::vector<std::array<int64_t, kBuckets>> count(static_cast<size_t>(chunks));
  for (int bit = 0; bit < 8 * bytes; bit += kDigitBits) {
    const int shift = 32 + bit;
    const uint64_t mask = (uint64_t(1) << std::min(kDigitBits, 8 * bytes - bit)) - 1;
    each_chunk(chunks, [&](int64_t t) {
      auto& c = count[size_t(t)];
      c.fill(0);
      for (int64_t i = n * t / chunks, e = n * (t + 1) / chunks; i < e; ++i) ++c[(a[i] >> shift) & mask];
    });
    bool uniform = false;
    int64_t offset = 0;
    for (uint64_t d = 0; d <= mask; ++d) {
      int64_t total = 0;
      for (auto& c : count) total += c[d];
      if (total == n) uniform = true;
      for (auto& c : count) {
        const int64_t k = c[d];
        c[d] = offset;
        offset += k;
      }
    }
    if (uniform) continue;
    each_chunk(chunks, [&](int64_t t) {
      auto& c = count[size_t(t)];
      for (int64_t i = n * t / chunks, e = n * (t + 1) / chunks; i < e; ++i) b[c[(a[i] >> shift) & mask]++] = a[i];
    });
    std::swap(a, b);
  }
  return a;
}

/// Rows this long start with one most-significant-digit pass, so that the other passes run
/// on buckets that fit the caches.
constexpr int64_t kMsdMin = int64_t(1) << 17;

/// Sorts packed words by their high `bytes` key bytes: returns the buffer holding the
/// result (a or b). Long rows are split by their most significant key byte into buckets
/// (one parallel counting pass, stable), then each bucket is sorted by the other bytes:
/// small ones in parallel, each by LSD passes in cache (or std::sort: the words are
/// distinct, so any sort is stable), large ones (a skewed top byte, as floats of one
/// binade give) the same way in turn.
uint64_t* radix_sort(uint64_t* a, uint64_t* b, int64_t n, int bytes, bool parallel) {
  const int64_t chunks =
      parallel ? std::clamp<int64_t>(n / kParallelGrain, 1, int64_t(cpu::num_threads())) : int64_t(1);
  if (bytes == 1 || n < kMsdMin) return lsd_sort(a, b, n, bytes, chunks);
  // The top byte: the counting pass of lsd_sort restricted to it, written by hand to keep
  // the bucket bounds.
  const int shift = 32 + 8 * (bytes - 1);
  std::vector<std::array<int64_t, kBuckets>> count(static_cast<size_t>(chunks));
  each_chunk(chunks, [&](int64_t t) {
    auto& c = count[size_t(t)];
    c.fill(0);
    for (int64_t i = n * t / chunks, e = n * (t + 1) / chunks; i < e; ++i) ++c[(a[i] >> shift) & 0xff];
  });
  std::array<int64_t, kBuckets + 1> start{};
  int64_t offset = 0;
  for (int d = 0; d < kBuckets; ++d) {
    start[size_t(d)] = offset;
    for (auto& c : count) {
      const int64_t k = c[size_t(d)];
      c[size_t(d)] = offset;
      offset += k;
    }
  }
  start[kBuckets] = n;
  for (int d = 0; d < kBuckets; ++d)
    if (start[size_t(d) + 1] - start[size_t(d)] == n) return radix_sort(a, b, n, bytes - 1, parallel);
  each_chunk(chunks, [&](int64_t t) {
    auto& c = count[size_t(t)];
    for (int64_t i = n * t / chunks, e = n * (t + 1) / chunks; i < e; ++i) b[c[(a[i] >> shift) & 0xff]++] = a[i];
  });
  // Each bucket of b sorted by the remaining bytes, a as its scratch; the result stays in b.
  auto sort_bucket = [&](int d, bool par) {
    uint64_t* x = b + start[size_t(d)];
    const int64_t m = start[size_t(d) + 1] - start[size_t(d)];
    if (m < 256) {
      std::sort(x, x + m);
      return;
    }
    uint64_t* sorted = par ? radix_sort(x, a + start[size_t(d)], m, bytes - 1, true)
                           : lsd_sort(x, a + start[size_t(d)], m, bytes - 1, 1);
    if (sorted != x) std::copy(sorted, sorted + m, x);
  };
  const int64_t large = std::max<int64_t>(kMsdMin, n / (4 * int64_t(cpu::num_threads())));
  for (int d = 0; d < kBuckets; ++d)
    if (start[size_t(d) + 1] - start[size_t(d)] >= large) sort_bucket(d, parallel);
  auto small = [&](int64_t lo, int64_t hi) {
    for (int64_t d = lo; d < hi; ++d)
      if (start[size_t(d) + 1] - start[size_t(d)] < large) sort_bucket(int(d), false);
  };
  if (parallel) cpu::parallel_for(kBuckets, 1, small);
  else small(0, kBuckets);
  return b;
}

int key_bytes(DType d) { return int(is_complex(d) ? itemsize(d) / 2 : itemsize(d)); }

}  // namespace

void* allocate_scratch(size_t bytes) {
  constexpr size_t kHuge = size_t(2) << 20;
  const bool huge = bytes >= 2 * kHuge;
  const size_t size = huge ? (bytes + kHuge - 1) / kHuge * kHuge : std::max<size_t>(bytes, 1);
  void* p = huge ? std::aligned_alloc(kHuge, size) : std::malloc(size);
  if (!p) throw ResourceExhaustedError("sort: no memory for " + std::to_string(bytes) + " bytes of scratch space");
  if (huge) madvise(p, size, MADV_HUGEPAGE);  // a hint: without huge pages it still works
  return p;
}

void sort_row(std::span<const KeyColumn> keys, const Rows& rows, int64_t r, FloatOrder order, bool descending,
              bool parallel, Scratch& s) {
  const int64_t n = rows.n;
  if (n > int64_t(UINT32_MAX))
    throw ValueError("sort: a row of " + std::to_string(n) + " elements is longer than the 2^32 - 1 the kernel orders");
  // The words of all keys, most significant first.
  std::vector<Word> words;
  for (const KeyColumn& k : keys) {
    const int bytes = key_bytes(k.dtype);
    if (bytes == 8) words.push_back({&k, 32, 4}), words.push_back({&k, 0, 4});
    else words.push_back({&k, 0, bytes});
  }
  s.a.resize(size_t(n));
  s.b.resize(size_t(n));
  if (words.size() > 1) s.perm.resize(size_t(n)), s.next.resize(size_t(n));
  std::atomic<bool> merged = false;
  s.sorted = nullptr;
  bool identity = true;  // s.perm is 0, 1, ..., n-1 (not yet written)
  for (auto w = words.rbegin(); w != words.rend(); ++w) {
    const std::span<const uint32_t> perm = identity ? std::span<const uint32_t>() : s.perm.span();
    visit_dtype(w->column->dtype, [&](auto z) {
      pack_word<decltype(z)>(*w, rows, r, order, descending, perm, s.a.data(), parallel, merged);
    });
    const uint64_t* sorted = s.a.data();
    if (n < kRadixMin) std::sort(s.a.data(), s.a.data() + n);
    else sorted = radix_sort(s.a.data(), s.b.data(), n, w->bytes, parallel);
    if (words.size() == 1) {  // the positions stay in the sorted words' low halves
      s.sorted = sorted;
      break;
    }
    uint32_t* next = identity ? s.perm.data() : s.next.data();
    chunked(n, parallel, [&](int64_t lo, int64_t hi) {
      if (identity) {
        for (int64_t i = lo; i < hi; ++i) next[i] = uint32_t(sorted[i]);
      } else {
        for (int64_t i = lo; i < hi; ++i) next[i] = s.perm[uint32_t(sorted[i])];
      }
    });
    if (!identity) std::swap(s.perm, s.next);
    identity = false;
  }
  if (words.empty()) {  // no keys: the row keeps its order
    s.perm.resize(size_t(n));
    for (int64_t i = 0; i < n; ++i) s.perm[size_t(i)] = uint32_t(i);
  }
  s.lossless = s.sorted && !is_complex(keys[0].dtype) && !merged;
}

namespace {

/// The value whose key (word_of with shift 0) is k.
template <class T> T value_of_key(uint32_t k, bool descending) {
  constexpr int bits = std::is_same_v<T, bool> ? 8 : int(sizeof(T) * 8);
  constexpr uint32_t mask = bits == 32 ? ~uint32_t(0) : (uint32_t(1) << bits) - 1;
  constexpr uint32_t sign = uint32_t(1) << (bits - 1);
  if (descending) k = ~k & mask;
  if constexpr (std::is_same_v<T, bool>) {
    return k != 0;
  } else if constexpr (std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>) {
    return T::from_bits(uint16_t((k & sign) ? (k & ~sign) : (~k & mask)));
  } else if constexpr (std::is_same_v<T, float>) {
    const uint32_t b = (k & sign) ? (k & ~sign) : ~k;
    float f;
    std::memcpy(&f, &b, 4);
    return f;
  } else if constexpr (std::is_signed_v<T>) {
    return T(std::make_unsigned_t<T>(k ^ sign));
  } else {
    return T(k);
  }
}

}  // namespace

bool write_sorted_keys(const KeyColumn& key, void* out, const Rows& rows, int64_t r, FloatOrder, bool descending,
                       const Scratch& s, bool parallel) {
  if (!s.sorted || !s.lossless || rows.inner != 1 || itemsize(key.dtype) > 4) return false;
  const uint64_t* sorted = s.sorted;
  visit_dtype(key.dtype, [&](auto z) {
    using T = decltype(z);
    if constexpr (sizeof(T) <= 4 && !is_complex_type<T>) {
      T* dst = static_cast<T*>(out) + rows.base(r);
      chunked(rows.n, parallel, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) dst[i] = value_of_key<T>(uint32_t(sorted[i] >> 32), descending);
      });
    }
  });
  return true;
}

bool write_if_positions(const void* in, DType dtype, void* out, const Rows& rows, int64_t r, const Scratch& s,
                        bool parallel) {
  if (dtype != DType::int32 && dtype != DType::int64) return false;
  const int64_t base = rows.base(r), inner = rows.inner;
  auto run = [&](auto z) {
    using T = decltype(z);
    const T* src = static_cast<const T*>(in) + base;
    std::atomic<bool> iota = true;
    chunked(rows.n, parallel, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi && iota.load(std::memory_order_relaxed); ++i)
        if (src[i * inner] != T(i)) iota = false;
    });
    if (!iota) return false;
    T* dst = static_cast<T*>(out) + base;
    chunked(rows.n, parallel, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) dst[i * inner] = T(s.position(i));
    });
    return true;
  };
  return dtype == DType::int32 ? run(int32_t{}) : run(int64_t{});
}

void permute_row(const void* in, void* out, size_t itemsize, const Rows& in_rows, const Rows& out_rows, int64_t r,
                 const Scratch& s, int64_t count, bool parallel) {
  const int64_t inner = in_rows.inner;
  auto copy = [&](auto z) {
    using E = decltype(z);
    const E* src = static_cast<const E*>(in) + in_rows.base(r);
    E* dst = static_cast<E*>(out) + out_rows.base(r);
    chunked(count, parallel, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) dst[i * inner] = src[int64_t(s.position(i)) * inner];
    });
  };
  switch (itemsize) {
    case 1: copy(uint8_t{}); break;
    case 2: copy(uint16_t{}); break;
    case 4: copy(uint32_t{}); break;
    case 8: copy(uint64_t{}); break;
    case 16: copy(std::array<uint64_t, 2>{}); break;
    default: throw Error("internal: sort cannot move elements of " + std::to_string(itemsize) + " bytes");
  }
}

void for_each_row(const Rows& rows, const std::function<void(int64_t, bool, Scratch&)>& fn) {
  const int64_t count = rows.count();
  if (count == 0 || rows.n == 0) return;
  if (count == 1 || rows.n >= kParallelGrain) {  // long rows: each split over the arena in turn
    Scratch s;
    for (int64_t r = 0; r < count; ++r) fn(r, rows.n >= kParallelGrain, s);
    return;
  }
  cpu::parallel_for(count, std::max<int64_t>(1, kParallelGrain / rows.n), [&](int64_t lo, int64_t hi) {
    Scratch s;
    for (int64_t r = lo; r < hi; ++r) fn(r, false, s);
  });
}

}  // namespace tessel::ops::sortk
