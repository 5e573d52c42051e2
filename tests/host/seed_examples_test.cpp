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
  std::ostringstream out;
  host_callback_call::run_host_eig(out);
  EXPECT_EQ(out.str(),
            "# jit(device_fun)(m), m of shape (2, 3, 3)\n"
            "[[1.         4.         6.        ]\n"
            " [0.58578644 2.         3.41421356]]\n"
            "# jit(device_fun)(m32), a float32 triangular matrix\n"
            "[2. 3.]\n");
}

TEST(HostCallbackSeed, HostSinCallsOncePerDevice) {
  std::ostringstream out;
  host_callback_call::run_host_sin(out);
  EXPECT_EQ(lines_of(out.str()).at(0), "# pmap(call(host_sin))(np.ones((2, 4))) prints (in arbitrary order)");
  EXPECT_EQ(sorted_groups(out.str(), 1, 3, 1),
            (std::vector<std::string>{"Invoking host_sin with (4,) on cpu:0\n", "Invoking host_sin with (4,) on cpu:1\n"}));
  EXPECT_EQ(lines_from(out.str(), 3),
            "# result\n"
            "[[0.84147096 0.84147096 0.84147096 0.84147096]\n"
            " [0.84147096 0.84147096 0.84147096 0.84147096]]\n");
}

TEST(HostCallbackSeed, IdTapExamples) {
  std::ostringstream out;
  host_callback_id_tap::run_id_tap(out);
  EXPECT_EQ(out.str(),
            "# id_tap\n"
            "host_func([2. 4.], [])\n"
            "host_func(([2. 4.], [3. 6.]), [])\n"
            "host_func([2. 4.], [], device=cpu:0)\n"
            "host_func([2. 4.], [], what='activation')\n"
            "host_func(dict(x=[1. 2.], y=[ 0.5 -1. ]), [], what='data')\n");
}

TEST(HostCallbackSeed, IdPrintTwins) {
  std::ostringstream out;
  host_callback_id_tap::run_id_print(out);
  EXPECT_EQ(out.str(),
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
  std::ostringstream out;
  host_callback_barrier::run_barrier_wait(out);
  EXPECT_EQ(out.str(),
            "# after barrier_wait\n"
            "accumulator: 1. 2. 1. 2.\n");
}

TEST(HostCallbackSeed, CallsHaveRunOnceTheResultsAreReady) {
  std::ostringstream out;
  host_callback_barrier::run_call_and_block(out);
  EXPECT_EQ(out.str(),
            "# after res1.block_until_ready(), res2.block_until_ready()\n"
            "accumulator: 1. 2. 1. 2.\n");
}

TEST(HostCallbackSeed, PrintTangents) {
  std::ostringstream out;
  host_callback_tangents::run_print_tangents(out);
  EXPECT_EQ(out.str(),
            "# jvp(power3_with_tangents, (3.,), (0.1,))\n"
            "what: x,x²\n"
            "( 3. 9. )\n"
            "what: tangents\n"
            "( 0.1 0.6 )\n");
}

TEST(HostCallbackSeed, PrintCotangents) {
  std::ostringstream out;
  host_callback_tangents::run_print_cotangents(out);
  EXPECT_EQ(out.str(),
            "# grad(power3_with_cotangents)(3.)\n"
            "what: x,x²\n"
            "( 3. 9. )\n"
            "what: cotangents\n"
            "( 9. 3. )\n");
}

TEST(HostCallbackSeed, PerDeviceTapsUnderShardMap) {
  std::ostringstream out;
  host_callback_per_device::run_per_device(out);
  EXPECT_EQ(sorted_groups(out.str(), 0, 4, 2),
            (std::vector<std::string>{"device: cpu:0 what: x,x²\n( 3. 9. )\n", "device: cpu:1 what: x,x²\n( 4. 16. )\n"}));
  EXPECT_EQ(lines_from(out.str(), 4), "# result\n[27. 64.]\n");
}

TEST(HostCallbackSeed, ShardedJitTapsOnceWithTheWholeOperand) {
  std::ostringstream out;
  host_callback_per_device::run_sharded_jit(out);
  EXPECT_EQ(out.str(),
            "# jit(power3) with its input and output split over 2 devices\n"
            "device: cpu:0 what: x,x²\n"
            "( [3. 4.] [ 9. 16.] )\n"
            "# result\n"
            "[27. 64.]\n");
}

}  // namespace
