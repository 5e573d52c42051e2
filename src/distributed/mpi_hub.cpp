// The MPI collective backend: a launch over a mesh whose devices belong to several
// processes. A group's collective runs in three steps:
//   1. its local members (the devices of this process in the group) meet in shared memory
//      and publish their buffers; one leader (the lowest local rank) packs their inputs
//      into the group's staging buffer (a reduction combines them there first);
//   2. the leader of each process runs the cross-process part through MPI's own collective
//      (MPI_Iallreduce, MPI_Ireduce_scatter(_block), MPI_Iallgather(v), MPI_Ialltoall(v),
//      MPI_Isend/MPI_Irecv of the blocks that cross processes), on a communicator of the
//      group's processes (made once per device set and cached: two groups over the same
//      processes may run at once from different device threads);
//   3. every local member copies its result out of the staging buffer, and waits until all
//      have (so the next collective may reuse the staging buffer).
// MPI only ever touches buffers the group owns, never a member's own: a member that stops
// waiting (after an abort) leaves nothing of its own behind in a pending MPI call.
//
// collective_permute is the exception to the three steps: each member posts its own
// MPI_Isend/MPI_Irecv at permute_start (a local peer is a message to this process's own
// rank) and waits for them at permute_done, so the halo rows travel while the device
// computes the rows that do not need them, and no member waits for the others of its
// process. Its buffers are the group's too (the pending permute's), so the halo rows are
// copied once into the send buffer and once out of the receive buffer.
// The leader waits for MPI by polling, so an abort (a failed local participant) stops it too;
// the communicator it abandons is marked broken, and later launches on it fail clearly.
//
// Staging layouts use the *packed* order of members: by process (ascending, the
// communicator's rank order), then by group rank. With TESSEL_LOG=debug every exchange
// writes one line naming the MPI call (and, for reductions, the MPI_Op).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "core/log.h"
#include "distributed/collectives.h"
#include "distributed/liveness.h"
#include "distributed/mpi.h"
#include "tessel/error.h"

