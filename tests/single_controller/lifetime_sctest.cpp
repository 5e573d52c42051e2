// Lifetimes of what workers keep for the driver (docs/single_controller.md "Freeing"): the
// programs, prepared colocated calls and pipelines a driver ships are forgotten by the
// workers when the driver's objects die, so a driver that makes many one-off programs does
// not grow its workers' memory. CTest runs these alone as `single_controller_lifetimes`
// (mpirun -np 3: a driver and 2 workers).
#include <gtest/gtest.h>

#include <cstdio>

#include "distributed/controller.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace ctl = tessel::distributed::controller;
namespace co = tessel::colocated;
namespace pp = tessel::pipeline;

namespace {

ts::Array plus_two(const ts::Array& x) { return x + 2; }
co::Specs same_specs(const co::Specs& in) { return in; }

class WorkerLifetimes : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!ctl::is_driver() || ts::process_count() < 3) GTEST_SKIP() << "needs mpirun -np 3 (a driver and 2 workers)";
    workers_ = ts::distributed::worker_devices();
    worker_ = workers_[0].process_index();
  }
  std::vector<ts::Device> workers_;
  int worker_ = 1;
};

// 10,000 one-off jitted programs, each run once on a worker: the worker keeps a bounded
// number of programs (without forgetting it would keep all 10,000), and its resident
// memory stops growing once its caches are full.
TEST_F(WorkerLifetimes, OneOffProgramsAreForgotten) {
  constexpr int kPrograms = 10000, kWarm = 1000;
  ts::Array x = ts::device_put(ts::Array(std::vector<float>{1, 2, 3, 4}, {4}), workers_[0]);
  const ctl::WorkerStats start = ctl::worker_stats(worker_);
  ctl::WorkerStats warm;
  uint64_t most_objects = 0;
  for (int i = 0; i < kPrograms; ++i) {
    {
      auto f = ts::jit([](const ts::Array& a) { return a * 2.0f + 1.0f; });  // a new program each time
      ts::Array y = f(x);
      if (i % 500 == 499) {
        EXPECT_FLOAT_EQ(y.to_vector<float>()[3], 9.0f) << "program " << i;
      }
    }
    if (i % 500 == 499) {
      const ctl::WorkerStats now = ctl::worker_stats(worker_);
      most_objects = std::max(most_objects, now.objects);
      if (i + 1 == kWarm) warm = now;
    }
  }
  const ctl::WorkerStats end = ctl::worker_stats(worker_);
  std::printf("[ lifetimes ] worker objects: %llu at start, at most %llu, %llu at the end; resident %.1f MiB after "
              "%d programs, %.1f MiB after %d\n",
              (unsigned long long)start.objects, (unsigned long long)most_objects, (unsigned long long)end.objects,
              double(warm.resident_bytes) / (1 << 20), kWarm, double(end.resident_bytes) / (1 << 20), kPrograms);
  // The program of the last jit is forgotten with the next program shipped; nothing else stays.
  EXPECT_LE(end.objects, start.objects + 2);
  EXPECT_LE(most_objects, start.objects + 2);
  EXPECT_EQ(end.arrays, start.arrays);
  // Kept, the 9,000 programs after the first 1,000 grow the worker by about 10 MiB (measured);
  // forgotten, its memory stays put.
  EXPECT_LT(double(end.resident_bytes) - double(warm.resident_bytes), 5.0 * (1 << 20));
}

// One-off colocated callables: each prepares its call once (its frame kept by the worker);
// the frame goes when the callable does.
TEST_F(WorkerLifetimes, ColocatedCallFramesAreForgotten) {
  ts::Array x = ts::device_put(ts::Array(1), workers_[0]);
  const ctl::WorkerStats start = ctl::worker_stats(worker_);
  for (int i = 0; i < 2000; ++i) {
    auto f = co::colocated(plus_two).specialize({.out_specs_fn = same_specs});
    ts::Array y = f(x);
    if (i % 500 == 0) {
      EXPECT_EQ(y.item<int>(), 3);
    }
  }
  // Kept, the frames would be 2,000 more (fewer is fine: an earlier test's leftovers may go).
  const ctl::WorkerStats end = ctl::worker_stats(worker_);
  EXPECT_LE(end.objects, start.objects);
  EXPECT_EQ(end.arrays, start.arrays);
}

