// Control flow partitioned (8 virtual devices): fori_loop, while_loop, scan and cond bodies
// run on each device's pieces with their collectives inside, loop carries keep a common
// layout, and gradients and vmap of such loops stay partitioned. Each case checks the value
// against the one-device result and the per-device program's text: no all_gather, and the
// collectives the computation needs inside the loop.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <utility>

#include "sharding/sharding_test_util.h"
#include "tessel/tessel.h"

namespace ts = tessel;
using sharding_test::count;
using sharding_test::range_f32;

namespace {

const ts::Mesh& line(int64_t n = 8) {
  static const ts::Mesh m8 = ts::make_mesh({8}, {"x"}), m2 = ts::make_mesh({2}, {"x"});
  return n == 8 ? m8 : m2;
}

ts::Array wavy(const ts::Shape& shape, float scale = 1.0f) {
  return ts::sin(range_f32(shape, 0.7f, 0.3f)) * ts::cos(range_f32(shape, 0.13f)) * scale;
}

void expect_close(const ts::Array& got, const ts::Array& want, double tol = 1e-5) {
  ASSERT_EQ(got.shape(), want.shape());
  const auto x = ts::astype(got, ts::f64).to_vector<double>(), y = ts::astype(want, ts::f64).to_vector<double>();
  for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(x[i], y[i], tol * (1 + std::abs(y[i]))) << "at flat index " << i;
}

// The text of the while/scan equation's nested programs is indented below it: everything
// after the loop's first line.
std::string after(const std::string& text, const std::string& what) {
  const size_t p = text.find(what);
  return p == std::string::npos ? std::string() : text.substr(p);
}

}  // namespace

TEST(PartitionLoops, ForiLoopWithSplitCarryComputesEachPieceLocally) {
  ts::NamedSharding rows(line(), ts::P("x", ts::none));
  auto step = [](const ts::Array& u) { return u * 0.5f + ts::sin(u) * 0.25f; };
  auto fn = [&](const ts::Array& u) {
    return ts::fori_loop(0, 10, [&](const ts::Array&, const ts::Array& c) { return step(c); }, u);
  };
  auto f = ts::jit(fn, {.in_shardings = {rows}});
  const ts::Array u = wavy({64, 16});
  const ts::Array got = f(u);
  expect_close(got, fn(u));
  EXPECT_EQ(got.sharding(), ts::Sharding(rows)) << got.sharding().to_string();
  const std::string text = f.lower(u).compile().as_text();
  EXPECT_NE(text.find("no collectives"), std::string::npos) << text;
  EXPECT_NE(text.find("f32[8,16]"), std::string::npos) << text;  // each device's piece
}

TEST(PartitionLoops, WhileLoopPredicateOnSplitCarryIsReducedInsideTheLoop) {
  ts::NamedSharding rows(line(), ts::P("x"));
  auto fn = [](const ts::Array& x) {
    return ts::while_loop([](const ts::Array& c) { return ts::sum(c * c) > 1e-3f; },
                          [](const ts::Array& c) { return c * 0.5f; }, x);
  };
  auto f = ts::jit(fn, {.in_shardings = {rows}});
  const ts::Array x = wavy({40});
  expect_close(f(x), fn(x));
  const std::string text = f.lower(x).compile().as_text();
  EXPECT_EQ(count(text, "all_gather"), 0) << text;
  EXPECT_EQ(count(after(text, "while"), "all_reduce"), 1) << text;  // the predicate's sum, in cond_fun
}

