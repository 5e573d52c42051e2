// Meshes, shardings, device_put, and the partitioner on canonical programs (8 devices).
#include <gtest/gtest.h>

#include <regex>

#include "sharding/sharding_test_util.h"
#include "tessel/tessel.h"

namespace ts = tessel;
using sharding_test::range_f32;
using sharding_test::count;

namespace {

void expect_same(const ts::Array& a, const ts::Array& b, float tol = 1e-5f) {
  ASSERT_EQ(a.shape(), b.shape());
  auto x = a.to_vector<float>(), y = b.to_vector<float>();
  for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(x[i], y[i], tol * (1 + std::abs(y[i]))) << "at " << i;
}

}  // namespace

TEST(Mesh, ShapeNamesAndErrors) {
  ts::Mesh m = ts::make_mesh({2, 4}, {"x", "y"});
  EXPECT_EQ(m.size(), 8);
  EXPECT_EQ(m.axis_size("y"), 4);
  EXPECT_EQ(m.to_string(), "Mesh('x': 2, 'y': 4)");
  EXPECT_THROW(ts::make_mesh({2, 4}, {"x", "x"}), ts::ValueError);
  EXPECT_THROW(ts::make_mesh({16}, {"x"}), ts::ValueError);
  EXPECT_THROW(ts::make_mesh({2, 4}, {"x"}), ts::ValueError);
  try {
    m.axis_size("z");
    FAIL();
  } catch (const ts::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("'z'"), std::string::npos);
  }
}

TEST(Sharding, SpecValidationAndLayout) {
  ts::Mesh m = ts::make_mesh({2, 4}, {"x", "y"});
  EXPECT_THROW(ts::NamedSharding(m, ts::P("x", "x")), ts::ValueError);
  EXPECT_THROW(ts::NamedSharding(m, ts::P("z")), ts::ValueError);
  EXPECT_THROW(ts::NamedSharding(m, ts::P(ts::axes("x", "y"), "y")), ts::ValueError);
  ts::NamedSharding s(m, ts::P("x", ts::none));
  EXPECT_EQ(s.spec().to_string(), "P('x', None)");
  EXPECT_EQ(s.shard_shape({10, 3}), (ts::Shape{5, 3}));
  EXPECT_FALSE(s.is_fully_replicated());
  EXPECT_TRUE(ts::NamedSharding(m, ts::P()).is_fully_replicated());
  ts::NamedSharding s2(m, ts::P(ts::axes("x", "y")));
  auto idx = s2.device_indices({13});
  EXPECT_EQ(idx[0][0], (std::pair<int64_t, int64_t>{0, 2}));
  EXPECT_EQ(idx[6][0], (std::pair<int64_t, int64_t>{12, 13}));
  EXPECT_EQ(idx[7][0], (std::pair<int64_t, int64_t>{13, 13}));
  EXPECT_THROW(s.check_rank(1, "test"), ts::ValueError);
}

TEST(Sharding, DevicePutSplitsAndAssembles) {
  ts::Mesh m = ts::make_mesh({2, 4}, {"x", "y"});
  ts::Array x = range_f32({6, 10});
  ts::Array xs = ts::device_put(x, ts::NamedSharding(m, ts::P("x", "y")));
  EXPECT_EQ(xs.sharding(), ts::Sharding(ts::NamedSharding(m, ts::P("x", "y"))));
  EXPECT_EQ(xs.devices().size(), 8u);
  EXPECT_THROW(xs.device(), ts::ValueError);
  auto shards = xs.addressable_shards();
  ASSERT_EQ(shards.size(), 8u);
  // Device 3 holds rows 0..2 and columns 9..9 (the last piece of a dimension of 10 over 4).
  EXPECT_EQ(shards[3].index[1], (std::pair<int64_t, int64_t>{9, 10}));
  EXPECT_EQ(shards[3].data.shape(), (ts::Shape{3, 1}));
  EXPECT_EQ(shards[3].data.to_vector<float>(), (std::vector<float>{9, 19, 29}));
  EXPECT_EQ(shards[5].data.device(), m.devices()[5]);
  expect_same(xs, x);
  // Resharding keeps the values; back to one device too.
  ts::Array ys = ts::device_put(xs, ts::NamedSharding(m, ts::P(ts::none, ts::axes("x", "y"))));
  expect_same(ys, x);
  ts::Array z = ts::device_put(ys, ts::SingleDeviceSharding(ts::devices()[2]));
  EXPECT_EQ(z.device(), ts::devices()[2]);
  expect_same(z, x);
}

