// The bounded memo table behind every cache (core/cache.h): capacity and LRU eviction,
// statistics, clear, the registry behind clear_caches, per-thread fronts, identity keys, and
// use from several threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/cache.h"
#include "tessel/cache.h"

namespace td = tessel::detail;
namespace ts = tessel;

namespace {

using IntCache = td::Cache<int, std::shared_ptr<int>>;

std::shared_ptr<int> boxed(int v) { return std::make_shared<int>(v); }

// The registry's line for `name` (all caches of that name).
ts::CacheStats stats_named(const std::string& name) {
  for (const auto& s : ts::cache_stats())
    if (s.name == name) return s;
  return {};
}

}  // namespace

TEST(Cache, FindsWhatWasInserted) {
  IntCache c("test.finds", 4);
  EXPECT_FALSE(c.find(1));
  c.insert(1, boxed(10));
  ASSERT_TRUE(c.find(1));
  EXPECT_EQ(**c.find(1), 10);
  EXPECT_EQ(c.size(), 1u);
}

TEST(Cache, HoldsAtMostItsCapacityAndEvictsTheLeastRecentlyUsed) {
  IntCache c("test.lru", 3);
  for (int k = 0; k < 3; ++k) c.insert(k, boxed(k));
  ASSERT_TRUE(c.find(0));  // 0 is now the most recent; 1 the least
  c.insert(3, boxed(3));
  EXPECT_EQ(c.size(), 3u);
  EXPECT_FALSE(c.find(1));
  EXPECT_TRUE(c.find(0));
  EXPECT_TRUE(c.find(2));
  EXPECT_TRUE(c.find(3));
  for (int k = 10; k < 100; ++k) c.insert(k, boxed(k));
  EXPECT_EQ(c.size(), 3u);
  EXPECT_EQ(c.stats().evictions, 1u + 90u);
}

TEST(Cache, CountsHitsMissesAndEvictions) {
  IntCache c("test.counts", 2);
  c.find(1);                // miss
  c.insert(1, boxed(1));
  c.find(1);                // hit
  c.find(1);                // hit
  c.insert(2, boxed(2));
  c.insert(3, boxed(3));    // evicts 1
  c.find(1);                // miss
  const ts::CacheStats s = c.stats();
  EXPECT_EQ(s.name, "test.counts");
  EXPECT_EQ(s.hits, 2u);
  EXPECT_EQ(s.misses, 2u);
  EXPECT_EQ(s.evictions, 1u);
  EXPECT_EQ(s.size, 2u);
  EXPECT_EQ(s.capacity, 2u);
}

TEST(Cache, InsertKeepsTheValueAnotherThreadPutFirstUnlessReplacing) {
  IntCache c("test.insert", 4);
  auto first = c.insert(1, boxed(1));
  auto second = c.insert(1, boxed(2));
  EXPECT_EQ(first, second);
  EXPECT_EQ(*second, 1);
  EXPECT_EQ(*c.insert(1, boxed(3), /*replace=*/true), 3);
  EXPECT_EQ(**c.find(1), 3);
  EXPECT_EQ(c.size(), 1u);
}

TEST(Cache, ClearDropsEveryEntryAndKeepsTheCounts) {
  IntCache c("test.clear", 8);
  std::weak_ptr<int> watched = c.insert(1, boxed(1));
  c.insert(2, boxed(2));
  c.find(1);
  c.clear();
  EXPECT_EQ(c.size(), 0u);
  EXPECT_TRUE(watched.expired()) << "clear() did not free the cached value";
  EXPECT_FALSE(c.find(1));
  EXPECT_EQ(c.stats().hits, 1u);
  EXPECT_EQ(c.stats().misses, 1u);
}

TEST(Cache, ValuesTakenOutSurviveEvictionAndClear) {
  IntCache c("test.survive", 1);
  c.insert(1, boxed(7));
  std::shared_ptr<int> held = *c.find(1);
  c.insert(2, boxed(8));  // evicts 1
  c.clear();
  EXPECT_EQ(*held, 7);
}

TEST(Cache, FindIfLooksUpWithoutBuildingAKey) {
  td::Cache<std::string, int> c("test.find_if", 4);
  c.insert("abc", 1);
  const size_t h = std::hash<std::string>()("abc");
  EXPECT_EQ(c.find_if(h, [](const std::string& k) { return k.size() == 3 && k[0] == 'a'; }), 1);
  EXPECT_FALSE(c.find_if(h, [](const std::string&) { return false; }));
}

TEST(Cache, FindIfComputesTheHashOnlyWhenTheMostRecentEntryDoesNotMatch) {
  td::Cache<std::string, int> c("test.lazy_hash", 4);
  c.insert("abc", 1);
  c.insert("de", 2);  // the most recent
  int hashed = 0;
  auto hash_of = [&](const std::string& k) {
    return [&hashed, k] {
      ++hashed;
      return std::hash<std::string>()(k);
    };
  };
  auto is = [](const std::string& k) { return [k](const std::string& x) { return x == k; }; };
  EXPECT_EQ(c.find_if(hash_of("de"), is("de")), 2);
  EXPECT_EQ(hashed, 0);
  EXPECT_EQ(c.find_if(hash_of("abc"), is("abc")), 1);
  EXPECT_EQ(hashed, 1);
  EXPECT_EQ(c.find_if(hash_of("abc"), is("abc")), 1);  // now the most recent
  EXPECT_EQ(hashed, 1);
  EXPECT_FALSE(c.find_if(hash_of("xyz"), is("xyz")));
  EXPECT_EQ(hashed, 2);
}

