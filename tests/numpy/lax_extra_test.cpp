// include/tessel/lax_extra.h beyond the parity data (tests/parity/cases_lax.py): the
// collectives inside shard_map, the functions with no value to record (empty, composite,
// optimization_barrier, the forwarding solves) and the error paths.
#include <gtest/gtest.h>

#include "expect_error.h"
#include "tessel/lax_extra.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace lax = tessel::lax;
using tessel_test::expect_error;

namespace {
template <class T> std::vector<T> values(const ts::Array& a) { return a.to_vector<T>(); }
ts::Mesh mesh8() { return ts::make_mesh({8}, {"x"}); }
}  // namespace

TEST(LaxCollectives, AxisSizeAndPbroadcast) {
  ts::Array x = ts::arange(8, ts::f32);
  int64_t seen = 0;
  auto f = ts::shard_map(
      [&seen](const ts::Array& p) {
        seen = lax::axis_size("x");
        return lax::pbroadcast(p, "x", 3);
      },
      mesh8(), {ts::P("x")}, {ts::P("x")});
  EXPECT_EQ(values<float>(f(x)), std::vector<float>(8, 3.0f));
  EXPECT_EQ(seen, 8);
  auto bad = ts::shard_map([](const ts::Array& p) { return lax::pbroadcast(p, "x", 8); }, mesh8(), {ts::P("x")},
                           {ts::P("x")});
  expect_error<ts::ValueError>([&] { bad(x); }, {"pbroadcast", "source 8", "size 8"});
}

TEST(LaxCollectives, PshufflePswapaxesAndPcast) {
  ts::Array x = ts::arange(8, ts::f32);
  const std::vector<int64_t> perm{7, 6, 5, 4, 3, 2, 1, 0};
  auto f = ts::shard_map([&](const ts::Array& p) { return lax::pshuffle(p, "x", perm); }, mesh8(), {ts::P("x")},
                         {ts::P("x")});
  EXPECT_EQ(values<float>(f(x)), (std::vector<float>{7, 6, 5, 4, 3, 2, 1, 0}));
  // pswapaxes: device d holds row d of z (8 x 8) and gets column d.
  ts::Array z = ts::reshape(ts::arange(64, ts::f32), {8, 8});
  auto g = ts::shard_map([](const ts::Array& p) { return lax::pswapaxes(p, "x", 1); }, mesh8(), {ts::P("x")},
                         {ts::P("x")});
  EXPECT_EQ(values<float>(g(z)), values<float>(ts::reshape(ts::transpose(z), {64, 1})));
  auto h = ts::shard_map([](const ts::Array& p) { return lax::pcast(p, "x", "varying"); }, mesh8(), {ts::P("x")},
                         {ts::P("x")});
  EXPECT_EQ(values<float>(h(x)), values<float>(x));
  auto bad = ts::shard_map([](const ts::Array& p) { return lax::pshuffle(p, "x", {0, 0, 1, 2, 3, 4, 5, 6}); }, mesh8(),
                           {ts::P("x")}, {ts::P("x")});
  expect_error<ts::ValueError>([&] { bad(x); }, {"pshuffle", "not a permutation"});
  auto bad_to = ts::shard_map([](const ts::Array& p) { return lax::pcast(p, "x", "sideways"); }, mesh8(), {ts::P("x")},
                              {ts::P("x")});
  expect_error<ts::ValueError>([&] { bad_to(x); }, {"pcast", "sideways", "varying"});
}

