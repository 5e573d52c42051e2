#pragma once
// Helpers of the checkpoint tests (single process and under mpirun): arrays of every dtype
// filled with reproducible bit patterns (NaN payloads included), placed on any sharding from
// host bytes, and bit-for-bit comparison of each process's pieces with those bytes.
#include <cstddef>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/array_impl.h"
#include "tessel/array.h"
#include "tessel/make_array.h"
#include "tessel/sharding.h"

namespace checkpoint_test {

namespace ts = tessel;
using Range = std::vector<std::pair<int64_t, int64_t>>;

/// A global array as host bytes, row-major.
struct HostArray {
  ts::Shape shape;
  ts::DType dtype;
  std::vector<std::byte> bytes;
};

/// Random bits of `dtype` (bools 0 or 1), reproducible from `seed`.
inline HostArray pattern(const ts::Shape& shape, ts::DType dtype, uint64_t seed) {
  HostArray h{shape, dtype, std::vector<std::byte>(size_t(ts::shape_size(shape)) * ts::itemsize(dtype))};
  std::mt19937_64 rng(seed);
  for (auto& b : h.bytes) b = std::byte(rng() & (dtype == ts::DType::bool_ ? 1 : 0xff));
  return h;
}

/// The bytes of block `r` of `h`, row-major.
inline std::vector<std::byte> block(const HostArray& h, const Range& r) {
  const size_t item = ts::itemsize(h.dtype);
  const size_t nd = h.shape.size();
  int64_t n = 1;
  for (auto [a, b] : r) n *= b - a;
  std::vector<std::byte> out(size_t(n) * item);
  if (n == 0) return out;
  std::vector<int64_t> idx(nd);
  for (size_t d = 0; d < nd; ++d) idx[d] = r[d].first;
  for (int64_t k = 0; k < n; ++k) {
    int64_t off = 0;
    for (size_t d = 0; d < nd; ++d) off = off * h.shape[d] + idx[d];
    std::memcpy(out.data() + size_t(k) * item, h.bytes.data() + size_t(off) * item, item);
    for (size_t d = nd; d-- > 0;) {
      if (++idx[d] < r[d].second) break;
      idx[d] = r[d].first;
    }
  }
  return out;
}

/// `h` laid out by `sharding`: each device of this process gets its block.
inline ts::Array place(const HostArray& h, const ts::Sharding& sharding) {
  const auto& devices = sharding.device_set();
  auto indices = sharding.device_indices(h.shape);
  std::vector<ts::Array> pieces;
  for (size_t i = 0; i < devices.size(); ++i) {
    if (devices[i].process_index() != ts::process_index()) continue;
    ts::Shape s;
    for (auto [a, b] : indices[i]) s.push_back(b - a);
    auto bytes = block(h, indices[i]);
    pieces.push_back(ts::device_put(ts::Array::from_bytes(bytes.data(), s, h.dtype), ts::SingleDeviceSharding(devices[i])));
  }
  if (sharding.is_single_device() && !pieces.empty()) return pieces[0];
  return ts::make_array_from_single_device_arrays(h.shape, sharding, pieces);
}

/// "" when every piece of `a` held by this process equals the same block of `h` bit for bit
/// and `a` has `h`'s shape and dtype and the sharding `want`; else what differs.
inline std::string bits_difference(const ts::Array& a, const HostArray& h, const ts::Sharding& want) {
  if (a.shape() != h.shape) return "shape " + ts::shape_to_string(a.shape()) + " != " + ts::shape_to_string(h.shape);
  if (a.dtype() != h.dtype) return std::string("dtype ") + ts::dtype_name(a.dtype()) + " != " + ts::dtype_name(h.dtype);
  if (a.sharding() != want) return "sharding " + a.sharding().to_string() + " != " + want.to_string();
  for (const ts::Shard& s : a.addressable_shards()) {
    auto expected = block(h, s.index);
    const auto* c = ts::detail::require_concrete(s.data, "bits_difference");
    c->buffer()->wait();
    if (s.data.nbytes() != expected.size()) return "the piece on " + s.device.to_string() + " has the wrong size";
    if (std::memcmp(c->buffer()->data(), expected.data(), expected.size()) != 0)
      return "the piece on " + s.device.to_string() + " differs";
  }
  return "";
}

/// Every dtype tessel has.
inline std::vector<ts::DType> all_dtypes() {
  std::vector<ts::DType> out;
  for (int d = 0; d < ts::kNumDTypes; ++d) out.push_back(ts::DType(d));
  return out;
}

/// One array of every dtype (keyed by dtype name) of `shape`, laid out for saving and as a
/// restore target, with the host bytes they hold.
struct DtypeTrees {
  std::map<std::string, ts::Array> tree, target;
  std::map<std::string, HostArray> host;
};
inline DtypeTrees dtype_trees(const ts::Shape& shape, const ts::Sharding& save_as, const ts::Sharding& restore_as,
                              uint64_t seed) {
  DtypeTrees out;
  for (ts::DType d : all_dtypes()) {
    HostArray h = pattern(shape, d, seed++);
    out.tree[ts::dtype_name(d)] = place(h, save_as);
    out.target[ts::dtype_name(d)] = place(h, restore_as);  // only its shape, dtype and layout count
    out.host[ts::dtype_name(d)] = std::move(h);
  }
  return out;
}

}  // namespace checkpoint_test
