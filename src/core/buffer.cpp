// Buffers and the caching allocator behind them.
//
// A program run step after step (a jitted time step, a training step) asks for the same
// large buffers every time. glibc serves large blocks with mmap and unmaps them on free,
// so each step would page-fault all of its memory in again. The cache keeps freed blocks,
// by size class, up to TESSEL_ALLOCATOR_CACHE_BYTES, and hands them out again. It is one
// cache for all devices (a buffer is often freed on another thread than the one that
// allocated it), behind one mutex held for a few instructions. Blocks below 16 KiB go to
// malloc directly: glibc's per-thread caches serve them faster than a shared lock. They are
// over-allocated by 48 bytes and aligned by hand, because aligned_alloc splits a larger
// chunk and frees the pieces (about 2,000 instructions per scalar buffer, alloc and free,
// against about 100: the eager dispatch of a tiny operation allocated two of those).
#include "core/buffer.h"
#include "core/value_copies.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <system_error>
#include <vector>

#include <sys/mman.h>

#include "core/config.h"
#include "core/device_impl.h"
#include "tessel/array.h"
#include "tessel/error.h"

namespace tessel::detail {
namespace {

constexpr size_t kAlignment = 64;
constexpr size_t kMinCached = 16 << 10;

// Large blocks all start at the same place of a 4 KiB page (2 MiB-aligned, or page-aligned
// by mmap), so row i of every array a loop nest reads and writes would share an L1 set and
// the low 12 address bits (false store-to-load dependences); when rows are a multiple of
// 4 KiB every row does (the shallow-water step at 1022x1585: 1.8x the time). Buffers of
// kMinStaggered bytes and more start 0, 1, ..., kStaggerSteps - 1 times
// TESSEL_BUFFER_STAGGER_LINES cache lines into their block, in turn, as far as the slack
// their block already has allows (size class and huge-page rounding): a larger block would
// cost a whole huge page more (a 4 MiB array took 6 MiB), so a buffer that fills its block
// exactly stays at its start.
constexpr size_t kMinStaggered = 256 << 10;
constexpr size_t kStaggerSteps = 16;
size_t stagger_step_bytes() {
  static const size_t bytes = size_t(config::get_int(config::kBufferStaggerLines)) * kAlignment;
  return bytes;
}

class BlockCache {
 public:
  BlockCache() : limit_(size_t(config::get_int(config::kAllocatorCacheBytes))) {}

  void* take(size_t capacity) {
    std::lock_guard lock(mu_);
    auto it = free_.find(capacity);
    if (it == free_.end() || it->second.empty()) {
      ++misses_;
      return nullptr;
    }
    void* p = it->second.back();
    it->second.pop_back();
    cached_ -= capacity;
    ++hits_;
    return p;
  }

  /// Keeps the block if it fits under the limit (evicting larger classes first); returns
  /// false when the caller must free it.
  bool give(void* p, size_t capacity) {
    if (capacity > limit_) return false;
    std::vector<std::pair<void*, size_t>> evicted;
    {
      std::lock_guard lock(mu_);
      while (cached_ + capacity > limit_) {
        auto it = std::find_if(free_.rbegin(), free_.rend(), [](const auto& kv) { return !kv.second.empty(); });
        if (it == free_.rend()) break;
        evicted.emplace_back(it->second.back(), it->first);
        it->second.pop_back();
        cached_ -= it->first;
      }
      free_[capacity].push_back(p);
      cached_ += capacity;
    }
    for (auto& e : evicted) std::free(e.first);
    return true;
  }

  void trim() {
    std::map<size_t, std::vector<void*>> all;
    {
      std::lock_guard lock(mu_);
      all.swap(free_);
      cached_ = 0;
    }
    for (auto& kv : all)
      for (void* p : kv.second) std::free(p);
  }

  AllocatorStats stats() {
    std::lock_guard lock(mu_);
    return AllocatorStats{cached_, limit_, hits_, misses_};
  }

