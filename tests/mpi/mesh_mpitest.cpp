// Meshes that span processes: the MPI collective backend driven directly (every operation,
// members of several processes interleaved), partitioned jit and shard_map over devices of
// several processes against the single-device computation, and reading values that are
// not addressable. Every process passes the same global values (multi-controller).
// CTest runs these with 2 processes of 2 devices each (mpi_mesh_np2_dev2); in the plain
// np2/np4 runs every process has one device.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <future>
#include <limits>
#include <thread>
#include <type_traits>
#include <vector>

#include "core/log.h"
#include "distributed/collectives.h"
#include "distributed/mpi.h"
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

/// A group of 2P participants, participant p in process p % P, ranked in reverse (rank r is
/// participant 2P-1-r): group rank order differs from the packed process order. Each
/// process runs its own members (`mine`, their ranks) on threads.
struct InterleavedGroup {
  int n = 0;
  std::shared_ptr<dist::CollectiveHub> hub;
  std::vector<int> members, mine;

  InterleavedGroup() {
    const int P = ts::process_count(), me = ts::process_index();
    n = 2 * P;
    std::vector<dist::Participant> parts;
    for (int p = 0; p < n; ++p) parts.push_back({p % P, 100000 + p});  // device ids of no real device
    hub = dist::make_hub(parts, me);
    for (int p = n - 1; p >= 0; --p) members.push_back(p);
    for (int r = 0; r < n; ++r)
      if (members[size_t(r)] % P == me) mine.push_back(r);
  }
  dist::CollectiveGroup& group() const { return hub->group(members); }
  /// Runs fn(rank) for each of this process's members at once.
  void run(const std::function<void(int)>& fn) const {
    run_threads(int(mine.size()), [&](int i) { fn(mine[size_t(i)]); });
  }
};

