// The SPMD factor rules of the primitives (ir/sharding_rule.h), called directly on sample
// avals: which dimensions share a factor, which stay whole, which are reductions, and the
// per-device parameters of primitives whose parameters hold global sizes.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "ir/primitive.h"
#include "ir/sharding_rule.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace ir = tessel::ir;

namespace {

constexpr int W = ir::kWhole;
using ir::Combine;
using Dims = std::vector<std::vector<int>>;

/// A rule with its factors renumbered in order of first appearance (operands first, then
/// results), so expectations do not depend on the order a rule creates its factors in.
/// Factors that label no dimension are dropped.
struct Canonical {
  Dims operands, results;
  std::vector<Combine> factors;
  /// Per factor, its divisor (ShardingRule::divides); empty when no factor has one.
  std::vector<int64_t> divides = {};
  /// Per factor, whether it is a permutation factor; empty when none is.
  std::vector<bool> permutes = {};
  bool operator==(const Canonical&) const = default;
};

Canonical canonical(const ir::ShardingRule& r) {
  std::map<int, int> ids;
  Canonical c;
  auto relabel = [&](const Dims& in, Dims& out) {
    for (const auto& dims : in) {
      std::vector<int> v;
      for (int f : dims) {
        if (f == W) {
          v.push_back(W);
          continue;
        }
        EXPECT_GE(f, 0);
        EXPECT_LT(size_t(f), r.factors.size());
        auto [it, added] = ids.emplace(f, int(ids.size()));
        if (added) {
          c.factors.push_back(r.factors[size_t(f)]);
          c.divides.push_back(r.divisor(size_t(f)));
          c.permutes.push_back(r.permutation(size_t(f)));
        }
        v.push_back(it->second);
      }
      out.push_back(v);
    }
  };
  relabel(r.operands, c.operands);
  relabel(r.results, c.results);
  if (std::all_of(c.divides.begin(), c.divides.end(), [](int64_t d) { return d == 0; })) c.divides.clear();
  if (std::none_of(c.permutes.begin(), c.permutes.end(), [](bool p) { return p; })) c.permutes.clear();
  return c;
}

std::string to_string(const Canonical& c) {
  auto dims = [](const Dims& d) {
    std::string s = "{";
    for (size_t i = 0; i < d.size(); ++i) {
      s += i ? ", {" : "{";
      for (size_t j = 0; j < d[i].size(); ++j)
        s += (j ? "," : "") + (d[i][j] == W ? std::string("W") : std::to_string(d[i][j]));
      s += "}";
    }
    return s + "}";
  };
  std::string s = "operands " + dims(c.operands) + " results " + dims(c.results) + " factors {";
  for (size_t i = 0; i < c.factors.size(); ++i) s += std::string(i ? "," : "") + ir::combine_name(c.factors[i]);
  s += "}";
  if (!c.divides.empty()) {
    s += " divides {";
    for (size_t i = 0; i < c.divides.size(); ++i) s += (i ? "," : "") + std::to_string(c.divides[i]);
    s += "}";
  }
  if (!c.permutes.empty()) {
    s += " permutes {";
    for (size_t i = 0; i < c.permutes.size(); ++i) s += std::string(i ? "," : "") + (c.permutes[i] ? "1" : "0");
    s += "}";
  }
  return s;
}

void PrintTo(const Canonical& c, std::ostream* os) { *os << to_string(c); }

/// Output avals of primitive `name` on `ins`.
std::vector<ts::Aval> eval(const std::string& name, const std::vector<ts::Aval>& ins, const ir::Params& p) {
  return ir::lookup_primitive(name).abstract_eval(ins, p);
}

/// The rule of primitive `name` on `ins` (outputs by abstract evaluation), renumbered.
Canonical rule(const std::string& name, const std::vector<ts::Aval>& ins, const ir::Params& p = {}) {
  const ir::Primitive& prim = ir::lookup_primitive(name);
  if (!prim.sharding_rule) {
    ADD_FAILURE() << name << " has no sharding rule";
    return {};
  }
  const auto outs = eval(name, ins, p);
  const ir::ShardingRule r = prim.sharding_rule(ins, outs, p);
  EXPECT_EQ(r.operands.size(), ins.size()) << name;
  for (size_t i = 0; i < ins.size() && i < r.operands.size(); ++i)
    EXPECT_EQ(r.operands[i].size(), ins[i].shape.size()) << name << " operand " << i;
  EXPECT_EQ(r.results.size(), outs.size()) << name;
  for (size_t i = 0; i < outs.size() && i < r.results.size(); ++i)
    EXPECT_EQ(r.results[i].size(), outs[i].shape.size()) << name << " result " << i;
  // Factors found in results are pass-through.
  for (const auto& dims : r.results)
    for (int f : dims)
      if (f != W) {
        EXPECT_EQ(r.factors[size_t(f)], Combine::kNone) << name;
      }
  return canonical(r);
}

/// The per-device parameters of primitive `name` for local avals.
ir::Params localize(const std::string& name, const ir::Params& p, const std::vector<ts::Aval>& local_ins,
                    const std::vector<ts::Aval>& local_outs) {
  const ir::Primitive& prim = ir::lookup_primitive(name);
  EXPECT_NE(prim.localize, nullptr) << name;
  if (!prim.localize) return p;
  return prim.localize(p, local_ins, local_outs);
}

ts::Aval f32(ts::Shape s) { return ts::Aval(std::move(s), ts::float32); }
ts::Aval i32(ts::Shape s) { return ts::Aval(std::move(s), ts::int32); }
ts::Aval b8(ts::Shape s) { return ts::Aval(std::move(s), ts::bool_); }

const Combine N = Combine::kNone;

}  // namespace