TEST(Cache, EraseIfDropsMatchingEntries) {
  IntCache c("test.erase_if", 8);
  for (int k = 0; k < 6; ++k) c.insert(k, boxed(k));
  c.erase_if([](int k, const std::shared_ptr<int>&) { return k % 2 == 0; });
  EXPECT_EQ(c.size(), 3u);
  EXPECT_FALSE(c.find(2));
  EXPECT_TRUE(c.find(3));
  EXPECT_EQ(c.stats().evictions, 0u);
}

TEST(Cache, ClearAllCachesEmptiesEveryRegisteredCache) {
  IntCache a("test.registry_a", 4), b("test.registry_b", 4);
  a.insert(1, boxed(1));
  b.insert(1, boxed(1));
  b.insert(2, boxed(2));
  EXPECT_EQ(stats_named("test.registry_b").size, 2u);
  ts::clear_caches();
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(b.size(), 0u);
  EXPECT_EQ(stats_named("test.registry_a").size, 0u);
}

TEST(Cache, StatsOfCachesOfOneNameAreSummedAndOutliveThem) {
  {
    IntCache a("test.summed", 4), b("test.summed", 4);
    a.insert(1, boxed(1));
    b.insert(1, boxed(1));
    a.find(1);
    b.find(1);
    b.find(2);
    const ts::CacheStats s = stats_named("test.summed");
    EXPECT_EQ(s.instances, 2u);
    EXPECT_EQ(s.size, 2u);
    EXPECT_EQ(s.hits, 2u);
    EXPECT_EQ(s.misses, 1u);
  }
  const ts::CacheStats gone = stats_named("test.summed");
  EXPECT_EQ(gone.instances, 0u);
  EXPECT_EQ(gone.size, 0u);
  EXPECT_EQ(gone.hits, 2u);
  EXPECT_EQ(gone.misses, 1u);
  auto all = ts::cache_stats();
  EXPECT_TRUE(std::is_sorted(all.begin(), all.end(), [](auto& x, auto& y) { return x.name < y.name; }));
}

TEST(Cache, IdentityKeyIsNotFooledByAReusedAddress) {
  static const int storage = 0;  // one address, owned by two owners one after the other
  std::shared_ptr<const int> first(std::make_shared<int>(0), &storage);
  td::IdentityKey<int> key(first);
  EXPECT_TRUE(key.matches(first));
  first.reset();
  EXPECT_TRUE(key.expired());
  std::shared_ptr<const int> second(std::make_shared<int>(0), &storage);
  EXPECT_EQ(second.get(), &storage);
  EXPECT_FALSE(key.matches(second)) << "a key matched a new object at the address of a freed one";
  EXPECT_FALSE(key == td::IdentityKey<int>(second));

  td::Cache<td::IdentityKey<int>, int> c("test.identity", 4);
  auto third = std::make_shared<const int>(3);
  c.insert(td::IdentityKey<int>(third), 3);
  EXPECT_EQ(c.find(td::IdentityKey<int>(third)), 3);
  EXPECT_FALSE(c.find(td::IdentityKey<int>(second)));
}

TEST(CacheFront, HitsWithoutTheSharedTableAndCountsForIt) {
  IntCache c("test.front", 4);
  td::CacheFront<std::shared_ptr<int>, 8> front(c);
  auto is = [](int v) { return [v](const std::shared_ptr<int>& p) { return *p == v; }; };
  EXPECT_EQ(front.find(5, is(5)), nullptr);
  front.put(5, boxed(5));
  ASSERT_NE(front.find(5, is(5)), nullptr);
  EXPECT_EQ(**front.find(5, is(5)), 5);
  EXPECT_EQ(front.find(5, is(6)), nullptr);  // the match decides, not the hash alone
  EXPECT_EQ(c.stats().hits, 2u);
}

TEST(CacheFront, DropsWhatItHoldsWhenTheCacheIsCleared) {
  IntCache c("test.front_clear", 4);
  td::CacheFront<std::shared_ptr<int>, 8> front(c);
  auto v = boxed(1);
  std::weak_ptr<int> watched = v;
  front.put(1, std::move(v));
  c.clear();
  EXPECT_EQ(front.find(1, [](const auto&) { return true; }), nullptr);
  EXPECT_TRUE(watched.expired());
}

TEST(Cache, IsSafeUnderConcurrentUseAndClear) {
  IntCache c("test.threads", 64);
  std::atomic<bool> bad{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      td::CacheFront<std::shared_ptr<int>, 16> front(c);
      for (int i = 0; i < 20000; ++i) {
        const int k = (i * 7 + t) % 200;
        auto same = [k](const std::shared_ptr<int>& p) { return *p == k; };
        if (const auto* hit = front.find(size_t(k), same)) {
          if (**hit != k) bad = true;
          continue;
        }
        auto v = c.find(k);
        if (!v) v = c.insert(k, boxed(k));
        if (**v != k) bad = true;
        front.put(size_t(k), *v);
        if (t == 0 && i % 1000 == 0) c.clear();
        if (c.size() > c.capacity()) bad = true;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_FALSE(bad.load());
  EXPECT_LE(c.size(), 64u);
  // The threads walk 200 keys cyclically through 64 entries, so whether any of their lookups
  // hits depends on how they were scheduled; a lookup after them must count one.
  const uint64_t hits = c.stats().hits;
  c.insert(1000, boxed(1000));
  ASSERT_TRUE(c.find(1000));
  const ts::CacheStats s = c.stats();
  EXPECT_EQ(s.hits, hits + 1);
  EXPECT_GT(s.evictions, 0u);
}