namespace tessel::distributed {
namespace {

// ---- communicators, one per set of devices ----

struct CommEntry {
  std::once_flag made;
  MPI_Comm comm = MPI_COMM_NULL;
  std::atomic<bool> broken{false};
};

std::string devices_text(const std::vector<int>& devices) {
  std::string r;
  for (size_t i = 0; i < devices.size(); ++i) r += (i ? ", cpu:" : "cpu:") + std::to_string(devices[i]);
  return r;
}

/// The tag that tells concurrent MPI_Comm_create_group calls apart: the same in every
/// process for a device set, and (with overwhelming probability) different between sets.
int creation_tag(const std::vector<int>& devices) {
  uint64_t h = 1469598103934665603ull;
  for (int d : devices) h = (h ^ uint64_t(uint32_t(d))) * 1099511628211ull;
  int* ub = nullptr;
  int flag = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
  const uint64_t limit = flag && ub && *ub > 0 ? uint64_t(*ub) : 32767;
  return int(h % limit);
}

/// The communicator of `processes` (ascending world ranks) for the group of `devices`
/// (ascending global ids), made on first use by the leaders of those processes.
CommEntry& group_comm(const std::vector<int>& devices, const std::vector<int>& processes) {
  static std::mutex mu;
  static auto* comms = new std::map<std::vector<int>, std::unique_ptr<CommEntry>>();
  CommEntry* e;
  {
    std::lock_guard lock(mu);
    auto& slot = (*comms)[devices];
    if (!slot) slot = std::make_unique<CommEntry>();
    e = slot.get();
  }
  std::call_once(e->made, [&] {
    const std::string op = "collective over " + devices_text(devices);
    MPI_Group world, group;
    mpi::check(MPI_Comm_group(MPI_COMM_WORLD, &world), "MPI_Comm_group", op);
    mpi::check(MPI_Group_incl(world, int(processes.size()), processes.data(), &group), "MPI_Group_incl", op);
    MPI_Comm comm = MPI_COMM_NULL;
    const int err = MPI_Comm_create_group(MPI_COMM_WORLD, group, creation_tag(devices), &comm);
    MPI_Group_free(&group);
    MPI_Group_free(&world);
    mpi::check(err, "MPI_Comm_create_group", op);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    e->comm = comm;
    TESSEL_DEBUG_LOG("collectives: communicator of " + std::to_string(processes.size()) + " processes for " +
                     devices_text(devices));
  });
  return *e;
}

// ---- reduction operations ----

/// The MPI_Op of a reduction, and its name for the debug log.
struct ReduceOp {
  MPI_Op op;
  std::string name;
};

/// tessel's combine (ir::Combine over the functors of backend/cpu/reduction_ops.h) as an
/// MPI user function on elements of T.
template <ir::Combine C, class T> void combine_as_mpi_op(void* in, void* inout, int* len, MPI_Datatype*) {
  combine_elements(C, dtype_of<T>(), {inout, in}, inout, size_t(*len));
}

/// tessel's combine of `dtype` as a (commutative) MPI_Op, made on first use.
MPI_Op tessel_op(ir::Combine c, DType dtype) {
  static std::mutex mu;
  static auto* ops = new std::map<std::pair<ir::Combine, DType>, MPI_Op>();  // MPI_Finalize frees them
  std::lock_guard lock(mu);
  auto it = ops->find({c, dtype});
  if (it != ops->end()) return it->second;
  MPI_User_function* fn = visit_dtype(dtype, [&](auto z) -> MPI_User_function* {
    using T = decltype(z);
    switch (c) {
      case ir::Combine::kSum: return &combine_as_mpi_op<ir::Combine::kSum, T>;
      case ir::Combine::kProd: return &combine_as_mpi_op<ir::Combine::kProd, T>;
      case ir::Combine::kMax: return &combine_as_mpi_op<ir::Combine::kMax, T>;
      case ir::Combine::kMin: return &combine_as_mpi_op<ir::Combine::kMin, T>;
      case ir::Combine::kNone: break;
    }
    throw Error("internal: a collective reduction needs an operation (sum, prod, max or min)");
  });
  MPI_Op op = MPI_OP_NULL;
  mpi::check(MPI_Op_create(fn, /*commute=*/1, &op), "MPI_Op_create", "collective reduction");
  return ops->emplace(std::pair{c, dtype}, op).first->second;
}

/// The MPI_Op combining `dtype` with `c` exactly as tessel's in-process collectives do:
/// MPI's predefined operation where its result is tessel's bit for bit, else tessel's
/// combine as a user operation:
///  - float16/bfloat16: MPI has no 16-bit floating types (they travel as MPI_UINT16_T);
///  - max/min of floating and complex types: tessel's propagate NaN and order -0 < +0 (as
///    pmax/pmin document); MPI_MAX/MPI_MIN do neither, and with a NaN their result even
///    depends on the operands' order, so two processes could get different values; MPI
///    defines no max/min of complex numbers at all.
/// bool (MPI_C_BOOL) sums and maximums are MPI_LOR, products and minimums MPI_LAND.
ReduceOp reduce_op(ir::Combine c, DType dtype) {
  const bool half = dtype == DType::float16 || dtype == DType::bfloat16;
  const bool ordered = c == ir::Combine::kMax || c == ir::Combine::kMin;
  if (half || (ordered && (is_floating(dtype) || is_complex(dtype))))
    return {tessel_op(c, dtype), std::string("tessel's ") + ir::combine_name(c)};
  const bool boolean = dtype == DType::bool_;
  switch (c) {
    case ir::Combine::kSum: return boolean ? ReduceOp{MPI_LOR, "MPI_LOR"} : ReduceOp{MPI_SUM, "MPI_SUM"};
    case ir::Combine::kProd: return boolean ? ReduceOp{MPI_LAND, "MPI_LAND"} : ReduceOp{MPI_PROD, "MPI_PROD"};
    case ir::Combine::kMax: return boolean ? ReduceOp{MPI_LOR, "MPI_LOR"} : ReduceOp{MPI_MAX, "MPI_MAX"};
    case ir::Combine::kMin: return boolean ? ReduceOp{MPI_LAND, "MPI_LAND"} : ReduceOp{MPI_MIN, "MPI_MIN"};
    case ir::Combine::kNone: break;
  }
  throw Error("internal: a collective reduction needs an operation (sum, prod, max or min)");
}

/// "12 float32 (max: tessel's max)": the elements of a reduction, for the debug log.
std::string reduction_text(size_t count, DType dtype, ir::Combine c, const ReduceOp& op) {
  return std::to_string(count) + " " + dtype_name(dtype) + " (" + ir::combine_name(c) + ": " + op.name + ")";
}

/// An MPI datatype whose one element is `bytes` bytes (any size).
class BlockType {
 public:
  explicit BlockType(size_t bytes) {
    mpi::Block b(MPI_BYTE, int64_t(bytes));
    MPI_Type_contiguous(b.count(), b.type(), &type_);
    MPI_Type_commit(&type_);
  }
  ~BlockType() { MPI_Type_free(&type_); }
  BlockType(const BlockType&) = delete;
  BlockType& operator=(const BlockType&) = delete;
  MPI_Datatype get() const { return type_; }

 private:
  MPI_Datatype type_;
};

class MpiHub;

class MpiGroup final : public CollectiveGroup {
 public:
  MpiGroup(MpiHub& hub, const std::vector<int>& members, const std::vector<Participant>& participants, int me);
  int size() const override { return int(n_); }

