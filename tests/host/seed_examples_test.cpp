// The host_callback seed's examples (examples/seeds/host_callback_*.cpp) print exactly what
// the seed shows, in id_print's format: each example's functions run here with an
// ostringstream for output. Lines from different devices come in arbitrary order: those are
// compared sorted.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#define TESSEL_SEED_EXAMPLE_NO_MAIN
#include "../../examples/seeds/host_callback_barrier.cpp"
#include "../../examples/seeds/host_callback_call.cpp"
#include "../../examples/seeds/host_callback_id_tap.cpp"
#include "../../examples/seeds/host_callback_per_device.cpp"
#include "../../examples/seeds/host_callback_tangents.cpp"

namespace {

/// What `example` prints.
std::string printed(void (*example)(std::ostream&)) {
  std::ostringstream out;
  example(out);
  return out.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream is(text);
  for (std::string line; std::getline(is, line);) lines.push_back(line);
  return lines;
}

/// `text`'s lines [begin, end) as groups of `group` lines, sorted (one group per device).
std::vector<std::string> sorted_groups(const std::string& text, size_t begin, size_t end, size_t group) {
  const std::vector<std::string> lines = lines_of(text);
  std::vector<std::string> groups;
  for (size_t i = begin; i < end && i < lines.size(); i += group) {
    std::string g;
    for (size_t k = i; k < i + group && k < lines.size(); ++k) g += lines[k] + "\n";
    groups.push_back(g);
  }
  std::sort(groups.begin(), groups.end());
  return groups;
}

std::string lines_from(const std::string& text, size_t begin) {
  const std::vector<std::string> lines = lines_of(text);
  std::string s;
  for (size_t i = begin; i < lines.size(); ++i) s += lines[i] + "\n";
  return s;
}

TEST(HostCallbackSeed, HostEigThroughCallInsideJit) {
  const std::string out = printed(&host_callback_call::run_host_eig);
  EXPECT_EQ(out,
            "# jit(device_fun)(m), m of shape (2, 3, 3)\n"
            "[[1.         4.         6.        ]\n"
            " [0.58578644 2.         3.41421356]]\n"
            "# jit(device_fun)(m32), a float32 triangular matrix\n"
            "[2. 3.]\n");
}

TEST(HostCallbackSeed, HostSinCallsOncePerDevice) {
  const std::string out = printed(&host_callback_call::run_host_sin);
  EXPECT_EQ(lines_of(out).at(0), "# pmap(call(host_sin))(np.ones((2, 4))) prints (in arbitrary order)");
  EXPECT_EQ(sorted_groups(out, 1, 3, 1),
            (std::vector<std::string>{"Invoking host_sin with (4,) on cpu:0\n", "Invoking host_sin with (4,) on cpu:1\n"}));
  EXPECT_EQ(lines_from(out, 3),
            "# result\n"
            "[[0.84147096 0.84147096 0.84147096 0.84147096]\n"
            " [0.84147096 0.84147096 0.84147096 0.84147096]]\n");
}

TEST(HostCallbackSeed, IdTapExamples) {
  const std::string out = printed(&host_callback_id_tap::run_id_tap);
  EXPECT_EQ(out,
            "# id_tap\n"
            "host_func([2. 4.], [])\n"
            "host_func(([2. 4.], [3. 6.]), [])\n"
            "host_func([2. 4.], [], device=cpu:0)\n"
            "host_func([2. 4.], [], what='activation')\n"
            "host_func(dict(x=[1. 2.], y=[ 0.5 -1. ]), [], what='data')\n");
}

TEST(HostCallbackSeed, IdPrintTwins) {
  const std::string out = printed(&host_callback_id_tap::run_id_print);
  EXPECT_EQ(out,
            "# id_print\n"
            "[2. 4.]\n"
            "( [2. 4.] [3. 6.] )\n"
            "device: cpu:0\n"
            "[2. 4.]\n"
            "what: activation\n"
            "[2. 4.]\n"
            "step: 1 what: data\n"
            "{ x=[1. 2.] y=[ 0.5 -1. ] }\n");
}

TEST(HostCallbackSeed, BarrierWaitSeesEveryTapInOrder) {
  const std::string out = printed(&host_callback_barrier::run_barrier_wait);
  EXPECT_EQ(out,
            "# after barrier_wait\n"
            "accumulator: 1. 2. 1. 2.\n");
}

TEST(HostCallbackSeed, CallsHaveRunOnceTheResultsAreReady) {
  const std::string out = printed(&host_callback_barrier::run_call_and_block);
  EXPECT_EQ(out,
            "# after res1.block_until_ready(), res2.block_until_ready()\n"
            "accumulator: 1. 2. 1. 2.\n");
}

TEST(HostCallbackSeed, PrintTangents) {
  const std::string out = printed(&host_callback_tangents::run_print_tangents);
  EXPECT_EQ(out,
            "# jvp(power3_with_tangents, (3.,), (0.1,))\n"
            "what: x,x²\n"
            "( 3. 9. )\n"
            "what: tangents\n"
            "( 0.1 0.6 )\n");
}

TEST(HostCallbackSeed, PrintCotangents) {
  const std::string out = printed(&host_callback_tangents::run_print_cotangents);
  EXPECT_EQ(out,
            "# grad(power3_with_cotangents)(3.)\n"
            "what: x,x²\n"
            "( 3. 9. )\n"
            "what: cotangents\n"
            "( 9. 3. )\n");
}

TEST(HostCallbackSeed, PerDeviceTapsUnderShardMap) {
  const std::string out = printed(&host_callback_per_device::run_per_device);
  EXPECT_EQ(sorted_groups(out, 0, 4, 2),
            (std::vector<std::string>{"device: cpu:0 what: x,x²\n( 3. 9. )\n", "device: cpu:1 what: x,x²\n( 4. 16. )\n"}));
  EXPECT_EQ(lines_from(out, 4), "# result\n[27. 64.]\n");
}

TEST(HostCallbackSeed, ShardedJitTapsOnceWithTheWholeOperand) {
  const std::string out = printed(&host_callback_per_device::run_sharded_jit);
  EXPECT_EQ(out,
            "# jit(power3) with its input and output split over 2 devices\n"
            "device: cpu:0 what: x,x²\n"
            "( [3. 4.] [ 9. 16.] )\n"
            "# result\n"
            "[27. 64.]\n");
}

}  // namespace
