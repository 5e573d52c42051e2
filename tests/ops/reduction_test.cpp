// Reductions (sum, prod, max, min, any, all, mean, var, argmax, argmin) and cumulative ops
// against reference loops written here, over every axis combination, every dtype and
// inputs made non-contiguous by transpose and slice.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <functional>
#include <limits>

#include "tessel/tessel.h"

namespace ts = tessel;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

// Reference reduction: decodes every index (fine for a test) and folds into the output.
template <class V>
std::vector<V> ref_reduce(const std::vector<V>& data, const ts::Shape& shape, const ts::Axes& axes, V init,
                          const std::function<V(V, V)>& f) {
  ts::Shape out_shape;
  for (size_t i = 0; i < shape.size(); ++i)
    if (std::find(axes.begin(), axes.end(), int64_t(i)) == axes.end()) out_shape.push_back(shape[i]);
  std::vector<V> out(size_t(ts::shape_size(out_shape)), init);
  for (int64_t flat = 0; flat < int64_t(data.size()); ++flat) {
    int64_t rem = flat, o = 0, ostride = 1;
    for (size_t d = shape.size(); d-- > 0;) {
      const int64_t i = rem % shape[d];
      rem /= shape[d];
      if (std::find(axes.begin(), axes.end(), int64_t(d)) == axes.end()) o += i * ostride, ostride *= shape[d];
    }
    out[size_t(o)] = f(out[size_t(o)], data[size_t(flat)]);
  }
  return out;
}

// All non-empty subsets of the axes of a rank-r array.
std::vector<ts::Axes> axis_subsets(int64_t r) {
  std::vector<ts::Axes> subsets;
  for (int mask = 1; mask < (1 << r); ++mask) {
    ts::Axes a;
    for (int64_t i = 0; i < r; ++i)
      if (mask & (1 << i)) a.push_back(i);
    subsets.push_back(a);
  }
  return subsets;
}

ts::Shape kept_shape(const ts::Shape& s, const ts::Axes& axes, bool keepdims) {
  ts::Shape r;
  for (size_t i = 0; i < s.size(); ++i) {
    bool red = std::find(axes.begin(), axes.end(), int64_t(i)) != axes.end();
    if (!red) r.push_back(s[i]);
    else if (keepdims) r.push_back(1);
  }
  return r;
}

const std::vector<ts::Shape> kShapes = {{5}, {3, 4}, {2, 3, 4}, {4, 1, 3}};

std::vector<double> make_data(int64_t n, const std::function<double(int64_t)>& f) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = f(i);
  return v;
}

using ReduceFn = ts::Array (*)(const ts::Array&, ts::Axes, bool);
using ts::DType;

DType sum_dtype(ts::DType d) {
  if (d == ts::bool_ || d == ts::i8 || d == ts::i16) return ts::i32;
  if (d == ts::u8 || d == ts::u16) return ts::u32;
  return d;
}

// Checks `fn` against the reference over every shape, every axis subset (and "all"), with
// and without keepdims.
void check_all_axes(ts::DType dt, ReduceFn fn, const std::function<double(int64_t)>& gen, double init,
                    const std::function<double(double, double)>& f, ts::DType out_dtype) {
  for (const auto& shape : kShapes) {
    const auto data = make_data(ts::shape_size(shape), gen);
    const ts::Array x = ts::Array(data, shape).astype(dt);
    auto subsets = axis_subsets(int64_t(shape.size()));
    subsets.push_back({});  // empty = all axes
    for (const auto& axes : subsets) {
      ts::Axes all_axes = axes;
      if (all_axes.empty())
        for (int64_t i = 0; i < int64_t(shape.size()); ++i) all_axes.push_back(i);
      const auto want = ref_reduce<double>(data, shape, all_axes, init, f);
      for (bool keepdims : {false, true}) {
        SCOPED_TRACE("dtype " + std::string(ts::dtype_name(dt)) + " shape " + ts::shape_to_string(shape) +
                     " axes " + ts::shape_to_string(axes) + (keepdims ? " keepdims" : ""));
        const ts::Array r = fn(x, axes, keepdims);
        EXPECT_EQ(r.shape(), kept_shape(shape, all_axes, keepdims));
        EXPECT_EQ(r.dtype(), out_dtype);
        EXPECT_EQ(r.to_vector<double>(), want);
      }
    }
  }
}