TEST(LaxExtra, EmptyBarrierCompositeAndSolves) {
  ts::Array e = lax::empty({2, 3}, ts::i32);
  EXPECT_EQ(e.shape(), (ts::Shape{2, 3}));
  EXPECT_EQ(e.dtype(), ts::i32);
  ts::Array x = ts::arange(4, ts::f32);
  auto barrier = ts::jit([](const ts::Array& v) { return lax::optimization_barrier({v * 2.0f})[0] + 1.0f; });
  EXPECT_EQ(values<float>(barrier(x)), (std::vector<float>{1, 3, 5, 7}));
  auto sq = lax::composite([](const ts::Array& v) { return v * v; }, "my.square");
  EXPECT_EQ(values<float>(sq(x)), (std::vector<float>{0, 1, 4, 9}));
  EXPECT_EQ(values<float>(ts::grad([&](const ts::Array& v) { return ts::sum(sq(v)); })(x)), (std::vector<float>{0, 2, 4, 6}));
  expect_error<ts::ValueError>([] { lax::composite([](const ts::Array& v) { return v; }, ""); }, {"composite", "name"});
  // custom_linear_solve / custom_root forward to lax::linalg's: a diagonal system.
  ts::Array d = ts::Array(std::vector<float>{2, 4, 8});
  ts::Array b = ts::Array(std::vector<float>{2, 2, 2});
  auto matvec = [](const std::vector<ts::Array>& p, const ts::Array& v) { return p[0] * v; };
  auto solve = [&d](const std::function<ts::Array(const ts::Array&)>&, const ts::Array& r) { return r / d; };
  EXPECT_EQ(values<float>(lax::custom_linear_solve(matvec, {d}, b, solve, nullptr, true)),
            (std::vector<float>{1, 0.5f, 0.25f}));
  auto root_f = [](const std::vector<ts::Array>& p, const ts::Array& v) { return v * v - p[0]; };
  auto newton = [](const std::function<ts::Array(const ts::Array&)>& f, const ts::Array& x0) {
    ts::Array v = x0;
    for (int i = 0; i < 30; ++i) v = v - f(v) / (2.0f * v);
    return v;
  };
  auto tangent_solve = [](const std::function<ts::Array(const ts::Array&)>& g, const ts::Array& y) { return y / g(ts::ones_like(y)); };
  ts::Array r = lax::custom_root(root_f, {ts::Array(std::vector<float>{4, 9})}, ts::Array(std::vector<float>{1, 1}), newton,
                                 tangent_solve);
  EXPECT_NEAR(values<float>(r)[0], 2.0f, 1e-6);
  EXPECT_NEAR(values<float>(r)[1], 3.0f, 1e-6);
}

