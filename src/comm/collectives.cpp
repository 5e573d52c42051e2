// The reducing and broadcasting ts::comm primitives, and the patterns every comm primitive
// follows: validation before MPI, zero-copy kernels, ordered effects, rules beside them.
//
//   comm_allreduce[comm, op](x) -> x's type        MPI_Allreduce
//   comm_reduce[comm, op, root](x) -> x's type     MPI_Reduce (non-roots get x back)
//   comm_scan[comm, op](x) -> x's type             MPI_Scan (inclusive)
//   comm_bcast[comm, root](x) -> x's type          MPI_Bcast
//   comm_barrier[comm]() -> token bool[0]          MPI_Barrier
//
// Equations without a result of their own (barrier, send) return an empty bool[0] token,
// which the public functions drop: side-effecting equations are never removed, and
// eagerly the token carries an MPI failure back to the caller.
//
// Differentiation convention (mpi4jax's, extended to every operation; see docs/comm.md):
//  * A result that is the same on every process (allreduce, allgather, allgatherv, bcast)
//    is one value that every process goes on to use in the same way, so its cotangent is
//    the same everywhere and is counted once. Its transpose needs no communication:
//    allreduce(SUM) -> the cotangent itself, allgather -> this process's slice of it,
//    bcast -> the cotangent on the root and zero elsewhere.
//  * A result that differs between processes (reduce on its root, scan, gather, scatter,
//    alltoall and the v-variants) gets its exact adjoint, which communicates: the
//    cotangents of all processes' inputs are those of the sum over processes of what each
//    process computes. reduce(SUM) -> bcast of the root's cotangent (plus, off the root,
//    the cotangent of the returned x); scan(SUM) -> the reverse scan; gather <-> scatter;
//    alltoall -> alltoall; alltoallv -> alltoallv with the counts swapped.
//  Every process must take part in the same differentiated communication: under grad, the
//  operand must depend on the differentiated inputs on every process or on none.
#include <cstring>

#include "comm/comm_impl.h"
#include "comm/primitives.h"
#include "ops/rule_util.h"
#include "tessel/error.h"

