// Shape operations (transpose, squeeze, expand_dims, concatenate, stack, pad, flip, roll,
// tile, repeat) against values derived by index arithmetic, for every kind of dtype and for
// inputs produced by other shape operations.
#include "ops/shape_test_util.h"

using namespace shape_testing;

namespace {

class ShapeDtypes : public testing::TestWithParam<ts::DType> {};

TEST_P(ShapeDtypes, TransposeMovesElementsByPermutation) {
  const ts::DType d = GetParam();
  ts::Array x = ramp({2, 3, 4}, d);
  auto v = ramp_values(24, d);
  ts::Array y = ts::transpose(x, ts::Axes{2, 0, 1});
  ASSERT_EQ(y.shape(), (ts::Shape{4, 2, 3}));
  EXPECT_EQ(y.dtype(), d);
  std::vector<double> want;
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) want.push_back(v[size_t(i * 12 + j * 4 + k)]);
  EXPECT_EQ(vals(y), want);
}

TEST_P(ShapeDtypes, ConcatenateJoinsAlongEachAxis) {
  const ts::DType d = GetParam();
  ts::Array a = ramp({2, 2}, d), b = ts::full({2, 1}, 1, d);
  auto av = ramp_values(4, d);
  EXPECT_EQ(vals(ts::concatenate({a, b}, 1)), (std::vector<double>{av[0], av[1], 1, av[2], av[3], 1}));
  ts::Array c = ts::concatenate({a, ts::transpose(a)}, 0);
  EXPECT_EQ(c.shape(), (ts::Shape{4, 2}));
  EXPECT_EQ(vals(c), (std::vector<double>{av[0], av[1], av[2], av[3], av[0], av[2], av[1], av[3]}));
}

TEST_P(ShapeDtypes, FlipReversesTheGivenAxes) {
  const ts::DType d = GetParam();
  ts::Array x = ramp({2, 3}, d);
  auto v = ramp_values(6, d);
  EXPECT_EQ(vals(ts::flip(x, ts::Axes{1})), (std::vector<double>{v[2], v[1], v[0], v[5], v[4], v[3]}));
  EXPECT_EQ(vals(ts::flip(x)), (std::vector<double>{v[5], v[4], v[3], v[2], v[1], v[0]}));
}

TEST_P(ShapeDtypes, LaxPadPadsCropsAndInterleaves) {
  const ts::DType d = GetParam();
  ts::Array x = ramp({3}, d);  // 0 1 2 (bool: 0 1 1)
  auto v = ramp_values(3, d);
  const double p = 1;  // padding value: representable in every dtype
  EXPECT_EQ(vals(ts::lax_pad(x, ts::Scalar(1, d), {{1, 2, 1}})),
            (std::vector<double>{p, v[0], p, v[1], p, v[2], p, p}));
  EXPECT_EQ(vals(ts::lax_pad(x, ts::Scalar(1, d), {{-1, -1, 0}})), (std::vector<double>{v[1]}));
  EXPECT_EQ(vals(ts::lax_pad(x, ts::Scalar(1, d), {{-2, 1, 2}})), (std::vector<double>{p, v[1], p, p, v[2], p}));
}

TEST_P(ShapeDtypes, RollTileRepeatOnSlicedInput) {
  const ts::DType d = GetParam();
  ts::Array x = ts::slice(ramp({3, 4}, d), {0, 1}, {3, 4}, {2, 1});  // rows 0 and 2, columns 1..3
  auto v = ramp_values(12, d);
  std::vector<double> xv = {v[1], v[2], v[3], v[9], v[10], v[11]};
  ASSERT_EQ(vals(x), xv);
  EXPECT_EQ(vals(ts::roll(x, 1, 1)), (std::vector<double>{xv[2], xv[0], xv[1], xv[5], xv[3], xv[4]}));
  EXPECT_EQ(vals(ts::repeat(x, 2, 0)),
            (std::vector<double>{xv[0], xv[1], xv[2], xv[0], xv[1], xv[2], xv[3], xv[4], xv[5], xv[3], xv[4], xv[5]}));
  ts::Array t = ts::tile(ts::transpose(x), {1, 2});
  EXPECT_EQ(t.shape(), (ts::Shape{3, 4}));
  EXPECT_EQ(vals(t), (std::vector<double>{xv[0], xv[3], xv[0], xv[3], xv[1], xv[4], xv[1], xv[4], xv[2], xv[5],
                                          xv[2], xv[5]}));
}

INSTANTIATE_TEST_SUITE_P(All, ShapeDtypes, testing::ValuesIn(kDTypes), DTypeName());

