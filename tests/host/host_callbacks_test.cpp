// Host callbacks (include/tessel/host.h): id_tap / id_print / call / pure_callback /
// io_callback / debug::* eagerly, under jit, control flow, jvp/grad, vmap and checkpoint;
// ordering, errors, re-entrancy (callbacks that run tessel ops) and back-pressure of the
// receiver queue (HostCallbackBackPressure runs again as its own CTest with a 64-byte queue).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "core/thread.h"
#include "runtime/host_callbacks.h"
#include "tessel/tessel.h"

namespace {

namespace ts = tessel;
namespace th = tessel::host;

std::vector<float> floats(const ts::Array& a) { return a.astype(ts::f32).to_vector<float>(); }
ts::Array f32s(std::vector<float> v) { return ts::Array(v); }

/// Every test leaves no pending callback and no unreported callback exception behind.
class HostCallbacks : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_NO_THROW(th::barrier_wait("setup")); }
  void TearDown() override { EXPECT_NO_THROW(th::barrier_wait("teardown")); }
};

// ==================================== id_tap ====================================

TEST_F(HostCallbacks, IdTapEagerFiresAndReturnsArg) {
  std::vector<std::vector<float>> seen;
  th::Transforms seen_transforms = {{"sentinel", {}}};
  ts::Array x = f32s({1, 2, 3});
  ts::Array y = th::id_tap(
      [&](const ts::Array& a, const th::Transforms& t) {
        seen.push_back(floats(a));
        seen_transforms = t;
      },
      x);
  EXPECT_EQ(floats(y), (std::vector<float>{1, 2, 3}));
  th::barrier_wait();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], (std::vector<float>{1, 2, 3}));
  EXPECT_TRUE(seen_transforms.empty());
}

TEST_F(HostCallbacks, IdTapWithResultReturnsResult) {
  std::vector<float> seen;
  ts::Array x = f32s({1, 2}), r = f32s({7, 8, 9});
  ts::Array y = th::id_tap([&](const ts::Array& a, const th::Transforms&) { seen = floats(a); }, x, r);
  EXPECT_EQ(floats(y), (std::vector<float>{7, 8, 9}));
  auto f = ts::jit([&](const ts::Array& a, const ts::Array& b) {
    return th::id_tap([&](const ts::Array& v, const th::Transforms&) { seen = floats(v); }, a * 2.0f, b + 1.0f);
  });
  EXPECT_EQ(floats(f(x, r)), (std::vector<float>{8, 9, 10}));
  th::barrier_wait();
  EXPECT_EQ(seen, (std::vector<float>{2, 4}));
}

TEST_F(HostCallbacks, IdTapUnderJitUsedAndUnused) {
  std::vector<std::vector<float>> used, unused;
  auto f = ts::jit([&](const ts::Array& x) {
    th::id_tap([&](const ts::Array& a, const th::Transforms&) { unused.push_back(floats(a)); }, x + 10.0f);
    ts::Array y = th::id_tap([&](const ts::Array& a, const th::Transforms&) { used.push_back(floats(a)); }, x * 2.0f);
    return y + 1.0f;
  });
  EXPECT_EQ(floats(f(f32s({1, 2}))), (std::vector<float>{3, 5}));
  EXPECT_EQ(floats(f(f32s({3, 4}))), (std::vector<float>{7, 9}));
  th::barrier_wait();
  EXPECT_EQ(used, (std::vector<std::vector<float>>{{2, 4}, {6, 8}}));
  EXPECT_EQ(unused, (std::vector<std::vector<float>>{{11, 12}, {13, 14}}));
}

TEST_F(HostCallbacks, IdTapTreeArgument) {
  std::vector<float> a_seen, b_seen;
  auto f = ts::jit([&](const ts::Array& a, const ts::Array& b) {
    auto t = th::id_tap(
        [&](const std::tuple<ts::Array, ts::Array>& v, const th::Transforms&) {
          a_seen = floats(std::get<0>(v));
          b_seen = floats(std::get<1>(v));
        },
        std::make_tuple(a, b * 3.0f));
    return std::get<0>(t) + std::get<1>(t);
  });
  EXPECT_EQ(floats(f(f32s({1}), f32s({2, 3}))), (std::vector<float>{7, 10}));
  th::barrier_wait();
  EXPECT_EQ(a_seen, (std::vector<float>{1}));
  EXPECT_EQ(b_seen, (std::vector<float>{6, 9}));
}

TEST_F(HostCallbacks, IdTapWithDevice) {
  std::string device;
  auto f = ts::jit([&](const ts::Array& x) {
    return th::id_tap([&](const ts::Array&, const th::Transforms&, const ts::Device& d) { device = d.to_string(); },
                      x, th::TapOptions{.tap_with_device = true});
  });
  f(f32s({1})).block_until_ready();
  th::barrier_wait();
  EXPECT_EQ(device, ts::Array(f32s({1})).device().to_string());
}

// =================================== ordering ===================================

