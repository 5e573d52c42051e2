// TESSEL_PIN_DEVICES: which core a device's stream is pinned to, and that a stream started
// with the flag runs on that core alone (and on every allowed core without it).
#include <gtest/gtest.h>
#include <sched.h>
#include <stdlib.h>

#include <optional>
#include <string>

#include "core/stream.h"

namespace {

using tessel::detail::pinned_core;
using tessel::detail::Stream;

cpu_set_t cores(std::initializer_list<int> ids) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int id : ids) CPU_SET(id, &set);
  return set;
}

// Sets an environment variable for the scope and restores its earlier value.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// The affinity a task on `stream` sees.
cpu_set_t affinity_on(Stream& stream) {
  cpu_set_t seen;
  CPU_ZERO(&seen);
  stream.enqueue([&seen] { sched_getaffinity(0, sizeof seen, &seen); });
  stream.synchronize();
  return seen;
}

TEST(StreamPin, DeviceKGetsTheKthAllowedCore) {
  EXPECT_EQ(pinned_core(0, 2, cores({0, 1})), 0);
  EXPECT_EQ(pinned_core(1, 2, cores({0, 1})), 1);
  EXPECT_EQ(pinned_core(1, 2, cores({2, 5, 7})), 5);
  EXPECT_EQ(pinned_core(2, 3, cores({2, 5, 7})), 7);
}

TEST(StreamPin, NothingPinnedWhenTheDevicesOutnumberTheCores) {
  EXPECT_EQ(pinned_core(0, 3, cores({0, 1})), -1);
  EXPECT_EQ(pinned_core(1, 8, cores({4, 6})), -1);
  EXPECT_EQ(pinned_core(-1, 1, cores({0})), -1);
}

TEST(StreamPin, AStreamStartedWithTheFlagRunsOnItsCoreAlone) {
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  const int n = CPU_COUNT(&allowed);
  const int device = n >= 2 ? 1 : 0;
  {
    // As many devices as cores: the stream of `device` runs on the device-th allowed core.
    ScopedEnv pin("TESSEL_PIN_DEVICES", "1"), devices("TESSEL_CPU_DEVICES", std::to_string(n));
    Stream stream(device);
    const cpu_set_t seen = affinity_on(stream);
    EXPECT_EQ(CPU_COUNT(&seen), 1);
    EXPECT_TRUE(CPU_ISSET(pinned_core(device, n, allowed), &seen));
  }
  {
    // More devices than cores: not pinned.
    ScopedEnv pin("TESSEL_PIN_DEVICES", "1"), devices("TESSEL_CPU_DEVICES", std::to_string(n + 1));
    Stream stream(device);
    const cpu_set_t seen = affinity_on(stream);
    EXPECT_EQ(CPU_COUNT(&seen), n);
  }
  {
    // Flag off: the process's whole affinity.
    ScopedEnv pin("TESSEL_PIN_DEVICES", "0"), devices("TESSEL_CPU_DEVICES", std::to_string(n));
    Stream stream(device);
    const cpu_set_t seen = affinity_on(stream);
    EXPECT_EQ(CPU_COUNT(&seen), n);
  }
  // The test's own thread keeps its affinity: only the stream's thread was pinned.
  cpu_set_t mine;
  ASSERT_EQ(sched_getaffinity(0, sizeof mine, &mine), 0);
  EXPECT_EQ(CPU_COUNT(&mine), n);
}

}  // namespace
