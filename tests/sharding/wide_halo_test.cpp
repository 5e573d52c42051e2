// Wide halos (src/sharding/wide_halo.cpp): a program whose windows read along one split
// dimension exchanges all its halos at once (one collective_permute per direction, every
// input's rows in one message) and each device computes on its piece extended by the total
// reach, recomputing the rows near its edges; a fori_loop's stencil body runs several steps
// per exchange (temporal blocking). The values equal the one-device ones bit for bit (the
// same arithmetic on the same rows), and the lowered text shows the fewer, wider exchanges.
#include <gtest/gtest.h>

#include <cmath>

#include "sharding/sharding_test_util.h"
#include "tessel/tessel.h"

namespace ts = tessel;
using sharding_test::count;
using sharding_test::range_f32;

namespace {

ts::NamedSharding rows(int64_t k) { return ts::NamedSharding(ts::make_mesh({k}, {"x"}), ts::P("x", ts::none)); }
ts::Array wavy(const ts::Shape& shape) { return ts::sin(range_f32(shape, 0.7f, 0.3f)) * 3.0f; }

void expect_equal(const ts::Array& got, const ts::Array& want) {
  ASSERT_EQ(got.shape(), want.shape());
  const auto g = ts::device_put(got, want.device()).to_vector<float>();
  const auto w = want.to_vector<float>();
  for (size_t i = 0; i < g.size(); ++i) ASSERT_EQ(g[i], w[i]) << "at flat index " << i;
}

/// jit(fn) split by rows over k devices: its per-device program's text, after checking
/// that its values equal fn's on one device and that it gathers nothing.
template <class F>
std::string check(F fn, int64_t k, const ts::Array& x) {
  auto f = ts::jit(fn, {.in_shardings = {rows(k)}, .out_shardings = {rows(k)}});
  const std::string text = f.lower(x).compile().as_text();
  EXPECT_EQ(count(text, "= all_gather["), 0) << text;
  expect_equal(f(x), ts::jit(fn)(x));
  return text;
}

ts::Array stencil(const ts::Array& u) { return u * 0.5f + ts::roll(u, -1, 0) * 0.25f + ts::roll(u, 1, 1) * 0.25f; }

}  // namespace

// The stencil in a 100-step fori_loop over 2 devices: 2 steps per iteration
// (kMaxBlockedSteps, dividing 100), after one exchange of 2 rows from the ring neighbour;
// every device runs the same program (the stencil is periodic).
TEST(WideHalo, PeriodicStencilRunsTwoStepsPerExchange) {
  auto fn = [](const ts::Array& u0) {
    return ts::fori_loop(0, 100, [](const ts::Array&, const ts::Array& u) { return stencil(u); }, u0);
  };
  const std::string text = check(fn, 2, wavy({64, 32}));
  EXPECT_EQ(count(text, "= collective_permute["), 1) << text;
  EXPECT_NE(text.find("length=50"), std::string::npos) << text;
  EXPECT_NE(text.find("f32[2,32] = slice"), std::string::npos) << text;  // the 2 rows sent
  EXPECT_EQ(text.find("# each device runs this program lowered"), std::string::npos) << text;
}

// Where the steps' total reach passes half the neighbour's piece (pieces of 1 row over 8
// devices) the body is lowered equation by equation, one step per iteration; an odd length
// runs one step per iteration with one exchange per direction (pieces of 4 rows).
TEST(WideHalo, StepsThatReachPastTheNeighbourRunOnePerExchange) {
  auto loop = [](int steps) {
    return [steps](const ts::Array& u0) {
      return ts::fori_loop(0, steps, [](const ts::Array&, const ts::Array& u) {
        return u * 0.5f + (ts::roll(u, 1, 0) + ts::roll(u, -1, 0)) * 0.25f;
      }, u0);
    };
  };
  std::string text = check(loop(6), 8, wavy({8, 3}));
  EXPECT_EQ(count(text, "= collective_permute["), 2) << text;
  EXPECT_NE(text.find("length=6"), std::string::npos) << text;
  text = check(loop(5), 4, wavy({16, 3}));
  EXPECT_EQ(count(text, "= collective_permute["), 2) << text;
  EXPECT_NE(text.find("length=5"), std::string::npos) << text;
}

// A chain of windows with edges (pads, interior updates, the last row set): each step of
// the chain reads the previous one's halo. Lowered per device (pieces of 2^16 elements or
// more), it exchanges once per direction instead of once per window, and equals one device,
// on 2 and 4 devices.
TEST(WideHalo, ChainedWindowsWithEdgesExchangeOncePerDirection) {
  auto fn = sharding_test::chained_windows_with_edges;
  for (int64_t k : {2, 4}) {
    const std::string text = check(fn, k, wavy({256 * k, 256}));
    EXPECT_NE(text.find("# each device runs this program lowered"), std::string::npos) << text;
    EXPECT_LE(count(text, "= collective_permute["), 2) << text;
    EXPECT_GE(count(text, "= collective_permute["), 1) << text;
  }
}