  void all_reduce(int rank, const void* in, void* out, size_t count, DType dtype, ir::Combine op) override;
  void all_gather(int rank, const void* in, void* out, size_t bytes) override;
  void all_to_all(int rank, const void* in, void* out, size_t bytes) override;
  void reduce_scatter(int rank, const void* in, void* out, size_t count, DType dtype, ir::Combine op) override;
  void permute(int rank, const void* in, void* out, size_t bytes, int source, int dest) override;
  uint64_t permute_start(int rank, const void* in, size_t bytes, int source, int dest) override;
  void permute_done(int rank, uint64_t ticket, void* out) override;
  ~MpiGroup() override;

  /// Wakes the members waiting here (after an abort).
  void wake() {
    std::lock_guard lock(mu_);
    cv_.notify_all();
  }

 private:
  struct Slot {
    const void* in = nullptr;
    void* out = nullptr;
    int source = -1, dest = -1;
  };

  /// Runs one collective for member `rank`: publish, the leader's `pack` (reads the local
  /// members' inputs) and `exchange` (MPI), then `finish` (this member's result).
  template <class Pack, class Exchange, class Finish>
  void run(int rank, Slot slot, const char* op, Pack pack, Exchange exchange, Finish finish);
  /// Waits until every local member has arrived.
  void meet();
  /// Waits until the leader reached `stage` (1: packed, 2: exchanged); `abortable`: an
  /// abort ends the wait.
  void await_stage(int stage, bool abortable);
  void set_stage(int stage);
  /// Waits for MPI requests, polling so an abort or a silent process of the group can end
  /// the wait; then marks the communicator broken, calls `abandon` (the requests stay
  /// pending: it must keep their buffers alive) and throws.
  template <class Abandon> void wait_all(std::vector<MPI_Request>& reqs, const char* op, Abandon abandon);
  void wait_all(std::vector<MPI_Request>& reqs, const char* op) {
    wait_all(reqs, op, [this] {
      (void)staging_.release();
      staging_bytes_ = 0;
    });
  }
  /// The tag of a permute's message from member `from` to member `to` (one per pair, so
  /// each member's thread posts its receives in the order its peer posts the sends).
  int permute_tag(int from, int to) const { return from * int(n_) + to; }
  /// ValueError when a permute names a source or destination outside the group.
  void check_pair(int rank, int source, int dest) const;
  /// The permute as one collective of the three steps (groups whose pairs' tags exceed
  /// MPI_TAG_UB).
  void permute_via_leaders(int rank, const void* in, void* out, size_t bytes, int source, int dest);
  /// reduce_scatter's exchange: reduces the runs of the send area (staging, n_ blocks of
  /// `count` elements in packed order) and leaves this process's run after them.
  void reduce_scatter_runs(MPI_Comm c, size_t count, DType dtype, ir::Combine op);
  /// The staging area, grown to at least `bytes` bytes (contents unspecified).
  char* staging(size_t bytes);
  MPI_Comm comm(const char* op);
  /// The TESSEL_LOG=debug line of an exchange: "collectives: <op> over <devices> (<P>
  /// processes): <what>".
  std::string exchange_line(const char* op, const std::string& what) const;
  void check_rank(int rank) const;
  /// The local index of member `rank` (its position among this process's members).
  size_t local_index(int rank) const { return size_t(packed_[size_t(rank)] - first_[size_t(my_slot_)]); }

  MpiHub& hub_;
  size_t n_;
  std::vector<int> devices_;    // ascending global ids of the members' devices
  std::vector<int> processes_;  // ascending world ranks: the communicator's ranks
  std::vector<int> count_;      // members per process (communicator order)
  std::vector<int> first_;      // packed index of each process's first member
  std::vector<int> packed_;     // packed index of member r
  std::vector<int> slot_of_;    // communicator rank of member r's process
  std::vector<int> local_;      // local members' ranks, ascending
  int my_slot_ = 0;
  bool uniform_ = true;  // every process holds as many members: MPI's non-v collectives fit
  CommEntry* comm_ = nullptr;

  std::vector<Slot> slots_;  // written by each local member at its rank before meeting
  std::unique_ptr<char[]> staging_;
  size_t staging_bytes_ = 0;
  std::exception_ptr leader_error_;

  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  int stage_ = 0;

  // Permutes started and not done: by (member, ticket). Each holds the MPI requests and the
  // buffers they use; a member's tickets count its starts.
  struct PendingPermute {
    std::unique_ptr<char[]> send, recv;
    std::vector<MPI_Request> reqs;
    int source = -1;
    size_t bytes = 0;
  };
  std::mutex permute_mu_;
  std::map<std::pair<int, uint64_t>, PendingPermute> pending_;
  std::vector<uint64_t> started_ = std::vector<uint64_t>(n_);
  bool tags_fit_ = true;  // every pair's tag is below MPI_TAG_UB (else the base class's permute halves)
  std::once_flag comm_made_;
};

class MpiHub final : public CollectiveHub {
 public:
  MpiHub(std::vector<Participant> participants, int me)
      : participants_(std::move(participants)), me_(me), local_(make_in_process_hub(int(participants_.size()))) {}

