// Buffers and the caching allocator: size classes, alignment, reuse of freed blocks.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/buffer.h"
#include "tessel/error.h"

namespace td = tessel::detail;

TEST(Allocator, SizeClassesHoldTheRequestWithLittleSlack) {
  size_t prev = 0;
  for (size_t n = 0; n < (size_t(1) << 26); n = n < 5000 ? n + 1 : n + n / 7 + 13) {
    const size_t c = td::allocator_size_class(n);
    EXPECT_GE(c, n);
    EXPECT_EQ(c % 64, 0u) << n;
    EXPECT_GE(c, prev) << n;  // monotonic
    if (n > 4096) {
      EXPECT_LT(double(c - n), 0.125 * double(n)) << n;
    }
    prev = c;
  }
  EXPECT_EQ(td::allocator_size_class(0), 64u);
  EXPECT_EQ(td::allocator_size_class(6'500'000), td::allocator_size_class(6'480'000));
}

TEST(Allocator, MemoryIs64ByteAligned) {
  for (size_t n : {size_t(1), size_t(100), size_t(5000), size_t(1) << 20}) {
    td::Memory m(n);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(m.data()) % 64, 0u) << n;
    EXPECT_GE(m.capacity(), n);
    std::memset(m.data(), 1, n);
  }
}

// Small blocks come from malloc, aligned by hand: moving them keeps data and alignment, and
// each is freed once (ASan/valgrind would flag a wrong pointer given back).
TEST(Allocator, SmallBlocksMoveAndFree) {
  std::vector<td::Memory> blocks;
  for (size_t n : {size_t(1), size_t(4), size_t(64), size_t(65), size_t(4000), size_t(16000)}) {
    td::Memory m(n);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(m.data()) % 64, 0u) << n;
    std::memset(m.data(), int(n % 251), n);
    td::Memory moved(std::move(m));
    EXPECT_FALSE(m);
    td::Memory assigned(8);
    assigned = std::move(moved);
    EXPECT_EQ(static_cast<unsigned char*>(assigned.data())[n - 1], (unsigned char)(n % 251)) << n;
    blocks.push_back(std::move(assigned));
  }
  for (auto& b : blocks) b.reset();
  for (auto& b : blocks) EXPECT_FALSE(b);
}

TEST(Allocator, FreedBlocksAreReusedBySizeClass) {
  if (td::allocator_stats().limit < (size_t(8) << 20)) GTEST_SKIP() << "TESSEL_ALLOCATOR_CACHE_BYTES is too small";
  const size_t n = (size_t(3) << 20) + 12345;
  void* first = nullptr;
  {
    td::Memory m(n);
    first = m.data();
  }  // back to the cache
  const auto before = td::allocator_stats();
  td::Memory again(n - 1000);  // same size class
  const auto after = td::allocator_stats();
  EXPECT_GE(after.hits, before.hits + 1);
  EXPECT_EQ(again.data(), first);  // the most recently freed block of its class
  EXPECT_LE(after.cached_bytes, after.limit);
  td::Memory moved = std::move(again);
  EXPECT_FALSE(again);
  EXPECT_EQ(moved.data(), first);
}

TEST(Allocator, BuffersDeferTheirMemory) {
  auto b = td::Buffer::deferred(1000, nullptr);
  EXPECT_EQ(b->data(), nullptr);
  b->attach(td::Memory(1000));
  EXPECT_NE(b->data(), nullptr);
  b->set_ready();
  EXPECT_NO_THROW(b->wait());
  int messages = 0;  // the message is made once, on the first read
  auto d = td::Buffer::donated(8, nullptr, [&messages] {
    ++messages;
    return std::string("gone");
  });
  EXPECT_EQ(messages, 0);
  EXPECT_TRUE(d->is_donated());
  EXPECT_TRUE(d->failed());
  EXPECT_THROW(d->wait(), tessel::ValueError);
  EXPECT_THROW(d->check_not_donated(), tessel::ValueError);
  try {
    std::rethrow_exception(d->error());
  } catch (const tessel::ValueError& e) {
    EXPECT_STREQ(e.what(), "gone");
  }
  EXPECT_EQ(messages, 1);
}
