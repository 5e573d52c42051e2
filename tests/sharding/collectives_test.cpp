// Collectives: the in-process hub driven directly by threads (every operation, several
// dtypes, aborts that wake waiting members), the collective kernels under a per-thread
// SpmdContext (non-leading dimensions), and shard_map with the public collectives on 8
// virtual devices (TESSEL_CPU_DEVICES=8): values, transformations and errors.
#include <gtest/gtest.h>

#include <chrono>
#include <complex>
#include <functional>
#include <future>
#include <numeric>
#include <thread>
#include <vector>

#include "distributed/collectives.h"
#include "ir/trace.h"
#include "ops/collectives.h"
#include "runtime/spmd_context.h"
#include "sharding/sharding_test_util.h"
#include "tessel/tessel.h"
#include "transforms/check_transforms.h"

namespace ts = tessel;
using sharding_test::range_f32;
namespace ir = tessel::ir;
namespace dist = tessel::distributed;

namespace {

using transform_testing::expect_close;
using transform_testing::uniform;

/// Runs fn(rank) on n threads at once and waits (failing instead of hanging past 30 s).
void run_threads(int n, const std::function<void(int)>& fn) {
  std::vector<std::future<void>> fs;
  for (int r = 0; r < n; ++r) fs.push_back(std::async(std::launch::async, fn, r));
  for (auto& f : fs) ASSERT_EQ(f.wait_for(std::chrono::seconds(30)), std::future_status::ready) << "a member hangs";
  for (auto& f : fs) f.get();
}

// ---- the hub, directly ----

template <class T> struct HubDtypes : ::testing::Test {};
using HubTypes = ::testing::Types<float, double, int32_t, int8_t, uint64_t, ts::float16_t, ts::bfloat16_t,
                                  ts::complex64_t>;
TYPED_TEST_SUITE(HubDtypes, HubTypes);

template <class T> T value(int v) {
  if constexpr (std::is_same_v<T, ts::complex64_t>) return T(float(v), float(-v));
  else return T(float(v));
}
template <class T> double real_of(T v) {
  if constexpr (std::is_same_v<T, ts::complex64_t>) return v.real();
  else return double(float(v));
}

TYPED_TEST(HubDtypes, AllReduceSumsEveryElementForEveryMember) {
  using T = TypeParam;
  constexpr int n = 4;
  const size_t count = 1000;  // not a multiple of the group size: uneven chunks
  auto hub = dist::make_in_process_hub(n);
  std::vector<std::vector<T>> in(n, std::vector<T>(count)), out(n, std::vector<T>(count));
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < count; ++i) in[size_t(r)][i] = value<T>(int(i % 7) + r);
  run_threads(n, [&](int r) {
    hub->group({0, 1, 2, 3}).all_reduce(r, in[size_t(r)].data(), out[size_t(r)].data(), count,
                                         ts::dtype_of<T>(), ir::Combine::kSum);
  });
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < count; ++i)
      ASSERT_EQ(real_of(out[size_t(r)][i]), double(4 * int(i % 7) + 6)) << "member " << r << " element " << i;
}

TYPED_TEST(HubDtypes, AllReduceInPlaceMaxAndMin) {
  using T = TypeParam;
  if constexpr (!std::is_same_v<T, ts::complex64_t>) {
    constexpr int n = 3;
    auto hub = dist::make_in_process_hub(n);
    std::vector<std::vector<T>> buf(n), buf2(n);
    for (int r = 0; r < n; ++r)
      for (int i = 0; i < 10; ++i) buf[size_t(r)].push_back(value<T>((i + r) % 3 + i));
    buf2 = buf;
    run_threads(n, [&](int r) {
      auto& g = hub->group({0, 1, 2});
      g.all_reduce(r, buf[size_t(r)].data(), buf[size_t(r)].data(), 10, ts::dtype_of<T>(), ir::Combine::kMax);
      g.all_reduce(r, buf2[size_t(r)].data(), buf2[size_t(r)].data(), 10, ts::dtype_of<T>(), ir::Combine::kMin);
    });
    for (int r = 0; r < n; ++r)
      for (int i = 0; i < 10; ++i) {
        EXPECT_EQ(real_of(buf[size_t(r)][size_t(i)]), double(i + 2));
        EXPECT_EQ(real_of(buf2[size_t(r)][size_t(i)]), double(i));
      }
  }
}

