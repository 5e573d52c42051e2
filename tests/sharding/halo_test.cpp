// Halo exchange (src/sharding/halo.cpp): windows along a split dimension — rolls, slices,
// pads, concatenation, rev, windowed updates, stencils, iota and random bits — stay split:
// each device receives only the rows it needs from other pieces (collective_permute) and
// nothing is gathered, and the values equal the one-device ones. Sizes that do not divide
// the pieces give the right values too.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/log.h"
#include "sharding/sharding_test_util.h"
#include "tessel/tessel.h"

namespace ts = tessel;
using sharding_test::count;
using sharding_test::range_f32;

namespace {

ts::Mesh line(int64_t k) { return ts::make_mesh({k}, {"x"}); }
ts::Mesh grid() { return ts::make_mesh({2, 4}, {"x", "y"}); }
ts::NamedSharding rows(int64_t k) { return ts::NamedSharding(line(k), ts::P("x", ts::none)); }

/// Values with no pattern along any dimension.
ts::Array wavy(const ts::Shape& shape) { return ts::sin(range_f32(shape, 0.7f, 0.3f)) * 3.0f; }

void expect_close(const ts::Array& got, const ts::Array& want, double tol = 1e-5) {
  ASSERT_EQ(got.shape(), want.shape());
  ASSERT_EQ(got.dtype(), want.dtype());
  const auto g = ts::astype(ts::device_put(got, want.device()), ts::f64).to_vector<double>();
  const auto w = ts::astype(want, ts::f64).to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) ASSERT_NEAR(g[i], w[i], tol * (1 + std::abs(w[i]))) << "at flat index " << i;
}

enum class Moves { kHalo, kNothing, kAny };

/// jit(fn) with the shardings gives fn's one-device values; its per-device program gathers
/// nothing and (kHalo) exchanges rows with collective_permute.
template <class F, class... A>
std::string check(F fn, const ts::JitOptions& opts, Moves moves, const A&... args) {
  auto f = ts::jit(fn, opts);
  const std::string text = f.lower(args...).compile().as_text();
  if (moves != Moves::kAny) {
    EXPECT_EQ(count(text, "= all_gather["), 0) << text;
  }
  if (moves == Moves::kHalo) {
    EXPECT_GT(count(text, "= collective_permute["), 0) << text;
  }
  if (moves == Moves::kNothing) {
    EXPECT_NE(text.find("# no collectives"), std::string::npos) << text;
  }
  expect_close(f(args...), fn(args...));
  return text;
}

ts::JitOptions split_rows(int64_t k, bool out_too = true) {
  ts::JitOptions o;
  o.in_shardings = {rows(k)};
  if (out_too) o.out_shardings = {rows(k)};
  return o;
}

}  // namespace

// ---- roll: a ring permute of the rotated rows, on 2, 4 and 8 devices ----

class HaloRoll : public ::testing::TestWithParam<std::tuple<int64_t, int64_t>> {};

TEST_P(HaloRoll, MovesOnlyTheRotatedRows) {
  const auto [k, shift] = GetParam();
  const ts::Array x = wavy({16, 3});
  const std::string text = check([shift](const ts::Array& v) { return ts::roll(v, shift, 0); }, split_rows(k),
                                 Moves::kHalo, x);
  // The slices feeding the rotation are not exchanged on their own: one ring permute per
  // piece the rotated rows come from.
  const int64_t piece = 16 / k, hops = (std::abs(shift) + piece - 1) / piece;
  EXPECT_EQ(count(text, "= collective_permute["), hops) << text;
}

INSTANTIATE_TEST_SUITE_P(Shifts, HaloRoll,
                         ::testing::Combine(::testing::Values(2, 4, 8), ::testing::Values(1, -1, 3, -3)),
                         [](const auto& info) {
                           const int64_t s = std::get<1>(info.param);
                           return std::to_string(std::get<0>(info.param)) + "dev_shift" + (s < 0 ? "m" : "") +
                                  std::to_string(std::abs(s));
                         });

TEST(Halo, RollAlongASplitColumnDimension) {
  ts::JitOptions o{.in_shardings = {ts::NamedSharding(line(4), ts::P(ts::none, "x"))}};
  check([](const ts::Array& v) { return ts::roll(v, -1, 1) + ts::roll(v, 2, 1); }, o, Moves::kHalo, wavy({3, 16}));
}