TEST(Shape, ComplexValuesKeepImaginaryParts) {
  ts::Array z = ts::Array(std::vector<ts::complex64_t>{{1, 2}, {3, -4}, {5, 6}, {7, 8}}, {2, 2});
  auto t = ts::transpose(z).to_vector<ts::complex64_t>();
  EXPECT_EQ(t, (std::vector<ts::complex64_t>{{1, 2}, {5, 6}, {3, -4}, {7, 8}}));
  auto p = ts::pad(z, {{0, 1}}, "edge").to_vector<ts::complex64_t>();
  EXPECT_EQ(p, (std::vector<ts::complex64_t>{{1, 2}, {3, -4}, {3, -4}, {5, 6}, {7, 8}, {7, 8}, {5, 6}, {7, 8},
                                            {7, 8}}));
}

TEST(Shape, TransposeDefaultsToReversedAxes) {
  ts::Array x = ts::iota(ts::i32, {2, 3, 4}, 2);
  EXPECT_EQ(ts::transpose(x).shape(), (ts::Shape{4, 3, 2}));
  EXPECT_EQ(x.T().shape(), (ts::Shape{4, 3, 2}));
  EXPECT_EQ(ts::transpose(x, ts::Axes{-1, 0, 1}).shape(), (ts::Shape{4, 2, 3}));
  EXPECT_EQ(ts::moveaxis(x, 0, -1).shape(), (ts::Shape{3, 4, 2}));
  EXPECT_EQ(ts::swapaxes(x, 0, 2).shape(), (ts::Shape{4, 3, 2}));
  // Element (k, j, i) of the swapped array is x[i, j, k] = k.
  EXPECT_EQ((ts::swapaxes(x, 0, 2)[{3, 1, 0}].item<int>()), 3);
  EXPECT_EQ((ts::moveaxis(x, 2, 0)[{2, 1, 1}].item<int>()), 2);
}

TEST(Shape, TransposeRejectsBadAxes) {
  ts::Array x = ts::zeros({2, 3});
  expect_error<ts::ValueError>([&] { ts::transpose(x, ts::Axes{0, 0}); }, "transpose: axes (0, 0) are not a permutation");
  expect_error<ts::ValueError>([&] { ts::transpose(x, ts::Axes{0}); }, "transpose: axes (0,) do not match");
  expect_error<ts::IndexError>([&] { ts::transpose(x, ts::Axes{0, 2}); }, "transpose: axis 2 is out of bounds");
  expect_error<ts::IndexError>([&] { ts::moveaxis(x, 0, 5); }, "moveaxis");
}

TEST(Shape, SqueezeAndExpandDims) {
  ts::Array x = ts::zeros({1, 3, 1, 2});
  EXPECT_EQ(ts::squeeze(x).shape(), (ts::Shape{3, 2}));
  EXPECT_EQ(ts::squeeze(x, ts::Axes{-2}).shape(), (ts::Shape{1, 3, 2}));
  expect_error<ts::ShapeError>([&] { ts::squeeze(x, ts::Axes{1}); },
                               "squeeze: cannot remove axis 1 of shape (1, 3, 1, 2) because its size is 3");
  expect_error<ts::ValueError>([&] { ts::squeeze(x, ts::Axes{0, -4}); }, "squeeze: repeated axis");
  ts::Array y = ts::ones({3, 2});
  EXPECT_EQ(ts::expand_dims(y, {0, -1}).shape(), (ts::Shape{1, 3, 2, 1}));
  EXPECT_EQ(ts::expand_dims(y, {1, 2}).shape(), (ts::Shape{3, 1, 1, 2}));
  expect_error<ts::IndexError>([&] { ts::expand_dims(y, {4}); }, "expand_dims: axis 4 is out of bounds");
  EXPECT_EQ(ts::ravel(ts::transpose(ts::iota(ts::i32, {2, 2}, 1))).to_vector<int>(), (std::vector<int>{0, 0, 1, 1}));
}

TEST(Shape, ConcatenateAndStackPromoteDtypes) {
  ts::Array i = ts::Array({1, 2}), f = ts::full({1}, 0.5f), h = ts::ones({1}, ts::f16), b = ts::ones({1}, ts::bool_);
  EXPECT_EQ(ts::concatenate({i, f}).dtype(), ts::f32);
  EXPECT_EQ(ts::concatenate({i, f}).to_vector<float>(), (std::vector<float>{1, 2, 0.5f}));
  EXPECT_EQ(ts::concatenate({h, ts::ones({1}, ts::i8)}).dtype(), ts::f16);
  EXPECT_EQ(ts::concatenate({b, i}).dtype(), ts::i32);
  EXPECT_EQ(ts::concatenate({ts::ones({1}, ts::f32), ts::ones({1}, ts::c64)}).dtype(), ts::c64);
  ts::Array s = ts::stack({ts::Array({1, 2}), ts::Array({3.0, 4.0})}, 1);
  EXPECT_EQ(s.dtype(), ts::f64);
  EXPECT_EQ(s.shape(), (ts::Shape{2, 2}));
  EXPECT_EQ(vals(s), (std::vector<double>{1, 3, 2, 4}));
  EXPECT_EQ(ts::stack({i, i}, -1).shape(), (ts::Shape{2, 2}));
  EXPECT_EQ(ts::stack({ts::Array(1), ts::Array(2)}).to_vector<int>(), (std::vector<int>{1, 2}));
}

