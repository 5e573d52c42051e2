#include "core/cache.h"

#include <algorithm>
#include <map>
#include <unordered_set>

#include "tessel/error.h"

namespace tessel::detail {

// The registry: every live cache, and the counters of those already destroyed (by name), so
// that cache_stats' counts cover the whole process. Lock order: the registry, then a cache.
struct CacheRegistry {
  std::mutex mu;
  std::unordered_set<CacheBase*> caches;
  std::map<std::string, CacheStats> retired;

  static CacheRegistry& get() {
    static auto* r = new CacheRegistry();  // never destroyed: caches in static objects outlive exit's teardown
    return *r;
  }
};

CacheBase::CacheBase(std::string name, size_t capacity) : name_(std::move(name)), capacity_(capacity) {
  if (capacity_ == 0) throw Error("internal: cache '" + name_ + "' made with capacity 0");
}

CacheBase::~CacheBase() { unregister(); }

void CacheBase::enroll() {
  CacheRegistry& r = CacheRegistry::get();
  std::lock_guard lock(r.mu);
  r.caches.insert(this);
  enrolled_ = true;
}

void CacheBase::unregister() {
  CacheRegistry& r = CacheRegistry::get();
  std::lock_guard lock(r.mu);
  if (!enrolled_) return;
  enrolled_ = false;
  r.caches.erase(this);
  CacheStats s;
  {
    std::lock_guard own(mu_);
    s = stats_locked();
  }
  CacheStats& t = r.retired[name_];
  t.hits += s.hits;
  t.misses += s.misses;
  t.evictions += s.evictions;
  t.capacity = std::max(t.capacity, s.capacity);
}

CacheStats CacheBase::stats_locked() const {
  CacheStats s;
  s.name = name_;
  s.size = size_locked();
  s.capacity = capacity_;
  s.instances = 1;
  s.hits = hits_ + retired_front_hits_;
  for (auto* h : front_hits_) s.hits += h->load(std::memory_order_relaxed);
  s.misses = misses_;
  s.evictions = evictions_;
  return s;
}

CacheStats CacheBase::stats() const {
  std::lock_guard lock(mu_);
  return stats_locked();
}

std::shared_ptr<void> CacheBase::clear_locked() {
  generation_.fetch_add(1, std::memory_order_acq_rel);
  return take_all();
}

void CacheBase::clear() {
  std::shared_ptr<void> dropped;  // destroyed after the lock is released
  std::lock_guard lock(mu_);
  dropped = clear_locked();
}

void CacheBase::add_front(const std::atomic<uint64_t>* hits) {
  std::lock_guard lock(mu_);
  front_hits_.push_back(hits);
}

void CacheBase::remove_front(const std::atomic<uint64_t>* hits) {
  std::lock_guard lock(mu_);
  retired_front_hits_ += hits->load(std::memory_order_relaxed);
  std::erase(front_hits_, hits);
}

void clear_all_caches() {
  std::vector<std::shared_ptr<void>> dropped;  // destroyed without the locks: values may own caches
  CacheRegistry& r = CacheRegistry::get();
  std::lock_guard lock(r.mu);
  dropped.reserve(r.caches.size());
  for (CacheBase* c : r.caches) {
    std::lock_guard own(c->mu_);
    dropped.push_back(c->clear_locked());
  }
}

std::vector<CacheStats> all_cache_stats() {
  CacheRegistry& r = CacheRegistry::get();
  std::map<std::string, CacheStats> by_name;
  std::lock_guard lock(r.mu);
  for (const auto& [name, s] : r.retired) {
    CacheStats& t = by_name[name];
    t = s;
    t.name = name;
    t.size = t.instances = 0;
  }
  for (CacheBase* c : r.caches) {
    CacheStats s;
    {
      std::lock_guard own(c->mu_);
      s = c->stats_locked();
    }
    CacheStats& t = by_name[s.name];
    t.name = s.name;
    t.size += s.size;
    t.capacity = std::max(t.capacity, s.capacity);
    t.instances += 1;
    t.hits += s.hits;
    t.misses += s.misses;
    t.evictions += s.evictions;
  }
  std::vector<CacheStats> out;
  for (auto& [name, s] : by_name) out.push_back(std::move(s));
  return out;
}

}  // namespace tessel::detail

namespace tessel {
void clear_caches() { detail::clear_all_caches(); }
std::vector<CacheStats> cache_stats() { return detail::all_cache_stats(); }
}  // namespace tessel
