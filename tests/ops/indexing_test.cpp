// Slicing and indexing: lax.slice, dynamic_slice, dynamic_update_slice, take,
// take_along_axis, NumPy indexing `x[...]` and functional updates `x.at(...)`, against
// hand-derived values for every kind of dtype, and every error path.
#include "ir/trace.h"
#include "ops/shape_test_util.h"

using namespace shape_testing;
using ts::ellipsis;
using ts::newaxis;
using ts::Slice;

namespace {

std::vector<int> ints(const ts::Array& a) { return a.to_vector<int>(); }
ts::Array range(int64_t n) { return ts::arange(n); }

class IndexingDtypes : public testing::TestWithParam<ts::DType> {};

TEST_P(IndexingDtypes, StridedSliceOfTransposedInput) {
  const ts::DType d = GetParam();
  auto v = ramp_values(12, d);
  ts::Array x = ts::transpose(ramp({3, 4}, d));  // (4, 3): x[i, j] = v[j * 4 + i]
  ts::Array y = ts::slice(x, {1, 0}, {4, 3}, {2, 2});
  ASSERT_EQ(y.shape(), (ts::Shape{2, 2}));
  EXPECT_EQ(y.dtype(), d);
  EXPECT_EQ(vals(y), (std::vector<double>{v[1], v[9], v[3], v[11]}));
  // Sliced again, backwards.
  ts::Array z = y[{Slice(ts::none, ts::none, -1), 1}];
  EXPECT_EQ(vals(z), (std::vector<double>{v[11], v[9]}));
}

TEST_P(IndexingDtypes, IndexArraysClampOutOfRange) {
  const ts::DType d = GetParam();
  auto v = ramp_values(6, d);
  ts::Array x = ramp({2, 3}, d);
  ts::Array i = ts::Array({2, 0, -1, 7, -9});  // -1 wraps to 2; 7 and -9 (-6) clamp to 2 and 0
  EXPECT_EQ(vals(x[{Slice(), i}]),
            (std::vector<double>{v[2], v[0], v[2], v[2], v[0], v[5], v[3], v[5], v[5], v[3]}));
  EXPECT_EQ(vals(x[{ts::Array({1, 0})}]), (std::vector<double>{v[3], v[4], v[5], v[0], v[1], v[2]}));
}

TEST_P(IndexingDtypes, AtUpdatesConvertToTheOperandDtype) {
  const ts::DType d = GetParam();
  ts::Array x = ts::zeros({2, 3}, d);
  ts::Array s = x.at({Slice(), Slice(1, ts::none)}).set(1.0);
  EXPECT_EQ(s.dtype(), d);
  EXPECT_EQ(vals(s), (std::vector<double>{0, 1, 1, 0, 1, 1}));
  ts::Array a = s.at({0, ts::Array({0, 2, 0})}).add(ts::ones({3}, ts::i8));
  EXPECT_EQ(a.dtype(), d);
  const double two = d == ts::bool_ ? 1 : 2;  // bool add is logical or
  EXPECT_EQ(vals(a), (std::vector<double>{two, 1, two, 0, 1, 1}));
  EXPECT_EQ(vals(a.at({1}).max(ts::ones({}, d))), (std::vector<double>{two, 1, two, 1, 1, 1}));
  EXPECT_EQ(vals(a.at({ellipsis, 1}).min(ts::zeros({}, d))), (std::vector<double>{two, 0, two, 0, 0, 1}));
  EXPECT_EQ(vals(s.at({Slice(), 2}).mul(ts::zeros({2}, d))), (std::vector<double>{0, 1, 0, 0, 1, 0}));
}

TEST_P(IndexingDtypes, DynamicSliceAndUpdateClamp) {
  const ts::DType d = GetParam();
  auto v = ramp_values(6, d);
  ts::Array x = ramp({6}, d);
  EXPECT_EQ(vals(ts::dynamic_slice(x, {ts::Array(4)}, {3})), (std::vector<double>{v[3], v[4], v[5]}));
  // A negative start counts from the end, as in JAX (then clamps): -2 on 6 elements is 4.
  EXPECT_EQ(vals(ts::dynamic_slice(x, {ts::Array(-2)}, {2})), (std::vector<double>{v[4], v[5]}));
  EXPECT_EQ(vals(ts::dynamic_slice(x, {ts::Array(-9)}, {2})), (std::vector<double>{v[0], v[1]}));
  ts::Array u = ts::ones({2}, d);
  ts::Array y = ts::dynamic_update_slice(ts::zeros({5}, d), u, {ts::Array(int64_t(9))});
  EXPECT_EQ(vals(y), (std::vector<double>{0, 0, 0, 1, 1}));
}

INSTANTIATE_TEST_SUITE_P(All, IndexingDtypes, testing::ValuesIn(kDTypes), DTypeName());

TEST(Slicing, LaxSliceValidatesBounds) {
  ts::Array x = ts::zeros({3, 4});
  EXPECT_EQ(ts::slice(x, {0, 1}, {3, 4}).shape(), (ts::Shape{3, 3}));
  EXPECT_EQ(ts::slice(x, {1, 1}, {1, 4}).shape(), (ts::Shape{0, 3}));
  expect_error<ts::IndexError>([&] { ts::slice(x, {0, 0}, {3, 5}); },
                               "slice: limit 5 exceeds dimension 1 of size 4 in shape (3, 4)");
  expect_error<ts::IndexError>([&] { ts::slice(x, {-1, 0}, {3, 4}); }, "slice: start -1 is negative in dimension 0");
  expect_error<ts::IndexError>([&] { ts::slice(x, {2, 0}, {1, 4}); }, "slice: limit 1 is below start 2");
  expect_error<ts::ValueError>([&] { ts::slice(x, {0, 0}, {3, 4}, {1, 0}); }, "slice: stride 0 in dimension 1");
  expect_error<ts::ShapeError>([&] { ts::slice(x, {0}, {3}); }, "slice: start_indices (0,)");
  EXPECT_EQ(ints(ts::slice_in_dim(range(6), -4, -1, 2)), (std::vector<int>{2, 4}));
  EXPECT_EQ(ts::slice_in_dim(x, 1, 3, 1, -1).shape(), (ts::Shape{3, 2}));
}

TEST(Slicing, StridedSlicesMatchAReferenceLoop) {
  const ts::Shape shape{5, 6, 7};
  ts::Array x = ts::arange(0.0, 210.0, 1.0, ts::f64).reshape(shape);
  const std::vector<std::array<ts::Shape, 3>> cases = {
      {{{0, 0, 0}, {5, 6, 7}, {1, 1, 1}}}, {{{1, 2, 0}, {4, 6, 7}, {1, 1, 1}}}, {{{0, 1, 2}, {5, 6, 7}, {2, 3, 2}}},
      {{{4, 0, 6}, {5, 6, 7}, {1, 5, 1}}}, {{{1, 1, 1}, {5, 5, 6}, {3, 1, 4}}}};
  for (const auto& [start, limit, strides] : cases) {
    std::vector<double> want;
    for (int64_t i = start[0]; i < limit[0]; i += strides[0])
      for (int64_t j = start[1]; j < limit[1]; j += strides[1])
        for (int64_t k = start[2]; k < limit[2]; k += strides[2]) want.push_back(double(i * 42 + j * 7 + k));
    EXPECT_EQ(vals(ts::slice(x, start, limit, strides)), want) << ts::shape_to_string(start);
    // The same window through an update: add 1 there, then subtract the original.
    ts::Array one = ts::ones({}, ts::f64);
    ts::Array upd = x.at({Slice(start[0], limit[0], strides[0]), Slice(start[1], limit[1], strides[1]),
                          Slice(start[2], limit[2], strides[2])})
                        .add(one);
    std::vector<double> diff = vals(upd), orig = vals(x);
    double total = 0;
    for (size_t n = 0; n < diff.size(); ++n) total += diff[n] - orig[n];
    EXPECT_EQ(total, double(want.size()));
  }
}

TEST(Slicing, PythonSlicesWithNegativeBoundsAndSteps) {
  ts::Array x = range(10);
  EXPECT_EQ(ints(x[{Slice(ts::none, ts::none, -1)}]), (std::vector<int>{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}));
  EXPECT_EQ(ints(x[{Slice(8, 2, -2)}]), (std::vector<int>{8, 6, 4}));
  EXPECT_EQ(ints(x[{Slice(-3, ts::none)}]), (std::vector<int>{7, 8, 9}));
  EXPECT_EQ(ints(x[{Slice(ts::none, -7, -3)}]), (std::vector<int>{9, 6}));
  EXPECT_EQ(ints(x[{Slice(1, 100, 4)}]), (std::vector<int>{1, 5, 9}));  // bounds clamp like Python
  EXPECT_EQ(ints(x[{Slice(-100, 2)}]), (std::vector<int>{0, 1}));
  EXPECT_EQ(ints(x[{Slice(100, -100, -5)}]), (std::vector<int>{9, 4}));
  EXPECT_EQ((x[{Slice(5, 2)}].size()), 0);
  EXPECT_EQ((x[{Slice(2, 5, -1)}].size()), 0);
  EXPECT_EQ(x[{-1}].item<int>(), 9);
  ts::Array m = range(12).reshape({3, 4});
  EXPECT_EQ(ints(m[{Slice(1, -1), Slice(ts::none, ts::none, -2)}]), (std::vector<int>{7, 5}));
  EXPECT_EQ(ints(m[{Slice(ts::none, ts::none, -1), -1}]), (std::vector<int>{11, 7, 3}));
  expect_error<ts::ValueError>([&] { x[{Slice(0, 5, 0)}]; }, "index: slice step cannot be zero");
}

TEST(Slicing, StaticIndexingStagesAsSlice) {
  auto prog = ts::detail::trace_to_program(
      [](std::span<const ts::Array> a) {
        return std::vector<ts::Array>{a[0][{Slice(1, -1), Slice(ts::none, ts::none, 2)}], a[0][{1}]};
      },
      std::vector<ts::Aval>{ts::Aval({6, 5}, ts::f32)});
  const std::string text = ts::ir::print_program(prog);
  EXPECT_NE(text.find("slice"), std::string::npos) << text;
  EXPECT_EQ(text.find("gather"), std::string::npos) << text;
}

TEST(Indexing, IntsNewaxisAndEllipsis) {
  ts::Array x = range(24).reshape({2, 3, 4});
  ts::Array a = x[{1, Slice(1, -1), newaxis, ellipsis}];
  EXPECT_EQ(a.shape(), (ts::Shape{1, 1, 4}));
  EXPECT_EQ(ints(a), (std::vector<int>{16, 17, 18, 19}));
  EXPECT_EQ((x[{ellipsis, 1}].shape()), (ts::Shape{2, 3}));
  EXPECT_EQ(ints(x[{ellipsis, 1}]), (std::vector<int>{1, 5, 9, 13, 17, 21}));
  EXPECT_EQ((x[{newaxis, 0, ellipsis, newaxis}].shape()), (ts::Shape{1, 3, 4, 1}));
  EXPECT_EQ((x[{1, 2, 3}].shape()), ts::Shape{});
  EXPECT_EQ((x[{1, 2, 3}].item<int>()), 23);
  EXPECT_EQ((x[{-2, -3, -4}].item<int>()), 0);
  EXPECT_EQ(x[{}].shape(), x.shape());
  EXPECT_EQ(x[{ellipsis}].shape(), x.shape());
}

TEST(Indexing, BadIndicesRaiseIndexError) {
  ts::Array x = ts::zeros({2, 3});
  expect_error<ts::IndexError>([&] { x[{0, 0, 0}]; }, "index: too many indices for an array of shape (2, 3)");
  expect_error<ts::IndexError>([&] { x[{ellipsis, 0, ellipsis}]; }, "index: an index can only have a single ellipsis");
  ts::Array mask = ts::ones({2, 3}, ts::bool_);
  expect_error<ts::IndexError>([&] { x[{mask}]; }, "boolean mask indices are not supported");
  expect_error<ts::IndexError>([&] { x.at({mask}).set(0.0); }, "where(");
  expect_error<ts::DTypeError>([&] { x[{ts::Array({0.5f, 1.5f})}]; }, "index: dtype float32 is not supported");
}

TEST(Indexing, IntegerArraysFollowNumPyAdvancedIndexing) {
  ts::Array x = range(24).reshape({2, 3, 4});
  ts::Array i = ts::Array({1, 0}), j = ts::Array({3, -1});
  // One array: a take along its axis.
  ts::Array a = x[{Slice(), ts::Array({{2, 0}, {1, 1}})}];
  EXPECT_EQ(a.shape(), (ts::Shape{2, 2, 2, 4}));
  EXPECT_EQ(ints(a[{1, 0, 1}]), (std::vector<int>{12, 13, 14, 15}));
  // Adjacent arrays index pointwise and stay in place.
  ts::Array b = x[{Slice(), i, j}];
  EXPECT_EQ(b.shape(), (ts::Shape{2, 2}));
  EXPECT_EQ(ints(b), (std::vector<int>{7, 3, 19, 15}));
  // Separated by a slice: the index dimensions go first (also when an int separates them).
  ts::Array c = x[{i, Slice(), j}];
  EXPECT_EQ(c.shape(), (ts::Shape{2, 3}));
  EXPECT_EQ(ints(c), (std::vector<int>{15, 19, 23, 3, 7, 11}));
  EXPECT_EQ((x[{0, Slice(), ts::Array({0, 1})}].shape()), (ts::Shape{2, 3}));
  EXPECT_EQ((x[{Slice(), 0, ts::Array({0, 1})}].shape()), (ts::Shape{2, 2}));
  // Arrays broadcast against each other; negative steps combine with gathers.
  ts::Array e = x[{ts::Array({{0}, {1}}), Slice(ts::none, ts::none, -1), ts::Array({0, 3})}];
  EXPECT_EQ(e.shape(), (ts::Shape{2, 2, 3}));
  EXPECT_EQ(ints(e[{1, 1}]), (std::vector<int>{23, 19, 15}));
  expect_error<ts::ShapeError>([&] { x[{ts::Array({0, 1}), ts::Array({0, 1, 2})}]; }, "index: cannot broadcast shapes");
}

TEST(Indexing, AtSetOnStaticSlicesLikeTheShallowWaterHalo) {
  ts::Array h = ts::zeros({4, 5}, ts::f32);
  ts::Array inner = ts::arange(0.0, 6.0, 1.0, ts::f64).reshape({2, 3});
  ts::Array y = h.at({Slice(1, -1), Slice(1, -1)}).set(inner);
  EXPECT_EQ(y.dtype(), ts::f32);
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 3, 4, 5, 0, 0, 0, 0, 0, 0}));
  // Scalar and row updates broadcast; int x with a float update truncates like astype.
  ts::Array z = ts::zeros({3, 3}, ts::i32).at({Slice(ts::none, ts::none, 2), Slice()}).set(ts::Array({1.5, 2.5, 3.5}));
  EXPECT_EQ(ints(z), (std::vector<int>{1, 2, 3, 0, 0, 0, 1, 2, 3}));
  EXPECT_EQ(ints(ts::zeros({4}, ts::i32).at({Slice(ts::none, ts::none, -1)}).set(range(4))),
            (std::vector<int>{3, 2, 1, 0}));
  EXPECT_EQ(ints(range(5).at({Slice(-1, 0, -2)}).add(ts::Array({10, 20}))), (std::vector<int>{0, 1, 22, 3, 14}));
  // A column of a transposed input, updated with newaxis in the index.
  ts::Array t = ts::transpose(range(6).reshape({2, 3}));  // [[0, 3], [1, 4], [2, 5]]
  EXPECT_EQ(ints(t.at({Slice(), newaxis, 1}).set(ts::Array({{7}, {8}, {9}}))), (std::vector<int>{0, 7, 1, 8, 2, 9}));
  EXPECT_EQ(ints(t.at({1}).get()), (std::vector<int>{1, 4}));
  expect_error<ts::ShapeError>([&] { h.at({Slice(1, -1), Slice(1, -1)}).set(ts::zeros({3, 3})); },
                               "at().set: cannot broadcast the update of shape (3, 3) to the indexed shape (2, 3)");
}

