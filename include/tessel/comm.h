#pragma once
// MPI communication inside tessel programs (the mpi4jax seed): every operation works
// eagerly and under jit, grad, vmap and inside fori_loop / while_loop / cond / scan.
// Buffers are handed to MPI directly (zero-copy) and every call is an ordered effect: calls
// run in program order on the device, across jit calls, loops and conditionals, with no
// tokens to thread. Calls validate their arguments (roots, ranks, shapes, dtypes) before
// MPI is called and throw tessel::Error naming the operation, the value and the fix.
// docs/comm.md maps each mpi4jax function to its counterpart here.
//
// Differentiation (linear operations: SUM reductions and the data movements) follows
// mpi4jax: a result that is the same on every process (allreduce, allgather(v), bcast) is
// one value used alike everywhere, so its transpose does not communicate (allreduce(SUM):
// identity; allgather: this process's slice; bcast: the root's cotangent). Results that
// differ between processes get their exact adjoints (reduce: bcast of the root's
// cotangent; scan: reverse scan; gather <-> scatter; alltoall(v): alltoall(v) back).
// Every process must transform the same communication: under grad/jvp an operand must
// depend on the differentiated inputs on every process or on none, and under vmap be
// batched on every process or on none (take a placeholder, such as scatter's off the root,
// from the transformed input, e.g. `x.index({0})`, rather than making a fresh constant).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tessel/array.h"
#include "tessel/export.h"

namespace tessel::comm {

namespace detail {
class CommImpl;
}

/// Reduction operators (MPI's predefined ones). Logical ops (LAnd, LOr, LXor) take bool
/// and integer arrays, bitwise ops (BAnd, BOr, BXor) integer and bool arrays, Min/Max
/// real ones; Sum and Prod every dtype, float16 and bfloat16 included.
enum class Op { Sum, Prod, Min, Max, LAnd, LOr, BAnd, BOr, LXor, BXor };
inline constexpr Op SUM = Op::Sum, PROD = Op::Prod, MIN = Op::Min, MAX = Op::Max, LAND = Op::LAnd, LOR = Op::LOr,
                    BAND = Op::BAnd, BOR = Op::BOr, LXOR = Op::LXor, BXOR = Op::BXor;
/// "SUM", "PROD", ...
TESSEL_API std::string to_string(Op op);

/// Wildcards of recv / sendrecv.
inline constexpr int ANY_SOURCE = -1;
inline constexpr int ANY_TAG = -1;

/// An MPI communicator. Default-constructed: the world (MPI_COMM_WORLD, a duplicate that
/// tessel owns). Copies share the communicator; it is freed with the last copy.
class TESSEL_API Comm {
 public:
  /// MPI_COMM_WORLD (MPI is initialized on first use).
  Comm();
  int rank() const;
  int size() const;
  /// MPI_Comm_split: processes with the same `color` form one new communicator, ranked by
  /// `key` (ties by rank here). Collective over this communicator.
  Comm split(int color, int key = 0) const;
  /// MPI_Comm_dup: the same processes, a separate message space. Collective.
  Comm dup() const;
  /// Adopts an MPI_Comm the program created (pass its address: `Comm::adopt(&my_comm)`,
  /// or use tessel/comm_mpi.h's overload taking MPI_Comm). tessel does not free it.
  static Comm adopt(const void* mpi_comm);
  /// Address of the underlying MPI_Comm (for calling MPI directly).
  const void* handle() const;
  /// "world" or "comm#3(size=2)".
  std::string to_string() const;
  bool operator==(const Comm& o) const { return impl_ == o.impl_; }
  const std::shared_ptr<detail::CommImpl>& impl() const { return impl_; }