TEST(ShardingRules, ElementwiseTableSharesEveryDimension) {
  const Canonical binary{{{0, 1}, {0, 1}}, {{0, 1}}, {N, N}};
  for (const char* name : {"add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2"})
    EXPECT_EQ(rule(name, {f32({4, 6}), f32({4, 6})}), binary) << name;
  for (const char* name : {"eq", "ne", "lt", "le", "gt", "ge"})
    EXPECT_EQ(rule(name, {f32({4, 6}), f32({4, 6})}), binary) << name;
  for (const char* name : {"and", "or", "xor", "shift_left", "shift_right"})
    EXPECT_EQ(rule(name, {i32({4, 6}), i32({4, 6})}), binary) << name;
  const Canonical unary{{{0, 1}}, {{0, 1}}, {N, N}};
  for (const char* name :
       {"neg",   "abs",  "sign",  "floor", "ceil",  "round", "is_finite", "exp",      "exp2",    "expm1",        "log",
        "log1p", "sqrt", "rsqrt", "cbrt",  "sin",   "cos",   "tan",       "asin",     "acos",    "atan",         "sinh",
        "cosh",  "tanh", "asinh", "acosh", "atanh", "erf",   "erfc",      "logistic", "erf_inv", "stop_gradient"})
    EXPECT_EQ(rule(name, {f32({4, 6})}), unary) << name;
  EXPECT_EQ(rule("not", {b8({4, 6})}), unary);
  EXPECT_EQ(rule("complex", {f32({4, 6}), f32({4, 6})}), binary);
  for (const char* name : {"real", "imag", "conj"})
    EXPECT_EQ(rule(name, {ts::Aval({4, 6}, ts::complex64)}), unary) << name;
  EXPECT_EQ(rule("integer_pow", {f32({4, 6})}, {{"y", int64_t(3)}}), unary);
  EXPECT_EQ(rule("convert_element_type", {f32({4, 6})}, {{"new_dtype", ts::int32}, {"weak_type", false}}), unary);
  EXPECT_EQ(rule("bitcast_convert_type", {f32({4, 6})}, {{"new_dtype", ts::int32}}), unary);
}