TEST(Indexing, AtWithIntegerArraysAccumulatesDuplicates) {
  ts::Array x = ts::zeros({5}, ts::f32);
  ts::Array idx = ts::Array({0, 1, 0, 3, 0});
  EXPECT_EQ(x.at({idx}).add(1.0f).to_vector<float>(), (std::vector<float>{3, 1, 0, 1, 0}));
  EXPECT_EQ(x.at({idx}).add(ts::Array({1.0f, 2.0f, 3.0f, 4.0f, 5.0f})).to_vector<float>(),
            (std::vector<float>{9, 2, 0, 4, 0}));
  // set: the last duplicate wins.
  EXPECT_EQ(x.at({ts::Array({1, 1, 2})}).set(ts::Array({10.0f, 20.0f, 30.0f})).to_vector<float>(),
            (std::vector<float>{0, 20, 30, 0, 0}));
  ts::Array ones = ts::ones({5}, ts::i32) + ts::ones({5}, ts::i32);  // 2s
  EXPECT_EQ(ints(ones.at({idx}).mul(3)), (std::vector<int>{54, 6, 2, 6, 2}));
  EXPECT_EQ(ints(ones.at({idx}).min(ts::Array({5, 1, -4, 0, 7}))), (std::vector<int>{-4, 1, 2, 0, 2}));
  EXPECT_EQ(ints(ones.at({idx}).max(ts::Array({5, 1, -4, 0, 7}))), (std::vector<int>{7, 2, 2, 2, 2}));
  // Negative indices wrap; out-of-range updates are dropped.
  EXPECT_EQ(ints(ts::zeros({4}, ts::i32).at({ts::Array({-1, 9, -9, 1})}).add(1)), (std::vector<int>{0, 1, 0, 1}));
  // Two dimensions indexed pointwise, with a slice.
  ts::Array m = ts::zeros({3, 2, 2}, ts::i32);
  ts::Array r = m.at({ts::Array({0, 2, 0}), Slice(), ts::Array({1, 0, 1})}).add(ts::Array({{1, 2}, {3, 4}, {5, 6}}));
  EXPECT_EQ(ints(r), (std::vector<int>{0, 6, 0, 8, 0, 0, 0, 0, 3, 0, 4, 0}));
}

