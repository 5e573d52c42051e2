// The serial queues of colocated calls (serial_queue.h): their threads, the exit handler
// that finishes every queue's calls, and the queue of each caller thread.
#include "colocated/serial_queue.h"

#include <atomic>
#include <chrono>
#include <map>
#include <vector>

#include "core/blocking.h"
#include "core/lifetime.h"
#include "core/thread.h"

namespace tessel::colocated::detail {

// Every queue alive, for the exit handler.
struct SerialQueue::Live {
  std::mutex mu;
  std::vector<std::weak_ptr<SerialQueue>> queues;
  void add(const std::shared_ptr<SerialQueue>& q) {
    static const bool registered =
        (tessel::detail::at_exit(tessel::detail::ExitPhase::kCallers, [] { live().finish_all(); }), true);
    (void)registered;
    std::lock_guard lock(mu);
    std::erase_if(queues, [](auto& w) { return w.expired(); });
    queues.push_back(q);
  }
  void finish_all() {
    std::vector<std::shared_ptr<SerialQueue>> qs;
    {
      std::lock_guard lock(mu);
      for (auto& w : queues)
        if (auto q = w.lock()) qs.push_back(q);
    }
    for (auto& q : qs) q->retire();
    for (auto& q : qs) q->wait_finished();
  }
};

SerialQueue::Live& SerialQueue::live() {
  static auto* l = new Live();
  return *l;
}

std::shared_ptr<SerialQueue> SerialQueue::make() {
  std::shared_ptr<SerialQueue> q(new SerialQueue());
  tessel::detail::start_thread("a colocated call queue", [q] {
    tessel::detail::ScopedPrivateStreams scope(&q->streams_);
    q->loop();
  }).detach();
  live().add(q);
  return q;
}

bool SerialQueue::claim_if_idle() {
  std::lock_guard lock(mu_);
  if (running_ || retired_ || !tasks_.empty()) return false;
  running_ = true;
  return true;
}

void SerialQueue::run_claimed(const std::function<void()>& task) {
  {
    tessel::detail::ScopedPrivateStreams scope(&streams_);
    task();
  }
  std::lock_guard lock(mu_);
  running_ = false;
  if (!tasks_.empty() || retired_) cv_.notify_all();  // else the queue's thread sleeps on
}

void SerialQueue::push(std::function<void()> task) {
  {
    std::lock_guard lock(mu_);
    tasks_.push_back(std::move(task));
  }
  cv_.notify_all();
}

void SerialQueue::retire() {
  {
    std::lock_guard lock(mu_);
    retired_ = true;
  }
  cv_.notify_all();
}

void SerialQueue::wait_finished() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return finished_; });
}

void SerialQueue::loop() {
  for (;;) {
    std::function<void()> task;
    spin_for_work();
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return !running_ && (retired_ || !tasks_.empty()); });
      if (tasks_.empty()) break;
      task = std::move(tasks_.front());
      tasks_.pop_front();
      running_ = true;
    }
    task();
    std::lock_guard lock(mu_);
    running_ = false;
  }
  std::lock_guard lock(mu_);
  finished_ = true;
  cv_.notify_all();
}

// Calls often come in quick succession: stay awake a little before sleeping, so the next
// one does not pay for waking this thread.
void SerialQueue::spin_for_work() {
  tessel::detail::spin_until(
      [&] {
        std::lock_guard lock(mu_);
        return retired_ || (!tasks_.empty() && !running_);
      },
      std::chrono::microseconds(300));
}

SerialQueue& caller_queue() {
  struct Holder {
    std::shared_ptr<SerialQueue> q = SerialQueue::make();
    ~Holder() { q->retire(); }
  };
  thread_local Holder h;
  return *h.q;
}

uint64_t caller_id() {
  static std::atomic<uint64_t> next{1};
  thread_local uint64_t id = next.fetch_add(1);
  return id;
}

SerialQueue& remote_caller_queue(uint64_t caller) {
  // Queues are never dropped, so each thread remembers the last one it found: a driver's
  // calls mostly come from one thread, and its calls then take no lock.
  thread_local uint64_t last_caller = 0;
  thread_local SerialQueue* last = nullptr;
  if (last && last_caller == caller) return *last;
  static std::mutex mu;
  static auto* queues = new std::map<uint64_t, std::shared_ptr<SerialQueue>>();
  std::lock_guard lock(mu);
  auto& q = (*queues)[caller];
  if (!q) q = SerialQueue::make();
  last_caller = caller;
  last = q.get();
  return *q;
}

}  // namespace tessel::colocated::detail
