// The collective ts::comm primitives: allreduce and barrier (the patterns every comm
// primitive follows: validation before MPI, zero-copy kernels, ordered effects, rules).
//
//   comm_allreduce[comm, op](x) -> x's type    MPI_Allreduce
//   comm_barrier[comm]() -> token bool[0]       MPI_Barrier
//
// Equations without a result of their own (barrier, send) return an empty bool[0] token,
// which the public functions drop: side-effecting equations are never removed, and
// eagerly the token carries an MPI failure back to the caller.
#include "comm/comm_impl.h"
#include "comm/primitives.h"
#include "ops/rule_util.h"
#include "tessel/error.h"

namespace tessel::comm {
namespace detail {

using ops::KernelCall;
using ops::Params;

namespace {

// ---- allreduce ----

std::vector<Aval> allreduce_aval(std::span<const Aval> ins, const Params& p) {
  check_op("allreduce", op_from_params(p), ins[0].dtype);
  return {Aval(ins[0].shape, ins[0].dtype)};
}

void allreduce_kernel(const KernelCall& c) {
  const CommImpl& comm = comm_of(c.params);
  const DType d = c.in_avals[0].dtype;
  const MPI_Op op = mpi_op(op_from_params(c.params), d);
  const MPI_Datatype t = distributed::mpi::datatype(d);
  const size_t item = itemsize(d);
  const bool in_place = c.ins[0] == c.outs[0];
  distributed::mpi::for_each_chunk(c.in_avals[0].size(), [&](int64_t off, int n) {
    const void* in = in_place ? MPI_IN_PLACE : static_cast<const char*>(c.ins[0]) + off * item;
    void* out = static_cast<char*>(c.outs[0]) + off * item;
    call_mpi("allreduce", "MPI_Allreduce", n, comm, [&] { return MPI_Allreduce(in, out, n, t, op, comm.comm()); });
  });
}

std::vector<Array> allreduce_jvp(const ir::Primitive& self, std::span<const Array> primals,
                                 std::span<const Array> tangents, std::span<const Array> outs, const Params& p) {
  const Op op = op_from_params(p);
  if (op != Op::Sum)
    throw NotImplementedError("comm.allreduce: differentiation of op " + to_string(op) +
                              " is not implemented (only SUM is linear); reduce with SUM, or gather with allgather "
                              "and differentiate the local reduction");
  return ops::jvp_linear(self, primals, tangents, outs, p);
}

// The mpi4jax convention: every process differentiates the same replicated result, so the
// cotangent of an allreduce(SUM) input is the output cotangent itself.
std::vector<Array> allreduce_transpose(const ir::Primitive&, std::span<const Array> cts, std::span<const Array>,
                                       std::span<const Aval>, const Params& p) {
  if (op_from_params(p) != Op::Sum)
    throw NotImplementedError("comm.allreduce: transpose of op " + to_string(op_from_params(p)) +
                              " is not defined (only SUM is linear)");
  return {cts[0]};
}

// ---- barrier ----

std::vector<Aval> token_aval(std::span<const Aval>, const Params&) { return {Aval({0}, DType::bool_)}; }

void barrier_kernel(const KernelCall& c) {
  const CommImpl& comm = comm_of(c.params);
  call_mpi("barrier", "MPI_Barrier", 0, comm, [&] { return MPI_Barrier(comm.comm()); });
}

const ir::Primitive& allreduce_p = ir::register_primitive({
    .name = "comm_allreduce",
    .abstract_eval = allreduce_aval,
    .cpu_kernel = allreduce_kernel,
    .inplace = ir::inplace_elementwise,
    .effects = kCommEffects,
    .jvp = allreduce_jvp,
    .transpose = allreduce_transpose,
    .batch = ops::batch_vectorized,
});

const ir::Primitive& barrier_p = ir::register_primitive({
    .name = "comm_barrier",
    .abstract_eval = token_aval,
    .cpu_kernel = barrier_kernel,
    .effects = kCommEffects,
});

}  // namespace

Params comm_params(const Comm& c) { return Params{{"comm", comm_param(c)}}; }

void finish_token(const Array& token) {
  if (!token.is_tracer()) token.block_until_ready();
}

}  // namespace detail

Array allreduce(const Array& x, Op op, const Comm& comm) {
  detail::check_op("allreduce", op, x.dtype());
  ir::Params p = detail::comm_params(comm);
  p.set("op", to_string(op));
  return ops::bind1(detail::allreduce_p, {x}, p);
}

void barrier(const Comm& comm) { detail::finish_token(ops::bind1(detail::barrier_p, {}, detail::comm_params(comm))); }

}  // namespace tessel::comm
