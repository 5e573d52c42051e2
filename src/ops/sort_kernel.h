#pragma once
// The ordering kernels of the `sort` and `top_k` primitives (sort.cpp): rows of an operand
// seen as (outer, n, inner) around the ordered dimension are turned into order-preserving
// unsigned keys and sorted by a parallel LSD radix sort (std::sort for short rows).
#include <cstdint>
#include <functional>
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

/// Scratch reused across the rows one thread sorts.
struct Scratch {
  std::vector<uint64_t> a, b;
  std::vector<uint32_t> perm, next;
};

/// Sorts row `r` lexicographically by `keys` (first key most significant), stably:
/// on return `s.perm[0..n)` holds the row positions in sorted order. `parallel` lets the
/// radix passes of a long row use the shared thread arena.
void sort_row(std::span<const KeyColumn> keys, const Rows& rows, int64_t r, FloatOrder order, bool descending,
              bool parallel, Scratch& s);

/// Copies row `r` of an operand in `perm` order: element i of the output row (laid out by
/// `out_rows`) is element perm[i] of the input row (laid out by `in_rows`).
void permute_row(const void* in, void* out, size_t itemsize, const Rows& in_rows, const Rows& out_rows, int64_t r,
                 std::span<const uint32_t> perm, bool parallel);

/// Runs fn(r, parallel, scratch) for every row: rows spread over the thread arena when they
/// are many and short, else one after another with `parallel` true for long rows.
void for_each_row(const Rows& rows, const std::function<void(int64_t r, bool parallel, Scratch& s)>& fn);

}  // namespace tessel::ops::sortk