TEST(LaxExtra, ErrorsNameTheFunctionTheValuesAndTheFix) {
  ts::Array x = ts::reshape(ts::arange(20, ts::f32), {5, 4});
  ts::Array idx = ts::Array(std::vector<int32_t>{1, 2, 3, 0}).reshape({2, 2});
  lax::GatherDimensionNumbers rows{.offset_dims = {1}, .collapsed_slice_dims = {0}, .start_index_map = {0}};
  expect_error<ts::ShapeError>([&] { lax::gather(x, idx, rows, {1, 4}); }, {"gather", "2 entries", "(2, 2)", "(0,)"});
  ts::Array one = ts::Array(std::vector<int32_t>{1, 3}).reshape({2, 1});
  expect_error<ts::ShapeError>([&] { lax::gather(x, one, rows, {1, 5}); }, {"gather", "slice size 5", "[0, 4]"});
  expect_error<ts::ValueError>([&] { lax::gather(x, one, rows, {1, 4}, {.mode = "wrap"}); },
                               {"gather", "'wrap'", "clip"});
  expect_error<ts::ShapeError>([&] { lax::gather(x, one, rows, {2, 4}); }, {"gather", "dimension 0", "must be 1"});
  expect_error<ts::DTypeError>([&] { lax::gather(x, ts::astype(one, ts::f32), rows, {1, 4}); }, {"gather", "integer"});
  lax::ScatterDimensionNumbers srows{.update_window_dims = {1}, .inserted_window_dims = {0},
                                     .scatter_dims_to_operand_dims = {0}};
  expect_error<ts::DTypeError>([&] { lax::scatter_add(x, one, ts::ones({2, 4}, ts::i32), srows); },
                               {"scatter_add", "int32", "float32", "astype"});
  expect_error<ts::ShapeError>([&] { lax::scatter(x, one, ts::ones({2}, ts::f32), srows); },
                               {"scatter", "(2,)", "rank 2"});
  expect_error<ts::DTypeError>([] { lax::round(ts::arange(3)); }, {"round", "int32", "floating"});
  expect_error<ts::ValueError>([] { lax::integer_pow(ts::arange(3), -1); }, {"integer_pow", "-1", "float"});
  expect_error<ts::DTypeError>([] { lax::clz(ts::ones({2}, ts::f32)); }, {"clz", "float32", "integer"});
  expect_error<ts::DTypeError>([] { lax::population_count(ts::ones({2}, ts::f32)); }, {"population_count", "float32"});
  expect_error<ts::ValueError>([] { lax::reduce_precision(ts::ones({2}), 0, 7); }, {"reduce_precision", "exponent_bits 0"});
  expect_error<ts::ShapeError>([] { lax::select_n(ts::Array(int32_t(0)), {ts::ones({2}), ts::ones({3})}); },
                               {"select_n", "f32[2]", "f32[3]"});
  expect_error<ts::DTypeError>([] { lax::select_n(ts::Array(1.0f), {ts::ones({2}), ts::ones({2})}); },
                               {"select_n", "float32", "int32"});
  expect_error<ts::DTypeError>([&] { lax::argmax(x, 0, ts::f32); }, {"argmax", "float32", "int32"});
  expect_error<ts::ShapeError>([&] { lax::reduce(x, ts::zeros({2}), ts::add, {0}); }, {"reduce", "(2,)", "scalar"});
  expect_error<ts::ShapeError>(
      [] {
        lax::associative_scan([](const std::vector<ts::Array>& a, const std::vector<ts::Array>&) { return a; },
                              {ts::ones({3}), ts::ones({4})});
      },
      {"associative_scan", "(3,)", "(4,)"});
  expect_error<ts::ValueError>([&] { lax::collapse(x, 1, 0); }, {"collapse", "stop_dimension 0", "start_dimension 1"});
  expect_error<ts::IndexError>([&] { lax::index_in_dim(x, 5); }, {"index_in_dim", "index 5", "size 5"});
  expect_error<ts::ValueError>([&] { lax::broadcast_to_rank(x, 1); }, {"broadcast_to_rank", "rank 1", "(5, 4)"});
  expect_error<ts::ShapeError>([&] { lax::batch_matmul(x, ts::ones({2, 4, 5})); }, {"batch_matmul", "rank"});
  expect_error<ts::ShapeError>([&] { lax::ragged_dot(x, ts::ones({4, 5}), ts::ones({2}, ts::i32)); },
                               {"ragged_dot", "(g, k, n)"});
  expect_error<ts::ValueError>([&] { lax::approx_max_k(x, 5); }, {"approx_max_k", "k 5", "[1, 4]"});
  expect_error<ts::ValueError>([&] { lax::map([](const ts::Array& r) { return r; }, x, 0); }, {"map", "batch_size 0"});
  expect_error<ts::ValueError>([] { lax::conv_shape_tuple({1, 1, 5, 5}, {1, 1, 3, 3}, {1}, "SAME"); },
                               {"conv_shape_tuple", "1 strides", "2 spatial"});
  expect_error<ts::ValueError>([] { lax::padtype_to_pads({5}, {3}, {1}, "FULL"); }, {"padtype_to_pads", "FULL", "SAME"});
}

TEST(LaxExtra, ScatterApplyRepeatsFuncForDuplicates) {
  ts::Array x = ts::zeros({4});
  ts::Array idx = ts::Array(std::vector<int32_t>{1, 1, 2}).reshape({3, 1});
  lax::ScatterDimensionNumbers dn{.update_window_dims = {}, .inserted_window_dims = {0},
                                  .scatter_dims_to_operand_dims = {0}};
  auto inc = [](const ts::Array& v) { return v + 1.0f; };
  EXPECT_EQ(values<float>(lax::scatter_apply(x, idx, inc, dn, {3})), (std::vector<float>{0, 2, 1, 0}));
  auto jitted = ts::jit([&](const ts::Array& v) { return lax::scatter_apply(v, idx, inc, dn, {3}); });
  EXPECT_EQ(values<float>(jitted(x)), (std::vector<float>{0, 2, 1, 0}));
}

TEST(LaxExtra, GatherAndScatterWithoutStartsUseTheLeadingWindow) {
  // Index vectors of length 0: every one reads (or writes) the window at the origin.
  ts::Array x = ts::reshape(ts::arange(12, ts::f32), {3, 4});
  ts::Array idx = ts::zeros({2, 0}, ts::i32);
  ts::Array g = lax::gather(x, idx, {.offset_dims = {1, 2}, .collapsed_slice_dims = {}, .start_index_map = {}}, {2, 2});
  EXPECT_EQ(g.shape(), (ts::Shape{2, 2, 2}));
  EXPECT_EQ(values<float>(g), (std::vector<float>{0, 1, 4, 5, 0, 1, 4, 5}));  // JAX's values
  ts::Array u = ts::reshape(ts::arange(8, ts::f32), {2, 2, 2});
  ts::Array s = lax::scatter_add(x, idx, u, {.update_window_dims = {1, 2}, .inserted_window_dims = {},
                                             .scatter_dims_to_operand_dims = {}});
  EXPECT_EQ(values<float>(s), (std::vector<float>{4, 7, 2, 3, 12, 15, 6, 7, 8, 9, 10, 11}));
}

