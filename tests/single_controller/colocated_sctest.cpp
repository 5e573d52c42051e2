// Colocated calls from the driver of a single-controller job: registered functions and
// classes run in the workers that own the inputs' devices; lambdas cannot go there.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "distributed/controller.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace co = tessel::colocated;
namespace ctl = tessel::distributed::controller;

namespace {

ts::Array times_ten(const ts::Array& x) { return x * 10; }
ts::Array same_array(const ts::Array& x) { return x; }

// Runs for 20 ms on the worker: long enough that another thread takes over serving.
ts::Array slowly_plus_one(const ts::Array& x) {
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return x + 1;
}

// Runs for 300 ms on the worker: another thread takes over serving meanwhile.
ts::Array sleepy_identity(const ts::Array& x) {
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  return x;
}

// 1 while the worker's server waits as for long work (ctl::serving_wait), else 0.
ts::Array serving_for_long_work(const ts::Array& x) {
  return ts::device_put(ts::Array(int(ctl::serving_wait() == ctl::Wait::long_work)), x.sharding());
}

// 1 where the argument is weakly typed on the worker (a C++ int is), else 0.
ts::Array weak_flag(const ts::Array& x) { return ts::device_put(ts::Array(int(x.weak_type())), x.sharding()); }

// The process that ran the call, as an array on the input's devices.
ts::Array process_of(const ts::Array& x) { return x * 0 + ts::process_index(); }

struct Counter {
  explicit Counter(int start) : total(start) {}
  ts::Array add(const ts::Array& x) {
    total += x.item<int>();
    return ts::device_put(ts::Array(total), x.sharding());
  }
  int total;
};

co::Specs same(const co::Specs& in) { return in; }

// JAX's `[1, (2, {"v": 3})]`: a result tree with a map, rebuilt on the driver from the
// structure the worker sends.
using Nested = std::tuple<ts::Array, std::tuple<ts::Array, std::map<std::string, ts::Array>>>;
Nested nested_of(const ts::Array& x) { return Nested{x, {x + 1, {{"v", x + 2}}}}; }

// Map and vector arguments reach the worker with their keys and sizes.
std::vector<ts::Array> scaled_by_key_length(const std::map<std::string, ts::Array>& in,
                                            const std::vector<ts::Array>& extra) {
  std::vector<ts::Array> out;
  for (const auto& [k, v] : in) out.push_back(v * int(k.size()));
  for (const auto& e : extra) out.push_back(e);
  return out;
}

}  // namespace

TESSEL_REGISTER_COLOCATED(nested_of);
TESSEL_REGISTER_COLOCATED(scaled_by_key_length);
TESSEL_REGISTER_COLOCATED(times_ten);
TESSEL_REGISTER_COLOCATED(same_array);
TESSEL_REGISTER_COLOCATED(slowly_plus_one);
TESSEL_REGISTER_COLOCATED(process_of);
TESSEL_REGISTER_COLOCATED(weak_flag);
TESSEL_REGISTER_COLOCATED(sleepy_identity);
TESSEL_REGISTER_COLOCATED(serving_for_long_work);
TESSEL_REGISTER_COLOCATED_CLASS(Counter, int);
TESSEL_REGISTER_COLOCATED_METHOD(Counter, add);

namespace {

class SingleControllerColocated : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!ctl::is_driver() || ts::process_count() < 3) GTEST_SKIP() << "needs mpirun -np 3";
    workers = ts::distributed::worker_devices();
  }
  std::vector<ts::Device> workers;
};

TEST_F(SingleControllerColocated, RunsOnTheWorkerOwningTheDevice) {
  for (const ts::Device& d : workers) {
    ts::Array x = ts::device_put(ts::Array(7), d);
    auto where = co::colocated(process_of);
    ts::Array p = where(x);
    EXPECT_EQ(p.device(), d);
    EXPECT_EQ(p.item<int>(), d.process_index());
    EXPECT_EQ(where.out_spec_discoveries(), 1u);
    EXPECT_EQ(co::colocated(times_ten).specialize({.out_specs_fn = same})(x).item<int>(), 70);
  }
}

// A value the function computed is kept on the worker as the output itself (not rebuilt
// around its buffer), and still with the output spec's aval: `x * 10` of a weak scalar is
// weak where it is computed, the output made of it is not.
TEST_F(SingleControllerColocated, ComputedResultsTakeTheOutputSpecsAval) {
  auto tens = co::colocated(times_ten).specialize({.out_specs_fn = same});
  auto weak = co::colocated(weak_flag).specialize({.out_specs_fn = same});
  for (const ts::Device& d : workers) {
    ts::Array x = ts::device_put(ts::Array(3), d);
    EXPECT_EQ(weak(x).item<int>(), 1) << "a C++ int stays weak on the worker";
    ts::Array y = tens(x);
    EXPECT_EQ(weak(y).item<int>(), 0);
    EXPECT_EQ(y.item<int>(), 30);
    ts::Array z = tens(y);
    EXPECT_EQ(weak(z).item<int>(), 0);
    EXPECT_EQ(z.item<int>(), 300);
    EXPECT_EQ(z.device(), d);
  }
}

