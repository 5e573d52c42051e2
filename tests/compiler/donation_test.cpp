// Buffer donation (donate_argnums), reuse of dead intermediate buffers and in-place steps:
// results equal the undonated ones, donated arrays are invalidated with a clear error, and
// no output or intermediate ever shares memory with a buffer that is still live.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/array_impl.h"
#include "tessel/tessel.h"

namespace ts = tessel;

namespace {

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

const void* data_of(const ts::Array& a) {
  a.block_until_ready();
  return ts::detail::as_concrete(a)->buffer()->data();
}

std::vector<float> iota_values(int n, float scale = 1.0f) {
  std::vector<float> v(size_t(n), 0.0f);
  for (int i = 0; i < n; ++i) v[size_t(i)] = scale * float(i);
  return v;
}

/// y = x.at({Slice(1, 3)}).set(-1) for x = iota_values(4096), computed in x's memory `before`.
void expect_rows_set_in_place(const ts::Array& y, const void* before) {
  auto v = y.to_vector<float>();
  EXPECT_EQ(v[0], 0.0f);
  EXPECT_EQ(v[1], -1.0f);
  EXPECT_EQ(v[2], -1.0f);
  EXPECT_EQ(v[4095], 4095.0f);
  EXPECT_EQ(data_of(y), before);  // the argument's memory, written in place
}

/// The message of the tessel::ValueError `f` throws, or "" (a failure) if it throws none.
template <class F> std::string value_error_of(F&& f) {
  try {
    f();
  } catch (const ts::ValueError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no ValueError";
  return "";
}

struct Pair {
  ts::Array h, u;
};

}  // namespace

TESSEL_TREE(Pair, h, u)

TEST(Donation, OutputsEqualTheUndonatedOnes) {
  auto fn = [](const ts::Array& x, const ts::Array& y) { return ts::sin(x) * 2.0f + y; };
  auto plain = ts::jit(fn);
  auto donating = ts::jit(fn, {.donate_argnums = {0}});
  ts::Array y(iota_values(1000, 0.5f));
  auto expect = plain(ts::Array(iota_values(1000)), y).to_vector<float>();
  EXPECT_EQ(donating(ts::Array(iota_values(1000)), y).to_vector<float>(), expect);
  EXPECT_EQ(y.to_vector<float>(), iota_values(1000, 0.5f));  // not donated: untouched
}

TEST(Donation, DonatedArraysAreInvalidatedWithAClearMessage) {
  auto f = ts::jit([](const ts::Array& x) { return x + 1.0f; }, {.donate_argnums = {0}, .name = "step"});
  ts::Array x(iota_values(8));
  ts::Array alias = x;  // another handle of the same array
  ts::Array r = f(x);
  EXPECT_EQ(r.to_vector<float>()[7], 8.0f);
  const std::string msg = value_error_of([&] { x.to_vector<float>(); });
  EXPECT_TRUE(contains(msg, "donated to jit 'step'")) << msg;
  EXPECT_TRUE(contains(msg, "argument 0")) << msg;
  EXPECT_TRUE(contains(msg, "donate_argnums")) << msg;
  EXPECT_TRUE(contains(msg, "copy")) << msg;
  EXPECT_THROW(x.block_until_ready(), ts::ValueError);
  EXPECT_THROW(alias.to_vector<float>(), ts::ValueError);
  EXPECT_THROW(ts::sin(x), ts::ValueError);  // an eager op throws at once
  EXPECT_THROW(f(x), ts::ValueError);        // so does a jitted call
  EXPECT_EQ(x.shape(), (ts::Shape{8}));  // metadata stays readable
}

TEST(Donation, ScatterOnADonatedArgumentWritesInPlace) {
  auto f = ts::jit([](const ts::Array& x) { return x.at({ts::Slice(1, 3)}).set(ts::Array(-1.0f)); },
                   {.donate_argnums = {0}});
  ts::Array x(iota_values(4096));
  const void* before = data_of(x);
  EXPECT_TRUE(contains(f.lower(x).compile().as_text(), "(scatter): output 0 written in place into input 0"))
      << f.lower(x).compile().as_text();
  ts::Array y = f(x);
  expect_rows_set_in_place(y, before);
}

TEST(Donation, ScatterOnANonDonatedArgumentCopies) {
  auto f = ts::jit([](const ts::Array& x) { return x.at({ts::Slice(1, 3)}).set(ts::Array(-1.0f)); });
  ts::Array x(iota_values(4096));
  EXPECT_FALSE(contains(f.lower(x).compile().as_text(), "written in place")) << f.lower(x).compile().as_text();
  ts::Array y = f(x);
  EXPECT_EQ(y.to_vector<float>()[1], -1.0f);
  EXPECT_EQ(x.to_vector<float>(), iota_values(4096));
  EXPECT_NE(data_of(y), data_of(x));
}

TEST(Donation, InPlaceScatterOnADeadIntermediate) {
  auto f = ts::jit([](const ts::Array& x) {
    ts::Array t = x * 2.0f;                               // dies at the scatter
    return t.at({ts::Slice(0, 2)}).add(ts::Array(100.0f)) + 1.0f;  // and the add dies at the last step
  });
  ts::Array x(iota_values(16));
  std::string text = f.lower(x).compile().as_text();
  EXPECT_TRUE(contains(text, "(scatter): output 0 written in place into input 0 (step 0 output 0)")) << text;
  EXPECT_TRUE(contains(text, "(add): output 0 written in place into input 0")) << text;
  auto v = f(x).to_vector<float>();
  for (int i = 0; i < 16; ++i) EXPECT_EQ(v[size_t(i)], 2.0f * float(i) + 1.0f + (i < 2 ? 100.0f : 0.0f)) << i;
  EXPECT_EQ(x.to_vector<float>(), iota_values(16));
}

TEST(Donation, DeadIntermediatesAreReusedBySize) {
  auto f = ts::jit([](const ts::Array& x, const ts::Array& y) {
    ts::Array a = ts::exp(x);   // step 0
    ts::Array b = ts::sum(a);   // step 1: a dies here (a reduction does not write in place)
    ts::Array c = ts::sin(y);   // step 2: y is not donated, so c takes a's memory
    return c * b;
  });
  ts::Array x = ts::ones({64, 64}), y = ts::zeros({64, 64});
  std::string text = f.lower(x, y).compile().as_text();
  EXPECT_TRUE(contains(text, "(sin): output 0 reuses the memory of step 0 output 0")) << text;
  auto v = f(x, y).to_vector<float>();
  EXPECT_EQ(v, std::vector<float>(4096, 0.0f));
  EXPECT_EQ(y.to_vector<float>(), std::vector<float>(4096, 0.0f));
}

TEST(Donation, NeverAliasesALiveBuffer) {
  auto f = ts::jit([](const ts::Array& x, const ts::Array& y) { return std::make_pair(x * 3.0f, y + x); },
                   {.donate_argnums = {0}});
  // y is not donated: no output shares its memory, and later runs leave it alone.
  ts::Array y(iota_values(2048, 2.0f));
  std::vector<ts::Array> outs;
  for (int k = 0; k < 4; ++k) {
    auto [a, b] = f(ts::Array(iota_values(2048, float(k))), y);
    EXPECT_NE(data_of(a), data_of(y));
    EXPECT_NE(data_of(b), data_of(y));
    EXPECT_NE(data_of(a), data_of(b));
    outs.push_back(a);
    outs.push_back(b);
  }
  EXPECT_EQ(y.to_vector<float>(), iota_values(2048, 2.0f));
  for (int k = 0; k < 4; ++k) {  // earlier outputs survive later runs
    EXPECT_EQ(outs[size_t(2 * k)].to_vector<float>()[10], 30.0f * float(k));
    EXPECT_EQ(outs[size_t(2 * k + 1)].to_vector<float>()[10], 20.0f + 10.0f * float(k));
  }
}

TEST(Donation, ABufferSharedWithAnotherArrayIsNotReused) {
  auto f = ts::jit([](const ts::Array& x) { return x.at({ts::Slice(0, 1)}).set(ts::Array(7.0f)); },
                   {.donate_argnums = {0}});
  ts::Array x(iota_values(1024));
  ts::Array twin = ts::device_put(x, ts::devices()[0]);  // shares x's buffer
  ts::Array y = f(x);
  EXPECT_EQ(y.to_vector<float>()[0], 7.0f);
  EXPECT_THROW(x.to_vector<float>(), ts::ValueError);    // x itself is donated
  EXPECT_EQ(twin.to_vector<float>(), iota_values(1024));  // its twin is intact
  EXPECT_NE(data_of(y), data_of(twin));
}

TEST(Donation, AnArrayPassedTwiceIsNotDonated) {
  auto f = ts::jit([](const ts::Array& x, const ts::Array& y) { return x * y; }, {.donate_argnums = {0}});
  ts::Array x(iota_values(512));
  ts::Array r = f(x, x);
  EXPECT_EQ(r.to_vector<float>()[3], 9.0f);
  EXPECT_EQ(x.to_vector<float>(), iota_values(512));  // still valid
}

TEST(Donation, ADonatedArgumentReturnedUnchanged) {
  auto f = ts::jit([](const ts::Array& x, const ts::Array& y) { return std::make_tuple(x, x + y, x); },
                   {.donate_argnums = {0}});
  ts::Array x(iota_values(300)), y(iota_values(300));
  const void* before = data_of(x);
  auto [a, b, c] = f(x, y);
  EXPECT_THROW(x.to_vector<float>(), ts::ValueError);
  EXPECT_EQ(a.to_vector<float>(), iota_values(300));
  EXPECT_EQ(c.to_vector<float>(), iota_values(300));
  EXPECT_EQ(b.to_vector<float>(), iota_values(300, 2.0f));
  EXPECT_EQ(data_of(a), before);  // handed over, not copied
  EXPECT_NE(data_of(b), before);  // and not reused while it is an output
}

TEST(Donation, IgnoredUnderTransformations) {
  auto f = ts::jit([](const ts::Array& x) { return ts::sum(ts::sin(x) * x); }, {.donate_argnums = {0}});
  ts::Array x(iota_values(16, 0.1f));
  ts::Array g = ts::grad(f)(x);
  EXPECT_NEAR(g.to_vector<float>()[3], std::cos(0.3f) * 0.3f + std::sin(0.3f), 1e-5);
  EXPECT_EQ(x.to_vector<float>(), iota_values(16, 0.1f));  // not invalidated
  ts::Array xs = ts::ones({3, 16});
  ts::Array v = ts::vmap(f)(xs);
  EXPECT_EQ(v.shape(), (ts::Shape{3}));
  EXPECT_EQ(xs.to_vector<float>(), std::vector<float>(48, 1.0f));
  auto outer = ts::jit([f](const ts::Array& y) { return f(y) * 2.0f; });  // inside another jit
  ts::Array y(iota_values(16, 0.1f));
  EXPECT_NEAR(outer(y).item<float>(), 2.0f * f(ts::Array(iota_values(16, 0.1f))).item<float>(), 1e-5);
  EXPECT_EQ(y.to_vector<float>(), iota_values(16, 0.1f));
}

TEST(Donation, ArraysOnOtherDevices) {
  auto devs = ts::devices();
  if (devs.size() < 2) GTEST_SKIP() << "needs TESSEL_CPU_DEVICES >= 2";
  auto f = ts::jit([](const ts::Array& x) { return x.at({ts::Slice(0, 1)}).set(ts::Array(5.0f)); },
                   {.donate_argnums = {0}});
  ts::Array x = ts::device_put(ts::Array(iota_values(256)), devs[1]);
  ts::Array y = f(x);
  EXPECT_EQ(y.device().id(), devs[1].id());
  EXPECT_EQ(y.to_vector<float>()[0], 5.0f);
  EXPECT_EQ(y.to_vector<float>()[255], 255.0f);
  EXPECT_THROW(x.to_vector<float>(), ts::ValueError);
  // A donated uncommitted array on device 0, the computation on device 1 (where the
  // committed argument is): the donated memory stays where it was and is not reused.
  auto g = ts::jit([](const ts::Array& a, const ts::Array& b) { return a * b; }, {.donate_argnums = {0}});
  ts::Array a(iota_values(256));
  ts::Array b = ts::device_put(ts::ones({256}), devs[1]);
  ts::Array c = g(a, b);
  EXPECT_EQ(c.device().id(), devs[1].id());
  EXPECT_EQ(c.to_vector<float>(), iota_values(256));
  EXPECT_THROW(a.to_vector<float>(), ts::ValueError);
}

namespace {

// A 1-D flux-form step: slices of h and u, and in-place row updates of both.
Pair flux_step(const Pair& s) {
  ts::Array h = s.h, u = s.u;
  ts::Array flux = 0.5f * (h[{ts::Slice(1, ts::none)}] + h[{ts::Slice(0, -1)}]) * u[{ts::Slice(1, ts::none)}];
  ts::Array h2 = h.at({ts::Slice(1, -1)}).add(-0.1f * (flux[{ts::Slice(1, ts::none)}] - flux[{ts::Slice(0, -1)}]));
  ts::Array u2 = (u * 0.99f).at({ts::Slice(0, 1)}).set(ts::Array(0.0f));
  return Pair{h2, u2};
}

Pair flux_initial_state() {
  std::vector<float> h(5000), u(5000);
  for (size_t i = 0; i < h.size(); ++i) {
    h[i] = 1.0f + 0.1f * std::sin(0.01f * float(i));
    u[i] = 0.2f * std::cos(0.02f * float(i));
  }
  return Pair{ts::Array(h), ts::Array(u)};
}

}  // namespace

TEST(Donation, LoopWithDonationEqualsLoopWithout) {
  auto plain = ts::jit(flux_step);
  auto donating = ts::jit(flux_step, {.donate_argnums = {0}});
  Pair a = flux_initial_state(), b = flux_initial_state();
  for (int i = 0; i < 30; ++i) {
    a = plain(a);
    b = donating(b);
  }
  EXPECT_EQ(a.h.to_vector<float>(), b.h.to_vector<float>());
  EXPECT_EQ(a.u.to_vector<float>(), b.u.to_vector<float>());
  std::string text = donating.lower(b).compile().as_text();
  EXPECT_TRUE(contains(text, "donated argument 0")) << text;
}

TEST(Donation, BadDonateArgnums) {
  auto fn = [](const ts::Array& x, int k) { return x * float(k); };
  EXPECT_THROW(ts::jit(fn, {.donate_argnums = {2}})(ts::ones({2}), 1), ts::IndexError);
  EXPECT_THROW(ts::jit(fn, {.donate_argnums = {1}})(ts::ones({2}), 1), ts::ValueError);
  try {
    ts::jit(fn, {.static_argnums = {1}, .donate_argnums = {1}, .name = "g"})(ts::ones({2}), 1);
    FAIL();
  } catch (const ts::ValueError& e) {
    EXPECT_TRUE(contains(e.what(), "g: donate_argnums lists argument 1, which is static")) << e.what();
  }
}

TEST(Donation, ControlFlowBodiesNeverWriteTheirInputs) {
  // Bodies run through run_sync on the loop's buffers: in-place steps inside them only
  // touch the body's own intermediates.
  auto f = ts::jit([](const ts::Array& x) {
    return ts::fori_loop(0, 5, [](const ts::Array&, const ts::Array& v) {
      return (v * 2.0f).at({ts::Slice(0, 1)}).add(ts::Array(1.0f));
    }, x);
  }, {.donate_argnums = {0}});
  ts::Array x = ts::ones({4});
  auto v = f(x).to_vector<float>();
  EXPECT_EQ(v, (std::vector<float>{32.0f + 31.0f, 32.0f, 32.0f, 32.0f}));
}

// A program with a host callback partitions itself (over a mesh of one device): it runs as
// an ordinary executable, so donation, in-place steps and buffer reuse apply to it too.
TEST(Donation, AProgramWithAHostCallbackWritesDonatedArgumentsInPlace) {
  std::vector<float> tapped;
  auto tap = [&](const ts::Array& k, const ts::host::Transforms&) { tapped.push_back(k.item<float>()); };
  auto f = ts::jit(
      [&](const ts::Array& x) {
        ts::host::id_tap(tap, x[{0}], {.name = "first"});
        return x.at({ts::Slice(1, 3)}).set(ts::Array(-1.0f));
      },
      {.donate_argnums = {0}, .name = "tapped"});
  ts::Array x(iota_values(4096));
  const std::string text = f.lower(x).compile().as_text();
  EXPECT_TRUE(contains(text, "(scatter): output 0 written in place into input 0 (program input 0 (donated argument 0))"))
      << text;
  const void* before = data_of(x);
  ts::Array y = f(x);
  expect_rows_set_in_place(y, before);
  EXPECT_THROW(x.to_vector<float>(), ts::ValueError);
  ts::host::barrier_wait();
  EXPECT_EQ(tapped, std::vector<float>{0.0f});
  // As a plain jit: its outputs are committed to the device, as a partitioned launch's are.
  EXPECT_EQ(y.device().id(), ts::devices()[0].id());
}

TEST(Donation, AProgramWithAHostCallbackSteppedWithDonationEqualsOneWithout) {
  // The step of LoopWithDonationEqualsLoopWithout, with a tap of the step number in it:
  // buffers reused and written in place from step to step keep the values right.
  std::vector<int> steps_seen;
  auto step = [&](const Pair& s, const ts::Array& k) {
    ts::host::id_tap([&](const ts::Array& n, const ts::host::Transforms&) { steps_seen.push_back(n.item<int>()); },
                     k, {.name = "step"});
    return flux_step(s);
  };
  auto plain = ts::jit(step);
  auto donating = ts::jit(step, {.donate_argnums = {0}});
  Pair a = flux_initial_state(), b = flux_initial_state();
  const std::string text = donating.lower(b, ts::Array(int32_t(0))).compile().as_text();
  EXPECT_TRUE(contains(text, "written in place into input 0 (program input 0 (donated argument 0))")) << text;
  for (int i = 0; i < 30; ++i) {
    a = plain(a, ts::Array(int32_t(i)));
    const void* donated_h = data_of(b.h);
    b = donating(b, ts::Array(int32_t(i)));
    EXPECT_EQ(data_of(b.h), donated_h) << i;  // h's scatter ran in place
  }
  EXPECT_EQ(a.h.to_vector<float>(), b.h.to_vector<float>());
  EXPECT_EQ(a.u.to_vector<float>(), b.u.to_vector<float>());
  ts::host::barrier_wait();
  ASSERT_EQ(steps_seen.size(), 60u);
  for (int i = 0; i < 30; ++i) {
    EXPECT_EQ(steps_seen[size_t(2 * i)], i);
    EXPECT_EQ(steps_seen[size_t(2 * i + 1)], i);
  }
}
