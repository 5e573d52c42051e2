#pragma once
// Internals shared by the ts::comm primitives (src/comm/*.cpp): communicators as equation
// parameters, reduction operators, argument checks and the call wrapper that logs, times
// and checks every MPI call.
#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "core/log.h"
#include "distributed/liveness.h"
#include "distributed/mpi.h"
#include "ir/params.h"
#include "tessel/comm.h"

namespace tessel::comm::detail {

/// A communicator: the MPI handle, this process's rank in it and its size.
class CommImpl {
 public:
  CommImpl(MPI_Comm comm, bool owned, std::string name);
  ~CommImpl();
  CommImpl(const CommImpl&) = delete;
  CommImpl& operator=(const CommImpl&) = delete;
  MPI_Comm comm() const { return comm_; }
  const MPI_Comm* handle() const { return &comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  /// Unique per communicator of this process (hashing and equality of parameters).
  int id() const { return id_; }
  const std::string& name() const { return name_; }

 private:
  MPI_Comm comm_;
  bool owned_;
  int rank_ = 0, size_ = 1, id_;
  std::string name_;
};

/// The communicator of `c` (the world for a default-constructed Comm); initializes MPI.
const std::shared_ptr<CommImpl>& resolve(const Comm& c);

/// The "comm" parameter of comm equations.
class CommParam final : public ir::ParamObject {
 public:
  explicit CommParam(std::shared_ptr<CommImpl> c) : comm(std::move(c)) {}
  size_t hash() const override { return std::hash<int>()(comm->id()) ^ 0xc0ffee; }
  bool equals(const ir::ParamObject& o) const override {
    auto* p = dynamic_cast<const CommParam*>(&o);
    return p && p->comm == comm;
  }
  std::string to_string() const override { return comm->name(); }
  /// Only the world communicator travels (every process has it); a split or adopted one
  /// names a group of this process's making, so write throws.
  std::string_view serial_kind() const override { return "comm"; }
  void write(ir::Writer& w) const override;
  std::shared_ptr<CommImpl> comm;
};
/// Parameter value for `c`, and back.
ir::ParamValue comm_param(const Comm& c);
const CommImpl& comm_of(const ir::Params& params);

/// The "op" parameter: the operator's name ("SUM"), and back.
std::string op_name(Op op);
/// `op` itself when it is one of the Op enumerators; else a ValueError naming `api`.
Op checked_op(Op op, const std::string& api);
Op op_from_params(const ir::Params& params);
/// Params {comm: the world, op: `op`} (an Op enumerator, after checked_op), made once per
/// operator: a call on the world in a hot loop copies and allocates no parameters.
const ir::Params& world_op_params(Op op);
/// Throws DTypeError naming `api` where reducing `dtype` with `op` is not defined (Min/Max
/// of complex, arithmetic on bool, logical or bitwise ops of floating types), with the fix.
void check_op(const std::string& api, Op op, DType dtype);
/// The MPI_Op reducing `dtype` with `op` (after check_op): MPI's own, tessel's for
/// float16/bfloat16, logical ones for bitwise ops on bool.
MPI_Op mpi_op(Op op, DType dtype);

/// Throws ValueError "<api>: <what> <value> is outside the communicator <comm> of size n;
/// use a rank in [0, n)" (`allow_any`: ANY_SOURCE is accepted too).
void check_rank(const std::string& api, const char* what, int value, const CommImpl& comm, bool allow_any = false);
/// Throws ValueError unless tag >= 0 (or ANY_TAG when `allow_any`) and <= MPI_TAG_UB.
void check_tag(const std::string& api, const char* what, int tag, bool allow_any);

/// Writes the TESSEL_LOG=debug line of one call.
void log_call(std::string_view api, int64_t items, const CommImpl& comm, double seconds);
/// Throws the Error of a failed call (mpi::check with "comm.<api>").
[[noreturn]] void throw_mpi_error(int err, const char* mpi_call, std::string_view api);

/// Runs one MPI call: returns its error code to mpi::check (which throws with the rank and
/// the call's name), and with TESSEL_LOG=debug logs "comm <api> <n> items on <comm>:
/// <seconds> s". Allocates nothing on the success path (the call may be in a hot loop).
template <class F>
void call_mpi(const char* api, const char* mpi_call, int64_t items, const CommImpl& comm, F f) {
  // A blocking call on a peer that died on another host would never return: the heartbeat
  // thread ends the job with a message instead (distributed/liveness.h).
  distributed::liveness::BlockingCall in_flight("comm::", api);
  if (!tessel::detail::debug_logging()) {
    if (int err = f(); err != MPI_SUCCESS) throw_mpi_error(err, mpi_call, api);
    return;
  }
  auto t0 = std::chrono::steady_clock::now();
  int err = f();
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  log_call(api, items, comm, s);
  if (err != MPI_SUCCESS) throw_mpi_error(err, mpi_call, api);
}

}  // namespace tessel::comm::detail