// ---- slices, pads, concatenation ----

TEST(Halo, DifferenceOfShiftedSlices) {
  const std::string text =
      check([](const ts::Array& v) { return ts::slice(v, {1, 0}, {16, 3}) - ts::slice(v, {0, 0}, {15, 3}); },
            split_rows(8), Moves::kHalo, wavy({16, 3}));
  EXPECT_EQ(count(text, "= collective_permute["), 1) << text;  // x[1:] needs one row from the right
}

TEST(Halo, SliceFromTwo) {
  check([](const ts::Array& v) { return ts::slice(v, {2, 0}, {16, 3}); }, split_rows(4), Moves::kHalo, wavy({16, 3}));
  check([](const ts::Array& v) { return ts::slice(v, {2, 0}, {16, 3}); }, split_rows(8), Moves::kHalo, wavy({16, 3}));
}

TEST(Halo, LastRowReachesTheFirstDeviceAroundTheRing) {
  check([](const ts::Array& v) { return ts::slice(v, {15, 0}, {16, 3}) * 2.0f; }, split_rows(8, false), Moves::kHalo,
        wavy({16, 3}));
}

TEST(Halo, PadWithAConstant) {
  auto fn = [](const ts::Array& v) { return ts::pad(v, {{2, 1}, {0, 0}}, "constant", 5.0); };
  check(fn, split_rows(4), Moves::kHalo, wavy({16, 3}));
  check(fn, split_rows(8), Moves::kHalo, wavy({16, 3}));  // result pieces of 3 drift from the operand's 2
  auto crop = [](const ts::Array& v) { return ts::lax_pad(v, 0.0f, std::vector<std::array<int64_t, 3>>{{-1, 2, 0}, {0, 0, 0}}); };
  check(crop, split_rows(4), Moves::kHalo, wavy({16, 3}));
}

TEST(Halo, PadAtTheEdges) {
  auto fn = [](const ts::Array& v) { return ts::pad(v, {{1, 2}, {0, 0}}, "edge"); };
  check(fn, split_rows(4), Moves::kHalo, wavy({16, 3}));
  check(fn, split_rows(8), Moves::kHalo, wavy({16, 3}));
}

TEST(Halo, ConcatenateTwoSplitArrays) {
  auto fn = [](const ts::Array& a, const ts::Array& b) { return ts::concatenate({a, b}, 0); };
  ts::JitOptions o{.in_shardings = {rows(8), rows(8)}, .out_shardings = {rows(8)}};
  check(fn, o, Moves::kHalo, wavy({16, 3}), range_f32({8, 3}));
}

TEST(Halo, ShiftWithZerosFlowingIn) {
  auto fn = [](const ts::Array& v) { return ts::concatenate({ts::slice(v, {1, 0}, {16, 3}), ts::zeros({1, 3})}, 0); };
  check(fn, split_rows(8), Moves::kHalo, wavy({16, 3}));
}

// ---- rev: whole pieces change places ----

TEST(Halo, RevSwapsPieces) {
  check([](const ts::Array& v) { return ts::flip(v, ts::Axes{0}) * 2.0f; }, split_rows(8), Moves::kHalo, wavy({16, 3}));
  ts::JitOptions o{.in_shardings = {ts::NamedSharding(grid(), ts::P("x", "y"))}};
  check([](const ts::Array& v) { return ts::flip(v); }, o, Moves::kHalo, wavy({4, 8}));
}

// ---- stencils ----

TEST(Halo, RollStencil) {
  auto fn = [](const ts::Array& u) {
    return u * 0.5f + ts::roll(u, -1, 0) * 0.25f + ts::roll(u, 1, 1) * 0.25f;
  };
  check(fn, split_rows(8), Moves::kHalo, wavy({16, 12}));
  const ts::NamedSharding both(grid(), ts::P("x", "y"));
  check(fn, ts::JitOptions{.in_shardings = {both}, .out_shardings = {both}}, Moves::kHalo, wavy({16, 12}));
}

