// The ts::comm primitives that move whole blocks between processes along a leading
// dimension of the communicator's size (differentiation convention: collectives.cpp).
//
//   comm_allgather[comm](x) -> (size, *x.shape)                   MPI_Allgather
//   comm_gather[comm, root](x) -> root: (size, *x.shape), else x  MPI_Gather
//   comm_scatter[comm, root](x) -> root: x.shape[1:], else x      MPI_Scatter
//   comm_alltoall[comm](x) -> x's type                            MPI_Alltoall
//
// Blocks of more than mpi::max_count() elements travel as one derived datatype (mpi::Block).
// Under vmap the communicated dimension stays leading (batch dimensions move behind it),
// and on every process the batch dimension lands at the same place of the result.
#include <cstring>

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

MPI_Datatype type_of(const Aval& a) { return distributed::mpi::datatype(a.dtype); }

// x with its leading dimension of size `size` (alltoall; scatter's on the root).
void check_leading(const char* api, const Aval& x, int size, const char* fix) {
  if (x.ndim() >= 1 && x.shape[0] == size) return;
  throw ShapeError("comm." + std::string(api) + ": " + std::string(fix) + " must have shape (" + std::to_string(size) +
                   ", ...) for a communicator of " + std::to_string(size) + " processes, got " +
                   shape_to_string(x.shape) + "; stack one entry per process along a new leading axis");
}

// ---- allgather ----

// Transposed (see Adjoint): (size, *shape) -> this process's entry, without communication.
std::vector<Aval> allgather_aval(std::span<const Aval> ins, const Params& p) {
  if (adjoint_of(p) == Adjoint::replicated_transposed) {
    check_leading("allgather (transposed)", ins[0], size_of(p), "x");
    return {Aval(Shape(ins[0].shape.begin() + 1, ins[0].shape.end()), ins[0].dtype)};
  }
  return {Aval(prepend(size_of(p), ins[0].shape), ins[0].dtype)};
}

void allgather_kernel(const KernelCall& c) {
  const CommImpl& comm = comm_of(c.params);
  if (adjoint_of(c.params) == Adjoint::replicated_transposed) {
    const size_t bytes = c.out_avals[0].nbytes();
    std::memcpy(c.outs[0], static_cast<const char*>(c.ins[0]) + size_t(comm.rank()) * bytes, bytes);
    return;
  }
  const int64_t n = c.in_avals[0].size();
  Block b(type_of(c.in_avals[0]), n);
  call_mpi("allgather", "MPI_Allgather", n, comm, [&] {
    return MPI_Allgather(c.ins[0], b.count(), b.type(), c.outs[0], b.count(), b.type(), comm.comm());
  });
}

// Replicated result: this process's input received the cotangent of its own entry, taken by
// the transposed allgather, which transposes back into the allgather (see Adjoint).
std::vector<Array> allgather_transpose(const ir::Primitive& self, std::span<const Array> cts, std::span<const Array>,
                                       std::span<const Aval> avals, const Params& p) {
  return {transpose_replicated(self, cts[0], avals, p)};
}

// (size, *x.shape): the batch dimension d of x is d + 1 of the result. Transposed, the
// batch moves behind the leading entry dimension and comes out one dimension lower.
Batched allgather_batch(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                        const BatchAxis& axis, const Params& p) {
  if (adjoint_of(p) != Adjoint::replicated_transposed) return {{ops::bind1(self, {ins[0]}, p)}, {dims[0] + 1}};
  check_example(self, ins[0], dims[0], p);
  const int64_t d = dims[0] == 0 ? 1 : dims[0];
  return {{ops::bind1(self, {ops::move_batch_dim(ins[0], dims[0], d, axis.size)}, p)}, {d - 1}};
}

// ---- gather ----

std::vector<Aval> gather_aval(std::span<const Aval> ins, const Params& p) {
  check_rank("gather", "root", root_of(p), comm_of(p));
  if (rank_of(p) != root_of(p)) return {Aval(ins[0].shape, ins[0].dtype)};
  return {Aval(prepend(size_of(p), ins[0].shape), ins[0].dtype)};
}

