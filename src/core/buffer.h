#pragma once
// Device memory with a readiness event: the unit the runtime computes into. Memory comes
// from a caching allocator, so the large buffers of a program that runs step after step
// are recycled instead of being mapped (and page-faulted) afresh each time.
#include <atomic>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "core/blocking.h"
#include "tessel/error.h"

namespace tessel {
struct ShapeDtype;
}

namespace tessel::detail {

class DeviceImpl;

/// A block of (CPU) memory from the caching allocator: 64-byte aligned, holding at least
/// the bytes asked for (rounded up to a size class); large ones start a few cache lines
/// into their block, a different number each time (TESSEL_BUFFER_STAGGER_LINES). Move-only; goes back to the cache (or
/// the system, when the cache is full) when destroyed.
class Memory {
 public:
  Memory() = default;
  /// Allocates at least `nbytes` (a cached block of the same size class when there is one).
  /// Throws tessel::ResourceExhaustedError naming the bytes when the system is out of memory.
  explicit Memory(size_t nbytes);
  /// As Memory(nbytes), for a value of `aval` on `device`: out of memory is a
  /// ResourceExhaustedError naming the bytes, the shape and dtype, and the device.
  static Memory for_value(size_t nbytes, DeviceImpl* device, const ShapeDtype* aval);
  /// Memory owned elsewhere (tessel::wrap_host_memory): giving it back runs `release` once
  /// instead of caching or freeing it. Its capacity() is 0, so no computation ever takes it
  /// to write a result into (a donated foreign array is released, never overwritten).
  static Memory foreign(void* data, std::function<void()> release);
  ~Memory() { reset(); }
  Memory(Memory&& o) noexcept : ptr_(o.ptr_), base_(o.base_), capacity_(o.capacity_) {
    o.ptr_ = o.base_ = nullptr, o.capacity_ = 0;
  }
  Memory& operator=(Memory&& o) noexcept;
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;

  void* data() const { return ptr_; }
  /// The bytes usable from data() on (0 for foreign memory).
  size_t capacity() const;
  explicit operator bool() const { return ptr_ != nullptr; }
  /// Gives the block back now.
  void reset();

 private:
  void* ptr_ = nullptr;
  // What malloc gave, for free() and the cache: ptr_ rounded up to the alignment, or the
  // block ptr_ starts a few cache lines into (kMinStaggered in buffer.cpp); for foreign memory
  // (ptr_ set, capacity_ 0) the heap-allocated release function.
  void* base_ = nullptr;
  size_t capacity_ = 0;
};

/// The capacity of the blocks that serve a request of `nbytes`: 64-byte multiples up to
/// 4 KiB, then eight classes per power of two (at most 12.5% slack).
size_t allocator_size_class(size_t nbytes);

/// Counters of the caching allocator (tests, benchmarks, TESSEL_LOG=debug).
struct AllocatorStats {
  size_t cached_bytes = 0;  ///< bytes held in the cache, ready for reuse
  size_t limit = 0;         ///< TESSEL_ALLOCATOR_CACHE_BYTES
  size_t hits = 0;          ///< allocations served from the cache
  size_t misses = 0;        ///< cacheable allocations that went to the system
};
AllocatorStats allocator_stats();
/// Returns every cached block to the system.
void allocator_trim();

class Buffer;
/// `e` if it is a tessel::Error; else a tessel::Error with its message, saying what computed
/// `buffer` (a ResourceExhaustedError for std::bad_alloc and std::system_error: memory, threads).
std::exception_ptr as_tessel_error(std::exception_ptr e, const Buffer* buffer);

/// A block of (CPU) device memory plus the event that says when its contents are
/// computed. Written once by the stream that computes it; read by anyone after `wait()`.
class Buffer {
 public:
  /// Allocates `nbytes` now.
  Buffer(size_t nbytes, DeviceImpl* device);
  /// Without memory yet (see `deferred`).
  struct Deferred {};
  Buffer(size_t nbytes, DeviceImpl* device, Deferred) : nbytes_(nbytes), device_(device) {}
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  /// Out of memory is a tessel::ResourceExhaustedError naming the bytes, the device and,
  /// when given, the shape and dtype of the value the buffer holds.
  static std::shared_ptr<Buffer> allocate(size_t nbytes, DeviceImpl* device, const ShapeDtype* aval = nullptr);
  /// A buffer whose memory the computation producing it attaches (`attach`) before it
  /// calls `set_ready`: an executable may write it into memory that died during the run.
  /// Its `data()` is null until then; readers only look after `wait()`.
  static std::shared_ptr<Buffer> deferred(size_t nbytes, DeviceImpl* device) {
    return std::make_shared<Buffer>(nbytes, device, Deferred{});
  }
  /// The buffer left behind in an array whose memory was donated to a computation: every
  /// read rethrows a tessel::ValueError with `message()`. The message is made on the first
  /// read: donating costs a jitted step no string and no exception.
  static std::shared_ptr<Buffer> donated(size_t nbytes, DeviceImpl* device, std::function<std::string()> message);

  void* data() const { return memory_.data(); }
  size_t nbytes() const { return nbytes_; }
  DeviceImpl* device() const { return device_; }
  /// Gives a deferred buffer its memory (at least nbytes()).
  void attach(Memory m) { memory_ = std::move(m); }
  /// Takes the memory away, for a computation that owns this buffer alone (donation).
  Memory take_memory() { return std::move(memory_); }

  void set_ready() {
    state_.store(kReady, std::memory_order_release);
    state_.notify_all();
  }
  /// Records that the computation producing this buffer failed; readers rethrow (a
  /// tessel::Error: other exceptions are wrapped, see as_tessel_error).
  void set_error(std::exception_ptr e) {
    error_ = as_tessel_error(std::move(e), this);
    state_.store(kError, std::memory_order_release);
    state_.notify_all();
  }
  bool ready() const { return state_.load(std::memory_order_acquire) != kPending; }
  bool failed() const { return state_.load(std::memory_order_acquire) == kError; }
  std::exception_ptr error() const { return failed() ? stored_error() : nullptr; }
  /// True for the buffer of an array whose memory was donated (see `donated`).
  bool is_donated() const { return donated_; }
  /// Throws the donation error if this buffer's array was donated (for operations that
  /// would otherwise only fail later, when the result is read).
  void check_not_donated() const {
    if (donated_) std::rethrow_exception(stored_error());
  }
  /// Blocks until computed; rethrows the producer's error.
  void wait() const {
    int s = state_.load(std::memory_order_acquire);
    if (s == kPending) {
      BlockingScope blocking;
      s = wait_pending();
    }
    if (s == kError) std::rethrow_exception(stored_error());
  }

 private:
  int wait_pending() const {
    int s = state_.load(std::memory_order_acquire);
    while (s == kPending) {
      state_.wait(kPending, std::memory_order_acquire);
      s = state_.load(std::memory_order_acquire);
    }
    return s;
  }

  enum : int { kPending = 0, kReady = 1, kError = 2 };
  Memory memory_;
  size_t nbytes_ = 0;
  DeviceImpl* device_ = nullptr;
  bool donated_ = false;
  std::atomic<int> state_{kPending};
  /// The error of a failed computation, or of a donated buffer (made from
  /// donated_message_ on first use).
  const std::exception_ptr& stored_error() const {
    if (donated_) std::call_once(donated_once_, [this] { error_ = std::make_exception_ptr(ValueError(donated_message_())); });
    return error_;
  }
  mutable std::exception_ptr error_;
  mutable std::once_flag donated_once_;
  std::function<std::string()> donated_message_;
};

}  // namespace tessel::detail
