// Overlapping halo exchanges with interior rows (compiler/executable.cpp's overlap schedule
// and the process group's permute_start/permute_done): a compiled per-device program posts
// its collective_permute, computes the rows of the next loop nest that read no received
// row, then waits and computes the edge rows. The values equal the one-device ones and the
// schedule without overlap (TESSEL_OVERLAP_EXCHANGE=0) bit for bit; the executable's text
// names the split.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <future>
#include <string>
#include <vector>

#include "distributed/collectives.h"
#include "sharding/sharding_test_util.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace dist = tessel::distributed;
using sharding_test::count;
using sharding_test::range_f32;

namespace {

/// Sets an environment variable for the scope (the executable reads TESSEL_OVERLAP_EXCHANGE
/// when it is built).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* v = std::getenv(name)) old_ = v, had_ = true;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_) setenv(name_, old_.c_str(), 1);
    else unsetenv(name_);
  }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

void run_threads(int n, const std::function<void(int)>& fn) {
  std::vector<std::future<void>> fs;
  for (int r = 0; r < n; ++r) fs.push_back(std::async(std::launch::async, fn, r));
  for (auto& f : fs) ASSERT_EQ(f.wait_for(std::chrono::seconds(30)), std::future_status::ready) << "a member hangs";
  for (auto& f : fs) f.get();
}

/// Forwards only the blocking calls, so the interface's default permute_start/done run
/// (what the MPI backend gets).
class BlockingGroup final : public dist::CollectiveGroup {
 public:
  explicit BlockingGroup(dist::CollectiveGroup& g) : g_(g) {}
  int size() const override { return g_.size(); }
  void all_reduce(int r, const void* in, void* out, size_t n, ts::DType d, ts::ir::Combine op) override {
    g_.all_reduce(r, in, out, n, d, op);
  }
  void all_gather(int r, const void* in, void* out, size_t b) override { g_.all_gather(r, in, out, b); }
  void all_to_all(int r, const void* in, void* out, size_t b) override { g_.all_to_all(r, in, out, b); }
  void reduce_scatter(int r, const void* in, void* out, size_t n, ts::DType d, ts::ir::Combine op) override {
    g_.reduce_scatter(r, in, out, n, d, op);
  }
  void permute(int r, const void* in, void* out, size_t b, int s, int d) override { g_.permute(r, in, out, b, s, d); }

 private:
  dist::CollectiveGroup& g_;
};

ts::NamedSharding rows(int64_t k) { return ts::NamedSharding(ts::make_mesh({k}, {"x"}), ts::P("x", ts::none)); }
ts::Array wavy(const ts::Shape& shape) { return ts::sin(range_f32(shape, 0.7f, 0.3f)) * 3.0f; }

std::vector<float> values(const ts::Array& a) { return ts::device_put(a, ts::devices()[0]).to_vector<float>(); }

void expect_same_bits(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << what << " at flat index " << i;
}

ts::Array stencil(const ts::Array& u) { return u * 0.5f + ts::roll(u, -1, 0) * 0.25f + ts::roll(u, 1, 1) * 0.25f; }

/// jit(fn) split by rows over k devices, with and without overlap: both equal one device
/// bit for bit. Returns the per-device program's text with overlap.
template <class F>
std::string check_overlap(F fn, int64_t k, const ts::Array& x) {
  const std::vector<float> want = values(ts::jit(fn)(x));
  std::string text;
  for (const char* on : {"1", "0"}) {
    ScopedEnv env("TESSEL_OVERLAP_EXCHANGE", on);
    auto f = ts::jit(fn, {.in_shardings = {rows(k)}, .out_shardings = {rows(k)}});
    if (on[0] == '1') text = f.lower(x).compile().as_text();
    expect_same_bits(values(f(x)), want, on[0] == '1' ? "overlapped" : "not overlapped");
  }
  return text;
}

}  // namespace

// ---- the process group's two halves ----

