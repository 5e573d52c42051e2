// TESSEL_PIN_DEVICES: which core a device's stream is pinned to, and that each device's
// stream runs on that core alone with the flag (and on every allowed core without it).
#include <gtest/gtest.h>
#include <sched.h>

#include <set>
#include <vector>

#include "core/config.h"
#include "core/device_impl.h"
#include "core/stream.h"
#include "tessel/tessel.h"

namespace {

using tessel::detail::pinned_core;
using tessel::detail::Stream;

cpu_set_t cores(std::initializer_list<int> ids) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int id : ids) CPU_SET(id, &set);
  return set;
}

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

// The flags are read once per process, so this runs with TESSEL_PIN_DEVICES=1 as CTest
// `stream_pin_devices` (2 devices; pinned when the process may use 2 cores, else not);
// without the flag it checks that nothing is pinned.
TEST(StreamPin, EachDeviceStreamRunsOnItsOwnCoreWithTheFlag) {
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  const int n = CPU_COUNT(&allowed);
  const bool pin = tessel::config::get_flag(tessel::config::kPinDevices);
  const std::vector<tessel::Device> devices = tessel::devices();
  std::set<int> cores_used;
  for (size_t k = 0; k < devices.size(); ++k) {
    const cpu_set_t seen = affinity_on(devices[k].impl()->own_stream());
    const int core = pinned_core(int(k), int(devices.size()), allowed);
    if (pin && core >= 0) {
      EXPECT_EQ(CPU_COUNT(&seen), 1) << "cpu:" << k;
      EXPECT_TRUE(CPU_ISSET(core, &seen)) << "cpu:" << k << " should run on core " << core;
      cores_used.insert(core);
    } else {
      EXPECT_EQ(CPU_COUNT(&seen), n) << "cpu:" << k;
    }
  }
  if (pin && int(devices.size()) <= n) {
    EXPECT_EQ(cores_used.size(), devices.size());
  }
  // The calling thread keeps the process's affinity: only the streams are pinned.
  cpu_set_t mine;
  ASSERT_EQ(sched_getaffinity(0, sizeof mine, &mine), 0);
  EXPECT_EQ(CPU_COUNT(&mine), n);
}

}  // namespace
