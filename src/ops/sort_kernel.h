#pragma once
// The ordering kernels of the `sort` and `top_k` primitives (sort.cpp): rows of an operand
// seen as (outer, n, inner) around the ordered dimension are turned into order-preserving
// unsigned keys and sorted by a parallel LSD radix sort (std::sort for short rows).
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "tessel/dtype.h"

namespace tessel::ops::sortk {

/// How keys order floating-point values. kSort is lax.sort's order: -0.0 equals 0.0 and
/// every NaN equals every other and sorts after +inf. kTotal is the IEEE total order that
/// top_k uses: -NaN < -inf < ... < -0.0 < 0.0 < ... < inf < NaN.
enum class FloatOrder { kSort, kTotal };

/// One key of a lexicographic order: operand bytes `data` of `dtype` seen as
/// (outer, n, inner); complex operands give two keys (`imag` false: the real part).
struct KeyColumn {
  const void* data;
  DType dtype;
  bool imag = false;
};

/// The layout of the rows: `outer * inner` rows of `n` elements, `inner` apart.
struct Rows {
  int64_t outer = 1, n = 1, inner = 1;
  int64_t count() const { return outer * inner; }
  /// Flat index of element 0 of row r.
  int64_t base(int64_t r) const { return (r / inner) * n * inner + r % inner; }
};

/// Memory for a ScratchBuffer (std::free releases it); throws ResourceExhaustedError.
void* allocate_scratch(size_t bytes);

/// A buffer that is reallocated only to grow; large ones ask for transparent huge pages,
/// so that a 16M-element sort does not spend its time faulting in 4 KiB pages.
template <class T> class ScratchBuffer {
 public:
  void resize(size_t n) {
    if (n > capacity_) {
      data_.reset(static_cast<T*>(allocate_scratch(n * sizeof(T))));
      capacity_ = n;
    }
    size_ = n;
  }
  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }
  T& operator[](size_t i) { return data_.get()[i]; }
  const T& operator[](size_t i) const { return data_.get()[i]; }
  std::span<const T> span() const { return {data_.get(), size_}; }

 private:
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T, Free> data_;
  size_t size_ = 0, capacity_ = 0;
};

/// Scratch reused across the rows one thread sorts. After sort_row, position(i) is the row
/// position of the i-th element in order: when the row was ordered by one key of at most 32
/// bits, `sorted` holds its packed words (key << 32 | position) in order, else `perm` holds
/// the positions. `lossless` says whether the sorted keys give the values back exactly (no
/// -0.0 or NaN was made equal to another value).
struct Scratch {
  ScratchBuffer<uint64_t> a, b;
  ScratchBuffer<uint32_t> perm, next;
  const uint64_t* sorted = nullptr;
  bool lossless = false;
  uint32_t position(int64_t i) const { return sorted ? uint32_t(sorted[i]) : perm[size_t(i)]; }
};

/// Sorts row `r` lexicographically by `keys` (first key most significant), stably:
/// on return `s.position(i)` is the row position of the i-th element in sorted order. `parallel` lets the
/// radix passes of a long row use the shared thread arena.
void sort_row(std::span<const KeyColumn> keys, const Rows& rows, int64_t r, FloatOrder order, bool descending,
              bool parallel, Scratch& s);

/// Copies the first `count` elements of row `r` of an operand in sorted order: element i of
/// the output row (laid out by `out_rows`) is element s.position(i) of the input row (laid
/// out by `in_rows`).
void permute_row(const void* in, void* out, size_t itemsize, const Rows& in_rows, const Rows& out_rows, int64_t r,
                 const Scratch& s, int64_t count, bool parallel);

/// Writes row `r` of the sorted operand that was the single key of the last sort_row from
/// the sorted keys (sequential, no gather); false (nothing written) when the keys cannot
/// give the values back.
bool write_sorted_keys(const KeyColumn& key, void* out, const Rows& rows, int64_t r, FloatOrder order, bool descending,
                       const Scratch& s, bool parallel);
/// When row `r` of the integer operand `in` holds 0, 1, ..., n-1 (the positions lax.sort is
/// given by argsort and by the jvp), writes the order found into `out` and returns true.
bool write_if_positions(const void* in, DType dtype, void* out, const Rows& rows, int64_t r, const Scratch& s,
                        bool parallel);

/// Runs fn(r, parallel, scratch) for every row: rows spread over the thread arena when they
/// are many and short, else one after another with `parallel` true for long rows.
void for_each_row(const Rows& rows, const std::function<void(int64_t r, bool parallel, Scratch& s)>& fn);

}  // namespace tessel::ops::sortk
