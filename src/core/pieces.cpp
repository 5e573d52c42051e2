// Piece assembly: splitting a whole value into the pieces of a sharding, and assembling
// the whole value from its pieces (ConcreteArray::gathered).
#include "core/pieces.h"

#include <cstring>

#include "core/array_impl.h"

namespace tessel::detail {
namespace {

// Copies the block of `block` elements per dimension from `src` (shape src_shape, starting
// at src_start) to `dst` (shape dst_shape, starting at dst_start); row-major, innermost
// dimension by memcpy.
void copy_block(const char* src, const Shape& src_shape, const Shape& src_start, char* dst, const Shape& dst_shape,
                const Shape& dst_start, const Shape& block, size_t item) {
  size_t rank = block.size();
  for (auto b : block)
    if (b <= 0) return;
  if (rank == 0) {
    std::memcpy(dst, src, item);
    return;
  }
  std::vector<int64_t> ss(rank, 1), ds(rank, 1);
  for (size_t d = rank - 1; d > 0; --d) {
    ss[d - 1] = ss[d] * src_shape[d];
    ds[d - 1] = ds[d] * dst_shape[d];
  }
  size_t row = size_t(block[rank - 1]) * item;
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < rank; ++d) rows *= block[d];
  std::vector<int64_t> idx(rank, 0);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t so = 0, dof = 0;
    for (size_t d = 0; d < rank; ++d) {
      so += (src_start[d] + idx[d]) * ss[d];
      dof += (dst_start[d] + idx[d]) * ds[d];
    }
    std::memcpy(dst + dof * int64_t(item), src + so * int64_t(item), row);
    for (size_t d = rank - 1; d-- > 0;) {
      if (++idx[d] < block[d]) break;
      idx[d] = 0;
    }
  }
}

// One source position per distinct non-empty piece (replicas hold the same values): a
// device of this process holding it, else (-1 - the first position holding it) when only
// other processes' devices hold it.
std::vector<int> piece_sources(const std::vector<std::shared_ptr<Buffer>>& shards,
                               const std::vector<std::vector<std::pair<int64_t, int64_t>>>& indices) {
  std::vector<int> sources;
  for (int pos = 0; pos < int(shards.size()); ++pos) {
    const auto& idx = indices[size_t(pos)];
    bool empty = false, seen = false;
    for (auto& [b, e] : idx) empty |= e <= b;
    for (int q : sources) seen |= indices[size_t(q < 0 ? -1 - q : q)] == idx;
    if (seen || (empty && !idx.empty())) continue;
    int found = -1 - pos;
    for (int q = 0; q < int(shards.size()) && found < 0; ++q)
      if (shards[size_t(q)] && indices[size_t(q)] == idx) found = q;
    sources.push_back(found);
  }
  return sources;
}

// The local sources of every piece; on the driver of a single-controller job the pieces only
// workers hold are fetched into `shards` first. An Error naming `what` when a piece is held
// only by devices of other processes of a multi-controller job.
std::vector<int> local_sources(const ConcreteArray& a, std::vector<std::shared_ptr<Buffer>>& shards,
                               const std::vector<std::vector<std::pair<int64_t, int64_t>>>& indices, const char* what) {
  std::vector<int> sources = piece_sources(shards, indices);
  std::vector<int> missing;
  for (int& q : sources)
    if (q < 0) missing.push_back(q = -1 - q);
  if (missing.empty()) return sources;
  if (const RemotePieces* r = a.remote ? remote_pieces() : nullptr) {
    r->fetch(a, missing, shards);
    return sources;
  }
  std::string names;
  for (int pos : missing)
    if (names.size() < 200) names += (names.empty() ? "" : ", ") + a.sharding().device_set()[size_t(pos)].to_string();
  throw ValueError(std::string(what) + ": the array " + a.aval.to_string() + " laid out by " + a.sharding().to_string() +
                   " spans processes, and process " + std::to_string(process_index()) +
                   " holds only part of it (the pieces on " + names +
                   " are in other processes); read this process's pieces with addressable_shards(), or, in every "
                   "process, reshard it to a replicated sharding (device_put(x, NamedSharding(mesh, P()))) or "
                   "gather it with ts::comm::allgather");
}

}  // namespace

