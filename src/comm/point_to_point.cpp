// Point-to-point ts::comm primitives: send, recv and sendrecv (zero-copy kernels on the
// equation's buffers, ordered effects, validation before MPI, rules beside them).
//
//   comm_send[comm, dest, tag](x) -> token bool[0]                              MPI_Send
//   comm_recv[comm, source, tag, shape, dtype, status?](like?) -> shape/dtype  MPI_Recv
//   comm_sendrecv[comm, source, dest, sendtag, recvtag, shape, dtype, status?](x, like?)
//       -> shape/dtype                                                          MPI_Sendrecv
//
// The received type is a parameter (shape, dtype), so a receive needs no input. `like`
// (the array giving that type) is passed as an extra operand only when it is a tracer: it
// carries no value, but it lets the transformations see the receive — under vmap a batched
// `like` means the peer sends the whole batch, so the receive is batched too, and jit
// and nested traces record it where `like` lives. Eagerly nothing is passed.
//
// The optional "status" parameter is the address of the caller's Status, which the kernel
// writes after each receive (source, tag, element count).
//
// Autodiff (cf. mpi4jax, which defines rules for sendrecv only):
// - sendrecv is linear in the data it sends. jvp: the tangents travel the same way as the
//   values (one more sendrecv, of the tangents). transpose: cotangents travel backwards —
//   source and dest swap, and so do the tags — which is what grad of a halo exchange needs.
//   Both assume that every process of the exchange differentiates it alike (SPMD), as the
//   tangent message needs a matching receive.
// - send has no rule: a tangent flowing into a send would have to be received by the peer,
//   whose recv cannot know that the message carries one (its inputs carry no value), so it
//   throws NotImplementedError (use sendrecv, where both sides take part). recv's result
//   does not depend on any local input, so its tangent is zero: a received value is a
//   constant of the receiving process (a sender whose value depends on a differentiated
//   input fails in its send instead of silently dropping the derivative).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "comm/comm_impl.h"
#include "comm/primitives.h"
#include "ops/rule_util.h"
#include "tessel/error.h"