  CollectiveGroup& group(const std::vector<int>& members) override {
    bool all_local = true;
    for (int m : members) {
      if (m < 0 || m >= int(participants_.size()))
        throw Error("internal: collective group member " + std::to_string(m) + " outside the launch's " +
                    std::to_string(participants_.size()) + " participants");
      all_local &= participants_[size_t(m)].process == me_;
    }
    if (all_local) return local_->group(members);
    std::lock_guard lock(mu_);
    auto& g = groups_[members];
    if (!g) g = std::make_unique<MpiGroup>(*this, members, participants_, me_);
    return *g;
  }

  void abort(int position, std::exception_ptr error) override {
    local_->abort(position, error);
    std::string msg = exception_message(error);
    {
      std::lock_guard lock(mu_);
      if (aborted_.load()) return;
      failed_position_ = position;
      failed_message_ = std::move(msg);
      aborted_.store(true, std::memory_order_release);
      for (auto& [members, g] : groups_) g->wake();
    }
  }

  bool aborted() const { return aborted_.load(std::memory_order_acquire); }
  [[noreturn]] void throw_aborted() const {
    throw Error("collective aborted: the participant at mesh position " + std::to_string(failed_position_) +
                " (cpu:" + std::to_string(participants_[size_t(failed_position_)].device) + ", process " +
                std::to_string(participants_[size_t(failed_position_)].process) + ") failed: " + failed_message_);
  }

 private:
  std::vector<Participant> participants_;
  int me_;
  std::shared_ptr<CollectiveHub> local_;  // groups of this process's devices alone
  std::mutex mu_;
  std::map<std::vector<int>, std::unique_ptr<MpiGroup>> groups_;
  std::atomic<bool> aborted_{false};
  int failed_position_ = 0;  // written once before aborted_ is set
  std::string failed_message_;
};

MpiGroup::MpiGroup(MpiHub& hub, const std::vector<int>& members, const std::vector<Participant>& participants, int me)
    : hub_(hub), n_(members.size()), slots_(members.size()) {
  std::vector<int> proc_of;
  for (int m : members) {
    proc_of.push_back(participants[size_t(m)].process);
    devices_.push_back(participants[size_t(m)].device);
    processes_.push_back(proc_of.back());
  }
  std::sort(devices_.begin(), devices_.end());
  std::sort(processes_.begin(), processes_.end());
  processes_.erase(std::unique(processes_.begin(), processes_.end()), processes_.end());
  count_.assign(processes_.size(), 0);
  for (size_t r = 0; r < n_; ++r) {
    slot_of_.push_back(int(std::lower_bound(processes_.begin(), processes_.end(), proc_of[r]) - processes_.begin()));
    ++count_[size_t(slot_of_.back())];
  }
  for (size_t s = 0, k = 0; s < processes_.size(); k += size_t(count_[s]), ++s) first_.push_back(int(k));
  std::vector<int> next = first_;
  for (size_t r = 0; r < n_; ++r) packed_.push_back(next[size_t(slot_of_[r])]++);
  for (size_t r = 0; r < n_; ++r)
    if (proc_of[r] == me) local_.push_back(int(r));
  my_slot_ = int(std::lower_bound(processes_.begin(), processes_.end(), me) - processes_.begin());
  uniform_ = std::all_of(count_.begin(), count_.end(), [&](int k) { return k == count_[0]; });
  int* ub = nullptr;
  int flag = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
  tags_fit_ = int64_t(n_) * int64_t(n_) <= (flag && ub && *ub > 0 ? int64_t(*ub) : 32767);
}

// A group destroyed with permutes still pending (a launch that failed between a start and
// its done) leaves their buffers to MPI, which may still write them.
MpiGroup::~MpiGroup() {
  for (auto& [key, p] : pending_) {
    bool active = false;
    for (MPI_Request r : p.reqs) active |= r != MPI_REQUEST_NULL;
    if (!active) continue;
    (void)p.send.release();
    (void)p.recv.release();
  }
}

std::string MpiGroup::exchange_line(const char* op, const std::string& what) const {
  return std::string("collectives: ") + op + " over " + devices_text(devices_) + " (" +
         std::to_string(processes_.size()) + " processes): " + what;
}

void MpiGroup::check_rank(int rank) const {
  if (rank < 0 || size_t(rank) >= n_ || std::find(local_.begin(), local_.end(), rank) == local_.end())
    throw Error("internal: collective called with rank " + std::to_string(rank) +
                ", which is not a member of this process in a group of " + std::to_string(n_));
}

MPI_Comm MpiGroup::comm(const char* op) {
  std::call_once(comm_made_, [&] { comm_ = &group_comm(devices_, processes_); });
  if (comm_->broken.load())
    throw Error(std::string(op) + ": an earlier collective over " + devices_text(devices_) +
                " was abandoned after a failure, so the processes are out of step on these devices; restart the job");
  return comm_->comm;
}

char* MpiGroup::staging(size_t bytes) {
  if (bytes > staging_bytes_) {
    staging_ = std::make_unique_for_overwrite<char[]>(bytes);
    staging_bytes_ = bytes;
  }
  return staging_.get();
}

void MpiGroup::meet() {
  if (hub_.aborted()) hub_.throw_aborted();
  std::unique_lock lock(mu_);
  const uint64_t gen = generation_;
  if (++arrived_ == int(local_.size())) {
    arrived_ = 0;
    ++generation_;
    stage_ = 0;
    cv_.notify_all();
    return;
  }
  cv_.wait(lock, [&] { return generation_ != gen || hub_.aborted(); });
  if (generation_ == gen) hub_.throw_aborted();
}

void MpiGroup::set_stage(int stage) {
  std::lock_guard lock(mu_);
  stage_ = stage;
  cv_.notify_all();
}

void MpiGroup::await_stage(int stage, bool abortable) {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return stage_ >= stage || (abortable && hub_.aborted()); });
  if (stage_ < stage) hub_.throw_aborted();
}