class ReduceAllDtypes : public ::testing::TestWithParam<DType> {};

const std::vector<DType> kAllDtypes = {ts::bool_, ts::i8,  ts::i16, ts::i32, ts::i64, ts::u8,  ts::u16, ts::u32,
                                       ts::u64,   ts::f16, ts::bf16, ts::f32, ts::f64, ts::c64, ts::c128};

std::string dtype_param_name(const ::testing::TestParamInfo<DType>& info) { return ts::dtype_name(info.param); }

// Small non-negative values, exact in every dtype (bool keeps only zero / non-zero).
double small_value(DType dt, int64_t i) {
  if (dt == ts::bool_) return i % 3 == 0 ? 1 : 0;
  return double((i * 7) % 11);
}

}  // namespace

TEST_P(ReduceAllDtypes, SumMatchesReferenceOverEveryAxisCombination) {
  const DType dt = GetParam();
  check_all_axes(dt, ts::sum, [dt](int64_t i) { return small_value(dt, i); }, 0, std::plus<double>(), sum_dtype(dt));
}

TEST_P(ReduceAllDtypes, ProdMatchesReferenceOverEveryAxisCombination) {
  const DType dt = GetParam();
  // Mostly ones and a few twos, so products stay exact and small in every dtype.
  const auto gen = [dt](int64_t i) { return dt == ts::bool_ ? double(i % 5 != 0) : (i % 7 == 0 ? 2.0 : 1.0); };
  check_all_axes(dt, ts::prod, gen, 1, std::multiplies<double>(), sum_dtype(dt));
}

TEST_P(ReduceAllDtypes, MaxAndMinMatchReferenceOverEveryAxisCombination) {
  const DType dt = GetParam();
  const bool is_signed = ts::is_signed_int(dt) || ts::is_inexact(dt);
  const auto gen = [=](int64_t i) { return small_value(dt, i) - (is_signed ? 5.0 : 0.0); };
  const double inf = std::numeric_limits<double>::infinity();
  check_all_axes(dt, ts::max, gen, -inf, [](double a, double b) { return std::max(a, b); }, dt);
  check_all_axes(dt, ts::min, gen, inf, [](double a, double b) { return std::min(a, b); }, dt);
}

TEST_P(ReduceAllDtypes, AnyAndAllMatchReferenceOverEveryAxisCombination) {
  const DType dt = GetParam();
  const auto gen = [](int64_t i) { return i % 4 == 1 ? 0.0 : double(i % 3); };
  const auto nz = [](double v) { return v != 0 ? 1.0 : 0.0; };
  check_all_axes(dt, ts::any, gen, 0, [&](double a, double b) { return std::max(a, nz(b)); }, ts::bool_);
  check_all_axes(dt, ts::all, gen, 1, [&](double a, double b) { return std::min(a, nz(b)); }, ts::bool_);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, ReduceAllDtypes, ::testing::ValuesIn(kAllDtypes), dtype_param_name);

TEST(Reduce, SumPromotesSmallIntegersLikeJnp) {
  ts::Array b(std::vector<bool>{true, true, false, true});
  EXPECT_EQ(ts::sum(b).dtype(), ts::i32);
  EXPECT_EQ(ts::sum(b).item<int>(), 3);
  // int8 values whose int8 sum would overflow.
  ts::Array i8 = ts::Array(std::vector<double>{100, 100, 100}).astype(ts::i8);
  EXPECT_EQ(ts::sum(i8).dtype(), ts::i32);
  EXPECT_EQ(ts::sum(i8).item<int>(), 300);
  EXPECT_EQ(ts::sum(ts::Array(std::vector<double>{200, 200}).astype(ts::u8)).dtype(), ts::u32);
  EXPECT_EQ(ts::prod(ts::Array(std::vector<double>{100, 3}).astype(ts::u16)).item<int>(), 300);
  EXPECT_EQ(ts::sum(ts::Array(std::vector<int64_t>{1, 2})).dtype(), ts::i64);
}

TEST(Reduce, IntegerSumWrapsAround) {
  ts::Array x(std::vector<int32_t>{std::numeric_limits<int32_t>::max(), 1});
  EXPECT_EQ(ts::sum(x).item<int32_t>(), std::numeric_limits<int32_t>::min());
}