TYPED_TEST(HubDtypes, GatherAllToAllReduceScatterPermute) {
  using T = TypeParam;
  constexpr int n = 4;
  auto hub = dist::make_in_process_hub(6);  // members 1, 3, 4, 5 of six participants
  const std::vector<int> members{1, 3, 4, 5};
  std::vector<std::vector<T>> gathered(n, std::vector<T>(2 * n)), a2a(n, std::vector<T>(n)), rs(n, std::vector<T>(2)),
      perm(n, std::vector<T>(2, value<T>(9)));
  run_threads(n, [&](int r) {
    auto& g = hub->group(members);
    EXPECT_EQ(g.size(), n);
    std::vector<T> mine{value<T>(10 * r), value<T>(10 * r + 1)};
    g.all_gather(r, mine.data(), gathered[size_t(r)].data(), sizeof(T) * 2);
    std::vector<T> blocks;  // block j = 10*r + j
    for (int j = 0; j < n; ++j) blocks.push_back(value<T>(10 * r + j));
    g.all_to_all(r, blocks.data(), a2a[size_t(r)].data(), sizeof(T));
    std::vector<T> parts;  // 2 elements per member block: r + k
    for (int k = 0; k < 2 * n; ++k) parts.push_back(value<T>(r + k));
    g.reduce_scatter(r, parts.data(), rs[size_t(r)].data(), 2, ts::dtype_of<T>(), ir::Combine::kSum);
    // A shift by one except that member 0 receives nothing (out left untouched).
    g.permute(r, mine.data(), perm[size_t(r)].data(), sizeof(T) * 2, r == 0 ? -1 : r - 1, r == n - 1 ? -1 : r + 1);
  });
  for (int r = 0; r < n; ++r) {
    for (int j = 0; j < n; ++j) {
      EXPECT_EQ(real_of(gathered[size_t(r)][size_t(2 * j)]), 10.0 * j);
      EXPECT_EQ(real_of(gathered[size_t(r)][size_t(2 * j + 1)]), 10.0 * j + 1);
      EXPECT_EQ(real_of(a2a[size_t(r)][size_t(j)]), 10.0 * j + r);
    }
    for (int k = 0; k < 2; ++k) EXPECT_EQ(real_of(rs[size_t(r)][size_t(k)]), double(6 + 4 * (2 * r + k)));
    EXPECT_EQ(real_of(perm[size_t(r)][0]), r == 0 ? 9.0 : 10.0 * (r - 1));
  }
}

/// A group that forwards only the contiguous calls, so the interface's default (packing)
/// strided calls run: what a backend without direct access to peers' memory gets.
class PackingGroup final : public dist::CollectiveGroup {
 public:
  explicit PackingGroup(dist::CollectiveGroup& g) : g_(g) {}
  int size() const override { return g_.size(); }
  void all_reduce(int r, const void* in, void* out, size_t n, ts::DType d, ir::Combine op) override {
    g_.all_reduce(r, in, out, n, d, op);
  }
  void all_gather(int r, const void* in, void* out, size_t b) override { g_.all_gather(r, in, out, b); }
  void all_to_all(int r, const void* in, void* out, size_t b) override { g_.all_to_all(r, in, out, b); }
  void reduce_scatter(int r, const void* in, void* out, size_t n, ts::DType d, ir::Combine op) override {
    g_.reduce_scatter(r, in, out, n, d, op);
  }
  void permute(int r, const void* in, void* out, size_t b, int s, int d) override { g_.permute(r, in, out, b, s, d); }

 private:
  dist::CollectiveGroup& g_;
};