namespace tessel::comm {
namespace detail {

using ops::KernelCall;
using ops::Params;

namespace {

int mpi_source(int64_t source) { return source == ANY_SOURCE ? MPI_ANY_SOURCE : int(source); }
int mpi_tag(int64_t tag) { return tag == ANY_TAG ? MPI_ANY_TAG : int(tag); }

Aval received_aval(const Params& p) { return Aval(p.get_ints("shape"), p.get<DType>("dtype")); }

/// `p` without the caller's Status: derived exchanges (tangents, cotangents) carry other
/// messages than the one the Status describes.
Params without_status(const Params& p) {
  Params q;
  for (const auto& [key, value] : p.items())
    if (key != "status") q.set(key, value);
  return q;
}

// ---- validation (abstract evaluation: before any MPI call, eagerly and when tracing) ----

void check_send_params(const std::string& api, const Params& p, const char* dest_key, const char* tag_key) {
  const CommImpl& comm = comm_of(p);
  check_rank(api, dest_key, int(p.get_int(dest_key)), comm);
  check_tag(api, tag_key, int(p.get_int(tag_key)), false);
}

void check_recv_params(const std::string& api, const Params& p, const char* source_key, const char* tag_key) {
  const CommImpl& comm = comm_of(p);
  check_rank(api, source_key, int(p.get_int(source_key)), comm, true);
  check_tag(api, tag_key, int(p.get_int(tag_key)), true);
}

/// Writes the envelope of a completed receive into the caller's Status (if one was given;
/// MPI_Get_elements_x counts elements also through a derived Block type), and rejects
/// messages shorter than the receiving array (MPI would leave the rest of it unwritten).
void finish_receive(std::string_view api, const MPI_Status& st, MPI_Datatype type, int64_t expected,
                    const Params& p) {
  MPI_Count got = 0;
  if (int err = MPI_Get_elements_x(&st, type, &got); err != MPI_SUCCESS)
    throw_mpi_error(err, "MPI_Get_elements_x", api);
  if (p.has("status")) {  // the address of the caller's Status
    auto* status = reinterpret_cast<Status*>(static_cast<intptr_t>(p.get_int("status")));
    status->source = st.MPI_SOURCE;
    status->tag = st.MPI_TAG;
    status->count = int64_t(got);
  }
  if (int64_t(got) != expected)
    throw ValueError("comm." + std::string(api) + ": received " + std::to_string(int64_t(got)) + " elements from rank " +
                     std::to_string(st.MPI_SOURCE) + " (tag " + std::to_string(st.MPI_TAG) + "), expected " +
                     std::to_string(expected) + "; the array sent must have the receiving array's size");
}

// The received value may be written into `like`'s buffer when `like` dies here.
std::vector<size_t> inplace_like(size_t like_index, std::span<const Aval> ins, std::span<const Aval> outs) {
  if (ins.size() > like_index && ins[like_index].same_type(outs[0])) return {like_index};
  return {};
}

// ---- send ----

std::vector<Aval> send_aval(std::span<const Aval>, const Params& p) {
  check_send_params("send", p, "dest", "tag");
  return {Aval({0}, DType::bool_)};
}

void send_kernel(const KernelCall& c) {
  const CommImpl& comm = comm_of(c.params);
  const int64_t n = c.in_avals[0].size();
  distributed::mpi::Block b(distributed::mpi::datatype(c.in_avals[0].dtype), n);
  const int dest = int(c.params.get_int("dest")), tag = int(c.params.get_int("tag"));
  call_mpi("send", "MPI_Send", n, comm, [&] { return MPI_Send(c.ins[0], b.count(), b.type(), dest, tag, comm.comm()); });
}

// Computes no primal either: the error comes before the message leaves (a send whose
// peer never receives would leave a stray message behind).
std::vector<Array> send_jvp(const ir::Primitive&, std::span<const Array>, std::span<const Array>, const Params&) {
  throw NotImplementedError(
      "comm.send: differentiation through send is not defined: the tangent would have to travel to the receiving "
      "process, whose recv cannot know that the message carries one; exchange the data with comm::sendrecv (its "
      "jvp and transpose are defined), or send a value that does not depend on the differentiated inputs");
}

// The whole batched array is one message (the receiving side, vmapped alike, receives a
// batched `like`).
ops::Batched send_batch(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                        const ops::BatchAxis& axis, const Params& p) {
  Array x = ops::move_batch_dim(ins[0], dims[0], 0, axis.size);
  return {{ops::bind1(self, {x}, p)}, {ops::kNotBatched}};
}

// ---- recv ----

std::vector<Aval> recv_aval(std::span<const Aval>, const Params& p) {
  check_recv_params("recv", p, "source", "tag");
  return {received_aval(p)};
}

void recv_kernel(const KernelCall& c) {
  const CommImpl& comm = comm_of(c.params);
  const int64_t n = c.out_avals[0].size();
  const MPI_Datatype t = distributed::mpi::datatype(c.out_avals[0].dtype);
  distributed::mpi::Block b(t, n);
  const int source = mpi_source(c.params.get_int("source")), tag = mpi_tag(c.params.get_int("tag"));
  MPI_Status st;
  call_mpi("recv", "MPI_Recv", n, comm,
           [&] { return MPI_Recv(c.outs[0], b.count(), b.type(), source, tag, comm.comm(), &st); });
  finish_receive("recv", st, b.type(), n, c.params);
}

std::vector<size_t> recv_inplace(size_t, std::span<const Aval> ins, std::span<const Aval> outs, const Params&) {
  return inplace_like(0, ins, outs);
}

// Only `like` can be batched: the peer sends the whole batch, so receive all of it.
ops::Batched recv_batch(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t>,
                        const ops::BatchAxis& axis, const Params& p) {
  Params q = p;
  Shape shape = p.get_ints("shape");
  shape.insert(shape.begin(), axis.size);
  q.set("shape", shape);
  return {{ops::bind1(self, {ins[0]}, q)}, {0}};
}

// ---- sendrecv ----

std::vector<Aval> sendrecv_aval(std::span<const Aval>, const Params& p) {
  check_send_params("sendrecv", p, "dest", "sendtag");
  check_recv_params("sendrecv", p, "source", "recvtag");
  return {received_aval(p)};
}

// A sendrecv's peers and tags, as MPI takes them (both kernels below read them).
struct SendrecvRoute {
  int dest, sendtag, source, recvtag;
  explicit SendrecvRoute(const Params& p)
      : dest(int(p.get_int("dest"))),
        sendtag(int(p.get_int("sendtag"))),
        source(mpi_source(p.get_int("source"))),
        recvtag(mpi_tag(p.get_int("recvtag"))) {}
};

void sendrecv_kernel(const KernelCall& c) {
  const CommImpl& comm = comm_of(c.params);
  const int64_t ns = c.in_avals[0].size(), nr = c.out_avals[0].size();
  distributed::mpi::Block bs(distributed::mpi::datatype(c.in_avals[0].dtype), ns);
  distributed::mpi::Block br(distributed::mpi::datatype(c.out_avals[0].dtype), nr);
  const SendrecvRoute to(c.params);
  MPI_Status st;
  call_mpi("sendrecv", "MPI_Sendrecv", ns + nr, comm, [&] {
    return MPI_Sendrecv(c.ins[0], bs.count(), bs.type(), to.dest, to.sendtag, c.outs[0], br.count(), br.type(),
                        to.source, to.recvtag, comm.comm(), &st);
  });
  finish_receive("sendrecv", st, br.type(), nr, c.params);
}

// A sendrecv posted by sendrecv_post, with its own copies of the rows sent and received:
// MPI touches no buffer of the program while the caller computes (the halo rows are a few
// KiB to a few hundred KiB; copying them costs microseconds).
struct PostedSendrecv {
  std::vector<std::byte> send, recv;
  std::unique_ptr<distributed::mpi::Block> send_type, recv_type;
  MPI_Request requests[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};  // the receive, the send

