// dtypes: names, sizes, half-precision conversion, and jax.numpy type promotion.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tessel/tessel.h"

namespace ts = tessel;

TEST(DType, NamesAndSizes) {
  EXPECT_STREQ(ts::dtype_name(ts::bf16), "bfloat16");
  EXPECT_STREQ(ts::dtype_short_name(ts::c128), "c128");
  EXPECT_EQ(ts::itemsize(ts::c64), 8u);
  EXPECT_EQ(ts::itemsize(ts::bool_), 1u);
  EXPECT_EQ(ts::dtype_from_name("f16"), ts::f16);
  EXPECT_EQ(ts::dtype_from_name("uint32"), ts::u32);
  EXPECT_THROW(ts::dtype_from_name("float128"), ts::DTypeError);
}

TEST(DType, Float16RoundTripsAndRoundsToNearestEven) {
  EXPECT_EQ(float(ts::float16_t(1.0f)), 1.0f);
  EXPECT_EQ(ts::float16_t(1.0f).bits, 0x3c00);
  EXPECT_EQ(ts::float16_t(65504.0f).bits, 0x7bff);           // largest finite
  EXPECT_EQ(ts::float16_t(65520.0f).bits, 0x7c00);           // rounds to inf
  EXPECT_EQ(ts::float16_t(5.9604645e-08f).bits, 0x0001);     // smallest subnormal
  EXPECT_EQ(ts::float16_t(1.0f + 1.0f / 2048).bits, 0x3c00); // tie -> even
  EXPECT_EQ(ts::float16_t(1.0f + 3.0f / 2048).bits, 0x3c02); // tie -> even (up)
  EXPECT_TRUE(std::isnan(float(ts::float16_t(std::nanf("")))));
  EXPECT_EQ(float(ts::float16_t(-2.5f)), -2.5f);
}

TEST(DType, BFloat16KeepsTheTopHalfRounded) {
  EXPECT_EQ(ts::bfloat16_t(1.0f).bits, 0x3f80);
  EXPECT_EQ(float(ts::bfloat16_t(3.140625f)), 3.140625f);
  EXPECT_EQ(float(ts::bfloat16_t(1.00390625f)), 1.0f);  // tie -> even
  EXPECT_TRUE(std::isnan(float(ts::bfloat16_t(std::nanf("")))));
}

struct PromotionCase {
  ts::DType a;
  bool a_weak;
  ts::DType b;
  bool b_weak;
  ts::DType want;
  bool want_weak;
};

class Promotion : public ::testing::TestWithParam<PromotionCase> {};

TEST_P(Promotion, FollowsTheJaxLattice) {
  auto c = GetParam();
  auto r = ts::promote_types(c.a, c.a_weak, c.b, c.b_weak);
  EXPECT_EQ(r.dtype, c.want) << ts::dtype_name(c.a) << " + " << ts::dtype_name(c.b);
  EXPECT_EQ(r.weak, c.want_weak);
  auto s = ts::promote_types(c.b, c.b_weak, c.a, c.a_weak);  // symmetric
  EXPECT_EQ(s.dtype, c.want);
}

// Values from the jax.numpy type promotion table.
INSTANTIATE_TEST_SUITE_P(
    Table, Promotion,
    ::testing::Values(PromotionCase{ts::i8, false, ts::u8, false, ts::i16, false},
                      PromotionCase{ts::i32, false, ts::u32, false, ts::i64, false},
                      PromotionCase{ts::i64, false, ts::u64, false, ts::f64, false},
                      PromotionCase{ts::f16, false, ts::bf16, false, ts::f32, false},
                      PromotionCase{ts::bool_, false, ts::u8, false, ts::u8, false},
                      PromotionCase{ts::i32, false, ts::f16, false, ts::f16, false},
                      PromotionCase{ts::f32, false, ts::c64, false, ts::c64, false},
                      PromotionCase{ts::f64, false, ts::c64, false, ts::c128, false},
                      PromotionCase{ts::u16, false, ts::f32, false, ts::f32, false},
                      // weak operands contribute only their kind
                      PromotionCase{ts::f32, false, ts::f64, true, ts::f32, false},
                      PromotionCase{ts::i8, false, ts::i32, true, ts::i8, false},
                      PromotionCase{ts::u8, false, ts::i64, true, ts::u8, false},
                      PromotionCase{ts::f16, false, ts::f64, true, ts::f16, false},
                      PromotionCase{ts::i32, false, ts::f64, true, ts::f32, true},
                      PromotionCase{ts::i64, false, ts::c128, true, ts::c64, true},
                      PromotionCase{ts::bf16, false, ts::c64, true, ts::c64, false},
                      PromotionCase{ts::bool_, false, ts::i32, true, ts::i32, true},
                      PromotionCase{ts::f32, true, ts::f64, true, ts::f64, true},
                      PromotionCase{ts::i32, true, ts::f32, true, ts::f32, true}),
    [](const auto& info) {
      const PromotionCase& c = info.param;
      auto name = [](ts::DType d, bool weak) { return std::string(ts::dtype_name(d)) + (weak ? "_weak" : ""); };
      return name(c.a, c.a_weak) + "_and_" + name(c.b, c.b_weak);
    });

TEST(Scalar, ConvertsBetweenDtypes) {
  EXPECT_EQ(ts::Scalar(3.7, ts::i32).to<int>(), 3);
  EXPECT_EQ(ts::Scalar(-1, ts::u8).to<int>(), 255);
  EXPECT_EQ(ts::Scalar(1e10, ts::i32).to<int32_t>(), std::numeric_limits<int32_t>::max());  // saturates
  EXPECT_EQ(ts::Scalar(ts::complex64_t(2, 3)).to<double>(), 2.0);
  EXPECT_TRUE(ts::Scalar(0.5, ts::bool_).to<bool>());
  EXPECT_EQ(ts::Scalar(1.5f).to_string(), "1.5");
  EXPECT_EQ(ts::Scalar(2.0, ts::f32).to_string(), "2.0");
  EXPECT_EQ(ts::Scalar(true).to_string(), "True");
}