TEST(InProcessHub, StridedCallsDirectAndPacked) {
  constexpr int n = 4;
  for (bool packed : {false, true}) {
    auto hub = dist::make_in_process_hub(n);
    // Member r's operand: [3 rows, n blocks, 2] floats, 1000 r + 10 row + block, with the
    // last element of each pair + 0.5.
    auto operand = [](int r) {
      std::vector<float> v;
      for (int row = 0; row < 3; ++row)
        for (int b = 0; b < n; ++b)
          for (int k = 0; k < 2; ++k) v.push_back(float(1000 * r + 10 * row + b) + 0.5f * float(k));
      return v;
    };
    std::vector<std::vector<float>> gathered(n), a2a(n), rs(n);
    run_threads(n, [&](int r) {
      dist::CollectiveGroup& base = hub->group({0, 1, 2, 3});
      PackingGroup wrapper(base);
      dist::CollectiveGroup& g = packed ? static_cast<dist::CollectiveGroup&>(wrapper) : base;
      std::vector<float> in = operand(r);
      gathered[size_t(r)].resize(in.size() * n);
      g.all_gather_rows(r, in.data(), gathered[size_t(r)].data(), in.size() * 4, 3);
      // Blocks of 6 floats: 3 rows of 2 in, 2 rows of 3 out.
      a2a[size_t(r)].resize(in.size());
      g.all_to_all_rows(r, in.data(), a2a[size_t(r)].data(), 6 * 4, 3, 2);
      rs[size_t(r)].resize(6);
      g.reduce_scatter_rows(r, in.data(), rs[size_t(r)].data(), 6, ts::f32, ir::Combine::kSum, 3);
    });
    for (int r = 0; r < n; ++r) {
      // gathered: [3 rows, n members, 24 / 3 = 8 floats of member j's row].
      for (int row = 0; row < 3; ++row)
        for (int j = 0; j < n; ++j)
          for (int e = 0; e < 8; ++e)
            ASSERT_EQ(gathered[size_t(r)][size_t((row * n + j) * 8 + e)], operand(j)[size_t(row * 8 + e)]) << packed;
      // a2a: out is [2 rows, n, 3]; the block from member j is its in[:, r, :] (6 floats in
      // row order), laid out as 2 pieces of 3.
      for (int j = 0; j < n; ++j) {
        std::vector<float> block;
        for (int row = 0; row < 3; ++row)
          for (int k = 0; k < 2; ++k) block.push_back(operand(j)[size_t((row * n + r) * 2 + k)]);
        for (int orow = 0; orow < 2; ++orow)
          for (int k = 0; k < 3; ++k)
            ASSERT_EQ(a2a[size_t(r)][size_t((orow * n + j) * 3 + k)], block[size_t(orow * 3 + k)]) << packed;
      }
      // reduce_scatter: [3 rows, 2] sums of in[:, r, :] over members.
      for (int row = 0; row < 3; ++row)
        for (int k = 0; k < 2; ++k) {
          float want = 0;
          for (int j = 0; j < n; ++j) want += operand(j)[size_t((row * n + r) * 2 + k)];
          ASSERT_EQ(rs[size_t(r)][size_t(row * 2 + k)], want) << packed;
        }
    }
  }
}

TEST(InProcessHub, GroupLookupIsSharedAndRepeatedCollectivesStayInStep) {
  constexpr int n = 8;
  auto hub = dist::make_in_process_hub(n);
  EXPECT_EQ(&hub->group({0, 2}), &hub->group({0, 2}));
  EXPECT_NE(&hub->group({0, 2}), &hub->group({2, 0}));
  std::vector<double> result(n);
  run_threads(n, [&](int r) {
    // Concurrent lookups of the same groups, then many back-to-back collectives on two
    // overlapping groups (rows of a 2x4 mesh and the whole mesh).
    std::vector<int> row;
    for (int k = 0; k < 4; ++k) row.push_back(r / 4 * 4 + k);
    std::vector<int> all(n);
    std::iota(all.begin(), all.end(), 0);
    double x = r;
    for (int it = 0; it < 300; ++it) {
      double y;
      hub->group(row).all_reduce(r % 4, &x, &y, 1, ts::f64, ir::Combine::kMax);
      hub->group(all).all_reduce(r, &y, &x, 1, ts::f64, ir::Combine::kMin);
    }
    result[size_t(r)] = x;
  });
  for (double v : result) EXPECT_EQ(v, 3.0);
}

TEST(InProcessHub, AbortWakesWaitingMembersWithTheFailure) {
  constexpr int n = 4;
  auto hub = dist::make_in_process_hub(n);
  std::vector<std::string> errors(n);
  run_threads(n, [&](int r) {
    if (r == 2) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let the others block
      hub->abort(2, std::make_exception_ptr(ts::ValueError("host callback failed: boom")));
      return;
    }
    float x = 1, y = 0;
    try {
      hub->group({0, 1, 2, 3}).all_reduce(r, &x, &y, 1, ts::f32, ir::Combine::kSum);
    } catch (const ts::Error& e) {
      errors[size_t(r)] = e.what();
    }
  });
  for (int r : {0, 1, 3}) {
    EXPECT_NE(errors[size_t(r)].find("position 2"), std::string::npos) << errors[size_t(r)];
    EXPECT_NE(errors[size_t(r)].find("boom"), std::string::npos) << errors[size_t(r)];
  }
  // Later collectives fail at once.
  float x = 1, y;
  EXPECT_THROW(hub->group({0, 1}).all_gather(0, &x, &y, 4), ts::Error);
}

// ---- kernels under a per-thread SpmdContext ----

/// The equation `f` makes from one operand of type `in`, traced for `mesh`.
ir::Equation equation_of(const ts::Mesh& mesh, const std::function<ts::Array(const ts::Array&)>& f, const ts::Aval& in) {
  ts::detail::ScopedTraceMesh scope(&mesh);
  std::vector<ts::Aval> avals{in};
  ir::Program p = ts::detail::trace_to_program(
      [&](std::span<const ts::Array> xs) { return std::vector<ts::Array>{f(xs[0])}; }, avals);
  EXPECT_EQ(p.eqns.size(), 1u);
  return p.eqns.back();
}

