#include <gtest/gtest.h>

#include "tessel/tessel.h"

namespace ts = tessel;

TEST(Smoke, AddBroadcastsAndKeepsDtype) {
  ts::Array x = ts::Array(std::vector<float>{1, 2, 3});
  ts::Array y = x * 2.0 + x;
  EXPECT_EQ(y.dtype(), ts::f32);
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{3, 6, 9}));
}
