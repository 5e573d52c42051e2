#include "core/stream.h"

#include <sched.h>

#include <algorithm>

#include "core/config.h"
#include "core/device_impl.h"
#include "core/thread.h"

namespace tessel::detail {

namespace {
thread_local BlockObserver* t_block_observer = nullptr;
}
void observe_blocking(BlockObserver* o) { t_block_observer = o; }
BlockObserver* block_observer() { return t_block_observer; }

namespace {

// The stream whose task this thread is running: a task that dispatches more work to its
// own stream (a host callback calling tessel) runs it at once, nested, instead of queueing
// it behind itself and waiting forever.
thread_local const Stream* t_running = nullptr;

struct Running {
  const Stream* saved;
  explicit Running(const Stream* s) : saved(t_running) { t_running = s; }
  ~Running() { t_running = saved; }
};

}  // namespace

Stream::Stream(int device_id)
    : device_id_(device_id), max_queue_(size_t(config::get_int(config::kStreamMaxQueue))),
      worker_(start_thread("the stream of cpu:" + std::to_string(device_id), [this] { loop(); })) {}

Stream::~Stream() { stop(); }

void Stream::stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  // The worker itself may end the process (a host callback calling exit): it cannot join itself.
  if (worker_.joinable() && worker_.get_id() != std::this_thread::get_id()) worker_.join();
}

bool Stream::idle() {
  std::lock_guard lock(mu_);
  return queue_.empty() && (!busy_ || t_running == this);
}

size_t Stream::inline_runs() {
  std::lock_guard lock(mu_);
  return inline_runs_;
}

void Stream::enqueue(Task task) {
  if (t_running == this) {
    task();
    return;
  }
  {
    std::unique_lock lock(mu_);
    if (stop_) {  // stopped at exit: nothing runs the queue any more
      lock.unlock();
      run_inline_or_enqueue(std::move(task));
      return;
    }
    if (std::this_thread::get_id() != worker_.get_id() && queue_.size() >= max_queue_) {
      BlockingScope blocking;
      idle_cv_.wait(lock, [this] { return queue_.size() < max_queue_; });
    }
    queue_.push_back(std::move(task));
  }
  cv_.notify_one();
}

bool Stream::run_inline_or_enqueue(Task task) {
  if (run_if_idle([](void* t) { (*static_cast<Task*>(t))(); }, &task)) return true;
  enqueue(std::move(task));
  return false;
}

bool Stream::run_if_idle(void (*fn)(void*), void* ctx) {
  if (t_running == this) {
    fn(ctx);
    return true;
  }
  std::unique_lock lock(mu_);
  if (stop_) {  // stopped at exit: nothing runs the queue any more; run here, after what was queued
    idle_cv_.wait(lock, [this] { return queue_.empty() && !busy_; });
  } else if (!queue_.empty() || busy_) {
    return false;
  }
  busy_ = true;
  lock.unlock();
  {
    Running running(this);
    fn(ctx);  // like a task, fn records its errors in its output buffers
  }
  lock.lock();
  busy_ = false;
  ++inline_runs_;
  bool more = !queue_.empty();
  lock.unlock();
  if (more) cv_.notify_one();
  idle_cv_.notify_all();
  return true;
}

void Stream::synchronize() {
  if (t_running == this) return;  // inside one of its tasks: the work before it is done
  std::unique_lock lock(mu_);
  if (queue_.empty() && !busy_) return;
  BlockingScope blocking;
  idle_cv_.wait(lock, [this] { return queue_.empty() && !busy_; });
}

int pinned_core(int device_id, int devices, const cpu_set_t& allowed) {
  if (device_id < 0 || CPU_COUNT(&allowed) < devices) return -1;
  for (int cpu = 0, seen = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &allowed) && seen++ == device_id) return cpu;
  return -1;
}

namespace {

// TESSEL_PIN_DEVICES: the stream's thread on its device's core (best effort: a refusal
// leaves it where the scheduler puts it, as without the flag).
void pin_to_own_core(int device_id) {
  if (!config::get_flag(config::kPinDevices)) return;
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
  const int cpu = pinned_core(device_id, int(config::get_int(config::kCpuDevices)), allowed);
  if (cpu < 0) return;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  sched_setaffinity(0, sizeof one, &one);
}

}  // namespace

void Stream::loop() {
  pin_to_own_core(device_id_);
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || (!queue_.empty() && !busy_); });
    if (queue_.empty()) {
      if (stop_) return;
      continue;
    }
    Task task = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    {
      Running running(this);
      task();
    }
    task = nullptr;  // release captured buffers outside the lock
    lock.lock();
    busy_ = false;
    idle_cv_.notify_all();
  }
}

}  // namespace tessel::detail