TEST_F(HostCallbacks, OrderInsideForiLoop) {
  std::vector<int> counters;
  std::vector<float> carries;
  auto f = ts::jit([&](const ts::Array& x) {
    return ts::fori_loop(0, 6, [&](const ts::Array& i, const ts::Array& c) {
      th::id_tap([&](const ts::Array& v, const th::Transforms&) { counters.push_back(v.item<int32_t>()); }, i);
      ts::Array next = c + 1.0f;
      th::id_tap([&](const ts::Array& v, const th::Transforms&) { carries.push_back(v.item<float>()); }, next);
      return next;
    }, x);
  });
  EXPECT_EQ(f(ts::Array(0.5f)).item<float>(), 6.5f);
  th::barrier_wait();
  EXPECT_EQ(counters, (std::vector<int>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(carries, (std::vector<float>{1.5f, 2.5f, 3.5f, 4.5f, 5.5f, 6.5f}));
}

TEST_F(HostCallbacks, OrderInsideDynamicForiLoopAndWhileLoop) {
  std::vector<int> seen;
  auto tap = [&](const ts::Array& v, const th::Transforms&) { seen.push_back(v.item<int32_t>()); };
  auto f = ts::jit([&](const ts::Array& n) {
    ts::Array a = ts::fori_loop(ts::Array(ts::Scalar(int32_t(0))), n, [&](const ts::Array& i, const ts::Array& c) {
      th::id_tap(tap, i);
      return c + i;
    }, ts::Array(ts::Scalar(int32_t(0))));
    using C = std::tuple<ts::Array, ts::Array>;
    C w = ts::while_loop([&](const C& c) { return std::get<0>(c) < n; },
                         [&](const C& c) {
                           th::id_tap(tap, std::get<0>(c) + 100);
                           return C(std::get<0>(c) + 1, std::get<1>(c) * 2);
                         },
                         C(ts::Array(ts::Scalar(int32_t(0))), ts::Array(ts::Scalar(int32_t(1)))));
    return std::make_tuple(a, std::get<1>(w));
  });
  auto [sum, pow2] = f(ts::Array(ts::Scalar(int32_t(4))));
  EXPECT_EQ(sum.item<int32_t>(), 6);
  EXPECT_EQ(pow2.item<int32_t>(), 16);
  th::barrier_wait();
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 3, 100, 101, 102, 103}));
}

TEST_F(HostCallbacks, OrderInsideScan) {
  std::vector<std::pair<float, float>> seen;
  auto f = ts::jit([&](const ts::Array& xs) {
    return ts::scan(
               [&](const ts::Array& c, const ts::Array& x) {
                 th::id_tap(
                     [&](const std::tuple<ts::Array, ts::Array>& v, const th::Transforms&) {
                       seen.emplace_back(std::get<0>(v).item<float>(), std::get<1>(v).item<float>());
                     },
                     std::make_tuple(c, x));
                 return std::make_pair(c + x, c * x);
               },
               ts::Array(0.0f), xs)
        .first;
  });
  EXPECT_EQ(f(f32s({1, 2, 3, 4})).item<float>(), 10.0f);
  th::barrier_wait();
  EXPECT_EQ(seen, (std::vector<std::pair<float, float>>{{0, 1}, {1, 2}, {3, 3}, {6, 4}}));
}

TEST_F(HostCallbacks, OrderInBothBranchesOfCond) {
  std::vector<std::string> seen;
  auto f = ts::jit([&](const ts::Array& x) {
    th::id_tap([&](const ts::Array& v, const th::Transforms&) { seen.push_back("before " + v.to_string()); }, x);
    ts::Array y = ts::cond(
        x > 0.0f,
        [&](const ts::Array& a) {
          return th::id_tap([&](const ts::Array& v, const th::Transforms&) { seen.push_back("true " + v.to_string()); },
                            a * 2.0f);
        },
        [&](const ts::Array& a) {
          return th::id_tap(
              [&](const ts::Array& v, const th::Transforms&) { seen.push_back("false " + v.to_string()); }, a - 1.0f);
        },
        x);
    th::id_tap([&](const ts::Array& v, const th::Transforms&) { seen.push_back("after " + v.to_string()); }, y);
    return y;
  });
  EXPECT_EQ(f(ts::Array(3.0f)).item<float>(), 6.0f);
  EXPECT_EQ(f(ts::Array(-3.0f)).item<float>(), -4.0f);
  th::barrier_wait();
  EXPECT_EQ(seen, (std::vector<std::string>{"before 3.", "true 6.", "after 6.", "before -3.", "false -4.",
                                            "after -4."}));
}

TEST_F(HostCallbacks, OrderAcrossJitCallsAndEagerTaps) {
  std::vector<int> seen;
  auto tap = [&](const ts::Array& v, const th::Transforms&) { seen.push_back(int(v.item<float>())); };
  auto f = ts::jit([&](const ts::Array& x) { return th::id_tap(tap, x) + 0.0f; });
  std::vector<int> want;
  for (int k = 0; k < 20; ++k) {
    if (k % 3 == 0) th::id_tap(tap, ts::Array(float(k)));  // eager, between the jit calls
    else f(ts::Array(float(k)));
    want.push_back(k);
  }
  th::barrier_wait();
  EXPECT_EQ(seen, want);
}

// ============================== jvp / grad / vmap ==============================

TEST_F(HostCallbacks, JvpAndGradPassOnlyPrimalsOnce) {
  std::vector<std::vector<float>> seen;
  std::vector<th::Transforms> transforms;
  auto f = [&](const ts::Array& x) {
    ts::Array y = th::id_tap(
        [&](const ts::Array& v, const th::Transforms& t) {
          seen.push_back(floats(v));
          transforms.push_back(t);
        },
        x * x);
    return ts::sum(y * 3.0f);
  };
  ts::Array x = f32s({1, 2});
  auto [y, t] = ts::jvp(f, x, f32s({1, 1}));
  EXPECT_EQ(y.item<float>(), 15.0f);
  EXPECT_EQ(t.item<float>(), 18.0f);
  th::barrier_wait();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], (std::vector<float>{1, 4}));
  EXPECT_TRUE(transforms[0].empty());

  seen.clear();
  transforms.clear();
  EXPECT_EQ(floats(ts::grad(f)(x)), (std::vector<float>{6, 12}));
  th::barrier_wait();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], (std::vector<float>{1, 4}));
  EXPECT_TRUE(transforms[0].empty());

  seen.clear();
  EXPECT_EQ(floats(ts::jit(ts::grad(f))(x)), (std::vector<float>{6, 12}));
  th::barrier_wait();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], (std::vector<float>{1, 4}));
}