 private:
  explicit Comm(std::shared_ptr<detail::CommImpl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<detail::CommImpl> impl_;
};

/// MPI_COMM_WORLD.
TESSEL_API Comm world();

/// The envelope of a received message (MPI_Status): who sent it, its tag and its size.
/// recv/sendrecv fill it when the message arrives (under jit: each time the program runs),
/// so it must outlive the calls that name it.
struct Status {
  int source = -1;
  int tag = -1;
  int64_t count = 0;  ///< elements received
};

struct SendOptions {
  int tag = 0;
  Comm comm{};
};
struct RecvOptions {
  int source = ANY_SOURCE;
  int tag = ANY_TAG;
  Comm comm{};
  Status* status = nullptr;
};
struct SendRecvOptions {
  int sendtag = 0;
  int recvtag = ANY_TAG;
  Comm comm{};
  Status* status = nullptr;
};

/// MPI_Allreduce: every process gets `op` over all processes' `x`.
TESSEL_API Array allreduce(const Array& x, Op op, const Comm& comm = {});
/// MPI_Reduce: `root` gets the reduction; the other processes get their `x` back.
TESSEL_API Array reduce(const Array& x, Op op, int root, const Comm& comm = {});
/// MPI_Scan (inclusive): process r gets `op` over processes 0..r.
TESSEL_API Array scan(const Array& x, Op op, const Comm& comm = {});
/// MPI_Bcast: every process gets root's `x` (the others' `x` gives shape and dtype).
TESSEL_API Array bcast(const Array& x, int root, const Comm& comm = {});
/// MPI_Allgather: `(size, *x.shape)`, entry r from process r.
TESSEL_API Array allgather(const Array& x, const Comm& comm = {});
/// MPI_Gather: root gets `(size, *x.shape)`; the others get their `x` back.
TESSEL_API Array gather(const Array& x, int root, const Comm& comm = {});
/// MPI_Scatter: root's `x` is `(size, *shape)`; process r gets entry r, `shape`. The other
/// processes pass an array shaped like their result, `shape` (only its shape and dtype are
/// used; as in mpi4jax).
TESSEL_API Array scatter(const Array& x, int root, const Comm& comm = {});
/// MPI_Alltoall: `x.shape[0] == size`; entry j goes to process j, and the result's entry j
/// comes from process j.
TESSEL_API Array alltoall(const Array& x, const Comm& comm = {});
/// MPI_Allgatherv along the leading dimension: process r contributes `counts[r]` rows
/// (`x.shape[0] == counts[rank]`); everyone gets `(sum(counts), *x.shape[1:])`. Every
/// process passes the same counts.
TESSEL_API Array allgatherv(const Array& x, const std::vector<int64_t>& counts, const Comm& comm = {});
/// MPI_Gatherv along the leading dimension: root gets `(sum(counts), ...)`, process r's
/// `counts[r]` rows in rank order; the others get their `x` back. Every process passes the
/// same counts.
TESSEL_API Array gatherv(const Array& x, const std::vector<int64_t>& counts, int root, const Comm& comm = {});
/// MPI_Alltoallv along the leading dimension: rows [sum(send_counts[:j]), +send_counts[j])
/// go to process j; the result holds `recv_counts[j]` rows from each process j in order.
/// `x.shape[0] == sum(send_counts)`; the counts must agree between processes.
TESSEL_API Array alltoallv(const Array& x, const std::vector<int64_t>& send_counts,
                           const std::vector<int64_t>& recv_counts, const Comm& comm = {});
/// MPI_Send of `x` to `dest` (blocking until MPI may reuse the buffer). Under vmap the
/// whole batch is one message. Not differentiable in `x` (NotImplementedError: the peer's
/// recv could not take the tangent; use sendrecv).
TESSEL_API void send(const Array& x, int dest, const SendOptions& options = {});
/// MPI_Recv of an array shaped like `like` (only its shape and dtype are used; under vmap
/// a batched `like` receives the whole batch). The received value is a constant of this
/// process for differentiation. Eagerly, `options.status` is filled when recv returns.
TESSEL_API Array recv(const Array& like, const RecvOptions& options = {});
/// MPI_Sendrecv: sends `sendbuf` to `dest` and receives an array shaped like `recv_like`
/// from `source` in one deadlock-free call. Linear in `sendbuf`: its jvp exchanges the
/// tangents the same way, its transpose sends cotangents back (source and dest swapped, as
/// grad of a halo exchange needs); both need a definite source (not ANY_SOURCE) and every
/// process of the exchange differentiating alike. Under vmap the whole batch travels.
TESSEL_API Array sendrecv(const Array& sendbuf, const Array& recv_like, int source, int dest,
                          const SendRecvOptions& options = {});
/// MPI_Barrier.
TESSEL_API void barrier(const Comm& comm = {});

}  // namespace tessel::comm