TEST(Reduce, ComplexSumAndProd) {
  std::vector<ts::complex64_t> v{{1, 2}, {3, -1}, {0.5f, 0.5f}, {-2, 1}, {1, 1}, {2, 0}};
  ts::Array x(v, {2, 3});
  auto s0 = ts::sum(x, {0}).to_vector<ts::complex64_t>();
  ASSERT_EQ(s0.size(), 3u);
  for (int j = 0; j < 3; ++j) EXPECT_EQ(s0[size_t(j)], v[size_t(j)] + v[size_t(3 + j)]);
  auto p1 = ts::prod(x, {1}).to_vector<ts::complex64_t>();
  for (int i = 0; i < 2; ++i) {
    std::complex<double> want = 1;
    for (int j = 0; j < 3; ++j) want *= std::complex<double>(v[size_t(3 * i + j)]);
    EXPECT_NEAR(std::abs(std::complex<double>(p1[size_t(i)]) - want), 0, 1e-5);
  }
  ts::Array z(std::vector<ts::complex128_t>{{1, 1}, {2, -3}});
  EXPECT_EQ(ts::sum(z).item<ts::complex128_t>(), ts::complex128_t(3, -2));
  EXPECT_EQ(ts::sum(z).dtype(), ts::c128);
}

TEST(Reduce, MaxMinPropagateNaNAlongInnerAndOuterAxes) {
  for (DType dt : {ts::f16, ts::bf16, ts::f32, ts::f64}) {
    SCOPED_TRACE(ts::dtype_name(dt));
    ts::Array x = ts::Array(std::vector<double>{1, kNaN, 3, 4, 5, 6}, {2, 3}).astype(dt);
    auto m1 = ts::max(x, {1}).to_vector<double>();
    EXPECT_TRUE(std::isnan(m1[0]));
    EXPECT_EQ(m1[1], 6);
    auto m0 = ts::min(x, {0}).to_vector<double>();
    EXPECT_EQ(m0[0], 1);
    EXPECT_TRUE(std::isnan(m0[1]));
    EXPECT_EQ(m0[2], 3);
    EXPECT_TRUE(std::isnan(ts::max(x).item<double>()));
    EXPECT_TRUE(std::isnan(ts::min(x).item<double>()));
  }
  // A long contiguous row (the unrolled path) with NaN in the middle.
  std::vector<float> v(1000, 1.0f);
  v[537] = std::nanf("");
  EXPECT_TRUE(std::isnan(ts::max(ts::Array(v)).item<float>()));
  EXPECT_TRUE(std::isnan(ts::min(ts::Array(v)).item<float>()));
}

TEST(Reduce, MaxHandlesInfinities) {
  const double inf = std::numeric_limits<double>::infinity();
  ts::Array x(std::vector<float>{-float(inf), -float(inf)});
  EXPECT_EQ(ts::max(x).item<double>(), -inf);
  EXPECT_EQ(ts::min(ts::Array(std::vector<double>{inf, 2})).item<double>(), 2);
}

TEST(Reduce, MaxOfZeroSizeAxisIsValueErrorNamingTheOp) {
  ts::Array e = ts::zeros({0, 3});
  try {
    ts::max(e, {0});
    FAIL() << "expected ValueError";
  } catch (const ts::ValueError& err) {
    EXPECT_NE(std::string(err.what()).find("max: zero-size reduction over axis 0"), std::string::npos) << err.what();
  }
  EXPECT_THROW(ts::min(e), ts::ValueError);
  // Reducing only the non-empty axis is fine: the result is empty.
  EXPECT_EQ(ts::max(e, {1}).shape(), (ts::Shape{0}));
}

