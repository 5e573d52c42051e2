// What partitioning costs, made visible (8 devices): TESSEL_LOG=info lines for the equations
// the partitioner computes on gathered operands, and the bytes each collective moves in the
// partitioned program's text.
#include <gtest/gtest.h>

#include <string>

#include "core/log.h"
#include "sharding/sharding_test_util.h"
#include "tessel/tessel.h"

namespace ts = tessel;
using sharding_test::range_f32;
using sharding_test::count;

namespace {

// The info level for one test, and whatever the process had afterwards.
class InfoLogging : public ::testing::Test {
 protected:
  void SetUp() override {
    before_ = ts::detail::log_level();
    ts::detail::set_log_level(ts::detail::LogLevel::kInfo);
  }
  void TearDown() override { ts::detail::set_log_level(before_); }

 private:
  ts::detail::LogLevel before_ = ts::detail::LogLevel::kWarning;
};

ts::Mesh line() { return ts::make_mesh({8}, {"x"}); }

}  // namespace

TEST_F(InfoLogging, CumsumAlongASplitDimensionLogsOneLinePerCompilation) {
  ts::NamedSharding rows(line(), ts::P("x", ts::none));
  auto f = ts::jit([](const ts::Array& a) { return ts::cumsum(a, 0) * 2.0f; }, {.in_shardings = {rows}});
  ts::Array a = range_f32({64, 32});  // 8 KiB
  ::testing::internal::CaptureStderr();
  f(a).block_until_ready();
  f(a).block_until_ready();  // cached: no second line
  (void)f.lower(a).compile().as_text();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(count(err, "info: "), 1) << err;
  EXPECT_NE(err.find("cumsum along dimension 0 split over x: no partitioned form; gathering operand 0 {x, _} into "
                     "f32[64,32] (8.0 KiB per device)"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("info: partition '"), std::string::npos) << err;
}

TEST_F(InfoLogging, CarryTheBodyReturnsWholeIsLoggedOnce) {
  ts::NamedSharding rows(line(), ts::P("x"));
  auto f = ts::jit(
      [](const ts::Array& a) {
        return ts::fori_loop(
            ts::Array(int32_t(0)), ts::Array(int32_t(3)),
            [](const ts::Array&, const ts::Array& c) { return ts::real(ts::fft::fft(c)) * 0.5f + 1.0f; }, a);
      },
      {.in_shardings = {rows}});
  ts::Array a = range_f32({16});
  ::testing::internal::CaptureStderr();
  f(a).block_until_ready();
  f(a).block_until_ready();
  const std::string err = ::testing::internal::GetCapturedStderr();
  // The loop is partitioned, but its body's fft needs the whole carry: it is gathered once,
  // before the loop, and said so.
  EXPECT_EQ(count(err, "info: "), 1) << err;
  EXPECT_NE(err.find("while_loop carry 2 enters as {x} and the body returns it as {_}; carrying it as {_}"),
            std::string::npos)
      << err;
}

TEST_F(InfoLogging, ProgramsWithoutFallbackLogNothing) {
  ts::NamedSharding rows(line(), ts::P("x"));
  auto f = ts::jit([](const ts::Array& a, const ts::Array& b) { return ts::sum(ts::sin(a) * b, {0}); },
                   {.in_shardings = {rows, rows}});
  ts::Array a = range_f32({64, 32});
  ::testing::internal::CaptureStderr();
  f(a, a).block_until_ready();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, "");
}

TEST(CompiledText, CollectivesShowTheBytesTheyMovePerDevice) {
  ts::Mesh m = line();
  ts::NamedSharding cols(m, ts::P(ts::none, "x")), rows(m, ts::P("x", ts::none));
  ts::Array a = range_f32({8, 64}), b = range_f32({64, 16});
  // The local product is f32[8,16] (512 bytes); the all-reduce reads the 7 other devices'.
  auto f = ts::jit([](const ts::Array& a, const ts::Array& b) { return ts::matmul(a, b); }, {.in_shardings = {cols, rows}});
  std::string text = f.lower(a, b).compile().as_text();
  EXPECT_NE(text.find("# partitioned over Mesh('x': 8)\n# 1 collective moves 3.5 KiB (3584 bytes) per device\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("op=sum] c  # moves 3.5 KiB per device\n"), std::string::npos) << text;
  // A reduce-scatter reads its 64-byte block of the 7 other partial products.
  auto g = ts::jit([](const ts::Array& a, const ts::Array& b) { return ts::matmul(a, b); },
                   {.in_shardings = {cols, rows}, .out_shardings = {rows}});
  text = g.lower(a, b).compile().as_text();
  EXPECT_NE(text.find("# 1 collective moves 448 B per device\n"), std::string::npos) << text;
  EXPECT_NE(text.find("reduce_scatter[axes=(x), dim=0, group_size=8, op=sum] c  # moves 448 B per device"),
            std::string::npos)
      << text;
  // P(x, _) -> P(_, x) of f32[16,24]: each device keeps one of its eight 24-byte blocks.
  auto h = ts::jit([](const ts::Array& v) { return v; }, {.in_shardings = {rows}, .out_shardings = {cols}});
  text = h.lower(range_f32({16, 24})).compile().as_text();
  EXPECT_NE(text.find("# 1 collective moves 168 B per device\n"), std::string::npos) << text;
  EXPECT_NE(text.find("all_to_all[axes=(x), concat_dim=0, group_size=8, split_dim=1] a  # moves 168 B per device"),
            std::string::npos)
      << text;
}

TEST(CompiledText, SummaryAddsUpEveryCollective) {
  ts::NamedSharding rows(line(), ts::P("x"));
  // Two partial f32[32] results (128 bytes each), two all-reduces of 7 * 128 bytes.
  auto f = ts::jit([](const ts::Array& a) { return ts::sum(a, {0}) + ts::max(a, {0}); }, {.in_shardings = {rows}});
  std::string text = f.lower(range_f32({64, 32})).compile().as_text();
  EXPECT_NE(text.find("# 2 collectives move 1.8 KiB (1792 bytes) per device\n"), std::string::npos) << text;
  EXPECT_EQ(count(text, "  # moves 896 B per device\n"), 2) << text;
  // No communication: a summary that says so, and no notes.
  auto g = ts::jit([](const ts::Array& a) { return ts::sin(a); }, {.in_shardings = {rows}});
  text = g.lower(range_f32({64, 32})).compile().as_text();
  EXPECT_NE(text.find("# no collectives: nothing moves between devices\n"), std::string::npos) << text;
  EXPECT_EQ(count(text, "# moves"), 0) << text;
}

TEST(CompiledText, UnpartitionedProgramsPrintAsBefore) {
  auto f = ts::jit([](const ts::Array& a) { return ts::sum(a, {0}); });
  std::string text = f.lower(range_f32({4, 3})).compile().as_text();
  EXPECT_EQ(count(text, "collective"), 0) << text;
  EXPECT_EQ(count(text, "# moves"), 0) << text;
}
