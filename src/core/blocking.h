#pragma once
// Who is told when a thread blocks on tessel work, and a short spin for waits that are
// usually over within microseconds.
#include <chrono>
#include <thread>

namespace tessel::detail {

/// Told with true before a thread blocks waiting on tessel work (a buffer, a stream) and
/// with false after. One implementation: the host-callback receivers
/// (src/runtime/host_callbacks.cpp) observe their own threads, so that a callback waiting on
/// a device lifts the back-pressure that device may be waiting on.
class BlockObserver {
 public:
  virtual ~BlockObserver() = default;
  virtual void blocking(bool waiting) = 0;
};
/// Sets the observer of the calling thread (null: none).
void observe_blocking(BlockObserver* o);
/// The calling thread's observer, or null.
BlockObserver* block_observer();
/// Tells the calling thread's observer around a blocking wait.
struct BlockingScope {
  BlockingScope() : o_(block_observer()) {
    if (o_) o_->blocking(true);
  }
  ~BlockingScope() {
    if (o_) o_->blocking(false);
  }
  BlockingScope(const BlockingScope&) = delete;
  BlockingScope& operator=(const BlockingScope&) = delete;

 private:
  BlockObserver* o_;
};

/// Polls `done` until it is true or `limit` has passed, yielding the core between polls
/// (the thread doing the work may need it); returns the last `done()`. For hand-overs that
/// usually take microseconds, before falling back to a sleeping wait.
template <class Done> bool spin_until(Done&& done, std::chrono::microseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::yield();
  }
}

}  // namespace tessel::detail