TEST(Shape, ConcatenateErrorsNameShapes) {
  expect_error<ts::ShapeError>([] { ts::concatenate({ts::zeros({3, 2}), ts::zeros({3})}); },
                               "concatenate: arrays must have the same rank, got shapes (3, 2) and (3,)");
  expect_error<ts::ShapeError>([] { ts::concatenate({ts::zeros({3, 2}), ts::zeros({4, 2})}, 1); },
                               "concatenate: shapes (3, 2) and (4, 2) differ in dimension 0");
  expect_error<ts::ShapeError>([] { ts::concatenate({ts::Array(1.0), ts::Array(2.0)}); }, "zero-dimensional");
  expect_error<ts::ValueError>([] { ts::concatenate({}); }, "concatenate: needs at least one array");
  expect_error<ts::IndexError>([] { ts::concatenate({ts::zeros({2})}, 1); }, "concatenate: axis 1 is out of bounds");
  expect_error<ts::ShapeError>([] { ts::stack({ts::zeros({2}), ts::zeros({3})}); },
                               "stack: all arrays must have the same shape, got (2,) and (3,)");
}

TEST(Shape, PadEdgeModeRepeatsBorders) {
  // The shallow-water halo: jnp.pad(h[1:-1, 1:-1], 1, "edge").
  ts::Array h = ts::arange(0.0, 20.0, 1.0, ts::f64).reshape({4, 5});
  ts::Array p = ts::pad(h[{ts::Slice(1, -1), ts::Slice(1, -1)}], {{1, 1}}, "edge");
  ASSERT_EQ(p.shape(), (ts::Shape{4, 5}));
  EXPECT_EQ(vals(p), (std::vector<double>{6, 6, 7, 8, 8, 6, 6, 7, 8, 8, 11, 11, 12, 13, 13, 11, 11, 12, 13, 13}));
  ts::Array q = ts::pad(ts::Array({1, 2}), {{2, 0}}, "edge");
  EXPECT_EQ(q.to_vector<int>(), (std::vector<int>{1, 1, 1, 2}));
}

TEST(Shape, PadConstantMode) {
  ts::Array x = ts::ones({2, 2}, ts::i32);
  ts::Array p = ts::pad(x, {{1, 0}, {0, 2}}, "constant", 7);
  ASSERT_EQ(p.shape(), (ts::Shape{3, 4}));
  EXPECT_EQ(p.to_vector<int>(), (std::vector<int>{7, 7, 7, 7, 1, 1, 7, 7, 1, 1, 7, 7}));
  EXPECT_EQ(ts::pad(x, {{1, 1}}).shape(), (ts::Shape{4, 4}));
  EXPECT_EQ(ts::pad(ts::ones({1}, ts::f16), {{1, 0}}, "constant", 2.5).to_vector<float>(),
            (std::vector<float>{2.5f, 1.0f}));
}

TEST(Shape, PadRejectsBadArguments) {
  ts::Array x = ts::ones({2, 2});
  expect_error<ts::ValueError>([&] { ts::pad(x, {{1, 1}}, "nearest"); }, "pad: unknown mode 'nearest'");
  expect_error<ts::ValueError>([&] { ts::pad(x, {{-1, 1}}); }, "pad: widths must be >= 0");
  expect_error<ts::ShapeError>([&] { ts::pad(x, {{1, 1}, {1, 1}, {1, 1}}); }, "pad: widths must hold");
  expect_error<ts::ValueError>([] { ts::pad(ts::zeros({0, 2}), {{1, 1}}, "edge"); }, "pad: cannot pad the empty axis 0");
  expect_error<ts::ValueError>([&] { ts::lax_pad(x, 0, {{-3, 0, 0}, {0, 0, 0}}); }, "pad: padding (-3, 0, 0) crops");
  expect_error<ts::ValueError>([&] { ts::lax_pad(x, 0, {{0, 0, -1}, {0, 0, 0}}); }, "pad: interior padding must be >= 0");
  expect_error<ts::ShapeError>([&] { ts::lax_pad(x, 0, {{0, 0, 0}}); }, "lax_pad: needs one (low, high, interior)");
}