TEST(Indexing, AtMinMaxPropagateNaNAndOrderComplexLexicographically) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto v = ts::Array({1.0f, 2.0f}).at({0}).max(nan).to_vector<float>();
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_EQ(v[1], 2.0f);
  ts::Array z = ts::Array(std::vector<ts::complex64_t>{{1, 5}, {2, 0}});
  auto m = z.at({Slice()}).max(ts::Array(std::vector<ts::complex64_t>{{1, 6}, {1, 9}})).to_vector<ts::complex64_t>();
  EXPECT_EQ(m, (std::vector<ts::complex64_t>{{1, 6}, {2, 0}}));
  auto a = z.at({ts::Array({1, 1})}).add(ts::Array(ts::complex64_t(0, 1))).to_vector<ts::complex64_t>();
  EXPECT_EQ(a, (std::vector<ts::complex64_t>{{1, 5}, {2, 2}}));
}

TEST(Indexing, IndexedUpdatesStageAsScatter) {
  auto prog = ts::detail::trace_to_program(
      [](std::span<const ts::Array> a) {
        return std::vector<ts::Array>{a[0].at({Slice(1, -1), Slice(1, -1)}).set(a[1])};
      },
      std::vector<ts::Aval>{ts::Aval({6, 5}, ts::f32), ts::Aval({4, 3}, ts::f32)});
  const std::string text = ts::ir::print_program(prog);
  EXPECT_NE(text.find("scatter"), std::string::npos) << text;
  EXPECT_NE(text.find("mode=set"), std::string::npos) << text;
}

