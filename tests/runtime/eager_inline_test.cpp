// The eager fast path: a small operation on computed inputs runs at once on the caller's
// thread when its stream is idle (Stream::run_if_idle), and queues otherwise. Results must
// not depend on which path ran, on the per-op cache, or on the inputs' shapes and dtypes.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/device_impl.h"
#include "core/stream.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace td = tessel::detail;

TEST(EagerInline, ScalarPlusLiteralRepeated) {
  ts::Array x = ts::device_put(ts::Array(1), ts::devices()[0]);
  ts::Array y = x;
  for (int i = 0; i < 100; ++i) y = y + 1;
  EXPECT_EQ(y.item<int>(), 101);
  EXPECT_EQ(y.dtype(), x.dtype());
}

// The same operation alternating between signatures: every call gets the entry (output
// shape and dtype) of its own inputs, not the one the previous call cached.
TEST(EagerInline, CachedEntriesFollowShapesAndDtypes) {
  ts::Array i32 = ts::Array(std::vector<int32_t>{1, 2, 3});
  ts::Array f32 = ts::Array(std::vector<float>{0.5f, 1.5f});
  ts::Array i64 = ts::astype(ts::Array(std::vector<int32_t>{7, 8, 9, 10}), ts::i64).reshape({2, 2});
  ts::Array s = ts::Array(2.5f);
  for (int round = 0; round < 3; ++round) {
    ts::Array a = i32 + 1, b = f32 + 1, c = i64 + 1, d = s + 1, e = i32 * i32;
    EXPECT_EQ(a.dtype(), ts::i32);
    EXPECT_EQ(a.to_vector<int32_t>(), (std::vector<int32_t>{2, 3, 4}));
    EXPECT_EQ(b.dtype(), ts::f32);
    EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{1.5f, 2.5f}));
    EXPECT_EQ(c.dtype(), ts::i64);
    EXPECT_EQ(c.shape(), (ts::Shape{2, 2}));
    EXPECT_EQ(c.to_vector<int64_t>(), (std::vector<int64_t>{8, 9, 10, 11}));
    EXPECT_EQ(d.shape(), ts::Shape{});
    EXPECT_FLOAT_EQ(d.item<float>(), 3.5f);
    EXPECT_EQ(e.to_vector<int32_t>(), (std::vector<int32_t>{1, 4, 9}));
  }
}

// A small operation whose input is still being computed queues behind it and gives the
// same value as one run inline.
TEST(EagerInline, PendingInputsQueueAndAgree) {
  ts::Array big = ts::arange(1 << 20, ts::f32);
  ts::Array total = ts::sum(big * 0.0f + 1.0f);  // queued: larger than the inline limit
  ts::Array queued = total + 1.0f;
  ts::Array ready = ts::Array(float(1 << 20)) + 1.0f;
  EXPECT_FLOAT_EQ(queued.item<float>(), ready.item<float>());
}

// An input that failed gives its error to the operation's output; a donated input throws at once.
TEST(EagerInline, InputErrorsReachTheOutput) {
  auto failing = [] {
    ts::Array bad = ts::host::call([](const ts::Array&) -> ts::Array { throw std::runtime_error("no value 19"); },
                                   ts::Array(std::vector<float>{1.0f}), {.result_shape = ts::ShapeDtype({1}, ts::f32)});
    (bad + 1.0f).block_until_ready();
  };
  try {
    failing();
    ADD_FAILURE() << "the failed input's error did not reach the output";
  } catch (const ts::Error& e) {
    EXPECT_NE(std::string(e.what()).find("no value 19"), std::string::npos) << e.what();
  }
  ts::Array x = ts::device_put(ts::Array(1.0f), ts::devices()[0]);
  auto f = ts::jit([](const ts::Array& a) { return a * 2.0f; }, {.donate_argnums = {0}});
  EXPECT_FLOAT_EQ(f(x).item<float>(), 2.0f);
  EXPECT_THROW(x + 1.0f, ts::ValueError);
}