TEST(Shape, LaxPadMatchesAReferenceLoop) {
  ts::Array x = ts::arange(0.0, 12.0, 1.0, ts::f64).reshape({3, 4}) + 1.0;  // no zeros: padding is visible
  const std::vector<std::vector<std::array<int64_t, 3>>> configs = {
      {{1, 0, 0}, {0, 2, 1}}, {{-1, 2, 1}, {-2, -1, 0}}, {{0, 0, 2}, {3, -4, 2}}, {{-3, 1, 0}, {0, 0, 0}}};
  for (const auto& cfg : configs) {
    // Reference: place each input element at lo + i * (interior + 1) when inside.
    ts::Shape out;
    for (int d = 0; d < 2; ++d) out.push_back(cfg[size_t(d)][0] + cfg[size_t(d)][1] + 3 + d + (2 + d) * cfg[size_t(d)][2]);
    std::vector<double> want(size_t(out[0] * out[1]), -1);
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 4; ++j) {
        int64_t p = cfg[0][0] + i * (cfg[0][2] + 1), q = cfg[1][0] + j * (cfg[1][2] + 1);
        if (p >= 0 && p < out[0] && q >= 0 && q < out[1]) want[size_t(p * out[1] + q)] = double(i * 4 + j + 1);
      }
    ts::Array y = ts::lax_pad(x, -1.0, cfg);
    EXPECT_EQ(y.shape(), out);
    EXPECT_EQ(vals(y), want);
  }
}

TEST(Shape, RollIsPeriodic) {
  ts::Array x = ts::arange(5);
  EXPECT_EQ(ts::roll(x, 2, 0).to_vector<int>(), (std::vector<int>{3, 4, 0, 1, 2}));
  EXPECT_EQ(ts::roll(x, -1, 0).to_vector<int>(), (std::vector<int>{1, 2, 3, 4, 0}));
  EXPECT_EQ(ts::roll(x, 12, -1).to_vector<int>(), (std::vector<int>{3, 4, 0, 1, 2}));
  EXPECT_EQ(ts::roll(x, 5, 0).to_vector<int>(), (std::vector<int>{0, 1, 2, 3, 4}));
  ts::Array m = ts::arange(6).reshape({2, 3});
  EXPECT_EQ(ts::roll(m, 1, 0).to_vector<int>(), (std::vector<int>{3, 4, 5, 0, 1, 2}));
  expect_error<ts::IndexError>([&] { ts::roll(m, 1, 2); }, "roll: axis 2 is out of bounds");
}

TEST(Shape, TileAndRepeatFollowNumPyRanks) {
  ts::Array x = ts::Array({1, 2});
  EXPECT_EQ(ts::tile(x, {3}).to_vector<int>(), (std::vector<int>{1, 2, 1, 2, 1, 2}));
  ts::Array t = ts::tile(x, {2, 2});
  EXPECT_EQ(t.shape(), (ts::Shape{2, 4}));
  EXPECT_EQ(t.to_vector<int>(), (std::vector<int>{1, 2, 1, 2, 1, 2, 1, 2}));
  EXPECT_EQ(ts::tile(ts::arange(4).reshape({2, 2}), {2}).shape(), (ts::Shape{2, 4}));
  EXPECT_EQ(ts::repeat(x, 3, 0).to_vector<int>(), (std::vector<int>{1, 1, 1, 2, 2, 2}));
  EXPECT_EQ(ts::repeat(ts::arange(4).reshape({2, 2}), 2, -1).to_vector<int>(),
            (std::vector<int>{0, 0, 1, 1, 2, 2, 3, 3}));
  EXPECT_EQ(ts::repeat(x, 0, 0).shape(), (ts::Shape{0}));
  expect_error<ts::ValueError>([&] { ts::tile(x, {-1}); }, "tile: repetitions must be >= 0");
  expect_error<ts::ValueError>([&] { ts::repeat(x, -2, 0); }, "repeat: repeats must be >= 0");
}

TEST(Shape, EmptyArraysPassThrough) {
  ts::Array e = ts::zeros({0, 3});
  EXPECT_EQ(ts::transpose(e).shape(), (ts::Shape{3, 0}));
  EXPECT_EQ(ts::concatenate({e, ts::ones({2, 3})}).to_vector<float>(), std::vector<float>(6, 1.0f));
  EXPECT_EQ(ts::flip(e).shape(), (ts::Shape{0, 3}));
  EXPECT_EQ(ts::pad(e, {{1, 1}}).shape(), (ts::Shape{2, 5}));
}

}  // namespace