// Every member posts two permutes (a shift up and a shift down, the first member and the
// last receiving nothing from one of them) before it finishes either: nobody waits at a
// start, so this cannot deadlock, and each finish gets its own rows. The same through the
// interface's default halves (a copy at the start, the blocking permute at the finish).
TEST(OverlapGroup, TwoPermutesPostedBeforeEitherFinishes) {
  constexpr int n = 4;
  for (bool blocking : {false, true}) {
    auto hub = dist::make_in_process_hub(n);
    std::vector<std::vector<float>> up(n, std::vector<float>(3, -1.0f)), down = up;
    run_threads(n, [&](int r) {
      dist::CollectiveGroup& base = hub->group({0, 1, 2, 3});
      BlockingGroup wrapper(base);
      dist::CollectiveGroup& g = blocking ? static_cast<dist::CollectiveGroup&>(wrapper) : base;
      std::vector<float> mine{float(10 * r), float(10 * r + 1), float(10 * r + 2)};
      const uint64_t a = g.permute_start(r, mine.data(), sizeof(float) * 3, r == 0 ? -1 : r - 1, r == n - 1 ? -1 : r + 1);
      const uint64_t b = g.permute_start(r, mine.data(), sizeof(float) * 3, r == n - 1 ? -1 : r + 1, r == 0 ? -1 : r - 1);
      mine.assign(3, 99.0f);  // the rows were taken at the start
      g.permute_done(r, a, up[size_t(r)].data());
      g.permute_done(r, b, down[size_t(r)].data());
    });
    for (int r = 0; r < n; ++r)
      for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(up[size_t(r)][size_t(i)], r == 0 ? -1.0f : float(10 * (r - 1) + i)) << blocking << " member " << r;
        EXPECT_EQ(down[size_t(r)][size_t(i)], r == n - 1 ? -1.0f : float(10 * (r + 1) + i)) << blocking << " member " << r;
      }
  }
}

// Row buffers are reused from one permute to the next (a loop exchanges its halo every
// iteration): rounds of growing and shrinking sizes, with a size 0 among them, each get
// exactly their own rows, never a leftover of a larger earlier round.
TEST(OverlapGroup, RepeatedPermutesOfChangingSizesGetTheirOwnRows) {
  auto hub = dist::make_in_process_hub(2);
  const std::vector<size_t> sizes{3, 5, 2, 0, 5, 7, 1};
  std::vector<std::vector<std::vector<float>>> got(2);
  run_threads(2, [&](int r) {
    dist::CollectiveGroup& g = hub->group({0, 1});
    for (size_t round = 0; round < sizes.size(); ++round) {
      std::vector<float> mine(sizes[round]);
      for (size_t i = 0; i < mine.size(); ++i) mine[i] = float(1000 * r + 10 * int(round) + int(i));
      std::vector<float> theirs(sizes[round] + 1, -1.0f);  // one more: nothing is written past the rows
      g.permute_done(r, g.permute_start(r, mine.data(), sizeof(float) * mine.size(), 1 - r, 1 - r), theirs.data());
      got[size_t(r)].push_back(theirs);
    }
  });
  for (int r = 0; r < 2; ++r)
    for (size_t round = 0; round < sizes.size(); ++round) {
      const auto& v = got[size_t(r)][round];
      for (size_t i = 0; i < sizes[round]; ++i)
        EXPECT_EQ(v[i], float(1000 * (1 - r) + 10 * int(round) + int(i))) << "member " << r << " round " << round;
      EXPECT_EQ(v[sizes[round]], -1.0f) << "member " << r << " round " << round;
    }
}