  PostedSendrecv() = default;
  PostedSendrecv(const PostedSendrecv&) = delete;
  PostedSendrecv& operator=(const PostedSendrecv&) = delete;
  // Not finished (the program failed between the halves): the receive is cancelled; the
  // send cannot be, so it is left to complete into its buffer, which is kept for good.
  ~PostedSendrecv() {
    if (requests[0] != MPI_REQUEST_NULL) {
      MPI_Cancel(&requests[0]);
      MPI_Wait(&requests[0], MPI_STATUS_IGNORE);
    }
    if (requests[1] != MPI_REQUEST_NULL) {
      MPI_Request_free(&requests[1]);
      static std::mutex mutex;
      static std::vector<std::vector<std::byte>> abandoned;
      std::lock_guard lock(mutex);
      abandoned.push_back(std::move(send));
    }
  }
};

// The two halves of sendrecv_kernel (the primitive's post rule): MPI_Irecv and MPI_Isend
// now, MPI_Waitall in the finish, with the receive checked as the kernel checks it.
std::function<void()> sendrecv_post(const KernelCall& c) {
  const CommImpl& comm = comm_of(c.params);
  const int64_t ns = c.in_avals[0].size(), nr = c.out_avals[0].size();
  const DType ts = c.in_avals[0].dtype, tr = c.out_avals[0].dtype;
  const size_t send_bytes = c.in_avals[0].nbytes(), recv_bytes = c.out_avals[0].nbytes();
  const SendrecvRoute to(c.params);
  auto posted = std::make_shared<PostedSendrecv>();
  posted->send.resize(send_bytes);
  if (send_bytes) std::memcpy(posted->send.data(), c.ins[0], send_bytes);
  posted->recv.resize(recv_bytes);
  posted->send_type = std::make_unique<distributed::mpi::Block>(distributed::mpi::datatype(ts), ns);
  posted->recv_type = std::make_unique<distributed::mpi::Block>(distributed::mpi::datatype(tr), nr);
  if (int err = MPI_Irecv(posted->recv.data(), posted->recv_type->count(), posted->recv_type->type(), to.source,
                          to.recvtag, comm.comm(), &posted->requests[0]);
      err != MPI_SUCCESS)
    throw_mpi_error(err, "MPI_Irecv", "sendrecv");
  if (int err = MPI_Isend(posted->send.data(), posted->send_type->count(), posted->send_type->type(), to.dest,
                          to.sendtag, comm.comm(), &posted->requests[1]);
      err != MPI_SUCCESS)
    throw_mpi_error(err, "MPI_Isend", "sendrecv");
  return [posted, params = c.params, out = c.outs[0], ns, nr, recv_bytes] {
    MPI_Status st[2];
    call_mpi("sendrecv", "MPI_Waitall", ns + nr, comm_of(params),
             [&] { return MPI_Waitall(2, posted->requests, st); });
    finish_receive("sendrecv", st[0], posted->recv_type->type(), nr, params);
    if (recv_bytes) std::memcpy(out, posted->recv.data(), recv_bytes);
  };
}

std::vector<size_t> sendrecv_inplace(size_t, std::span<const Aval> ins, std::span<const Aval> outs, const Params&) {
  return inplace_like(1, ins, outs);
}

void check_definite_source(const char* what, const Params& p) {
  if (p.get_int("source") == ANY_SOURCE)
    throw NotImplementedError(std::string("comm.sendrecv: ") + what +
                              " needs a definite source (the derivative travels along the message, from or back to "
                              "the process it came from); pass the source rank instead of ANY_SOURCE");
}

// The tangents follow the values: the primal exchange, then one of the tangents (checked
// before either runs). Once the rule runs, this process always takes part in the tangent
// exchange (zeros when its own tangent is zero), so a peer with a non-zero tangent finds
// its partner.
std::vector<Array> sendrecv_jvp(const ir::Primitive& self, std::span<const Array> primals,
                                std::span<const Array> tangents, const Params& p) {
  check_definite_source("differentiation", p);
  Array out = ops::bind1(self, primals, p);
  std::vector<Array> ins{ops::instantiate_zeros(tangents[0], primals[0].aval())};
  if (primals.size() > 1) ins.push_back(primals[1]);
  return {out, ops::bind1(self, ins, without_status(p))};
}

// Cotangents travel backwards: what came from `source` goes back to it, and the cotangent
// of what was sent to `dest` comes from there. Tags swap with the directions; a receive
// that took ANY_TAG sends its cotangent with its own send tag and the other side receives
// it with ANY_TAG (equal across processes when every process runs the same exchange).
std::vector<Array> sendrecv_transpose(const ir::Primitive& self, std::span<const Array> cts, std::span<const Array>,
                                      std::span<const Aval> avals, const Params& p) {
  check_definite_source("transposition (reverse-mode differentiation)", p);
  const int64_t sendtag = p.get_int("sendtag"), recvtag = p.get_int("recvtag");
  Params q = without_status(p);
  q.set("source", p.get_int("dest"));
  q.set("dest", p.get_int("source"));
  q.set("sendtag", recvtag == ANY_TAG ? sendtag : recvtag);
  q.set("recvtag", recvtag == ANY_TAG ? int64_t(ANY_TAG) : sendtag);
  q.set("shape", avals[0].shape);
  q.set("dtype", avals[0].dtype);
  Array ct = ops::instantiate_zeros(cts[0], received_aval(p));
  return {ops::bind1(self, {ct}, q), Array()};
}

// A batch on either side moves the whole batch both ways (an unbatched send buffer is
// broadcast): the peer, vmapped alike, does the same.
ops::Batched sendrecv_batch(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                            const ops::BatchAxis& axis, const Params& p) {
  std::vector<Array> args{ops::move_batch_dim(ins[0], dims[0], 0, axis.size)};
  if (ins.size() > 1) args.push_back(ins[1]);  // only carries the type
  Params q = p;
  Shape shape = p.get_ints("shape");
  shape.insert(shape.begin(), axis.size);
  q.set("shape", shape);
  return {{ops::bind1(self, args, q)}, {0}};
}

const ir::Primitive& send_p = ir::register_primitive({
    .name = "comm_send",
    .arity = {1, 1},
    .abstract_eval = send_aval,
    .cpu_kernel = send_kernel,
    .effects = kCommEffects,
    .jvp_with_primals = send_jvp,
    .batch = send_batch,
});

const ir::Primitive& recv_p = ir::register_primitive({
    .name = "comm_recv",
    .abstract_eval = recv_aval,
    .cpu_kernel = recv_kernel,
    .inplace = recv_inplace,
    .effects = kCommEffects,
    .jvp = ops::jvp_zero,
    .batch = recv_batch,
});

const ir::Primitive& sendrecv_p = ir::register_primitive({
    .name = "comm_sendrecv",
    .abstract_eval = sendrecv_aval,
    .cpu_kernel = sendrecv_kernel,
    .post = sendrecv_post,
    .inplace = sendrecv_inplace,
    .effects = kCommEffects,
    .jvp_with_primals = sendrecv_jvp,
    .transpose = sendrecv_transpose,
    .batch = sendrecv_batch,
});

/// Params of a receive of `like`'s type, and the operands carrying `like` (see the top).
void set_received(Params& p, const Array& like, Status* status, std::vector<Array>& operands) {
  p.set("shape", like.shape());
  p.set("dtype", like.dtype());
  if (status) p.set("status", int64_t(reinterpret_cast<intptr_t>(status)));
  if (like.is_tracer()) operands.push_back(like);
}

/// Eagerly, a Status is filled when the call returns: wait for the receive.
Array finish_receive_call(const Array& out, const Status* status) {
  if (status && !out.is_tracer()) out.block_until_ready();
  return out;
}

void check_array(const char* api, const char* what, const Array& a) {
  if (!a.valid()) throw ValueError(std::string("comm.") + api + ": " + what + " is an empty Array; pass an array");
}

}  // namespace
}  // namespace detail

void send(const Array& x, int dest, const SendOptions& options) {
  detail::check_array("send", "x", x);
  ir::Params p = detail::comm_params(options.comm);
  p.set("dest", int64_t(dest));
  p.set("tag", int64_t(options.tag));
  detail::finish_token(ops::bind1(detail::send_p, {x}, p));
}

Array recv(const Array& like, const RecvOptions& options) {
  detail::check_array("recv", "like", like);
  ir::Params p = detail::comm_params(options.comm);
  p.set("source", int64_t(options.source));
  p.set("tag", int64_t(options.tag));
  std::vector<Array> operands;
  detail::set_received(p, like, options.status, operands);
  return detail::finish_receive_call(ops::bind1(detail::recv_p, operands, p), options.status);
}

Array sendrecv(const Array& sendbuf, const Array& recv_like, int source, int dest, const SendRecvOptions& options) {
  detail::check_array("sendrecv", "sendbuf", sendbuf);
  detail::check_array("sendrecv", "recv_like", recv_like);
  ir::Params p = detail::comm_params(options.comm);
  p.set("source", int64_t(source));
  p.set("dest", int64_t(dest));
  p.set("sendtag", int64_t(options.sendtag));
  p.set("recvtag", int64_t(options.recvtag));
  std::vector<Array> operands{sendbuf};
  detail::set_received(p, recv_like, options.status, operands);
  return detail::finish_receive_call(ops::bind1(detail::sendrecv_p, operands, p), options.status);
}

}  // namespace tessel::comm
