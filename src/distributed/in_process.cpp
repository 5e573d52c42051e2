// The in-process collective backend: the virtual devices of one process are threads sharing
// memory, so a collective is a rendezvous and plain copies. Every call publishes the
// member's buffer pointers, waits until all members have (barrier 1), reads the peers'
// buffers directly (zero-copy: no staging buffer), and waits again (barrier 2) so no member
// returns, and lets its caller reuse an input, while a peer may still read it.
//
// Barriers spin briefly (members usually arrive close together) and then sleep on a
// condition variable. An abort (a failed participant) wakes every sleeper of every group
// of the hub; they throw an Error naming the failed participant.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "distributed/collectives.h"
#include "backend/cpu/reduction_ops.h"
#include "tessel/error.h"

namespace tessel::distributed {
namespace {

class InProcessHub;

/// For each of `rows` rows: out_k[r * out_stride + i] = combine over members j of
/// ins[j][offset + r * in_stride + i], for i < n, for every output k. Each block of a row is
/// read from all inputs before any output is written (so outputs may alias inputs).
template <class Op, class T>
void combine_rows(const std::vector<const void*>& ins, size_t offset, size_t rows, size_t in_stride, size_t n,
                  T* const* outs, size_t num_outs, size_t out_stride) {
  using A = typename Op::template Acc<T>;
  constexpr size_t kBlock = 256;
  A acc[kBlock];
  for (size_t r = 0; r < rows; ++r) {
    const size_t in_off = offset + r * in_stride, out_off = r * out_stride;
    for (size_t lo = 0; lo < n; lo += kBlock) {
      const size_t m = std::min(kBlock, n - lo);
      const T* first = static_cast<const T*>(ins[0]) + in_off + lo;
      for (size_t i = 0; i < m; ++i) acc[i] = cpu::reduce::load<A>(first[i]);
      for (size_t j = 1; j < ins.size(); ++j) {
        const T* p = static_cast<const T*>(ins[j]) + in_off + lo;
        for (size_t i = 0; i < m; ++i) acc[i] = Op::combine(acc[i], cpu::reduce::load<A>(p[i]));
      }
      for (size_t k = 0; k < num_outs; ++k) {
        T* o = outs[k] + out_off + lo;
        for (size_t i = 0; i < m; ++i) o[i] = cpu::reduce::store<T>(acc[i]);
      }
    }
  }
}

/// combine_rows for a dtype and operation known at run time.
void combine(ir::Combine op, DType dtype, const std::vector<const void*>& ins, size_t offset, size_t rows,
             size_t in_stride, size_t n, void* const* outs, size_t num_outs, size_t out_stride) {
  visit_dtype(dtype, [&](auto z) {
    using T = decltype(z);
    T* const* o = reinterpret_cast<T* const*>(outs);
    switch (op) {
      case ir::Combine::kSum:
        return combine_rows<cpu::reduce::SumOp, T>(ins, offset, rows, in_stride, n, o, num_outs, out_stride);
      case ir::Combine::kProd:
        return combine_rows<cpu::reduce::ProdOp, T>(ins, offset, rows, in_stride, n, o, num_outs, out_stride);
      case ir::Combine::kMax:
        return combine_rows<cpu::reduce::MaxOp, T>(ins, offset, rows, in_stride, n, o, num_outs, out_stride);
      case ir::Combine::kMin:
        return combine_rows<cpu::reduce::MinOp, T>(ins, offset, rows, in_stride, n, o, num_outs, out_stride);
      case ir::Combine::kNone: break;
    }
    throw Error("internal: a collective reduction needs an operation (sum, prod, max or min)");
  });
}

/// Copies a block laid out as `src_rows` pieces at src + r * src_stride to one laid out as
/// `dst_rows` pieces at dst + r * dst_stride (both `bytes` in all).
void copy_block(const char* src, size_t src_rows, size_t src_stride, char* dst, size_t dst_rows, size_t dst_stride,
                size_t bytes) {
  const size_t sp = bytes / src_rows, dp = bytes / dst_rows;
  if (src_rows == 1 && dst_rows == 1) {
    if (dst != src && bytes) std::memcpy(dst, src, bytes);
    return;
  }
  size_t s_row = 0, s_off = 0, d_row = 0, d_off = 0;
  for (size_t done = 0; done < bytes;) {
    const size_t n = std::min(sp - s_off, dp - d_off);
    std::memcpy(dst + d_row * dst_stride + d_off, src + s_row * src_stride + s_off, n);
    done += n;
    if ((s_off += n) == sp) s_off = 0, ++s_row;
    if ((d_off += n) == dp) d_off = 0, ++d_row;
  }
}

class InProcessGroup final : public CollectiveGroup {
 public:
  InProcessGroup(InProcessHub& hub, std::vector<int> members)
      : hub_(hub), members_(std::move(members)), ins_(members_.size()), outs_(members_.size()) {}
  int size() const override { return int(members_.size()); }