/// Runs the equation's kernel on every device of `mesh` at once: device p's operand is
/// inputs[p]; returns the outputs.
template <class T>
std::vector<std::vector<T>> run_kernel(const ts::Mesh& mesh, const ir::Equation& e, const std::vector<std::vector<T>>& inputs) {
  const int n = int(mesh.size());
  auto hub = dist::make_in_process_hub(n);
  std::vector<ts::Aval> in_avals, out_avals{e.outputs[0]->aval};
  for (auto& a : e.inputs) in_avals.push_back(a.aval());
  std::vector<std::vector<T>> outs(size_t(n), std::vector<T>(size_t(out_avals[0].size())));
  run_threads(n, [&](int pos) {
    ts::detail::SpmdContext ctx{mesh, pos, hub.get()};
    ts::detail::ScopedSpmdContext scope(&ctx);
    std::vector<const void*> ins;
    if (!in_avals.empty()) ins.push_back(inputs[size_t(pos)].data());
    std::vector<void*> o{outs[size_t(pos)].data()};
    e.prim->cpu_kernel(ir::KernelCall{in_avals, ins, out_avals, o, e.params, nullptr});
  });
  return outs;
}

TEST(CollectiveKernels, NonLeadingDimensionsOn2x4Mesh) {
  ts::Mesh mesh = ts::make_mesh({2, 4}, {"x", "y"});
  // Device p holds a [2, 4] block with values 100 p + 10 i + j.
  std::vector<std::vector<float>> in(8);
  for (int p = 0; p < 8; ++p)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 4; ++j) in[size_t(p)].push_back(float(100 * p + 10 * i + j));
  const ts::Aval av({2, 4}, ts::f32);
  auto at = [&](int p, int i, int j) { return in[size_t(p)][size_t(4 * i + j)]; };

  // all_gather over y along dimension 1: [2, 16], block k from the k-th device of the row.
  auto g = run_kernel(mesh, equation_of(mesh, [](auto& x) { return ts::detail::all_gather(x, {"y"}, 1, true); }, av), in);
  for (int p = 0; p < 8; ++p)
    for (int i = 0; i < 2; ++i)
      for (int c = 0; c < 16; ++c) ASSERT_EQ(g[size_t(p)][size_t(16 * i + c)], at(p / 4 * 4 + c / 4, i, c % 4));

  // all_to_all over y, split dimension 1 (4 -> 1), concatenate along 0 (2 -> 8).
  auto a = run_kernel(mesh, equation_of(mesh, [](auto& x) { return ts::detail::all_to_all(x, {"y"}, 1, 0); }, av), in);
  for (int p = 0; p < 8; ++p)
    for (int r = 0; r < 8; ++r)  // row r of the result: row r % 2 of member r / 2's column (p % 4)
      ASSERT_EQ(a[size_t(p)][size_t(r)], at(p / 4 * 4 + r / 2, r % 2, p % 4));

  // all_to_all over x, split 0, concatenate 1: a [1, 8] result.
  auto b = run_kernel(mesh, equation_of(mesh, [](auto& x) { return ts::detail::all_to_all(x, {"x"}, 0, 1); }, av), in);
  for (int p = 0; p < 8; ++p)
    for (int c = 0; c < 8; ++c) ASSERT_EQ(b[size_t(p)][size_t(c)], at(c / 4 * 4 + p % 4, p / 4, c % 4));

  // reduce_scatter over y along dimension 1: [2, 1], member k keeps column k summed.
  auto s = run_kernel(mesh, equation_of(mesh, [](auto& x) { return ts::detail::reduce_scatter(x, {"y"}, 1, ir::Combine::kSum); }, av), in);
  for (int p = 0; p < 8; ++p)
    for (int i = 0; i < 2; ++i) {
      float want = 0;
      for (int k = 0; k < 4; ++k) want += at(p / 4 * 4 + k, i, p % 4);
      ASSERT_EQ(s[size_t(p)][size_t(i)], want);
    }

  // collective_permute over (x, y) (rank = position): p -> p + 1 except 7; 0 gets zeros.
  std::vector<std::pair<int64_t, int64_t>> pairs;
  for (int p = 0; p < 7; ++p) pairs.emplace_back(p, p + 1);
  auto c = run_kernel(mesh, equation_of(mesh, [&](auto& x) { return ts::detail::collective_permute(x, {"x", "y"}, pairs); }, av), in);
  for (int p = 0; p < 8; ++p)
    for (int k = 0; k < 8; ++k) ASSERT_EQ(c[size_t(p)][size_t(k)], p == 0 ? 0.0f : in[size_t(p - 1)][size_t(k)]);

  // axis_index over (y, x): row-major with y major.
  auto ix = run_kernel<int32_t>(
      mesh, equation_of(mesh, [](auto&) { return ts::detail::axis_index({"y", "x"}); }, av), std::vector<std::vector<int32_t>>(8));
  for (int p = 0; p < 8; ++p) EXPECT_EQ(ix[size_t(p)][0], (p % 4) * 2 + p / 4);

  // A scalar all_reduce (max) over x.
  auto m = run_kernel(mesh, equation_of(mesh, [](auto& x) { return ts::detail::all_reduce(x, {"x"}, ir::Combine::kMax); },
                                        ts::Aval({}, ts::f32)),
                      std::vector<std::vector<float>>{{3}, {1}, {4}, {1}, {5}, {9}, {2}, {6}});
  for (int p = 0; p < 8; ++p) EXPECT_EQ(m[size_t(p)][0], std::max(std::vector<float>{3, 1, 4, 1, 5, 9, 2, 6}[size_t(p % 4)],
                                                                   std::vector<float>{3, 1, 4, 1, 5, 9, 2, 6}[size_t(p % 4 + 4)]));
}

