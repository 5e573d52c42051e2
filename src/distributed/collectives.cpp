// The strided collectives of the process-group interface, by packing around the
// contiguous ones (backends that read peers' memory directly override them).
#include "distributed/collectives.h"

#include <cstring>
#include <exception>
#include <memory>
#include <string>

#include "tessel/error.h"

namespace tessel::distributed {
namespace {

template <size_t N> void copy_pieces(const char* src, char* dst, size_t a, size_t b) {
  for (size_t i = 0; i < a; ++i)
    for (size_t j = 0; j < b; ++j) std::memcpy(dst + (j * a + i) * N, src + (i * b + j) * N, N);
}

std::unique_ptr<char[]> scratch(size_t bytes) { return std::make_unique_for_overwrite<char[]>(bytes ? bytes : 1); }

}  // namespace

std::string exception_message(std::exception_ptr error) {
  try {
    if (error) std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
  }
  return "unknown error";
}

void transpose_pieces(const void* src_, void* dst_, size_t a, size_t b, size_t piece) {
  auto* src = static_cast<const char*>(src_);
  auto* dst = static_cast<char*>(dst_);
  // Small pieces (a transposition of elements) copy with a fixed size the compiler inlines.
  switch (piece) {
    case 1: return copy_pieces<1>(src, dst, a, b);
    case 2: return copy_pieces<2>(src, dst, a, b);
    case 4: return copy_pieces<4>(src, dst, a, b);
    case 8: return copy_pieces<8>(src, dst, a, b);
    case 16: return copy_pieces<16>(src, dst, a, b);
    default: break;
  }
  for (size_t i = 0; i < a; ++i)
    for (size_t j = 0; j < b; ++j) std::memcpy(dst + (j * a + i) * piece, src + (i * b + j) * piece, piece);
}

uint64_t CollectiveGroup::permute_start(int rank, const void* in, size_t bytes, int source, int dest) {
  PendingPermute p{std::vector<std::byte>(bytes), source, dest};
  if (bytes) std::memcpy(p.rows.data(), in, bytes);
  std::lock_guard lock(pending_mu_);
  const uint64_t ticket = started_[rank]++;
  pending_[{rank, ticket}] = std::move(p);
  return ticket;
}

void throw_unknown_ticket(int rank, uint64_t ticket) {
  throw Error("internal: permute_done of member " + std::to_string(rank) + " names ticket " + std::to_string(ticket) +
              ", which it has not started or already finished");
}

void CollectiveGroup::permute_done(int rank, uint64_t ticket, void* out) {
  PendingPermute p = take_pending_permute(pending_mu_, pending_, rank, ticket);
  permute(rank, p.rows.data(), out, p.rows.size(), p.source, p.dest);
}

void CollectiveGroup::all_gather_rows(int rank, const void* in, void* out, size_t bytes, size_t rows) {
  if (rows <= 1) return all_gather(rank, in, out, bytes);
  auto tmp = scratch(bytes * size_t(size()));
  all_gather(rank, in, tmp.get(), bytes);
  transpose_pieces(tmp.get(), out, size_t(size()), rows, bytes / rows);
}

void CollectiveGroup::all_to_all_rows(int rank, const void* in, void* out, size_t bytes, size_t in_rows,
                                      size_t out_rows) {
  const size_t n = size_t(size());
  std::unique_ptr<char[]> send_buf, recv_buf;
  if (in_rows > 1) {
    send_buf = scratch(bytes * n);
    transpose_pieces(in, send_buf.get(), in_rows, n, bytes / in_rows);
    in = send_buf.get();
  }
  void* recv = out_rows > 1 ? (recv_buf = scratch(bytes * n)).get() : out;
  all_to_all(rank, in, recv, bytes);
  if (out_rows > 1) transpose_pieces(recv, out, n, out_rows, bytes / out_rows);
}

void CollectiveGroup::reduce_scatter_rows(int rank, const void* in, void* out, size_t count, DType dtype,
                                          ir::Combine op, size_t rows) {
  if (rows <= 1) return reduce_scatter(rank, in, out, count, dtype, op);
  const size_t n = size_t(size()), bytes = count * itemsize(dtype) * n;
  auto tmp = scratch(bytes);
  transpose_pieces(in, tmp.get(), rows, n, bytes / (rows * n));
  reduce_scatter(rank, tmp.get(), out, count, dtype, op);
}

}  // namespace tessel::distributed
