// custom_partitioning: the seed (an FFT that keeps its batch sharding) checked on the
// lowered per-device program and on values; sharding-rule strings; callback validation;
// evaluation without shardings and under grad/vmap. 8 virtual devices (TESSEL_CPU_DEVICES).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sharding/rule_string.h"
#include "tessel/tessel.h"
#include "transforms/check_transforms.h"

namespace ts = tessel;

namespace {

using transform_testing::expect_close;
using transform_testing::uniform;

ts::Mesh mesh8() { return ts::make_mesh({8}, {"x"}); }

bool gathers_or_slices(const std::string& text) {
  return text.find("all_gather") != std::string::npos || text.find("dynamic_slice") != std::string::npos;
}

/// Real normal values as complex64 (the seed's randn(...).astype(complex64)).
ts::Array complex_input(const ts::Shape& shape, uint32_t seed) {
  return uniform(shape, seed).astype(ts::DType::complex64);
}

void expect_complex_close(const ts::Array& got, const ts::Array& want, double tol = 1e-4) {
  ASSERT_EQ(got.shape(), want.shape());
  auto g = got.to_vector<ts::complex64_t>(), w = want.to_vector<ts::complex64_t>();
  double scale = 1;
  for (auto& v : w) scale = std::max(scale, double(std::abs(v)));
  for (size_t i = 0; i < g.size(); ++i) ASSERT_LE(std::abs(g[i] - w[i]), tol * scale) << "at flat index " << i;
}

// ---- the seed's callbacks ----

ts::Sharding supported_sharding(const ts::Sharding& sharding, const ts::ShardedShape& shape) {
  size_t rank = shape.shape.size();
  size_t keep = std::min(sharding.spec().size(), rank - 1);
  std::vector<ts::SpecEntry> names(sharding.spec().entries().begin(), sharding.spec().entries().begin() + long(keep));
  names.resize(rank);
  return ts::NamedSharding(sharding.mesh(), ts::P(names));
}

ts::PartitionResult fft_partition(const ts::Mesh& mesh, const std::vector<ts::ShardedShape>& args,
                                  const std::vector<ts::ShardedShape>&) {
  ts::Sharding s = supported_sharding(args[0].sharding, args[0]);
  return {mesh, [](const std::vector<ts::Array>& xs) { return std::vector<ts::Array>{ts::fft::fft(xs[0])}; }, {s}, {s}};
}

std::vector<ts::Sharding> fft_infer(const ts::Mesh&, const std::vector<ts::ShardedShape>& args,
                                    const std::vector<ts::ShardedShape>&) {
  return {supported_sharding(args[0].sharding, args[0])};
}

auto make_my_fft() {
  auto f = ts::custom_partitioning([](const ts::Array& x) { return ts::fft::fft(x); }, {.name = "my_fft"});
  f.def_partition({.partition = fft_partition, .infer_sharding_from_operands = fft_infer});
  return f;
}

ts::Array plain_fft(const ts::Array& x) { return ts::fft::fft(x); }

// ---- the seed ----

TEST(CustomPartitioning, SeedBatchedFftKeepsShardingWithoutGatherOrSliceLikePlainFft) {
  ts::Sharding s = ts::NamedSharding(mesh8(), ts::P("x"));
  ts::Array x = complex_input({64, 16}, 1);
  ts::Array y = ts::device_put(x, s);
  auto my_fft = make_my_fft();
  auto jit_my_fft = ts::jit(my_fft, {.in_shardings = {s}, .out_shardings = {s}});
  auto jit_fft = ts::jit(plain_fft, {.in_shardings = {s}, .out_shardings = {s}});
  ts::Array a = jit_my_fft(y), b = jit_fft(y);
  expect_complex_close(a, b);
  expect_complex_close(a, ts::fft::fft(x));
  EXPECT_TRUE(a.sharding().spec().equivalent(ts::P("x"), 2)) << a.sharding();
  std::string mine = jit_my_fft.lower(y).compile().as_text(), plain = jit_fft.lower(y).compile().as_text();
  EXPECT_FALSE(gathers_or_slices(mine)) << mine;
  // Unlike the seed's jnp.fft.fft, tessel's fft has a factor rule: its batch axes split too.
  EXPECT_FALSE(gathers_or_slices(plain)) << plain;
  EXPECT_NE(mine.find("fft"), std::string::npos) << mine;
}

TEST(CustomPartitioning, SeedOneDimensionalFftGathersSinceTheFftAxisIsSharded) {
  ts::Sharding s = ts::NamedSharding(mesh8(), ts::P("x"));
  ts::Array x = complex_input({256}, 2);
  ts::Array y = ts::device_put(x, s);
  auto jit_my_fft = ts::jit(make_my_fft(), {.in_shardings = {s}, .out_shardings = {s}});
  auto jit_fft = ts::jit(plain_fft, {.in_shardings = {s}, .out_shardings = {s}});
  expect_complex_close(jit_my_fft(y), jit_fft(y));
  expect_complex_close(jit_my_fft(y), ts::fft::fft(x));
  EXPECT_TRUE(gathers_or_slices(jit_my_fft.lower(y).compile().as_text()));
  EXPECT_TRUE(gathers_or_slices(jit_fft.lower(y).compile().as_text()));
}

TEST(CustomPartitioning, OutputShardingPropagatesBackToTheArgument) {
  ts::Sharding s = ts::NamedSharding(mesh8(), ts::P("x"));
  ts::Array x = complex_input({16, 8}, 17);  // a single-device argument: its layout is chosen
  auto my_fft = make_my_fft();
  auto j = ts::jit(my_fft, {.out_shardings = {s}});
  expect_complex_close(j(x), ts::fft::fft(x));
  std::string text = j.lower(x).compile().as_text();
  EXPECT_FALSE(gathers_or_slices(text)) << text;
  // A propagate_user_sharding that asks for whole results: the argument comes whole and
  // the result is sliced to the program's layout.
  int calls = 0;
  my_fft.def_partition({.partition = fft_partition,
                        .infer_sharding_from_operands = fft_infer,
                        .propagate_user_sharding = [&calls](const ts::Mesh& m, const ts::ShardedShape& user) {
                          ++calls;
                          EXPECT_EQ(user.shape, (ts::Shape{16, 8}));
                          return ts::Sharding(ts::NamedSharding(m, ts::P()));
                        }});
  auto k = ts::jit(my_fft, {.out_shardings = {s}});
  expect_complex_close(k(x), ts::fft::fft(x));
  EXPECT_GT(calls, 0);
}

TEST(CustomPartitioning, UnevenBatchIsPaddedAndStillLocal) {
  ts::Sharding s = ts::NamedSharding(mesh8(), ts::P("x"));
  ts::Array x = complex_input({13, 8}, 3);  // 13 rows over 8 devices: padded pieces of 2
  auto jit_my_fft = ts::jit(make_my_fft(), {.in_shardings = {s}, .out_shardings = {s}});
  ts::Array y = ts::device_put(x, s);
  expect_complex_close(jit_my_fft(y), ts::fft::fft(x));
}

// ---- without shardings: the function runs as written ----

TEST(CustomPartitioning, RunsTheFunctionEagerlyAndUnderPlainJit) {
  ts::Array x = complex_input({4, 8}, 4);
  auto my_fft = make_my_fft();
  expect_complex_close(my_fft(x), ts::fft::fft(x));
  auto j = ts::jit(my_fft);
  expect_complex_close(j(x), ts::fft::fft(x));
  // The simplifier keeps the call (its callbacks matter to the partitioner).
  EXPECT_NE(j.lower(x).as_text().find("custom_partitioning"), std::string::npos) << j.lower(x).as_text();
  // No def_partition at all: still callable where nothing is partitioned.
  auto bare = ts::custom_partitioning([](const ts::Array& a) { return a * 2.0f; });
  EXPECT_EQ(bare(ts::Array({1.0f, 2.0f})).to_vector<float>(), (std::vector<float>{2.0f, 4.0f}));
  EXPECT_EQ(ts::jit(bare)(ts::Array({1.0f, 2.0f})).to_vector<float>(), (std::vector<float>{2.0f, 4.0f}));
}

TEST(CustomPartitioning, RunsInsideControlFlowAndEagerlyOnShardedArrays) {
  ts::Array x = complex_input({8, 4}, 18);
  auto my_fft = make_my_fft();
  auto f = ts::jit([&](const ts::Array& p, const ts::Array& v) {
    return ts::cond(
        p, [&](const ts::Array& a) { return my_fft(a); }, [](const ts::Array& a) { return a; }, v);
  });
  expect_complex_close(f(ts::Array(true), x), ts::fft::fft(x));
  expect_complex_close(f(ts::Array(false), x), x);
  // Eagerly on a sharded array: partitioned by the callbacks, the layout kept.
  ts::Sharding s = ts::NamedSharding(mesh8(), ts::P("x"));
  ts::Array y = my_fft(ts::device_put(x, s));
  expect_complex_close(y, ts::fft::fft(x));
  EXPECT_TRUE(y.sharding().spec().equivalent(ts::P("x"), 2)) << y.sharding();
}

TEST(CustomPartitioning, StaticArgumentsReachTheFunctionAndTheCallbacks) {
  auto scale = ts::custom_partitioning([](const ts::Array& x, int k) { return x * float(k); },
                                       {.static_argnums = {1}, .name = "scale"});
  int seen = 0;
  scale.def_partition(
      {.partition = [&seen](const ts::StaticArgs& statics, const ts::Mesh& mesh,
                            const std::vector<ts::ShardedShape>& args, const std::vector<ts::ShardedShape>&) {
        int k = std::any_cast<int>(statics[0]);
        seen = k;
        ts::Sharding s = args[0].sharding;
        return ts::PartitionResult{
            mesh, [k](const std::vector<ts::Array>& xs) { return std::vector<ts::Array>{xs[0] * float(k)}; }, {s}, {s}};
      }});
  ts::Array x = ts::Array({1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f});
  EXPECT_EQ(scale(x, 3).to_vector<float>()[7], 24.0f);
  ts::Sharding s = ts::NamedSharding(mesh8(), ts::P("x"));
  auto j = ts::jit(scale, {.static_argnums = {1}, .in_shardings = {s, std::nullopt}, .out_shardings = {s}});
  EXPECT_EQ(j(ts::device_put(x, s), 5).to_vector<float>()[7], 40.0f);
  EXPECT_EQ(seen, 5);
  auto array_static =
      ts::custom_partitioning([](const ts::Array& a, const ts::Array& b) { return a + b; }, {.static_argnums = {1}});
  EXPECT_THROW(array_static(x, x), ts::ValueError);  // an Array listed in static_argnums
  auto bad = ts::custom_partitioning([](const ts::Array& a) { return a; }, {.static_argnums = {3}});
  EXPECT_THROW(bad(x), ts::IndexError);
}

// ---- transformations act on the function ----

TEST(CustomPartitioning, GradAndVmapTransformTheFunction) {
  auto f = ts::custom_partitioning([](const ts::Array& x) { return ts::sin(x) * x; }, {.name = "sinx"});
  f.def_partition({.partition = [](const ts::Mesh& m, const std::vector<ts::ShardedShape>& a,
                                   const std::vector<ts::ShardedShape>&) {
    ts::Sharding s = a[0].sharding;
    return ts::PartitionResult{
        m, [](const std::vector<ts::Array>& xs) { return std::vector<ts::Array>{ts::sin(xs[0]) * xs[0]}; }, {s}, {s}};
  }});
  transform_testing::check_grads([&](const std::vector<ts::Array>& xs) { return f(xs[0]); }, {uniform({3, 4}, 5)});
  ts::Array x = uniform({3, 4}, 6);
  ts::Array g = ts::grad([&](const ts::Array& v) { return ts::sum(f(v)); })(x);
  expect_close(g, ts::cos(x) * x + ts::sin(x), 1e-12, "grad");
  ts::Array v = ts::vmap([&](const ts::Array& row) { return f(row); })(x);
  expect_close(v, ts::sin(x) * x, 1e-12, "vmap");
  auto my_fft = make_my_fft();
  ts::Array c = complex_input({3, 8}, 7);
  expect_complex_close(ts::vmap([&](const ts::Array& row) { return my_fft(row); })(c), ts::fft::fft(c));
  // grad under a partitioned jit: the derivative is partitioned like ordinary code.
  ts::Sharding s = ts::NamedSharding(mesh8(), ts::P("x"));
  ts::Array x8 = uniform({8, 4}, 8);
  auto jg = ts::jit(ts::grad([&](const ts::Array& w) { return ts::sum(f(w)); }), {.in_shardings = {s}});
  expect_close(jg(ts::device_put(x8, s)), ts::cos(x8) * x8 + ts::sin(x8), 1e-12, "jit(grad)");
}

// ---- sharding rule strings ----

/// A transpose whose rule says the result's dimensions are the operand's swapped.
auto make_transpose(ts::PartitionOptions extra = {}) {
  auto t = ts::custom_partitioning([](const ts::Array& a) { return ts::transpose(a); }, {.name = "my_transpose"});
  extra.partition = [](const ts::Mesh& m, const std::vector<ts::ShardedShape>& a,
                       const std::vector<ts::ShardedShape>& r) {
    return ts::PartitionResult{
        m,
        [](const std::vector<ts::Array>& xs) { return std::vector<ts::Array>{ts::transpose(xs[0])}; },
        {r[0].sharding},
        {a[0].sharding}};
  };
  t.def_partition(std::move(extra));
  return t;
}

TEST(CustomPartitioning, RuleStringInfersTheResultSharding) {
  ts::Mesh mesh = ts::make_mesh({2, 4}, {"x", "y"});
  ts::Sharding s = ts::NamedSharding(mesh, ts::P("x", "y"));
  ts::Array x = uniform({4, 8}, 9);
  auto t = make_transpose({.sharding_rule = "i j -> j i"});
  auto j = ts::jit(t, {.in_shardings = {s}});
  ts::Array r = j(ts::device_put(x, s));
  expect_close(r, ts::transpose(x), 0, "transpose");
  EXPECT_TRUE(r.sharding().spec().equivalent(ts::P("y", "x"), 2)) << r.sharding();
  std::string text = j.lower(ts::device_put(x, s)).compile().as_text();
  EXPECT_EQ(text.find("all_gather"), std::string::npos) << text;
  EXPECT_EQ(text.find("all_to_all"), std::string::npos) << text;
}

TEST(CustomPartitioning, InferCallbackDecidesTheResultSharding) {
  ts::Mesh mesh = ts::make_mesh({2, 4}, {"x", "y"});
  ts::Sharding s = ts::NamedSharding(mesh, ts::P("x", "y"));
  auto t = make_transpose({.infer_sharding_from_operands = [](const ts::Mesh& m, const std::vector<ts::ShardedShape>& a,
                                                              const std::vector<ts::ShardedShape>&) {
    const auto& spec = a[0].sharding.spec();
    return std::vector<ts::Sharding>{ts::NamedSharding(m, ts::P(spec[1], spec[0]))};
  }});
  ts::Array x = uniform({4, 8}, 10);
  ts::Array r = ts::jit(t, {.in_shardings = {s}})(ts::device_put(x, s));
  expect_close(r, ts::transpose(x), 0, "transpose");
  EXPECT_TRUE(r.sharding().spec().equivalent(ts::P("y", "x"), 2)) << r.sharding();
}

TEST(CustomPartitioning, RuleStringWithAContractedFactorAndPsumInLowerFn) {
  ts::Mesh mesh = mesh8();
  ts::Sharding cols = ts::NamedSharding(mesh, ts::P(ts::none, "x")), rows = ts::NamedSharding(mesh, ts::P("x"));
  auto mm = ts::custom_partitioning([](const ts::Array& a, const ts::Array& b) { return ts::matmul(a, b); },
                                    {.name = "my_matmul"});
  mm.def_partition(
      {.partition =
           [](const ts::Mesh& m, const std::vector<ts::ShardedShape>& a, const std::vector<ts::ShardedShape>& r) {
             // Local products over each device's slice of k, summed over x.
             auto lower = [](const std::vector<ts::Array>& xs) {
               return std::vector<ts::Array>{ts::psum(ts::matmul(xs[0], xs[1]), "x")};
             };
             return ts::PartitionResult{m, lower, {r[0].sharding}, {a[0].sharding, a[1].sharding}};
           },
       .sharding_rule = "i k, k j -> i j"});
  ts::Array a = uniform({4, 16}, 15), b = uniform({16, 3}, 16);
  auto j = ts::jit(mm, {.in_shardings = {cols, rows}});
  ts::Array r = j(ts::device_put(a, cols), ts::device_put(b, rows));
  expect_close(r, ts::matmul(a, b), 1e-12, "matmul");
  EXPECT_TRUE(r.sharding().is_fully_replicated()) << r.sharding();  // k is summed: the result is whole
  std::string text = j.lower(ts::device_put(a, cols), ts::device_put(b, rows)).compile().as_text();
  EXPECT_NE(text.find("all_reduce"), std::string::npos) << text;
  EXPECT_EQ(text.find("all_gather"), std::string::npos) << text;
}

TEST(CustomPartitioning, RuleStringParsesFactorsReductionsAndEllipsis) {
  using tessel::sharding::bind_rule_string;
  using tessel::sharding::parse_rule_string;
  auto rs = parse_rule_string("b i, i j -> b j", "t");
  ASSERT_EQ(rs.operands.size(), 2u);
  ASSERT_EQ(rs.results.size(), 1u);
  std::vector<ts::Aval> ins{ts::Aval({2, 3}, ts::f32), ts::Aval({3, 5}, ts::f32)}, outs{ts::Aval({2, 5}, ts::f32)};
  auto rule = bind_rule_string(rs, ins, outs, "t");
  ASSERT_EQ(rule.factors.size(), 3u);  // b, i, j
  EXPECT_EQ(rule.operands[0][1], rule.operands[1][0]);
  EXPECT_EQ(rule.factors[size_t(rule.operands[0][1])], tessel::ir::Combine::kSum);  // i: only on the left
  EXPECT_EQ(rule.factors[size_t(rule.results[0][0])], tessel::ir::Combine::kNone);
  // `...` covers the leading dimensions, the same number in every term; several results.
  auto e = bind_rule_string(parse_rule_string("... i -> ... i, ...", "t"),
                            std::vector<ts::Aval>{ts::Aval({4, 2, 3}, ts::f32)},
                            std::vector<ts::Aval>{ts::Aval({4, 2, 3}, ts::f32), ts::Aval({4, 2}, ts::f32)}, "t");
  EXPECT_EQ(e.operands[0], e.results[0]);
  EXPECT_EQ(e.results[1], (std::vector<int>{e.operands[0][0], e.operands[0][1]}));
  // Inference: operand splits carry to the result; a split reduction factor does not.
  ts::Mesh mesh = ts::make_mesh({2, 4}, {"x", "y"});
  std::vector<std::optional<ts::Sharding>> known{ts::NamedSharding(mesh, ts::P("x", "y")), std::nullopt};
  auto inferred = tessel::sharding::infer_with_rule(rule, mesh, known);
  ASSERT_TRUE(inferred[0].has_value());
  EXPECT_TRUE(inferred[0]->spec().equivalent(ts::P("x", ts::none), 2)) << *inferred[0];
  auto back = tessel::sharding::propagate_with_rule(
      rule, mesh, std::vector<std::optional<ts::Sharding>>{ts::NamedSharding(mesh, ts::P("x", "y"))});
  EXPECT_TRUE(back[0]->spec().equivalent(ts::P("x", ts::none), 2)) << *back[0];
  EXPECT_TRUE(back[1]->spec().equivalent(ts::P(ts::none, "y"), 2)) << *back[1];
}

void expect_value_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no ValueError";
  } catch (const ts::ValueError& e) {
    std::string m = e.what();
    for (auto& p : parts) EXPECT_NE(m.find(p), std::string::npos) << "'" << p << "' not in: " << m;
  }
}