  void all_reduce(int rank, const void* in, void* out, size_t count, DType dtype, ir::Combine op) override {
    check_rank(rank);
    if (size() == 1) {
      if (out != in) std::memcpy(out, in, count * itemsize(dtype));
      return;
    }
    publish(rank, in, out);
    // Member r combines elements [count*r/n, count*(r+1)/n) for everybody: every element is
    // read from all inputs before any output is written, so `out` may alias `in`.
    const size_t n = size_t(size()), lo = count * size_t(rank) / n, hi = count * size_t(rank + 1) / n;
    const size_t isz = itemsize(dtype);
    std::vector<const void*> ins(ins_.begin(), ins_.end());
    std::vector<void*> outs(n);
    for (size_t j = 0; j < n; ++j) outs[j] = static_cast<char*>(outs_[j]) + lo * isz;
    combine(op, dtype, ins, lo, 1, 0, hi - lo, outs.data(), n, 0);
    barrier();
  }

  void all_gather(int rank, const void* in, void* out, size_t bytes) override {
    all_gather_rows(rank, in, out, bytes, 1);
  }
  void all_gather_rows(int rank, const void* in, void* out, size_t bytes, size_t rows) override {
    check_rank(rank);
    publish(rank, in, out);
    const size_t n = size_t(size()), piece = bytes / std::max<size_t>(rows, 1);
    for (size_t j = 0; j < n; ++j)
      copy_block(static_cast<const char*>(ins_[j]), 1, 0, static_cast<char*>(out) + j * piece, std::max<size_t>(rows, 1),
                 n * piece, bytes);
    if (n > 1) barrier();
  }

  void all_to_all(int rank, const void* in, void* out, size_t bytes) override {
    all_to_all_rows(rank, in, out, bytes, 1, 1);
  }
  // Reads each peer's block for this member straight from the peer's (strided) operand.
  void all_to_all_rows(int rank, const void* in, void* out, size_t bytes, size_t in_rows, size_t out_rows) override {
    check_rank(rank);
    publish(rank, in, out);
    const size_t n = size_t(size());
    in_rows = std::max<size_t>(in_rows, 1), out_rows = std::max<size_t>(out_rows, 1);
    const size_t ip = bytes / in_rows, op = bytes / out_rows;
    for (size_t j = 0; j < n; ++j)
      copy_block(static_cast<const char*>(ins_[j]) + size_t(rank) * ip, in_rows, n * ip,
                 static_cast<char*>(out) + j * op, out_rows, n * op, bytes);
    if (n > 1) barrier();
  }

  void reduce_scatter(int rank, const void* in, void* out, size_t count, DType dtype, ir::Combine op) override {
    reduce_scatter_rows(rank, in, out, count, dtype, op, 1);
  }
  void reduce_scatter_rows(int rank, const void* in, void* out, size_t count, DType dtype, ir::Combine op,
                           size_t rows) override {
    check_rank(rank);
    publish(rank, in, out);
    const size_t n = size_t(size());
    rows = std::max<size_t>(rows, 1);
    const size_t per_row = count / rows;
    std::vector<const void*> ins(ins_.begin(), ins_.end());
    void* outs[] = {out};
    combine(op, dtype, ins, size_t(rank) * per_row, rows, n * per_row, per_row, outs, 1, per_row);
    if (n > 1) barrier();
  }

  void permute(int rank, const void* in, void* out, size_t bytes, int source, int dest) override {
    check_rank(rank);
    check_pair(rank, source, dest);
    publish(rank, in, out);
    if (source >= 0) copy(out, ins_[size_t(source)], bytes);
    if (size() > 1) barrier();
  }

