// Array::to_string prints what NumPy's array2string prints (NumPy 2.4, default options):
// the shortest digits that identify a value in its dtype, at most 8 after the point,
// scientific notation when the magnitudes call for it, aligned columns, nan/inf, complex
// values, summaries. The expected texts were printed by NumPy.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/array_format.h"
#include "tessel/tessel.h"

namespace ts = tessel;

namespace {

ts::Array f32s(std::vector<float> v) { return ts::Array(v); }
ts::Array f64s(std::vector<double> v) { return ts::Array(v); }

TEST(ArrayFormat, ShortestDigitsOfTheDtype) {
  EXPECT_EQ(ts::Array(0.6f).to_string(), "0.6");
  EXPECT_EQ(f32s({0.1f, 2 * 3 * 0.1f}).to_string(), "[0.1 0.6]");  // jvp(x*x) tangents
  EXPECT_EQ(f32s({1.0f / 3, 2.0f / 3}).to_string(), "[0.33333334 0.6666667 ]");
  EXPECT_EQ(ts::Array(1.0 / 3).to_string(), "0.33333333");  // at most 8 digits after the point
  EXPECT_EQ(f64s({0.1 + 0.2}).to_string(), "[0.3]");
  EXPECT_EQ(f64s({1.0e7 + 0.123456789}).to_string(), "[10000000.12345679]");
  EXPECT_EQ(f32s({0.1f, 1.0f / 3}).astype(ts::f16).to_string(), "[0.1    0.3333]");
  EXPECT_EQ(f32s({2, 4}).to_string(), "[2. 4.]");
  EXPECT_EQ(f32s({0.5f, -1}).to_string(), "[ 0.5 -1. ]");
  EXPECT_EQ(f64s({100, 0.5}).to_string(), "[100.    0.5]");
  EXPECT_EQ(f64s({0.0, -0.0}).to_string(), "[ 0. -0.]");
  EXPECT_EQ(ts::Array(-0.0).to_string(), "-0.");
  EXPECT_EQ(ts::Array(std::vector<float>{1, 2, 3, 4.5f}, {2, 2}).to_string(), "[[1.  2. ]\n [3.  4.5]]");
  EXPECT_EQ(ts::Array(std::vector<double>{1, 4, 6, 2 - std::sqrt(2.0), 2, 2 + std::sqrt(2.0)}, {2, 3}).to_string(),
            "[[1.         4.         6.        ]\n [0.58578644 2.         3.41421356]]");
}

TEST(ArrayFormat, ScientificWhenTheMagnitudesCallForIt) {
  EXPECT_EQ(f64s({1e-5, 1}).to_string(), "[1.e-05 1.e+00]");
  EXPECT_EQ(f64s({1.5e-5, 1, -300}).to_string(), "[ 1.5e-05  1.0e+00 -3.0e+02]");
  EXPECT_EQ(f64s({1e8}).to_string(), "[1.e+08]");
  EXPECT_EQ(f64s({123456789, 1}).to_string(), "[1.23456789e+08 1.00000000e+00]");
  EXPECT_EQ(f64s({1e-5, 1e100}).to_string(), "[1.e-005 1.e+100]");
  EXPECT_EQ(f64s({0.001, 2}).to_string(), "[1.e-03 2.e+00]");
  EXPECT_EQ(f64s({1000.5, 0.1}).to_string(), "[1.0005e+03 1.0000e-01]");
  EXPECT_EQ(ts::Array(1e-5).to_string(), "1.e-05");
  // float32 switches at 1e6 (its 6 decimal digits), float64 at 1e8.
  EXPECT_EQ(f32s({12345678.9f}).to_string(), "[1.2345679e+07]");
  EXPECT_EQ(f32s({999999}).to_string(), "[999999.]");
  EXPECT_EQ(f32s({1e6f}).to_string(), "[1.e+06]");
}

TEST(ArrayFormat, NanInfAndComplex) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(f64s({nan, 1.5, -inf}).to_string(), "[ nan  1.5 -inf]");
  EXPECT_EQ(f64s({nan, 1e-7, inf}).to_string(), "[   nan 1.e-07    inf]");
  EXPECT_EQ(f64s({nan, inf}).to_string(), "[nan inf]");
  EXPECT_EQ(ts::Array(std::vector<ts::complex128_t>{{1, 2}, {-0.5, -1}}).to_string(), "[ 1. +2.j -0.5-1.j]");
  EXPECT_EQ(ts::Array(std::vector<ts::complex64_t>{{1, 0.1f}}).to_string(), "[1.+0.1j]");
}

TEST(ArrayFormat, SummariesFormatOnlyTheShownValues) {
  EXPECT_EQ(ts::arange(0, 2000, 1, ts::f64).to_string(),
            "[0.000e+00 1.000e+00 2.000e+00 ... 1.997e+03 1.998e+03 1.999e+03]");
  // The hidden middle value does not switch the shown ones to scientific notation.
  EXPECT_EQ(ts::ones({2000}, ts::f64).at({1000}).set(1e-9).to_string(), "[1. 1. 1. ... 1. 1. 1.]");
  // id_print's threshold: fewer elements are summarized too.
  EXPECT_EQ(ts::detail::array_to_string(f32s({1, 2, 3, 4, 5, 6, 7, 8}), 4), "[1. 2. 3. ... 6. 7. 8.]");
}

TEST(ArrayFormat, EmptyArraysPrintAsNumpy) {
  // str(np.zeros(shape, dtype)) is "[]" for every empty shape (NumPy 2.4): (0,), (2, 0),
  // (0, 3), (2, 0, 3), (3, 1, 0); int and bool alike.
  for (const ts::Shape& shape : std::vector<ts::Shape>{{0}, {2, 0}, {0, 3}, {2, 0, 3}, {3, 1, 0}})
    for (ts::DType d : {ts::f32, ts::i32, ts::bool_})
      EXPECT_EQ(ts::zeros(shape, d).to_string(), "[]") << ts::shape_to_string(shape);
  EXPECT_EQ(ts::detail::array_to_string(ts::zeros({4, 0}, ts::f32), 1), "[]");  // summarized alike
}

}  // namespace