TEST(ShardingRules, ElementwiseScalarOperandsHaveNoDimensions) {
  EXPECT_EQ(rule("mul", {f32({4, 6}), f32({})}), (Canonical{{{0, 1}, {}}, {{0, 1}}, {N, N}}));
  EXPECT_EQ(rule("add", {f32({}), f32({5})}), (Canonical{{{}, {0}}, {{0}}, {N}}));
  // select_n: a scalar predicate, or scalar cases.
  EXPECT_EQ(rule("select_n", {b8({}), f32({3, 2}), f32({3, 2})}), (Canonical{{{}, {0, 1}, {0, 1}}, {{0, 1}}, {N, N}}));
  EXPECT_EQ(rule("select_n", {b8({3, 2}), f32({}), f32({3, 2})}), (Canonical{{{0, 1}, {}, {0, 1}}, {{0, 1}}, {N, N}}));
  EXPECT_EQ(rule("select_n", {b8({3, 2}), f32({}), f32({})}), (Canonical{{{0, 1}, {}, {}}, {{0, 1}}, {N, N}}));
  // Rank 0 everywhere: no factors at all.
  EXPECT_EQ(rule("add", {f32({}), f32({})}), (Canonical{{{}, {}}, {{}}, {}}));
  // Random bits: scalar key words, counters of the result's shape (each device hashes its
  // piece), two results.
  const ts::Aval k({}, ts::uint32), counters({6, 2}, ts::uint32);
  EXPECT_EQ(rule("threefry2x32", {k, k, k, counters}), (Canonical{{{}, {}, {}, {0, 1}}, {{0, 1}, {0, 1}}, {N, N}}));
}

TEST(ShardingRules, BroadcastInDim) {
  // (3,) into (2, 3): the kept dimension is shared, the new one the result's own.
  ir::Params p{{"shape", ts::Shape{2, 3}}, {"broadcast_dimensions", ts::Shape{1}}};
  EXPECT_EQ(rule("broadcast_in_dim", {f32({3})}, p), (Canonical{{{0}}, {{1, 0}}, {N, N}}));
  // (1, 5) into (4, 5, 7): the expanded size-1 dimension stays whole on the operand.
  p = {{"shape", ts::Shape{4, 5, 7}}, {"broadcast_dimensions", ts::Shape{0, 1}}};
  EXPECT_EQ(rule("broadcast_in_dim", {f32({1, 5})}, p), (Canonical{{{W, 0}}, {{1, 0, 2}}, {N, N, N}}));
  // A scalar.
  p = {{"shape", ts::Shape{4, 5}}, {"broadcast_dimensions", ts::Shape{}}};
  EXPECT_EQ(rule("broadcast_in_dim", {f32({})}, p), (Canonical{{{}}, {{0, 1}}, {N, N}}));
  // Per device: the local result shape.
  ir::Params q = localize("broadcast_in_dim", p, {f32({})}, {f32({2, 5})});
  EXPECT_EQ(q.get_ints("shape"), (ts::Shape{2, 5}));
  EXPECT_EQ(q.get_ints("broadcast_dimensions"), ts::Shape{});
}

