#pragma once
// Device memory with a readiness event: the unit the runtime computes into.
#include <atomic>
#include <cstddef>
#include <exception>
#include <memory>

namespace tessel::detail {

class DeviceImpl;

/// A block of (CPU) device memory plus the event that says when its contents are
/// computed. Written once by the stream that computes it; read by anyone after `wait()`.
class Buffer {
 public:
  Buffer(size_t nbytes, DeviceImpl* device);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  static std::shared_ptr<Buffer> allocate(size_t nbytes, DeviceImpl* device) {
    return std::make_shared<Buffer>(nbytes, device);
  }
  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  DeviceImpl* device() const { return device_; }

  void set_ready() {
    state_.store(kReady, std::memory_order_release);
    state_.notify_all();
  }
  /// Records that the computation producing this buffer failed; readers rethrow.
  void set_error(std::exception_ptr e) {
    error_ = std::move(e);
    state_.store(kError, std::memory_order_release);
    state_.notify_all();
  }
  bool ready() const { return state_.load(std::memory_order_acquire) != kPending; }
  bool failed() const { return state_.load(std::memory_order_acquire) == kError; }
  std::exception_ptr error() const { return failed() ? error_ : nullptr; }
  /// Blocks until computed; rethrows the producer's error.
  void wait() const {
    int s = state_.load(std::memory_order_acquire);
    while (s == kPending) {
      state_.wait(kPending, std::memory_order_acquire);
      s = state_.load(std::memory_order_acquire);
    }
    if (s == kError) std::rethrow_exception(error_);
  }

 private:
  enum : int { kPending = 0, kReady = 1, kError = 2 };
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  DeviceImpl* device_ = nullptr;
  std::atomic<int> state_{kPending};
  std::exception_ptr error_;
};

}  // namespace tessel::detail