TEST(Halo, ShallowWaterAverage) {
  auto fn = [](const ts::Array& h) {
    return (ts::slice(h, {1, 1}, {15, 11}) + ts::slice(h, {1, 2}, {15, 12})) * 0.5f;
  };
  check(fn, split_rows(8, false), Moves::kHalo, wavy({16, 12}));
  check(fn, ts::JitOptions{.in_shardings = {ts::NamedSharding(grid(), ts::P("x", "y"))}}, Moves::kHalo,
        wavy({16, 12}));
}

// ---- windows keep their source's pieces (sharding::Grid) ----

// x[1:-1] is each device's own piece of x, shifted by one position: nothing moves for the
// window, for element-wise work on it, for padding it back, or for writing it back into x;
// only a window at another offset (x[2:]) brings one row from the neighbour. Sizes that do
// not divide (18 rows on 4 devices) too.
TEST(Halo, InteriorWindowsKeepTheSourcePieces) {
  auto interior = [](const ts::Array& x) { return ts::pad(ts::slice(x, {1, 0}, {x.shape()[0] - 1, 3}) * 2.0f, {{1, 1}, {0, 0}}); };
  auto write_back = [](const ts::Array& x) {
    const int64_t n = x.shape()[0];
    return x.at({ts::Slice(1, -1)}).set(ts::slice(x, {1, 0}, {n - 1, 3}) * 0.5f + 1.0f);
  };
  auto shifted = [](const ts::Array& x) {
    const int64_t n = x.shape()[0];
    return x.at({ts::Slice(1, -1)}).set(ts::slice(x, {1, 0}, {n - 1, 3}) - ts::slice(x, {2, 0}, {n, 3}));
  };
  for (int64_t n : {16, 18}) {
    for (int64_t k : {2, 4}) {
      check(interior, split_rows(k), Moves::kNothing, wavy({n, 3}));
      check(write_back, split_rows(k), Moves::kNothing, wavy({n, 3}));
      const std::string text = check(shifted, split_rows(k), Moves::kHalo, wavy({n, 3}));
      EXPECT_EQ(count(text, "= collective_permute["), 1) << text;  // x[2:]'s row from the right
    }
  }
}

// A window's pieces reach the program's results, other layouts and reductions realigned to
// the canonical pieces: the values are the one-device ones.
TEST(Halo, KeptPiecesRealignWhereTheyLeave) {
  auto fn = [](const ts::Array& x) {
    const ts::Array w = ts::slice(x, {1, 0}, {17, 5}) * 3.0f;  // pieces kept from x
    return std::vector<ts::Array>{w, ts::sum(w, {0}), ts::sum(w), ts::transpose(w, ts::Axes{1, 0})};
  };
  auto f = ts::jit(fn, ts::JitOptions{.in_shardings = {rows(4)}});
  const ts::Array x = wavy({18, 5});
  const auto got = f(x), want = fn(x);
  for (size_t i = 0; i < got.size(); ++i) expect_close(got[i], want[i]);
}

// Large enough that each device runs the program lowered for its own place (window starts,
// masked rows and iota offsets constants there; src/sharding/spmd.cpp): the values are the
// one-device ones, on pieces that divide and pieces that do not, with the edge rows filled
// by pads and updates on the first and last devices only.
TEST(Halo, EachDeviceRunsItsOwnLoweringOfLargePrograms) {
  auto fn = [](const ts::Array& x) {
    const int64_t n = x.shape()[0];
    const ts::Array inner = ts::slice(x, {1, 0}, {n - 1, 256}), below = ts::slice(x, {2, 0}, {n, 256});
    const ts::Array edged = ts::pad(inner * 0.5f + below, {{1, 1}, {0, 0}}, "edge");
    const ts::Array rows = ts::astype(ts::iota(ts::int32, {n, 256}, 0), ts::f32);
    return edged.at({-2, ts::Slice()}).set(ts::Array(7.0f)) + rows * 0.01f;
  };
  // Pieces of at least 2^16 elements: 2048 rows divide over 2 devices, 2050 not over 8.
  for (auto [n, k] : std::vector<std::pair<int64_t, int64_t>>{{2048, 2}, {2050, 8}}) {
    const std::string text = check(fn, split_rows(k), Moves::kHalo, wavy({n, 256}));
    EXPECT_NE(text.find("# each device runs this program lowered for its place"), std::string::npos) << text;
  }
}