TEST(Reduce, SumAndProdOfEmptyAreIdentities) {
  ts::Array e = ts::zeros({0, 3});
  EXPECT_EQ(ts::sum(e, {0}).to_vector<float>(), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(ts::prod(e, {0}).to_vector<float>(), (std::vector<float>{1, 1, 1}));
  EXPECT_EQ(ts::sum(e).item<float>(), 0);
  EXPECT_EQ(ts::any(e).item<bool>(), false);
  EXPECT_EQ(ts::all(e).item<bool>(), true);
}

TEST(Reduce, RankZeroReducesToItself) {
  ts::Array s(ts::Scalar(4.5f));
  EXPECT_EQ(ts::sum(s).item<float>(), 4.5f);
  EXPECT_EQ(ts::max(s, {}, true).shape(), ts::Shape{});
}

TEST(Reduce, BadAxesAreErrorsNamingTheOp) {
  ts::Array x = ts::ones({2, 3});
  try {
    ts::sum(x, {2});
    FAIL();
  } catch (const ts::IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("sum"), std::string::npos);
  }
  EXPECT_THROW(ts::prod(x, {0, -2}), ts::ValueError);  // repeated
  EXPECT_THROW(ts::mean(x, {-3}), ts::IndexError);
  EXPECT_THROW(ts::argmax(x, 2), ts::IndexError);
  EXPECT_THROW(ts::cumsum(x, -3), ts::IndexError);
}

TEST(Reduce, NegativeAxesCountFromTheEnd) {
  ts::Array x(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(ts::sum(x, {-1}).to_vector<float>(), (std::vector<float>{6, 15}));
  EXPECT_EQ(ts::sum(x, {-2}, true).shape(), (ts::Shape{1, 3}));
}

TEST(Reduce, NonContiguousInputsFromTransposeAndSlice) {
  auto data = make_data(24, [](int64_t i) { return double(i * i % 17); });
  ts::Array x(data, {2, 3, 4});
  ts::Array xt = ts::transpose(x, ts::Axes{2, 0, 1});  // (4, 2, 3)
  std::vector<double> tdata(24);
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 2; ++b)
      for (int c = 0; c < 3; ++c) tdata[size_t((a * 2 + b) * 3 + c)] = data[size_t((b * 3 + c) * 4 + a)];
  for (const auto& axes : axis_subsets(3)) {
    const auto want = ref_reduce<double>(tdata, {4, 2, 3}, axes, 0, std::plus<double>());
    EXPECT_EQ(ts::sum(xt, axes).to_vector<double>(), want) << ts::shape_to_string(axes);
  }
  ts::Array s = ts::slice(x, {0, 1, 0}, {2, 3, 4}, {1, 1, 2});  // (2, 2, 2), every other column
  std::vector<double> sdata;
  for (int a = 0; a < 2; ++a)
    for (int b = 1; b < 3; ++b)
      for (int c = 0; c < 4; c += 2) sdata.push_back(data[size_t((a * 3 + b) * 4 + c)]);
  EXPECT_EQ(ts::max(s, {0, 2}).to_vector<double>(),
            ref_reduce<double>(sdata, {2, 2, 2}, {0, 2}, -1e300, [](double a, double b) { return std::max(a, b); }));
}

TEST(Reduce, LargeFloat32SumsStayAccurate) {
  // 1e6 * 0.1 in float32: a sequential float sum drifts by ~1e-3 relative; pairwise stays close.
  const int64_t n = 1000000;
  ts::Array x = ts::full({n}, 0.1f);
  EXPECT_NEAR(ts::sum(x).item<double>(), double(0.1f) * double(n), 1e-5 * double(n) * 0.1);
  // Outer-axis reduction over many rows and inner-axis reduction of a 2-D array.
  std::vector<float> v(3000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i % 13) * 0.25f;
  ts::Array m(v, {1000, 3});
  auto s0 = ts::sum(m, {0}).to_vector<double>();
  auto s1 = ts::sum(m, {1}).to_vector<double>();
  for (int j = 0; j < 3; ++j) {
    double want = 0;
    for (int i = 0; i < 1000; ++i) want += v[size_t(i * 3 + j)];
    EXPECT_DOUBLE_EQ(s0[size_t(j)], want);
  }
  for (int i = 0; i < 1000; ++i) EXPECT_DOUBLE_EQ(s1[size_t(i)], double(v[size_t(i * 3)] + v[size_t(i * 3 + 1)] + v[size_t(i * 3 + 2)]));
}

TEST(Reduce, HalfSumsAccumulateInFloat) {
  // 4096 ones: a float16 accumulator would stop at 2048.
  ts::Array x = ts::ones({4096}, ts::f16);
  EXPECT_EQ(ts::sum(x).item<float>(), 4096.0f);
  EXPECT_EQ(ts::sum(ts::ones({4096, 2}, ts::bf16), {0}).to_vector<float>(), (std::vector<float>{4096, 4096}));
}