TEST(ShardingRules, ReshapeSharesUnchangedDimensionsAndMajorParts) {
  auto r = [](ts::Shape in, ts::Shape out) { return rule("reshape", {f32(std::move(in))}, {{"new_sizes", out}}); };
  // Size-1 dimensions come and go; the others are matched one to one.
  EXPECT_EQ(r({4, 6}, {4, 1, 6}), (Canonical{{{0, 1}}, {{0, W, 1}}, {N, N}}));
  EXPECT_EQ(r({1, 8}, {8}), (Canonical{{{W, 0}}, {{0}}, {N}}));
  // A split or a merge: the major dimensions on both sides share a factor that pieces must
  // divide (the gcd of their sizes); the minor ones stay whole; the dimensions around pass
  // through.
  EXPECT_EQ(r({5, 12, 7}, {5, 3, 4, 7}), (Canonical{{{0, 1, 2}}, {{0, 1, W, 2}}, {N, N, N}, {0, 3, 0}}));
  EXPECT_EQ(r({5, 3, 4}, {5, 12}), (Canonical{{{0, 1, W}}, {{0, 1}}, {N, N}, {0, 3}}));
  EXPECT_EQ(r({8, 6}, {48}), (Canonical{{{0, W}}, {{0}}, {N}, {8}}));
  EXPECT_EQ(r({48}, {8, 6}), (Canonical{{{0}}, {{0, W}}, {N}, {8}}));
  EXPECT_EQ(r({4, 2, 3}, {8, 3}), (Canonical{{{0, W, 1}}, {{0, 1}}, {N, N}, {4, 0}}));
  // (6, 4) -> (4, 6): one group of two dimensions on each side, pieces dividing 2.
  EXPECT_EQ(r({6, 4}, {4, 6}), (Canonical{{{0, W}}, {{0, W}}, {N}, {2}}));
  // (3, 4) -> (2, 6): the major parts share no divisor; the group stays whole.
  EXPECT_EQ(r({3, 4}, {2, 6}), (Canonical{{{W, W}}, {{W, W}}, {}}));
  // (2, 3, 4) -> (6, 4): a merge, then an unchanged dimension.
  EXPECT_EQ(r({2, 3, 4}, {6, 4}), (Canonical{{{0, W, 1}}, {{0, 1}}, {N, N}, {2, 0}}));
  // Empty arrays and scalars.
  EXPECT_EQ(r({0, 3}, {3, 0}), (Canonical{{{W, W}}, {{W, W}}, {}}));
  EXPECT_EQ(r({}, {1, 1}), (Canonical{{{}}, {{W, W}}, {}}));
  ir::Params q = localize("reshape", {{"new_sizes", ts::Shape{5, 3, 4, 7}}}, {f32({2, 12, 7})}, {f32({2, 3, 4, 7})});
  EXPECT_EQ(q.get_ints("new_sizes"), (ts::Shape{2, 3, 4, 7}));
}

TEST(ShardingRules, TransposePermutesFactors) {
  EXPECT_EQ(rule("transpose", {f32({2, 3, 4})}, {{"permutation", ts::Shape{2, 0, 1}}}),
            (Canonical{{{0, 1, 2}}, {{2, 0, 1}}, {N, N, N}}));
}

TEST(ShardingRules, ShapeOpsMoveTheirPositionsAlongPermutationFactors) {
  // rev: the reversed dimensions are permutation factors (pieces swap places whole; any
  // number of pieces, the padding put first where they do not divide: sharding/halo.cpp).
  EXPECT_EQ(rule("rev", {f32({2, 3, 4})}, {{"dimensions", ts::Shape{0, 2}}}),
            (Canonical{{{0, 1, 2}}, {{0, 1, 2}}, {N, N, N}, {}, {true, false, true}}));
  EXPECT_EQ(rule("concatenate", {f32({2, 3}), f32({2, 5}), f32({2, 1})}, {{"dimension", int64_t(1)}}),
            (Canonical{{{0, 1}, {0, 1}, {0, 1}}, {{0, 1}}, {N, N}, {}, {false, true}}));
  // pad: low or high padding (or cropping) is a permutation factor; interior padding keeps
  // a dimension whole.
  const std::vector<int64_t> cfg{0, 0, 0, 1, 0, 0, 0, 0, 1, 0, -1, 0, 0, 0, 0};
  EXPECT_EQ(rule("pad", {f32({2, 3, 4, 5, 6}), f32({})}, {{"padding_config", cfg}}),
            (Canonical{{{0, 1, W, 2, 3}, {}}, {{0, 1, W, 2, 3}}, {N, N, N, N}, {}, {false, true, true, false}}));
}