// ---- windowed updates ----

TEST(Halo, SetTheInterior) {
  auto fn = [](const ts::Array& x) {
    const ts::Array inner = ts::slice(x, {2, 1}, {16, 11}) + ts::slice(x, {0, 1}, {14, 11});
    return x.at({ts::Slice(1, -1), ts::Slice(1, -1)}).set(inner);
  };
  check(fn, split_rows(8), Moves::kHalo, wavy({16, 12}));
}

TEST(Halo, SetOneRowFromTheEnd) {
  // The update is a constant, held whole: the device holding row -2 writes it, nothing moves.
  auto fn = [](const ts::Array& x) { return x.at({-2, ts::Slice()}).set(ts::Array(0.0f)); };
  check(fn, split_rows(8), Moves::kNothing, wavy({16, 3}));
  check(fn, split_rows(4), Moves::kNothing, wavy({16, 3}));
  // A row computed from split values moves to the device holding row -2.
  auto last = [](const ts::Array& x) {
    return x.at({ts::Slice(-2, -1), ts::Slice()}).set(ts::slice(x, {13, 0}, {14, 3}) * 2.0f);
  };
  check(last, split_rows(8), Moves::kHalo, wavy({16, 3}));
}

TEST(Halo, AddAndMultiplyIntoAWindow) {
  // A replicated update is windowed on each device: nothing moves.
  auto fn = [](const ts::Array& x, const ts::Array& u) {
    return x.at({ts::Slice(3, 9)}).add(u) + x.at({ts::Slice(5, 11)}).mul(u);
  };
  ts::JitOptions o{.in_shardings = {rows(4), std::nullopt}, .out_shardings = {rows(4)}};
  check(fn, o, Moves::kNothing, wavy({16, 3}), range_f32({6, 3}, 0.5f, 1.0f));
  // An update computed from split rows moves to the pieces that hold its window.
  auto shifted = [](const ts::Array& x) {
    const ts::Array u = ts::slice(x, {5, 0}, {11, 3});
    return x.at({ts::Slice(3, 9)}).add(u * 2.0f) + x.at({ts::Slice(2, 8)}).max(u);
  };
  check(shifted, split_rows(4), Moves::kHalo, wavy({16, 3}));
}

TEST(Halo, ConstantStartDynamicSlices) {
  auto fn = [](const ts::Array& x) {
    const ts::Array w = ts::dynamic_slice(x, {ts::Array(int32_t(3)), ts::Array(int32_t(0))}, {12, 3});
    return ts::dynamic_update_slice(x, w * 2.0f, {ts::Array(int32_t(2)), ts::Array(int32_t(0))});
  };
  check(fn, split_rows(4), Moves::kHalo, wavy({16, 3}));
}

// ---- iota and random bits: each device counts (and draws) only its piece ----

TEST(Halo, IotaCountsFromEachPiece) {
  auto fn = [](const ts::Array& x) { return x + ts::astype(ts::iota(ts::int32, {16, 3}, 0), ts::f32); };
  const std::string text = check(fn, split_rows(8), Moves::kNothing, wavy({16, 3}));
  EXPECT_NE(text.find("axis_index"), std::string::npos) << text;
}

TEST(Halo, RandomBitsArePartitioned) {
  const ts::NamedSharding split(line(8), ts::P("x", ts::none));
  for (bool normal : {false, true}) {
    auto fn = [normal](const ts::Array& key) {
      return normal ? ts::random::normal(key, {16, 8}) : ts::random::uniform(key, {16, 8});
    };
    check(fn, ts::JitOptions{.out_shardings = {split}}, Moves::kNothing, ts::random::key(7));
  }
}