TEST(PartitionLoops, DataParallelTrainingLoopAllReducesGradientsInsideTheLoop) {
  const ts::Mesh& mesh = line();
  ts::NamedSharding batch(mesh, ts::P("x", ts::none)), replicated(mesh, ts::P());
  using Params = std::tuple<ts::Array, ts::Array, ts::Array, ts::Array>;
  auto loss = [](const Params& p, const ts::Array& x, const ts::Array& y) {
    const auto& [w1, b1, w2, b2] = p;
    const ts::Array h = ts::tanh(ts::matmul(x, w1) + b1);
    const ts::Array out = ts::matmul(h, w2) + b2;
    return ts::mean(ts::square(out - y));
  };
  auto train = [&](const ts::Array& w1, const ts::Array& b1, const ts::Array& w2, const ts::Array& b2,
                   const ts::Array& x, const ts::Array& y) {
    Params p0{w1, b1, w2, b2};
    Params p = ts::fori_loop(0, 5, [&](const ts::Array&, const Params& p) {
      auto g = ts::grad([&](const Params& q) { return loss(q, x, y); })(p);
      return Params{std::get<0>(p) - 0.1f * std::get<0>(g), std::get<1>(p) - 0.1f * std::get<1>(g),
                    std::get<2>(p) - 0.1f * std::get<2>(g), std::get<3>(p) - 0.1f * std::get<3>(g)};
    }, p0);
    return std::get<0>(p) + 0.0f * ts::sum(std::get<2>(p));
  };
  auto f = ts::jit(train, {.in_shardings = {replicated, replicated, replicated, replicated, batch, batch}});
  const ts::Array w1 = wavy({8, 16}, 0.5f), b1 = ts::zeros({16}), w2 = wavy({16, 4}, 0.5f), b2 = ts::zeros({4});
  const ts::Array x = wavy({256, 8}), y = wavy({256, 4}, 0.3f);
  expect_close(f(w1, b1, w2, b2, x, y), train(w1, b1, w2, b2, x, y), 1e-4);
  const std::string text = f.lower(w1, b1, w2, b2, x, y).compile().as_text();
  EXPECT_EQ(count(text, "all_gather"), 0) << text;
  EXPECT_GE(count(after(text, "scan"), "all_reduce"), 2) << text;  // gradients summed over the batch pieces
}

TEST(PartitionLoops, ScanSplitAlongANonScannedDimension) {
  ts::NamedSharding cols(line(), ts::P(ts::none, "x"));
  auto fn = [](const ts::Array& xs) {
    auto [carry, ys] = ts::scan([](const ts::Array& c, const ts::Array& r) { return std::make_pair(c * 0.9f + r, ts::sin(c)); },
                                ts::zeros({32}), xs);
    return ys + carry;
  };
  auto f = ts::jit(fn, {.in_shardings = {cols}});
  const ts::Array xs = wavy({6, 32});
  const ts::Array got = f(xs);
  expect_close(got, fn(xs));
  EXPECT_EQ(got.sharding(), ts::Sharding(cols)) << got.sharding().to_string();
  const std::string text = f.lower(xs).compile().as_text();
  EXPECT_NE(text.find("no collectives"), std::string::npos) << text;
}

TEST(PartitionLoops, CondBranchesShareOneLayout) {
  ts::NamedSharding rows(line(), ts::P("x"));
  auto fn = [](const ts::Array& x, const ts::Array& p) {
    return ts::cond(p, [](const ts::Array& v) { return v * 2.0f; }, [](const ts::Array& v) { return ts::exp(v) + 1.0f; }, x);
  };
  auto f = ts::jit(fn, {.in_shardings = {rows, std::nullopt}});
  const ts::Array x = wavy({24});
  for (bool p : {true, false}) expect_close(f(x, ts::Array(p)), fn(x, ts::Array(p)));
  const std::string text = f.lower(x, ts::Array(true)).compile().as_text();
  EXPECT_EQ(count(text, "all_gather"), 0) << text;
  EXPECT_NE(text.find("no collectives"), std::string::npos) << text;
  EXPECT_EQ(count(text, "f32[24]"), 0) << text;  // only pieces, never the whole
}

TEST(PartitionLoops, GradientOfALoopStaysPartitioned) {
  ts::NamedSharding rows(line(), ts::P("x"));
  auto loss = [](const ts::Array& w) {
    const ts::Array u = ts::fori_loop(0, 4, [&](const ts::Array&, const ts::Array& c) { return ts::sin(c) * w + c; }, w);
    return ts::sum(u * u);
  };
  auto f = ts::jit(ts::grad(loss), {.in_shardings = {rows}});
  const ts::Array w = wavy({64});
  expect_close(f(w), ts::grad(loss)(w), 1e-4);
  const std::string text = f.lower(w).compile().as_text();
  EXPECT_EQ(count(text, "all_gather"), 0) << text;
  EXPECT_EQ(count(text, "= scan["), 2) << text;  // the forward loop and its transpose, both on pieces
}

TEST(PartitionLoops, VmapOfALoopWithSplitBatchStaysPartitioned) {
  ts::NamedSharding batch(line(), ts::P("x", ts::none));
  auto one = [](const ts::Array& v) {
    return ts::while_loop([](const ts::Array& c) { return ts::max(ts::abs(c)) > 0.1f; },
                          [](const ts::Array& c) { return c * 0.5f; }, v);
  };
  auto f = ts::jit(ts::vmap(one), {.in_shardings = {batch}});
  const ts::Array v = wavy({16, 5});
  expect_close(f(v), ts::vmap(one)(v));
  const std::string text = f.lower(v).compile().as_text();
  EXPECT_EQ(count(text, "all_gather"), 0) << text;
}

