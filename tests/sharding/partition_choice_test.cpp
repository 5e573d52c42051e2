// When an equation's operands want different layouts, the partitioner keeps the largest
// one's and moves the smaller ones, whatever their order (8 devices).
#include <gtest/gtest.h>

#include <string>

#include "sharding/sharding_test_util.h"
#include "tessel/tessel.h"

namespace ts = tessel;
using sharding_test::count;
using sharding_test::range_f32;

namespace {

// The bytes the per-device program's collectives move, from its summary line.
std::string moved(const std::string& text) {
  const size_t p = text.find("moves ");
  return p == std::string::npos ? "" : text.substr(p, text.find('\n', p) - p);
}

}  // namespace

TEST(PartitionChoice, ConflictingOperandLayoutsMoveTheSmallerOperand) {
  const ts::Mesh mesh = ts::make_mesh({8}, {"x"});
  ts::NamedSharding rows(mesh, ts::P("x", ts::none)), cols(mesh, ts::P(ts::none, "x"));
  // a's rows and b's columns both want x: one of them must be gathered. b is 4x larger.
  const ts::Array a = range_f32({64, 32}, 0.01f), b = range_f32({32, 256}, 0.02f);
  auto check = [&](const std::string& text, const ts::Array& got) {
    EXPECT_EQ(got.to_vector<float>(), ts::matmul(a, b).to_vector<float>());
    EXPECT_EQ(count(text, "all_gather"), 1) << text;
    EXPECT_NE(text.find("f32[64,32] = all_gather"), std::string::npos) << text;  // a, not b
    EXPECT_EQ(moved(text), "moves 7.0 KiB (7168 bytes) per device") << text;
  };
  auto ab = ts::jit([](const ts::Array& x, const ts::Array& y) { return ts::matmul(x, y); }, {.in_shardings = {rows, cols}});
  check(ab.lower(a, b).compile().as_text(), ab(a, b));
  auto ba = ts::jit([](const ts::Array& y, const ts::Array& x) { return ts::matmul(x, y); }, {.in_shardings = {cols, rows}});
  check(ba.lower(b, a).compile().as_text(), ba(b, a));
}
