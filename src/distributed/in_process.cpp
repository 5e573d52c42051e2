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
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "distributed/collectives.h"
#include "ops/reduction_ops.h"
#include "tessel/error.h"

namespace tessel::distributed {
namespace {

class InProcessHub;

/// Combines element ranges of several members' buffers with one of the reduction monoids.
template <class Op, class T>
void combine_range(const std::vector<const void*>& ins, size_t offset, size_t n, T* const* outs, size_t num_outs) {
  using A = typename Op::template Acc<T>;
  constexpr size_t kBlock = 256;  // read all inputs of a block before writing any output
  A acc[kBlock];
  for (size_t lo = 0; lo < n; lo += kBlock) {
    const size_t m = std::min(kBlock, n - lo);
    const T* first = static_cast<const T*>(ins[0]) + offset + lo;
    for (size_t i = 0; i < m; ++i) acc[i] = ops::reduce::load<A>(first[i]);
    for (size_t j = 1; j < ins.size(); ++j) {
      const T* p = static_cast<const T*>(ins[j]) + offset + lo;
      for (size_t i = 0; i < m; ++i) acc[i] = Op::combine(acc[i], ops::reduce::load<A>(p[i]));
    }
    for (size_t k = 0; k < num_outs; ++k) {
      T* o = outs[k] + lo;
      for (size_t i = 0; i < m; ++i) o[i] = ops::reduce::store<T>(acc[i]);
    }
  }
}

/// out_k[i] = combine over j of ins[j][offset + i], for i < n, for every output k.
void combine(ir::Combine op, DType dtype, const std::vector<const void*>& ins, size_t offset, size_t n,
             void* const* outs, size_t num_outs) {
  visit_dtype(dtype, [&](auto z) {
    using T = decltype(z);
    T* const* o = reinterpret_cast<T* const*>(outs);
    switch (op) {
      case ir::Combine::kSum: return combine_range<ops::reduce::SumOp, T>(ins, offset, n, o, num_outs);
      case ir::Combine::kProd: return combine_range<ops::reduce::ProdOp, T>(ins, offset, n, o, num_outs);
      case ir::Combine::kMax: return combine_range<ops::reduce::MaxOp, T>(ins, offset, n, o, num_outs);
      case ir::Combine::kMin: return combine_range<ops::reduce::MinOp, T>(ins, offset, n, o, num_outs);
      case ir::Combine::kNone: break;
    }
    throw Error("internal: a collective reduction needs an operation (sum, prod, max or min)");
  });
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
    combine(op, dtype, ins, lo, hi - lo, outs.data(), n);
    barrier();
  }

  void all_gather(int rank, const void* in, void* out, size_t bytes) override {
    check_rank(rank);
    publish(rank, in, out);
    for (int j = 0; j < size(); ++j) copy(static_cast<char*>(out) + size_t(j) * bytes, ins_[size_t(j)], bytes);
    if (size() > 1) barrier();
  }

  void all_to_all(int rank, const void* in, void* out, size_t bytes) override {
    check_rank(rank);
    publish(rank, in, out);
    for (int j = 0; j < size(); ++j)
      copy(static_cast<char*>(out) + size_t(j) * bytes, static_cast<const char*>(ins_[size_t(j)]) + size_t(rank) * bytes,
           bytes);
    if (size() > 1) barrier();
  }

  void reduce_scatter(int rank, const void* in, void* out, size_t count, DType dtype, ir::Combine op) override {
    check_rank(rank);
    publish(rank, in, out);
    std::vector<const void*> ins(ins_.begin(), ins_.end());
    void* outs[] = {out};
    combine(op, dtype, ins, count * size_t(rank), count, outs, 1);
    if (size() > 1) barrier();
  }

  void permute(int rank, const void* in, void* out, size_t bytes, int source, int dest) override {
    check_rank(rank);
    if (source >= size() || dest >= size())
      throw ValueError("collective_permute: member " + std::to_string(rank) + " names " +
                       (source >= size() ? "source " + std::to_string(source) : "destination " + std::to_string(dest)) +
                       " in a group of " + std::to_string(size()));
    publish(rank, in, out);
    if (source >= 0) copy(out, ins_[size_t(source)], bytes);
    if (size() > 1) barrier();
  }

  /// Wakes the members sleeping in a barrier (after an abort).
  void wake() {
    std::lock_guard lock(mu_);
    cv_.notify_all();
  }

 private:
  void check_rank(int rank) const {
    if (rank < 0 || rank >= size())
      throw Error("internal: collective called with rank " + std::to_string(rank) + " in a group of " +
                  std::to_string(size()));
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
    std::string msg = "unknown error";
    try {
      if (error) std::rethrow_exception(error);
    } catch (const std::exception& e) {
      msg = e.what();
    } catch (...) {
    }
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

std::shared_ptr<CollectiveHub> make_in_process_hub(int participants) {
  if (participants < 1)
    throw ValueError("make_in_process_hub: a hub needs at least one participant, got " + std::to_string(participants));
  return std::make_shared<InProcessHub>(participants);
}

}  // namespace tessel::distributed