TEST(CollectiveKernels, EquationsPrintTheirParametersAndSurviveSimplification) {
  ts::Mesh mesh = ts::make_mesh({2, 4}, {"x", "y"});
  ir::Equation e = equation_of(mesh, [](auto& x) { return ts::detail::all_gather(x, {"y"}, 1, true); }, ts::Aval({2, 4}, ts::f32));
  EXPECT_EQ(e.prim->name, "all_gather");
  EXPECT_EQ(e.params.to_string(), "axes=(y), dim=1, group_size=4, tiled=True");
  EXPECT_NE(e.effects() & ir::kSideEffect, 0u);
  EXPECT_EQ(ts::detail::collective_axes(e.params), (std::vector<std::string>{"y"}));
}

TEST(CollectiveKernels, OutsideShardMapTheyExplainWhere) {
  try {
    ts::psum(ts::ones({3}), "x");
    FAIL() << "psum outside shard_map must throw";
  } catch (const ts::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("psum"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("shard_map"), std::string::npos) << e.what();
  }
  ts::Mesh mesh = ts::make_mesh({8}, {"x"});
  ts::detail::ScopedTraceMesh scope(&mesh);
  EXPECT_THROW(ts::detail::all_reduce(ts::ones({3}), {"z"}, ir::Combine::kSum), ts::ValueError);
  EXPECT_THROW(ts::detail::all_reduce(ts::ones({3}), {"x", "x"}, ir::Combine::kSum), ts::ValueError);
  EXPECT_THROW(ts::detail::collective_permute(ts::ones({3}), {"x"}, {{0, 1}, {2, 1}}), ts::ValueError);
  EXPECT_THROW(ts::detail::reduce_scatter(ts::ones({3}), {"x"}, 0, ir::Combine::kSum), ts::ShapeError);
}

// ---- shard_map ----

ts::Mesh mesh8() { return ts::make_mesh({8}, {"x"}); }
ts::Mesh mesh2x4() { return ts::make_mesh({2, 4}, {"x", "y"}); }
TEST(ShardMap, PsumOfShardedDataIsTheSum) {
  auto f = ts::shard_map([](const ts::Array& x) { return ts::psum(ts::sum(x), "x"); }, mesh8(), {ts::P("x")}, {ts::P()});
  ts::Array x = ts::arange(64, ts::f32);
  EXPECT_EQ(f(x).item<float>(), 2016.0f);
  // Per-device pieces: psum of [8] pieces is their element-wise sum.
  auto g = ts::shard_map([](const ts::Array& x) { return ts::psum(x, "x"); }, mesh8(), {ts::P("x")}, {ts::P()});
  ts::Array want = ts::sum(ts::reshape(x, {8, 8}), {0});
  expect_close(g(x), want, 0, "psum of pieces");
  // pmean, pmax, pmin.
  auto stats = ts::shard_map(
      [](const ts::Array& x) {
        return std::vector<ts::Array>{ts::pmean(x, "x"), ts::pmax(x, "x"), ts::pmin(x, "x")};
      },
      mesh8(), {ts::P("x")}, {ts::P()});
  auto r = stats(x);
  expect_close(r[0], want / 8.0f, 1e-6, "pmean");
  expect_close(r[1], ts::arange(56, 64, 1, ts::f32), 0, "pmax");
  expect_close(r[2], ts::arange(0, 8, 1, ts::f32), 0, "pmin");
  // Under jit the same, and the per-device program names the collective.
  auto jf = ts::jit(f);
  EXPECT_EQ(jf(x).item<float>(), 2016.0f);
  EXPECT_NE(jf.lower(x).compile().as_text().find("all_reduce[axes=(x), group_size=8, op=sum]"), std::string::npos)
      << jf.lower(x).compile().as_text();
}

