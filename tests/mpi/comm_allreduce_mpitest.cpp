// ts::comm::allreduce and barrier across processes: eager, jit, grad, vmap, loops.
#include <gtest/gtest.h>

#include "tessel/comm.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace comm = tessel::comm;

namespace {

int rank() { return comm::world().rank(); }
int nproc() { return comm::world().size(); }

TEST(CommAllreduce, SumEagerAndJit) {
  ts::Array x = ts::arange(4, ts::f32) + float(rank());
  const float offset = float(nproc() * (nproc() - 1) / 2);
  for (const ts::Array& y : {comm::allreduce(x, comm::SUM), ts::jit([](const ts::Array& a) {
                               return comm::allreduce(a, comm::SUM);
                             })(x)}) {
    auto v = y.to_vector<float>();
    for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(v[size_t(i)], float(nproc() * i) + offset);
  }
}

TEST(CommAllreduce, GradIsIdentityTransposeOfSum) {
  auto f = [](const ts::Array& a) { return ts::sum(comm::allreduce(a * a, comm::SUM)); };
  ts::Array x = ts::full({3}, float(rank() + 1), ts::f32);
  auto g = ts::grad(f)(x).to_vector<float>();
  for (float v : g) EXPECT_FLOAT_EQ(v, 2.0f * float(rank() + 1));
}

TEST(CommAllreduce, Float16AndBfloat16) {
  for (ts::DType d : {ts::f16, ts::bf16}) {
    ts::Array x = ts::full({5}, 1.5f, d);
    auto v = comm::allreduce(x, comm::SUM).astype(ts::f32).to_vector<float>();
    for (float e : v) EXPECT_FLOAT_EQ(e, 1.5f * float(nproc()));
  }
}

TEST(CommAllreduce, BadOpForDtypeThrowsBeforeMpi) {
  ts::Array x = ts::ones({2}, ts::f32);
  try {
    comm::allreduce(x, comm::BXOR);
    FAIL() << "expected a DTypeError";
  } catch (const ts::DTypeError& e) {
    EXPECT_NE(std::string(e.what()).find("BXOR"), std::string::npos) << e.what();
  }
}

TEST(CommBarrier, EagerAndJit) {
  comm::barrier();
  ts::jit([](const ts::Array& a) {
    comm::barrier();
    return a + 1.0f;
  })(ts::ones({1}, ts::f32)).block_until_ready();
}

}  // namespace
