// The ts::comm collectives with per-process counts along the leading dimension (static
// counts, in rows; a row is x.shape[1:]). Differentiation convention: collectives.cpp.
//
//   comm_allgatherv[comm, counts](x) -> (sum(counts), *x.shape[1:])             MPI_Allgatherv
//   comm_gatherv[comm, counts, root](x) -> root: (sum(counts), ...), else x      MPI_Gatherv
//   comm_alltoallv[comm, send_counts, recv_counts](x) -> (sum(recv_counts), ...) MPI_Alltoallv
//
// MPI's v-collectives take int counts and displacements. When the elements exchanged pass
// mpi::max_count(), allgatherv and gatherv run as one MPI_Alltoallw instead, with a
// datatype per large block that places it at a 64-bit byte offset, so any size works;
// alltoallv always does (see alltoallv_kernel).
#include <climits>
#include <cstring>
#include <numeric>

#include "comm/comm_impl.h"
#include "comm/primitives.h"
#include "ops/rule_util.h"
#include "tessel/error.h"

namespace tessel::comm {
namespace detail {

using distributed::mpi::Block;
using ops::Batched;
using ops::BatchAxis;
using ops::KernelCall;
using ops::Params;

namespace {

// ---- validation ----

std::string list_to_string(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

void check_counts(const char* api, const char* what, const std::vector<int64_t>& counts, const CommImpl& comm) {
  const std::string head = "comm." + std::string(api) + ": " + what + " " + list_to_string(counts);
  if (int64_t(counts.size()) != comm.size())
    throw ValueError(head + " has " + std::to_string(counts.size()) + " entries for the communicator " + comm.name() +
                     " of size " + std::to_string(comm.size()) + "; give one count (of rows) per process");
  for (size_t i = 0; i < counts.size(); ++i)
    if (counts[i] < 0)
      throw ValueError(head + " has the negative count " + std::to_string(counts[i]) + " for process " +
                       std::to_string(i) + "; counts are numbers of rows, 0 or more");
}

// x.shape[0] == rows: the rows this process contributes.
void check_rows(const char* api, const Aval& x, int64_t rows, const std::string& what) {
  const std::string head = "comm." + std::string(api) + ": ";
  if (x.ndim() == 0)
    throw ShapeError(head + "x is a scalar, but counts are rows of its leading dimension; pass an array of shape (" +
                     std::to_string(rows) + ", ...) (reshape a scalar to (1,))");
  if (x.shape[0] != rows)
    throw ShapeError(head + "x has shape " + shape_to_string(x.shape) + " but " + what + " is " +
                     std::to_string(rows) + "; x's leading dimension must equal it (or fix the counts)");
}

int64_t sum(const std::vector<int64_t>& v) { return std::accumulate(v.begin(), v.end(), int64_t(0)); }

Shape with_rows(int64_t rows, const Shape& s) {
  Shape r = s;
  r[0] = rows;
  return r;
}

// ---- the exchange ----

// Elements of a row of x (the product of x.shape[1:]).
int64_t row_size(const Aval& x) { return shape_size(Shape(x.shape.begin() + 1, x.shape.end())); }

// Counts in rows -> element counts and offsets.
struct Layout {
  std::vector<int64_t> n, off;
  int64_t total = 0;
  Layout(const std::vector<int64_t>& rows, int64_t row) {
    for (int64_t r : rows) {
      n.push_back(r * row);
      off.push_back(total);
      total += r * row;
    }
  }
  bool fits() const { return total <= distributed::mpi::max_count(); }
  std::vector<int> ints(const std::vector<int64_t>& v) const { return std::vector<int>(v.begin(), v.end()); }
};

// One (count, datatype, byte displacement) per peer for MPI_Alltoallw: block j is n[j]
// elements at element offset off[j] of the buffer. Blocks whose count and offset fit MPI's
// ints go as plain elements; larger ones as a derived datatype (one Block) with the 64-bit
// offset built in. Both describe the same elements, so peers may choose differently.
class PeerTypes {
 public:
  PeerTypes(MPI_Datatype t, const std::vector<int64_t>& off, const std::vector<int64_t>& n) {
    MPI_Aint lb = 0, extent = 0;
    MPI_Type_get_extent(t, &lb, &extent);
    const int64_t limit = distributed::mpi::max_count();
    for (size_t j = 0; j < n.size(); ++j) {
      const int64_t bytes = off[j] * int64_t(extent);
      if (n[j] <= limit && off[j] <= limit && bytes <= INT_MAX) {
        counts.push_back(int(n[j]));
        displs.push_back(n[j] ? int(bytes) : 0);
        types.push_back(t);
        continue;
      }
      Block b(t, n[j]);
      int len = b.count();
      MPI_Aint disp = MPI_Aint(bytes);
      MPI_Datatype placed;
      MPI_Type_create_hindexed(1, &len, &disp, b.type(), &placed);
      MPI_Type_commit(&placed);
      derived_.push_back(placed);
      counts.push_back(1);
      displs.push_back(0);
      types.push_back(placed);
    }
  }
  ~PeerTypes() {
    for (MPI_Datatype& t : derived_) MPI_Type_free(&t);
  }
  PeerTypes(const PeerTypes&) = delete;
  PeerTypes& operator=(const PeerTypes&) = delete;
  std::vector<int> counts, displs;
  std::vector<MPI_Datatype> types;

 private:
  std::vector<MPI_Datatype> derived_;
};

// Every process sends block j of `in` (send layout) to process j and receives process j's
// block into block j of `out` (receive layout), in one MPI_Alltoallw.
void exchange_w(const char* api, const CommImpl& comm, MPI_Datatype t, const void* in,
                const std::vector<int64_t>& send_off, const std::vector<int64_t>& send_n, void* out,
                const std::vector<int64_t>& recv_off, const std::vector<int64_t>& recv_n) {
  PeerTypes s(t, send_off, send_n), r(t, recv_off, recv_n);
  call_mpi(api, "MPI_Alltoallw", sum(recv_n), comm, [&] {
    return MPI_Alltoallw(in, s.counts.data(), s.displs.data(), s.types.data(), out, r.counts.data(), r.displs.data(),
                         r.types.data(), comm.comm());
  });
}

std::vector<int64_t> only(int size, int j, int64_t v) {
  std::vector<int64_t> r(size_t(size), 0);
  r[size_t(j)] = v;
  return r;
}

// Moves a batch dimension at 0 behind the communicated leading dimension; the result keeps
// the batch dimension where x has it.
Batched batch_behind_rows(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                          const BatchAxis& axis, const Params& p) {
  check_example(self, ins[0], dims[0], p);
  const int64_t d = dims[0] == 0 ? 1 : dims[0];
  return {{ops::bind1(self, {ops::move_batch_dim(ins[0], dims[0], d, axis.size)}, p)}, {d}};
}

// ---- allgatherv ----

// Transposed (see Adjoint): all rows -> this process's rows, without communication.
std::vector<Aval> allgatherv_aval(std::span<const Aval> ins, const Params& p) {
  const CommImpl& comm = comm_of(p);
  const auto& counts = p.get_ints("counts");
  check_counts("allgatherv", "counts", counts, comm);
  if (adjoint_of(p) == Adjoint::replicated_transposed) {
    check_rows("allgatherv (transposed)", ins[0], sum(counts), "sum(counts)");
    return {Aval(with_rows(counts[size_t(comm.rank())], ins[0].shape), ins[0].dtype)};
  }
  check_rows("allgatherv", ins[0], counts[size_t(comm.rank())], "counts[" + std::to_string(comm.rank()) + "]");
  return {Aval(with_rows(sum(counts), ins[0].shape), ins[0].dtype)};
}

void allgatherv_kernel(const KernelCall& c) {
  const CommImpl& comm = comm_of(c.params);
  const Layout l(c.params.get_ints("counts"), row_size(c.in_avals[0]));
  const size_t me = size_t(comm.rank());
  if (adjoint_of(c.params) == Adjoint::replicated_transposed) {
    const size_t item = itemsize(c.in_avals[0].dtype);
    std::memcpy(c.outs[0], static_cast<const char*>(c.ins[0]) + size_t(l.off[me]) * item, size_t(l.n[me]) * item);
    return;
  }
  const MPI_Datatype t = distributed::mpi::datatype(c.in_avals[0].dtype);
  if (!l.fits()) {
    exchange_w("allgatherv", comm, t, c.ins[0], std::vector<int64_t>(l.n.size(), 0),
               std::vector<int64_t>(l.n.size(), l.n[me]), c.outs[0], l.off, l.n);
    return;
  }
  const std::vector<int> n = l.ints(l.n), off = l.ints(l.off);
  call_mpi("allgatherv", "MPI_Allgatherv", l.total, comm, [&] {
    return MPI_Allgatherv(c.ins[0], n[me], t, c.outs[0], n.data(), off.data(), t, comm.comm());
  });
}

// Replicated result (as allgather): this process's input gets the cotangent of its rows,
// taken by the transposed allgatherv, which transposes back into the allgatherv (Adjoint).
std::vector<Array> allgatherv_transpose(const ir::Primitive& self, std::span<const Array> cts, std::span<const Array>,
                                        std::span<const Aval> avals, const Params& p) {
  return {transpose_replicated(self, cts[0], avals, p)};
}

// ---- gatherv ----

std::vector<Aval> gatherv_aval(std::span<const Aval> ins, const Params& p) {
  const CommImpl& comm = comm_of(p);
  const auto& counts = p.get_ints("counts");
  check_rank("gatherv", "root", root_of(p), comm);
  check_counts("gatherv", "counts", counts, comm);
  check_rows("gatherv", ins[0], counts[size_t(comm.rank())], "counts[" + std::to_string(comm.rank()) + "]");
  if (comm.rank() != root_of(p)) return {Aval(ins[0].shape, ins[0].dtype)};
  return {Aval(with_rows(sum(counts), ins[0].shape), ins[0].dtype)};
}

void gatherv_kernel(const KernelCall& c) {
  const CommImpl& comm = comm_of(c.params);
  const int root = root_of(c.params), size = comm.size();
  const bool is_root = comm.rank() == root;
  const Layout l(c.params.get_ints("counts"), row_size(c.in_avals[0]));
  const MPI_Datatype t = distributed::mpi::datatype(c.in_avals[0].dtype);
  const size_t me = size_t(comm.rank());
  if (!is_root) copy_unless_aliased(c.ins[0], c.outs[0], c.in_avals[0].nbytes());
  // The root's result has x's type only when no other process sends rows: x is then
  // already in place (at offset 0), and may share the result's buffer.
  const bool in_place = is_root && c.ins[0] == c.outs[0];
  if (!l.fits()) {
    const int64_t mine = in_place ? 0 : l.n[me];
    std::vector<int64_t> recv_n = is_root ? l.n : std::vector<int64_t>(size_t(size), 0);
    if (in_place) recv_n[me] = 0;
    exchange_w("gatherv", comm, t, c.ins[0], std::vector<int64_t>(size_t(size), 0), only(size, root, mine),
               c.outs[0], l.off, recv_n);
    return;
  }
  const std::vector<int> n = l.ints(l.n), off = l.ints(l.off);
  call_mpi("gatherv", "MPI_Gatherv", l.n[me], comm, [&] {
    return MPI_Gatherv(in_place ? MPI_IN_PLACE : c.ins[0], n[me], t, is_root ? c.outs[0] : nullptr, n.data(),
                       off.data(), t, root, comm.comm());
  });
}

// Exact adjoint: the root scatters the cotangent rows back (an alltoallv in which only the
// root sends); the others' results are their own x.
std::vector<Array> gatherv_transpose(const ir::Primitive&, std::span<const Array> cts, std::span<const Array>,
                                     std::span<const Aval> avals, const Params& p) {
  const auto& counts = p.get_ints("counts");
  const int root = root_of(p), size = size_of(p), me = rank_of(p);
  const bool is_root = me == root;
  const Aval out = is_root ? Aval(with_rows(sum(counts), avals[0].shape), avals[0].dtype) : avals[0];
  const Array ct = ops::instantiate_zeros(cts[0], out);
  const Array send = is_root ? ct : slice_in_dim(ct, 0, 0);
  Array back = rebind1("comm_alltoallv", {send}, p,
                       {{"send_counts", is_root ? counts : std::vector<int64_t>(size_t(size), 0)},
                        {"recv_counts", only(size, root, counts[size_t(me)])}});
  return {is_root ? back : back + ct};
}

// ---- alltoallv ----

std::vector<Aval> alltoallv_aval(std::span<const Aval> ins, const Params& p) {
  const CommImpl& comm = comm_of(p);
  const auto& send = p.get_ints("send_counts");
  const auto& recv = p.get_ints("recv_counts");
  check_counts("alltoallv", "send_counts", send, comm);
  check_counts("alltoallv", "recv_counts", recv, comm);
  check_rows("alltoallv", ins[0], sum(send), "sum(send_counts)");
  return {Aval(with_rows(sum(recv), ins[0].shape), ins[0].dtype)};
}

// Each process knows only its own counts, so it cannot tell whether a peer's exceed MPI's
// ints: every process takes MPI_Alltoallw, which lets each describe its blocks its own way.
void alltoallv_kernel(const KernelCall& c) {
  const int64_t row = row_size(c.in_avals[0]);
  const Layout s(c.params.get_ints("send_counts"), row), r(c.params.get_ints("recv_counts"), row);
  exchange_w("alltoallv", comm_of(c.params), distributed::mpi::datatype(c.in_avals[0].dtype), c.ins[0], s.off, s.n,
             c.outs[0], r.off, r.n);
}

// Exact adjoint: the rows go back where they came from (the counts swap).
std::vector<Array> alltoallv_transpose(const ir::Primitive&, std::span<const Array> cts, std::span<const Array>,
                                       std::span<const Aval> avals, const Params& p) {
  const auto& send = p.get_ints("send_counts");
  const auto& recv = p.get_ints("recv_counts");
  const Aval out(with_rows(sum(recv), avals[0].shape), avals[0].dtype);
  return {rebind1("comm_alltoallv", {ops::instantiate_zeros(cts[0], out)}, p,
                  {{"send_counts", recv}, {"recv_counts", send}})};
}

const ir::Primitive& allgatherv_p = ir::register_primitive({
    .name = "comm_allgatherv",
    .arity = {1, 1},
    .abstract_eval = allgatherv_aval,
    .cpu_kernel = allgatherv_kernel,
    .effects = kCommEffects,
    .jvp = ops::jvp_linear,
    .transpose = allgatherv_transpose,
    .batch = batch_behind_rows,
});

const ir::Primitive& gatherv_p = ir::register_primitive({
    .name = "comm_gatherv",
    .arity = {1, 1},
    .abstract_eval = gatherv_aval,
    .cpu_kernel = gatherv_kernel,
    .inplace = ir::inplace_elementwise,
    .effects = kCommEffects,
    .jvp = ops::jvp_linear,
    .transpose = gatherv_transpose,
    .batch = batch_behind_rows,
});

const ir::Primitive& alltoallv_p = ir::register_primitive({
    .name = "comm_alltoallv",
    .arity = {1, 1},
    .abstract_eval = alltoallv_aval,
    .cpu_kernel = alltoallv_kernel,
    .effects = kCommEffects,
    .jvp = ops::jvp_linear,
    .transpose = alltoallv_transpose,
    .batch = batch_behind_rows,
});

}  // namespace
}  // namespace detail

Array allgatherv(const Array& x, const std::vector<int64_t>& counts, const Comm& comm) {
  ir::Params p = detail::comm_params(comm);
  p.set("counts", counts);
  return ops::bind1(detail::allgatherv_p, {x}, p);
}

Array gatherv(const Array& x, const std::vector<int64_t>& counts, int root, const Comm& comm) {
  ir::Params p = detail::comm_params(comm);
  p.set("counts", counts);
  p.set("root", int64_t(root));
  return ops::bind1(detail::gatherv_p, {x}, p);
}

Array alltoallv(const Array& x, const std::vector<int64_t>& send_counts, const std::vector<int64_t>& recv_counts,
                const Comm& comm) {
  ir::Params p = detail::comm_params(comm);
  p.set("send_counts", send_counts);
  p.set("recv_counts", recv_counts);
  return ops::bind1(detail::alltoallv_p, {x}, p);
}

}  // namespace tessel::comm
