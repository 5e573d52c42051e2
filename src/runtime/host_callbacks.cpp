#include "runtime/host_callbacks.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/blocking.h"
#include "core/config.h"
#include "core/device_impl.h"
#include "core/lifetime.h"
#include "core/log.h"
#include "core/thread.h"
#include "tessel/host.h"

namespace tessel::detail::host {
namespace {

/// The last exception a callback threw since the last barrier_wait.
struct ErrorRecord {
  std::mutex mu;
  std::string message;  // empty: none
  size_t count = 0;
  void record(const std::string& name, const std::string& what) {
    std::lock_guard lock(mu);
    message = "host callback '" + name + "' threw: " + what;
    ++count;
  }
};

ErrorRecord& errors() {
  static ErrorRecord* r = new ErrorRecord;  // leaked: callbacks may run during exit
  return *r;
}

std::string what_of(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

class Receiver;
thread_local Receiver* t_receiver = nullptr;  // the receiver whose thread this is

/// One device's queue and the thread that empties it.
class Receiver final : public BlockObserver {
 public:
  explicit Receiver(int device_id) : device_id_(device_id), max_bytes_(max_queue_bytes()), spin_(receiver_spin()) {}

  void push(size_t bytes, std::string name, std::function<void()> fn) {
    std::unique_lock lock(mu_);
    if (!thread_.joinable())
      thread_ = start_thread("the host-callback receiver of cpu:" + std::to_string(device_id_), [this] { loop(); });
    // Back-pressure: an item that fits, or any item into an empty queue; never while the
    // running callback waits on tessel (it may wait on the device that is pushing).
    if (!(queue_.empty() || bytes_ + bytes <= max_bytes_)) {
      BlockingScope blocking;
      room_.wait(lock, [&] { return queue_.empty() || bytes_ + bytes <= max_bytes_ || callback_waits_ > 0; });
    }
    bytes_ += bytes;
    queue_.push_back(Item{bytes, std::move(name), std::move(fn)});
    pushed_.store(pushed_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    if (sleeping_) work_.notify_one();
  }

  /// Waits until every item pushed so far has run.
  /// Waits until every item pushed so far has run. With `from_device` (a call on the
  /// device's stream), also returns when the running callback waits on tessel work: it may
  /// wait on this very device, which cannot go on before the call returns.
  void drain(bool from_device = false) {
    std::unique_lock lock(mu_);
    const uint64_t target = pushed_.load(std::memory_order_relaxed);
    if (done_ >= target || t_receiver == this) return;
    BlockingScope blocking;
    done_cv_.wait(lock, [&] { return done_ >= target || (from_device && callback_waits_ > 0); });
  }

  /// True when every item pushed so far has run (or only the caller's own item runs).
  bool idle() {
    std::lock_guard lock(mu_);
    return done_ >= pushed_.load(std::memory_order_relaxed) || t_receiver == this;
  }

  /// Where the tessel work of the device's synchronous callbacks (call, pure_callback,
  /// io_callback) runs: streams of their own. A callback's device runs it in the middle of
  /// a launch, and the other devices of that launch may be waiting for this device (a
  /// collective, a gather of the results): work queued behind them would never run.
  PrivateStreams& callback_streams() { return callback_streams_; }

  void blocking(bool waiting) override {
    {
      std::lock_guard lock(mu_);
      callback_waits_ += waiting ? 1 : -1;
    }
    room_.notify_all();
    done_cv_.notify_all();
  }

 private:
  struct Item {
    size_t bytes;
    std::string name;
    std::function<void()> fn;
  };

  void loop() {
    t_receiver = this;
    observe_blocking(this);
    std::deque<Item> batch;
    std::unique_lock lock(mu_);
    for (;;) {
      if (queue_.empty()) {  // poll a little before sleeping (spin_)
        lock.unlock();
        spin_for_work();
        lock_spinning(lock);
      }
      if (queue_.empty()) {
        sleeping_ = true;
        work_.wait(lock, [&] { return !queue_.empty(); });
        sleeping_ = false;
      }
      // Everything queued runs as one batch: one lock round trip per batch, not per item.
      batch.swap(queue_);
      lock.unlock();
      size_t bytes = 0;
      for (Item& item : batch) {
        try {
          item.fn();
        } catch (...) {
          const std::string what = what_of(std::current_exception());
          errors().record(item.name, what);
          TESSEL_DEBUG_LOG("host callback '" + item.name + "' on cpu:" + std::to_string(device_id_) + " threw: " + what);
        }
        item.fn = nullptr;  // release the callback's arrays outside the lock
        bytes += item.bytes;
      }
      const size_t ran = batch.size();
      batch.clear();
      lock_spinning(lock);
      bytes_ -= bytes;
      done_ += ran;
      room_.notify_all();
      done_cv_.notify_all();
    }
  }

  /// Returns when an item was pushed or after spin_ without one (unlocked); at once when
  /// spin_ is 0. Yields now and then: the device's kernels, running on every core while the
  /// receiver polls, get the core back whenever they want it.
  void spin_for_work() const {
    if (spin_.count() == 0) return;
    const auto deadline = std::chrono::steady_clock::now() + spin_;
    for (int i = 0;; ++i) {
      if (pushed_.load(std::memory_order_acquire) != done_) return;
      if ((i & 63) == 63) {
        if (std::chrono::steady_clock::now() >= deadline) return;
        std::this_thread::yield();
      }
      cpu_relax();
    }
  }

  /// Locks `lock`, trying a while before sleeping on the mutex: its holder (a pushing
  /// device) lets go within a few instructions.
  static void lock_spinning(std::unique_lock<std::mutex>& lock) {
    for (int i = 0; i < 200; ++i) {
      if (lock.try_lock()) return;
      cpu_relax();
    }
    lock.lock();
  }

  static void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }

  int device_id_;
  size_t max_bytes_;
  // How long an idle receiver polls its queue before it sleeps. A device tapping in a loop
  // pushes every microsecond or so; waking a sleeping receiver would cost it a system call
  // per tap (bench/host.cpp: a tap cost about 1 us of device time with no spin, 0.6 with).
  // Read by the constructor, on the thread that makes the receivers: a bad value is an
  // error there, not on the receiver's thread.
  std::chrono::microseconds spin_;
  std::mutex mu_;
  std::condition_variable work_, room_, done_cv_;
  std::deque<Item> queue_;
  size_t bytes_ = 0;
  std::atomic<uint64_t> pushed_ = 0;  // written under mu_; read unlocked by the spinning receiver
  uint64_t done_ = 0;                   // written by the receiver thread (under mu_)
  int callback_waits_ = 0;
  bool sleeping_ = false;
  PrivateStreams callback_streams_;
  std::thread thread_;  // never joined: the receivers live as long as the process
};

void finish_at_exit();

/// The receivers of the local devices, made on first use; never destroyed, so that callbacks
/// still queued at exit can run (exit's teardown drains them first, core/lifetime.h).
std::vector<std::unique_ptr<Receiver>>& receivers() {
  static auto* r = [] {
    auto* v = new std::vector<std::unique_ptr<Receiver>>;
    for (DeviceImpl* d : local_device_impls()) v->push_back(std::make_unique<Receiver>(d->id()));
    at_exit(ExitPhase::kDevices, finish_at_exit);
    return v;
  }();
  return *r;
}

/// At exit: runs every pending callback and the device work the callbacks issue, until all
/// is quiet (a tap may queue device work that taps again); a callback's error is printed.
void finish_at_exit() {
  auto quiet = [] {
    for (DeviceImpl* d : local_device_impls())
      if (!d->own_stream().idle()) return false;
    for (auto& r : receivers())
      if (!r->idle() || !r->callback_streams().idle()) return false;
    return true;
  };
  do {
    for (DeviceImpl* d : local_device_impls()) d->own_stream().synchronize();
    for (auto& r : receivers()) {
      r->drain();
      r->callback_streams().synchronize();
    }
  } while (!quiet());
  try {
    barrier_wait("at_exit");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tessel: %s\n", e.what());
  }
}

Receiver& receiver_of(DeviceImpl* device) { return *receivers().at(size_t(device->local_index())); }

}  // namespace

size_t max_queue_bytes() {
  static const size_t bytes = size_t(config::get_int(config::kHostCallbackMaxQueueBytes));  // at least 1
  return bytes;
}

std::chrono::microseconds receiver_spin() {
  // On one core the receiver's polling only delays the device that would push the next
  // tap (they share the core): it sleeps at once there.
  static const std::chrono::microseconds us{usable_cores() > 1 ? config::get_int(config::kHostCallbackSpinUs) : 0};
  return us;
}

void push(DeviceImpl* device, size_t bytes, std::string name, std::function<void()> fn) {
  receiver_of(device).push(bytes, std::move(name), std::move(fn));
}

void run_in_order(DeviceImpl* device, const std::function<void()>& fn) {
  Receiver& r = receiver_of(device);
  r.drain(/*from_device=*/true);
  ScopedPrivateStreams scope(&r.callback_streams());
  fn();
}

void record_failure(const std::string& name, const std::string& what) { errors().record(name, what); }

void barrier_wait(const std::string& logging_name) {
  TESSEL_DEBUG_LOG("host barrier_wait '" + logging_name + "'");
  for (DeviceImpl* d : local_device_impls()) d->stream().synchronize();
  for (auto& r : receivers()) r->drain();
  ErrorRecord& e = errors();
  std::string message;
  size_t count = 0;
  {
    std::lock_guard lock(e.mu);
    std::swap(message, e.message);
    std::swap(count, e.count);
  }
  if (count == 0) return;
  throw tessel::host::CallbackException(
      "barrier_wait" + (logging_name.empty() ? std::string() : "('" + logging_name + "')") + ": " +
      std::to_string(count) + " host callback" + (count == 1 ? "" : "s") + " threw since the last barrier; the last: " +
      message);
}

}  // namespace tessel::detail::host