TEST(CustomPartitioning, MalformedRuleStringNamesTheTextAndPosition) {
  auto f = ts::custom_partitioning([](const ts::Array& a) { return a; }, {.name = "ident"});
  expect_value_error([&] { f.def_partition({.sharding_rule = "i j"}); }, {"custom_partitioning", "'i j'", "'->'"});
  expect_value_error([&] { f.def_partition({.sharding_rule = "i (j k) -> i"}); }, {"'i (j k) -> i'", "position 2"});
  expect_value_error([&] { f.def_partition({.sharding_rule = "i i -> i"}); }, {"position 2", "'i'"});
  expect_value_error([&] { f.def_partition({.sharding_rule = "i -> i -> i"}); }, {"position 7"});
  expect_value_error([&] { f.def_partition({.sharding_rule = "i, j$ -> i"}); }, {"position 4", "'$'"});
}

TEST(CustomPartitioning, RuleStringOfTheWrongRankOrCountIsAnError) {
  ts::Array x = uniform({4, 8}, 11);
  auto f = ts::custom_partitioning([](const ts::Array& a) { return a * 2.0; }, {.name = "twice"});
  f.def_partition({.sharding_rule = "i -> i"});
  expect_value_error([&] { f(x); },
                     {"custom_partitioning", "'twice'", "'i -> i'", "argument 0", "rank 2", "position 0"});
  f.def_partition({.sharding_rule = "i j, k -> i j"});
  expect_value_error([&] { f(x); }, {"2 argument term(s)", "1 argument(s)"});
  f.def_partition({.sharding_rule = "i j -> i j, i"});
  expect_value_error([&] { f(x); }, {"2 result term(s)"});
}