// What the driver drops leaves the worker: small results (their memory freed while the
// worker waits for the next message, their table entries reused) and large arrays (freed
// at once). 1,000 calls through one callable, each result dropped; then 40 arrays of 4 MiB
// put and dropped, 160 MiB had they stayed.
TEST_F(WorkerLifetimes, DroppedArraysLeaveTheWorker) {
  ts::Array x = ts::device_put(ts::Array(1), workers_[0]);
  auto f = co::colocated(plus_two).specialize({.out_specs_fn = same_specs});
  const ctl::WorkerStats start = ctl::worker_stats(worker_);
  for (int i = 0; i < 1000; ++i) {
    ts::Array y = f(x);
    if (i % 100 == 0) {
      EXPECT_EQ(y.item<int>(), 3) << "call " << i;
    }
  }
  const ctl::WorkerStats small = ctl::worker_stats(worker_);
  EXPECT_EQ(small.arrays, start.arrays);
  for (int i = 0; i < 40; ++i) {
    ts::Array big = ts::device_put(ts::full({1 << 20}, float(i)), workers_[0]);
    EXPECT_EQ((big * 2.0f).to_vector<float>()[12345], 2.0f * float(i)) << "array " << i;
  }
  const ctl::WorkerStats end = ctl::worker_stats(worker_);
  EXPECT_EQ(end.arrays, start.arrays);
  EXPECT_LT(double(end.resident_bytes) - double(small.resident_bytes), 64.0 * (1 << 20));
}

// A pipeline's stages and instruction stream are dropped by every worker once the driver's
// pipelined function is gone.
TEST_F(WorkerLifetimes, PipelinesAreForgotten) {
  const int W = ts::process_count() - 1;
  pp::RemoteMpmdMesh mesh(W, {1}, {"model"});
  auto loss = [](const std::vector<ts::Array>& w, const ts::Array& x) {
    ts::Array h = ts::tanh(ts::matmul(x, w[0]));
    h = pp::enter_stage(h);
    return ts::mean(ts::tanh(ts::matmul(h, w[1])));
  };
  auto step = [&](const std::vector<ts::Array>& w, const ts::Array& x) {
    auto [l, g] = ts::value_and_grad(loss)(w, x);
    return std::make_tuple(std::vector<ts::Array>{w[0] - 0.1f * g[0], w[1] - 0.1f * g[1]}, l);
  };
  std::vector<ts::Array> w = {ts::ones({4, 4}, ts::f32) * 0.1f, ts::ones({4, 4}, ts::f32) * 0.2f};
  ts::Array x = ts::ones({8, 4}, ts::f32);
  std::vector<uint64_t> start;
  for (int p = 1; p <= W; ++p) start.push_back(ctl::worker_stats(p).objects);
  for (int i = 0; i < 8; ++i) {
    pp::PipelineOptions opts;
    opts.num_microbatches = 2;
    opts.batch_argnums = {1};
    auto pipelined = pp::pipelined(step, mesh, opts);
    auto [w_new, l] = pipelined(w, x);
    l.block_until_ready();
    EXPECT_GE(ctl::worker_stats(1).objects, start[0] + 1);  // kept while the pipeline lives
  }
  for (int p = 1; p <= W; ++p) EXPECT_LE(ctl::worker_stats(p).objects, start[size_t(p - 1)]) << "worker " << p;
}

}  // namespace

TESSEL_REGISTER_COLOCATED(plus_two);