TEST(ShardingRules, SliceSharesDimensionsTakenInFull) {
  ir::Params p{{"start_indices", ts::Shape{0, 1, 0, 0}},
               {"limit_indices", ts::Shape{8, 5, 6, 3}},
               {"strides", ts::Shape{1, 1, 2, 1}}};
  // A window of stride 1 is a permutation factor; a strided one stays whole.
  EXPECT_EQ(rule("slice", {f32({8, 5, 6, 4})}, p),
            (Canonical{{{0, 1, W, 2}}, {{0, 1, W, 2}}, {N, N, N}, {}, {false, true, true}}));
  // Per device: a split dimension 0 (local size 3) is read to its local end; the others keep
  // their limits.
  ir::Params q = localize("slice", p, {f32({3, 5, 6, 4})}, {f32({3, 4, 3, 3})});
  EXPECT_EQ(q.get_ints("limit_indices"), (ts::Shape{3, 5, 6, 3}));
  EXPECT_EQ(q.get_ints("start_indices"), p.get_ints("start_indices"));
  EXPECT_EQ(q.get_ints("strides"), p.get_ints("strides"));
}

TEST(ShardingRules, DynamicSlices) {
  ir::Params p{{"slice_sizes", ts::Shape{8, 2, 4}}};
  EXPECT_EQ(rule("dynamic_slice", {f32({8, 5, 4}), i32({}), i32({}), i32({})}, p),
            (Canonical{{{0, 1, 2}, {}, {}, {}}, {{0, 1, 2}}, {N, N, N}, {}, {false, true, false}}));
  ir::Params q = localize("dynamic_slice", p, {f32({2, 5, 4}), i32({}), i32({}), i32({})}, {f32({2, 2, 4})});
  EXPECT_EQ(q.get_ints("slice_sizes"), (ts::Shape{2, 2, 4}));
  EXPECT_EQ(rule("dynamic_update_slice", {f32({8, 5, 4}), f32({8, 1, 4}), i32({}), i32({}), i32({})}),
            (Canonical{{{0, 1, 2}, {0, 1, 2}, {}, {}, {}}, {{0, 1, 2}}, {N, N, N}, {}, {false, true, false}}));
}

TEST(ShardingRules, GatherAndScatter) {
  // take(x, idx, axis=1) on x (4, 10, 6) with idx (3, 5): result (4, 3, 5, 6).
  ir::Params p{{"axes", ts::Shape{1}},
               {"batch_pos", int64_t(1)},
               {"start_indices", ts::Shape{0, 0, 0}},
               {"limit_indices", ts::Shape{4, 10, 6}},
               {"strides", ts::Shape{1, 1, 1}}};
  EXPECT_EQ(rule("gather", {f32({4, 10, 6}), i32({3, 5})}, p),
            (Canonical{{{0, W, 1}, {2, 3}}, {{0, 2, 3, 1}}, {N, N, N, N}}));
  // Per device: window dimension 0 split (local 2), the indices' dimension 0 split.
  ir::Params q = localize("gather", p, {f32({2, 10, 6}), i32({2, 5})}, {f32({2, 2, 5, 6})});
  EXPECT_EQ(q.get_ints("limit_indices"), (ts::Shape{2, 10, 6}));
  // A partial window stays whole; batch_pos 0 puts the indices' dimensions first.
  p.set("batch_pos", int64_t(0)).set("start_indices", ts::Shape{1, 0, 0});
  EXPECT_EQ(rule("gather", {f32({4, 10, 6}), i32({3})}, p), (Canonical{{{W, W, 0}, {1}}, {{1, W, 0}}, {N, N}}));
  // scatter: the indices and the update's index dimensions stay whole.
  p = {{"axes", ts::Shape{1}},
       {"batch_pos", int64_t(1)},
       {"start_indices", ts::Shape{0, 0, 0}},
       {"limit_indices", ts::Shape{4, 10, 6}},
       {"strides", ts::Shape{1, 1, 1}},
       {"mode", std::string("add")}};
  EXPECT_EQ(rule("scatter", {f32({4, 10, 6}), f32({4, 3, 6}), i32({3})}, p),
            (Canonical{{{0, W, 1}, {0, W, 1}, {W}}, {{0, W, 1}}, {N, N}}));
  q = localize("scatter", p, {f32({4, 10, 3}), f32({4, 3, 3}), i32({3})}, {f32({4, 10, 3})});
  EXPECT_EQ(q.get_ints("limit_indices"), (ts::Shape{4, 10, 3}));
  // Without index arrays (x.at[1:4, :].set(u)), a partial window of stride 1 is a
  // permutation factor shared with the update.
  p = {{"axes", ts::Shape{}},
       {"batch_pos", int64_t(0)},
       {"start_indices", ts::Shape{1, 0}},
       {"limit_indices", ts::Shape{4, 6}},
       {"strides", ts::Shape{1, 1}},
       {"mode", std::string("set")}};
  EXPECT_EQ(rule("scatter", {f32({8, 6}), f32({3, 6})}, p),
            (Canonical{{{0, 1}, {0, 1}}, {{0, 1}}, {N, N}, {}, {true, false}}));
}