// An input the function returns as it is becomes the output with its pieces shared, not
// copied: the output keeps its value when the input is dropped, and when the input is
// donated to a jit (which then computes into new memory, the buffer having two holders).
TEST_F(SingleControllerColocated, ReturnedInputsShareTheirPiecesSafely) {
  const ts::Device d = workers[0];
  auto identity = co::colocated(same_array).specialize({.out_specs_fn = same});
  auto doubled = ts::jit([](const ts::Array& a) { return a * 2.0f; }, {.donate_argnums = {0}});
  for (int round = 0; round < 3; ++round) {
    ts::Array out;
    {
      ts::Array in = ts::device_put(ts::Array(std::vector<float>{1, 2, 3}, {3}), d);
      out = identity(in);
      EXPECT_EQ(out.to_vector<float>(), (std::vector<float>{1, 2, 3}));
    }  // the input dropped: the worker frees its entry, the shared pieces stay with the output
    EXPECT_EQ(out.to_vector<float>(), (std::vector<float>{1, 2, 3}));
    ts::Array in = ts::device_put(ts::Array(std::vector<float>{4, 5, 6}, {3}), d);
    ts::Array shared = identity(in);
    ts::Array twice = doubled(std::move(in));  // donates the buffer `shared` holds too
    EXPECT_EQ(twice.to_vector<float>(), (std::vector<float>{8, 10, 12}));
    EXPECT_EQ(shared.to_vector<float>(), (std::vector<float>{4, 5, 6}));
    EXPECT_EQ(identity(shared).to_vector<float>(), (std::vector<float>{4, 5, 6}));
  }
}

// The worker's serving thread keeps the frame it used last, and its server the last kinds of
// message it served: calls of several signatures and callables interleaved (the kept frame
// changing at every call), a callable that died and its successor (a new frame), and reads,
// stats and a kind no handler serves (an error naming it) between them all answer right.
TEST_F(SingleControllerColocated, InterleavedSignaturesCallablesAndKindsAnswerRight) {
  const ts::Device d = workers[0];
  const int p = d.process_index();
  ts::Array i = ts::device_put(ts::Array(3), d);
  ts::Array f = ts::device_put(ts::Array(2.5f), d);
  ts::Array v = ts::device_put(ts::Array(std::vector<float>{1, 2}, {2}), d);
  auto tens = co::colocated(times_ten).specialize({.out_specs_fn = same});
  for (int round = 0; round < 3; ++round) {
    EXPECT_EQ(tens(i).item<int>(), 30);
    EXPECT_FLOAT_EQ(tens(f).item<float>(), 25.0f);
    EXPECT_EQ(tens(v).to_vector<float>(), (std::vector<float>{10, 20}));
    auto where = co::colocated(process_of).specialize({.out_specs_fn = same});  // a new frame each round
    EXPECT_EQ(where(i).item<int>(), p);
    EXPECT_EQ(tens(i).item<int>(), 30);
    try {
      ctl::request(p, "no.such.kind", {});
      ADD_FAILURE() << "a kind no handler serves was answered";
    } catch (const ts::Error& e) {
      EXPECT_NE(std::string(e.what()).find("no handler 'no.such.kind'"), std::string::npos) << e.what();
    }
    EXPECT_GE(ctl::worker_stats(p).arrays, 3u);
  }
}

// While a call that handed serving over still runs on a worker, the server there polls
// briefly and then sleeps (it does not spin on the cores that call needs); once the call
// ended, it spins again for prompt replies.
TEST_F(SingleControllerColocated, TheServerSleepsWhileLongWorkRuns) {
  auto sleepy = co::colocated(sleepy_identity).specialize({.out_specs_fn = same});
  auto mode = co::colocated(serving_for_long_work).specialize({.out_specs_fn = same});
  const ts::Device& d = workers.front();
  ts::Array x = ts::device_put(ts::Array(5), d);
  EXPECT_EQ(mode(x).item<int>(), 0) << "nothing long runs";
  // Asked from another thread (its own caller queue) while the long call runs, until seen.
  auto until = [&](int want, std::chrono::milliseconds limit) {
    int got = -1;
    std::thread asker([&] {
      const auto start = std::chrono::steady_clock::now();
      while ((got = mode(x).item<int>()) != want && std::chrono::steady_clock::now() - start < limit)
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    });
    asker.join();
    return got;
  };
  ts::Array s = sleepy(x);
  EXPECT_EQ(until(1, std::chrono::milliseconds(250)), 1) << "the server while the long call runs";
  EXPECT_EQ(s.item<int>(), 5);
  EXPECT_EQ(until(0, std::chrono::milliseconds(1000)), 0) << "the server after the long call";
}