TEST(Partition, ElementwiseAndReductionKeepSharding) {
  ts::Mesh m = ts::make_mesh({8}, {"x"});
  ts::NamedSharding row(m, ts::P("x"));
  auto f = [](const ts::Array& a, const ts::Array& b) { return ts::sum(ts::sin(a) * b + 1.0f, {1}); };
  ts::Array a = range_f32({64, 32}), b = range_f32({64, 32}) * 0.5f;
  auto jf = ts::jit(f, {.in_shardings = {row, row}});
  ts::Array r = jf(a, b);
  expect_same(r, f(a, b), 1e-4f);
  EXPECT_EQ(r.sharding(), ts::Sharding(row));
  std::string text = jf.lower(a, b).compile().as_text();
  EXPECT_EQ(count(text, "all_"), 0) << text;  // no communication: every row is local
  // A reduction over the split dimension: partial sums and one all-reduce.
  auto g = ts::jit([](const ts::Array& a) { return ts::sum(a, {0}); }, {.in_shardings = {row}});
  expect_same(g(a), ts::sum(a, {0}));
  EXPECT_EQ(count(g.lower(a).compile().as_text(), "all_reduce"), 1);
}

TEST(Partition, CanonicalReshardIsOneAllToAll) {
  ts::Mesh m = ts::make_mesh({8}, {"x"});
  auto f = ts::jit([](const ts::Array& a) { return a; },
                   {.in_shardings = {ts::NamedSharding(m, ts::P("x", ts::none))},
                    .out_shardings = {ts::NamedSharding(m, ts::P(ts::none, "x"))}});
  ts::Array a = range_f32({16, 24});
  ts::Array r = f(a);
  expect_same(r, a);
  EXPECT_EQ(r.sharding(), ts::Sharding(ts::NamedSharding(m, ts::P(ts::none, "x"))));
  std::string text = f.lower(a).compile().as_text();
  EXPECT_EQ(count(text, "all_to_all"), 1) << text;
  EXPECT_EQ(count(text, "all_gather"), 0) << text;
}

TEST(Partition, ContractingMatmulIsLocalPlusAllReduce) {
  ts::Mesh m = ts::make_mesh({8}, {"x"});
  auto f = ts::jit([](const ts::Array& a, const ts::Array& b) { return ts::matmul(a, b); },
                   {.in_shardings = {ts::NamedSharding(m, ts::P(ts::none, "x")), ts::NamedSharding(m, ts::P("x", ts::none))}});
  ts::Array a = range_f32({8, 64}) * 0.01f, b = range_f32({64, 16}) * 0.01f;
  expect_same(f(a, b), ts::matmul(a, b), 1e-4f);
  std::string text = f.lower(a, b).compile().as_text();
  EXPECT_EQ(count(text, "dot_general"), 1) << text;
  EXPECT_EQ(count(text, "all_reduce"), 1) << text;
  EXPECT_EQ(count(text, "all_gather"), 0) << text;
  // Wanting the result split by rows turns the all-reduce into a reduce-scatter.
  auto g = ts::jit([](const ts::Array& a, const ts::Array& b) { return ts::matmul(a, b); },
                   {.in_shardings = {ts::NamedSharding(m, ts::P(ts::none, "x")), ts::NamedSharding(m, ts::P("x", ts::none))},
                    .out_shardings = {ts::NamedSharding(m, ts::P("x", ts::none))}});
  expect_same(g(a, b), ts::matmul(a, b), 1e-4f);
  std::string t2 = g.lower(a, b).compile().as_text();
  EXPECT_EQ(count(t2, "reduce_scatter"), 1) << t2;
  EXPECT_EQ(count(t2, "all_reduce"), 0) << t2;
}

TEST(Partition, NonDivisibleSizesArePaddedAndMasked) {
  ts::Mesh m = ts::make_mesh({2, 4}, {"x", "y"});
  ts::Array a = range_f32({13, 7}) - 40.0f;
  for (auto spec : {ts::P("x", "y"), ts::P(ts::axes("y", "x")), ts::P("y"), ts::P(ts::none, ts::axes("x", "y"))}) {
    auto f = ts::jit([](const ts::Array& x) { return ts::max(ts::exp(x * 0.01f), {0}) + ts::sum(x, {0}); },
                     {.in_shardings = {ts::NamedSharding(m, spec)}});
    SCOPED_TRACE(spec.to_string());
    expect_same(f(a), ts::max(ts::exp(a * 0.01f), {0}) + ts::sum(a, {0}), 1e-4f);
    auto g = ts::jit([](const ts::Array& x) { return ts::sum(x); }, {.in_shardings = {ts::NamedSharding(m, spec)}});
    expect_same(g(a), ts::sum(a), 1e-4f);
  }
}