// Every sampler composed of element-wise work over the bits draws only each device's piece:
// no communication, and the one-device values.
TEST(Halo, SamplersArePartitioned) {
  namespace r = ts::random;
  const ts::NamedSharding split(line(8), ts::P("x", ts::none));
  const ts::Shape s{16, 8};
  const ts::Array half(0.5f), two(2.0f);
  const std::vector<std::pair<std::string, std::function<ts::Array(const ts::Array&)>>> samplers{
      {"bernoulli", [&](const ts::Array& k) { return ts::astype(r::bernoulli(k, half, s), ts::f32); }},
      {"bernoulli high", [&](const ts::Array& k) { return ts::astype(r::bernoulli(k, half, s, r::Mode::high), ts::f32); }},
      {"randint", [&](const ts::Array& k) { return ts::astype(r::randint(k, s, ts::Array(-3), ts::Array(9)), ts::f32); }},
      {"truncated_normal", [&](const ts::Array& k) { return r::truncated_normal(k, ts::Array(-1.0f), two, s); }},
      {"gumbel", [&](const ts::Array& k) { return r::gumbel(k, s); }},
      {"gumbel highest", [&](const ts::Array& k) { return r::gumbel(k, s, ts::f32, r::Mode::highest); }},
      {"exponential", [&](const ts::Array& k) { return r::exponential(k, s); }},
      {"laplace", [&](const ts::Array& k) { return r::laplace(k, s); }},
      {"logistic", [&](const ts::Array& k) { return r::logistic(k, s); }},
      {"cauchy", [&](const ts::Array& k) { return r::cauchy(k, s); }},
      {"rademacher", [&](const ts::Array& k) { return ts::astype(r::rademacher(k, s), ts::f32); }},
      {"lognormal", [&](const ts::Array& k) { return r::lognormal(k, half, s); }},
      {"weibull_min", [&](const ts::Array& k) { return r::weibull_min(k, two, half, s); }},
      {"maxwell", [&](const ts::Array& k) { return r::maxwell(k, s); }},
      {"triangular", [&](const ts::Array& k) { return r::triangular(k, ts::Array(-1.0f), half, two, s); }},
      {"wald", [&](const ts::Array& k) { return r::wald(k, two, s); }},
      {"geometric", [&](const ts::Array& k) { return ts::astype(r::geometric(k, half, s), ts::f32); }},
  };
  for (const auto& [name, fn] : samplers) {
    SCOPED_TRACE(name);
    check(fn, ts::JitOptions{.out_shardings = {split}}, Moves::kNothing, ts::random::key(11));
  }
  // The gamma family's per-element rejection loops run on each device's piece; the devices
  // agree only on whether any element still loops (a one-byte all_reduce per iteration).
  const std::vector<std::pair<std::string, std::function<ts::Array(const ts::Array&)>>> looping{
      {"gamma", [&](const ts::Array& k) { return r::gamma(k, two, s); }},
      {"t", [&](const ts::Array& k) { return r::t(k, two, s); }},
  };
  for (const auto& [name, fn] : looping) {
    SCOPED_TRACE(name);
    const std::string text = check(fn, ts::JitOptions{.out_shardings = {split}}, Moves::kAny, ts::random::key(11));
    EXPECT_EQ(count(text, "= all_gather["), 0) << text;
    EXPECT_EQ(count(text, "= collective_permute["), 0) << text;
    EXPECT_GT(count(text, "bool[] = all_reduce["), 0) << text;
    EXPECT_EQ(count(text, "= all_reduce["), count(text, "bool[] = all_reduce[")) << text;
  }
}

// ---- sizes that do not divide the pieces: right values (gathering allowed) ----

TEST(Halo, SizesThatDoNotDivide) {
  const ts::Array x = wavy({10, 3});
  auto opts = split_rows(4);
  for (int64_t s : {1, -1, 3}) check([s](const ts::Array& v) { return ts::roll(v, s, 0); }, opts, Moves::kAny, x);
  check([](const ts::Array& v) { return ts::slice(v, {1, 0}, {10, 3}) - ts::slice(v, {0, 0}, {9, 3}); }, opts,
        Moves::kAny, x);
  check([](const ts::Array& v) { return ts::pad(v, {{2, 1}, {0, 0}}, "constant", 5.0); }, opts, Moves::kAny, x);
  check([](const ts::Array& v) { return ts::pad(v, {{1, 2}, {0, 0}}, "edge"); }, opts, Moves::kAny, x);
  check([](const ts::Array& v) { return ts::flip(v, ts::Axes{0}); }, opts, Moves::kAny, x);
  check([](const ts::Array& v) { return v.at({ts::Slice(1, -1)}).set(ts::slice(v, {2, 0}, {10, 3})); }, opts,
        Moves::kAny, x);
  check([](const ts::Array& v) { return ts::concatenate({v, ts::slice(v, {0, 0}, {3, 3})}, 0); }, opts, Moves::kAny,
        x);
  check([](const ts::Array& v) { return v + ts::astype(ts::iota(ts::int32, {10, 3}, 0), ts::f32); }, opts,
        Moves::kAny, x);
  const ts::Array y = wavy({13, 2});
  auto eight = split_rows(8);
  for (int64_t s : {1, -2}) check([s](const ts::Array& v) { return ts::roll(v, s, 0); }, eight, Moves::kAny, y);
  check([](const ts::Array& v) { return ts::pad(v, {{1, 1}, {0, 0}}, "edge"); }, eight, Moves::kAny, y);
}

