// The compiler and the transformations ask primitives, not names (STYLE.md "One place per
// primitive"): index maps, point costs, reduction epilogues and the flags that fusion and
// remat read are rules on ir::Primitive, set where each primitive is defined. No source file
// of src/compiler or src/transforms compares a primitive's name or spells the name of a
// primitive defined elsewhere; the rules themselves give what the name tests gave.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "ir/primitive.h"
#include "tessel/error.h"

namespace ir = tessel::ir;

namespace {

struct Source {
  std::string path;  // relative to src/
  std::string text;
};

std::vector<Source> compiler_and_transforms_sources() {
  const std::filesystem::path src = std::filesystem::path(TESSEL_SOURCE_DIR) / "src";
  std::vector<Source> r;
  for (const char* dir : {"compiler", "transforms"})
    for (const auto& f : std::filesystem::directory_iterator(src / dir)) {
      const std::string ext = f.path().extension().string();
      if (ext != ".cpp" && ext != ".h") continue;
      std::ifstream in(f.path());
      std::stringstream s;
      s << in.rdbuf();
      r.push_back({std::filesystem::relative(f.path(), src).generic_string(), s.str()});
    }
  return r;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> r;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) r.push_back(l);
  return r;
}

/// The lines of `text` that decide by a primitive's name: `e.prim->name == "scatter"`,
/// `"dot_general" != p->name`, `op == "slice"`, `self.name.starts_with(...)`. A name that is
/// only printed (`"jit: primitive '" + e.prim->name + "'"`) is not a test.
std::vector<std::string> name_tests_in(const std::string& text) {
  static const std::regex test(
      R"((->|\b(self|prim|primitive)\.)name\s*(==|!=|<=>|\.(compare|starts_with|ends_with|find|rfind)\())"
      R"(|(==|!=)\s*[\w.>\[\]-]*(->|\b(self|prim|primitive)\.)name\b)"
      R"(|\bop\s*(==|!=)\s*")");
  std::vector<std::string> r;
  for (const std::string& l : lines_of(text))
    if (std::regex_search(l, test)) r.push_back(l);
  return r;
}

bool is_primitive_name(const std::string& s) {
  try {
    ir::lookup_primitive(s);
    return true;
  } catch (const tessel::Error&) {
    return false;
  }
}