TEST(StreamRunIfIdle, RunsAtOnceWhenIdleAndNotWhenBusy) {
  td::Stream stream(0);
  int ran = 0;
  auto bump = [](void* p) { ++*static_cast<int*>(p); };
  EXPECT_TRUE(stream.run_if_idle(bump, &ran));
  EXPECT_EQ(ran, 1);

  std::atomic<bool> release{false}, started{false};
  stream.enqueue([&] {
    started = true;
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_FALSE(stream.run_if_idle(bump, &ran));  // busy: the caller must enqueue instead
  EXPECT_EQ(ran, 1);
  release = true;
  stream.synchronize();
  EXPECT_TRUE(stream.run_if_idle(bump, &ran));
  EXPECT_EQ(ran, 2);
}

// From inside one of the stream's own tasks (a host callback calling tessel) the work runs
// nested at once, as run_inline_or_enqueue does.
TEST(StreamRunIfIdle, RunsNestedInsideItsOwnTask) {
  td::Stream stream(0);
  int ran = 0;
  bool nested = false;
  stream.enqueue([&] { nested = stream.run_if_idle([](void* p) { ++*static_cast<int*>(p); }, &ran); });
  stream.synchronize();
  EXPECT_TRUE(nested);
  EXPECT_EQ(ran, 1);
}

// The inline limit counts the bytes an operation reads as well as those it writes: a full
// reduction of a 16 MiB array writes 4 bytes but runs on the device's stream, so the call
// returns at once (eager and jitted alike), while a scalar operation still runs inline.
TEST(EagerInline, LargeReductionsRunOnTheStream) {
  const ts::Device d0 = ts::devices()[0];
  td::Stream& stream = d0.impl()->stream();
  ts::Array big = ts::device_put(ts::full({2048, 2048}, 3.0f), d0);
  ts::Array small = ts::device_put(ts::Array(2.0f), d0);
  auto jitted = ts::jit([](const ts::Array& x) { return ts::max(x); });
  jitted(big).block_until_ready();  // compiled before counting
  stream.synchronize();

  const size_t before = stream.inline_runs();
  ts::Array eager = ts::max(big);
  ts::Array compiled = jitted(big);
  EXPECT_FLOAT_EQ(eager.item<float>(), 3.0f);
  EXPECT_FLOAT_EQ(compiled.item<float>(), 3.0f);
  stream.synchronize();
  EXPECT_EQ(stream.inline_runs(), before) << "a reduction of 16 MiB ran on the caller's thread";

  EXPECT_FLOAT_EQ((small * 2.0f).item<float>(), 4.0f);
  EXPECT_GT(stream.inline_runs(), before) << "a scalar operation on an idle stream was queued";
}

// A loop counts the work of its steps, not only its carries: a while_loop of scalar carries
// (steps unknown until it runs) and a fori_loop of 100000 steps run on the device's
// stream, jitted and eager, so the call returns at once; a loop of three steps on scalars is
// still small work and runs inline.
TEST(EagerInline, LongLoopsOfSmallCarriesRunOnTheStream) {
  const ts::Device d0 = ts::devices()[0];
  td::Stream& stream = d0.impl()->stream();
  auto count_to = [](const ts::Array& n, const ts::Array& start) {
    return ts::while_loop([n](const ts::Array& i) { return i < n; }, [](const ts::Array& i) { return i + 1; }, start);
  };
  auto many = [](const ts::Array& x) {
    return ts::fori_loop(0, 100000, [](const ts::Array&, const ts::Array& s) { return s * 0.5f + 1.0f; }, x);
  };
  auto three = [](const ts::Array& x) {
    return ts::fori_loop(0, 3, [](const ts::Array&, const ts::Array& s) { return s * 0.5f + 1.0f; }, x);
  };
  auto jit_count = ts::jit(count_to);
  auto jit_many = ts::jit(many);
  auto jit_three = ts::jit(three);
  const ts::Array n = ts::device_put(ts::Array(int32_t(100000)), d0), x = ts::device_put(ts::Array(0.0f), d0);
  const ts::Array zero = ts::device_put(ts::Array(int32_t(0)), d0);
  jit_count(n, zero).block_until_ready();  // compiled before counting
  jit_many(x).block_until_ready();
  jit_three(x).block_until_ready();
  stream.synchronize();

  const size_t before = stream.inline_runs();
  ts::Array counted = jit_count(n, zero);
  stream.synchronize();
  ts::Array summed = jit_many(x);
  stream.synchronize();
  ts::Array eager = count_to(n, zero);
  stream.synchronize();
  EXPECT_EQ(stream.inline_runs(), before) << "a loop of many steps ran on the caller's thread";
  EXPECT_EQ(counted.item<int32_t>(), 100000);
  EXPECT_EQ(eager.item<int32_t>(), 100000);
  EXPECT_FLOAT_EQ(summed.item<float>(), 2.0f);

  stream.synchronize();
  const size_t short_before = stream.inline_runs();
  EXPECT_FLOAT_EQ(jit_three(x).item<float>(), 1.75f);  // 0 -> 1 -> 1.5 -> 1.75
  EXPECT_GT(stream.inline_runs(), short_before) << "a loop of three scalar steps was queued";
}