// A member waiting for rows that never come wakes when another member fails.
TEST(OverlapGroup, AbortWakesAMemberWaitingForRows) {
  auto hub = dist::make_in_process_hub(2);
  float mine = 1.0f, got = 0.0f;
  auto waiter = std::async(std::launch::async, [&] {
    dist::CollectiveGroup& g = hub->group({0, 1});
    g.permute_done(0, g.permute_start(0, &mine, sizeof mine, 1, 1), &got);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  hub->abort(1, std::make_exception_ptr(ts::ValueError("kernel failed: boom")));
  ASSERT_EQ(waiter.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  try {
    waiter.get();
    FAIL() << "no error";
  } catch (const ts::Error& e) {
    EXPECT_NE(std::string(e.what()).find("boom"), std::string::npos) << e.what();
  }
}

// ---- partitioned programs ----

// One stencil step with rows split over 2 devices (a straight-line program, the same on
// every device): its loop nest's interior rows run before the wait, the two rows next to
// the received ones after.
TEST(Overlap, StencilStepRunsInteriorRowsBeforeTheWait) {
  const std::string text = check_overlap(stencil, 2, wavy({512, 256}));
  EXPECT_EQ(count(text, "= collective_permute["), 1) << text;
  EXPECT_EQ(count(text, "(collective_permute): posted"), 1) << text;
  EXPECT_NE(text.find("run while the exchange is in flight"), std::string::npos) << text;
  EXPECT_NE(text.find("interior rows [0, 255) of 256"), std::string::npos) << text;
  // Rows of 16 points: the loop nest may vectorize across rows, so its calls start and end
  // at multiples of 64 rows (the split too) and the values stay the unsplit ones.
  const std::string narrow = check_overlap(stencil, 2, wavy({8192, 16}));
  EXPECT_NE(narrow.find("interior rows [0, 4032) of 4096"), std::string::npos) << narrow;
}

// The stencil in a fori_loop (the body, 2 steps per iteration, overlaps its
// exchange in every iteration) on 2 and 4 devices; the loop's text shows the body's split.
TEST(Overlap, StencilLoopEqualsOneDevice) {
  auto fn = [](const ts::Array& u0) {
    return ts::fori_loop(0, 10, [](const ts::Array&, const ts::Array& u) { return stencil(u); }, u0);
  };
  for (int64_t k : {2, 4}) {
    const std::string text = check_overlap(fn, k, wavy({512 * k / 2, 256}));
    // The body's schedule, under the loop's step: its interior rows run while it exchanges.
    const size_t body = text.find("(scan) program: step ");
    ASSERT_NE(body, std::string::npos) << text;
    EXPECT_NE(text.find("run while the exchange is in flight", body), std::string::npos) << text;
  }
}

// A chain of windows with edges, lowered per device (two permutes, one per direction, the
// edge devices receiving from one side only): every device's loop nests run their interior
// before waiting, and the values stay the one-device ones on 2 and 4 devices.
TEST(Overlap, ChainedWindowsWithEdgesSplitTheirLoopNests) {
  auto fn = sharding_test::chained_windows_with_edges;
  for (int64_t k : {2, 4}) {
    const std::string text = check_overlap(fn, k, wavy({256 * k, 256}));
    EXPECT_NE(text.find("run while the exchange is in flight"), std::string::npos) << text;
  }
}

// Off, nothing is posted early.
TEST(Overlap, OffRunsEveryPermuteWhereItIs) {
  ScopedEnv env("TESSEL_OVERLAP_EXCHANGE", "0");
  auto f = ts::jit(stencil, {.in_shardings = {rows(2)}, .out_shardings = {rows(2)}});
  const std::string text = f.lower(wavy({512, 256})).compile().as_text();
  EXPECT_EQ(text.find("posted"), std::string::npos) << text;
  EXPECT_EQ(count(text, "= collective_permute["), 1) << text;
}

#if __has_include("shallow_water.h")
#include "shallow_water.h"

// The demo's step (examples/shallow_water --shard 2) at 512 x 256, lowered per device: its
// streamed chain of loop nests runs the block of rows that reads no received row before the
// wait. Three steps equal one device's bit for bit, with and without overlap.
TEST(Overlap, ShallowWaterChainRunsItsInteriorBlockFirst) {
  namespace sw = shallow_water;
  const sw::ShallowWater model({.nx = 512, .ny = 256, .dtype = ts::f32});
  auto fn = [model](const sw::State& s, bool first) { return model.step(s, first); };
  auto one = ts::jit(fn, {.static_argnums = {1}});
  auto run = [](auto& step, sw::State s) {
    for (int k = 0; k < 3; ++k) s = step(s, k == 0);
    return s;
  };
  const sw::State want = run(one, model.initial_state());
  const ts::NamedSharding split(ts::make_mesh({2}, {"y"}), ts::P("y", ts::none));
  for (const char* on : {"1", "0"}) {
    ScopedEnv env("TESSEL_OVERLAP_EXCHANGE", on);
    auto two = ts::jit(fn, {.static_argnums = {1}, .out_shardings = {split}});
    sw::State s = model.initial_state();
    for (ts::Array* f : {&s.h, &s.u, &s.v, &s.dh, &s.du, &s.dv}) *f = ts::device_put(*f, split);
    const sw::State got = run(two, s);
    expect_same_bits(values(got.h), values(want.h), on);
    expect_same_bits(values(got.u), values(want.u), on);
    expect_same_bits(values(got.v), values(want.v), on);
    if (on[0] == '1') {
      sw::State s2 = s;
      const std::string text = two.lower(s2, false).compile().as_text();
      EXPECT_NE(text.find("(fused_chain): interior rows"), std::string::npos) << text;
      EXPECT_NE(text.find("(collective_permute): posted"), std::string::npos) << text;
    }
  }
}
#endif