  // Each member posts its rows at the start (a copy of the halo: its `in` may die at once)
  // and takes its source's at the end; nobody waits at the start, and a member waits at
  // the end only for its source to have started, so a device may run ahead of its peer by
  // the work it does in between.
  uint64_t permute_start(int rank, const void* in, size_t bytes, int source, int dest) override {
    check_rank(rank);
    check_pair(rank, source, dest);
    const uint64_t ticket = started_[size_t(rank)]++;  // (only member `rank`'s thread touches these)
    sources_[size_t(rank)][ticket] = source;
    if (dest < 0) return ticket;
    std::vector<std::byte> rows;
    {
      std::lock_guard lock(mail_mu_);
      rows = spare_rows(bytes);
    }
    if (bytes) std::memcpy(rows.data(), in, bytes);
    {
      std::lock_guard lock(mail_mu_);
      mail_[{rank, ticket}] = {std::move(rows), dest};
    }
    mail_cv_.notify_all();
    return ticket;
  }
  void permute_done(int rank, uint64_t ticket, void* out) override;

  /// Wakes the members sleeping in a barrier or waiting for rows (after an abort).
  void wake() {
    {
      std::lock_guard lock(mu_);
      cv_.notify_all();
    }
    std::lock_guard lock(mail_mu_);
    mail_cv_.notify_all();
  }

 private:
  void check_rank(int rank) const {
    if (rank < 0 || rank >= size())
      throw Error("internal: collective called with rank " + std::to_string(rank) + " in a group of " +
                  std::to_string(size()));
  }
  void check_pair(int rank, int source, int dest) const {
    if (source >= size() || dest >= size())
      throw ValueError("collective_permute: member " + std::to_string(rank) + " names " +
                       (source >= size() ? "source " + std::to_string(source) : "destination " + std::to_string(dest)) +
                       " in a group of " + std::to_string(size()));
  }
  static void copy(void* dst, const void* src, size_t bytes) {
    if (dst != src && bytes) std::memcpy(dst, src, bytes);
  }
  /// Publishes this member's buffers and waits until every member has published its own.
  void publish(int rank, const void* in, void* out) {
    ins_[size_t(rank)] = in;
    outs_[size_t(rank)] = out;
    if (size() > 1) barrier();
  }
  void barrier();

  /// A row buffer of `bytes` bytes, from the buffers receivers gave back when one is large
  /// enough (a loop exchanges the same halo every iteration: no allocation, no zero-fill
  /// of rows about to be overwritten, after the first). Called with mail_mu_ held.
  std::vector<std::byte> spare_rows(size_t bytes) {
    for (auto it = spare_.begin(); it != spare_.end(); ++it)
      if (it->capacity() >= bytes) {
        std::vector<std::byte> rows = std::move(*it);
        spare_.erase(it);
        rows.resize(bytes);  // within capacity: keeps the old contents, writes none
        return rows;
      }
    return std::vector<std::byte>(bytes);
  }
  /// Keeps a received row buffer for the next permute_start (at most one per member and
  /// direction in flight is typical; a few more cover programs with several exchanges).
  /// Called with mail_mu_ held.
  void give_back_rows(std::vector<std::byte> rows) {
    constexpr size_t kMaxSpare = 8;
    if (spare_.size() < kMaxSpare) spare_.push_back(std::move(rows));
  }

  InProcessHub& hub_;
  std::vector<int> members_;
  // Written by each member at its own index before barrier 1, read by all between the
  // barriers (the barrier's mutex orders the accesses).
  std::vector<const void*> ins_;
  std::vector<void*> outs_;
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
  std::atomic<uint64_t> generation_{0};
  // Started permutes: per member its count and each pending ticket's source (each touched
  // only by its member's thread), and the posted rows by (sender, ticket).
  struct Posted {
    std::vector<std::byte> rows;
    int dest = -1;
  };
  std::vector<uint64_t> started_ = std::vector<uint64_t>(members_.size());
  std::vector<std::map<uint64_t, int>> sources_ = std::vector<std::map<uint64_t, int>>(members_.size());
  std::mutex mail_mu_;
  std::condition_variable mail_cv_;
  std::map<std::pair<int, uint64_t>, Posted> mail_;
  std::vector<std::vector<std::byte>> spare_;  // received rows' buffers, for reuse
};

class InProcessHub final : public CollectiveHub {
 public:
  explicit InProcessHub(int participants) : participants_(participants) {}

  CollectiveGroup& group(const std::vector<int>& members) override {
    for (int m : members)
      if (m < 0 || m >= participants_)
        throw Error("internal: collective group member " + std::to_string(m) + " outside the launch's " +
                    std::to_string(participants_) + " participants");
    std::lock_guard lock(mu_);
    auto& g = groups_[members];
    if (!g) g = std::make_unique<InProcessGroup>(*this, members);
    return *g;
  }

