#pragma once
// The executors of colocated calls: one serial queue per caller thread, on every host (a
// worker keeps one for each caller thread of the driver).
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>

#include "core/device_impl.h"

namespace tessel::colocated::detail {

/// Runs the calls given to it one after another, in order, on a thread of its own.
// The user code of the calls runs on the queue's thread with streams of its own (see
// tessel::detail::PrivateStreams), so device work waiting for a call's outputs cannot hold
// up the work the call issues. A queue outlives the thread that made it (its calls go on
// after that thread ends); at exit every queue finishes its calls first.
class SerialQueue {
 public:
  /// A new queue with its thread started; it finishes its calls at exit.
  static std::shared_ptr<SerialQueue> make();
  /// Claims an idle queue for a task the caller runs itself (run_claimed); false when the
  /// queue is busy (then push the task).
  bool claim_if_idle();
  /// Runs `task` on the calling thread, in the queue's order and on its streams.
  void run_claimed(const std::function<void()>& task);
  /// Queues `task` after the ones queued already.
  void push(std::function<void()> task);
  /// No more calls come: the thread ends after the queued ones.
  void retire();
  /// Waits until the thread of a retired queue has run its last call.
  void wait_finished();

 private:
  struct Live;
  SerialQueue() = default;
  void loop();
  void spin_for_work();
  static Live& live();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool running_ = false;  // a task runs (on the queue's thread, or inline)
  bool retired_ = false, finished_ = false;
  tessel::detail::PrivateStreams streams_;
};

/// This thread's queue on this host.
SerialQueue& caller_queue();
/// This thread's id, which names its queues on remote hosts.
uint64_t caller_id();
/// A worker's queue for one caller thread of the driver.
SerialQueue& remote_caller_queue(uint64_t caller);

}  // namespace tessel::colocated::detail
