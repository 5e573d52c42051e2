#pragma once
// Bounded memo tables with statistics, and the one registry of them behind ts::clear_caches
// and ts::cache_stats (include/tessel/cache.h; the caches are listed in docs/performance.md).
//
// A Cache holds values that can be computed again from their keys: traces, executables,
// plans. It keeps at most `capacity` entries and drops the least recently used beyond that.
// A lookup takes the cache's mutex for one hash probe and a splice of the recency list, and
// copies the value out (a shared_ptr in practice), so a caller keeps what it got when the
// entry is evicted or the cache cleared a moment later. What eviction or clear() drops is
// destroyed after the mutex is released: destroying a value (an executable, a program) may
// reach other caches.
//
// For a lookup on every operation (eager dispatch), a CacheFront keeps a few entries per
// thread that are read without a lock.
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tessel/cache.h"

namespace tessel::detail {

/// Empties every registered cache (ts::clear_caches).
void clear_all_caches();
/// Statistics of every registered cache, summed by name (ts::cache_stats).
std::vector<CacheStats> all_cache_stats();

/// What every cache shares: a name, a capacity, statistics and a place in the registry.
class CacheBase {
 public:
  CacheBase(const CacheBase&) = delete;
  CacheBase& operator=(const CacheBase&) = delete;

  const std::string& name() const { return name_; }
  size_t capacity() const { return capacity_; }
  /// Drops every entry; counters are kept. Per-thread fronts drop theirs on their next lookup.
  void clear();
  /// This cache's statistics (instances = 1).
  CacheStats stats() const;
  /// Bumped by clear(): a front that saw an older value drops what it holds.
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

 protected:
  /// `capacity` is at least 1.
  CacheBase(std::string name, size_t capacity);
  virtual ~CacheBase();
  /// Adds the cache to the registry; the derived constructor calls it last, and the derived
  /// destructor calls unregister() first, so that clear_caches never reaches a cache that is
  /// half made or half destroyed.
  void enroll();
  void unregister();
  /// Moves every entry out (the caller holds mu_); they are destroyed with the result.
  virtual std::shared_ptr<void> take_all() = 0;
  /// Entries held (the caller holds mu_).
  virtual size_t size_locked() const = 0;

  mutable std::mutex mu_;
  uint64_t hits_ = 0, misses_ = 0, evictions_ = 0;  // under mu_

 private:
  friend struct CacheRegistry;
  friend void clear_all_caches();
  friend std::vector<CacheStats> all_cache_stats();
  template <class, size_t> friend class CacheFront;
  CacheStats stats_locked() const;
  std::shared_ptr<void> clear_locked();
  void add_front(const std::atomic<uint64_t>* hits);
  void remove_front(const std::atomic<uint64_t>* hits);

  std::string name_;
  size_t capacity_;
  bool enrolled_ = false;  // under the registry's mutex
  std::atomic<uint64_t> generation_{0};
  std::vector<const std::atomic<uint64_t>*> front_hits_;  // under mu_
  uint64_t retired_front_hits_ = 0;                       // under mu_
};

/// A bounded LRU map from K to V. `Hash` and `Eq` are used by find(key) and insert(key, ...);
/// find_if and the insert that takes a hash let a caller look up without building a key
/// (its hash must agree with Hash for keys that are inserted both ways).
template <class K, class V, class Hash = std::hash<K>, class Eq = std::equal_to<K>>
class Cache final : public CacheBase {
 public:
  Cache(std::string name, size_t capacity) : CacheBase(std::move(name), capacity) { enroll(); }
  ~Cache() override { unregister(); }

  /// The value under `key`; a hit makes the entry the most recent.
  std::optional<V> find(const K& key) {
    return find_if(Hash{}(key), [&](const K& k) { return Eq{}(k, key); });
  }
  /// The value of an entry whose key satisfies `matches(const K&)`. `hash` is its hash, or
  /// a function computing it, called only when the most recent entry does not match (a
  /// function called again and again on one signature then computes no hash).
  template <class HashOrFn, class Match> std::optional<V> find_if(HashOrFn&& hash, Match&& matches) {
    std::lock_guard lock(mu_);
    // The most recent entry first: it skips the probe and the splice.
    if (!lru_.empty() && matches(std::as_const(lru_.front().key))) {
      ++hits_;
      return lru_.front().value;
    }
    size_t h;
    if constexpr (std::is_invocable_r_v<size_t, HashOrFn>) h = hash();
    else h = size_t(hash);
    auto [lo, hi] = index_.equal_range(h);
    for (auto it = lo; it != hi; ++it)
      if (matches(std::as_const(it->second->key))) {
        lru_.splice(lru_.begin(), lru_, it->second);
        ++hits_;
        return it->second->value;
      }
    ++misses_;
    return std::nullopt;
  }