template <class Abandon> void MpiGroup::wait_all(std::vector<MPI_Request>& reqs, const char* op, Abandon abandon) {
  for (int spins = 0;; ++spins) {
    int done = 0;
    mpi::check(MPI_Testall(int(reqs.size()), reqs.data(), &done, MPI_STATUSES_IGNORE), "MPI_Testall", op);
    if (done) return;
    // A process of the group on another host that died sends nothing more: its heartbeats
    // tell (every ~1000 polls, about each 20 ms once sleeping).
    int gone = -1;
    if (spins % 1024 == 1023)
      for (int p : processes_)
        if (!liveness::silent(p).empty()) gone = p;
    if (hub_.aborted() || gone >= 0) {
      // The requests stay pending on their buffers: keep them alive, and mark the
      // communicator unusable (its processes no longer agree on the next collective).
      comm_->broken.store(true);
      abandon();
      if (gone >= 0) liveness::check(gone, op);
      hub_.throw_aborted();
    }
    if (spins < 2000) std::this_thread::yield();
    else std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

template <class Pack, class Exchange, class Finish>
void MpiGroup::run(int rank, Slot slot, const char* op, Pack pack, Exchange exchange, Finish finish) {
  check_rank(rank);
  slots_[size_t(rank)] = slot;
  meet();
  const bool leader = rank == local_[0];
  if (leader) {
    leader_error_ = nullptr;
    try {
      pack();
    } catch (...) {
      leader_error_ = std::current_exception();
    }
    set_stage(1);
    try {
      if (!leader_error_) exchange(comm(op));
    } catch (...) {
      if (hub_.aborted()) throw;  // wait_all gave up: the members were woken too
      leader_error_ = std::current_exception();
    }
    set_stage(2);
  } else {
    await_stage(1, /*abortable=*/false);  // the leader is reading this member's input
    await_stage(2, /*abortable=*/true);
  }
  if (!leader_error_) finish();
  std::exception_ptr error = leader_error_;
  meet();  // nobody starts the next collective (and reuses staging) before all have read
  if (error) std::rethrow_exception(error);
}

// all_reduce: the leader combines the local inputs into one partial result, which the
// leaders reduce in place with MPI_Iallreduce (in chunks of at most max_count elements:
// MPI's operations take only its own datatypes, so no derived type can span more). MPI
// gives every process the same result, so every member of the group gets bit-identical
// values; the order in which the processes' partials combine is MPI's.
void MpiGroup::all_reduce(int rank, const void* in, void* out, size_t count, DType dtype, ir::Combine op) {
  const size_t isz = itemsize(dtype), bytes = count * isz;
  run(
      rank, {in, out}, "all_reduce",
      [&] {
        std::vector<const void*> ins;
        for (int r : local_) ins.push_back(slots_[size_t(r)].in);
        combine_elements(op, dtype, ins, staging(bytes), count);
      },
      [&](MPI_Comm c) {
        if (bytes == 0) return;
        const ReduceOp rop = reduce_op(op, dtype);
        TESSEL_DEBUG_LOG(exchange_line("all_reduce", "MPI_Iallreduce of " + reduction_text(count, dtype, op, rop)));
        std::vector<MPI_Request> reqs;
        mpi::for_each_chunk(int64_t(count), [&](int64_t off, int n) {
          reqs.emplace_back();
          mpi::check(MPI_Iallreduce(MPI_IN_PLACE, staging_.get() + size_t(off) * isz, n, mpi::datatype(dtype),
                                    rop.op, c, &reqs.back()),
                     "MPI_Iallreduce", "all_reduce");
        });
        wait_all(reqs, "all_reduce");
      },
      [&] {
        if (bytes && out) std::memcpy(out, staging_.get(), bytes);
      });
}

// all_gather: the leaders gather every process's blocks in packed order in place
// (MPI_Iallgather when every process holds as many members, else MPI_Iallgatherv); each
// member copies them to its output in rank order.
void MpiGroup::all_gather(int rank, const void* in, void* out, size_t bytes) {
  run(
      rank, {in, out}, "all_gather",
      [&] {
        char* recv = staging(bytes * n_);
        for (int r : local_) std::memcpy(recv + size_t(packed_[size_t(r)]) * bytes, slots_[size_t(r)].in, bytes);
      },
      [&](MPI_Comm c) {
        if (bytes == 0) return;
        const char* call = uniform_ ? "MPI_Iallgather" : "MPI_Iallgatherv";
        TESSEL_DEBUG_LOG(exchange_line("all_gather", std::string(call) + " of " + std::to_string(n_) + " blocks of " +
                                                         std::to_string(bytes) + " bytes"));
        BlockType t(bytes);
        std::vector<MPI_Request> req(1);
        mpi::check(uniform_ ? MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, staging_.get(), count_[0], t.get(),
                                             c, req.data())
                            : MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, staging_.get(), count_.data(),
                                              first_.data(), t.get(), c, req.data()),
                   call, "all_gather");
        wait_all(req, "all_gather");
      },
      [&] {
        for (size_t r = 0; r < n_; ++r)
          std::memcpy(static_cast<char*>(out) + r * bytes, staging_.get() + size_t(packed_[r]) * bytes, bytes);
      });
}

