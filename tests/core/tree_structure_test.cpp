// Tree structures (include/tessel/tree_structure.h): the text of a tree's containers, sizes
// and keys, and trees rebuilt from it, as host callbacks and colocated calls use them.
#include <gtest/gtest.h>

#include <array>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "tessel/tessel.h"

namespace ts = tessel;

namespace {

struct State {
  ts::Array h, u;
  int step = 0;
};

}  // namespace

TESSEL_TREE(State, h, u)

namespace {

using Map = std::map<std::string, ts::Array>;

TEST(TreeStructure, TextOfContainersSizesAndKeys) {
  ts::Array a(1.0f);
  EXPECT_EQ(ts::tree_structure(a), "*");
  // JAX's [1, (2, {"v": 3})] as C++ containers.
  EXPECT_EQ(ts::tree_structure(std::tuple{a, std::tuple{a, Map{{"v", a}}}}), "(*(*{1:v*}))");
  EXPECT_EQ(ts::tree_structure(std::vector<ts::Array>{a, a, a}), "[***]");
  EXPECT_EQ(ts::tree_structure(std::pair{a, 3}), "(*_)");
  EXPECT_EQ(ts::tree_structure(std::array<Map, 2>{Map{{"bb", a}}, Map{}}), "({2:bb*}{})");
  EXPECT_EQ(ts::tree_structure(State{a, a, 7}), "<2>");
  EXPECT_EQ(ts::tree_structure(Map{{"key:with*stars", a}}), "{14:key:with*stars*}");
}

TEST(TreeStructure, SkeletonRebuildsTheContainers) {
  ts::Array a(1.0f);
  using T = std::tuple<std::vector<ts::Array>, std::map<std::string, std::vector<ts::Array>>, std::pair<ts::Array, int>>;
  const T value{{a, a}, {{"x", {a}}, {"y*{", {}}}, {a, 5}};
  const std::string text = ts::tree_structure(value);
  T skeleton = ts::tree_skeleton<T>(text, "test");
  EXPECT_EQ(ts::tree_structure(skeleton), text);
  EXPECT_EQ(std::get<0>(skeleton).size(), 2u);
  EXPECT_EQ(std::get<1>(skeleton).at("y*{").size(), 0u);
  EXPECT_FALSE(std::get<0>(skeleton)[0].valid()) << "leaves are empty";
  EXPECT_EQ(std::get<2>(skeleton).second, 0) << "static members come back default-constructed";
  State s = ts::tree_skeleton<State>("<2>", "state");
  EXPECT_FALSE(s.h.valid());
}

TEST(TreeStructure, TextOfAnotherTypeIsAValueError) {
  auto message = [](auto run) {
    try {
      run();
    } catch (const ts::ValueError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string m = message([] { ts::tree_skeleton<std::tuple<ts::Array, ts::Array>>("(*)", "my result"); });
  EXPECT_NE(m.find("my result: the tree structure '(*)' does not fit"), std::string::npos) << m;
  EXPECT_NE(m.find("expected '*' (an array) at character 2"), std::string::npos) << m;
  m = message([] { ts::tree_skeleton<Map>("{9:ab*}", "x"); });
  EXPECT_NE(m.find("a key of 9 characters"), std::string::npos) << m;
  m = message([] { ts::tree_skeleton<std::vector<ts::Array>>("[**", "x"); });
  EXPECT_NE(m.find("']' (the end of a std::vector)"), std::string::npos) << m;
  m = message([] { ts::tree_skeleton<ts::Array>("**", "x"); });
  EXPECT_NE(m.find("the end of the structure"), std::string::npos) << m;
  m = message([] { ts::tree_skeleton<State>("<3>", "x"); });
  EXPECT_NE(m.find("expected '<2>'"), std::string::npos) << m;
}

}  // namespace