TEST(Partition, ConstraintInsideJitAndUncommittedInputs) {
  ts::Mesh m = ts::make_mesh({8}, {"x"});
  ts::NamedSharding s(m, ts::P("x"));
  auto f = ts::jit([&](const ts::Array& a) {
    ts::Array b = ts::with_sharding_constraint(a * 2.0f, s);
    return ts::cumsum(b, 0) + ts::sum(b);
  });
  ts::Array a = range_f32({40});
  expect_same(f(a), ts::cumsum(a * 2.0f, 0) + ts::sum(a * 2.0f));
  // Eager operations on sharded arrays run partitioned and keep the layout.
  ts::Array as = ts::device_put(a, s);
  ts::Array e = ts::exp(as * 0.1f);
  EXPECT_EQ(e.sharding(), ts::Sharding(s));
  expect_same(e, ts::exp(a * 0.1f));
}

TEST(Partition, GradAndVmapThroughShardings) {
  ts::Mesh m = ts::make_mesh({8}, {"x"});
  ts::NamedSharding s(m, ts::P("x"));
  auto loss = [&](const ts::Array& w) { return ts::sum(ts::tanh(ts::with_sharding_constraint(w, s)) * w); };
  ts::Array w = range_f32({24}) * 0.1f;
  ts::Array g = ts::jit(ts::grad(loss))(w);
  expect_same(g, ts::grad([](const ts::Array& w) { return ts::sum(ts::tanh(w) * w); })(w), 1e-4f);
  auto batched = ts::jit(ts::vmap([&](const ts::Array& r) { return ts::with_sharding_constraint(r * 3.0f, s); }, {0}, {0}));
  ts::Array xs = range_f32({3, 16});
  expect_same(batched(xs), xs * 3.0f);
}

TEST(Partition, ErrorsNameTheProblem) {
  ts::Mesh m8 = ts::make_mesh({8}, {"x"});
  ts::Mesh m4 = ts::make_mesh({4}, {"x"}, {ts::devices()[4], ts::devices()[5], ts::devices()[6], ts::devices()[7]});
  ts::Array a = ts::device_put(range_f32({16}), ts::NamedSharding(m8, ts::P("x")));
  auto f = ts::jit([](const ts::Array& x) { return x + 1.0f; }, {.in_shardings = {ts::NamedSharding(m4, ts::P("x"))}});
  try {
    f(a);
    FAIL() << "expected a mesh mismatch error";
  } catch (const ts::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("other devices"), std::string::npos) << e.what();
  }
  ts::Array c = ts::device_put(range_f32({16}), ts::devices()[0]);
  EXPECT_THROW(f(c), ts::ValueError);  // committed to a device outside the mesh
  EXPECT_THROW(ts::jit([](const ts::Array& x) { return x; }, {.in_shardings = {ts::NamedSharding(m8, ts::P("x", ts::none))}})(
                   range_f32({16})),
               ts::ValueError);  // spec longer than the rank
  EXPECT_THROW((ts::jit([](const ts::Array& x) { return x; }, {.in_shardings = {std::nullopt, std::nullopt}})(range_f32({4}))),
               ts::ValueError);
}

TEST(Partition, PlannerPrefersSlicingThenPermute) {
  ts::Mesh m = ts::make_mesh({2, 4}, {"x", "y"});
  ts::Array a = range_f32({16, 8});
  auto reshard = [&](ts::PartitionSpec from, ts::PartitionSpec to) {
    return ts::jit([](const ts::Array& x) { return x; },
                   {.in_shardings = {ts::NamedSharding(m, from)}, .out_shardings = {ts::NamedSharding(m, to)}});
  };
  // Splitting further is local: a dynamic slice, no communication.
  auto more = reshard(ts::P("x"), ts::P(ts::axes("x", "y")));
  std::string t1 = more.lower(a).compile().as_text();
  EXPECT_EQ(count(t1, "dynamic_slice"), 1) << t1;
  EXPECT_EQ(count(t1, "all_"), 0) << t1;
  expect_same(more(a), a);
  // The same pieces on other devices: one collective-permute.
  auto perm = reshard(ts::P(ts::axes("x", "y")), ts::P(ts::axes("y", "x")));
  std::string t2 = perm.lower(a).compile().as_text();
  EXPECT_EQ(count(t2, "collective_permute"), 1) << t2;
  EXPECT_EQ(count(t2, "all_"), 0) << t2;
  expect_same(perm(a), a);
  // Splitting less is an all-gather.
  auto less = reshard(ts::P(ts::axes("x", "y")), ts::P("x"));
  std::string t3 = less.lower(a).compile().as_text();
  EXPECT_EQ(count(t3, "all_gather"), 1) << t3;
  expect_same(less(a), a);
}