// all_to_all: the send area holds, per destination process t, per local source a, the
// blocks for t's members; the receive area, per source member (packed order), the blocks
// for this process's members. The leaders swap them with MPI_Ialltoall (as many members
// in every process: L * L blocks between any two) or MPI_Ialltoallv.
void MpiGroup::all_to_all(int rank, const void* in, void* out, size_t bytes) {
  const size_t L = local_.size(), total = n_ * L * bytes;
  run(
      rank, {in, out}, "all_to_all",
      [&] {
        char* send = staging(2 * total);
        for (size_t a = 0; a < L; ++a) {
          const char* src = static_cast<const char*>(slots_[size_t(local_[a])].in);
          for (size_t b = 0; b < n_; ++b) {
            const size_t t = size_t(slot_of_[b]), k = size_t(packed_[b] - first_[t]);
            std::memcpy(send + (size_t(first_[t]) * L + a * size_t(count_[t]) + k) * bytes, src + b * bytes, bytes);
          }
        }
      },
      [&](MPI_Comm c) {
        if (bytes == 0) return;
        const char* call = uniform_ ? "MPI_Ialltoall" : "MPI_Ialltoallv";
        TESSEL_DEBUG_LOG(exchange_line("all_to_all", std::string(call) + " of " + std::to_string(n_ * L) +
                                                         " blocks of " + std::to_string(bytes) + " bytes"));
        const size_t P = processes_.size();
        std::vector<int> counts(P), displs(P);
        for (size_t t = 0; t < P; ++t) counts[t] = int(L) * count_[t], displs[t] = int(L) * first_[t];
        BlockType type(bytes);
        char *send = staging_.get(), *recv = send + total;
        std::vector<MPI_Request> req(1);
        mpi::check(uniform_ ? MPI_Ialltoall(send, counts[0], type.get(), recv, counts[0], type.get(), c, req.data())
                            : MPI_Ialltoallv(send, counts.data(), displs.data(), type.get(), recv, counts.data(),
                                             displs.data(), type.get(), c, req.data()),
                   call, "all_to_all");
        wait_all(req, "all_to_all");
      },
      [&] {
        const char* recv = staging_.get() + total;
        const size_t i = local_index(rank);
        for (size_t j = 0; j < n_; ++j)
          std::memcpy(static_cast<char*>(out) + j * bytes, recv + (size_t(packed_[j]) * L + i) * bytes, bytes);
      });
}

