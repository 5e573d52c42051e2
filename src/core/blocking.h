#pragma once
// A hook around the places where a thread blocks on tessel work, and a short spin for
// waits that are usually over within microseconds.
#include <chrono>
#include <thread>

namespace tessel::detail {

/// Called with true before a thread blocks waiting on tessel work (a buffer, a stream) and
/// with false after: the host-callback runtime sets it on its receiver threads, so that a
/// callback waiting on a device lifts the back-pressure that device may be waiting on.
using BlockHook = void (*)(bool blocking);
extern thread_local BlockHook t_block_hook;
/// Calls t_block_hook around a blocking wait.
struct BlockingScope {
  BlockingScope() {
    if (t_block_hook) t_block_hook(true);
  }
  ~BlockingScope() {
    if (t_block_hook) t_block_hook(false);
  }
  BlockingScope(const BlockingScope&) = delete;
  BlockingScope& operator=(const BlockingScope&) = delete;
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
