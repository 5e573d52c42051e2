// Reshape of a split array (8 devices): when the split dimension is the major part of the
// dimensions it is merged with (or split into) and the pieces divide that part, each
// device reshapes its own contiguous piece and nothing moves; otherwise the dimension is
// gathered first (and TESSEL_LOG=info says so). Either way the result is the one-device one.
#include <gtest/gtest.h>

#include <string>

#include "core/log.h"
#include "sharding/sharding_test_util.h"
#include "tessel/tessel.h"

namespace ts = tessel;

namespace {

ts::Array range_f32(const ts::Shape& shape) { return sharding_test::range_f32(shape, 0.5f); }

bool communicates(const std::string& text) {
  for (const char* c : {"all_gather", "all_to_all", "all_reduce", "reduce_scatter", "collective_permute"})
    if (text.find(c) != std::string::npos) return true;
  return false;
}

struct Case {
  ts::Shape in, out;
  ts::Mesh mesh;
  ts::PartitionSpec in_spec, out_spec;  // the operand's layout; the result's, as partitioned
};

std::string describe(const Case& c) {
  return ts::shape_to_string(c.in) + " " + c.in_spec.to_string() + " -> " + ts::shape_to_string(c.out);
}

// jit(reshape(a) * 2) partitioned for `c`: the per-device program's text, after checking the
// value against the one-device result and the result's layout.
std::string check(const Case& c) {
  const ts::Shape out = c.out;
  auto fn = [out](const ts::Array& a) { return ts::reshape(a, out) * 2.0f; };
  auto f = ts::jit(fn, {.in_shardings = {ts::NamedSharding(c.mesh, c.in_spec)}});
  const ts::Array a = range_f32(c.in);
  const ts::Array got = f(a);
  EXPECT_EQ(got.shape(), c.out) << describe(c);
  EXPECT_EQ(got.to_vector<float>(), fn(a).to_vector<float>()) << describe(c);
  EXPECT_EQ(got.sharding(), ts::Sharding(ts::NamedSharding(c.mesh, c.out_spec)))
      << describe(c) << ": " << got.sharding().to_string();
  return f.lower(a).compile().as_text();
}

ts::Mesh line(int64_t n) { return ts::make_mesh({n}, {"x"}); }
ts::Mesh grid() { return ts::make_mesh({2, 4}, {"x", "y"}); }

}  // namespace

TEST(PartitionReshape, MajorSplitDimensionStaysSplitWithoutCommunication) {
  const auto none = ts::none;
  for (const Case& c : {
           Case{{8, 6}, {48}, line(2), ts::P("x", none), ts::P("x")},                      // merge
           Case{{48}, {8, 6}, line(2), ts::P("x"), ts::P("x")},                            // split
           Case{{4, 2, 3}, {8, 3}, line(2), ts::P("x"), ts::P("x")},                       // merge, then pass
           Case{{6, 4}, {4, 6}, line(2), ts::P("x"), ts::P("x")},                          // regroup, 2 | gcd
           Case{{5, 8, 6}, {5, 48}, line(2), ts::P(none, "x"), ts::P(none, "x")},          // an inner group
           Case{{16, 6}, {96}, line(8), ts::P("x"), ts::P("x")},                           // 8 devices
           Case{{8, 6}, {48}, grid(), ts::P(ts::axes("x", "y")), ts::P(ts::axes("x", "y"))},  // two axes
           Case{{4, 6}, {2, 2, 6}, grid(), ts::P("x", none), ts::P("x")},                   // 2 | gcd(4, 2)
       }) {
    const std::string text = check(c);
    EXPECT_FALSE(communicates(text)) << describe(c) << ":\n" << text;
  }
}

TEST(PartitionReshape, PiecesThatDoNotLineUpAreGathered) {
  const auto none = ts::none;
  for (const Case& c : {
           Case{{8, 6}, {48}, line(2), ts::P(none, "x"), ts::P()},   // a minor dimension split
           Case{{10, 6}, {60}, line(8), ts::P("x"), ts::P()},        // 8 pieces do not divide 10
           Case{{6, 6}, {36}, line(4), ts::P("x"), ts::P()},         // padded pieces
           Case{{3, 4}, {2, 6}, line(2), ts::P(none, "x"), ts::P()},  // no common major part
           Case{{4, 6}, {2, 2, 6}, grid(), ts::P("y", none), ts::P()},  // 4 pieces, 2 slabs
       }) {
    const std::string text = check(c);
    EXPECT_NE(text.find("all_gather"), std::string::npos) << describe(c) << ":\n" << text;
  }
  // Over x*y (8 pieces) a major part of 4 keeps what divides it: x (2).
  const std::string text = check(Case{{4, 6}, {24}, grid(), ts::P(ts::axes("x", "y")), ts::P("x")});
  EXPECT_NE(text.find("all_gather"), std::string::npos) << text;
}

TEST(PartitionReshape, GatheringForPiecesThatDoNotDivideIsLogged) {
  const ts::detail::LogLevel before = ts::detail::log_level();
  ts::detail::set_log_level(ts::detail::LogLevel::kInfo);
  ::testing::internal::CaptureStderr();
  (void)check(Case{{10, 6}, {60}, line(8), ts::P("x"), ts::P()});
  const std::string err = ::testing::internal::GetCapturedStderr();
  ts::detail::set_log_level(before);
  EXPECT_NE(err.find("reshape along dimension 0 split over x: 8 pieces do not divide 10"), std::string::npos) << err;
  EXPECT_NE(err.find("gathering operand 0 {x, _} into f32[10,6]"), std::string::npos) << err;
}
