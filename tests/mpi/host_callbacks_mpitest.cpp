// Host callbacks in a multi-process job: each process's taps and calls run on its own
// devices' receivers, interleaved with communication in program order.
#include <gtest/gtest.h>

#include <vector>

#include "tessel/comm.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace comm = tessel::comm;
namespace host = tessel::host;

namespace {

int rank() { return comm::world().rank(); }
int nproc() { return comm::world().size(); }

TEST(HostCallbacksMpi, TapsAroundAnAllreduceSeeEachProcessesValuesInOrder) {
  std::vector<float> seen;
  auto record = [&seen](const ts::Array& v, const host::Transforms&) { seen.push_back(v.item<float>()); };
  auto step = ts::jit([&](const ts::Array& x) {
    host::id_tap(record, x);
    ts::Array total = comm::allreduce(x, comm::SUM);
    host::id_tap(record, total);
    return total;
  });
  ts::Array x(float(rank() + 1));
  for (int k = 0; k < 3; ++k) x = step(x);
  host::barrier_wait();
  // Each step taps this process's value, then the sum over processes.
  float v = float(rank() + 1);
  const float n = float(nproc()), first_sum = float(nproc() * (nproc() + 1) / 2);
  std::vector<float> want{v, first_sum, first_sum, first_sum * n, first_sum * n, first_sum * n * n};
  EXPECT_EQ(seen, want);
}

TEST(HostCallbacksMpi, CallResultTravelsThroughCommunication) {
  auto f = ts::jit([](const ts::Array& x) {
    ts::Array doubled = host::call([](const ts::Array& a) { return a * 2.0f; }, x,
                                   {.result_shape = ts::ShapeDtype({}, ts::f32)});
    return comm::allreduce(doubled, comm::SUM);
  });
  EXPECT_FLOAT_EQ(f(ts::Array(float(rank()))).item<float>(), float(nproc() * (nproc() - 1)));
}

}  // namespace