// reduce_scatter: the leader combines the local inputs block by block, in packed order, so
// process t's members' blocks are one run of count_[t] blocks; the leaders reduce and
// scatter those runs with MPI_Ireduce_scatter_block (as many members in every process) or
// MPI_Ireduce_scatter, and each local member copies its block.
void MpiGroup::reduce_scatter(int rank, const void* in, void* out, size_t count, DType dtype, ir::Combine op) {
  const size_t L = local_.size(), bytes = count * itemsize(dtype);
  run(
      rank, {in, out}, "reduce_scatter",
      [&] {
        char* send = staging(n_ * bytes + L * bytes);  // [send: n_ blocks | receive: L blocks]
        for (size_t b = 0; b < n_; ++b) {
          std::vector<const void*> ins;
          for (int r : local_) ins.push_back(static_cast<const char*>(slots_[size_t(r)].in) + b * bytes);
          combine_elements(op, dtype, ins, send + size_t(packed_[b]) * bytes, count);
        }
      },
      [&](MPI_Comm c) {
        if (bytes) reduce_scatter_runs(c, count, dtype, op);
      },
      [&] {
        if (bytes) std::memcpy(out, staging_.get() + (n_ + local_index(rank)) * bytes, bytes);
      });
}

void MpiGroup::reduce_scatter_runs(MPI_Comm c, size_t count, DType dtype, ir::Combine op) {
  const size_t P = processes_.size(), isz = itemsize(dtype);
  const ReduceOp rop = reduce_op(op, dtype);
  const MPI_Datatype t = mpi::datatype(dtype);
  char *send = staging_.get(), *recv = send + n_ * count * isz;
  const bool fits = int64_t(*std::max_element(count_.begin(), count_.end())) * int64_t(count) <= mpi::max_count();
  const char* call = !fits ? "MPI_Ireduce" : uniform_ ? "MPI_Ireduce_scatter_block" : "MPI_Ireduce_scatter";
  TESSEL_DEBUG_LOG(exchange_line("reduce_scatter",
                                 std::string(call) + " of " + reduction_text(n_ * count, dtype, op, rop)));
  std::vector<MPI_Request> reqs;
  auto post = [&](int err) { mpi::check(err, call, "reduce_scatter"); };
  std::vector<int> counts;  // elements per process, alive until the request completes
  if (fits) {
    for (int k : count_) counts.push_back(k * int(count));
    reqs.emplace_back();
    post(uniform_ ? MPI_Ireduce_scatter_block(send, recv, counts[0], t, rop.op, c, &reqs.back())
                  : MPI_Ireduce_scatter(send, recv, counts.data(), t, rop.op, c, &reqs.back()));
  } else {
    // A process's run is longer than one MPI call takes: reduce each run to its process
    // in chunks (the same result, as P reductions).
    for (size_t p = 0; p < P; ++p) {
      const size_t first = size_t(first_[p]) * count;
      mpi::for_each_chunk(int64_t(count_[p]) * int64_t(count), [&](int64_t off, int n) {
        reqs.emplace_back();
        post(MPI_Ireduce(send + (first + size_t(off)) * isz, recv + size_t(off) * isz, n, t, rop.op, int(p), c,
                         &reqs.back()));
      });
    }
  }
  wait_all(reqs, "reduce_scatter");
}

void MpiGroup::check_pair(int rank, int source, int dest) const {
  if (source >= size() || dest >= size())
    throw ValueError("collective_permute: member " + std::to_string(rank) + " names " +
                     (source >= size() ? "source " + std::to_string(source) : "destination " + std::to_string(dest)) +
                     " in a group of " + std::to_string(size()));
}

void MpiGroup::permute(int rank, const void* in, void* out, size_t bytes, int source, int dest) {
  if (tags_fit_) return permute_done(rank, permute_start(rank, in, bytes, source, dest), out);
  permute_via_leaders(rank, in, out, bytes, source, dest);
}