namespace tessel::comm {
namespace detail {

using distributed::mpi::Block;
using distributed::mpi::for_each_chunk;
using ops::Batched;
using ops::BatchAxis;
using ops::KernelCall;
using ops::Params;

namespace {

// One element-wise reduction call per chunk of at most mpi::max_count() elements (MPI
// defines reductions only on its predefined types, so a derived Block cannot be used).
// `f(in, out, n)` returns the MPI error code; `in` is MPI_IN_PLACE when the output
// aliases the input and `in_place_ok` says MPI accepts that here. `comm` is the kernel's
// (looked up once per call).
template <class F>
void reduce_chunks(const KernelCall& c, const CommImpl& comm, const char* api, const char* call, bool in_place_ok, F f) {
  const size_t item = itemsize(c.in_avals[0].dtype);
  const bool in_place = in_place_ok && c.ins[0] == c.outs[0];
  for_each_chunk(c.in_avals[0].size(), [&](int64_t off, int n) {
    const void* in = in_place ? MPI_IN_PLACE : static_cast<const char*>(c.ins[0]) + off * item;
    void* out = static_cast<char*>(c.outs[0]) + off * item;
    call_mpi(api, call, n, comm, [&] { return f(in, out, n); });
  });
}

NotImplementedError not_linear(const char* api, Op op, const char* fix) {
  return NotImplementedError("comm." + std::string(api) + ": differentiation of op " + to_string(op) +
                             " is not implemented (only SUM is linear); " + fix);
}

// ---- allreduce ----

std::vector<Aval> allreduce_aval(std::span<const Aval> ins, const Params& p) {
  check_op("allreduce", op_from_params(p), ins[0].dtype);
  return {Aval(ins[0].shape, ins[0].dtype)};
}

void allreduce_kernel(const KernelCall& c) {
  if (adjoint_of(c.params) == Adjoint::replicated_transposed) {  // the identity: no communication
    copy_unless_aliased(c.ins[0], c.outs[0], c.in_avals[0].nbytes());
    return;
  }
  const CommImpl& comm = comm_of(c.params);
  const DType d = c.in_avals[0].dtype;
  const MPI_Op op = mpi_op(op_from_params(c.params), d);
  const MPI_Datatype t = distributed::mpi::datatype(d);
  reduce_chunks(c, comm, "allreduce", "MPI_Allreduce", true,
                [&](const void* in, void* out, int n) { return MPI_Allreduce(in, out, n, t, op, comm.comm()); });
}

std::vector<Array> allreduce_jvp(const ir::Primitive& self, std::span<const Array> primals,
                                 std::span<const Array> tangents, std::span<const Array> outs, const Params& p) {
  const Op op = op_from_params(p);
  if (op != Op::Sum)
    throw not_linear("allreduce", op, "reduce with SUM, or gather with allgather and differentiate the local reduction");
  return ops::jvp_linear(self, primals, tangents, outs, p);
}

// The mpi4jax convention: every process differentiates the same replicated result, so the
// cotangent of an allreduce(SUM) input is the output cotangent itself, through a transposed
// allreduce that transposes back into the allreduce (see Adjoint). Inside exact adjoints
// (scan's), allreduce is its own transpose.
std::vector<Array> allreduce_transpose(const ir::Primitive& self, std::span<const Array> cts, std::span<const Array>,
                                       std::span<const Aval> avals, const Params& p) {
  if (op_from_params(p) != Op::Sum)
    throw NotImplementedError("comm.allreduce: transpose of op " + to_string(op_from_params(p)) +
                              " is not defined (only SUM is linear)");
  if (adjoint_of(p) != Adjoint::exact) return {transpose_replicated(self, cts[0], avals, p)};
  return {ops::bind1(self, {ops::instantiate_zeros(cts[0], avals[0])}, p)};
}

// ---- reduce ----

std::vector<Aval> reduce_aval(std::span<const Aval> ins, const Params& p) {
  check_op("reduce", op_from_params(p), ins[0].dtype);
  check_rank("reduce", "root", root_of(p), comm_of(p));
  return {Aval(ins[0].shape, ins[0].dtype)};
}

void reduce_kernel(const KernelCall& c) {
  const CommImpl& comm = comm_of(c.params);
  const int root = root_of(c.params);
  const DType d = c.in_avals[0].dtype;
  const MPI_Op op = mpi_op(op_from_params(c.params), d);
  const MPI_Datatype t = distributed::mpi::datatype(d);
  const bool is_root = comm.rank() == root;
  // The other processes get their x back; MPI only reads their buffer.
  if (!is_root) copy_unless_aliased(c.ins[0], c.outs[0], c.in_avals[0].nbytes());
  reduce_chunks(c, comm, "reduce", "MPI_Reduce", is_root, [&](const void* in, void* out, int n) {
    return MPI_Reduce(in, is_root ? out : nullptr, n, t, op, root, comm.comm());
  });
}

std::vector<Array> reduce_jvp(const ir::Primitive& self, std::span<const Array> primals,
                              std::span<const Array> tangents, std::span<const Array> outs, const Params& p) {
  const Op op = op_from_params(p);
  if (op != Op::Sum)
    throw not_linear("reduce", op, "reduce with SUM, or collect the values with comm.gather and differentiate "
                                   "the local reduction on the root");
  return ops::jvp_linear(self, primals, tangents, outs, p);
}

// Exact adjoint (the root's result differs from the others'): every input contributed to
// the root's sum, so each gets the root's cotangent; the others' results are their own x.
std::vector<Array> reduce_transpose(const ir::Primitive&, std::span<const Array> cts, std::span<const Array>,
                                    std::span<const Aval> avals, const Params& p) {
  if (op_from_params(p) != Op::Sum)
    throw NotImplementedError("comm.reduce: transpose of op " + to_string(op_from_params(p)) +
                              " is not defined (only SUM is linear)");
  const Array ct = ops::instantiate_zeros(cts[0], avals[0]);
  Array from_root =
      rebind1("comm_bcast", {ct}, p, {{"root", int64_t(root_of(p))}, {"adjoint", adjoint_name(Adjoint::exact)}});
  return {rank_of(p) == root_of(p) ? from_root : from_root + ct};
}

// ---- scan ----

std::vector<Aval> scan_aval(std::span<const Aval> ins, const Params& p) {
  check_op("scan", op_from_params(p), ins[0].dtype);
  return {Aval(ins[0].shape, ins[0].dtype)};
}

void scan_kernel(const KernelCall& c) {
  const CommImpl& comm = comm_of(c.params);
  const DType d = c.in_avals[0].dtype;
  const MPI_Op op = mpi_op(op_from_params(c.params), d);
  const MPI_Datatype t = distributed::mpi::datatype(d);
  reduce_chunks(c, comm, "scan", "MPI_Scan", true,
                [&](const void* in, void* out, int n) { return MPI_Scan(in, out, n, t, op, comm.comm()); });
}

std::vector<Array> scan_jvp(const ir::Primitive& self, std::span<const Array> primals, std::span<const Array> tangents,
                            std::span<const Array> outs, const Params& p) {
  const Op op = op_from_params(p);
  if (op != Op::Sum)
    throw not_linear("scan", op, "scan with SUM, or collect the values with comm.allgather and differentiate "
                                 "the local prefix reduction");
  return ops::jvp_linear(self, primals, tangents, outs, p);
}

// Exact adjoint: process r's input reaches the results of processes r..n-1, so its
// cotangent is their sum, the reverse inclusive scan: total - inclusive scan + own.
std::vector<Array> scan_transpose(const ir::Primitive&, std::span<const Array> cts, std::span<const Array>,
                                  std::span<const Aval> avals, const Params& p) {
  if (op_from_params(p) != Op::Sum)
    throw NotImplementedError("comm.scan: transpose of op " + to_string(op_from_params(p)) +
                              " is not defined (only SUM is linear)");
  const Array ct = ops::instantiate_zeros(cts[0], avals[0]);
  Array total =
      rebind1("comm_allreduce", {ct}, p, {{"op", std::string("SUM")}, {"adjoint", adjoint_name(Adjoint::exact)}});
  Array upto = rebind1("comm_scan", {ct}, p, {{"op", std::string("SUM")}});
  return {total - upto + ct};
}

// ---- bcast ----

std::vector<Aval> bcast_aval(std::span<const Aval> ins, const Params& p) {
  check_rank("bcast", "root", root_of(p), comm_of(p));
  return {Aval(ins[0].shape, ins[0].dtype)};
}

void bcast_kernel(const KernelCall& c) {
  const CommImpl& comm = comm_of(c.params);
  const int root = root_of(c.params);
  const Aval& a = c.in_avals[0];
  if (adjoint_of(c.params) == Adjoint::replicated_transposed) {  // no communication
    if (comm.rank() == root) copy_unless_aliased(c.ins[0], c.outs[0], a.nbytes());
    else std::memset(c.outs[0], 0, a.nbytes());
    return;
  }
  if (comm.rank() == root) copy_unless_aliased(c.ins[0], c.outs[0], a.nbytes());
  Block b(distributed::mpi::datatype(a.dtype), a.size());
  call_mpi("bcast", "MPI_Bcast", a.size(), comm,
           [&] { return MPI_Bcast(c.outs[0], b.count(), b.type(), root, comm.comm()); });
}

// Replicated result: the root's x gets the cotangent, the other inputs were not used; every
// process binds the transposed bcast, which transposes back into the bcast (see Adjoint).
// Exactly (inside reduce's adjoint), the root's x reached every process: the root gets the
// sum of their cotangents.
std::vector<Array> bcast_transpose(const ir::Primitive& self, std::span<const Array> cts, std::span<const Array>,
                                   std::span<const Aval> avals, const Params& p) {
  if (adjoint_of(p) != Adjoint::exact) return {transpose_replicated(self, cts[0], avals, p)};
  const Array ct = ops::instantiate_zeros(cts[0], avals[0]);
  Array sum = rebind1("comm_reduce", {ct}, p, {{"op", std::string("SUM")}, {"root", int64_t(root_of(p))}});
  return {rank_of(p) == root_of(p) ? sum : Array()};
}

// The batch dimension goes first on every process, so the root's buffer and the buffers it
// lands in have one layout even where x's batch dimension differs between processes.
Batched bcast_batch(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                    const BatchAxis& axis, const Params& p) {
  return {{ops::bind1(self, {ops::move_batch_dim(ins[0], dims[0], 0, axis.size)}, p)}, {0}};
}

// ---- barrier ----

std::vector<Aval> token_aval(std::span<const Aval>, const Params&) { return {Aval({0}, DType::bool_)}; }

void barrier_kernel(const KernelCall& c) {
  const CommImpl& comm = comm_of(c.params);
  call_mpi("barrier", "MPI_Barrier", 0, comm, [&] { return MPI_Barrier(comm.comm()); });
}

const ir::Primitive& allreduce_p = ir::register_primitive({
    .name = "comm_allreduce",
    .arity = {1, 1},
    .abstract_eval = allreduce_aval,
    .cpu_kernel = allreduce_kernel,
    .inplace = ir::inplace_elementwise,
    .effects = kCommEffects,
    .jvp = allreduce_jvp,
    .transpose = allreduce_transpose,
    .batch = ops::batch_vectorized,
});

const ir::Primitive& reduce_p = ir::register_primitive({
    .name = "comm_reduce",
    .arity = {1, 1},
    .abstract_eval = reduce_aval,
    .cpu_kernel = reduce_kernel,
    .inplace = ir::inplace_elementwise,
    .effects = kCommEffects,
    .jvp = reduce_jvp,
    .transpose = reduce_transpose,
    .batch = ops::batch_vectorized,
});

const ir::Primitive& scan_p = ir::register_primitive({
    .name = "comm_scan",
    .arity = {1, 1},
    .abstract_eval = scan_aval,
    .cpu_kernel = scan_kernel,
    .inplace = ir::inplace_elementwise,
    .effects = kCommEffects,
    .jvp = scan_jvp,
    .transpose = scan_transpose,
    .batch = ops::batch_vectorized,
});

const ir::Primitive& bcast_p = ir::register_primitive({
    .name = "comm_bcast",
    .arity = {1, 1},
    .abstract_eval = bcast_aval,
    .cpu_kernel = bcast_kernel,
    .inplace = ir::inplace_elementwise,
    .effects = kCommEffects,
    .jvp = ops::jvp_linear,
    .transpose = bcast_transpose,
    .batch = bcast_batch,
});

const ir::Primitive& barrier_p = ir::register_primitive({
    .name = "comm_barrier",
    .arity = {0, 0},
    .abstract_eval = token_aval,
    .cpu_kernel = barrier_kernel,
    .effects = kCommEffects,
});

// {comm, op}: for the world (most calls), a reference to parameters made once; else made
// in `storage`.
const Params& op_params(const Comm& comm, Op op, const std::string& api, Params&& storage = {}) {
  const Op checked = checked_op(op, api);
  if (!comm.impl()) return world_op_params(checked);
  storage = comm_params(comm);
  storage.set("op", to_string(checked));
  return storage;
}

Params root_params(const Params& params, int root) {
  Params p = params;
  p.set("root", int64_t(root));
  return p;
}

}  // namespace
}  // namespace detail

Array allreduce(const Array& x, Op op, const Comm& comm) {
  return ops::bind1(detail::allreduce_p, {x}, detail::op_params(comm, op, "allreduce"));
}

Array reduce(const Array& x, Op op, int root, const Comm& comm) {
  return ops::bind1(detail::reduce_p, {x}, detail::root_params(detail::op_params(comm, op, "reduce"), root));
}

Array scan(const Array& x, Op op, const Comm& comm) {
  return ops::bind1(detail::scan_p, {x}, detail::op_params(comm, op, "scan"));
}

Array bcast(const Array& x, int root, const Comm& comm) {
  return ops::bind1(detail::bcast_p, {x}, detail::root_params(detail::comm_params(comm), root));
}

void barrier(const Comm& comm) { detail::finish_token(ops::bind1(detail::barrier_p, {}, detail::comm_params(comm))); }

}  // namespace tessel::comm