TEST(ShardMap, AllGatherTiledAndStacked) {
  ts::Array x = range_f32({16, 2});
  auto tiled = ts::shard_map([](const ts::Array& p) { return ts::all_gather(p, "x", {.axis = 0, .tiled = true}); },
                             mesh8(), {ts::P("x")}, {ts::P()});
  expect_close(tiled(x), x, 0, "tiled all_gather");
  auto stacked = ts::shard_map([](const ts::Array& p) { return ts::all_gather(p, "x"); }, mesh8(), {ts::P("x")}, {ts::P()});
  expect_close(stacked(x), ts::reshape(x, {8, 2, 2}), 0, "stacked all_gather");
  // Along a non-leading dimension.
  ts::Array y = range_f32({3, 16});
  auto cols = ts::shard_map([](const ts::Array& p) { return ts::all_gather(p, "x", {.axis = 1, .tiled = true}); },
                            mesh8(), {ts::P(ts::none, "x")}, {ts::P()});
  expect_close(cols(y), y, 0, "all_gather along dimension 1");
}

TEST(ShardMap, AllToAllMovesTheSplitDimension) {
  ts::Array x = range_f32({8, 16});
  auto f = ts::shard_map([](const ts::Array& p) { return ts::all_to_all(p, "x", 1, 0, {.tiled = true}); }, mesh8(),
                         {ts::P("x", ts::none)}, {ts::P(ts::none, "x")});
  expect_close(f(x), x, 0, "rows to columns");
  // Untiled: the split dimension (of the group's size) is replaced by the devices along
  // concat_axis. Device d holds z[d] ([1, 8, 3]) and gets r[j] = device j's entry d: z[j, d].
  ts::Array z = range_f32({8, 8, 3});
  auto g = ts::shard_map([](const ts::Array& p) { return ts::all_to_all(p, "x", 1, 0); }, mesh8(), {ts::P("x")},
                         {ts::P("x")});
  expect_close(g(z), ts::reshape(ts::swapaxes(z, 0, 1), {64, 1, 3}), 0, "untiled all_to_all");
}

TEST(ShardMap, PpermuteShiftsAndFillsZeros) {
  ts::Array x = ts::arange(1, 9, 1, ts::f32);
  std::vector<std::pair<int64_t, int64_t>> ring, shift;
  for (int i = 0; i < 8; ++i) ring.emplace_back(i, (i + 1) % 8);
  for (int i = 0; i < 7; ++i) shift.emplace_back(i, i + 1);
  auto f = ts::shard_map([&](const ts::Array& p) { return ts::ppermute(p, "x", ring); }, mesh8(), {ts::P("x")}, {ts::P("x")});
  EXPECT_EQ(f(x).to_vector<float>(), (std::vector<float>{8, 1, 2, 3, 4, 5, 6, 7}));
  auto g = ts::shard_map([&](const ts::Array& p) { return ts::ppermute(p, "x", shift); }, mesh8(), {ts::P("x")}, {ts::P("x")});
  EXPECT_EQ(g(x).to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(ShardMap, PsumScatterAndAxisIndex) {
  ts::Array x = range_f32({8, 4});
  auto f = ts::shard_map([](const ts::Array& p) { return ts::psum_scatter(p, "x", {.scatter_dimension = 0, .tiled = true}); },
                         mesh8(), {ts::P()}, {ts::P("x")});
  expect_close(f(x), x * 8.0f, 0, "psum_scatter of replicated data");
  auto untiled = ts::shard_map([](const ts::Array& p) { return ts::psum_scatter(p, "x"); }, mesh8(), {ts::P()}, {ts::P("x")});
  expect_close(untiled(x), ts::reshape(x * 8.0f, {32}), 0, "untiled psum_scatter");
  auto idx = ts::shard_map([](const ts::Array& p) { return ts::reshape(ts::axis_index("x"), {1}) + p; }, mesh8(),
                           {ts::P("x")}, {ts::P("x")});
  EXPECT_EQ(idx(ts::zeros({8}, ts::i32)).to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(ShardMap, TreesStaticArgumentsAndClosures) {
  ts::Array c = ts::full({2}, 10.0f);  // closed over: whole on every device
  auto f = ts::shard_map(
      [&](const std::vector<ts::Array>& xs, int scale) {
        return std::make_pair(ts::psum(xs[0] * float(scale), "x") + c, ts::pmean(xs[1], "x"));
      },
      mesh8(), {ts::P("x"), ts::P()}, {ts::P()});  // both leaves of xs split; `scale` passes through
  auto [a, b] = f(std::vector<ts::Array>{ts::ones({16}), ts::arange(8, ts::i32)}, 3);
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{34, 34}));
  EXPECT_EQ(b.dtype(), ts::f32);  // the mean of integers is a float
  EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{3.5f}));
}