TEST(Reduce, HalfSpecialValuesConvertExactly) {
  // Subnormals, negative zero, the largest half, infinities and NaN.
  const double sub = std::ldexp(1.0, -24), inf = std::numeric_limits<double>::infinity();
  std::vector<double> v{sub, 3 * sub, -0.0, 65504, -2.5, 0.5};
  ts::Array h = ts::Array(v).astype(ts::f16);
  EXPECT_EQ(ts::sum(ts::slice(h, {0}, {2})).item<double>(), 4 * sub);
  EXPECT_EQ(ts::max(h).item<double>(), 65504);
  EXPECT_EQ(ts::min(h).item<double>(), -2.5);
  EXPECT_EQ(ts::sum(h).item<double>(), 65504);  // 65502 in float, rounded to the nearest half
  ts::Array s = ts::Array(std::vector<double>{-inf, 1, inf}).astype(ts::f16);
  EXPECT_EQ(ts::max(s).item<double>(), inf);
  EXPECT_EQ(ts::min(s).item<double>(), -inf);
  EXPECT_TRUE(std::isnan(ts::sum(s).item<double>()));
}

TEST(Reduce, MeanOfIntegersIsFloat32) {
  ts::Array x(std::vector<int32_t>{1, 2, 3, 4, 5, 7}, {2, 3});
  ts::Array m = ts::mean(x, {1});
  EXPECT_EQ(m.dtype(), ts::f32);
  EXPECT_EQ(m.to_vector<float>(), (std::vector<float>{2, 16.0f / 3}));
  EXPECT_EQ(ts::mean(x).item<float>(), 22.0f / 6);
  EXPECT_EQ(ts::mean(x, {0}, true).shape(), (ts::Shape{1, 3}));
  EXPECT_EQ(ts::mean(ts::Array(std::vector<bool>{true, false})).item<float>(), 0.5f);
  EXPECT_EQ(ts::mean(ts::ones({3}, ts::f16)).dtype(), ts::f16);
  EXPECT_EQ(ts::mean(ts::ones({3}, ts::f64)).dtype(), ts::f64);
}

TEST(Reduce, VarIsPopulationVariance) {
  std::vector<double> v{1, 2, 4, 8, 3, 3};
  ts::Array x(v, {2, 3});
  auto r = ts::var(x, {1}).to_vector<double>();
  EXPECT_NEAR(r[0], (std::pow(1 - 7.0 / 3, 2) + std::pow(2 - 7.0 / 3, 2) + std::pow(4 - 7.0 / 3, 2)) / 3, 1e-12);
  EXPECT_NEAR(r[1], (std::pow(8 - 14.0 / 3, 2) + 2 * std::pow(3 - 14.0 / 3, 2)) / 3, 1e-12);
  EXPECT_EQ(ts::var(x, {0}, true).shape(), (ts::Shape{1, 3}));
  EXPECT_EQ(ts::var(ts::Array(std::vector<int32_t>{1, 3})).item<float>(), 1.0f);
  EXPECT_EQ(ts::var(ts::Array(std::vector<int32_t>{1, 3})).dtype(), ts::f32);
  // Complex variance is real: mean |x - mean|^2.
  ts::Array z(std::vector<ts::complex64_t>{{1, 1}, {-1, -1}});
  EXPECT_EQ(ts::var(z).dtype(), ts::f32);
  EXPECT_FLOAT_EQ(ts::var(z).item<float>(), 2.0f);
}

TEST(ArgReduce, FirstOccurrenceOfTies) {
  ts::Array x(std::vector<float>{3, 1, 3, 1, 2, 2, 0, 0}, {2, 4});
  EXPECT_EQ(ts::argmax(x, 1).to_vector<int32_t>(), (std::vector<int32_t>{0, 0}));
  EXPECT_EQ(ts::argmin(x, 1).to_vector<int32_t>(), (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(ts::argmax(x, 0).to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 0, 0}));
  EXPECT_EQ(ts::argmin(x, 0).to_vector<int32_t>(), (std::vector<int32_t>{1, 0, 1, 1}));
  EXPECT_EQ(ts::argmax(x, 1).dtype(), ts::i32);
  EXPECT_EQ(ts::argmax(x, -1, true).shape(), (ts::Shape{2, 1}));
}

