// Meshes that span processes: the MPI collective backend driven directly (every operation,
// members of several processes interleaved), partitioned jit and shard_map over devices of
// several processes against the single-device computation, and reading values that are
// not addressable. Every process passes the same global values (multi-controller).
// CTest runs these with 2 processes of 2 devices each (mpi_mesh_np2_dev2); in the plain
// np2/np4 runs every process has one device.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <future>
#include <thread>
#include <vector>

#include "distributed/collectives.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace dist = tessel::distributed;
namespace ir = tessel::ir;

namespace {

#define REQUIRE_DEVICES(n)                                                                     \
  if (ts::device_count() < (n)) GTEST_SKIP() << "needs " << (n) << " devices in the job, has " \
                                             << ts::device_count()

/// Runs fn(i) on n threads at once and waits (failing instead of hanging past 60 s).
void run_threads(int n, const std::function<void(int)>& fn) {
  std::vector<std::future<void>> fs;
  for (int i = 0; i < n; ++i) fs.push_back(std::async(std::launch::async, fn, i));
  for (auto& f : fs) ASSERT_EQ(f.wait_for(std::chrono::seconds(60)), std::future_status::ready) << "a member hangs";
  for (auto& f : fs) f.get();
}

/// `shape` filled with 0, 1, 2, ... as float32 (exact in sums of small sizes).
ts::Array range_f32(const ts::Shape& shape) { return ts::reshape(ts::arange(ts::shape_size(shape), ts::f32), shape); }

/// Every piece of `got` this process holds equals the same block of `want`.
void expect_pieces(const ts::Array& got, const ts::Array& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  auto shards = got.addressable_shards();
  EXPECT_FALSE(shards.empty()) << what;
  for (const ts::Shard& s : shards) {
    EXPECT_EQ(s.device.process_index(), ts::process_index()) << what;
    ts::Shape start, limit;
    for (auto [b, e] : s.index) start.push_back(b), limit.push_back(e);
    EXPECT_EQ(s.data.astype(ts::f32).to_vector<float>(), ts::slice(want, start, limit).astype(ts::f32).to_vector<float>())
        << what << ": the piece on " << s.device.to_string();
  }
}

bool spans_processes(const ts::Mesh& m) {
  for (const ts::Device& d : m.devices())
    if (d.process_index() != m.devices()[0].process_index()) return true;
  return false;
}

// ---- the hub, directly ----

// Participants p = 0..2P-1 live in process p % P (interleaved: group rank order differs
// from the packed process order); each process runs its own members on threads.
TEST(MeshHub, EveryCollectiveAcrossProcessesInterleaved) {
  const int P = ts::process_count(), me = ts::process_index(), n = 2 * P;
  std::vector<dist::Participant> parts;
  for (int p = 0; p < n; ++p) parts.push_back({p % P, 100000 + p});  // device ids of no real device
  auto hub = dist::make_hub(parts, me);
  std::vector<int> members;  // reversed: rank r is participant n-1-r
  for (int p = n - 1; p >= 0; --p) members.push_back(p);
  std::vector<int> mine;
  for (int r = 0; r < n; ++r)
    if (members[size_t(r)] % P == me) mine.push_back(r);
  std::vector<std::vector<float>> sum(n), mx(n), gathered(n), a2a(n), rs(n), perm(n), rows(n);
  std::vector<std::vector<ts::float16_t>> half(n);
  run_threads(int(mine.size()), [&](int i) {
    const int r = mine[size_t(i)];
    auto& g = hub->group(members);
    EXPECT_EQ(g.size(), n);
    std::vector<float> x{float(r), float(10 * r), 1.0f};
    sum[size_t(r)].resize(3), mx[size_t(r)].resize(3);
    g.all_reduce(r, x.data(), sum[size_t(r)].data(), 3, ts::f32, ir::Combine::kSum);
    g.all_reduce(r, x.data(), mx[size_t(r)].data(), 3, ts::f32, ir::Combine::kMax);
    std::vector<ts::float16_t> h(5, ts::float16_t(0.5f)), hout(5);
    g.all_reduce(r, h.data(), hout.data(), 5, ts::f16, ir::Combine::kSum);
    half[size_t(r)] = hout;
    std::vector<float> two{float(r), float(r) + 0.5f};
    gathered[size_t(r)].resize(size_t(2 * n));
    g.all_gather(r, two.data(), gathered[size_t(r)].data(), sizeof(float) * 2);
    std::vector<float> blocks;  // block j = 100*r + j
    for (int j = 0; j < n; ++j) blocks.push_back(float(100 * r + j));
    a2a[size_t(r)].resize(size_t(n));
    g.all_to_all(r, blocks.data(), a2a[size_t(r)].data(), sizeof(float));
    std::vector<float> parts2;  // 2 elements per member block: r + k
    for (int k = 0; k < 2 * n; ++k) parts2.push_back(float(r + k));
    rs[size_t(r)].resize(2);
    g.reduce_scatter(r, parts2.data(), rs[size_t(r)].data(), 2, ts::f32, ir::Combine::kSum);
    // A shift by one, except that rank 0 receives nothing (its output stays untouched).
    perm[size_t(r)].assign(2, -1.0f);
    g.permute(r, two.data(), perm[size_t(r)].data(), sizeof(float) * 2, r == 0 ? -1 : r - 1, r == n - 1 ? -1 : r + 1);
    // Strided (packing) form: a [2, n, 1] output of per-member rows {r, -r}.
    std::vector<float> col{float(r), float(-r)};
    rows[size_t(r)].resize(size_t(2 * n));
    g.all_gather_rows(r, col.data(), rows[size_t(r)].data(), sizeof(float) * 2, 2);
  });
  const float total = float(n * (n - 1) / 2);
  for (int r : mine) {
    EXPECT_EQ(sum[size_t(r)], (std::vector<float>{total, 10 * total, float(n)})) << "rank " << r;
    EXPECT_EQ(mx[size_t(r)], (std::vector<float>{float(n - 1), float(10 * (n - 1)), 1.0f})) << "rank " << r;
    for (auto v : half[size_t(r)]) EXPECT_EQ(float(v), 0.5f * float(n));
    for (int j = 0; j < n; ++j) {
      EXPECT_EQ(gathered[size_t(r)][size_t(2 * j)], float(j));
      EXPECT_EQ(gathered[size_t(r)][size_t(2 * j + 1)], float(j) + 0.5f);
      EXPECT_EQ(a2a[size_t(r)][size_t(j)], float(100 * j + r)) << "rank " << r << " block " << j;
      EXPECT_EQ(rows[size_t(r)][size_t(j)], float(j));
      EXPECT_EQ(rows[size_t(r)][size_t(n + j)], float(-j));
    }
    for (int k = 0; k < 2; ++k) EXPECT_EQ(rs[size_t(r)][size_t(k)], float(total + n * (2 * r + k)));
    EXPECT_EQ(perm[size_t(r)][0], r == 0 ? -1.0f : float(r - 1));
  }
}

TEST(MeshHub, OnlyLocalParticipantsNeedNoMpi) {
  const int me = ts::process_index();
  auto hub = dist::make_hub({{me, 0}, {me, 1}}, me);
  std::vector<std::vector<float>> out(2, std::vector<float>(2));
  run_threads(2, [&](int r) {
    float x = float(r + 1);
    hub->group({0, 1}).all_gather(r, &x, out[size_t(r)].data(), sizeof(float));
  });
  for (const auto& o : out) EXPECT_EQ(o, (std::vector<float>{1, 2}));
}

TEST(MeshHub, AbortWakesLocalMembersWaitingForAPeer) {
  const int P = ts::process_count(), me = ts::process_index();
  if (P < 2) GTEST_SKIP() << "needs 2 processes";
  // Two local members and one remote; the second local member fails instead of arriving.
  std::vector<dist::Participant> parts{{me, 200000}, {me, 200001}, {(me + 1) % P, 200002}};
  auto hub = dist::make_hub(parts, me);
  std::promise<std::string> caught;
  auto waiter = std::async(std::launch::async, [&] {
    float x = 1, y = 0;
    try {
      hub->group({0, 1, 2}).all_reduce(0, &x, &y, 1, ts::f32, ir::Combine::kSum);
    } catch (const ts::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  hub->abort(1, std::make_exception_ptr(ts::ValueError("boom")));
  ASSERT_EQ(waiter.wait_for(std::chrono::seconds(20)), std::future_status::ready) << "the local member hangs";
  const std::string msg = waiter.get();
  EXPECT_NE(msg.find("mesh position 1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("boom"), std::string::npos) << msg;
}

// ---- partitioned jit over a mesh of every device of the job ----

TEST(MeshJit, ElementwiseAndReductionMatchOneDevice) {
  REQUIRE_DEVICES(2);
  const int64_t N = ts::device_count();
  ts::Mesh mesh = ts::make_mesh({N}, {"x"});
  EXPECT_TRUE(spans_processes(mesh) || ts::process_count() == 1);
  ts::NamedSharding rows(mesh, ts::P("x")), repl(mesh, ts::P());
  ts::Array a = range_f32({2 * N, 3}), b = ts::remainder(range_f32({2 * N, 3}), ts::Array(3.0f)) - 1.0f;
  auto fn = [](const ts::Array& x, const ts::Array& y) {
    return std::vector<ts::Array>{x * y + 1.0f, ts::sum(x * y), ts::max(x, {0})};
  };
  auto sharded = ts::jit(fn, {.in_shardings = {rows, rows}, .out_shardings = {rows, repl, repl}});
  auto want = ts::jit(fn)(a, b);
  auto got = sharded(a, b);
  EXPECT_EQ(got[0].sharding(), ts::Sharding(rows));
  expect_pieces(got[0], want[0], "x * y + 1");
  EXPECT_EQ(got[1].to_vector<float>(), want[1].to_vector<float>());  // needs an all_reduce
  EXPECT_EQ(got[2].to_vector<float>(), want[2].to_vector<float>());  // max: an all_reduce too
  // A second call reuses the compiled program and the groups' communicators.
  auto again = sharded(a * 2.0f, b);
  EXPECT_EQ(again[1].to_vector<float>(), (std::vector<float>{2 * want[1].to_vector<float>()[0]}));
}

// jax.make_array_from_single_device_arrays under mpirun: each process passes only the pieces
// of its own devices, and the array computes like the one device_put makes.
TEST(MeshJit, MakeArrayFromEachProcesssOwnPieces) {
  REQUIRE_DEVICES(2);
  const int64_t N = ts::device_count();
  ts::Mesh mesh = ts::make_mesh({N}, {"x"});
  ts::NamedSharding rows(mesh, ts::P("x")), repl(mesh, ts::P());
  const ts::Shape shape{2 * N + 1, 3};  // uneven: the last piece is smaller
  ts::Array whole = range_f32(shape);
  const auto blocks = rows.device_indices(shape);
  std::vector<ts::Array> mine;
  for (size_t pos = 0; pos < blocks.size(); ++pos) {
    const ts::Device d = rows.device_set()[pos];
    if (d.process_index() != ts::process_index()) continue;
    mine.push_back(ts::device_put(ts::slice(whole, {blocks[pos][0].first, 0}, {blocks[pos][0].second, 3}), d));
  }
  ts::Array a = ts::make_array_from_single_device_arrays(shape, rows, mine);
  EXPECT_EQ(a.sharding(), ts::Sharding(rows));
  expect_pieces(a, whole, "make_array_from_single_device_arrays");
  auto total = ts::jit([](const ts::Array& x) { return ts::sum(x * x, {0}); },
                       {.in_shardings = {rows}, .out_shardings = {repl}});
  EXPECT_EQ(total(a).to_vector<float>(), ts::sum(whole * whole, {0}).to_vector<float>());
}

TEST(MeshJit, UnevenSizesDtypesAndGrad) {
  REQUIRE_DEVICES(2);
  const int64_t N = ts::device_count();
  ts::Mesh mesh = ts::make_mesh({N}, {"x"});
  ts::NamedSharding rows(mesh, ts::P("x")), repl(mesh, ts::P());
  // 2N+1 rows over N devices: padded pieces, the last ones short.
  for (ts::DType d : {ts::i32, ts::f64, ts::bf16, ts::f16}) {
    ts::Array a = range_f32({2 * N + 1, 3}).astype(d);
    auto fn = [](const ts::Array& x) { return std::vector<ts::Array>{x * x, ts::sum(x, {0}), ts::min(x, {0})}; };
    auto got = ts::jit(fn, {.in_shardings = {rows}, .out_shardings = {rows, repl, repl}})(a);
    auto want = ts::jit(fn)(a);
    const std::string name = ts::dtype_name(d);
    expect_pieces(got[0], want[0], "x * x in " + name);
    EXPECT_EQ(got[1].astype(ts::f64).to_vector<double>(), want[1].astype(ts::f64).to_vector<double>()) << name;
    EXPECT_EQ(got[2].astype(ts::f64).to_vector<double>(), want[2].astype(ts::f64).to_vector<double>()) << name;
  }
  // The backward pass is partitioned too.
  auto loss = [&](const ts::Array& w) { return ts::sum(ts::with_sharding_constraint(w, rows) * w * 0.5f); };
  ts::Array w = range_f32({2 * N + 1, 2});
  ts::Array g = ts::jit(ts::grad(loss))(ts::device_put(w, rows));
  expect_pieces(g, w, "grad of sum(w^2 / 2)");
}

TEST(MeshJit, ReshardsNeedingAllToAllAndAllGather) {
  REQUIRE_DEVICES(2);
  const int64_t N = ts::device_count();
  ts::Mesh mesh = ts::make_mesh({N}, {"x"});
  ts::NamedSharding rows(mesh, ts::P("x", ts::none)), cols(mesh, ts::P(ts::none, "x")), repl(mesh, ts::P());
  ts::Array a = range_f32({2 * N, 3 * N});
  auto to_cols = ts::jit([](const ts::Array& x) { return x * 2.0f; }, {.in_shardings = {rows}, .out_shardings = {cols}});
  ts::Array c = to_cols(a);
  EXPECT_EQ(c.sharding(), ts::Sharding(cols));
  expect_pieces(c, a * 2.0f, "rows to columns");
  EXPECT_NE(to_cols.lower(a).compile().as_text().find("all_to_all"), std::string::npos)
      << to_cols.lower(a).compile().as_text();
  // Columns back to whole: an all_gather.
  auto whole = ts::jit([](const ts::Array& x) { return x + 1.0f; }, {.out_shardings = {repl}});
  EXPECT_EQ(whole(c).to_vector<float>(), (a * 2.0f + 1.0f).to_vector<float>());
  // Eagerly: device_put to another layout of the same mesh, and an eager op on pieces.
  ts::Array r = ts::device_put(c, rows);
  expect_pieces(r, a * 2.0f, "device_put columns to rows");
  EXPECT_EQ(ts::device_put(r, repl).to_vector<float>(), (a * 2.0f).to_vector<float>());
  expect_pieces(ts::sin(r), ts::sin(a * 2.0f), "eager sin on pieces");
}

TEST(MeshJit, TwoByTwoMeshWithOneAxisAcrossProcesses) {
  REQUIRE_DEVICES(4);
  const int64_t N = ts::device_count();
  if (N % 2) GTEST_SKIP() << "needs an even number of devices";
  ts::Mesh mesh = ts::make_mesh({2, N / 2}, {"x", "y"});
  EXPECT_NE(mesh.devices()[0].process_index(), mesh.devices()[size_t(N / 2)].process_index())
      << "the x axis crosses processes";
  ts::NamedSharding both(mesh, ts::P("x", "y")), xrows(mesh, ts::P("x")), repl(mesh, ts::P());
  ts::Array a = range_f32({4, 2 * N}), w = ts::remainder(range_f32({2 * N, 3}), ts::Array(5.0f));
  auto fn = [](const ts::Array& x, const ts::Array& m) {
    return std::vector<ts::Array>{ts::sum(x, {1}), ts::sum(x, {0}), ts::matmul(x, m)};
  };
  auto f = ts::jit(fn, {.in_shardings = {both, ts::NamedSharding(mesh, ts::P("y"))},
                        .out_shardings = {xrows, repl, repl}});
  auto want = ts::jit(fn)(a, w);
  auto got = f(a, w);
  expect_pieces(got[0], want[0], "sum over y (within a process)");
  EXPECT_EQ(got[1].to_vector<float>(), want[1].to_vector<float>());  // sum over x: across processes
  EXPECT_EQ(got[2].to_vector<float>(), want[2].to_vector<float>());  // matmul: partial sums over y
  // Split only along y: readable when every row of the mesh lies within one process (each
  // process then holds every piece), an error otherwise.
  ts::Array by_y = ts::device_put(a, ts::NamedSharding(mesh, ts::P(ts::none, "y")));
  bool y_local = true;
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t j = 1; j < N / 2; ++j)
      y_local &= mesh.devices()[size_t(r * N / 2 + j)].process_index() == mesh.devices()[size_t(r * N / 2)].process_index();
  if (y_local) EXPECT_EQ(by_y.to_vector<float>(), a.to_vector<float>());
  else EXPECT_THROW(by_y.to_vector<float>(), ts::ValueError);
}

// ---- shard_map over processes ----

TEST(MeshShardMap, PsumAllGatherAndPpermuteAcrossProcesses) {
  REQUIRE_DEVICES(2);
  const int64_t N = ts::device_count();
  ts::Mesh mesh = ts::make_mesh({N}, {"i"});
  ts::Array x = range_f32({N * 2});
  auto total = ts::shard_map([](const ts::Array& p) { return ts::psum(ts::sum(p), "i"); }, mesh, {ts::P("i")}, {ts::P()});
  EXPECT_EQ(total(x).item<float>(), float(N * 2 * (N * 2 - 1) / 2));
  auto gathered = ts::shard_map([](const ts::Array& p) { return ts::all_gather(p, "i", {.axis = 0, .tiled = true}); },
                                mesh, {ts::P("i")}, {ts::P()});
  EXPECT_EQ(gathered(x).to_vector<float>(), x.to_vector<float>());
  std::vector<std::pair<int64_t, int64_t>> ring;
  for (int64_t k = 0; k < N; ++k) ring.emplace_back(k, (k + 1) % N);
  auto shifted = ts::shard_map([&](const ts::Array& p) { return ts::ppermute(p, "i", ring); }, mesh, {ts::P("i")},
                               {ts::P("i")});
  ts::Array want = ts::concatenate({ts::slice(x, {2 * N - 2}, {2 * N}), ts::slice(x, {0}, {2 * N - 2})}, 0);
  expect_pieces(shifted(x), want, "ppermute ring");
  // psum_scatter and all_to_all inside jit(shard_map).
  auto scattered = ts::jit(ts::shard_map(
      [](const ts::Array& p) { return ts::psum_scatter(p, "i", {.scatter_dimension = 0, .tiled = true}); }, mesh,
      {ts::P()}, {ts::P("i")}));
  expect_pieces(scattered(x), x * float(N), "psum_scatter of replicated data");
  ts::Array m = range_f32({N, 2 * N});
  auto a2a = ts::shard_map([](const ts::Array& p) { return ts::all_to_all(p, "i", 1, 0, {.tiled = true}); }, mesh,
                           {ts::P("i", ts::none)}, {ts::P(ts::none, "i")});
  expect_pieces(a2a(m), m, "all_to_all rows to columns");
}

TEST(MeshShardMap, GradThroughPsumAcrossProcesses) {
  REQUIRE_DEVICES(2);
  const int64_t N = ts::device_count();
  ts::Mesh mesh = ts::make_mesh({N}, {"i"});
  auto f = ts::shard_map([](const ts::Array& p) { return ts::psum(ts::sum(p * p), "i"); }, mesh, {ts::P("i")},
                         {ts::P()});
  ts::Array x = range_f32({N * 3});
  ts::Array g = ts::grad([&](const ts::Array& v) { return f(v); })(x);
  expect_pieces(g, x * 2.0f, "grad of psum(sum(x^2))");
}

// ---- values that are not addressable ----

TEST(MeshErrors, ReadingASplitValueNamesTheFix) {
  REQUIRE_DEVICES(2);
  ts::Mesh mesh = ts::make_mesh({ts::device_count()}, {"x"});
  if (!spans_processes(mesh)) GTEST_SKIP() << "the mesh is in one process";
  ts::Array x = ts::device_put(range_f32({ts::device_count() * 2}), ts::NamedSharding(mesh, ts::P("x")));
  // Only this process's pieces are there.
  for (const ts::Shard& s : x.addressable_shards()) EXPECT_EQ(s.device.process_index(), ts::process_index());
  EXPECT_EQ(int(x.addressable_shards().size()), ts::local_device_count());
  try {
    x.to_vector<float>();
    FAIL() << "expected a ValueError";
  } catch (const ts::ValueError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("to_vector"), std::string::npos) << msg;
    EXPECT_NE(msg.find("addressable_shards()"), std::string::npos) << msg;
    EXPECT_NE(msg.find("replicated"), std::string::npos) << msg;
  }
  // A replicated layout over the same processes is readable everywhere.
  ts::Array whole = ts::device_put(x, ts::NamedSharding(mesh, ts::P()));
  EXPECT_EQ(whole.to_vector<float>(), range_f32({ts::device_count() * 2}).to_vector<float>());
  x.block_until_ready();
  EXPECT_TRUE(x.is_ready());
}

}  // namespace
