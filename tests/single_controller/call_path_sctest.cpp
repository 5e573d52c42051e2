// The per-call machinery of remote execution: how the driver waits (a pipelined step's
// results sleep after a brief poll, other replies poll for TESSEL_CONTROL_SPIN_US), and
// the worker's per-caller queues, found without a lock once known. CTest runs these under `mpirun -np 3` with the other single-controller
// tests; the lookups run in the driver's process (the same code as in a worker's).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "colocated/serial_queue.h"
#include "core/array_impl.h"
#include "distributed/controller.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace pp = tessel::pipeline;
namespace ctl = tessel::distributed::controller;
using std::chrono::microseconds;

namespace {

// A long wait polls for kLongWorkSpin only, then sleeps in steps that grow to
// kLongWorkMaxSleep; a prompt one is still polling then (its spin is the agreed 2 ms).
TEST(DriverWaits, LongWorkSleepsAfterABriefPollAndPromptRepliesSpin) {
  const auto start = std::chrono::steady_clock::now();
  ctl::Backoff prompt, long_work(ctl::Wait::long_work);
  std::this_thread::sleep_for(ctl::kLongWorkSpin + microseconds(100));
  EXPECT_FALSE(long_work.spinning());
  if (std::chrono::steady_clock::now() - start < microseconds(1500)) {  // a loaded machine may be slower
    EXPECT_TRUE(prompt.spinning()) << "TESSEL_CONTROL_SPIN_US is 2000 by default";
  }
  EXPECT_EQ(long_work.next_sleep(), microseconds(5));
  for (int i = 0; i < 6; ++i) long_work.pause();  // 5, 10, 20, 40, 80, then 100 us
  EXPECT_EQ(long_work.next_sleep(), ctl::kLongWorkMaxSleep);
  long_work.pause();
  EXPECT_EQ(long_work.next_sleep(), ctl::kLongWorkMaxSleep) << "the sleeps stop growing";
}

bool long_work_of(const ts::Array& a) {
  auto* c = ts::detail::as_concrete(a);
  return c && c->remote && ctl::long_work(c->remote->id);
}

// A pipelined step's results are read with the long wait (the workers need the cores while
// the step runs); an array a worker computes eagerly is read promptly. Both read right.
TEST(DriverWaits, PipelinedResultsAreReadWithTheLongWait) {
  if (!ctl::is_driver() || ts::process_count() < 3) GTEST_SKIP() << "needs mpirun -np 3";
  const int W = ts::process_count() - 1;
  pp::RemoteMpmdMesh mesh(W, {1}, {"model"});
  auto loss = [W](const std::vector<ts::Array>& w, const ts::Array& x) {
    ts::Array h = x;
    for (int i = 0; i < W; ++i) {
      if (i > 0) h = pp::enter_stage(h);
      h = ts::tanh(ts::matmul(h, w[size_t(i)]));
    }
    return ts::mean(h * h);
  };
  pp::PipelineOptions opts;
  opts.num_microbatches = 2;
  opts.batch_argnums = {1};
  auto step = pp::pipelined(loss, mesh, opts);
  std::vector<ts::Array> w;
  for (int i = 0; i < W; ++i) w.push_back(ts::eye(4, std::nullopt, 0, ts::f32) * 0.5f);
  ts::Array x = ts::ones({4, 4}, ts::f32);
  ts::Array l = step(w, x);
  EXPECT_TRUE(long_work_of(l));
  EXPECT_NEAR(l.item<float>(), ts::jit(loss)(w, x).item<float>(), 1e-6f);
  ts::Array on_worker = ts::device_put(ts::Array(3.0f), ts::distributed::worker_devices().front()) + 1.0f;
  EXPECT_FALSE(long_work_of(on_worker));
  EXPECT_EQ(on_worker.item<float>(), 4.0f);
  const uint64_t id = ts::detail::as_concrete(l)->remote->id;
  l = ts::Array();
  EXPECT_FALSE(ctl::long_work(id)) << "a released result is forgotten";
}

// Each thread remembers the last caller's queue it found: alternating callers and threads
// still get each caller's one queue.
TEST(WorkerLookups, EachCallerHasOneQueueWhoeverAsks) {
  namespace cd = tessel::colocated::detail;
  const uint64_t a = 1'000'001, b = 1'000'002;  // far from the ids of real caller threads
  cd::SerialQueue* qa = &cd::remote_caller_queue(a);
  cd::SerialQueue* qb = &cd::remote_caller_queue(b);
  EXPECT_NE(qa, qb);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(&cd::remote_caller_queue(a), qa);
    EXPECT_EQ(&cd::remote_caller_queue(a), qa);
    EXPECT_EQ(&cd::remote_caller_queue(b), qb);
  }
  cd::SerialQueue *from_thread_a = nullptr, *from_thread_b = nullptr;
  std::thread([&] {
    from_thread_b = &cd::remote_caller_queue(b);
    from_thread_a = &cd::remote_caller_queue(a);
  }).join();
  EXPECT_EQ(from_thread_a, qa);
  EXPECT_EQ(from_thread_b, qb);
}

}  // namespace