TEST(ArgReduce, NaNIsMaximalAndMinimalAndFirstNaNWins) {
  for (DType dt : {ts::f16, ts::f32, ts::f64}) {
    ts::Array x = ts::Array(std::vector<double>{1, kNaN, 5, kNaN, 9, 0}, {6}).astype(dt);
    EXPECT_EQ(ts::argmax(x, 0).item<int>(), 1);
    EXPECT_EQ(ts::argmin(x, 0).item<int>(), 1);
    ts::Array y = ts::Array(std::vector<double>{1, 2, kNaN, 3, 4, kNaN}, {2, 3}).astype(dt);
    EXPECT_EQ(ts::argmax(y, 0).to_vector<int32_t>(), (std::vector<int32_t>{1, 1, 0}));
    EXPECT_EQ(ts::argmin(y, 1).to_vector<int32_t>(), (std::vector<int32_t>{2, 2}));
  }
}

TEST(ArgReduce, EveryDtypeAgainstReference) {
  for (DType dt : kAllDtypes) {
    SCOPED_TRACE(ts::dtype_name(dt));
    const auto data = make_data(24, [&](int64_t i) { return small_value(dt, i); });
    ts::Array x = ts::Array(data, {2, 3, 4}).astype(dt);
    for (int64_t axis = 0; axis < 3; ++axis) {
      const int64_t n = x.dim(axis);
      const int64_t stride = axis == 0 ? 12 : axis == 1 ? 4 : 1;
      std::vector<int32_t> want_max, want_min;
      for (int64_t flat = 0; flat < 24; ++flat) {
        if ((flat / stride) % n != 0) continue;  // one start per output element
        int32_t bmax = 0, bmin = 0;
        for (int64_t k = 1; k < n; ++k) {
          const double v = data[size_t(flat + k * stride)];
          if (v > data[size_t(flat + bmax * stride)]) bmax = int32_t(k);
          if (v < data[size_t(flat + bmin * stride)]) bmin = int32_t(k);
        }
        want_max.push_back(bmax), want_min.push_back(bmin);
      }
      EXPECT_EQ(ts::argmax(x, axis).to_vector<int32_t>(), want_max) << "axis " << axis;
      EXPECT_EQ(ts::argmin(x, axis).to_vector<int32_t>(), want_min) << "axis " << axis;
    }
  }
}

TEST(ArgReduce, EmptyAxisIsValueError) {
  try {
    ts::argmax(ts::zeros({2, 0}), 1);
    FAIL();
  } catch (const ts::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("argmax"), std::string::npos);
  }
  EXPECT_THROW(ts::argmin(ts::zeros({0}), 0), ts::ValueError);
}