// Sizes that do not divide, at sizes where a halo is worth moving (1001 rows: pieces of 501
// or 251 rows, the last one padded): rolls, shifted slices, pads, concatenations and the
// issue's stencil (one step and in a fori_loop) gather nothing, exchange rows with
// collective_permute (an edge pad on 2 devices needs no row from the other piece), and
// give the one-device values. rev swaps pieces with one collective_permute (its result's
// grid puts the padding first) and realigns to canonical pieces with another.
TEST(Halo, SizesThatDoNotDivideStillExchangeHalos) {
  auto stencil = [](const ts::Array& u) { return u * 0.5f + ts::roll(u, -1, 0) * 0.25f + ts::roll(u, 1, 1) * 0.25f; };
  struct Case {
    std::string what;
    std::function<ts::Array(const ts::Array&)> fn;
    bool exchanges_on_2 = true;
    int permutes = -1;  // the collective_permutes expected, where a number is (-1: any)
  };
  const std::vector<Case> cases = {
      {"roll 1", [](const ts::Array& v) { return ts::roll(v, 1, 0); }},
      {"roll -3", [](const ts::Array& v) { return ts::roll(v, -3, 0); }},
      {"shifted slices",
       [](const ts::Array& v) {
         const int64_t n = v.shape()[0];
         return ts::slice(v, {1, 0}, {n, 64}) - ts::slice(v, {0, 0}, {n - 1, 64});
       }},
      {"constant pad", [](const ts::Array& v) { return ts::pad(v, {{2, 1}, {0, 0}}, "constant", 5.0); }},
      {"edge pad", [](const ts::Array& v) { return ts::pad(v, {{1, 2}, {0, 0}}, "edge"); }, false},
      {"concatenate", [](const ts::Array& v) { return ts::concatenate({v, ts::slice(v, {0, 0}, {3, 64})}, 0); }},
      {"rev", [](const ts::Array& v) { return ts::flip(v, ts::Axes{0}); }, true, 2},  // mirror, realign
      {"rev then a stencil", [stencil](const ts::Array& v) { return stencil(ts::flip(v, ts::Axes{0})); }},
      {"stencil", stencil},
      {"stencil loop",
       [stencil](const ts::Array& u0) {
         return ts::fori_loop(0, 4, [stencil](const ts::Array&, const ts::Array& u) { return stencil(u); }, u0);
       }},
  };
  const ts::Array x = wavy({1001, 64});
  for (int64_t k : {2, 4}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(c.what + " on " + std::to_string(k) + " devices");
      const std::string text = check(c.fn, split_rows(k, false), Moves::kAny, x);
      EXPECT_EQ(count(text, "all_gather"), 0) << text;
      if (k > 2 || c.exchanges_on_2) {
        EXPECT_GT(count(text, "= collective_permute["), 0) << text;
      }
      if (c.permutes >= 0) {
        EXPECT_EQ(count(text, "= collective_permute["), c.permutes) << text;
      }
    }
  }
}

// ---- transformations and loops ----

TEST(Halo, GradientOfAStencil) {
  auto loss = [](const ts::Array& u) {
    const ts::Array s = u * 0.5f + ts::roll(u, -1, 0) * 0.25f + ts::roll(u, 1, 0) * 0.25f;
    const ts::Array d = ts::slice(u, {1, 0}, {16, 4}) - ts::slice(u, {0, 0}, {15, 4});
    return ts::sum(s * s) + ts::sum(d * d);
  };
  auto g = [loss](const ts::Array& u) { return ts::grad(loss)(u); };
  check(g, split_rows(8, false), Moves::kHalo, wavy({16, 4}));
}

