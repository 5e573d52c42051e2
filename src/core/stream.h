#pragma once
// A device stream: a worker thread that runs the device's work items in order.
#include <sched.h>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "core/blocking.h"

namespace tessel::detail {

/// The core TESSEL_PIN_DEVICES puts device `device_id`'s stream on: the device_id-th core of
/// `allowed` (the process's CPU affinity), or -1 (not pinned) when `allowed` has fewer than
/// `devices` cores, so that every device may have a core of its own.
int pinned_core(int device_id, int devices, const cpu_set_t& allowed);

class Stream {
 public:
  using Task = std::function<void()>;
  explicit Stream(int device_id);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  /// Runs `task` after everything enqueued before it. From inside one of this stream's
  /// tasks (a host callback calling tessel), runs it at once. Blocks while the queue holds
  /// `TESSEL_STREAM_MAX_QUEUE` tasks, so a producer cannot run unboundedly ahead (each queued
  /// task holds its output buffers).
  void enqueue(Task task);
  /// Runs `task` on the calling thread when the stream is idle (keeps order, saves the
  /// thread hand-off for tiny work); otherwise enqueues it. Returns true if run inline.
  bool run_inline_or_enqueue(Task task);
  /// Runs `fn(ctx)` on the calling thread if the stream is idle and returns true; otherwise
  /// runs nothing and returns false (the caller then enqueues a task). Unlike
  /// run_inline_or_enqueue it needs no std::function, so a tiny eager operation packages
  /// nothing when it can run at once.
  bool run_if_idle(void (*fn)(void*), void* ctx);
  /// Waits until every task enqueued so far has run.
  void synchronize();
  /// True when no task is queued or running, but for the caller's own (a task asking).
  bool idle();
  /// How many tasks ran on their caller's thread so far (run_if_idle, run_inline_or_enqueue):
  /// tells tests whether work was dispatched asynchronously.
  size_t inline_runs();
  /// Ends the worker thread after the queued tasks (exit's teardown). Tasks given later run
  /// at once on the calling thread.
  void stop();

 private:
  void loop();
  std::mutex mu_;
  std::condition_variable cv_;       // wakes the worker
  std::condition_variable idle_cv_;  // wakes synchronize() and producers waiting for room
  std::deque<Task> queue_;
  bool busy_ = false;
  bool stop_ = false;
  size_t inline_runs_ = 0;  // guarded by mu_
  int device_id_;
  size_t max_queue_;
  std::thread worker_;
};

}  // namespace tessel::detail