// jax.make_array_from_single_device_arrays: the pieces, one per device in any order, make
// the array device_put would make, sharing their buffers.
TEST(Sharding, MakeArrayFromSingleDeviceArrays) {
  ts::Mesh m = ts::make_mesh({4, 2}, {"x", "y"});
  for (const ts::Shape& shape : std::vector<ts::Shape>{{8, 2}, {6, 10}, {7, 3}}) {  // even and uneven pieces
    for (const ts::PartitionSpec& spec : {ts::P("x", "y"), ts::P(ts::none, "y"), ts::P()}) {
      ts::NamedSharding s(m, spec);
      ts::Array x = range_f32(shape);
      const auto indices = s.device_indices(shape);
      std::vector<ts::Array> pieces;
      for (size_t pos = s.device_set().size(); pos-- > 0;) {  // reversed: order does not matter
        ts::Shape start, limit;
        for (auto [b, e] : indices[pos]) start.push_back(b), limit.push_back(e);
        pieces.push_back(ts::device_put(ts::slice(x, start, limit), s.device_set()[pos]));
      }
      ts::Array a = ts::make_array_from_single_device_arrays(shape, s, pieces);
      const std::string what = ts::shape_to_string(shape) + " " + spec.to_string();
      EXPECT_EQ(a.shape(), shape) << what;
      EXPECT_EQ(a.sharding(), ts::Sharding(s)) << what;
      expect_same(a, x);
      auto shards = a.addressable_shards();
      ASSERT_EQ(shards.size(), 8u) << what;
      for (size_t pos = 0; pos < 8; ++pos)
        EXPECT_EQ(shards[pos].data.to_vector<float>(), pieces[7 - pos].to_vector<float>()) << what << " piece " << pos;
      // It computes like device_put's array.
      expect_same(ts::jit([](const ts::Array& v) { return ts::sum(v * v, {0}); })(a),
                  ts::sum(x * x, {0}));
    }
  }
  // A single-device sharding takes the one array.
  ts::Array one = ts::device_put(range_f32({3}), ts::devices()[5]);
  ts::Array same = ts::make_array_from_single_device_arrays({3}, ts::SingleDeviceSharding(ts::devices()[5]), {one});
  EXPECT_EQ(same.device(), ts::devices()[5]);
  EXPECT_EQ(same.to_vector<float>(), (std::vector<float>{0, 1, 2}));
}

TEST(Sharding, MakeArrayFromSingleDeviceArraysErrors) {
  ts::Mesh m = ts::make_mesh({4}, {"x"});
  ts::NamedSharding s(m, ts::P("x"));
  std::vector<ts::Array> pieces;
  for (int i = 0; i < 4; ++i) pieces.push_back(ts::device_put(ts::full({2}, float(i)), m.devices()[size_t(i)]));
  auto message = [&](const std::vector<ts::Array>& ps, const ts::Shape& shape = {8}) {
    try {
      ts::make_array_from_single_device_arrays(shape, s, ps);
    } catch (const ts::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  auto has = [](const std::string& msg, const std::string& part) {
    EXPECT_NE(msg.find(part), std::string::npos) << msg;
  };
  EXPECT_EQ(ts::make_array_from_single_device_arrays({8}, s, pieces).to_vector<float>(),
            (std::vector<float>{0, 0, 1, 1, 2, 2, 3, 3}));
  has(message({pieces[0], pieces[1], pieces[2]}), "no array for cpu:3");
  has(message({pieces[0], pieces[1], pieces[2], pieces[2]}), "array 3 is a second piece for cpu:2");
  has(message({pieces[0], pieces[1], pieces[2], ts::device_put(ts::full({2}, 3.0f), ts::devices()[7])}),
      "array 3 is on cpu:7, which is not a device of");
  has(message(pieces, {9}), "array 0 on cpu:0 has shape (2,), but");
  has(message({pieces[0], pieces[1], pieces[2], ts::device_put(ts::zeros({2}, ts::i32), m.devices()[3])}),
      "array 3 has dtype int32 but array 0 has float32");
  has(message({pieces[0], pieces[1], pieces[2], ts::Array()}), "array 3 is empty");
}