  void abort(int position, std::exception_ptr error) override {
    std::string msg = exception_message(error);
    {
      std::lock_guard lock(mu_);
      if (aborted_.load()) return;  // the first failure is the one reported
      failed_position_ = position;
      failed_message_ = std::move(msg);
      aborted_.store(true);
    }
    std::lock_guard lock(mu_);
    for (auto& [members, g] : groups_) g->wake();
  }

  bool aborted() const { return aborted_.load(std::memory_order_acquire); }
  [[noreturn]] void throw_aborted() const {
    throw Error("collective aborted: the participant at mesh position " + std::to_string(failed_position_) +
                " failed: " + failed_message_);
  }

 private:
  int participants_;
  std::mutex mu_;
  std::map<std::vector<int>, std::unique_ptr<InProcessGroup>> groups_;
  std::atomic<bool> aborted_{false};
  int failed_position_ = -1;       // written once before aborted_ is set
  std::string failed_message_;
};

std::atomic<uint64_t> permute_wait_count{0}, permute_wait_ns{0};

void InProcessGroup::permute_done(int rank, uint64_t ticket, void* out) {
  check_rank(rank);
  const int source = sources_.at(size_t(rank)).at(ticket);
  sources_[size_t(rank)].erase(ticket);
  if (source < 0) return;
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_lock lock(mail_mu_);
  auto it = mail_.end();
  // A short spin first (as the barrier's): a neighbour's rows usually arrive within
  // microseconds of being waited for, sooner than a sleeping thread wakes.
  for (int i = 0; i < 64 && (it = mail_.find({source, ticket})) == mail_.end() && !hub_.aborted(); ++i) {
    lock.unlock();
    std::this_thread::yield();
    lock.lock();
  }
  mail_cv_.wait(lock, [&] { return (it = mail_.find({source, ticket})) != mail_.end() || hub_.aborted(); });
  if (it == mail_.end()) hub_.throw_aborted();
  permute_wait_count.fetch_add(1, std::memory_order_relaxed);
  permute_wait_ns.fetch_add(
      uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count()),
      std::memory_order_relaxed);
  if (it->second.dest != rank)
    throw ValueError("collective_permute: member " + std::to_string(source) + " sent to member " +
                     std::to_string(it->second.dest) + " but member " + std::to_string(rank) +
                     " expects its rows; every member must name the same pairs");
  std::vector<std::byte> rows = std::move(it->second.rows);
  mail_.erase(it);
  lock.unlock();
  if (!rows.empty()) std::memcpy(out, rows.data(), rows.size());
  lock.lock();
  give_back_rows(std::move(rows));
}

void InProcessGroup::barrier() {
  if (hub_.aborted()) hub_.throw_aborted();
  std::unique_lock lock(mu_);
  const uint64_t gen = generation_.load(std::memory_order_relaxed);
  if (++arrived_ == size()) {
    arrived_ = 0;
    generation_.store(gen + 1, std::memory_order_release);
    cv_.notify_all();
    return;
  }
  lock.unlock();
  // A short spin: members of one launch usually arrive within microseconds of each other.
  for (int i = 0; i < 64; ++i) {
    // The acquire pairs with the last member's release, which follows every member's
    // published pointers (each published before taking the mutex the last one took).
    if (generation_.load(std::memory_order_acquire) != gen) return;
    if (hub_.aborted()) hub_.throw_aborted();
    std::this_thread::yield();
  }
  lock.lock();
  cv_.wait(lock, [&] { return generation_.load(std::memory_order_relaxed) != gen || hub_.aborted(); });
  if (generation_.load(std::memory_order_relaxed) == gen) hub_.throw_aborted();
}

}  // namespace

void combine_elements(ir::Combine op, DType dtype, const std::vector<const void*>& ins, void* out, size_t count) {
  if (ins.empty() || count == 0) return;
  void* outs[] = {out};
  combine(op, dtype, ins, 0, 1, 0, count, outs, 1, 0);
}

PermuteWaits permute_waits() {
  return {permute_wait_count.load(std::memory_order_relaxed), permute_wait_ns.load(std::memory_order_relaxed)};
}

std::shared_ptr<CollectiveHub> make_in_process_hub(int participants) {
  if (participants < 1)
    throw ValueError("make_in_process_hub: a hub needs at least one participant, got " + std::to_string(participants));
  return std::make_shared<InProcessHub>(participants);
}

}  // namespace tessel::distributed
