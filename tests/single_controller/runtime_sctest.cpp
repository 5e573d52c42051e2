// The single-controller runtime seen from the driver: remote devices, arrays placed on
// workers' devices, jit and eager operations that run there, fetching, freeing, errors.
// CTest runs these as `mpirun -np 3` (driver + 2 workers) with 2 devices per process.
#include <gtest/gtest.h>

#include <numeric>

#include "distributed/controller.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace ctl = tessel::distributed::controller;
namespace ir = tessel::ir;

namespace {

// How many arrays worker `p` keeps (after the deletes the driver queued reach it).
uint64_t kept_on(int p) {
  std::string reply = ctl::request(p, "stats", {});
  ir::Reader r(reply, "stats");
  return r.u64();
}

std::vector<float> iota_f(size_t n, float start = 0) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

class SingleController : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!ctl::is_driver() || ts::process_count() < 3) GTEST_SKIP() << "needs mpirun -np 3 (a driver and 2 workers)";
    workers_ = ts::distributed::worker_devices();
  }
  std::vector<ts::Device> workers_;
};

TEST_F(SingleController, DevicesOfEveryProcess) {
  const int per = ts::local_device_count();
  ASSERT_EQ(ts::device_count(), per * ts::process_count());
  auto all = ts::devices();
  for (int i = 0; i < int(all.size()); ++i) {
    EXPECT_EQ(all[size_t(i)].id(), i);
    EXPECT_EQ(all[size_t(i)].process_index(), i / per);
  }
  ASSERT_EQ(int(workers_.size()), per * (ts::process_count() - 1));
  EXPECT_EQ(workers_[0].process_index(), 1);
  EXPECT_EQ(ts::distributed::mode(), ts::distributed::Mode::single_controller);
}

TEST_F(SingleController, DevicePutToAWorkerDeviceAndBack) {
  ts::Array x = ts::Array(iota_f(6), {2, 3});
  for (const ts::Device& d : workers_) {
    ts::Array y = ts::device_put(x, d);
    EXPECT_EQ(y.device(), d);
    EXPECT_EQ(y.sharding(), ts::SingleDeviceSharding(d));
    EXPECT_EQ(y.to_vector<float>(), iota_f(6));
  }
}

TEST_F(SingleController, JitRunsOnTheWorkerAndResultsStayThere) {
  ts::Device d = workers_.back();
  ts::Array x = ts::device_put(ts::Array(iota_f(8), {8}), d);
  auto f = ts::jit([](const ts::Array& a) { return ts::sin(a) * 2.0f + a; });
  ts::Array y = f(x);
  EXPECT_EQ(y.device(), d);
  ts::Array z = f(y);  // a result used again in place
  std::vector<float> want = iota_f(8);
  for (int k = 0; k < 2; ++k)
    for (float& v : want) v = std::sin(v) * 2.0f + v;
  auto got = z.block_until_ready().to_vector<float>();
  for (size_t i = 0; i < want.size(); ++i) EXPECT_FLOAT_EQ(got[i], want[i]);
  // Eager operations on remote arrays run there too.
  ts::Array e = ts::sum(x * x);
  EXPECT_FLOAT_EQ(e.item<float>(), 140.0f);
}

// A driver value in an eager operation on a worker's array travels to the worker laid out
// over the one-device mesh; the worker runs it as that array's piece (it used to crash the
// worker: its executable read the laid-out array's missing single buffer).
TEST_F(SingleController, EagerOpWithADriverScalarOnAWorker) {
  ts::Array x = ts::device_put(ts::Array(1), workers_[0]);
  for (int i = 0; i < 3; ++i) EXPECT_EQ((x + 1).item<int>(), 2);
  ts::Array v = ts::device_put(ts::Array(iota_f(4), {4}), workers_[1]);
  EXPECT_EQ((v * ts::Array(std::vector<float>{1, 2, 3, 4}, {4})).to_vector<float>(), (std::vector<float>{0, 2, 6, 12}));
}

// Messages and replies longer than what the posted receives hold (16 KiB to a worker, 4 KiB
// back) are announced and follow whole: values of sizes around both limits travel intact.
TEST_F(SingleController, LongMessagesAndRepliesTravelWhole) {
  for (size_t n : {size_t(1000), size_t(1023), size_t(1024), size_t(1025), size_t(4095), size_t(4096), size_t(4097),
                   size_t(100000)}) {
    std::vector<float> v = iota_f(n, 0.5f);
    ts::Array x = ts::device_put(ts::Array(v, {int64_t(n)}), workers_[0]);
    EXPECT_EQ(x.to_vector<float>(), v) << n;
    if (n == 100000) {  // computed on, too
      EXPECT_EQ((x * 2.0f).to_vector<float>()[n - 1], 2.0f * v[n - 1]);
    }
  }
}

TEST_F(SingleController, ShardedOverTwoWorkers) {
  ts::Mesh mesh(workers_, {int64_t(workers_.size())}, {"x"});
  ts::NamedSharding split(mesh, ts::P("x"));
  const int64_t n = int64_t(workers_.size()) * 3;
  ts::Array x = ts::device_put(ts::Array(iota_f(size_t(n)), {n}), split);
  EXPECT_EQ(x.sharding(), split);
  EXPECT_EQ(x.to_vector<float>(), iota_f(size_t(n)));
  // A reduction over the split axis needs a collective between the two workers.
  auto total = ts::jit([](const ts::Array& a) { return ts::sum(a * 2.0f); });
  EXPECT_FLOAT_EQ(total(x).item<float>(), float(n * (n - 1)));
  auto shifted = ts::jit([](const ts::Array& a) { return a + 1.0f; }, {.out_shardings = {split}});
  ts::Array y = shifted(x);
  EXPECT_EQ(y.sharding(), split);
  EXPECT_EQ(y.to_vector<float>(), iota_f(size_t(n), 1));
  // Resharding to replicated on the same mesh, then reading one piece's device.
  ts::Array r = ts::device_put(y, ts::NamedSharding(mesh, ts::P()));
  EXPECT_EQ(r.to_vector<float>(), iota_f(size_t(n), 1));
}

TEST_F(SingleController, DestroyedHandlesFreeTheWorkersArrays) {
  const int p = workers_[0].process_index();
  const uint64_t before = kept_on(p);
  {
    ts::Array x = ts::device_put(ts::Array(iota_f(4), {4}), workers_[0]);
    ts::Array y = ts::jit([](const ts::Array& a) { return a * a; })(x);
    y.block_until_ready();
    EXPECT_EQ(kept_on(p), before + 2);
  }
  EXPECT_EQ(kept_on(p), before);
}

TEST_F(SingleController, ErrorsOnTheWorkerReachTheDriver) {
  ts::Array x = ts::device_put(ts::Array(iota_f(4), {4}), workers_[0]);
  // A program holding a host callback cannot travel: the driver says so at the call.
  auto with_tap = ts::jit([](const ts::Array& a) {
    ts::host::id_print(a);
    return a + 1.0f;
  });
  EXPECT_THROW(
      {
        try {
          with_tap(x);
        } catch (const ts::ValueError& e) {
          EXPECT_NE(std::string(e.what()).find("cannot be sent to another process"), std::string::npos) << e.what();
          throw;
        }
      },
      ts::ValueError);
}

}  // namespace