// permute_start: the member copies its rows into the pending permute's send buffer and
// posts MPI_Isend of them and MPI_Irecv of its source's rows into the receive buffer (the
// communicator's rank of the peer's process; tag: the pair), then returns at once.
uint64_t MpiGroup::permute_start(int rank, const void* in, size_t bytes, int source, int dest) {
  if (!tags_fit_) return CollectiveGroup::permute_start(rank, in, bytes, source, dest);
  check_rank(rank);
  check_pair(rank, source, dest);
  if (hub_.aborted()) hub_.throw_aborted();
  PendingPermute p;
  p.source = source;
  p.bytes = bytes;
  // Every member asks for the communicator, pairs or not: its first use is collective over
  // the group's processes (MPI_Comm_create_group), so a process whose members exchange
  // nothing must still take part.
  const MPI_Comm c = comm("collective_permute");
  if (bytes && (source >= 0 || dest >= 0)) {
    const mpi::Block block(MPI_BYTE, int64_t(bytes));  // freeing it leaves the posted requests intact
    if (source >= 0) {
      p.recv = std::make_unique_for_overwrite<char[]>(bytes);
      p.reqs.emplace_back();
      mpi::check(MPI_Irecv(p.recv.get(), block.count(), block.type(), slot_of_[size_t(source)],
                           permute_tag(source, rank), c, &p.reqs.back()),
                 "MPI_Irecv", "collective_permute");
    }
    if (dest >= 0) {
      p.send = std::make_unique_for_overwrite<char[]>(bytes);
      std::memcpy(p.send.get(), in, bytes);
      p.reqs.emplace_back();
      mpi::check(MPI_Isend(p.send.get(), block.count(), block.type(), slot_of_[size_t(dest)], permute_tag(rank, dest),
                           c, &p.reqs.back()),
                 "MPI_Isend", "collective_permute");
    }
    TESSEL_DEBUG_LOG(exchange_line("collective_permute",
                                   "member " + std::to_string(rank) + " posts MPI_Isend/MPI_Irecv of " +
                                       std::to_string(bytes) + " bytes (from " + std::to_string(source) + ", to " +
                                       std::to_string(dest) + ")"));
  }
  std::lock_guard lock(permute_mu_);
  const uint64_t ticket = started_[size_t(rank)]++;
  pending_.emplace(std::pair{rank, ticket}, std::move(p));
  return ticket;
}

// permute_done: waits for the member's two requests (polling: an abort or a silent peer
// process ends the wait with an error instead of a hang) and copies the received rows out.
void MpiGroup::permute_done(int rank, uint64_t ticket, void* out) {
  if (!tags_fit_) return CollectiveGroup::permute_done(rank, ticket, out);
  PendingPermute p = take_pending_permute(permute_mu_, pending_, rank, ticket);
  if (!p.reqs.empty())
    wait_all(p.reqs, "collective_permute", [&] {
      (void)p.send.release();
      (void)p.recv.release();
    });
  if (p.source >= 0 && p.bytes) std::memcpy(out, p.recv.get(), p.bytes);
}

// permute_via_leaders (groups too large for a tag per pair): the leader copies each local
// input bound for a local member straight into that member's receive block (shared
// memory), and the rest into a send block; the leaders then exchange only the blocks that
// cross processes, point to point (MPI_Isend/MPI_Irecv pairs, tag: the sender's rank).
void MpiGroup::permute_via_leaders(int rank, const void* in, void* out, size_t bytes, int source, int dest) {
  check_pair(rank, source, dest);
  const size_t L = local_.size();
  auto is_local = [&](int r) { return slot_of_[size_t(r)] == my_slot_; };
  run(
      rank, {in, out, source, dest}, "collective_permute",
      [&] {
        char* recv = staging(2 * L * bytes);  // [receive blocks of local members | send blocks]
        for (size_t a = 0; a < L; ++a) {
          const Slot& s = slots_[size_t(local_[a])];
          if (s.dest < 0) continue;
          char* to = is_local(s.dest) ? recv + local_index(s.dest) * bytes : recv + (L + a) * bytes;
          if (bytes) std::memcpy(to, s.in, bytes);
        }
      },
      [&](MPI_Comm c) {
        if (bytes == 0) return;
        BlockType type(bytes);
        std::vector<MPI_Request> reqs;
        for (size_t a = 0; a < L; ++a) {
          const Slot& s = slots_[size_t(local_[a])];
          MPI_Request req;
          if (s.source >= 0 && !is_local(s.source)) {
            mpi::check(MPI_Irecv(staging_.get() + a * bytes, 1, type.get(), slot_of_[size_t(s.source)], s.source, c,
                                 &req),
                       "MPI_Irecv", "collective_permute");
            reqs.push_back(req);
          }
          if (s.dest >= 0 && !is_local(s.dest)) {
            mpi::check(MPI_Isend(staging_.get() + (L + a) * bytes, 1, type.get(), slot_of_[size_t(s.dest)], local_[a],
                                 c, &req),
                       "MPI_Isend", "collective_permute");
            reqs.push_back(req);
          }
        }
        TESSEL_DEBUG_LOG(exchange_line("collective_permute", "MPI_Isend/MPI_Irecv of " + std::to_string(reqs.size()) +
                                                                 " blocks of " + std::to_string(bytes) + " bytes"));
        wait_all(reqs, "collective_permute");
      },
      [&] {
        if (source >= 0 && bytes) std::memcpy(out, staging_.get() + local_index(rank) * bytes, bytes);
      });
}

}  // namespace

std::shared_ptr<CollectiveHub> make_hub(const std::vector<Participant>& participants, int this_process) {
  bool all_local = true;
  for (const Participant& p : participants) all_local &= p.process == this_process;
  if (all_local) return make_in_process_hub(int(participants.size()));
  mpi::ensure_initialized();
  return std::make_shared<MpiHub>(participants, this_process);
}

}  // namespace tessel::distributed
