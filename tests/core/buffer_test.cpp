// Buffers and the caching allocator: size classes, alignment, reuse of freed blocks.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "core/buffer.h"
#include "core/config.h"
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
  // The most recently freed block of its class (its data a few cache lines further in or
  // back: large buffers are staggered, see below).
  const auto distance = std::abs(static_cast<char*>(again.data()) - static_cast<char*>(first));
  EXPECT_LT(distance, 4096) << "a different block";
  EXPECT_GE(again.capacity(), n - 1000);
  EXPECT_LE(after.cached_bytes, after.limit);
  void* data = again.data();
  td::Memory moved = std::move(again);
  EXPECT_FALSE(again);
  EXPECT_EQ(moved.data(), data);
  EXPECT_GE(moved.capacity(), n - 1000);
}

// Large buffers start at different places of a 4 KiB page (TESSEL_BUFFER_STAGGER_LINES),
// so that row i of the arrays a loop nest streams through does not map to one L1 set; each
// still holds the bytes asked for, 64-byte aligned, and goes back to the cache whole.
TEST(Allocator, LargeBuffersStartAtDifferentPlacesOfAPage) {
  const int64_t lines = tessel::config::get_int(tessel::config::kBufferStaggerLines);
  if (lines == 0) GTEST_SKIP() << "TESSEL_BUFFER_STAGGER_LINES=0";
  const size_t n = (size_t(4) << 20) - (64 << 10);  // its 4 MiB class has room for the 16 places
  std::vector<td::Memory> blocks;
  std::set<uintptr_t> places;
  for (int k = 0; k < 16; ++k) {
    blocks.emplace_back(n);
    const auto at = reinterpret_cast<uintptr_t>(blocks.back().data());
    EXPECT_EQ(at % 64, 0u);
    EXPECT_GE(blocks.back().capacity(), n);
    std::memset(blocks.back().data(), k, n);  // every byte asked for is there
    places.insert(at % 4096);
  }
  EXPECT_EQ(places.size(), 16u) << "16 consecutive large buffers share places of a page";
  EXPECT_EQ(static_cast<unsigned char*>(blocks[5].data())[n - 1], 5);
  const auto before = td::allocator_stats();
  blocks.clear();  // back to the cache, whole (their block's start, not data())
  if (before.limit >= 16 * td::allocator_size_class(n)) {
    EXPECT_GE(td::allocator_stats().cached_bytes, before.cached_bytes + 16 * n);
  }
  td::Memory small(100'000);  // under 256 KiB: not staggered, so nothing is added to it
  EXPECT_EQ(td::allocator_size_class(100'000), small.capacity());
}

// The stagger uses only the slack a block already has: staggered or not, a buffer takes a
// block of its own size class, and every byte of the block it may use is inside that block.
TEST(Allocator, StaggeredBuffersTakeNoLargerBlocks) {
  td::allocator_trim();
  const size_t huge = size_t(2) << 20;
  const auto huge_from = size_t(tessel::config::get_int(tessel::config::kHugePageBytes));
  for (const size_t n : {size_t(300) << 10, size_t(4) << 20, (size_t(4) << 20) + 4096,
                         size_t(1802) * 902 * 4, size_t(16) << 20}) {
    const size_t cls = td::allocator_size_class(n);
    const auto before = td::allocator_stats();
    if (before.limit < 16 * cls) continue;  // a small cache limit cannot count the blocks
    std::vector<td::Memory> blocks;
    std::set<uintptr_t> places;
    for (int k = 0; k < 16; ++k) {
      blocks.emplace_back(n);
      const auto at = reinterpret_cast<uintptr_t>(blocks.back().data());
      ASSERT_GE(blocks.back().capacity(), n) << n;
      places.insert(at % 4096);
      if (huge_from > 0 && cls >= huge_from) {  // a huge-page block: the usable bytes end at its end
        EXPECT_EQ((at + blocks.back().capacity()) % huge, 0u) << n;
        EXPECT_LE(blocks.back().capacity(), (cls + huge - 1) / huge * huge) << n;
      } else {
        EXPECT_LE(blocks.back().capacity(), cls) << n;
      }
    }
    // Places within a page are known only for page-aligned blocks (malloc's smaller ones
    // may come from its heap, at any place).
    if (huge_from > 0 && cls >= huge_from) {
      if (n == (size_t(4) << 20) || n == (size_t(16) << 20)) {
        EXPECT_EQ(places.size(), 1u) << n << " fills its block: no room to move it";
      } else if (tessel::config::get_int(tessel::config::kBufferStaggerLines) > 0) {
        EXPECT_EQ(places.size(), 16u) << n;
      }
    }
    blocks.clear();  // each went back as one block of its size class, not of a larger one
    const auto after = td::allocator_stats();
    EXPECT_EQ(after.cached_bytes, before.cached_bytes + 16 * cls) << n;
    td::allocator_trim();
  }
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