  /// Adds `value` under `key` and returns what the cache now holds there: `value`, or the
  /// value of an equal key already present (another thread computed it first), which
  /// `replace` overwrites instead. Evicts the least recently used entries beyond capacity.
  V insert(K key, V value, bool replace = false) {
    const size_t hash = Hash{}(key);
    return insert(hash, std::move(key), std::move(value), replace);
  }
  V insert(size_t hash, K key, V value, bool replace = false) {
    std::list<Node> dropped;  // destroyed after the lock is released
    std::lock_guard lock(mu_);
    auto [lo, hi] = index_.equal_range(hash);
    for (auto it = lo; it != hi; ++it)
      if (Eq{}(std::as_const(it->second->key), std::as_const(key))) {
        lru_.splice(lru_.begin(), lru_, it->second);
        if (replace) std::swap(it->second->value, value);  // the old one dies with `value`
        return it->second->value;
      }
    lru_.push_front(Node{hash, std::move(key), std::move(value)});
    index_.emplace(hash, lru_.begin());
    while (lru_.size() > capacity()) {
      auto last = std::prev(lru_.end());
      unindex(last);
      dropped.splice(dropped.begin(), lru_, last);
      ++evictions_;
    }
    return lru_.front().value;
  }

  /// Drops the entries for which `pred(const K&, const V&)` holds (not counted as
  /// evictions): entries whose key names an object that is gone.
  template <class Pred> void erase_if(Pred&& pred) {
    std::list<Node> dropped;
    std::lock_guard lock(mu_);
    for (auto it = lru_.begin(); it != lru_.end();) {
      auto next = std::next(it);
      if (pred(std::as_const(it->key), std::as_const(it->value))) {
        unindex(it);
        dropped.splice(dropped.end(), lru_, it);
      }
      it = next;
    }
  }

  size_t size() const {
    std::lock_guard lock(mu_);
    return lru_.size();
  }

 private:
  struct Node {
    size_t hash;
    K key;
    V value;
  };
  using List = std::list<Node>;

  void unindex(typename List::iterator node) {
    auto [lo, hi] = index_.equal_range(node->hash);
    for (auto it = lo; it != hi; ++it)
      if (it->second == node) {
        index_.erase(it);
        return;
      }
  }
  std::shared_ptr<void> take_all() override {
    auto all = std::make_shared<List>();
    all->swap(lru_);
    index_.clear();
    return all;
  }
  size_t size_locked() const override { return lru_.size(); }

  List lru_;  // most recent first
  std::unordered_multimap<size_t, typename List::iterator> index_;
};

/// A per-thread lookaside in front of a cache: `Slots` direct-mapped entries read without a
/// lock (make one `thread_local`, next to a cache that is never destroyed). A hit costs a
/// generation check and the caller's match; the cache's clear() makes each front drop what
/// it holds on its next lookup. Its hits count as the cache's.
template <class V, size_t Slots> class CacheFront {
  static_assert(std::has_single_bit(Slots), "CacheFront: Slots must be a power of two");

 public:
  explicit CacheFront(CacheBase& cache) : cache_(cache), generation_(cache.generation()) {
    cache_.add_front(&hits_);
  }
  ~CacheFront() { cache_.remove_front(&hits_); }
  CacheFront(const CacheFront&) = delete;
  CacheFront& operator=(const CacheFront&) = delete;

  /// The value put under `hash` if `matches(const V&)` accepts it, else null.
  template <class Match> const V* find(size_t hash, Match&& matches) {
    const uint64_t g = cache_.generation();
    if (g != generation_) [[unlikely]] {
      for (Slot& s : slots_) s = Slot{};
      generation_ = g;
      return nullptr;
    }
    const Slot& s = slots_[slot_of(hash)];
    if (s.hash != hash || !s.value || !matches(s.value)) return nullptr;
    hits_.store(hits_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);  // one writer
    return &s.value;
  }
  /// Keeps `value` under `hash` (in place of what shared its slot).
  void put(size_t hash, V value) { slots_[slot_of(hash)] = Slot{hash, std::move(value)}; }

 private:
  struct Slot {
    size_t hash = 0;
    V value{};
  };
  static size_t slot_of(size_t hash) {
    return size_t((uint64_t(hash) * 0x9E3779B97F4A7C15ull) >> (64 - std::countr_zero(Slots)));
  }

  CacheBase& cache_;
  uint64_t generation_;
  std::atomic<uint64_t> hits_{0};
  Slot slots_[Slots];
};

/// A key naming one object owned by shared_ptrs, by identity: its address and a weak
/// reference to its owner. A key never matches a later object at the same address (the weak
/// reference keeps the old control block, so a new owner has another one); an entry whose
/// object is gone is expired() and waits for eviction or erase_if.
template <class T> struct IdentityKey {
  const T* ptr = nullptr;
  std::weak_ptr<const T> owner;

  explicit IdentityKey(const std::shared_ptr<const T>& p) : ptr(p.get()), owner(p) {}
  bool matches(const std::shared_ptr<const T>& p) const {
    return ptr == p.get() && !owner.owner_before(p) && !p.owner_before(owner);
  }
  bool operator==(const IdentityKey& o) const {
    return ptr == o.ptr && !owner.owner_before(o.owner) && !o.owner.owner_before(owner);
  }
  bool expired() const { return owner.expired(); }
  size_t hash() const { return std::hash<const void*>()(ptr); }
};

}  // namespace tessel::detail

template <class T> struct std::hash<tessel::detail::IdentityKey<T>> {
  size_t operator()(const tessel::detail::IdentityKey<T>& k) const { return k.hash(); }
};