TEST(ShardMap, TwoByFourMesh) {
  ts::Mesh m = mesh2x4();
  auto idx = ts::shard_map(
      [](const ts::Array& p) {
        ts::Array i = ts::reshape(ts::axis_index({"x", "y"}), {1, 1}) + p;
        return std::vector<ts::Array>{i, ts::psum(i, "y"), ts::all_gather(i, "x", {.axis = 0, .tiled = true})};
      },
      m, {ts::P("x", "y")}, {ts::P("x", "y"), ts::P("x"), ts::P(ts::none, "y")});
  auto r = idx(ts::zeros({2, 4}, ts::i32));
  EXPECT_EQ(r[0].to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(r[1].shape(), (ts::Shape{2, 1}));
  EXPECT_EQ(r[1].to_vector<int32_t>(), (std::vector<int32_t>{6, 22}));
  EXPECT_EQ(r[2].to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(ShardMap, GradThroughPsum) {
  // Data parallelism: a replicated weight, sharded data, a psum'd loss.
  ts::Mesh m = mesh8();
  auto loss = ts::shard_map(
      [](const ts::Array& w, const ts::Array& x) { return ts::psum(ts::sum(ts::tanh(x * w)), "x"); }, m,
      {ts::P(), ts::P("x", ts::none)}, {ts::P()});
  ts::Array w = uniform({4}, 1), x = uniform({16, 4}, 2);
  auto reference = [](const ts::Array& w, const ts::Array& x) { return ts::sum(ts::tanh(x * w)); };
  expect_close(loss(w, x), reference(w, x), 1e-12, "loss");
  auto [gw, gx] = ts::grad<0, 1>(loss)(w, x);
  auto [rw, rx] = ts::grad<0, 1>(reference)(w, x);
  expect_close(gw, rw, 1e-12, "grad w");
  expect_close(gx, rx, 1e-12, "grad x");
  // Through the other collectives too: a gathered (replicated) result.
  transform_testing::check_grads(
      [&](const std::vector<ts::Array>& a) {
        auto f = ts::shard_map(
            [](const ts::Array& p) {
              ts::Array g = ts::all_gather(ts::sin(p), "x", {.tiled = true});
              return ts::ppermute(ts::psum_scatter(g * g, "x", {.tiled = true}), "x", {{0, 1}, {1, 0}, {2, 3}});
            },
            m, {ts::P("x")}, {ts::P("x")});
        return f(a[0]);
      },
      {uniform({16}, 3)}, 1e-6);
}

TEST(ShardMap, GradThroughEveryCollective) {
  ts::Mesh m = mesh2x4();
  transform_testing::check_grads(
      [&](const std::vector<ts::Array>& a) {
        auto f = ts::shard_map(
            [](const ts::Array& p, const ts::Array& q) {
              ts::Array s = ts::all_gather(ts::sin(p), "y");                        // [4, 2, 4]
              ts::Array t = ts::all_to_all(s * q, "x", 2, 1, {.tiled = true});      // [4, 4, 2]
              ts::Array u = ts::pmax(t, "y") + ts::pmean(t * t, {"x", "y"});
              return ts::psum_scatter(u, "y", {.scatter_dimension = 0});             // [4, 2]
            },
            m, {ts::P("x", "y"), ts::P()}, {ts::P("x", "y")});
        return f(a[0], a[1]);
      },
      {uniform({4, 16}, 6), uniform({4, 2, 4}, 7)}, 1e-6);
}

// Transposing twice gives the function back, and the transpose is f's adjoint:
// <f(x), y> == <x, f^T(y)> for random x and y.
void expect_transpose_round_trip(const std::function<ts::Array(const ts::Array&)>& f, const ts::Array& x,
                                 const std::string& what) {
  const ts::Array fx = f(x);
  auto ft = ts::linear_transpose(f, x);
  auto ftt = ts::linear_transpose(ft, fx);
  const ts::Array x2 = uniform(x.shape(), 21), y = uniform(fx.shape(), 22);
  expect_close(ftt(x2), f(x2), 1e-12, what + ": transpose of the transpose");
  expect_close(ts::sum(f(x2) * y), ts::sum(x2 * ft(y)), 1e-9, what + ": <f(x), y> = <x, f^T(y)>");
}

TEST(ShardMap, TransposeOfTransposeIsTheOriginalForEveryCollective) {
  using Fn = std::function<ts::Array(const ts::Array&)>;
  auto on8 = [](Fn body, ts::PartitionSpec in, ts::PartitionSpec out) -> Fn {
    return [=](const ts::Array& x) { return ts::shard_map(body, mesh8(), {in}, {out})(x); };
  };
  std::vector<std::pair<int64_t, int64_t>> ring, shift;
  for (int i = 0; i < 8; ++i) ring.emplace_back(i, (i + 3) % 8);
  for (int i = 0; i < 7; ++i) shift.emplace_back(i, i + 1);
  const ts::Array v16 = uniform({16, 3}, 11);
  expect_transpose_round_trip(on8([](const ts::Array& p) { return ts::psum(p * 2.0, "x"); }, ts::P("x"), ts::P()), v16,
                              "psum");
  expect_transpose_round_trip(
      on8([](const ts::Array& p) { return ts::all_gather(p, "x", {.axis = 1, .tiled = true}); }, ts::P("x"), ts::P()),
      v16, "tiled all_gather");
  expect_transpose_round_trip(on8([](const ts::Array& p) { return ts::all_gather(p, "x"); }, ts::P("x"), ts::P()), v16,
                              "stacked all_gather");
  expect_transpose_round_trip(
      on8([](const ts::Array& p) { return ts::psum_scatter(p, "x", {.scatter_dimension = 0, .tiled = true}); },
          ts::P(ts::none, "x"), ts::P("x")),
      uniform({16, 8}, 12), "psum_scatter");
  expect_transpose_round_trip(
      on8([](const ts::Array& p) { return ts::all_to_all(p, "x", 1, 0, {.tiled = true}); }, ts::P("x", ts::none),
          ts::P(ts::none, "x")),
      uniform({8, 16}, 13), "all_to_all");
  expect_transpose_round_trip(on8([&](const ts::Array& p) { return ts::ppermute(p, "x", ring); }, ts::P("x"), ts::P("x")),
                              v16, "ppermute ring");
  expect_transpose_round_trip(on8([&](const ts::Array& p) { return ts::ppermute(p, "x", shift); }, ts::P("x"), ts::P("x")),
                              v16, "ppermute shift (zeros where nothing arrives)");
}

TEST(ShardMap, VmapOfShardMap) {
  auto f = ts::shard_map([](const ts::Array& x) { return ts::psum(x * 2.0, "x"); }, mesh8(), {ts::P("x")}, {ts::P()});
  transform_testing::check_vmap([&](const std::vector<ts::Array>& a) { return f(a[0]); }, {uniform({3, 16}, 4)}, {0});
  transform_testing::check_vmap([&](const std::vector<ts::Array>& a) { return f(a[0]); }, {uniform({16, 3}, 5)}, {1});
  auto g = ts::shard_map(
      [](const ts::Array& p) {
        ts::Array t = ts::all_to_all(p, "y", 1, 0, {.tiled = true});
        return ts::psum_scatter(ts::all_gather(t, "x", {.axis = 1, .tiled = true}), "x", {.scatter_dimension = 1, .tiled = true}) +
               ts::ppermute(t, {"x", "y"}, {{0, 5}, {5, 0}, {3, 4}});
      },
      mesh2x4(), {ts::P("x", "y")}, {ts::P("y", "x")});
  transform_testing::check_vmap([&](const std::vector<ts::Array>& a) { return g(a[0]); }, {uniform({4, 3, 16}, 8)}, {1});
}

TEST(ShardMap, ErrorsNameTheProblem) {
  ts::Mesh m = mesh8();
  auto id = [](const ts::Array& x) { return x; };
  auto expect_error = [](const std::function<void()>& f, const std::string& needle) {
    try {
      f();
      ADD_FAILURE() << "expected an error mentioning '" << needle << "'";
    } catch (const ts::Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error([&] { ts::shard_map(id, m, {ts::P("x")}, {ts::P("x")})(ts::ones({10})); }, "shard_map: dimension 0");
  expect_error([&] { ts::shard_map(id, m, {ts::P("z")}, {ts::P("x")})(ts::ones({8})); }, "unknown mesh axis 'z'");
  expect_error([&] { ts::shard_map(id, m, {ts::P(ts::axes("x", "x"))}, {ts::P()})(ts::ones({8})); }, "twice");
  expect_error([&] { ts::shard_map(id, m, {ts::P("x", ts::none)}, {ts::P()})(ts::ones({8})); }, "rank 1");
  expect_error([&] { ts::shard_map(id, m, {ts::P("x"), ts::P()}, {ts::P()})(ts::ones({8})); }, "in_specs");
  expect_error([&] { ts::shard_map(id, m, {ts::P("x")}, {ts::P("x"), ts::P()})(ts::ones({8})); }, "out_specs");
}

}  // namespace