 private:
  std::mutex mu_;
  std::map<size_t, std::vector<void*>> free_;  // by capacity
  size_t cached_ = 0, limit_ = 0, hits_ = 0, misses_ = 0;
};

BlockCache& cache() {
  // Never destroyed: buffers held by static objects are freed after static destructors run.
  static BlockCache* c = new BlockCache();
  return *c;
}

[[noreturn]] void out_of_memory(size_t nbytes, DeviceImpl* device, const ShapeDtype* aval) {
  const std::string what = aval ? "an array of " + aval->to_string() + " (" + std::to_string(nbytes) + " bytes)"
                                : std::to_string(nbytes) + " bytes";
  throw ResourceExhaustedError("allocate: out of memory for " + what + " on " +
                               (device ? "cpu:" + std::to_string(device->id()) : std::string("the host")) +
                               "; free arrays you no longer need, use a smaller shape or dtype, or split the array "
                               "over several devices or processes with a sharding");
}

}  // namespace

size_t allocator_size_class(size_t nbytes) {
  if (nbytes <= kAlignment) return kAlignment;
  if (nbytes <= 4096) return (nbytes + kAlignment - 1) / kAlignment * kAlignment;
  const int b = std::bit_width(nbytes - 1);  // nbytes <= 2^b
  const size_t step = size_t(1) << (b - 4);  // eight classes between 2^(b-1) and 2^b
  return (nbytes + step - 1) / step * step;
}

namespace {
// malloc's blocks are 16-byte aligned: this much more always holds an aligned capacity.
constexpr size_t kSmallSlack = kAlignment - 16;
void* align_up(void* p) { return reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(p) + kAlignment - 1) & ~(kAlignment - 1)); }

// A block of at least TESSEL_HUGE_PAGE_BYTES is 2 MiB-aligned, rounded up to whole huge
// pages and marked for transparent huge pages: streaming through 4 KiB pages misses the TLB
// every 4 KiB, and under a hypervisor each miss walks two page tables (a plain C++ loop
// streaming 128 MiB on this project's VM: 4.4 ms with huge pages, 5.4 ms without). Suspected
// in sharded.speedup_2dev's slow runs; 16 alternating runs did not settle it (docs/sharding.md).
// From 2 MiB by default, so that the 3.25 MiB pieces of a 2-device shallow-water step get them
// as the one-device step's 6.5 MiB arrays do (docs/sharding.md, Benchmarks).
// The hint is best effort: without huge pages the block works.
constexpr size_t kHugePage = size_t(2) << 20;
bool huge_block(size_t capacity) {
  static const size_t huge_from = size_t(config::get_int(config::kHugePageBytes));
  return huge_from != 0 && capacity >= huge_from;
}
// The bytes a block of `capacity` really has (huge-page blocks are whole huge pages).
size_t block_bytes(size_t capacity) {
  return huge_block(capacity) ? (capacity + kHugePage - 1) / kHugePage * kHugePage : capacity;
}
void* allocate_block(size_t capacity) {
  if (!huge_block(capacity)) return std::aligned_alloc(kAlignment, capacity);
  const size_t size = block_bytes(capacity);
  void* p = std::aligned_alloc(kHugePage, size);
  if (p) madvise(p, size, MADV_HUGEPAGE);
  return p;
}

// How far into its block of `capacity` a buffer of `nbytes` starts: the next of up to
// kStaggerSteps places that the block's slack holds.
size_t stagger_offset(size_t nbytes, size_t capacity) {
  const size_t step = nbytes >= kMinStaggered ? stagger_step_bytes() : 0;
  if (step == 0) return 0;
  const size_t places = std::min(kStaggerSteps, (block_bytes(capacity) - nbytes) / step + 1);
  if (places == 1) return 0;
  static std::atomic<size_t> turn{0};
  return step * (turn.fetch_add(1, std::memory_order_relaxed) % places);
}
}  // namespace

Memory::Memory(size_t nbytes) {
  capacity_ = allocator_size_class(nbytes);
  if (capacity_ < kMinCached) {
    base_ = std::malloc(capacity_ + kSmallSlack);
    if (base_) [[likely]] {
      ptr_ = align_up(base_);
      return;
    }
  }
  if (capacity_ >= kMinCached) ptr_ = cache().take(capacity_);
  if (!ptr_) ptr_ = allocate_block(capacity_);
  if (!ptr_) {
    allocator_trim();
    ptr_ = allocate_block(capacity_);
  }
  base_ = ptr_;
  if (!ptr_) {
    capacity_ = 0;
    throw ResourceExhaustedError("allocate: out of memory allocating " + std::to_string(nbytes) +
                                 " bytes; free arrays you no longer need, or use smaller or fewer arrays");
  }
  ptr_ = static_cast<std::byte*>(ptr_) + stagger_offset(nbytes, capacity_);
}