TEST(Indexing, JitMatchesEager) {
  auto step = [](const ts::Array& h, const ts::Array& i) {
    ts::Array inner = h[{Slice(1, -1), Slice(1, -1)}];
    ts::Array p = ts::pad(inner, {{1, 1}}, "edge");
    ts::Array r = ts::roll(p, 1, 1).at({Slice(1, -1), Slice(1, -1)}).set(inner * 2.0);
    ts::Array g = ts::take(r, i, 1).at({i}).add(1.0);
    return ts::dynamic_slice(ts::concatenate({r, g}, 1), {ts::Array(3), ts::Array(7)}, {4, 3});
  };
  ts::Array h = ts::arange(0.0, 30.0, 1.0, ts::f32).reshape({5, 6});
  ts::Array i = ts::Array({4, 0, 4, 1, 2});
  EXPECT_EQ(ts::jit(step)(h, i).to_vector<float>(), step(h, i).to_vector<float>());
}

TEST(Indexing, DynamicSliceErrors) {
  ts::Array x = ts::zeros({4, 4});
  EXPECT_EQ(ts::dynamic_slice(x, {ts::Array(3), ts::Array(int64_t(1))}, {2, 3}).shape(), (ts::Shape{2, 3}));
  expect_error<ts::ShapeError>([&] { ts::dynamic_slice(x, {ts::Array(0)}, {2, 2}); },
                               "dynamic_slice: needs one start index per dimension of shape (4, 4), got 1");
  expect_error<ts::DTypeError>([&] { ts::dynamic_slice(x, {ts::Array(0.5), ts::Array(0)}, {2, 2}); },
                               "dynamic_slice: dtype float64 is not supported");
  expect_error<ts::ShapeError>([&] { ts::dynamic_slice(x, {ts::Array({0, 1}), ts::Array(0)}, {2, 2}); },
                               "dynamic_slice: start indices must be scalars");
  expect_error<ts::IndexError>([&] { ts::dynamic_slice(x, {ts::Array(0), ts::Array(0)}, {5, 2}); },
                               "dynamic_slice: slice size 5 does not fit dimension 0 of size 4");
  expect_error<ts::ShapeError>([&] { ts::dynamic_update_slice(x, ts::zeros({5}), {ts::Array(0), ts::Array(0)}); },
                               "dynamic_update_slice: update of shape (5,) does not fit");
  expect_error<ts::DTypeError>([&] { ts::dynamic_update_slice(x, ts::zeros({2, 2}, ts::f64), {ts::Array(0), ts::Array(0)}); },
                               "dynamic_update_slice: update dtype float64 differs from the operand dtype float32");
  // 2-D: both starts clamp so the window fits.
  ts::Array m = range(16).reshape({4, 4});
  EXPECT_EQ(ints(ts::dynamic_slice(m, {ts::Array(3), ts::Array(-5)}, {2, 2})), (std::vector<int>{8, 9, 12, 13}));
  EXPECT_EQ(ints(ts::dynamic_update_slice(m, ts::zeros({2, 2}, ts::i32), {ts::Array(1), ts::Array(9)})),
            (std::vector<int>{0, 1, 2, 3, 4, 5, 0, 0, 8, 9, 0, 0, 12, 13, 14, 15}));
}

