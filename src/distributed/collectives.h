#pragma once
// The process-group interface (ARCHITECTURE.md): collectives among the participants of a
// partitioned program. Participants are mesh positions; a group is an ordered subset of
// them and every member calls the same sequence of operations on it. The in-process
// backend (virtual devices of one process) works through shared memory; the MPI backend
// (multi-process issue) implements the same interface.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "ir/sharding_rule.h"
#include "tessel/dtype.h"

namespace tessel::distributed {

/// A group of participants running collectives together. `rank` is the caller's index in
/// the group. Buffers are dense; blocks are ordered by rank. Every call blocks until the
/// caller's part is done; buffers may be reused when it returns.
class CollectiveGroup {
 public:
  virtual ~CollectiveGroup() = default;
  virtual int size() const = 0;
  /// out = combine over members of `in` (count elements of dtype).
  virtual void all_reduce(int rank, const void* in, void* out, size_t count, DType dtype, ir::Combine op) = 0;
  /// out = the members' `in` blocks (bytes each), concatenated in rank order.
  virtual void all_gather(int rank, const void* in, void* out, size_t bytes) = 0;
  /// in holds size() blocks of `bytes`; block j goes to member j; out block j comes from member j.
  virtual void all_to_all(int rank, const void* in, void* out, size_t bytes) = 0;
  /// in holds size() blocks of `count` elements; out = combine over members of their block `rank`.
  virtual void reduce_scatter(int rank, const void* in, void* out, size_t count, DType dtype, ir::Combine op) = 0;
  /// Sends `in` to member `dest` (-1: none) and receives `out` from member `source` (-1:
  /// none, out is left untouched); every member calls it once with matching pairs.
  virtual void permute(int rank, const void* in, void* out, size_t bytes, int source, int dest) = 0;

  /// `permute` in two halves, so that a member can compute between posting its rows and
  /// waiting for its peer's (overlap): `permute_start` takes `in` (copied or sent before it
  /// returns, so `in` may be reused at once) and returns a ticket; `permute_done` with that
  /// ticket writes `out` with the `bytes` of member `source` (untouched when source is -1).
  /// Every member starts the same permutes in the same order and finishes each before it
  /// calls any other collective of the group, in the order it started them. The default
  /// keeps a copy of `in` and runs `permute` at `permute_done`; the in-process backend
  /// posts the rows at the start, so a member waits only for its source's start.
  virtual uint64_t permute_start(int rank, const void* in, size_t bytes, int source, int dest);
  virtual void permute_done(int rank, uint64_t ticket, void* out);

  // Strided forms, for collectives along a dimension that is not the leading one: a buffer
  // of `rows` rows holds one row piece of every member's block in each row ([rows, size(),
  // piece]). The defaults pack such buffers into contiguous blocks around the calls above;
  // a backend that can read peers' memory directly overrides them to skip those copies.

  /// all_gather whose `out` is [rows, size(), bytes / rows]: member j's block goes to
  /// out[:, j, :].
  virtual void all_gather_rows(int rank, const void* in, void* out, size_t bytes, size_t rows);
  /// all_to_all of blocks of `bytes`: the block for member j is in[:, j, :] with `in` as
  /// [in_rows, size(), bytes / in_rows]; the block from member j goes to out[:, j, :] with
  /// `out` as [out_rows, size(), bytes / out_rows].
  virtual void all_to_all_rows(int rank, const void* in, void* out, size_t bytes, size_t in_rows, size_t out_rows);
  /// reduce_scatter whose `in` is [rows, size(), count / rows] elements: out = combine over
  /// members of their in[:, rank, :].
  virtual void reduce_scatter_rows(int rank, const void* in, void* out, size_t count, DType dtype, ir::Combine op,
                                   size_t rows);

 private:
  /// The default permute_start's copies, by (member, ticket).
  struct PendingPermute {
    std::vector<std::byte> rows;
    int source = -1, dest = -1;
  };
  std::mutex pending_mu_;
  std::map<std::pair<int, uint64_t>, PendingPermute> pending_;
  std::map<int, uint64_t> started_;  // permutes each member started
};

/// Throws the internal Error of a permute_done naming a ticket its member has not started
/// or already finished.
[[noreturn]] void throw_unknown_ticket(int rank, uint64_t ticket);

/// Removes and returns the pending permute of `rank` and `ticket` from `pending` (under
/// `mu`): the permute_done halves' bookkeeping. Throws an internal Error for a ticket the
/// member has not started or already finished.
template <class Pending>
Pending take_pending_permute(std::mutex& mu, std::map<std::pair<int, uint64_t>, Pending>& pending, int rank,
                             uint64_t ticket) {
  std::lock_guard lock(mu);
  auto it = pending.find({rank, ticket});
  if (it == pending.end()) throw_unknown_ticket(rank, ticket);
  Pending p = std::move(it->second);
  pending.erase(it);
  return p;
}

/// Time the members of in-process groups spent in permute_done until their source's rows
/// were there, summed over all members since the process started: how long devices waited
/// for halo rows (benchmarks print it; with the exchange overlapped, the wait starts after
/// the interior rows).
struct PermuteWaits {
  uint64_t count = 0;        // permute_done calls that received rows
  uint64_t nanoseconds = 0;  // their time until the rows were there
};
PermuteWaits permute_waits();

/// The message of a stored exception ("unknown error" when it is none or not a
/// std::exception).
std::string exception_message(std::exception_ptr error);

/// Copies `a` rows of `b` pieces of `piece` bytes, [a, b, piece], to [b, a, piece].
void transpose_pieces(const void* src, void* dst, size_t a, size_t b, size_t piece);

/// The groups of one launch of a partitioned program.
class CollectiveHub {
 public:
  virtual ~CollectiveHub() = default;
  /// The group of these mesh positions (the same object for every member that asks).
  virtual CollectiveGroup& group(const std::vector<int>& members) = 0;
  /// Called by a participant that failed: members waiting in a collective stop waiting and
  /// throw an Error that names the failed participant and its error.
  virtual void abort(int position, std::exception_ptr error) = 0;
};

/// A hub for `participants` virtual devices of this process (shared memory).
std::shared_ptr<CollectiveHub> make_in_process_hub(int participants);

/// Where one participant (mesh position) of a launch runs: its process and its device's
/// global id.
struct Participant {
  int process = 0;
  int device = 0;
};
/// A hub for a launch whose participant p is `participants[p]`, seen from process
/// `this_process`: the in-process hub when every participant is a device of this process,
/// else the MPI backend (mpi_hub.cpp), which runs a group's collective among its local
/// members in shared memory and across processes over MPI.
std::shared_ptr<CollectiveHub> make_hub(const std::vector<Participant>& participants, int this_process);

/// out[i] = combine over k of ins[k][i] (in the order of `ins`), i < count; `out` may alias
/// an input. The element-wise step of the reducing collectives.
void combine_elements(ir::Combine op, DType dtype, const std::vector<const void*>& ins, void* out, size_t count);

}  // namespace tessel::distributed