TEST(LaxCollectives, RaggedAllToAllFollowsJaxsExample) {
  // jax.lax.ragged_all_to_all's documented example on an axis of size 2.
  ts::Mesh mesh = ts::make_mesh({2}, {"x"});
  auto f = ts::shard_map(
      [](const ts::Array& operand, const ts::Array& output, const ts::Array& in_off, const ts::Array& send,
         const ts::Array& out_off, const ts::Array& recv) {
        return lax::ragged_all_to_all(operand, output, in_off, send, out_off, recv, "x");
      },
      mesh, {ts::P("x"), ts::P("x"), ts::P("x"), ts::P("x"), ts::P("x"), ts::P("x")}, {ts::P("x")});
  const auto i32 = [](std::vector<int32_t> v) { return ts::Array(v); };
  ts::Array r = f(ts::Array(std::vector<float>{1, 2, 2, 3, 4, 0}), ts::zeros({8}), i32({0, 1, 0, 1}), i32({1, 2, 1, 1}),
                  i32({0, 0, 1, 2}), i32({1, 1, 2, 1}));
  EXPECT_EQ(values<float>(r), (std::vector<float>{1, 3, 0, 0, 2, 2, 4, 0}));
}

TEST(LaxExtra, DefaultModesAreJaxs) {
  // gather defaults to promise_in_bounds (clamps on CPU), the scatters to fill_or_drop.
  ts::Array x = ts::arange(4, ts::f32);
  ts::Array far = ts::Array(std::vector<int32_t>{7}).reshape({1, 1});
  EXPECT_EQ(values<float>(lax::gather(x, far, {.offset_dims = {}, .collapsed_slice_dims = {0}, .start_index_map = {0}},
                                      {1})),
            std::vector<float>{3});  // JAX: [3.]
  EXPECT_EQ(values<float>(lax::scatter_add(x, far, ts::Array(std::vector<float>{5}),
                                           {.update_window_dims = {}, .inserted_window_dims = {0},
                                            .scatter_dims_to_operand_dims = {0}})),
            (std::vector<float>{0, 1, 2, 3}));  // JAX: dropped
}

TEST(LaxExtra, RngBitGeneratorChecksItsArguments) {
  ts::Array key = ts::zeros({4}, ts::u32);
  expect_error<ts::ShapeError>([] { lax::rng_bit_generator(ts::zeros({2}, ts::u32), {3}); },
                               {"rng_bit_generator", "uint32[4]", "u32[2]"});
  expect_error<ts::DTypeError>([&] { lax::rng_bit_generator(key, {3}, ts::i32); }, {"rng_bit_generator", "int32", "uint8"});
  expect_error<ts::DTypeError>([&] { lax::rng_bit_generator(key, {3}, ts::u8, lax::RandomAlgorithm::kThreeFry); },
                               {"rng_bit_generator", "ThreeFry", "uint8", "uint32 or uint64"});
  // ThreeFry's state advances by the counters hashed: a (3, 5) uint32 draw hashes (3, 3).
  auto [tf_next, tf_bits] = lax::rng_bit_generator(key, {3, 5}, ts::u32, lax::RandomAlgorithm::kThreeFry);
  EXPECT_EQ(values<uint32_t>(tf_next), (std::vector<uint32_t>{0, 0, 9, 0}));
  EXPECT_EQ(tf_bits.shape(), (ts::Shape{3, 5}));
  // The key advances by the Philox blocks used: 9 words take 3 blocks.
  auto [next, bits] = lax::rng_bit_generator(key, {9});
  EXPECT_EQ(values<uint32_t>(next), (std::vector<uint32_t>{0, 0, 3, 0}));
  EXPECT_EQ(values<uint32_t>(bits)[0], 0x6627e8d5u);  // JAX's first word for the zero key
}