TEST(Cumulative, CumsumForwardAndReverseAlongEachAxis) {
  ts::Array x(std::vector<int32_t>{1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(ts::cumsum(x, 1).to_vector<int32_t>(), (std::vector<int32_t>{1, 3, 6, 4, 9, 15}));
  EXPECT_EQ(ts::cumsum(x, 0).to_vector<int32_t>(), (std::vector<int32_t>{1, 2, 3, 5, 7, 9}));
  EXPECT_EQ(ts::cumsum(x, 1, true).to_vector<int32_t>(), (std::vector<int32_t>{6, 5, 3, 15, 11, 6}));
  EXPECT_EQ(ts::cumsum(x, -2, true).to_vector<int32_t>(), (std::vector<int32_t>{5, 7, 9, 4, 5, 6}));
  EXPECT_EQ(ts::cumsum(x, 1).shape(), x.shape());
}

TEST(Cumulative, CumprodCummaxCumminAgainstReference) {
  for (DType dt : kAllDtypes) {
    SCOPED_TRACE(ts::dtype_name(dt));
    const auto data = make_data(24, [&](int64_t i) {
      return dt == ts::bool_ ? double(i % 4 != 0) : double((i * 5) % 3 + (i % 7 == 3 ? 0 : 1));
    });
    ts::Array x = ts::Array(data, {2, 3, 4}).astype(dt);
    for (int64_t axis = 0; axis < 3; ++axis)
      for (bool reverse : {false, true}) {
        const int64_t n = x.dim(axis), stride = axis == 0 ? 12 : axis == 1 ? 4 : 1;
        std::vector<double> wsum(24), wprod(24), wmax(24), wmin(24);
        for (int64_t flat = 0; flat < 24; ++flat) {
          if ((flat / stride) % n != 0) continue;
          double s = 0, p = 1, mx = -1e300, mn = 1e300;
          for (int64_t step = 0; step < n; ++step) {
            const int64_t k = reverse ? n - 1 - step : step, at = flat + k * stride;
            const double v = data[size_t(at)];
            s += v, p *= v, mx = std::max(mx, v), mn = std::min(mn, v);
            wsum[size_t(at)] = s, wprod[size_t(at)] = p, wmax[size_t(at)] = mx, wmin[size_t(at)] = mn;
          }
        }
        SCOPED_TRACE("axis " + std::to_string(axis) + (reverse ? " reverse" : ""));
        EXPECT_EQ(ts::cumsum(x, axis, reverse).to_vector<double>(), wsum);
        EXPECT_EQ(ts::cumsum(x, axis, reverse).dtype(), dt == ts::bool_ ? ts::i32 : dt);  // jnp.cumsum keeps int8
        EXPECT_EQ(ts::cumprod(x, axis, reverse).to_vector<double>(), wprod);
        EXPECT_EQ(ts::cummax(x, axis, reverse).to_vector<double>(), wmax);
        EXPECT_EQ(ts::cummin(x, axis, reverse).to_vector<double>(), wmin);
        EXPECT_EQ(ts::cummax(x, axis, reverse).dtype(), dt);
      }
  }
}

TEST(Cumulative, CummaxPropagatesNaN) {
  ts::Array x(std::vector<float>{1, std::nanf(""), 3});
  auto r = ts::cummax(x, 0).to_vector<float>();
  EXPECT_EQ(r[0], 1);
  EXPECT_TRUE(std::isnan(r[1]) && std::isnan(r[2]));
}

TEST(Cumulative, CumsumOfBoolCountsInInt32) {
  ts::Array b(std::vector<bool>{true, false, true, true});
  EXPECT_EQ(ts::cumsum(b, 0).dtype(), ts::i32);
  EXPECT_EQ(ts::cumsum(b, 0).to_vector<int32_t>(), (std::vector<int32_t>{1, 1, 2, 3}));
}

TEST(Cumulative, NonContiguousInput) {
  ts::Array x(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(ts::cumsum(ts::transpose(x), 1).to_vector<float>(), (std::vector<float>{1, 5, 2, 7, 3, 9}));
}

TEST(Reduce, JitMatchesEager) {
  auto f = [](const ts::Array& x) {
    return std::vector<ts::Array>{ts::sum(x, {1}, true), ts::max(x, {0}), ts::argmax(x, 1), ts::argmin(x, 0, true),
                                  ts::cumsum(x, 0, true), ts::cummax(x, 1), ts::mean(x), ts::var(x, {0}),
                                  ts::any(x, {1}), ts::prod(x, {-1})};
  };
  ts::Array x(make_data(12, [](int64_t i) { return double((i * 5) % 7) - 3; }), {3, 4});
  x = x.astype(ts::f32);
  auto eager = f(x);
  auto jitted = ts::jit(f)(x);
  ASSERT_EQ(eager.size(), jitted.size());
  for (size_t i = 0; i < eager.size(); ++i) {
    EXPECT_EQ(jitted[i].shape(), eager[i].shape()) << i;
    EXPECT_EQ(jitted[i].dtype(), eager[i].dtype()) << i;
    EXPECT_EQ(jitted[i].to_vector<double>(), eager[i].to_vector<double>()) << i;
  }
}

TEST(Reduce, ProgramsShowReductionPrimitivesAndTraceTimeErrors) {
  ts::Array x = ts::ones({2, 3});
  const std::string text =
      ts::make_program([](const ts::Array& a) { return ts::max(a, {1}, true); }, x).to_string();
  EXPECT_NE(text.find("reduce_max[axes=(1,)]"), std::string::npos) << text;
  EXPECT_NE(text.find("reshape"), std::string::npos) << text;
  EXPECT_THROW(ts::make_program([](const ts::Array& a) { return ts::sum(a, {5}); }, x), ts::IndexError);
  EXPECT_THROW(ts::make_program([](const ts::Array& a) { return ts::max(a, {0}); }, ts::ones({0, 2})), ts::ValueError);
}