const ConcreteArray* ConcreteArray::gathered(const char* what) const {
  if (on_one_local_device()) {
    one_->check_not_donated();
    return this;
  }
  LaidOut& l = *laid_out_;
  std::call_once(l.gathered_once, [&] {  // a throw leaves it to the next call
    if (const RemotePieces* r = remote && l.shards.size() == 1 && !l.shards[0] && l.local_aval.shape == aval.shape
                                    ? remote_pieces()
                                    : nullptr) {
      // One piece that another process holds (a value on a worker's device): it is the value.
      static const std::vector<int> kFirst{0};
      std::vector<std::shared_ptr<Buffer>> one(1);
      r->fetch(*this, kFirst, one);
      laid_out_->gathered = std::make_shared<ConcreteArray>(aval, one[0]->device(), one[0], true);
      return;
    }
    auto indices = l.sharding.device_indices(aval.shape);
    std::vector<std::shared_ptr<Buffer>> pieces = l.shards;
    std::vector<int> sources = local_sources(*this, pieces, indices, what);
    if (sources.size() == 1 && l.local_aval.shape == aval.shape && pieces[size_t(sources[0])]) {
      // One piece holds the whole value (one device, or replicated): it is the value.
      auto& whole = pieces[size_t(sources[0])];
      laid_out_->gathered = std::make_shared<ConcreteArray>(aval, whole->device(), whole, true);
      return;
    }
    DeviceImpl* dev = nullptr;  // the first device of the mesh in this process
    for (const Device& d : l.sharding.device_set())
      if (!dev && d.impl()->is_local()) dev = d.impl();
    if (!dev) dev = default_device();  // a value with no elements held elsewhere
    auto buf = Buffer::allocate(aval.nbytes(), dev, &aval);
    run_on_stream(dev, aval.nbytes(), [buf, shards = std::move(pieces), sources, indices, global = aval.shape, local = l.local_aval.shape,
                           item = itemsize(aval.dtype)] {
      try {
        for (int pos : sources) {
          auto& s = shards[size_t(pos)];
          s->wait();
          Shape start, block;
          for (auto& [b, e] : indices[size_t(pos)]) {
            start.push_back(b);
            block.push_back(e - b);
          }
          if (buf->nbytes())
            copy_block(static_cast<const char*>(s->data()), local, Shape(local.size(), 0), static_cast<char*>(buf->data()),
                       global, start, block, item);
        }
        buf->set_ready();
      } catch (...) {
        buf->set_error(std::current_exception());
      }
    });
    laid_out_->gathered = std::make_shared<ConcreteArray>(aval, dev, buf, true);
  });
  return laid_out_->gathered.get();
}

Array whole_value(const Array& a, const char* what) {
  const ConcreteArray* c = require_concrete(a, what);
  if (c == a.impl().get()) return a;
  return Array(static_cast<const ConcreteArray*>(a.impl().get())->laid_out_->gathered);
}

Array split_into_pieces(const Array& x, const Sharding& s) {
  const ConcreteArray* src = require_concrete(x, "device_put");
  const Mesh& mesh = s.mesh();
  Shape local = s.shard_shape(x.shape());
  Aval local_aval(local, x.dtype(), x.weak_type());
  auto indices = s.device_indices(x.shape());
  std::vector<std::shared_ptr<Buffer>> shards;
  for (int pos = 0; pos < int(mesh.size()); ++pos) {
    DeviceImpl* dev = mesh.devices()[size_t(pos)].impl();
    if (!dev->is_local()) {
      shards.push_back(nullptr);
      continue;
    }
    auto buf = Buffer::allocate(local_aval.nbytes(), dev, &local_aval);
    Shape start, block;
    for (auto& [b, e] : indices[size_t(pos)]) {
      start.push_back(b);
      block.push_back(e - b);
    }
    dev->stream().enqueue([in = src->buffer(), buf, start, block, shape = x.shape(), local, item = itemsize(x.dtype())] {
      try {
        in->wait();
        if (buf->nbytes() == 0) return buf->set_ready();
        if (block != local) std::memset(buf->data(), 0, buf->nbytes());
        copy_block(static_cast<const char*>(in->data()), shape, start, static_cast<char*>(buf->data()), local,
                   Shape(local.size(), 0), block, item);
        buf->set_ready();
      } catch (...) {
        buf->set_error(std::current_exception());
      }
    });
    shards.push_back(std::move(buf));
  }
  return Array(std::make_shared<ConcreteArray>(x.aval(), s, local_aval, std::move(shards)));
}

}  // namespace tessel::detail