TEST_F(HostCallbacks, VmapTapsOnceWithBatchTransform) {
  int calls = 0;
  std::vector<int64_t> shape;
  th::Transforms transforms;
  auto f = ts::vmap([&](const ts::Array& x) {
    return th::id_tap(
        [&](const ts::Array& v, const th::Transforms& t) {
          ++calls;
          shape = v.shape();
          transforms = t;
        },
        x * 2.0f);
  });
  ts::Array xs = ts::Array(std::vector<float>{1, 2, 3, 4, 5, 6}, {3, 2});
  EXPECT_EQ(floats(f(xs)), (std::vector<float>{2, 4, 6, 8, 10, 12}));
  th::barrier_wait();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(transforms, (th::Transforms{{"batch", {0}}}));
  EXPECT_EQ(th::to_string(transforms), "[('batch', {'batch_dims': (0,)})]");
}

TEST_F(HostCallbacks, VmapUnbatchedLeafIsNone) {
  int calls = 0;
  std::vector<int64_t> shape_a, shape_b;
  th::Transforms transforms;
  auto f = ts::jit(ts::vmap(
      [&](const ts::Array& a, const ts::Array& b) {
        th::id_tap(
            [&](const std::tuple<ts::Array, ts::Array>& v, const th::Transforms& t) {
              ++calls;
              shape_a = std::get<0>(v).shape();
              shape_b = std::get<1>(v).shape();
              transforms = t;
            },
            std::make_tuple(a, b));
        return a + b;
      },
      {0, ts::none}));
  ts::Array xs = ts::Array(std::vector<float>{1, 2, 3, 4, 5, 6}, {3, 2});
  EXPECT_EQ(floats(f(xs, f32s({10, 20}))), (std::vector<float>{11, 22, 13, 24, 15, 26}));
  th::barrier_wait();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(shape_a, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(shape_b, (std::vector<int64_t>{2}));
  EXPECT_EQ(transforms, (th::Transforms{{"batch", {0, std::nullopt}}}));
  EXPECT_EQ(th::to_string(transforms), "[('batch', {'batch_dims': (0, None)})]");
}

TEST_F(HostCallbacks, VmapOfVmapRecordsTwoTransforms) {
  int calls = 0;
  std::vector<int64_t> shape;
  th::Transforms transforms;
  auto f = ts::vmap(ts::vmap([&](const ts::Array& x) {
    return th::id_tap(
        [&](const ts::Array& v, const th::Transforms& t) {
          ++calls;
          shape = v.shape();
          transforms = t;
        },
        x + 1.0f);
  }));
  ts::Array xs = ts::Array(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(floats(f(xs)), (std::vector<float>{2, 3, 4, 5, 6, 7}));
  th::barrier_wait();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(shape, (std::vector<int64_t>{2, 3}));
  ASSERT_EQ(transforms.size(), 2u) << th::to_string(transforms);
  EXPECT_EQ(transforms[0].name, "batch");
  EXPECT_EQ(transforms[1].name, "batch");
  EXPECT_EQ(transforms[0].batch_dims.size(), 1u);
  EXPECT_EQ(transforms[1].batch_dims.size(), 1u);
}

TEST_F(HostCallbacks, CheckpointTapFiresInForwardAndRecompute) {
  std::vector<std::vector<float>> seen;
  auto inner = ts::checkpoint([&](const ts::Array& a) {
    ts::Array b = th::id_tap([&](const ts::Array& v, const th::Transforms&) { seen.push_back(floats(v)); }, a * 2.0f);
    return ts::sin(b);
  });
  auto loss = [&](const ts::Array& x) { return ts::sum(inner(x)); };
  ts::Array x = f32s({0.5f, 1.0f});
  std::vector<float> g = floats(ts::grad(loss)(x));
  th::barrier_wait();
  EXPECT_EQ(seen, (std::vector<std::vector<float>>{{1, 2}, {1, 2}}));
  EXPECT_NEAR(g[0], 2 * std::cos(1.0f), 1e-5);
  EXPECT_NEAR(g[1], 2 * std::cos(2.0f), 1e-5);

  seen.clear();
  ts::jit(ts::grad(loss))(x).block_until_ready();
  th::barrier_wait();
  EXPECT_EQ(seen.size(), 2u);
}

// ================================== exceptions ==================================

TEST_F(HostCallbacks, TapExceptionReportedByBarrierWaitOnce) {
  auto f = ts::jit([&](const ts::Array& x) {
    th::id_tap([](const ts::Array&, const th::Transforms&) { throw std::runtime_error("tap says boom 42"); }, x,
               th::TapOptions{.name = "boomer"});
    return x * 2.0f;
  });
  ts::Array y = f(f32s({1, 2}));
  EXPECT_EQ(floats(y), (std::vector<float>{2, 4}));  // the computation is intact
  try {
    th::barrier_wait("after boom");
    ADD_FAILURE() << "barrier_wait did not throw";
  } catch (const th::CallbackException& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("tap says boom 42"), std::string::npos) << msg;
    EXPECT_NE(msg.find("boomer"), std::string::npos) << msg;
  }
  EXPECT_NO_THROW(th::barrier_wait());
  EXPECT_EQ(floats(f(f32s({3}))), (std::vector<float>{6}));
  EXPECT_THROW(th::barrier_wait(), th::CallbackException);
}

// A synchronous callback without results has no result whose read could report its failure:
// barrier_wait reports it, eagerly and under jit (where the program's results fail too).
TEST_F(HostCallbacks, ResultlessIoCallbackFailureReachesBarrierWait) {
  ts::io_callback([](const ts::Array&) { throw std::runtime_error("no result carries 17"); }, ts::none, f32s({1}),
                  {.ordered = true});
  try {
    th::barrier_wait();
    ADD_FAILURE() << "barrier_wait did not throw";
  } catch (const th::CallbackException& e) {
    EXPECT_NE(std::string(e.what()).find("no result carries 17"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(th::barrier_wait());
  auto f = ts::jit([](const ts::Array& x) {
    ts::io_callback([](const ts::Array&) { throw std::runtime_error("jitted 18"); }, ts::none, x);
    return x + 1.0f;
  });
  ts::Array y = f(f32s({1}));
  EXPECT_THROW(y.block_until_ready(), ts::Error);
  EXPECT_THROW(th::barrier_wait(), th::CallbackException);
}

// ===================================== call =====================================

ts::Array doubled_on_host(const ts::Array& a) {
  std::vector<float> v = a.to_vector<float>();
  for (float& e : v) e *= 2;
  return ts::Array(v, a.shape());
}

TEST_F(HostCallbacks, CallReturnsHostResultInsideJit) {
  int calls = 0;
  auto f = ts::jit([&](const ts::Array& x) {
    ts::Array y = th::call(
        [&](const ts::Array& a) {
          ++calls;
          return doubled_on_host(a);
        },
        x + 1.0f, {.result_shape = ts::ShapeDtype({3}, ts::f32)});
    return y - 1.0f;
  });
  EXPECT_EQ(floats(f(f32s({1, 2, 3}))), (std::vector<float>{3, 5, 7}));
  EXPECT_EQ(calls, 1);
  // Eagerly too.
  ts::Array e = th::call(doubled_on_host, f32s({4}), {.result_shape = ts::ShapeDtype({1}, ts::f32)});
  EXPECT_EQ(floats(e), (std::vector<float>{8}));
}

/// The message of the tessel::Error that computing and reading `run()` throws ("" if none).
template <class F> std::string error_of(F run) {
  try {
    ts::Array r = run();
    r.block_until_ready();
    (void)r.to_vector<float>();
  } catch (const ts::Error& e) {
    return e.what();
  }
  return "";
}

TEST_F(HostCallbacks, CallWrongShapeOrDtypeFailsTheComputation) {
  auto wrong_shape = ts::jit([](const ts::Array& x) {
    return th::call([](const ts::Array&) { return ts::Array(std::vector<float>{1, 2, 3, 4}); }, x,
                    {.result_shape = ts::ShapeDtype({3}, ts::f32), .name = "shape_cb"}) +
           1.0f;
  });
  std::string msg = error_of([&] { return wrong_shape(f32s({1, 2, 3})); });
  EXPECT_NE(msg.find("shape_cb"), std::string::npos) << msg;
  EXPECT_NE(msg.find("f32[4]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("f32[3]"), std::string::npos) << msg;

  auto wrong_dtype = ts::jit([](const ts::Array& x) {
    return th::call([](const ts::Array&) { return ts::Array(std::vector<int32_t>{1, 2, 3}); }, x,
                    {.result_shape = ts::ShapeDtype({3}, ts::f32), .name = "dtype_cb"});
  });
  msg = error_of([&] { return wrong_dtype(f32s({1, 2, 3})); });
  EXPECT_NE(msg.find("dtype_cb"), std::string::npos) << msg;
  EXPECT_NE(msg.find("i32[3]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("f32[3]"), std::string::npos) << msg;

  // The process goes on and the next computation works.
  auto ok = ts::jit([](const ts::Array& x) { return x * 3.0f; });
  EXPECT_EQ(floats(ok(f32s({1, 2}))), (std::vector<float>{3, 6}));
}

TEST_F(HostCallbacks, CallThrowingFailsTheComputationWithItsMessage) {
  auto f = ts::jit([](const ts::Array& x) {
    return th::call([](const ts::Array&) -> ts::Array { throw std::runtime_error("no host for you 17"); }, x,
                    {.result_shape = ts::ShapeDtype({2}, ts::f32), .name = "thrower"});
  });
  std::string msg = error_of([&] { return f(f32s({1, 2})); });
  EXPECT_NE(msg.find("no host for you 17"), std::string::npos) << msg;
  EXPECT_NE(msg.find("thrower"), std::string::npos) << msg;
  // Eagerly as well.
  msg = error_of([&] {
    return th::call([](const ts::Array&) -> ts::Array { throw std::runtime_error("eager no 18"); }, f32s({1}),
                    {.result_shape = ts::ShapeDtype({1}, ts::f32)});
  });
  EXPECT_NE(msg.find("eager no 18"), std::string::npos) << msg;
  auto g = ts::jit([](const ts::Array& x) {
    return th::call(doubled_on_host, x, {.result_shape = ts::ShapeDtype({2}, ts::f32)});
  });
  EXPECT_EQ(floats(g(f32s({1, 2}))), (std::vector<float>{2, 4}));
}

TEST_F(HostCallbacks, CallUnderVmapOncePerElement) {
  std::atomic<int> calls = 0;
  std::vector<std::vector<int64_t>> shapes;
  auto f = ts::jit(ts::vmap([&](const ts::Array& x) {
    return th::call(
        [&](const ts::Array& a) {
          ++calls;
          shapes.push_back(a.shape());
          return doubled_on_host(a);
        },
        x, {.result_shape = ts::ShapeDtype({2}, ts::f32)});
  }));
  ts::Array xs = ts::Array(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}, {4, 2});
  EXPECT_EQ(floats(f(xs)), (std::vector<float>{2, 4, 6, 8, 10, 12, 14, 16}));
  EXPECT_EQ(calls.load(), 4);
  EXPECT_EQ(shapes, (std::vector<std::vector<int64_t>>(4, {2})));
}

TEST_F(HostCallbacks, JvpOfCallNamesCustomJvp) {
  auto f = [](const ts::Array& x) {
    return ts::sum(th::call(doubled_on_host, x, {.result_shape = ts::ShapeDtype({2}, ts::f32), .name = "nodiff"}));
  };
  try {
    (void)ts::jvp(f, f32s({1, 2}), f32s({1, 1}));
    ADD_FAILURE() << "jvp of call did not throw";
  } catch (const ts::NotImplementedError& e) {
    EXPECT_NE(std::string(e.what()).find("custom_jvp"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ts::grad(f)(f32s({1, 2})), ts::NotImplementedError);
}

// ================================= re-entrancy =================================

TEST_F(HostCallbacks, CallRunningTesselOpsDoesNotDeadlock) {
  auto inner = ts::jit([](const ts::Array& a) { return a + 100.0f; });
  auto f = ts::jit([&](const ts::Array& x) {
    ts::Array a = th::call([](const ts::Array& v) { return ts::sin(v) * 2.0f; }, x,
                           {.result_shape = ts::ShapeDtype({2}, ts::f32)});
    ts::Array b = th::call([&](const ts::Array& v) { return inner(v); }, x,
                           {.result_shape = ts::ShapeDtype({2}, ts::f32)});
    return a + b;
  });
  std::vector<float> got = floats(f(f32s({0.5f, 1.0f})));
  EXPECT_NEAR(got[0], 2 * std::sin(0.5f) + 100.5f, 1e-5);
  EXPECT_NEAR(got[1], 2 * std::sin(1.0f) + 101.0f, 1e-5);
}

TEST_F(HostCallbacks, TapRunningTesselOps) {
  std::vector<float> seen;
  auto f = ts::jit([&](const ts::Array& x) {
    th::id_tap([&](const ts::Array& v, const th::Transforms&) { seen.push_back(ts::sum(ts::sin(v) * 2.0f).item<float>()); },
               x);
    th::id_tap([&](const ts::Array& v, const th::Transforms&) {
      seen.push_back(ts::jit([](const ts::Array& a) { return ts::sum(a); })(v).item<float>());
    }, x);
    return x + 1.0f;
  });
  EXPECT_EQ(floats(f(f32s({0.5f, 1.0f}))), (std::vector<float>{1.5f, 2.0f}));
  th::barrier_wait();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_NEAR(seen[0], 2 * (std::sin(0.5f) + std::sin(1.0f)), 1e-5);
  EXPECT_EQ(seen[1], 1.5f);
}

TEST_F(HostCallbacks, TapWaitingOnItsDeviceBeforeACallDoesNotDeadlock) {
  // The tap waits for the device, which is running the call that follows it: the call
  // does not wait for that tap.
  std::vector<float> sums;
  auto f = [&](const ts::Array& x) {
    th::id_tap([&](const ts::Array& a, const th::Transforms&) { sums.push_back(ts::sum(a).item<float>()); }, x);
    return th::call([](const ts::Array& a) { return ts::Array(a.to_vector<float>(), a.shape()) * 2.0f; }, x,
                    {.result_shape = x.aval()});
  };
  const ts::Array x = f32s({1.0f, 2.0f});
  EXPECT_EQ(floats(ts::jit(f)(x)), (std::vector<float>{2.0f, 4.0f}));
  EXPECT_EQ(floats(f(x)), (std::vector<float>{2.0f, 4.0f}));
  th::barrier_wait();
  EXPECT_EQ(sums, (std::vector<float>{3.0f, 3.0f}));
}

// ============================ pure / io / debug / print ============================

TEST_F(HostCallbacks, PureCallbackUnusedIsRemovedIoCallbackRuns) {
  std::atomic<int> pure_calls = 0, io_calls = 0;
  auto pure = [&](const ts::Array& a) {
    ++pure_calls;
    return doubled_on_host(a);
  };
  auto io = [&](const ts::Array& a) {
    ++io_calls;
    return doubled_on_host(a);
  };
  const ts::ShapeDtype r({2}, ts::f32);
  auto unused = ts::jit([&](const ts::Array& x) {
    ts::pure_callback(pure, r, x);
    ts::io_callback(io, r, x);
    ts::io_callback(io, r, x, {.ordered = true});
    return x + 1.0f;
  });
  EXPECT_EQ(floats(unused(f32s({1, 2}))), (std::vector<float>{2, 3}));
  th::barrier_wait();
  EXPECT_EQ(pure_calls.load(), 0);
  EXPECT_EQ(io_calls.load(), 2);

  auto used = ts::jit([&](const ts::Array& x) { return ts::pure_callback(pure, r, x) + ts::io_callback(io, r, x); });
  EXPECT_EQ(floats(used(f32s({1, 2}))), (std::vector<float>{4, 8}));
  EXPECT_EQ(pure_calls.load(), 1);
  EXPECT_EQ(io_calls.load(), 3);
}

TEST_F(HostCallbacks, DebugPrintFormatsLikeNumpy) {
  EXPECT_EQ(ts::debug::detail::format("x = {}", {ts::Array(3.0f)}), "x = 3.");
  EXPECT_EQ(ts::debug::detail::format("{} and {} and {}", {ts::Array(1.5f), f32s({1, 2})}), "1.5 and [1. 2.] and {}");
  std::ostringstream captured;
  std::streambuf* old = std::cout.rdbuf(captured.rdbuf());
  try {
    ts::debug::print("x = {}", ts::Array(3.0f));
    auto f = ts::jit([](const ts::Array& x) {
      ts::debug::print("y = {}, z = {}", x * 2.0f, x + 1.0f);
      return x;
    });
    f(ts::Array(3.0f));
    th::barrier_wait();
  } catch (...) {
    std::cout.rdbuf(old);
    throw;
  }
  std::cout.rdbuf(old);
  EXPECT_EQ(captured.str(), "x = 3.\ny = 6., z = 4.\n");
}

TEST_F(HostCallbacks, DebugCallbackGetsItsArgs) {
  std::vector<float> a_seen, b_seen;
  auto f = ts::jit([&](const ts::Array& x, const ts::Array& y) {
    ts::debug::callback(
        [&](const ts::Array& a, const ts::Array& b) {
          a_seen = floats(a);
          b_seen = floats(b);
        },
        x * 2.0f, y);
    return x + y;
  });
  EXPECT_EQ(floats(f(f32s({1, 2}), f32s({5}))), (std::vector<float>{6, 7}));
  th::barrier_wait();
  EXPECT_EQ(a_seen, (std::vector<float>{2, 4}));
  EXPECT_EQ(b_seen, (std::vector<float>{5}));
}

TEST_F(HostCallbacks, IdPrintToStream) {
  std::ostringstream out;
  auto f = ts::jit([&](const ts::Array& x) {
    return th::id_print(std::make_tuple(x, x * x), {.what = "power", .output_stream = &out});
  });
  f(ts::Array(3.0f));
  th::barrier_wait();
  EXPECT_EQ(out.str(), "what: power\n( 3. 9. )\n");
}

// =================== taps under batched predicates, per-example debug ===================
// Values recorded from JAX 0.10.2 (jax.debug.print / jax.debug.callback under jax.vmap).

/// What `run()` prints to std::cout (callbacks included: it waits for them).
template <class F> std::string printed(F run) {
  std::ostringstream captured;
  std::streambuf* old = std::cout.rdbuf(captured.rdbuf());
  try {
    run();
    th::barrier_wait();
  } catch (...) {
    std::cout.rdbuf(old);
    throw;
  }
  std::cout.rdbuf(old);
  return captured.str();
}

ts::Array i32s(std::vector<int32_t> v) { return ts::Array(v); }
ts::Array i32(int32_t v) { return ts::Array(ts::Scalar(v)); }

TEST_F(HostCallbacks, DebugPrintUnderVmapPrintsOncePerExample) {
  // jax.vmap(lambda x: jax.debug.print("x: {}", x))(jnp.arange(3))
  auto f = ts::vmap([](const ts::Array& x) {
    ts::debug::print("x: {}", x);
    return x;
  });
  EXPECT_EQ(printed([&] { f(i32s({0, 1, 2})); }), "x: 0\nx: 1\nx: 2\n");
  EXPECT_EQ(printed([&] { ts::jit(f)(i32s({0, 1, 2})); }), "x: 0\nx: 1\nx: 2\n");
  std::vector<std::vector<int32_t>> seen;
  auto g = ts::vmap([&](const ts::Array& x, const ts::Array& y) {
    ts::debug::callback([&](const ts::Array& a, const ts::Array& b) { seen.push_back({a.item<int32_t>(), b.item<int32_t>()}); },
                        x, y);
    return x;
  }, {0, ts::none});
  g(i32s({4, 5}), i32(7));
  th::barrier_wait();
  EXPECT_EQ(seen, (std::vector<std::vector<int32_t>>{{4, 7}, {5, 7}}));
}

// A while_loop whose condition depends on the mapped value: the loop runs while any example
// continues, and the body's taps run for every example, finished ones with their final carry
// (JAX does not mask them).
TEST_F(HostCallbacks, VmapOfWhileLoopWithBatchedPredicateRunsTaps) {
  using C = std::tuple<ts::Array, ts::Array>;
  auto f = [](const ts::Array& n) {
    return ts::while_loop([&](const C& c) { return std::get<0>(c) < n; },
                          [](const C& c) {
                            auto [i, acc] = c;
                            ts::debug::print("i={} acc={}", i, acc);
                            return C(i + i32(1), acc + i);
                          },
                          C(i32(0), i32(0)));
  };
  const ts::Array ns = i32s({1, 3, 2});
  // def f(n): lax.while_loop(lambda c: c[0] < n, body, (0, 0)), jax.vmap(f)(jnp.array([1, 3, 2]))
  const std::string jax_printed =
      "i=0 acc=0\ni=0 acc=0\ni=0 acc=0\ni=1 acc=0\ni=1 acc=0\ni=1 acc=0\ni=1 acc=0\ni=2 acc=1\ni=2 acc=1\n";
  for (bool jitted : {false, true}) {
    C out;
    auto batched = ts::vmap(f);
    EXPECT_EQ(printed([&] { out = jitted ? ts::jit(batched)(ns) : batched(ns); }), jax_printed) << jitted;
    EXPECT_EQ(std::get<0>(out).to_vector<int32_t>(), (std::vector<int32_t>{1, 3, 2}));
    EXPECT_EQ(std::get<1>(out).to_vector<int32_t>(), (std::vector<int32_t>{0, 3, 1}));
  }
  // id_tap sees the batched carry once per iteration, with its "batch" transform.
  std::vector<std::vector<int32_t>> seen;
  std::vector<th::Transforms> transforms;
  auto g = ts::jit(ts::vmap([&](const ts::Array& n) {
    return ts::while_loop([&](const ts::Array& i) { return i < n; },
                          [&](const ts::Array& i) {
                            th::id_tap([&](const ts::Array& v, const th::Transforms& t) {
                              seen.push_back(v.to_vector<int32_t>());
                              transforms.push_back(t);
                            }, i);
                            return i + i32(1);
                          },
                          i32(0));
  }));
  EXPECT_EQ(g(ns).to_vector<int32_t>(), (std::vector<int32_t>{1, 3, 2}));
  th::barrier_wait();
  EXPECT_EQ(seen, (std::vector<std::vector<int32_t>>{{0, 0, 0}, {1, 1, 1}, {1, 2, 2}}));
  EXPECT_EQ(transforms, std::vector<th::Transforms>(3, th::Transforms{{"batch", {0}}}));
}

TEST_F(HostCallbacks, VmapOfCondWithBatchedPredicateTapsBothBranches) {
  // lax.cond(x > 1, print "T", print "F" and double), jax.vmap over jnp.arange(4)
  auto f = ts::vmap([](const ts::Array& x) {
    return ts::cond(
        x > i32(1),
        [](const ts::Array& a) {
          ts::debug::print("T {}", a);
          return a;
        },
        [](const ts::Array& a) {
          ts::debug::print("F {}", a);
          return a * i32(2);
        },
        x);
  });
  ts::Array y;
  EXPECT_EQ(printed([&] { y = f(i32s({0, 1, 2, 3})); }), "F 0\nF 1\nF 2\nF 3\nT 0\nT 1\nT 2\nT 3\n");
  EXPECT_EQ(y.to_vector<int32_t>(), (std::vector<int32_t>{0, 2, 2, 3}));
}

// Calls must run exactly as written: under a batched predicate they stay refused (JAX
// refuses io_callback there too).
TEST_F(HostCallbacks, VmapOfWhileLoopWithBatchedPredicateRefusesCalls) {
  auto with_io = ts::vmap([](const ts::Array& n) {
    return ts::while_loop([&](const ts::Array& i) { return i < n; },
                          [](const ts::Array& i) {
                            ts::io_callback([](const ts::Array&) {}, ts::none, i);
                            return i + i32(1);
                          },
                          i32(0));
  });
  auto with_call = ts::vmap([](const ts::Array& n) {
    return ts::while_loop([&](const ts::Array& i) { return i < n; },
                          [](const ts::Array& i) {
                            return th::call([](const ts::Array& v) { return v + i32(1); }, i,
                                            {.result_shape = ts::ShapeDtype({}, ts::i32)});
                          },
                          i32(0));
  });
  auto expect_refused = [](auto&& run) {
    try {
      run(i32s({1, 2}));
      ADD_FAILURE() << "expected NotImplementedError";
    } catch (const ts::NotImplementedError& e) {
      EXPECT_NE(std::string(e.what()).find("while_loop"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("host taps"), std::string::npos) << e.what();
    }
  };
  expect_refused(with_io);
  expect_refused(with_call);
}

// ============================ results: trees, none, result= ============================

TEST_F(HostCallbacks, IdPrintWithResultReturnsResult) {
  std::ostringstream out;
  auto f = ts::jit([&](const ts::Array& x) { return th::id_print(x * 2.0f, x + 1.0f, {.what = "x", .output_stream = &out}); });
  EXPECT_EQ(floats(f(f32s({1, 2}))), (std::vector<float>{2, 3}));
  th::barrier_wait();
  EXPECT_EQ(out.str(), "what: x\n[2. 4.]\n");
}

using SD = ts::ShapeDtype;

TEST_F(HostCallbacks, CallsReturnATreeOfResults) {
  // jax.pure_callback(lambda v: (v * 2, {"s": (v + 1).sum()}),
  //                   (ShapeDtypeStruct((2,), f32), {"s": ShapeDtypeStruct((), f32)}), x)
  const auto shapes = std::tuple{SD({2}, ts::f32), std::map<std::string, SD>{{"s", SD({}, ts::f32)}}};
  using Result = std::tuple<ts::Array, std::map<std::string, ts::Array>>;
  auto host_fn = [](const ts::Array& v) {
    return Result{doubled_on_host(v), {{"s", ts::Array(ts::sum(v + 1.0f).item<float>())}}};
  };
  auto check = [](const Result& r, std::vector<float> doubled, std::vector<float> s) {
    EXPECT_EQ(floats(std::get<0>(r)), doubled);
    ASSERT_EQ(std::get<1>(r).count("s"), 1u);
    EXPECT_EQ(floats(std::get<1>(r).at("s")), s);
  };
  check(ts::jit([&](const ts::Array& x) { return ts::pure_callback(host_fn, shapes, x); })(f32s({1, 2})), {2, 4}, {5});
  check(ts::io_callback(host_fn, shapes, f32s({1, 2})), {2, 4}, {5});
  check(th::call(host_fn, f32s({1, 2}), th::CallOptions{.result_shape = shapes}), {2, 4}, {5});
  // Under vmap: once per example, each result leaf stacked.
  auto batched = ts::vmap([&](const ts::Array& x) { return ts::pure_callback(host_fn, shapes, x); });
  check(batched(ts::Array(std::vector<float>{1, 2, 3, 4}, {2, 2})), {2, 4, 6, 8}, {5, 9});
  // Vectors and pairs too.
  auto pair = ts::pure_callback([](const ts::Array& v) { return std::pair{v, std::vector<ts::Array>{v, v * 3.0f}}; },
                                std::pair{SD({1}, ts::f32), std::vector<SD>(2, SD({1}, ts::f32))}, f32s({2}));
  EXPECT_EQ(floats(pair.first), (std::vector<float>{2}));
  ASSERT_EQ(pair.second.size(), 2u);
  EXPECT_EQ(floats(pair.second[1]), (std::vector<float>{6}));
}

TEST_F(HostCallbacks, CallsWithoutResults) {
  std::vector<float> io_seen, call_seen;
  auto f = ts::jit([&](const ts::Array& x) {
    ts::io_callback([&](const ts::Array& v) { io_seen.push_back(v.item<float>()); }, ts::none, x, {.ordered = true});
    th::call([&](const ts::Array& v) { call_seen.push_back(v.item<float>()); }, x * 2.0f,
             th::CallOptions{.result_shape = ts::none});
    return x + 1.0f;
  });
  EXPECT_EQ(f(ts::Array(1.0f)).item<float>(), 2.0f);
  ts::io_callback([&](const ts::Array& v) { io_seen.push_back(v.item<float>()); }, ts::none, ts::Array(5.0f));
  auto g = ts::vmap([&](const ts::Array& x) {
    ts::io_callback([&](const ts::Array& v) { io_seen.push_back(v.item<float>()); }, ts::none, x);
    return x;
  });
  g(f32s({7, 8}));
  th::barrier_wait();
  EXPECT_EQ(io_seen, (std::vector<float>{1, 5, 7, 8}));
  EXPECT_EQ(call_seen, (std::vector<float>{2}));
}

TEST_F(HostCallbacks, CallResultOfAnotherTreeStructureFailsTheComputation) {
  const auto shapes = std::map<std::string, SD>{{"a", SD({1}, ts::f32)}};
  auto f = ts::jit([&](const ts::Array& x) {
    return ts::pure_callback([](const ts::Array& v) { return std::map<std::string, ts::Array>{{"b", v}}; }, shapes, x)
        .at("a");
  });
  std::string msg = error_of([&] { return f(f32s({1})); });
  EXPECT_NE(msg.find("pure_callback"), std::string::npos) << msg;
  EXPECT_NE(msg.find("{1:b*}"), std::string::npos) << msg;
  EXPECT_NE(msg.find("{1:a*}"), std::string::npos) << msg;
  auto g = ts::jit([&](const ts::Array& x) {
    return std::get<0>(ts::pure_callback([](const ts::Array& v) { return std::tuple{v}; },
                                         std::tuple{SD({1}, ts::f32), SD({1}, ts::f32)}, x));
  });
  msg = error_of([&] { return g(f32s({1})); });
  EXPECT_NE(msg.find("'(*)'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'(**)'"), std::string::npos) << msg;
}

TEST_F(HostCallbacks, IdPrintEmptyContainersAsHostCallbackDid) {
  // The removed jax.experimental.host_callback's pp_val, run with JAX 0.10.2's pretty printer:
  // (  ), [  ], {  }, ( (  ) ), ( [] ), { a=(  ) }.
  std::ostringstream out;
  auto print = [&](const auto& v) { th::id_print(v, {.output_stream = &out}); };
  print(std::tuple<>{});
  print(std::vector<ts::Array>{});
  print(std::map<std::string, ts::Array>{});
  print(std::tuple<std::tuple<>>{});
  print(std::tuple{ts::zeros({2, 0}, ts::f32)});
  print(std::map<std::string, std::vector<ts::Array>>{{"a", {}}});
  th::barrier_wait();
  EXPECT_EQ(out.str(), "(  )\n[  ]\n{  }\n( (  ) )\n( [] )\n{ a=[  ] }\n");
}

// ================================= back-pressure =================================
// Runs in the suite with the default queue and again as the CTest
// host_callback_back_pressure with TESSEL_HOST_CALLBACK_MAX_QUEUE_BYTES=64 (one 16-float
// tap at a time) and TESSEL_HOST_CALLBACK_SPIN_US=0 (receivers sleep at once): no tap is
// lost, order is kept, and a re-entrant tap does not deadlock.

class HostCallbackBackPressure : public HostCallbacks {
 protected:
  void SetUp() override {
    HostCallbacks::SetUp();
    if (const char* v = std::getenv("TESSEL_HOST_CALLBACK_MAX_QUEUE_BYTES")) {
      ASSERT_EQ(tessel::detail::host::max_queue_bytes(), size_t(std::atol(v)));
    }
    if (const char* v = std::getenv("TESSEL_HOST_CALLBACK_SPIN_US")) {
      ASSERT_EQ(tessel::detail::host::receiver_spin().count(), std::atol(v));
    }
  }
};

void run_many_taps(int n, std::chrono::microseconds tap_sleep) {
  std::vector<int> counters;
  std::vector<float> firsts;
  counters.reserve(size_t(n));
  auto f = ts::jit([&](const ts::Array& x) {
    return ts::fori_loop(0, n, [&](const ts::Array& i, const ts::Array& c) {
      ts::Array next = c + 1.0f;
      th::id_tap(
          [&](const std::tuple<ts::Array, ts::Array>& v, const th::Transforms&) {
            counters.push_back(std::get<0>(v).item<int32_t>());
            firsts.push_back(std::get<1>(v).to_vector<float>()[0]);
            if (tap_sleep.count()) std::this_thread::sleep_for(tap_sleep);
          },
          std::make_tuple(i, next));
      return next;
    }, x);
  });
  ts::Array y = f(ts::zeros({16}, ts::f32));
  EXPECT_EQ(floats(y)[15], float(n));
  th::barrier_wait();
  ASSERT_EQ(counters.size(), size_t(n));
  ASSERT_EQ(firsts.size(), size_t(n));
  for (int k = 0; k < n; ++k) {
    ASSERT_EQ(counters[size_t(k)], k);
    ASSERT_EQ(firsts[size_t(k)], float(k + 1));
  }
}

TEST_F(HostCallbackBackPressure, ManyTapsArriveInOrder) { run_many_taps(2000, std::chrono::microseconds(0)); }

TEST_F(HostCallbackBackPressure, ManySlowTapsArriveInOrder) { run_many_taps(2000, std::chrono::microseconds(10)); }

TEST_F(HostCallbackBackPressure, ReentrantTapUnderTinyQueue) {
  const int n = 300;
  std::vector<float> sums;
  auto f = ts::jit([&](const ts::Array& x) {
    return ts::fori_loop(0, n, [&](const ts::Array&, const ts::Array& c) {
      ts::Array next = c + 1.0f;
      th::id_tap([&](const ts::Array& v, const th::Transforms&) { sums.push_back(ts::sum(v * 2.0f).item<float>()); },
                 next);
      return next;
    }, x);
  });
  ts::Array y = f(ts::zeros({16}, ts::f32));
  EXPECT_EQ(floats(y)[0], float(n));
  th::barrier_wait();
  ASSERT_EQ(sums.size(), size_t(n));
  for (int k = 0; k < n; ++k) ASSERT_EQ(sums[size_t(k)], 32.0f * float(k + 1));
}

}  // namespace

// ================================= one core =================================
// Runs in the suite and again as the CTest host_callback_one_core under `taskset -c 0`:
// a process that may use one core never polls for taps (the polling would hold the core
// the device needs to push the next one), and taps in a loop all arrive, in order.

TEST(HostCallbackReceiver, PollsOnlyWithASecondCore) {
  const auto spin = tessel::detail::host::receiver_spin().count();
  if (tessel::detail::usable_cores() == 1) {
    EXPECT_EQ(spin, 0);
  } else if (const char* v = std::getenv("TESSEL_HOST_CALLBACK_SPIN_US")) {
    EXPECT_EQ(spin, std::atol(v));
  } else {
    EXPECT_EQ(spin, 20);  // the documented default
  }
  std::vector<int> seen;
  auto f = ts::jit([&](const ts::Array& x, const ts::Array& k) {
    th::id_tap([&](const ts::Array& n, const th::Transforms&) { seen.push_back(n.item<int32_t>()); }, k,
               {.name = "step"});
    return x * 2.0f;
  });
  ts::Array x = ts::ones({4});
  for (int k = 0; k < 50; ++k) x = f(x, ts::Array(int32_t(k)));
  EXPECT_EQ(x.to_vector<float>()[0], std::ldexp(1.0f, 50));
  th::barrier_wait();
  ASSERT_EQ(seen.size(), 50u);
  for (int k = 0; k < 50; ++k) EXPECT_EQ(seen[size_t(k)], k);
}