// The worker reads each message where it arrived, in one of two buffers that take turns.
// A call that runs long on the serving thread hands serving to another thread while its
// handler still holds its message: the messages behind it (calls from another driver
// thread, which run beside it) must arrive elsewhere, and each keeps its own values.
TEST_F(SingleControllerColocated, MessagesBehindALongCallKeepTheirValues) {
  auto slow = co::colocated(slowly_plus_one).specialize({.out_specs_fn = same});
  auto quick = co::colocated(times_ten).specialize({.out_specs_fn = same});
  const ts::Device& d = workers.front();
  for (int round = 0; round < 3; ++round) {
    ts::Array s = slow(ts::device_put(ts::Array(round), d));
    std::vector<ts::Array> out;
    std::thread other([&] {  // its own caller queue: its calls do not wait for the slow one
      for (int i = 0; i < 40; ++i) out.push_back(quick(ts::device_put(ts::Array(i + 100 * round), d)));
    });
    other.join();
    for (int i = 0; i < 40; ++i) EXPECT_EQ(out[size_t(i)].item<int>(), 10 * (i + 100 * round)) << "call " << i;
    EXPECT_EQ(s.item<int>(), round + 1);
  }
}

TEST_F(SingleControllerColocated, ShardedOverBothWorkers) {
  ts::Mesh mesh(workers, {int64_t(workers.size())}, {"x"});
  ts::NamedSharding split(mesh, ts::P("x"));
  ts::Array x = ts::device_put(ts::arange(int64_t(workers.size()) * 2, ts::int32), split);
  auto f = co::colocated(times_ten);
  ts::Array y = f(x);  // learns the specs from both workers
  EXPECT_EQ(y.sharding(), split);
  std::vector<int> want;
  for (int i = 0; i < int(workers.size()) * 2; ++i) want.push_back(10 * i);
  EXPECT_EQ(y.to_vector<int>(), want);
  ts::Array z = f(y);  // asynchronous now
  EXPECT_EQ(f.out_spec_discoveries(), 1u);
  EXPECT_EQ(z.to_vector<int>()[3], 300);
  // Each worker ran the function on its own pieces.
  ts::Array who = co::colocated(process_of)(ts::device_put(ts::zeros({int64_t(workers.size())}, ts::int32), split));
  EXPECT_EQ(who.sharding(), split);
  std::vector<int> hosts;
  for (const ts::Device& d : workers) hosts.push_back(d.process_index());
  EXPECT_EQ(who.to_vector<int>(), hosts);
}

TEST_F(SingleControllerColocated, ObjectsLiveInEachWorkerAndKeepState) {
  ts::Array on1 = ts::device_put(ts::Array(1), workers.front());
  ts::Array on2 = ts::device_put(ts::Array(1), workers.back());
  auto counter = co::colocated_class<Counter>()(100);
  EXPECT_EQ(counter.call(&Counter::add, on1).item<int>(), 101);
  EXPECT_EQ(counter.call(&Counter::add, on1).item<int>(), 102);
  EXPECT_EQ(counter.call(&Counter::add, on2).item<int>(), 101) << "a second host makes its own instance";
  auto add = counter.method(&Counter::add).specialize({.out_specs_fn = same});
  EXPECT_EQ(add(on1).item<int>(), 103);
}

TEST_F(SingleControllerColocated, ResultAndArgumentTreesWithMapsAndVectors) {
  ts::Array x = ts::device_put(ts::Array(1), workers.back());
  auto f = co::colocated(nested_of);
  for (int round = 0; round < 2; ++round) {  // learned, then asynchronous
    Nested r = f(x);
    EXPECT_EQ(std::get<0>(r).item<int>(), 1);
    EXPECT_EQ(std::get<0>(std::get<1>(r)).item<int>(), 2);
    const auto& m = std::get<1>(std::get<1>(r));
    ASSERT_EQ(m.count("v"), 1u);
    EXPECT_EQ(m.at("v").item<int>(), 3);
    EXPECT_EQ(m.at("v").device(), workers.back());
  }
  EXPECT_EQ(f.out_spec_discoveries(), 1u);
  auto g = co::colocated(scaled_by_key_length);
  std::vector<ts::Array> out = g(std::map<std::string, ts::Array>{{"a", x}, {"bbb", x}}, std::vector<ts::Array>{x, x});
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].item<int>(), 1);
  EXPECT_EQ(out[1].item<int>(), 3);
  EXPECT_EQ(out[3].item<int>(), 1);
}

TEST_F(SingleControllerColocated, UnregisteredCodeCannotRunRemotely) {
  ts::Array x = ts::device_put(ts::Array(1), workers.front());
  auto lambda = co::colocated([](const ts::Array& a) { return a; });
  try {
    lambda(x);
    FAIL() << "expected a ValueError";
  } catch (const ts::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("not registered"), std::string::npos) << e.what();
  }
}

TEST_F(SingleControllerColocated, WorkerExceptionsComeBackWithTheirType) {
  ts::Array x = ts::device_put(ts::Array(1.5f), workers.front());
  auto counter = co::colocated_class<Counter>()(0);
  // Counter::add reads an int: on a float array item<int> converts, so use a bad spec instead.
  auto bad = co::colocated(times_ten).specialize(
      {.out_specs_fn = [](const co::Specs& in) { return co::Specs{co::Spec({3}, in[0].dtype, in[0].sharding)}; }});
  ts::Array y = bad(x);
  EXPECT_THROW(y.to_vector<float>(), ts::ValueError);
}

}  // namespace
