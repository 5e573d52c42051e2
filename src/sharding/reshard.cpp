#include "sharding/reshard.h"

#include <algorithm>
#include <cmath>

#include "ops/collectives.h"
#include "core/mesh_impl.h"
#include "tessel/ops.h"

namespace tessel::sharding {
namespace {

using Axes = std::vector<std::string>;
using detail::axes_size;
using detail::piece_size;

bool is_prefix(const Axes& a, const Axes& b) { return a.size() <= b.size() && std::equal(a.begin(), a.end(), b.begin()); }

// Gathers every axis of dimension `d` and cuts the padding off: the whole dimension.
Array gather_whole(const Array& x, size_t d, Axes& cur, int64_t n) {
  Array y = detail::all_gather(x, cur, int64_t(d), /*tiled=*/true);
  if (y.shape()[d] != n) {
    Shape start(size_t(y.ndim()), 0), limit = y.shape();
    limit[d] = n;
    y = slice(y, start, limit);
  }
  cur.clear();
  return y;
}

// One collective-permute when every dimension keeps its number of pieces and each device's
// target piece sits on exactly one other device; false otherwise.
bool permute_pieces(Array& x, Layout& cur, const Layout& to, const Shape& global, const Mesh& mesh) {
  for (size_t d = 0; d < global.size(); ++d) {
    int64_t k = axes_size(mesh, cur.dims[d]);
    if (k != axes_size(mesh, to.dims[d]) || global[d] % k != 0) return false;
  }
  Axes used;
  for (auto& a : cur.dims) used.insert(used.end(), a.begin(), a.end());
  int n = int(mesh.size());
  std::vector<int64_t> source(size_t(n), -1);
  std::vector<char> taken(size_t(n), 0);
  for (int q = 0; q < n; ++q) {
    for (int p = 0; p < n && source[size_t(q)] < 0; ++p) {
      bool match = true;
      for (size_t d = 0; d < global.size() && match; ++d)
        match = detail::piece_index(mesh, p, cur.dims[d]) == detail::piece_index(mesh, q, to.dims[d]);
      for (size_t a = 0; a < mesh.shape().size() && match; ++a)
        if (std::find(used.begin(), used.end(), mesh.axis_names()[a]) == used.end())
          match = detail::mesh_coordinate(mesh, p, int(a)) == detail::mesh_coordinate(mesh, q, int(a));
      if (match) source[size_t(q)] = p;
    }
    if (source[size_t(q)] < 0 || taken[size_t(source[size_t(q)])]) return false;
    taken[size_t(source[size_t(q)])] = 1;
  }
  std::vector<std::pair<int64_t, int64_t>> pairs;
  for (int q = 0; q < n; ++q) pairs.push_back({source[size_t(q)], q});  // self-pairs keep their piece
  x = detail::collective_permute(x, mesh.axis_names(), pairs);
  cur.dims = to.dims;
  return true;
}

}  // namespace

Array reshard(const Array& x_in, const Layout& from, const Layout& to, const Shape& global, const Mesh& mesh) {
  Array x = x_in;
  Layout cur = from;
  size_t rank = global.size();
  if (!cur.partial.empty()) {
    int64_t k = axes_size(mesh, cur.partial);
    size_t d = 0;
    for (; d < rank; ++d)
      if (cur.dims[d].empty() && to.dims[d] == cur.partial && global[d] % k == 0) break;
    if (d < rank) {
      x = detail::reduce_scatter(x, cur.partial, int64_t(d), cur.partial_op);
      cur.dims[d] = cur.partial;
    } else {
      x = detail::all_reduce(x, cur.partial, cur.partial_op);
    }
    cur.partial.clear();
    cur.partial_op = ir::Combine::kNone;
  }
  if (cur.dims == to.dims) return x;
  if (permute_pieces(x, cur, to, global, mesh)) return x;
  // All-to-all: the minor axis of dimension i moves to the end of dimension j's axes.
  for (bool moved = true; moved;) {
    moved = false;
    for (size_t i = 0; i < rank && !moved; ++i) {
      if (cur.dims[i].empty() || is_prefix(cur.dims[i], to.dims[i])) continue;
      Axes rest(cur.dims[i].begin(), cur.dims[i].end() - 1);
      const std::string a = cur.dims[i].back();
      if (!is_prefix(rest, to.dims[i]) || global[i] % axes_size(mesh, cur.dims[i]) != 0) continue;
      for (size_t j = 0; j < rank && !moved; ++j) {
        const Axes& cj = cur.dims[j];
        if (j == i || !is_prefix(cj, to.dims[j]) || to.dims[j].size() <= cj.size() || to.dims[j][cj.size()] != a) continue;
        if (global[j] % (axes_size(mesh, cj) * mesh.axis_size(a)) != 0) continue;
        x = detail::all_to_all(x, {a}, int64_t(j), int64_t(i));
        cur.dims[i].pop_back();
        cur.dims[j].push_back(a);
        moved = true;
      }
    }
  }
  // All-gather what the target does not split (a dimension that does not divide: all of it).
  for (size_t d = 0; d < rank; ++d) {
    bool uneven = global[d] % axes_size(mesh, to.dims[d]) != 0 || global[d] % axes_size(mesh, cur.dims[d]) != 0;
    if (uneven && !cur.dims[d].empty() && cur.dims[d] != to.dims[d]) {
      x = gather_whole(x, d, cur.dims[d], global[d]);
      continue;
    }
    while (!is_prefix(cur.dims[d], to.dims[d])) {
      x = detail::all_gather(x, {cur.dims[d].back()}, int64_t(d), /*tiled=*/true);
      cur.dims[d].pop_back();
    }
  }
  // Local slicing of what the target splits more.
  std::vector<Array> starts;
  Shape sizes = x.shape();
  bool slicing = false;
  for (size_t d = 0; d < rank; ++d) {
    Array start = Array(int32_t(0));
    if (cur.dims[d] != to.dims[d]) {
      int64_t k1 = axes_size(mesh, to.dims[d]);
      int64_t L1 = piece_size(global[d], k1);
      Axes added(to.dims[d].begin() + int64_t(cur.dims[d].size()), to.dims[d].end());
      if (global[d] % k1 == 0) {
        start = detail::axis_index(added) * Array(int32_t(L1));
      } else {  // whole here (see above): pad to k1 pieces, then take this device's
        std::vector<std::pair<int64_t, int64_t>> widths(rank, {0, 0});
        widths[d].second = k1 * L1 - global[d];
        if (widths[d].second > 0) x = pad(x, widths);
        start = detail::axis_index(to.dims[d]) * Array(int32_t(L1));
      }
      sizes[d] = L1;
      slicing = true;
    }
    starts.push_back(start);
  }
  if (slicing) x = dynamic_slice(x, starts, sizes);
  return x;
}

Array mask_padding(const Array& x, int64_t dim, const std::vector<std::string>& axes, int64_t n, const Mesh&,
                   ir::Combine fill) {
  int64_t L = x.shape()[size_t(dim)];
  Array index = iota(DType::int32, x.shape(), dim) + detail::axis_index(axes) * Array(int32_t(L));
  double v = 0;
  switch (fill) {
    case ir::Combine::kProd: v = 1; break;
    case ir::Combine::kMax: v = -INFINITY; break;
    case ir::Combine::kMin: v = INFINITY; break;
    default: break;
  }
  // Bool max/min are or/and: pad with false/true (a float infinity would convert to true).
  Scalar f = x.dtype() == DType::bool_ ? Scalar(fill == ir::Combine::kMin || fill == ir::Combine::kProd).astype(DType::bool_)
                                        : Scalar(v).astype(x.dtype());
  return where(less(index, Array(int32_t(n))), x, Array(f));
}

}  // namespace tessel::sharding