void gather_kernel(const KernelCall& c) {
  const CommImpl& comm = comm_of(c.params);
  const int root = root_of(c.params);
  const int64_t n = c.in_avals[0].size();
  const bool is_root = comm.rank() == root;
  if (!is_root) copy_unless_aliased(c.ins[0], c.outs[0], c.in_avals[0].nbytes());
  Block b(type_of(c.in_avals[0]), n);
  call_mpi("gather", "MPI_Gather", n, comm, [&] {
    return MPI_Gather(c.ins[0], b.count(), b.type(), is_root ? c.outs[0] : nullptr, b.count(), b.type(), root,
                      comm.comm());
  });
}

// Exact adjoint: the root scatters the cotangent of its stack back; the others' results
// are their own x.
std::vector<Array> gather_transpose(const ir::Primitive&, std::span<const Array> cts, std::span<const Array>,
                                    std::span<const Aval> avals, const Params& p) {
  const bool is_root = rank_of(p) == root_of(p);
  const Array ct = ops::instantiate_zeros(cts[0], is_root ? Aval(prepend(size_of(p), avals[0].shape), avals[0].dtype)
                                                          : avals[0]);
  Array back = rebind1("comm_scatter", {ct}, p, {{"root", int64_t(root_of(p))}});
  return {is_root ? back : back + ct};
}

// The root's result is (size, *x.shape): batch dimension d + 1 there, d elsewhere.
Batched gather_batch(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                     const BatchAxis&, const Params& p) {
  return {{ops::bind1(self, {ins[0]}, p)}, {rank_of(p) == root_of(p) ? dims[0] + 1 : dims[0]}};
}

// ---- scatter ----

// The root's x is (size, *shape); the other processes' x gives the result's type.
std::vector<Aval> scatter_aval(std::span<const Aval> ins, const Params& p) {
  check_rank("scatter", "root", root_of(p), comm_of(p));
  if (rank_of(p) != root_of(p)) return {Aval(ins[0].shape, ins[0].dtype)};
  check_leading("scatter", ins[0], size_of(p), "input on root");
  return {Aval(Shape(ins[0].shape.begin() + 1, ins[0].shape.end()), ins[0].dtype)};
}

void scatter_kernel(const KernelCall& c) {
  const CommImpl& comm = comm_of(c.params);
  const int root = root_of(c.params);
  const int64_t n = c.out_avals[0].size();
  Block b(type_of(c.out_avals[0]), n);
  call_mpi("scatter", "MPI_Scatter", n, comm, [&] {
    return MPI_Scatter(comm.rank() == root ? c.ins[0] : nullptr, b.count(), b.type(), c.outs[0], b.count(), b.type(),
                       root, comm.comm());
  });
}

// Exact adjoint: the root gathers every process's cotangent; the others' x was not used.
std::vector<Array> scatter_transpose(const ir::Primitive&, std::span<const Array> cts, std::span<const Array>,
                                     std::span<const Aval> avals, const Params& p) {
  const bool is_root = rank_of(p) == root_of(p);
  const Aval out = is_root ? Aval(Shape(avals[0].shape.begin() + 1, avals[0].shape.end()), avals[0].dtype) : avals[0];
  Array stacked = rebind1("comm_gather", {ops::instantiate_zeros(cts[0], out)}, p, {{"root", int64_t(root_of(p))}});
  return {is_root ? stacked : Array()};
}

// The root's x gets its batch dimension at 1 (behind the scattered one), the others' at 0:
// every process's result is batched at 0.
Batched scatter_batch(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                      const BatchAxis& axis, const Params& p) {
  check_example(self, ins[0], dims[0], p);
  const int64_t to = rank_of(p) == root_of(p) ? 1 : 0;
  return {{ops::bind1(self, {ops::move_batch_dim(ins[0], dims[0], to, axis.size)}, p)}, {0}};
}

// ---- alltoall ----

