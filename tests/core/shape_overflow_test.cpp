// Shapes whose element or byte count overflows 64 bits, or that have a negative size, are
// rejected by every function they can enter (core/shape_check.h): creation, reshape,
// broadcast, tile, repeat, pad, concatenate, random draws, tracing, abstract evaluation of
// any primitive and deserialized programs. Each throws a tessel::Error naming the operation.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <string>

#include "ir/serialize.h"
#include "ir/trace.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace ir = tessel::ir;

namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t k2p40 = int64_t(1) << 40, k2p62 = int64_t(1) << 62;

// Shapes that no array can have: the element count overflows (the first is the smallest
// square one), the byte count of a float32 overflows, a size is negative.
const std::vector<ts::Shape> kBadShapes = {{3037000500, 3037000500}, {k2p40, k2p40}, {1 << 22, 1 << 22, 1 << 22},
                                           {k2p40, k2p40, 0},         {kMax},          {k2p62},
                                           {2, -3}};

/// The message of the tessel::Error that `f` throws ("" when it throws none; a test
/// failure for any other exception).
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ts::Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a tessel::Error: " << e.what();
    return "not a tessel::Error";
  }
  return "";
}

/// The program of `f` traced on one input of aval `a` (avals a caller gives, as to lower).
ir::Program trace_on(const std::function<ts::Array(const ts::Array&)>& f, const ts::Aval& a) {
  std::vector<ts::Aval> avals{a};
  return ts::detail::trace_to_program([&](std::span<const ts::Array> x) { return std::vector<ts::Array>{f(x[0])}; },
                                      avals, "f");
}

struct Case {
  const char* op;  // the name the error must start with
  std::function<void(const ts::Shape&)> call;
};

TEST(ShapeOverflow, EveryCreationAndShapeFunctionRejectsTheShape) {
  const ts::Array key = ts::random::key(0);
  const ts::Array empty = ts::zeros({0}, ts::f32);
  const std::vector<Case> cases = {
      {"zeros", [](const ts::Shape& s) { ts::zeros(s, ts::f32); }},
      {"ones", [](const ts::Shape& s) { ts::ones(s, ts::f32); }},
      {"full", [](const ts::Shape& s) { ts::full(s, 1.0f); }},
      {"iota", [](const ts::Shape& s) { ts::iota(ts::f32, s, 0); }},
      {"Array", [](const ts::Shape& s) { ts::Array::from_bytes(nullptr, s, ts::f32); }},
      {"reshape", [&](const ts::Shape& s) { ts::reshape(empty, s); }},
      {"broadcast_in_dim", [](const ts::Shape& s) { ts::broadcast_to(ts::ones({1}, ts::f32), s); }},
      {"uniform", [&](const ts::Shape& s) { ts::random::uniform(key, s); }},
      {"normal", [&](const ts::Shape& s) { ts::random::normal(key, s); }},
      {"bits", [&](const ts::Shape& s) { ts::random::bits(key, s); }},
      {"trace", [](const ts::Shape& s) { trace_on([](const ts::Array& x) { return x; }, ts::Aval(s, ts::f32)); }}};
  for (const Case& c : cases)
    for (const ts::Shape& s : kBadShapes) {
      const std::string err = error_of([&] { c.call(s); });
      EXPECT_EQ(err.rfind(c.op, 0), 0u) << c.op << " of shape " << ts::shape_to_string(s) << ": '" << err << "'";
      EXPECT_NE(err.find(ts::shape_to_string(s)), std::string::npos) << err;
    }
}

TEST(ShapeOverflow, FunctionsThatComputeTheShapeRejectOverflowingResults) {
  const ts::Array x = ts::ones({4}, ts::f32);
  const std::vector<std::pair<const char*, std::function<void()>>> cases = {
      {"tile", [&] { ts::tile(x, {k2p62}); }},
      {"tile", [&] { ts::tile(x, {k2p40, k2p40}); }},
      {"repeat", [&] { ts::repeat(x, k2p62, 0); }},
      {"pad", [&] { ts::pad(x, {{kMax, 1}}); }},
      {"pad", [&] { ts::lax_pad(x, 0.0f, {{0, 0, k2p62}}); }},
      {"concatenate",
       [] {
         ts::Array big = ts::zeros({k2p62, 0}, ts::u8);  // no elements, but 2^62 rows
         ts::concatenate({big, big, big}, 0);
       }},
      {"arange", [] { ts::arange(0.0, 1e30); }},
      {"linspace", [] { ts::linspace(0.0, 1.0, kMax); }},
      {"eye", [] { ts::eye(k2p40, k2p40); }},
      {"zeros", [] { ts::sum(ts::zeros({3037000500, 3037000500})); }},
  };
  for (const auto& [op, f] : cases) {
    const std::string err = error_of(f);
    EXPECT_EQ(err.rfind(op, 0), 0u) << op << ": '" << err << "'";
    EXPECT_NE(err.find("overflow"), std::string::npos) << err;  // not "negative dimension (-4611686018427387904,)"
  }
}

TEST(ShapeOverflow, LargestRepresentableShapesStillWork) {
  // Element and byte counts at the limit pass the check (nothing is allocated here).
  EXPECT_EQ(ts::Aval({k2p62, 0}, ts::u8).size(), 0);
  ir::Program p =
      trace_on([](const ts::Array& x) { return ts::reshape(x, {k2p40, 1 << 20}); }, ts::Aval({int64_t(1) << 60}, ts::f32));
  EXPECT_EQ(p.out_avals()[0].shape, (ts::Shape{k2p40, 1 << 20}));
  EXPECT_EQ(ts::zeros({0, 5}).shape(), (ts::Shape{0, 5}));
}

TEST(ShapeOverflow, AbstractEvaluationOfAnyPrimitiveChecksItsOutputs) {
  // convert_element_type's rule keeps the shape and changes the dtype: 2^62 bytes become
  // 2^65. The check after every rule catches it, naming the primitive.
  std::string err = error_of([] {
    trace_on([](const ts::Array& x) { return ts::astype(x, ts::f64); }, ts::Aval({k2p62}, ts::u8));
  });
  EXPECT_EQ(err.rfind("convert_element_type: an array of shape (4611686018427387904,) and dtype float64 has more bytes", 0),
            0u)
      << err;
}

TEST(ShapeOverflow, DeserializedProgramsWithOverflowingAvalsAreRejected) {
  ir::Program p;
  p.invars.push_back(ir::new_var(ts::Aval({3}, ts::f32)));
  p.outvars.push_back(ir::Atom(p.invars[0]));
  std::string bytes = ir::serialize(p);
  // The aval is written as count, dims, dtype, weak: make its one dimension 2^62 (an f32
  // array of 2^64 bytes).
  const std::string dim3("\x03\0\0\0\0\0\0\0", 8);
  const size_t at = bytes.find(dim3);
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 8, std::string("\0\0\0\0\0\0\0\x40", 8));
  std::string err = error_of([&] { ir::deserialize(bytes); });
  EXPECT_EQ(err.rfind("deserialize", 0), 0u) << err;
  EXPECT_NE(err.find("(4611686018427387904,)"), std::string::npos) << err;
  EXPECT_NE(err.find("more bytes than a 64-bit count holds"), std::string::npos) << err;
}

}  // namespace