TEST(PartitionLoops, CallsInsideALoopBodyArePartitionedThrough) {
  ts::NamedSharding rows(line(), ts::P("x"));
  auto inner = ts::jit([](const ts::Array& c) { return ts::cos(c) * 0.5f; });
  auto remat = ts::checkpoint([](const ts::Array& c) { return ts::tanh(c) + c; });
  auto fn = [&](const ts::Array& x) {
    return ts::fori_loop(0, 3, [&](const ts::Array&, const ts::Array& c) { return remat(inner(c)); }, x);
  };
  auto f = ts::jit(fn, {.in_shardings = {rows}});
  const ts::Array x = wavy({32});
  expect_close(f(x), fn(x));
  const std::string text = f.lower(x).compile().as_text();
  EXPECT_EQ(count(text, "all_gather"), 0) << text;
  EXPECT_EQ(count(text, "f32[32]"), 0) << text;
}

TEST(PartitionLoops, ConstraintInTheBodyThatContradictsTheCarryIsAnError) {
  const ts::Mesh& mesh = line();
  ts::NamedSharding rows(mesh, ts::P("x", ts::none)), cols(mesh, ts::P(ts::none, "x"));
  auto fn = [&](const ts::Array& u) {
    return ts::fori_loop(0, 2, [&](const ts::Array&, const ts::Array& c) { return ts::with_sharding_constraint(c * 2.0f, cols); }, u);
  };
  auto f = ts::jit(fn, {.in_shardings = {rows}});
  try {
    f(wavy({16, 16})).block_until_ready();
    FAIL() << "expected a ValueError";
  } catch (const ts::ValueError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("carry 1 (f32[16,16])"), std::string::npos) << m;  // after fori_loop's index
    EXPECT_NE(m.find("{x, _}"), std::string::npos) << m;
    EXPECT_NE(m.find("{_, x}"), std::string::npos) << m;
  }
}

TEST(PartitionLoops, ConstraintInTheBodyDecidesAnUnconstrainedCarry) {
  ts::NamedSharding cols(line(), ts::P(ts::none, "x"));
  auto fn = [&](const ts::Array& u) {
    return ts::fori_loop(0, 3, [&](const ts::Array&, const ts::Array& c) { return ts::with_sharding_constraint(c * 2.0f, cols); }, u);
  };
  auto f = ts::jit(fn);
  const ts::Array u = ts::device_put(wavy({16, 16}), ts::NamedSharding(line(), ts::P()));
  const ts::Array got = f(u);
  expect_close(got, fn(wavy({16, 16})));
  EXPECT_EQ(got.sharding(), ts::Sharding(cols)) << got.sharding().to_string();
}

TEST(PartitionLoops, CustomPartitioningInsideALoopBodyGetsTheCarryLayout) {
  ts::NamedSharding rows(line(), ts::P("x", ts::none));
  // An element-wise op with its own partitioning: each device applies it to its rows.
  auto scale = ts::custom_partitioning([](const ts::Array& a) { return a * 0.5f + 1.0f; }, {.name = "scale_rows"});
  scale.def_partition(
      {.partition =
           [](const ts::Mesh& m, const std::vector<ts::ShardedShape>& a, const std::vector<ts::ShardedShape>&) {
             auto lower = [](const std::vector<ts::Array>& xs) { return std::vector<ts::Array>{xs[0] * 0.5f + 1.0f}; };
             return ts::PartitionResult{m, lower, {a[0].sharding}, {a[0].sharding}};
           },
       .sharding_rule = "i j -> i j"});
  auto fn = [&](const ts::Array& u) {
    return ts::fori_loop(0, 4, [&](const ts::Array&, const ts::Array& c) { return scale(ts::sin(c)); }, u);
  };
  auto f = ts::jit(fn, {.in_shardings = {rows}});
  const ts::Array u = wavy({32, 8});
  expect_close(f(u), fn(u));
  const std::string text = f.lower(u).compile().as_text();
  EXPECT_NE(text.find("no collectives"), std::string::npos) << text;
  EXPECT_EQ(count(text, "f32[32,8]"), 0) << text;
}