TEST(ShardingRules, IotaCountsAlongAPermutationFactor) {
  ir::Params p{{"dtype", ts::int32}, {"shape", ts::Shape{4, 6, 2}}, {"dimension", int64_t(1)}};
  EXPECT_EQ(rule("iota", {}, p), (Canonical{{}, {{0, 1, 2}}, {N, N, N}, {}, {false, true, false}}));
  ir::Params q = localize("iota", p, {}, {ts::Aval({1, 6, 2}, ts::int32)});
  EXPECT_EQ(q.get_ints("shape"), (ts::Shape{1, 6, 2}));
  EXPECT_EQ(q.get_int("dimension"), 1);
}

TEST(ShardingRules, CumulativeOpsScanAWholeAxis) {
  for (const char* name : {"cumsum", "cumprod", "cummax", "cummin"})
    EXPECT_EQ(rule(name, {f32({3, 4, 5})}, {{"axis", int64_t(1)}, {"reverse", false}}),
              (Canonical{{{0, W, 1}}, {{0, W, 1}}, {N, N}}))
        << name;
}

TEST(ShardingRules, ReductionsCombinePartialResults) {
  ir::Params p{{"axes", ts::Shape{0, 2}}};
  auto expect = [](Combine c) { return Canonical{{{0, 1, 2}}, {{1}}, {c, N, c}}; };
  EXPECT_EQ(rule("reduce_sum", {f32({4, 5, 6})}, p), expect(Combine::kSum));
  EXPECT_EQ(rule("reduce_prod", {f32({4, 5, 6})}, p), expect(Combine::kProd));
  EXPECT_EQ(rule("reduce_max", {f32({4, 5, 6})}, p), expect(Combine::kMax));
  EXPECT_EQ(rule("reduce_min", {f32({4, 5, 6})}, p), expect(Combine::kMin));
  EXPECT_EQ(rule("reduce_sum", {i32({4, 5, 6})}, p), expect(Combine::kSum));
  EXPECT_EQ(rule("reduce_max", {i32({4, 5, 6})}, p), expect(Combine::kMax));
  // On bool: sum is or (max), prod is and (min); all/any likewise.
  EXPECT_EQ(rule("reduce_sum", {b8({4, 5, 6})}, p), expect(Combine::kMax));
  EXPECT_EQ(rule("reduce_prod", {b8({4, 5, 6})}, p), expect(Combine::kMin));
  EXPECT_EQ(rule("reduce_and", {b8({4, 5, 6})}, p), expect(Combine::kMin));
  EXPECT_EQ(rule("reduce_or", {b8({4, 5, 6})}, p), expect(Combine::kMax));
  // Bitwise and/or of integers: no collective computes them, so the axes stay whole.
  for (const char* name : {"reduce_and", "reduce_or"})
    EXPECT_EQ(rule(name, {i32({4, 5, 6})}, p), (Canonical{{{W, 0, W}}, {{0}}, {N}})) << name;
  // A full reduction to a scalar.
  EXPECT_EQ(rule("reduce_sum", {f32({7})}, {{"axes", ts::Shape{0}}}), (Canonical{{{0}}, {{}}, {Combine::kSum}}));
  // argmax/argmin: the searched axis stays whole.
  for (const char* name : {"argmax", "argmin"})
    EXPECT_EQ(rule(name, {f32({4, 5, 6})}, {{"axis", int64_t(1)}, {"index_dtype", ts::int32}}),
              (Canonical{{{0, W, 1}}, {{0, 1}}, {N, N}}))
        << name;
}