TEST(Halo, StencilInsideALoop) {
  auto step = [](const ts::Array&, const ts::Array& u) {
    return u * 0.5f + (ts::roll(u, 1, 0) + ts::roll(u, -1, 0)) * 0.25f;
  };
  auto scanned = [step](const ts::Array& u0) { return ts::fori_loop(0, 3, step, u0); };
  check(scanned, split_rows(8), Moves::kHalo, wavy({16, 3}));
  auto looped = [step](const ts::Array& u0) {
    return ts::fori_loop(ts::Array(int32_t(0)), ts::Array(int32_t(3)), step, u0);
  };
  check(looped, split_rows(8), Moves::kHalo, wavy({16, 3}));
}

// Interior windows (which keep their source's pieces) written back into the carry, in a
// loop (the carry realigns to canonical pieces at the body's end), under grad, and with
// rows and columns split over a 2-D mesh, on a program small enough to be one program for
// all devices and on one large enough that its row-split runs are lowered once per device.
TEST(Halo, InteriorWindowsInLoopsGradientsAndTwoSplitDimensions) {
  auto relax = [](const ts::Array& u) {
    const int64_t n = u.shape()[0], m = u.shape()[1];
    const ts::Slice I(1, -1);
    const ts::Array avg = (ts::slice(u, {0, 1}, {n - 2, m - 1}) + ts::slice(u, {2, 1}, {n, m - 1}) +
                           ts::slice(u, {1, 0}, {n - 1, m - 2}) + ts::slice(u, {1, 2}, {n - 1, m})) *
                          0.25f;
    return u.at({I, I}).set(avg * 0.9f + ts::slice(u, {1, 1}, {n - 1, m - 1}) * 0.1f);
  };
  auto looped = [relax](const ts::Array& u0) {
    return ts::fori_loop(0, 4, [relax](const ts::Array&, const ts::Array& u) { return relax(u); }, u0);
  };
  auto loss = [relax](const ts::Array& u) { return ts::sum(relax(relax(u)) * u); };
  auto g = [loss](const ts::Array& u) { return ts::grad(loss)(u); };
  const ts::JitOptions both{.in_shardings = {ts::NamedSharding(grid(), ts::P("x", "y"))}};
  for (const ts::Shape& shape : {ts::Shape{18, 11}, ts::Shape{1026, 260}}) {
    const ts::Array u = wavy(shape);
    const std::string text = check(looped, split_rows(4), Moves::kHalo, u);
    EXPECT_EQ(text.find("# each device runs") != std::string::npos, shape[0] > 1000) << text;
    check(g, split_rows(4, false), Moves::kHalo, u);
    check(looped, both, Moves::kHalo, u);
  }
}

// A rotation whose reads would move as much as a gather lowers its slices on their own.
TEST(Halo, HalfRotationOnTwoDevices) {
  check([](const ts::Array& v) { return ts::roll(v, 8, 0); }, split_rows(2), Moves::kAny, wavy({16, 3}));
}

// A fallback says why: a window whose start is not a constant gathers its dimension.
TEST(Halo, NonConstantStartGathersWithAnInfoLine) {
  auto fn = [](const ts::Array& x, const ts::Array& i) {
    return ts::dynamic_slice(x, {i, ts::Array(int32_t(0))}, {4, 3});
  };
  ts::JitOptions o{.in_shardings = {rows(8), std::nullopt}};
  const auto level = ts::detail::log_level();
  ts::detail::set_log_level(ts::detail::LogLevel::kInfo);
  ::testing::internal::CaptureStderr();
  auto f = ts::jit(fn, o);
  const ts::Array x = wavy({16, 3});
  const ts::Array got = f(x, ts::Array(int32_t(5)));
  const std::string err = ::testing::internal::GetCapturedStderr();
  ts::detail::set_log_level(level);
  expect_close(got, fn(x, ts::Array(int32_t(5))));
  EXPECT_NE(err.find("dynamic_slice along dimension 0 split over x: its start is not a constant; gathering"),
            std::string::npos)
      << err;
}
