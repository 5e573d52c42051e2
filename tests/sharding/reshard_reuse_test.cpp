// A value resharded for several users is resharded once per layout in a partitioned
// program (8 devices): the collective appears once in the per-device text, and the result
// is the one-device result.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sharding/sharding_test_util.h"
#include "tessel/tessel.h"

namespace ts = tessel;
using sharding_test::range_f32;
using sharding_test::count;

namespace {

void expect_equal(const ts::Array& got, const ts::Array& want) {
  ASSERT_EQ(got.shape(), want.shape());
  EXPECT_EQ(got.to_vector<float>(), want.to_vector<float>());
}

ts::Mesh line() { return ts::make_mesh({8}, {"x"}); }

}  // namespace

// g(a) + h(a), both needing `a` whole along its split dimension: one all_gather.
TEST(PartitionReuse, OperandGatheredForTwoUsersIsGatheredOnce) {
  auto fn = [](const ts::Array& a) {
    ts::Array g = ts::cumsum(a, 0) - ts::cummax(a, 0);  // scans along the split dimension
    ts::Array h = ts::cumsum(a, 0, /*reverse=*/true);
    return g + h;
  };
  auto f = ts::jit(fn, {.in_shardings = {ts::NamedSharding(line(), ts::P("x", ts::none))}});
  const ts::Array a = range_f32({16, 6}, 0.5f);
  const std::string text = f.lower(a).compile().as_text();
  EXPECT_EQ(count(text, "= all_gather["), 1) << text;
  expect_equal(f(a), fn(a));
}

// Two transposes of a row-split operand feeding element-wise work: one all_to_all.
TEST(PartitionReuse, OperandTransposedForTwoUsersIsExchangedOnce) {
  auto fn = [](const ts::Array& a) {
    return ts::sin(ts::transpose(a, ts::Axes{1, 0})) + ts::cos(ts::transpose(a, ts::Axes{1, 0}));
  };
  const ts::NamedSharding rows(line(), ts::P("x", ts::none));
  auto f = ts::jit(fn, {.in_shardings = {rows}, .out_shardings = {rows}});
  const ts::Array a = range_f32({16, 24}, 0.01f);
  const std::string text = f.lower(a).compile().as_text();
  EXPECT_EQ(count(text, "= all_to_all["), 1) << text;
  EXPECT_EQ(count(text, "= all_gather["), 0) << text;
  const auto got = f(a).to_vector<float>(), want = fn(a).to_vector<float>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;
}

// A partial result (a contraction over a split dimension) used by an equation and returned
// twice: one all_reduce completes it for all three.
TEST(PartitionReuse, PartialResultCompletedOnceForUsersAndOutputs) {
  auto fn = [](const ts::Array& a, const ts::Array& b) {
    ts::Array c = ts::matmul(a, b);
    return std::vector<ts::Array>{c, c * 2.0f, c};
  };
  auto f = ts::jit(fn, {.in_shardings = {ts::NamedSharding(line(), ts::P(ts::none, "x")),
                                         ts::NamedSharding(line(), ts::P("x", ts::none))}});
  const ts::Array a = range_f32({8, 16}, 0.25f), b = range_f32({16, 4}, 0.5f);
  const std::string text = f.lower(a, b).compile().as_text();
  EXPECT_EQ(count(text, "= all_reduce["), 1) << text;
  const auto got = f(a, b), want = fn(a, b);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) expect_equal(got[i], want[i]);
}

// A value gathered for one user and needed split another way by a second user is sliced
// from the gathered copy: one all_gather, no all_to_all.
TEST(PartitionReuse, SecondLayoutIsSlicedFromAGatheredCopy) {
  const ts::Mesh mesh = line();
  const ts::NamedSharding rows(mesh, ts::P("x", ts::none)), cols(mesh, ts::P(ts::none, "x"));
  auto fn = [&](const ts::Array& a) {
    // Wanted whole: a gathered. Wanted split by columns: a sliced from the gathered copy.
    ts::Array whole = ts::with_sharding_constraint(ts::cumsum(a, 0), ts::NamedSharding(mesh, ts::P()));
    ts::Array by_cols = ts::with_sharding_constraint(a, cols) * 2.0f;
    return whole + by_cols;
  };
  auto f = ts::jit(fn, {.in_shardings = {rows}});
  const ts::Array a = range_f32({16, 16}, 0.5f);
  const std::string text = f.lower(a).compile().as_text();
  EXPECT_EQ(count(text, "= all_gather["), 1) << text;
  EXPECT_EQ(count(text, "all_to_all"), 0) << text;
  expect_equal(f(a), fn(a));
}