TEST(ShardingRules, DotGeneral) {
  // Batched matmul: lhs (b, m, k), rhs (b, k, n) -> (b, m, n).
  ir::Params p{{"lhs_contracting", ts::Shape{2}},
               {"rhs_contracting", ts::Shape{1}},
               {"lhs_batch", ts::Shape{0}},
               {"rhs_batch", ts::Shape{0}}};
  EXPECT_EQ(rule("dot_general", {f32({2, 3, 4}), f32({2, 4, 5})}, p),
            (Canonical{{{0, 1, 2}, {0, 2, 3}}, {{0, 1, 3}}, {N, N, Combine::kSum, N}}));
  // Contracting and batch dimensions anywhere; several contracting pairs.
  p = {{"lhs_contracting", ts::Shape{0, 2}},
       {"rhs_contracting", ts::Shape{2, 1}},
       {"lhs_batch", ts::Shape{3}},
       {"rhs_batch", ts::Shape{0}}};
  EXPECT_EQ(rule("dot_general", {f32({4, 6, 5, 2}), f32({2, 5, 4, 7})}, p),
            (Canonical{{{0, 1, 2, 3}, {3, 2, 0, 4}}, {{3, 1, 4}}, {Combine::kSum, N, Combine::kSum, N, N}}));
  // An outer product: no contraction.
  p = {{"lhs_contracting", ts::Shape{}},
       {"rhs_contracting", ts::Shape{}},
       {"lhs_batch", ts::Shape{}},
       {"rhs_batch", ts::Shape{}}};
  EXPECT_EQ(rule("dot_general", {f32({3}), f32({4})}, p), (Canonical{{{0}, {1}}, {{0, 1}}, {N, N}}));
  // Integers add; bool products `or` together.
  p = {{"lhs_contracting", ts::Shape{1}},
       {"rhs_contracting", ts::Shape{0}},
       {"lhs_batch", ts::Shape{}},
       {"rhs_batch", ts::Shape{}}};
  EXPECT_EQ(rule("dot_general", {i32({3, 4}), i32({4, 5})}, p),
            (Canonical{{{0, 1}, {1, 2}}, {{0, 2}}, {N, Combine::kSum, N}}));
  EXPECT_EQ(rule("dot_general", {b8({3, 4}), b8({4, 5})}, p),
            (Canonical{{{0, 1}, {1, 2}}, {{0, 2}}, {N, Combine::kMax, N}}));
}

TEST(ShardingRules, PrimitivesComputedWhole) {
  // These have no factor rule: they are computed on whole operands (or partitioned through
  // their nested programs). fft has one: its batch dimensions split.
  for (const char* name : {"while", "cond", "scan", "custom_jvp_call", "custom_vjp_call",
                           "custom_vjp_lin", "checkpoint", "fused", "fused_chain", "jit", "device_put"}) {
    const ir::Primitive* p = nullptr;
    try {
      p = &ir::lookup_primitive(name);
    } catch (const ts::Error&) {
      continue;  // registered on first use (jit)
    }
    EXPECT_EQ(p->sharding_rule, nullptr) << name;
  }
}
