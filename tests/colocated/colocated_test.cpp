// Colocated functions and objects on one process with 8 virtual devices: values, output
// shardings and device order, the output-spec cache, specialization, program order and
// concurrency, object lifecycle and state, and every error.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <map>
#include <thread>

#include "tessel/colocated.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace co = tessel::colocated;

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

ts::Array add_one(const ts::Array& x) { return x + 1; }

ts::Array slow_add_one(const ts::Array& x) {
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  return x + 1;
}

class Colocated : public ::testing::Test {
 protected:
  void SetUp() override {
    if (ts::device_count() < 8) GTEST_SKIP() << "needs TESSEL_CPU_DEVICES=8";
    cpu = co::colocated_cpu_devices(ts::devices());
    mesh = ts::Mesh(cpu, {8}, {"x"});
    replicated = ts::NamedSharding(mesh, ts::P());
    x = ts::device_put(ts::Array(1), replicated);
  }
  std::vector<ts::Device> cpu;
  ts::Mesh mesh;
  ts::Sharding replicated;
  ts::Array x;
};

co::Specs same_specs(const co::Specs& in) { return in; }

TEST_F(Colocated, CpuDevicesAreTheDevicesInOrder) {
  EXPECT_EQ(cpu, ts::devices());
  ts::Mesh m = co::colocated_cpu_devices(ts::make_mesh({2, 4}, {"a", "b"}));
  EXPECT_EQ(m.shape(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(m.axis_names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_THROW(co::colocated_cpu_devices(std::vector<ts::Device>{ts::Device()}), ts::ValueError);
}

TEST_F(Colocated, SeedFunctionKeepsTheSharding) {
  ts::Array y = ts::jit([](const ts::Array& a) { return a + 1; })(x);
  EXPECT_EQ(y.item<int>(), 2);
  auto f = co::colocated(add_one);
  ts::Array z = f(x);
  EXPECT_EQ(z.sharding(), x.sharding());
  EXPECT_EQ(z.item<int>(), 2);
}

TEST_F(Colocated, ShardedInputSeenWholeAndOutputInDeviceOrder) {
  ts::NamedSharding split(mesh, ts::P("x"));
  ts::Array a = ts::device_put(ts::arange(16, ts::f32), split);
  auto f = co::colocated([](const ts::Array& v) { return v * 2.0f; });
  ts::Array b = f(a);
  EXPECT_EQ(b.sharding(), split);
  auto shards = b.addressable_shards();
  ASSERT_EQ(shards.size(), 8u);
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(shards[i].device, cpu[i]);
    EXPECT_EQ(shards[i].data.to_vector<float>(), (std::vector<float>{4.0f * float(i), 4.0f * float(i) + 2}));
  }
}

TEST_F(Colocated, FirstCallOfASignatureLearnsTheOutputSpecsOnce) {
  auto f = co::colocated(add_one);
  f(x);
  f(x);
  EXPECT_EQ(f.out_spec_discoveries(), 1u);
  f(ts::device_put(ts::arange(3), replicated));  // a new signature
  EXPECT_EQ(f.out_spec_discoveries(), 2u);
  auto g = f.specialize({.out_specs_fn = same_specs});
  g(x);
  EXPECT_EQ(g.out_spec_discoveries(), 0u);
}

TEST_F(Colocated, WithOutSpecsCallsReturnAtOnceAndRunAsynchronously) {
  auto f = co::colocated(slow_add_one).specialize({.out_specs_fn = same_specs});
  auto t0 = Clock::now();
  ts::Array y = f(x);
  EXPECT_LT(seconds_since(t0), 0.2);
  EXPECT_EQ(y.sharding(), x.sharding());
  EXPECT_EQ(y.item<int>(), 2);
  EXPECT_GE(seconds_since(t0), 0.25);
}

TEST_F(Colocated, SeedInSpecsAndOutSpecs) {
  co::Spec scalar({}, ts::int32, replicated);
  auto f = co::colocated(add_one).specialize(
      {.in_specs = co::Specs{scalar}, .out_specs_fn = [&](const co::Specs&) { return co::Specs{scalar}; }});
  EXPECT_EQ(f(x).item<int>(), 2);
  try {
    f(ts::device_put(ts::Array(1.5f), replicated));
    FAIL() << "expected a ValueError";
  } catch (const ts::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("input leaf 0 is f32[]"), std::string::npos) << e.what();
  }
}

TEST_F(Colocated, EachSpecializationFieldOnce) {
  auto f = co::colocated(add_one).specialize({.out_specs_fn = same_specs});
  EXPECT_THROW(f.specialize({.out_specs_fn = same_specs}), ts::ValueError);
  auto g = f.specialize({.devices = cpu});
  EXPECT_THROW(g.specialize({.devices = cpu}), ts::ValueError);
  auto h = g.specialize({.in_specs = co::Specs{co::Spec::of(x)}});
  EXPECT_THROW(h.specialize({.in_specs = co::Specs{}}), ts::ValueError);
  EXPECT_EQ(h(x).item<int>(), 2);
}

TEST_F(Colocated, FunctionWithoutArgumentsNeedsDevices) {
  const std::string path = ::testing::TempDir() + "tessel_colocated_foo";
  auto write = co::colocated([path]() {
    std::ofstream(path) << "foo";
  });
  try {
    write();
    FAIL() << "expected a ValueError";
  } catch (const ts::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("specialize it with devices"), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
  write.specialize({.devices = cpu})();
  std::ifstream in(path);
  std::string text;
  in >> text;
  EXPECT_EQ(text, "foo");
}

TEST_F(Colocated, OutputSpecsThatDoNotMatchFailTheOutputs) {
  auto f = co::colocated(add_one).specialize(
      {.out_specs_fn = [&](const co::Specs&) { return co::Specs{co::Spec({2}, ts::int32, replicated)}; }});
  ts::Array y = f(x);
  try {
    y.block_until_ready();
    FAIL() << "expected a ValueError";
  } catch (const ts::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("output 0 is i32[]"), std::string::npos) << e.what();
  }
  auto g = co::colocated(add_one).specialize({.out_specs_fn = [](const co::Specs& in) {
    return co::Specs{co::Spec(in[0].shape, in[0].dtype, ts::Sharding())};
  }});
  EXPECT_THROW(g(x), ts::ValueError);
}

TEST_F(Colocated, InputsOnDifferentDevicesOrTracersAreErrors) {
  auto f = co::colocated([](const ts::Array& a, const ts::Array& b) { return a + b; });
  ts::Array other = ts::device_put(ts::Array(2), cpu[3]);
  try {
    f(x, other);
    FAIL() << "expected a ValueError";
  } catch (const ts::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("input leaf 1 is on devices {cpu:3}"), std::string::npos) << e.what();
  }
  auto g = co::colocated(add_one);
  EXPECT_THROW(ts::jit([&](const ts::Array& a) { return g(a); })(x), ts::ValueError);
  EXPECT_THROW(g(ts::Array()), ts::ValueError);
}