// ---- validation of what partition returns ----

ts::PartitionOptions partition_returning(std::vector<ts::PartitionSpec> arg_specs,
                                         std::vector<ts::PartitionSpec> res_specs) {
  return {.partition = [=](const ts::Mesh& m, const std::vector<ts::ShardedShape>&,
                           const std::vector<ts::ShardedShape>&) {
    ts::PartitionResult r{m, [](const std::vector<ts::Array>& xs) { return std::vector<ts::Array>{xs[0]}; }, {}, {}};
    for (auto& p : arg_specs) r.arg_shardings.push_back(ts::NamedSharding(m, p));
    for (auto& p : res_specs) r.result_shardings.push_back(ts::NamedSharding(m, p));
    return r;
  }};
}

TEST(CustomPartitioning, PartitionReturningShardingsOfTheWrongRankIsAValueError) {
  ts::Sharding s = ts::NamedSharding(mesh8(), ts::P("x"));
  ts::Array y = ts::device_put(uniform({8, 4}, 12), s);
  auto f = ts::custom_partitioning([](const ts::Array& a) { return a; }, {.name = "ident"});
  f.def_partition(partition_returning({ts::P("x", ts::none, ts::none)}, {ts::P("x")}));
  expect_value_error([&] { ts::jit(f, {.in_shardings = {s}})(y); },
                     {"custom_partitioning", "'ident'", "argument 0", "rank 3", "rank 2"});
  f.def_partition(partition_returning({ts::P("x")}, {ts::P("x", ts::none, ts::none)}));
  expect_value_error([&] { ts::jit(f, {.in_shardings = {s}})(y); }, {"'ident'", "result 0", "rank 3"});
}