TEST(MeshHub, EveryCollectiveAcrossProcessesInterleaved) {
  const InterleavedGroup ig;
  const int n = ig.n;
  const std::vector<int>& mine = ig.mine;
  std::vector<std::vector<float>> sum(n), mx(n), gathered(n), a2a(n), rs(n), perm(n), rows(n);
  std::vector<std::vector<ts::float16_t>> half(n);
  ig.run([&](int r) {
    auto& g = ig.group();
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

/// True when `a` and `b` hold the same bits (complex numbers: the same value, as the sign
/// of a zero imaginary part of a product depends on the order of the factors).
template <class T> bool same_bits(const T& a, const T& b) {
  if constexpr (std::is_same_v<T, ts::complex64_t> || std::is_same_v<T, ts::complex128_t>) return a == b;
  else return std::memcmp(&a, &b, sizeof(T)) == 0;
}

/// Member r's element k (of a group of n >= 2): 2 at member k % n, -1 at member (k + 1) % n,
/// else 1, so that every signed and floating dtype holds the sum n - 1, the product -2, the
/// maximum 2 and the minimum -1 exactly.
float member_value(int r, size_t k, int n) {
  return r == int(k % size_t(n)) ? 2.0f : r == int((k + 1) % size_t(n)) ? -1.0f : 1.0f;
}

/// all_reduce and reduce_scatter of T with every operation across processes give every
/// member the combined value, bit for bit.
template <class T> void expect_reductions(const InterleavedGroup& ig, const std::vector<ir::Combine>& ops) {
  const int n = ig.n;
  // all_reduce elements; reduce_scatter elements per member block (beyond TESSEL_MPI_MAX_COUNT=7
  // of the chunked test run with two members per process)
  const size_t K = 9, B = 4;
  const ts::DType d = ts::dtype_of<T>();
  for (ir::Combine op : ops) {
    const float want_value = op == ir::Combine::kSum    ? float(n - 1)
                             : op == ir::Combine::kProd ? -2.0f
                             : op == ir::Combine::kMax  ? 2.0f
                                                        : -1.0f;
    const T want = T(want_value);
    auto reduced = std::vector<std::vector<T>>(size_t(n), std::vector<T>(K));
    auto scattered = std::vector<std::vector<T>>(size_t(n), std::vector<T>(B));
    ig.run([&](int r) {
      std::vector<T> in, blocks;
      for (size_t k = 0; k < K; ++k) in.push_back(T(member_value(r, k, n)));
      for (size_t k = 0; k < B * size_t(n); ++k) blocks.push_back(T(member_value(r, k, n)));
      ig.group().all_reduce(r, in.data(), reduced[size_t(r)].data(), K, d, op);
      ig.group().reduce_scatter(r, blocks.data(), scattered[size_t(r)].data(), B, d, op);
    });
    const std::string what = std::string(ts::dtype_name(d)) + " " + ir::combine_name(op);
    for (int r : ig.mine) {
      for (const T& v : reduced[size_t(r)]) EXPECT_TRUE(same_bits(v, want)) << "all_reduce " << what << ", rank " << r;
      for (const T& v : scattered[size_t(r)])
        EXPECT_TRUE(same_bits(v, want)) << "reduce_scatter " << what << ", rank " << r;
    }
  }
}

// MPI's own operations (integers, float and complex sums and products) and tessel's as
// MPI_Ops (16-bit floats; max and min of floats) give the same values.
TEST(MeshHub, ReductionsOfEveryDtypeAcrossProcesses) {
  const InterleavedGroup ig;
  const std::vector<ir::Combine> all{ir::Combine::kSum, ir::Combine::kProd, ir::Combine::kMax, ir::Combine::kMin};
  expect_reductions<float>(ig, all);
  expect_reductions<double>(ig, all);
  expect_reductions<int32_t>(ig, all);
  expect_reductions<int8_t>(ig, all);
  expect_reductions<int64_t>(ig, all);
  expect_reductions<ts::float16_t>(ig, all);
  expect_reductions<ts::bfloat16_t>(ig, all);
  expect_reductions<ts::complex64_t>(ig, {ir::Combine::kSum, ir::Combine::kProd});
  expect_reductions<ts::complex128_t>(ig, {ir::Combine::kSum, ir::Combine::kProd});
  // bool: sum and max are "or", prod and min "and"; member 0 alone holds true.
  for (ir::Combine op : all) {
    std::vector<char> got(size_t(ig.n));
    ig.run([&](int r) {
      bool in = r == 0, out = false;
      ig.group().all_reduce(r, &in, &out, 1, ts::bool_, op);
      got[size_t(r)] = out;
    });
    const bool want = op == ir::Combine::kSum || op == ir::Combine::kMax;
    for (int r : ig.mine) EXPECT_EQ(bool(got[size_t(r)]), want) << "bool " << ir::combine_name(op) << ", rank " << r;
  }
}

// max and min of floats propagate NaN and order -0 < +0 across processes too (as pmax and
// pmin do on one process), whichever process holds the NaN or the zero.
template <class T> void expect_nan_and_zero_sign(const InterleavedGroup& ig) {
  const int n = ig.n;
  const T nan = T(std::numeric_limits<float>::quiet_NaN());
  for (ir::Combine op : {ir::Combine::kMax, ir::Combine::kMin}) {
    std::vector<std::vector<T>> got(size_t(n), std::vector<T>(4));
    ig.run([&](int r) {
      // element 0: NaN at rank 0; 1: NaN at the last rank; 2: +0 at rank 1, else -0; 3: -0 at rank 1, else +0.
      std::vector<T> in{r == 0 ? nan : T(1.0f), r == n - 1 ? nan : T(1.0f), T(r == 1 ? 0.0f : -0.0f),
                        T(r == 1 ? -0.0f : 0.0f)};
      ig.group().all_reduce(r, in.data(), got[size_t(r)].data(), 4, ts::dtype_of<T>(), op);
    });
    for (int r : ig.mine) {
      const std::vector<T>& v = got[size_t(r)];
      const std::string what = std::string(ts::dtype_name(ts::dtype_of<T>())) + " " + ir::combine_name(op);
      EXPECT_TRUE(std::isnan(float(v[0])) && std::isnan(float(v[1]))) << what << ", rank " << r;
      const bool want_negative = op == ir::Combine::kMin;
      for (int k : {2, 3})
        EXPECT_TRUE(float(v[size_t(k)]) == 0.0f && std::signbit(float(v[size_t(k)])) == want_negative)
            << what << " of signed zeros, rank " << r << ": " << float(v[size_t(k)]);
    }
  }
}

TEST(MeshHub, MaxAndMinPropagateNanAndOrderSignedZeros) {
  const InterleavedGroup ig;
  expect_nan_and_zero_sign<float>(ig);
  expect_nan_and_zero_sign<double>(ig);
  expect_nan_and_zero_sign<ts::float16_t>(ig);
}

// Sums whose rounding depends on the order of the terms: every process gets the same bits
// (MPI requires every process of a reduction to receive an identical result).
TEST(MeshHub, FloatSumsAreBitIdenticalInEveryProcess) {
  const InterleavedGroup ig;
  const size_t K = 1000;
  std::vector<std::vector<float>> got(size_t(ig.n), std::vector<float>(K));
  ig.run([&](int r) {
    std::vector<float> in;
    for (size_t k = 0; k < K; ++k) in.push_back(1.0f / float(3 * r + 7 * int(k % 13) + 1) * (k % 2 ? -1.0f : 1.0f));
    ig.group().all_reduce(r, in.data(), got[size_t(r)].data(), K, ts::f32, ir::Combine::kSum);
  });
  for (int r : ig.mine) EXPECT_EQ(got[size_t(r)], got[size_t(ig.mine[0])]) << "rank " << r;
  std::vector<float> all(K * size_t(ts::process_count()));
  ASSERT_EQ(MPI_Allgather(got[size_t(ig.mine[0])].data(), int(K), MPI_FLOAT, all.data(), int(K), MPI_FLOAT,
                          dist::mpi::world_comm()),
            MPI_SUCCESS);
  for (int p = 1; p < ts::process_count(); ++p)
    EXPECT_EQ(std::memcmp(all.data(), all.data() + size_t(p) * K, K * sizeof(float)), 0) << "process " << p;
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

/// Runs `wait` (a collective that waits for a peer) on a thread, fails participant
/// `position` with ValueError("boom") 50 ms later, and returns the message of the Error the
/// wait ended with ("no error" if none; the process aborts if it does not end within 20 s).
std::string error_after_abort(dist::CollectiveHub& hub, int position, const std::function<void()>& wait) {
  auto waiter = std::async(std::launch::async, [&] {
    try {
      wait();
    } catch (const ts::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  hub.abort(position, std::make_exception_ptr(ts::ValueError("boom")));
  if (waiter.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    std::fprintf(stderr, "error_after_abort: the waiting member hangs after participant %d failed\n", position);
    std::abort();  // its thread can never be joined
  }
  return waiter.get();
}

TEST(MeshHub, AbortWakesLocalMembersWaitingForAPeer) {
  const int P = ts::process_count(), me = ts::process_index();
  if (P < 2) GTEST_SKIP() << "needs 2 processes";
  // Two local members and one remote; the second local member fails instead of arriving.
  std::vector<dist::Participant> parts{{me, 200000}, {me, 200001}, {(me + 1) % P, 200002}};
  auto hub = dist::make_hub(parts, me);
  const std::string msg = error_after_abort(*hub, 1, [&] {
    float x = 1, y = 0;
    hub->group({0, 1, 2}).all_reduce(0, &x, &y, 1, ts::f32, ir::Combine::kSum);
  });
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

/// Runs fn with TESSEL_LOG=debug and returns what it wrote to stderr.
std::string debug_log_of(const std::function<void()>& fn) {
  const auto level = ts::detail::log_level();
  ts::detail::set_log_level(ts::detail::LogLevel::kDebug);
  testing::internal::CaptureStderr();
  try {
    fn();
  } catch (...) {
    testing::internal::GetCapturedStderr();
    ts::detail::set_log_level(level);
    throw;
  }
  std::string text = testing::internal::GetCapturedStderr();
  ts::detail::set_log_level(level);
  return text;
}

// A mesh (x: 2 across processes, y: within one) and every collective over x, and over
// (x, y) whose groups hold several devices of each process, for f32, f64 and int32, with
// reductions other than sum; the debug log shows each went through MPI's own collective.
TEST(MeshCollectives, EveryCollectiveOverAnAxisAcrossProcesses) {
  REQUIRE_DEVICES(4);
  const int64_t N = ts::device_count(), M = N / 2;
  if (N % 2) GTEST_SKIP() << "needs an even number of devices";
  ts::Mesh mesh = ts::make_mesh({2, M}, {"x", "y"});
  ASSERT_NE(mesh.devices()[0].process_index(), mesh.devices()[size_t(M)].process_index()) << "x crosses processes";
  const int64_t R = 4 * M, C = 2;  // a device's piece is [R, C]: R splits over x and over (x, y)
  using Spec = ts::PartitionSpec;
  const Spec split = ts::P("x", "y"), cols = ts::P(ts::none, "y"), repl = ts::P();
  struct Case {
    std::string name;
    std::function<ts::Array(const ts::Array&)> fn;
    Spec out;
    std::function<ts::Array(const ts::Array&)> want;  // of the global argument
  };
  auto top = [=](const ts::Array& a) { return ts::slice(a, {0, 0}, {R, M * C}); };
  auto bottom = [=](const ts::Array& a) { return ts::slice(a, {R, 0}, {2 * R, M * C}); };
  // The pieces [R, C] of every device, in group order over (x, y).
  auto pieces = [=](const ts::Array& a) {
    std::vector<ts::Array> r;
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < M; ++j) r.push_back(ts::slice(a, {i * R, j * C}, {(i + 1) * R, (j + 1) * C}));
    return r;
  };
  auto fold = [=](const ts::Array& a, ts::Array (*op)(const ts::Array&, const ts::Array&)) {
    auto ps = pieces(a);
    ts::Array acc = ps[0];
    for (size_t k = 1; k < ps.size(); ++k) acc = op(acc, ps[k]);
    return acc;
  };
  const std::vector<Case> cases{
      {"psum over x", [](const ts::Array& p) { return ts::psum(p, "x"); }, cols,
       [=](const ts::Array& a) { return top(a) + bottom(a); }},
      {"pmax over x", [](const ts::Array& p) { return ts::pmax(p, "x"); }, cols,
       [=](const ts::Array& a) { return ts::maximum(top(a), bottom(a)); }},
      {"pmin over (x, y)", [](const ts::Array& p) { return ts::pmin(p, {"x", "y"}); }, repl,
       [=](const ts::Array& a) { return fold(a, [](const ts::Array& u, const ts::Array& v) { return ts::minimum(u, v); }); }},
      {"psum over (x, y)", [](const ts::Array& p) { return ts::psum(p, {"x", "y"}); }, repl,
       [=](const ts::Array& a) { return fold(a, [](const ts::Array& u, const ts::Array& v) { return u + v; }); }},
      {"all_gather over x", [](const ts::Array& p) { return ts::all_gather(p, "x", {.axis = 0, .tiled = true}); }, cols,
       [](const ts::Array& a) { return a; }},
      {"all_gather over (x, y)",
       [](const ts::Array& p) { return ts::all_gather(p, {"x", "y"}, {.axis = 0, .tiled = true}); }, repl,
       [=](const ts::Array& a) { return ts::concatenate(pieces(a), 0); }},
      {"psum_scatter over x",
       [](const ts::Array& p) { return ts::psum_scatter(p, "x", {.scatter_dimension = 0, .tiled = true}); }, split,
       [=](const ts::Array& a) { return top(a) + bottom(a); }},
      {"psum_scatter over (x, y)",
       [](const ts::Array& p) { return ts::psum_scatter(p, {"x", "y"}, {.scatter_dimension = 0, .tiled = true}); },
       ts::P(ts::axes("x", "y")),
       [=](const ts::Array& a) { return fold(a, [](const ts::Array& u, const ts::Array& v) { return u + v; }); }},
      {"all_to_all over x", [](const ts::Array& p) { return ts::all_to_all(p, "x", 1, 0, {.tiled = true}); },
       ts::P(ts::none, ts::axes("y", "x")), [](const ts::Array& a) { return a; }},
      {"ppermute over x", [](const ts::Array& p) { return ts::ppermute(p, "x", {{0, 1}, {1, 0}}); }, split,
       [=](const ts::Array& a) { return ts::concatenate({bottom(a), top(a)}, 0); }},
  };
  // Mixed signs, so that max and min differ from the first and last pieces.
  const ts::Array base = ts::remainder(range_f32({2 * R, M * C}) * 7.0f, ts::Array(11.0f)) - 5.0f;
  const std::string log = debug_log_of([&] {
    for (ts::DType d : {ts::f32, ts::f64, ts::i32}) {
      const ts::Array a = base.astype(d);
      for (const Case& c : cases) {
        ts::Array got = ts::shard_map(c.fn, mesh, {split}, {c.out})(a);
        expect_pieces(got, c.want(a), c.name + " in " + ts::dtype_name(d));
      }
    }
  });
  // Sums are MPI_SUM; max and min of int32 are MPI's, of floats tessel's (NaN, -0 < +0).
  for (const char* line : {"MPI_Iallreduce of", "float32 (sum: MPI_SUM)", "float64 (sum: MPI_SUM)",
                           "int32 (max: MPI_MAX)", "int32 (min: MPI_MIN)", "float32 (max: tessel's max)",
                           "float64 (min: tessel's min)", "MPI_Ireduce", "MPI_Iallgather", "MPI_Ialltoall",
                           "MPI_Isend/MPI_Irecv"})
    EXPECT_NE(log.find(line), std::string::npos) << "no debug line with '" << line << "'";
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

// ---- halo exchanges overlapped across processes ----

// Every member posts two permutes (a shift up and a shift down, the ends receiving nothing
// from one of them) and overwrites its rows before it finishes either: the MPI backend's
// permute_start posts each member's own MPI_Isend/MPI_Irecv (to a member of another process,
// or to one of this process as a message to its own rank) and returns at once, so this
// cannot deadlock, and each finish gets its own rows. Group ranks are interleaved over the
// processes (InterleavedGroup).
TEST(MeshOverlap, PermuteHalvesAcrossProcessesInterleaved) {
  const InterleavedGroup ig;
  const int n = ig.n;
  std::vector<std::vector<float>> up(size_t(n), std::vector<float>(3, -1.0f)), down = up;
  ig.run([&](int r) {
    dist::CollectiveGroup& g = ig.group();
    for (int round = 0; round < 3; ++round) {  // the tickets of later rounds match in order
      std::vector<float> mine{float(10 * r + round), float(10 * r + 1), float(10 * r + 2)};
      const size_t bytes = sizeof(float) * 3;
      const uint64_t a = g.permute_start(r, mine.data(), bytes, r == 0 ? -1 : r - 1, r == n - 1 ? -1 : r + 1);
      const uint64_t b = g.permute_start(r, mine.data(), bytes, r == n - 1 ? -1 : r + 1, r == 0 ? -1 : r - 1);
      mine.assign(3, 99.0f);  // the rows were taken at the start
      g.permute_done(r, a, up[size_t(r)].data());
      g.permute_done(r, b, down[size_t(r)].data());
      if (round < 2) continue;
      for (int i = 0; i < 3; ++i) {
        const float shift = i == 0 ? float(round) : 0.0f;
        EXPECT_EQ(up[size_t(r)][size_t(i)], r == 0 ? -1.0f : float(10 * (r - 1) + i) + shift) << "member " << r;
        EXPECT_EQ(down[size_t(r)][size_t(i)], r == n - 1 ? -1.0f : float(10 * (r + 1) + i) + shift) << "member " << r;
      }
    }
  });
}

// A member waiting in permute_done for a peer process's rows stops waiting when a local
// participant fails (the error names it), and the peer, which starts its permute late,
// still gets its rows. Processes pair up (0 with 1, 2 with 3, ...); the lower one fails.
TEST(MeshOverlap, AbortEndsAWaitForAPeersRows) {
  const int P = ts::process_count(), me = ts::process_index(), partner = me ^ 1;
  if (P < 2 || partner >= P) GTEST_SKIP() << "needs a partner process";
  const int lo = std::min(me, partner), hi = std::max(me, partner), rank = me == lo ? 0 : 1;
  auto hub = dist::make_hub({{lo, 500000 + lo}, {hi, 500000 + hi}}, me);
  dist::CollectiveGroup& g = hub->group({0, 1});
  float mine = float(me), got = -1.0f;
  g.permute_done(rank, g.permute_start(rank, &mine, sizeof mine, 1 - rank, 1 - rank), &got);  // makes the communicator
  EXPECT_EQ(got, float(partner));
  if (rank == 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    g.permute_done(rank, g.permute_start(rank, &mine, sizeof mine, 0, 0), &got);
    EXPECT_EQ(got, float(lo));  // sent by a member that had failed by then
    return;
  }
  const std::string msg =
      error_after_abort(*hub, 0, [&] { g.permute_done(0, g.permute_start(0, &mine, sizeof mine, 1, 1), &got); });
  EXPECT_NE(msg.find("mesh position 0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("boom"), std::string::npos) << msg;
}

// A permute between the first two processes only, on a group of one device per process
// that has not communicated yet: the processes whose members exchange nothing (with 4
// processes, 2 and 3) still take part in making the group's communicator, so nobody hangs.
TEST(MeshOverlap, MembersWithNothingToExchangeStillJoinTheGroup) {
  const int P = ts::process_count(), me = ts::process_index();
  if (P < 2) GTEST_SKIP() << "needs 2 processes";
  std::vector<dist::Participant> parts;
  std::vector<int> members;
  for (int p = 0; p < P; ++p) parts.push_back({p, 600000 + p}), members.push_back(p);
  auto hub = dist::make_hub(parts, me);
  dist::CollectiveGroup& g = hub->group(members);
  const int peer = me == 0 ? 1 : me == 1 ? 0 : -1;
  float mine = float(me + 1), got = -1.0f;
  const auto t0 = std::chrono::steady_clock::now();
  g.permute_done(me, g.permute_start(me, &mine, sizeof mine, peer, peer), &got);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(got, peer < 0 ? -1.0f : float(peer + 1));
  // Processes 2.. use the group again only 5 s later: the first two did not wait for that.
  if (peer < 0) std::this_thread::sleep_for(std::chrono::seconds(5));
  else EXPECT_LT(seconds, 4.0) << "the permute waited for processes that exchange nothing";
  float x = 1.0f, sum = 0.0f;  // and the group still works for a collective of every member
  g.all_reduce(me, &x, &sum, 1, ts::f32, ir::Combine::kSum);
  EXPECT_EQ(sum, float(P));
}

ts::Array stencil_step(const ts::Array& u) {
  return u * 0.5f + ts::roll(u, -1, 0) * 0.25f + ts::roll(u, 1, 1) * 0.25f;
}

// The stencil with rows split over every device of the job, one step and in a
// fori_loop: the per-device program exchanges halo rows only (collective_permute, no
// all_gather), the step and the loop's body split a loop nest around the exchange (interior
// rows while it is in flight), and the values equal one device's bit for bit. The debug log shows each
// member posting its own MPI_Isend/MPI_Irecv.
TEST(MeshOverlap, StencilOverProcessesEqualsOneDevice) {
  REQUIRE_DEVICES(2);
  const int64_t N = ts::device_count();
  ts::Mesh mesh = ts::make_mesh({N}, {"x"});
  const ts::NamedSharding rows(mesh, ts::P("x", ts::none));
  auto loop = [](const ts::Array& u0) {
    return ts::fori_loop(0, 10, [](const ts::Array&, const ts::Array& u) { return stencil_step(u); }, u0);
  };
  const ts::Array x = ts::sin(range_f32({128 * N, 256}) * 0.37f) * 3.0f;
  auto step = ts::jit(stencil_step, {.in_shardings = {rows}, .out_shardings = {rows}});
  auto sharded = ts::jit(loop, {.in_shardings = {rows}, .out_shardings = {rows}});
  for (const std::string& text : {step.lower(x).compile().as_text(), sharded.lower(x).compile().as_text()}) {
    EXPECT_EQ(text.find("all_gather"), std::string::npos) << text;
    EXPECT_NE(text.find("collective_permute"), std::string::npos) << text;
  }
  // The loop's text lists its body's schedule after the scan step.
  for (const std::string& text : {step.lower(x).compile().as_text(), sharded.lower(x).compile().as_text()}) {
    EXPECT_NE(text.find("run while the exchange is in flight"), std::string::npos) << text;
  }
  expect_pieces(step(x), ts::jit(stencil_step)(x), "stencil step");
  ts::Array got;
  const std::string log = debug_log_of([&] { got = sharded(x).block_until_ready(); });
  expect_pieces(got, ts::jit(loop)(x), "stencil loop");
  if (spans_processes(mesh)) {
    EXPECT_NE(log.find("posts MPI_Isend/MPI_Irecv"), std::string::npos) << log;
  }
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