TEST(Indexing, TakeAlongAxisPicksPerRow) {
  ts::Array x = ts::Array({{10, 30, 20}, {60, 40, 50}});
  ts::Array order = ts::Array({{0, 2, 1}, {1, 2, 0}});
  EXPECT_EQ(ints(ts::take_along_axis(x, order, 1)), (std::vector<int>{10, 20, 30, 40, 50, 60}));
  EXPECT_EQ(ints(ts::take_along_axis(x, ts::Array({{1, 0, 0}}), 0)), (std::vector<int>{60, 30, 20}));
  // Indices broadcast over the other dimensions.
  EXPECT_EQ(ints(ts::take_along_axis(x, ts::Array({{2}}), -1)), (std::vector<int>{20, 50}));
  expect_error<ts::ShapeError>([&] { ts::take_along_axis(x, ts::Array({0, 1}), 1); },
                               "take_along_axis: indices of shape (2,) must have the rank");
  expect_error<ts::IndexError>([&] { ts::take_along_axis(x, order, 2); }, "take_along_axis: axis 2 is out of bounds");
}

TEST(Indexing, TakeErrors) {
  ts::Array x = ts::zeros({2, 3});
  EXPECT_EQ(ts::take(x, ts::Array({{0, 1}, {1, 1}}), 1).shape(), (ts::Shape{2, 2, 2}));
  EXPECT_EQ(ts::take(x, ts::Array(1), 0).shape(), (ts::Shape{3}));
  expect_error<ts::IndexError>([&] { ts::take(x, ts::Array({true, false}), 0); }, "take: boolean mask indices");
  expect_error<ts::DTypeError>([&] { ts::take(x, ts::Array({1.0, 0.0}), 0); }, "take: dtype float64 is not supported");
  expect_error<ts::IndexError>([&] { ts::take(ts::Array(1.0), ts::Array(0), 0); }, "take: cannot take from a rank-0");
  expect_error<ts::IndexError>([&] { ts::take(ts::zeros({0}), ts::Array({0, 0}), 0); },
                               "gather: cannot take indices from dimension 0 of size 0");
  EXPECT_EQ(ts::take(ts::zeros({0}), ts::zeros({0}, ts::i32), 0).shape(), (ts::Shape{0}));
}

}  // namespace