TEST(CustomPartitioning, PartitionReturningTheWrongNumberOfShardingsIsAValueError) {
  ts::Sharding s = ts::NamedSharding(mesh8(), ts::P("x"));
  ts::Array y = ts::device_put(uniform({8, 4}, 13), s);
  auto f = ts::custom_partitioning([](const ts::Array& a) { return a; }, {.name = "ident"});
  f.def_partition(partition_returning({ts::P("x"), ts::P("x")}, {ts::P("x")}));
  expect_value_error([&] { ts::jit(f, {.in_shardings = {s}})(y); },
                     {"custom_partitioning", "'ident'", "2 argument sharding(s)", "1 argument(s)"});
  auto nopart = ts::custom_partitioning([](const ts::Array& a) { return a; }, {.name = "nopart"});
  expect_value_error([&] { ts::jit(nopart, {.in_shardings = {s}})(y); }, {"'nopart'", "def_partition"});
}

TEST(CustomPartitioning, ClosingOverATracerIsAValueError) {
  ts::Array x = uniform({4}, 14);
  expect_value_error(
      [&] {
        ts::jit([](const ts::Array& a) {
          auto f = ts::custom_partitioning([a](const ts::Array& b) { return a + b; }, {.name = "closure"});
          return f(a);
        })(x);
      },
      {"'closure'", "pass it as an argument"});
}

}  // namespace