/// Names of the primitives that `text` defines (`.name = "jit"`).
std::set<std::string> defined_in(const std::string& text) {
  static const std::regex def(R"re(\.name\s*=\s*"([^"]*)")re");
  std::set<std::string> r;
  for (std::sregex_iterator it(text.begin(), text.end(), def), end; it != end; ++it) r.insert((*it)[1]);
  return r;
}

/// String literals of `text` that name a primitive not in `own`: a list of op names
/// (`{"exp", "log", ...}`) or a name compared some other way.
std::vector<std::string> foreign_names_in(const std::string& text, const std::set<std::string>& own) {
  static const std::regex literal(R"re("((?:[^"\\]|\\.)*)")re");
  std::vector<std::string> r;
  for (const std::string& l : lines_of(text))
    for (std::sregex_iterator it(l.begin(), l.end(), literal), end; it != end; ++it) {
      const std::string s = (*it)[1];
      if (!own.count(s) && is_primitive_name(s)) r.push_back("\"" + s + "\" in: " + l);
    }
  return r;
}

ir::IndexMap identity(size_t rank) {
  ir::IndexMap m;
  for (size_t d = 0; d < rank; ++d) m.push_back({int(d), 1, 0});
  return m;
}

bool same(const ir::Affine& a, const ir::Affine& b) {
  return a.constant() ? b.constant() && a.off == b.off : a.var == b.var && a.coef == b.coef && a.off == b.off;
}

}  // namespace

// The checks catch what the compiler used to write.
TEST(PrimitiveRules, NameChecksCatchNameTests) {
  for (const char* line : {R"(if (!plan.fusible[i] || e.prim->name != "scatter") continue;)",
                           R"(bool save_dots(const ir::Equation& e) { return e.prim->name == "dot_general"; })",
                           R"(if (op == "broadcast_in_dim") {)", R"(if ("pad" == e.prim->name) {)",
                           R"(return self.name.starts_with("reduce_");)"})
    EXPECT_EQ(name_tests_in(line).size(), 1u) << line;
  EXPECT_TRUE(name_tests_in(R"(throw Error("jit: primitive '" + e.prim->name + "' has no kernel");)").empty());
  EXPECT_TRUE(name_tests_in(R"(if (name == "dots_saveable") return &save_dots;)").empty());
  EXPECT_EQ(foreign_names_in(R"(static const char* expensive[] = {"exp", "log", "tanh"};)", {}).size(), 3u);
  EXPECT_TRUE(foreign_names_in(R"(.name = "checkpoint", call_avals("checkpoint", ins, p);)", {"checkpoint"}).empty());
  EXPECT_TRUE(foreign_names_in(R"(throw ValueError("slice: bad start");)", {}).empty());
}

TEST(PrimitiveRules, CompilerAndTransformsTestNoPrimitiveName) {
  const auto sources = compiler_and_transforms_sources();
  EXPECT_GT(sources.size(), 20u);
  for (const Source& s : sources)
    for (const std::string& l : name_tests_in(s.text))
      ADD_FAILURE() << "src/" << s.path << " decides by a primitive's name:\n  " << l
                    << "\ngive ir::Primitive a rule or flag (src/ir/primitive.h) and set it where the primitive "
                       "is defined (src/ops/)";
}

// Names of their own primitives (for definitions and messages) are fine; those of the ops'
// primitives would be a list of op names kept by the compiler.
TEST(PrimitiveRules, CompilerAndTransformsSpellNoOpsPrimitiveName) {
  const auto sources = compiler_and_transforms_sources();
  std::set<std::string> own;
  for (const Source& s : sources) own.merge(defined_in(s.text));
  EXPECT_TRUE(own.count("jit") && own.count("checkpoint") && own.count("fused"));
  for (const Source& s : sources)
    for (const std::string& l : foreign_names_in(s.text, own))
      ADD_FAILURE() << "src/" << s.path << " names a primitive of another layer: " << l
                    << "\nask the primitive for a rule or flag (src/ir/primitive.h) instead";
}

// ---- the rules that replaced the names ----

TEST(PrimitiveRules, SliceReadsStartPlusStrideTimesIndex) {
  const ir::Primitive& slice = ir::lookup_primitive("slice");
  ASSERT_NE(slice.index_map, nullptr);
  const tessel::Aval in({10, 8}, tessel::f32), out({3, 2}, tessel::f32);
  const ir::Params p{{"start_indices", tessel::Shape{1, 2}}, {"limit_indices", tessel::Shape{8, 6}},
                     {"strides", tessel::Shape{3, 2}}};
  const auto cases = slice.index_map(identity(2), std::span(&in, 1), out, p);
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_TRUE(cases[0].when.empty());
  EXPECT_EQ(cases[0].operand, 0);
  ASSERT_EQ(cases[0].at.size(), 2u);
  EXPECT_TRUE(same(cases[0].at[0], {0, 3, 1}));
  EXPECT_TRUE(same(cases[0].at[1], {1, 2, 2}));
  EXPECT_EQ(slice.point_cost, 0);
}

TEST(PrimitiveRules, PadReadsTheOperandInsideAndTheValueOutside) {
  const ir::Primitive& pad = ir::lookup_primitive("pad");
  const std::vector<tessel::Aval> ins{tessel::Aval({4}, tessel::f32), tessel::Aval({}, tessel::f32)};
  const tessel::Aval out({7}, tessel::f32);
  const auto cases = pad.index_map(identity(1), ins, out, ir::Params{{"padding_config", tessel::Shape{2, 1, 0}}});
  ASSERT_EQ(cases.size(), 2u);
  ASSERT_EQ(cases[0].when.size(), 1u);
  EXPECT_EQ(cases[0].when[0].lo, 2);
  EXPECT_EQ(cases[0].when[0].hi, 6);
  EXPECT_TRUE(same(cases[0].at[0], {0, 1, -2}));
  EXPECT_TRUE(cases[1].when.empty());
  EXPECT_EQ(cases[1].operand, 1);
  EXPECT_EQ(pad.point_cost, ir::kCheapPointCost);  // the range test
  // Interior padding has no affine form: the pad stays an unfused kernel.
  EXPECT_TRUE(pad.index_map(identity(1), ins, tessel::Aval({10}, tessel::f32),
                            ir::Params{{"padding_config", tessel::Shape{2, 1, 1}}})
                  .empty());
}

TEST(PrimitiveRules, ReshapeMapsOnlyUnitDimensions) {
  const ir::Primitive& reshape = ir::lookup_primitive("reshape");
  const tessel::Aval in({3, 1, 4}, tessel::f32);
  const auto cases = reshape.index_map(identity(3), std::span(&in, 1), tessel::Aval({1, 3, 4}, tessel::f32),
                                       ir::Params{{"new_sizes", tessel::Shape{1, 3, 4}}});
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_TRUE(same(cases[0].at[0], {1, 1, 0}));
  EXPECT_TRUE(cases[0].at[1].constant());
  EXPECT_TRUE(same(cases[0].at[2], {2, 1, 0}));
  EXPECT_TRUE(reshape.index_map(identity(1), std::span(&in, 1), tessel::Aval({12}, tessel::f32),
                                ir::Params{{"new_sizes", tessel::Shape{12}}})
                  .empty());
}

TEST(PrimitiveRules, StaticScatterUpdatesARegionOfOperandZero) {
  const ir::Primitive& scatter = ir::lookup_primitive("scatter");
  EXPECT_TRUE(scatter.region_update);
  EXPECT_TRUE(ir::lookup_primitive("dynamic_update_slice").region_update);
  EXPECT_FALSE(ir::lookup_primitive("slice").region_update);
  const std::vector<tessel::Aval> ins{tessel::Aval({6}, tessel::f32), tessel::Aval({2}, tessel::f32)};
  auto params = [](const std::string& mode) {
    return ir::Params{{"axes", tessel::Shape{}}, {"batch_pos", int64_t(0)}, {"start_indices", tessel::Shape{3}},
                      {"limit_indices", tessel::Shape{5}}, {"strides", tessel::Shape{1}}, {"mode", mode}};
  };
  const auto cases = scatter.index_map(identity(1), ins, ins[0], params("add"));
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_EQ(cases[0].operand, 1);
  EXPECT_EQ(cases[0].combine, "add");
  EXPECT_TRUE(same(cases[0].at[0], {0, 1, -3}));
  EXPECT_EQ(cases[1].operand, 0);
  EXPECT_TRUE(scatter.index_map(identity(1), ins, ins[0], params("set"))[0].combine.empty());
  EXPECT_TRUE(scatter.index_map(identity(1), ins, ins[0], params("max")).empty());
}

TEST(PrimitiveRules, IotaIsItsIndex) {
  const ir::Primitive& iota = ir::lookup_primitive("iota");
  const auto cases = iota.index_map(identity(2), {}, tessel::Aval({3, 4}, tessel::i32),
                                    ir::Params{{"dtype", tessel::i32}, {"shape", tessel::Shape{3, 4}},
                                               {"dimension", int64_t(1)}});
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_EQ(cases[0].operand, ir::kIndexValue);
  EXPECT_TRUE(same(cases[0].at[0], {1, 1, 0}));
}

TEST(PrimitiveRules, PointCostsCountArithmeticOperations) {
  EXPECT_EQ(ir::lookup_primitive("add").point_cost, ir::kCheapPointCost);
  EXPECT_EQ(ir::lookup_primitive("select_n").point_cost, ir::kCheapPointCost);
  EXPECT_EQ(ir::lookup_primitive("div").point_cost, ir::kDivisionPointCost);
  EXPECT_EQ(ir::lookup_primitive("sqrt").point_cost, ir::kDivisionPointCost);
  for (const char* name : {"exp", "log", "tanh", "pow", "erf", "rem"})
    EXPECT_EQ(ir::lookup_primitive(name).point_cost, ir::kExpensivePointCost) << name;
  for (const char* name : {"broadcast_in_dim", "transpose", "rev", "reshape", "iota"})
    EXPECT_EQ(ir::lookup_primitive(name).point_cost, 0) << name;
  EXPECT_EQ(ir::lookup_primitive("concatenate").point_cost, ir::kCheapPointCost);
}

TEST(PrimitiveRules, SumMaxMinOfFloatsHaveFusedEpilogues) {
  const auto sum = ir::lookup_primitive("reduce_sum").reduction_epilogue(tessel::f32);
  ASSERT_TRUE(sum.has_value());
  EXPECT_EQ(sum->acc_type, "double");  // at least as accurate as the kernel's pairwise float sums
  const auto max = ir::lookup_primitive("reduce_max").reduction_epilogue(tessel::f64);
  ASSERT_TRUE(max.has_value());
  EXPECT_EQ(max->identity, "double(-__builtin_inf())");
  EXPECT_FALSE(ir::lookup_primitive("reduce_min").reduction_epilogue(tessel::i32).has_value());
  EXPECT_FALSE(ir::lookup_primitive("reduce_min").reduction_epilogue(tessel::f16).has_value());
  EXPECT_EQ(ir::lookup_primitive("reduce_prod").reduction_epilogue, nullptr);
  EXPECT_EQ(ir::lookup_primitive("argmax").reduction_epilogue, nullptr);
}

// JAX's checkpoint_policies.dots_saveable saves dot_general (and conv_general_dilated).
TEST(PrimitiveRules, DotGeneralIsTheMatrixProduct) {
  EXPECT_TRUE(ir::lookup_primitive("dot_general").matrix_product);
  EXPECT_FALSE(ir::lookup_primitive("mul").matrix_product);
  EXPECT_FALSE(ir::lookup_primitive("reduce_sum").matrix_product);
}