TEST_F(Colocated, ExceptionsReachTheCaller) {
  auto bad = co::colocated([](const ts::Array&) -> ts::Array { throw ts::IndexError("no such row"); });
  EXPECT_THROW(bad(x), ts::IndexError);  // synchronous first call
  auto bad_async = bad.specialize({.out_specs_fn = same_specs});
  ts::Array y = bad_async(x);
  EXPECT_THROW(y.to_vector<int>(), ts::IndexError);
}

TEST_F(Colocated, CallsFromOneThreadRunInProgramOrder) {
  auto order = std::make_shared<std::vector<int>>();
  auto mu = std::make_shared<std::mutex>();
  auto f = co::colocated([order, mu](const ts::Array& a) {
    int k = a.item<int>();
    std::this_thread::sleep_for(std::chrono::milliseconds(5 * (5 - k)));  // earlier calls are slower
    std::lock_guard lock(*mu);
    order->push_back(k);
    return a;
  }).specialize({.out_specs_fn = same_specs});
  std::vector<ts::Array> outs;
  for (int k = 0; k < 5; ++k) outs.push_back(f(ts::device_put(ts::Array(k), replicated)));
  for (auto& o : outs) o.block_until_ready();
  EXPECT_EQ(*order, (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST_F(Colocated, SeedCallsFromTwoThreadsRunConcurrently) {
  auto f = co::colocated([](const ts::Array& a) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    return a + 1;
  }).specialize({.out_specs_fn = same_specs});
  auto t0 = Clock::now();
  auto fut1 = std::async(std::launch::async, [&] { return f(x); });
  auto fut2 = std::async(std::launch::async, [&] { return f(x); });
  ts::Array a = fut1.get(), b = fut2.get();
  a.block_until_ready();
  b.block_until_ready();
  double t = seconds_since(t0);
  EXPECT_LT(t, 1.8) << "two 1-second calls from two threads should overlap";
  EXPECT_EQ(a.item<int>() + b.item<int>(), 4);
}

TEST_F(Colocated, CallsThatWaitOnEachOtherDoNotDeadlock) {
  auto gate = std::make_shared<std::promise<void>>();
  auto opened = std::make_shared<std::shared_future<void>>(gate->get_future().share());
  auto waits = co::colocated([opened](const ts::Array& a) {
    opened->wait();
    return a;
  }).specialize({.out_specs_fn = same_specs});
  auto opens = co::colocated([gate](const ts::Array& a) {
    gate->set_value();
    return a;
  }).specialize({.out_specs_fn = same_specs});
  ts::Array w;
  std::thread t([&] { w = waits(x); });
  t.join();
  auto second = std::async(std::launch::async, [&] { return opens(x); });
  ASSERT_EQ(second.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  auto done = std::async(std::launch::async, [&] { w.block_until_ready(); });
  ASSERT_EQ(done.wait_for(std::chrono::seconds(10)), std::future_status::ready);
}

// ---- classes ----

std::atomic<int> g_created{0}, g_destroyed{0};

struct Adder {
  explicit Adder(int increment) : increment(increment) { ++g_created; }
  ~Adder() { ++g_destroyed; }
  ts::Array add(const ts::Array& v) { return v + increment; }
  int increment;
};

struct Accumulator {
  ts::Array add(const ts::Array& v) {
    total += v.item<int>();
    return ts::device_put(ts::Array(total), v.sharding());
  }
  int total = 0;
};

struct Broken {
  Broken() {
    ++g_created;
    throw ts::ValueError("cannot open the dataset");
  }
  ts::Array get(const ts::Array& v) { return v; }
};

bool eventually(const std::function<bool()>& cond) {
  for (int i = 0; i < 200 && !cond(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return cond();
}

TEST_F(Colocated, SeedAdderIsMadeOnFirstCallAndDestroyedAfterTheWrapper) {
  g_created = g_destroyed = 0;
  auto AdderW = co::colocated_class<Adder>();
  {
    auto adder = AdderW(1);
    EXPECT_EQ(g_created, 0) << "the constructor runs on first use";
    ts::Array y = adder.call(&Adder::add, x);
    EXPECT_EQ(y.item<int>(), 2);
    EXPECT_EQ(adder.call(&Adder::add, y).item<int>(), 3);
    EXPECT_EQ(g_created, 1);
    EXPECT_EQ(g_destroyed, 0);
  }
  EXPECT_TRUE(eventually([] { return g_destroyed == 1; }));
  {
    auto unused = AdderW(5);
  }
  EXPECT_EQ(g_created, 1) << "a wrapper that was never called creates nothing";
}

TEST_F(Colocated, ObjectsKeepStateAndMethodsSpecialize) {
  auto acc = co::colocated_class<Accumulator>()();
  auto add = acc.method(&Accumulator::add).specialize({.out_specs_fn = same_specs});
  std::vector<ts::Array> outs;
  for (int k = 1; k <= 4; ++k) outs.push_back(add(ts::device_put(ts::Array(k), replicated)));
  EXPECT_EQ(outs.back().item<int>(), 10);
  EXPECT_EQ(add.out_spec_discoveries(), 0u);
}

TEST_F(Colocated, ConstructorErrorIsKeptForEveryCaller) {
  g_created = 0;
  auto b = co::colocated_class<Broken>()();
  EXPECT_THROW(b.call(&Broken::get, x), ts::ValueError);
  EXPECT_THROW(b.call(&Broken::get, x), ts::ValueError);
  EXPECT_EQ(g_created, 1) << "the constructor runs once";
}

// JAX's colocated functions return any pytree: `[1, (2, {"v": 3})]` comes back with its list,
// tuple and dict. The result's tree structure (a std::map's keys, a std::vector's size) is
// learned with the specs and kept for the asynchronous calls.
using Nested = std::tuple<ts::Array, std::tuple<ts::Array, std::map<std::string, ts::Array>>>;
Nested nested_of(const ts::Array& x) { return Nested{x, {x + 1, {{"v", x + 2}}}}; }

void expect_nested(const Nested& r, int base) {
  EXPECT_EQ(std::get<0>(r).item<int>(), base);
  EXPECT_EQ(std::get<0>(std::get<1>(r)).item<int>(), base + 1);
  const auto& m = std::get<1>(std::get<1>(r));
  ASSERT_EQ(m.size(), 1u);
  ASSERT_EQ(m.count("v"), 1u);
  EXPECT_EQ(m.at("v").item<int>(), base + 2);
}

TEST_F(Colocated, ResultTreesWithMapsAndVectorsKeepTheirStructure) {
  auto f = co::colocated(nested_of);
  expect_nested(f(x), 1);  // learns specs and structure
  expect_nested(f(x), 1);  // asynchronous, rebuilt from the learned structure
  EXPECT_EQ(f.out_spec_discoveries(), 1u);
  // With out_specs_fn the structure of a result holding a map is still learned once (the
  // specs alone do not name the keys); a fixed structure needs no call.
  auto g = f.specialize({.out_specs_fn = [](const co::Specs& in) { return co::Specs(3, in[0]); }});
  expect_nested(g(x), 1);
  expect_nested(g(x), 1);
  EXPECT_EQ(g.out_spec_discoveries(), 1u);
  auto pair = co::colocated([](const ts::Array& a) { return std::pair{a, std::array<ts::Array, 2>{a, a + 1}}; })
                  .specialize({.out_specs_fn = [](const co::Specs& in) { return co::Specs(3, in[0]); }});
  EXPECT_EQ(pair(x).second[1].item<int>(), 2);
  EXPECT_EQ(pair.out_spec_discoveries(), 0u);
  // Vectors of any size, inside other containers; map and vector arguments.
  auto h = co::colocated([](const std::map<std::string, ts::Array>& in) {
    std::vector<ts::Array> parts;
    for (const auto& [k, v] : in) parts.push_back(v * int(k.size()));
    return std::make_tuple(parts, std::map<std::string, ts::Array>{{"n", in.begin()->second}});
  });
  auto out = h(std::map<std::string, ts::Array>{{"a", x}, {"bbb", x}});
  ASSERT_EQ(std::get<0>(out).size(), 2u);
  EXPECT_EQ(std::get<0>(out)[1].item<int>(), 3);
  EXPECT_EQ(std::get<1>(out).at("n").item<int>(), 1);
}

TEST_F(Colocated, AResultStructureThatChangesForTheSameSpecsFailsTheOutputs) {
  std::atomic<int> calls = 0;
  auto f = co::colocated([&](const ts::Array& a) {
    return std::map<std::string, ts::Array>{{"k" + std::to_string(calls++), a}};
  });
  EXPECT_EQ(f(x).count("k0"), 1u);
  auto second = f(x);  // asynchronous: rebuilt with the learned key "k0"
  try {
    second.at("k0").block_until_ready();
    FAIL() << "expected a ValueError";
  } catch (const ts::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("tree structure '{2:k1*}'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'{2:k0*}'"), std::string::npos) << e.what();
  }
}

}  // namespace