// A non-periodic diffusion step (zero padding at the global edges) in a loop, lowered per
// device: 2 steps per iteration after one exchange per direction.
TEST(WideHalo, BoundedDiffusionBlocksStepsPerDevice) {
  auto fn = [](const ts::Array& u0) {
    return ts::fori_loop(0, 8, [](const ts::Array&, const ts::Array& u) {
      const int64_t n = u.shape()[0];
      const ts::Array p = ts::pad(u, {{1, 1}, {0, 0}});
      return u * 0.5f + (ts::slice_in_dim(p, 0, n) + ts::slice_in_dim(p, 2, n + 2)) * 0.25f;
    }, u0);
  };
  const std::string text = check(fn, 2, wavy({512, 256}));
  EXPECT_EQ(count(text, "= collective_permute["), 2) << text;
  EXPECT_NE(text.find("length=4"), std::string::npos) << text;
}

// Programs that do not fit (a reduction along the split dimension) are lowered equation by
// equation as before: the same values.
TEST(WideHalo, AReductionAlongTheSplitDimensionFallsBack) {
  auto fn = [](const ts::Array& u) { return stencil(u) - ts::mean(stencil(u), {0}, true); };
  auto f = ts::jit(fn, {.in_shardings = {rows(4)}});
  const ts::Array x = wavy({16, 8});
  const auto got = ts::device_put(f(x), x.device()).to_vector<float>(), want = fn(x).to_vector<float>();
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5f);
}

// Under grad (the loop's transpose scans in reverse, lowered equation by equation) and vmap
// (the carries gain a batch dimension in front of the split rows: the blocked loop splits
// dimension 1), the values stay the one-device ones.
TEST(WideHalo, BlockedLoopsUnderGradAndVmap) {
  auto loop = [](const ts::Array& u0) {
    return ts::fori_loop(0, 4, [](const ts::Array&, const ts::Array& u) { return stencil(u); }, u0);
  };
  auto loss = [loop](const ts::Array& u) { return ts::sum(ts::square(loop(u))); };
  const ts::Array x = wavy({64, 16});
  auto g = ts::jit([loss](const ts::Array& u) { return ts::grad(loss)(u); },
                   {.in_shardings = {rows(2)}, .out_shardings = {rows(2)}});
  const auto got = ts::device_put(g(x), x.device()).to_vector<float>();
  const auto want = ts::grad(loss)(x).to_vector<float>();
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-4f * (1 + std::abs(want[i]))) << i;

  const ts::Array batch = wavy({3, 64, 16});
  const ts::NamedSharding split(ts::make_mesh({2}, {"x"}), ts::P(ts::none, "x", ts::none));
  auto v = ts::jit(ts::vmap(loop), {.in_shardings = {split}, .out_shardings = {split}});
  const std::string text = v.lower(batch).compile().as_text();
  EXPECT_NE(text.find("length=2"), std::string::npos) << text;
  expect_equal(v(batch), ts::vmap(loop)(batch));
}

// Sizes the pieces do not divide (1001 rows: pieces of 501 or 251 rows, the last one padded),
// large enough to be lowered per device: a two-sided stencil, a chain of windows with edges,
// a stencil with edge padding two rows wide (repeated rows read through by their
// concatenate) and a stencil loop exchange once per direction per program (on a ring of
// two, both directions are one message) instead of once per window, gather nothing, and
// equal one device bit for bit. The last device's neighbour below sends its last real rows.
TEST(WideHalo, SizesThatDoNotDivideExchangeOncePerProgram) {
  auto two_sided = [](const ts::Array& u) {
    const ts::Array s = u * 0.5f + (ts::roll(u, 1, 0) + ts::roll(u, -1, 0)) * 0.25f;
    return s * 0.5f + (ts::roll(s, 2, 0) + ts::roll(s, -1, 0)) * 0.25f;  // reads the halo of a halo
  };
  auto loop = [](const ts::Array& u0) {
    return ts::fori_loop(0, 4, [](const ts::Array&, const ts::Array& u) {
      return u * 0.5f + (ts::roll(u, 1, 0) + ts::roll(u, -1, 0)) * 0.25f;
    }, u0);
  };
  auto edges = [](const ts::Array& u) {
    const int64_t n = u.shape()[0];
    const ts::Array p = ts::pad(u, {{2, 1}, {0, 0}}, "edge");
    return u * 0.5f + (ts::slice_in_dim(p, 0, n) + ts::slice_in_dim(p, 3, n + 3)) * 0.25f;
  };
  const ts::Array x = wavy({1001, 512});
  for (int64_t k : {2, 4}) {
    SCOPED_TRACE(std::to_string(k) + " devices");
    const int64_t per_direction = k == 2 ? 1 : 2;
    std::string text = check(two_sided, k, x);
    EXPECT_NE(text.find("# each device runs this program lowered"), std::string::npos) << text;
    EXPECT_EQ(count(text, "= collective_permute["), per_direction) << text;
    text = check(sharding_test::chained_windows_with_edges, k, x);
    EXPECT_GE(count(text, "= collective_permute["), 1) << text;
    EXPECT_LE(count(text, "= collective_permute["), 2) << text;
    text = check(edges, k, x);  // with edges, each direction has its own pairs even on a ring of two
    EXPECT_EQ(count(text, "= collective_permute["), 2) << text;
    text = check(loop, k, x);
    EXPECT_EQ(count(text, "= collective_permute["), per_direction) << text;
    EXPECT_NE(text.find("length=2"), std::string::npos) << text;  // two steps per exchange
  }
}