std::vector<Aval> alltoall_aval(std::span<const Aval> ins, const Params& p) {
  check_leading("alltoall", ins[0], size_of(p), "x");
  return {Aval(ins[0].shape, ins[0].dtype)};
}

void alltoall_kernel(const KernelCall& c) {
  const CommImpl& comm = comm_of(c.params);
  const int64_t n = c.in_avals[0].size() / comm.size();
  Block b(type_of(c.in_avals[0]), n);
  const bool in_place = c.ins[0] == c.outs[0];
  call_mpi("alltoall", "MPI_Alltoall", n * comm.size(), comm, [&] {
    if (in_place)
      return MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, c.outs[0], b.count(), b.type(), comm.comm());
    return MPI_Alltoall(c.ins[0], b.count(), b.type(), c.outs[0], b.count(), b.type(), comm.comm());
  });
}

// Exact adjoint: entry j went to process j, so its cotangent comes back from there.
std::vector<Array> alltoall_transpose(const ir::Primitive&, std::span<const Array> cts, std::span<const Array>,
                                      std::span<const Aval> avals, const Params& p) {
  return {rebind1("comm_alltoall", {ops::instantiate_zeros(cts[0], avals[0])}, p)};
}

// The exchanged dimension stays leading: a batch dimension at 0 moves to 1.
Batched alltoall_batch(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                       const BatchAxis& axis, const Params& p) {
  check_example(self, ins[0], dims[0], p);
  const int64_t d = dims[0] == 0 ? 1 : dims[0];
  return {{ops::bind1(self, {ops::move_batch_dim(ins[0], dims[0], d, axis.size)}, p)}, {d}};
}

const ir::Primitive& allgather_p = ir::register_primitive({
    .name = "comm_allgather",
    .arity = {1, 1},
    .abstract_eval = allgather_aval,
    .cpu_kernel = allgather_kernel,
    .effects = kCommEffects,
    .jvp = ops::jvp_linear,
    .transpose = allgather_transpose,
    .batch = allgather_batch,
});

const ir::Primitive& gather_p = ir::register_primitive({
    .name = "comm_gather",
    .arity = {1, 1},
    .abstract_eval = gather_aval,
    .cpu_kernel = gather_kernel,
    .inplace = ir::inplace_elementwise,  // off the root, where the result is x
    .effects = kCommEffects,
    .jvp = ops::jvp_linear,
    .transpose = gather_transpose,
    .batch = gather_batch,
});

const ir::Primitive& scatter_p = ir::register_primitive({
    .name = "comm_scatter",
    .arity = {1, 1},
    .abstract_eval = scatter_aval,
    .cpu_kernel = scatter_kernel,
    .inplace = ir::inplace_elementwise,  // off the root, where x only gives the type
    .effects = kCommEffects,
    .jvp = ops::jvp_linear,
    .transpose = scatter_transpose,
    .batch = scatter_batch,
});

const ir::Primitive& alltoall_p = ir::register_primitive({
    .name = "comm_alltoall",
    .arity = {1, 1},
    .abstract_eval = alltoall_aval,
    .cpu_kernel = alltoall_kernel,
    .inplace = ir::inplace_elementwise,
    .effects = kCommEffects,
    .jvp = ops::jvp_linear,
    .transpose = alltoall_transpose,
    .batch = alltoall_batch,
});

Params with_root(const Comm& comm, int root) {
  Params p = comm_params(comm);
  p.set("root", int64_t(root));
  return p;
}

}  // namespace
}  // namespace detail

Array allgather(const Array& x, const Comm& comm) {
  return ops::bind1(detail::allgather_p, {x}, detail::comm_params(comm));
}

Array gather(const Array& x, int root, const Comm& comm) {
  return ops::bind1(detail::gather_p, {x}, detail::with_root(comm, root));
}

Array scatter(const Array& x, int root, const Comm& comm) {
  return ops::bind1(detail::scatter_p, {x}, detail::with_root(comm, root));
}

Array alltoall(const Array& x, const Comm& comm) {
  return ops::bind1(detail::alltoall_p, {x}, detail::comm_params(comm));
}

}  // namespace tessel::comm
