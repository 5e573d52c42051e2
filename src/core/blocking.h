#pragma once
// A hook around the places where a thread blocks on tessel work.

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

}  // namespace tessel::detail