size_t Memory::capacity() const {
  if (capacity_ < kMinCached) return capacity_;
  return block_bytes(capacity_) - size_t(static_cast<std::byte*>(ptr_) - static_cast<std::byte*>(base_));
}

Memory& Memory::operator=(Memory&& o) noexcept {
  if (this != &o) {
    reset();
    ptr_ = o.ptr_;
    base_ = o.base_;
    capacity_ = o.capacity_;
    o.ptr_ = o.base_ = nullptr;
    o.capacity_ = 0;
  }
  return *this;
}

Memory Memory::foreign(void* data, std::function<void()> release) {
  Memory m;
  m.ptr_ = data;
  m.base_ = new std::function<void()>(std::move(release));
  return m;
}

void Memory::reset() {
  if (!ptr_) return;
  if (capacity_ == 0) {  // foreign memory: its owner's release runs (it must not throw)
    auto* release = static_cast<std::function<void()>*>(base_);
    if (*release) (*release)();
    delete release;
  } else if (capacity_ < kMinCached || !cache().give(base_, capacity_)) {
    std::free(base_);
  }
  ptr_ = base_ = nullptr;
  capacity_ = 0;
}

AllocatorStats allocator_stats() { return cache().stats(); }
void allocator_trim() { cache().trim(); }

namespace {
std::atomic<size_t> g_value_copy_bytes{0};
}  // namespace
void count_value_copy(size_t nbytes) { g_value_copy_bytes.fetch_add(nbytes, std::memory_order_relaxed); }
size_t value_copy_bytes() { return g_value_copy_bytes.load(std::memory_order_relaxed); }

Buffer::Buffer(size_t nbytes, DeviceImpl* device) : memory_(nbytes), nbytes_(nbytes), device_(device) {}

std::shared_ptr<Buffer> Buffer::allocate(size_t nbytes, DeviceImpl* device, const ShapeDtype* aval) {
  try {
    return std::make_shared<Buffer>(nbytes, device);
  } catch (const ResourceExhaustedError&) {
    out_of_memory(nbytes, device, aval);
  } catch (const std::bad_alloc&) {  // the shared_ptr's control block
    out_of_memory(nbytes, device, aval);
  }
}

Memory Memory::for_value(size_t nbytes, DeviceImpl* device, const ShapeDtype* aval) {
  try {
    return Memory(nbytes);
  } catch (const ResourceExhaustedError&) {
    out_of_memory(nbytes, device, aval);
  }
}

std::exception_ptr as_tessel_error(std::exception_ptr e, const Buffer* buffer) {
  if (!e) return e;
  const DeviceImpl* device = buffer->device();
  const std::string where = "computing " + std::to_string(buffer->nbytes()) + " bytes on " +
                            (device ? "cpu:" + std::to_string(device->id()) : std::string("the host"));
  try {
    std::rethrow_exception(e);
  } catch (const Error&) {
    return e;
  } catch (const std::bad_alloc& x) {
    return std::make_exception_ptr(ResourceExhaustedError("out of memory while " + where + " (" + x.what() +
                                                          "); free arrays you no longer need or use smaller ones"));
  } catch (const std::system_error& x) {
    return std::make_exception_ptr(
        ResourceExhaustedError("the system refused a resource while " + where + ": " + x.what()));
  } catch (const std::exception& x) {
    return std::make_exception_ptr(Error(where + " failed: " + x.what()));
  } catch (...) {
    return std::make_exception_ptr(Error(where + " failed with an exception that is not a std::exception"));
  }
}

std::shared_ptr<Buffer> Buffer::donated(size_t nbytes, DeviceImpl* device, std::function<std::string()> message) {
  auto b = deferred(nbytes, device);
  b->donated_ = true;
  b->donated_message_ = std::move(message);
  b->state_.store(kError, std::memory_order_release);
  return b;
}

}  // namespace tessel::detail
