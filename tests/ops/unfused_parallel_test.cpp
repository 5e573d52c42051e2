// The unfused kernels that split their work over the intra-op arena (reductions, argmax,
// cumulative ops, transposes and other strided copies, broadcasts, iota, conversions,
// gathers, scatters): at sizes above their grain, with odd extents, against serial
// references written here; and the same bits whatever TESSEL_NUM_THREADS is (the test
// binary runs itself with 1 and 3 threads and compares digests of the results).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <unistd.h>

#include "tessel/tessel.h"

namespace ts = tessel;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<double> values(int64_t n, const std::function<double(int64_t)>& f) {
  std::vector<double> v(size_t(n), 0.0);
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = f(i);
  return v;
}

// Pseudo-random doubles in [-1, 1), reproducible.
double noise(int64_t i) {
  uint64_t z = uint64_t(i) * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return double(z >> 11) * 0x1p-52 - 1.0;
}

// (rows, cols) column and row sums of a row-major matrix in double.
std::vector<double> ref_sum_axis(const std::vector<double>& x, int64_t rows, int64_t cols, int axis) {
  std::vector<double> out(size_t(axis == 0 ? cols : rows), 0.0);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) out[size_t(axis == 0 ? j : i)] += x[size_t(i * cols + j)];
  return out;
}

// The documented bound for float32 sums (docs/performance.md): within 2^-16 of the sum of
// magnitudes (float32's serial pairwise bound at these lengths is about 2^-17).
void expect_f32_sums_close(const std::vector<double>& got, const std::vector<double>& want,
                           const std::vector<double>& magnitude) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_LE(std::abs(got[i] - want[i]), 0x1p-16 * magnitude[i]) << "output " << i;
}

}  // namespace

TEST(UnfusedParallel, Float32SumsOverLeadingTrailingAndAllAxesStayWithinTheBound) {
  const int64_t rows = 4099, cols = 257;  // 1.05M elements, odd extents
  const auto data = values(rows * cols, noise);
  std::vector<double> mag(data.size());
  for (size_t i = 0; i < data.size(); ++i) mag[i] = std::abs(data[i]);
  const ts::Array x = ts::Array(data, {rows, cols}).astype(ts::f32);
  std::vector<double> x32 = x.to_vector<double>();
  for (int axis : {0, 1}) {
    SCOPED_TRACE("axis " + std::to_string(axis));
    expect_f32_sums_close(ts::sum(x, {axis}).to_vector<double>(), ref_sum_axis(x32, rows, cols, axis),
                          ref_sum_axis(mag, rows, cols, axis));
  }
  double total = 0, total_mag = 0;
  for (size_t i = 0; i < x32.size(); ++i) total += x32[i], total_mag += std::abs(x32[i]);
  expect_f32_sums_close({ts::sum(x).item<double>()}, {total}, {total_mag});
}

TEST(UnfusedParallel, Float32FullSumOfTenMillionIsAccurate) {
  // Large cancellation: alternating +-(1 + small) terms; the exact sum is small.
  const int64_t n = 10'000'019;
  const ts::Array x = ts::astype(ts::Array(values(n, [](int64_t i) { return (i % 2 ? -1.0 : 1.0) * (1.0 + 1e-3 * noise(i)); }), {n}), ts::f32);
  const auto v = x.to_vector<double>();
  double want = 0, mag = 0;
  for (double e : v) want += e, mag += std::abs(e);
  EXPECT_LE(std::abs(ts::sum(x).item<double>() - want), 0x1p-16 * mag);
}

TEST(UnfusedParallel, Float64SumsMatchALongDoubleReference) {
  const int64_t a = 3, b = 70001, c = 5;  // few long reduced runs, and a column sum
  const auto data = values(a * b * c, noise);
  const ts::Array x(data, {a, b, c});
  const auto got = ts::sum(x, {1}).to_vector<double>();
  for (int64_t i = 0; i < a; ++i)
    for (int64_t k = 0; k < c; ++k) {
      long double s = 0;
      for (int64_t j = 0; j < b; ++j) s += data[size_t((i * b + j) * c + k)];
      EXPECT_NEAR(got[size_t(i * c + k)], double(s), 1e-12 * double(b));
    }
}

TEST(UnfusedParallel, IntegerReductionsAreExactInEveryIntegerDtype) {
  const int64_t rows = 1031, cols = 517;
  const auto data = values(rows * cols, [](int64_t i) { return double((i * 37) % 101); });
  for (ts::DType dt : {ts::i8, ts::u8, ts::i16, ts::i32, ts::u32, ts::i64, ts::u64}) {
    SCOPED_TRACE(ts::dtype_name(dt));
    const ts::Array x = ts::Array(data, {rows, cols}).astype(dt);
    const auto xv = x.to_vector<double>();
    for (int axis : {0, 1}) EXPECT_EQ(ts::sum(x, {axis}).to_vector<double>(), ref_sum_axis(xv, rows, cols, axis));
    double total = 0;
    for (double e : xv) total += e;
    EXPECT_EQ(ts::sum(x).item<double>(), total);
    // max / min over the leading axis and over everything
    std::vector<double> colmax(size_t(cols), -1e300);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) colmax[size_t(j)] = std::max(colmax[size_t(j)], xv[size_t(i * cols + j)]);
    EXPECT_EQ(ts::max(x, {0}).to_vector<double>(), colmax);
    EXPECT_EQ(ts::min(x).item<double>(), 0.0);
  }
}

TEST(UnfusedParallel, HalfAndComplexSums) {
  const int64_t rows = 2053, cols = 129;
  const auto data = values(rows * cols, [](int64_t i) { return double(i % 7) - 3.0; });  // exact in half
  for (ts::DType dt : {ts::f16, ts::bf16}) {
    const ts::Array x = ts::Array(data, {rows, cols}).astype(dt);
    const auto want = ref_sum_axis(data, rows, cols, 0);
    const auto got = ts::sum(x, {0}).astype(ts::f32).to_vector<double>();
    for (size_t j = 0; j < got.size(); ++j) EXPECT_NEAR(got[j], want[j], std::abs(want[j]) * 1e-2 + 1e-6) << j;
  }
  const ts::Array z = ts::Array(data, {rows, cols}).astype(ts::c64);
  const auto got = ts::real(ts::sum(z, {0})).to_vector<double>();
  EXPECT_EQ(got, ref_sum_axis(data, rows, cols, 0));
}

TEST(UnfusedParallel, MaxMinPropagateNaNFromAnyBlock) {
  const int64_t rows = 3001, cols = 211;
  auto data = values(rows * cols, noise);
  data[size_t(2999 * cols + 17)] = kNaN;  // late in the leading axis: the last block
  data[size_t(5 * cols + 200)] = kNaN;    // early
  for (ts::DType dt : {ts::f32, ts::f64, ts::f16}) {
    SCOPED_TRACE(ts::dtype_name(dt));
    const ts::Array x = ts::Array(data, {rows, cols}).astype(dt);
    for (auto fn : {&ts::max, &ts::min}) {
      const auto col = fn(x, {0}, false).astype(ts::f64).to_vector<double>();
      for (int64_t j = 0; j < cols; ++j) EXPECT_EQ(std::isnan(col[size_t(j)]), j == 17 || j == 200) << j;
      EXPECT_TRUE(std::isnan(fn(x, {}, false).astype(ts::f64).item<double>()));
      const auto row = fn(x, {1}, false).astype(ts::f64).to_vector<double>();
      for (int64_t i = 0; i < rows; ++i) EXPECT_EQ(std::isnan(row[size_t(i)]), i == 2999 || i == 5) << i;
    }
  }
}

TEST(UnfusedParallel, AnyAllAndProdOverLongAxes) {
  const int64_t n = 1'000'003;
  std::vector<double> bits(size_t(n), 1.0);
  bits[size_t(n - 2)] = 0.0;
  const ts::Array b = ts::Array(bits, {n}).astype(ts::bool_);
  EXPECT_FALSE(ts::all(b).item<bool>());
  EXPECT_TRUE(ts::any(b).item<bool>());
  EXPECT_TRUE(ts::any(ts::logical_not(b)).item<bool>());
  // A product of values near 1 in float64 against a serial product.
  const auto data = values(n, [](int64_t i) { return 1.0 + 1e-7 * noise(i); });
  long double want = 1;
  for (double e : data) want *= e;
  EXPECT_NEAR(ts::prod(ts::Array(data, {n})).item<double>(), double(want), 1e-12);
}

TEST(UnfusedParallel, ArgmaxAndArgminAgainstASerialScan) {
  const int64_t n = 700'001;
  auto data = values(n, [](int64_t i) { return double((i * 7919) % 1000); });  // many ties
  const ts::Array x(data, {n});
  int64_t first_max = 0;
  for (int64_t i = 1; i < n; ++i)
    if (data[size_t(i)] > data[size_t(first_max)]) first_max = i;
  EXPECT_EQ(ts::argmax(x).item<int64_t>(), first_max);
  data[size_t(n - 5)] = kNaN;
  data[size_t(n - 3)] = kNaN;
  EXPECT_EQ(ts::argmin(ts::Array(data, {n}).astype(ts::f32)).item<int64_t>(), n - 5);  // the first NaN
  // Columns: (rows, cols) argmax over axis 0.
  const int64_t rows = 517, cols = 1029;
  const auto m = values(rows * cols, [](int64_t i) { return double((i * 31) % 97); });
  const auto got = ts::argmax(ts::Array(m, {rows, cols}).astype(ts::i32), 0).to_vector<int64_t>();
  for (int64_t j = 0; j < cols; ++j) {
    int64_t best = 0;
    for (int64_t i = 1; i < rows; ++i)
      if (m[size_t(i * cols + j)] > m[size_t(best * cols + j)]) best = i;
    ASSERT_EQ(got[size_t(j)], best) << j;
  }
}

TEST(UnfusedParallel, CumsumAlongALongAxisAndAlongEachAxis) {
  const int64_t n = 300'007;  // a two-pass blocked scan
  const auto ints = values(n, [](int64_t i) { return double(i % 13) - 6.0; });
  for (bool reverse : {false, true}) {
    const auto got = ts::cumsum(ts::Array(ints, {n}).astype(ts::i32), 0, reverse).to_vector<double>();
    double run = 0;
    for (int64_t s = 0; s < n; ++s) {
      const int64_t k = reverse ? n - 1 - s : s;
      run += ints[size_t(k)];
      ASSERT_EQ(got[size_t(k)], run) << k;
    }
  }
  // float32: within the bound of a sum of the prefix's magnitudes
  const auto data = values(n, noise);
  const ts::Array x = ts::Array(data, {n}).astype(ts::f32);
  const auto x32 = x.to_vector<double>();
  const auto got = ts::cumsum(x, 0).to_vector<double>();
  double run = 0, mag = 0;
  for (int64_t k = 0; k < n; ++k) {
    run += x32[size_t(k)], mag += std::abs(x32[size_t(k)]);
    ASSERT_LE(std::abs(got[size_t(k)] - run), 0x1p-14 * mag + 1e-30) << k;
  }
  // (rows, cols): along the leading axis (column chunks) and the trailing one (rows)
  const int64_t rows = 613, cols = 211;
  const auto m = values(rows * cols, [](int64_t i) { return double(i % 5); });
  const ts::Array xm = ts::Array(m, {rows, cols}).astype(ts::i64);
  const auto c0 = ts::cumsum(xm, 0).to_vector<double>(), c1 = ts::cumsum(xm, 1).to_vector<double>();
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      double s0 = 0, s1 = 0;
      for (int64_t k = 0; k <= i; ++k) s0 += m[size_t(k * cols + j)];
      for (int64_t k = 0; k <= j; ++k) s1 += m[size_t(i * cols + k)];
      ASSERT_EQ(c0[size_t(i * cols + j)], s0);
      ASSERT_EQ(c1[size_t(i * cols + j)], s1);
    }
}

TEST(UnfusedParallel, CummaxPropagatesNaNAcrossBlocks) {
  const int64_t n = 200'003;
  auto data = values(n, [](int64_t i) { return double(i % 1000); });
  data[size_t(150'000)] = kNaN;
  const auto got = ts::cummax(ts::Array(data, {n}).astype(ts::f32), 0).to_vector<double>();
  EXPECT_EQ(got[size_t(149'999)], 999.0);
  for (int64_t k = 150'000; k < n; k += 997) ASSERT_TRUE(std::isnan(got[size_t(k)])) << k;
  EXPECT_TRUE(std::isnan(got[size_t(n - 1)]));
}

TEST(UnfusedParallel, TransposesAndStridedCopiesAreExactForEveryItemSize) {
  const int64_t a = 37, b = 129, c = 67;  // 320K elements, odd extents
  const auto data = values(a * b * c, [](int64_t i) { return double(i % 251); });
  for (ts::DType dt : {ts::u8, ts::i16, ts::f32, ts::f64, ts::c128}) {
    SCOPED_TRACE(ts::dtype_name(dt));
    const ts::Array x = ts::Array(data, {a, b, c}).astype(dt);
    for (const ts::Axes& perm : {ts::Axes{2, 1, 0}, ts::Axes{0, 2, 1}, ts::Axes{1, 0, 2}, ts::Axes{2, 0, 1}}) {
      const auto got = ts::real(ts::transpose(x, perm)).to_vector<double>();
      const ts::Shape s{a, b, c};
      const ts::Shape os{s[size_t(perm[0])], s[size_t(perm[1])], s[size_t(perm[2])]};
      for (int64_t i = 0; i < os[0]; ++i)
        for (int64_t j = 0; j < os[1]; ++j)
          for (int64_t k = 0; k < os[2]; ++k) {
            int64_t idx[3];
            idx[perm[0]] = i, idx[perm[1]] = j, idx[perm[2]] = k;
            ASSERT_EQ(got[size_t((i * os[1] + j) * os[2] + k)], data[size_t((idx[0] * b + idx[1]) * c + idx[2])]);
          }
    }
    // flip, slice, pad and concatenate of the same array
    const auto f = ts::real(ts::flip(x, ts::Axes{1})).to_vector<double>();
    ASSERT_EQ(f[size_t((5 * b + 0) * c + 3)], data[size_t((5 * b + b - 1) * c + 3)]);
    const auto p = ts::real(ts::pad(x, {{1, 2}, {0, 0}, {3, 0}})).to_vector<double>();
    ASSERT_EQ(p[size_t(((1 + 4) * b + 7) * (c + 3) + 3 + 9)], data[size_t((4 * b + 7) * c + 9)]);
    ASSERT_EQ(p[size_t(0)], 0.0);
    const auto cc = ts::real(ts::concatenate({x, x}, 2)).to_vector<double>();
    ASSERT_EQ(cc[size_t((3 * b + 4) * 2 * c + c + 5)], data[size_t((3 * b + 4) * c + 5)]);
  }
}

TEST(UnfusedParallel, BroadcastIotaAndConvert) {
  const int64_t rows = 1001, cols = 513;
  const ts::Array row = ts::arange(cols, ts::i32);
  const auto bc = ts::broadcast_to(row, {rows, cols}).to_vector<int64_t>();
  const auto col = ts::broadcast_to(ts::reshape(ts::arange(rows, ts::i32), {rows, 1}), {rows, cols}).to_vector<int64_t>();
  const auto io = ts::iota(ts::i64, {rows, cols}, 0).to_vector<int64_t>();
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      ASSERT_EQ(bc[size_t(i * cols + j)], j);
      ASSERT_EQ(col[size_t(i * cols + j)], i);
      ASSERT_EQ(io[size_t(i * cols + j)], i);
    }
  const int64_t n = 400'009;
  const auto data = values(n, [](int64_t i) { return 1000.0 * noise(i); });
  const auto as_int = ts::Array(data, {n}).astype(ts::i32).to_vector<int64_t>();
  const auto as_half = ts::Array(data, {n}).astype(ts::f16).astype(ts::f64).to_vector<double>();
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(as_int[size_t(i)], int64_t(std::trunc(data[size_t(i)])));
    ASSERT_LE(std::abs(as_half[size_t(i)] - data[size_t(i)]), 0x1p-11 * std::abs(data[size_t(i)]));
  }
}

TEST(UnfusedParallel, GatherAndScatterAddWithDuplicateIndices) {
  const int64_t vocab = 1003, width = 257, count = 4001;
  const auto table = values(vocab * width, noise);
  const auto idx = values(count, [](int64_t i) { return double((i * 131) % vocab); });  // duplicates
  const ts::Array t = ts::Array(table, {vocab, width}).astype(ts::f32), ix = ts::Array(idx, {count}).astype(ts::i32);
  const auto t32 = t.to_vector<double>();
  const auto g = ts::take(t, ix, 0).to_vector<double>();
  for (int64_t i = 0; i < count; ++i)
    for (int64_t j = 0; j < width; ++j)
      ASSERT_EQ(g[size_t(i * width + j)], t32[size_t(int64_t(idx[size_t(i)]) * width + j)]);
  // scatter-add of rows in serial order: float32 additions in index order, per element
  const auto upd = values(count * width, noise);
  const ts::Array u = ts::Array(upd, {count, width}).astype(ts::f32);
  const auto u32 = u.to_vector<double>();
  const auto got = ts::zeros({vocab, width}, ts::f32).at({ix}).add(u).to_vector<double>();
  std::vector<float> want(size_t(vocab * width), 0.0f);
  for (int64_t i = 0; i < count; ++i)
    for (int64_t j = 0; j < width; ++j) want[size_t(int64_t(idx[size_t(i)]) * width + j)] += float(u32[size_t(i * width + j)]);
  for (size_t k = 0; k < want.size(); ++k) ASSERT_EQ(got[k], double(want[k])) << k;
  // 1-D scatter (no window dimension: serial) and set keeping the last duplicate
  const auto s = ts::zeros({vocab}, ts::i32).at({ix}).set(ts::arange(count, ts::i32)).to_vector<int64_t>();
  std::vector<int64_t> last(size_t(vocab), 0);
  for (int64_t i = 0; i < count; ++i) last[size_t(int64_t(idx[size_t(i)]))] = i;
  EXPECT_EQ(s, last);
}

TEST(UnfusedParallel, FusedFullReductionsSplitByBlocksStayAccurate) {
  // A fused loop nest reducing every dimension (a loss) runs by fixed blocks of rows.
  const int64_t rows = 1001, cols = 517;
  auto data = values(rows * cols, noise);
  const ts::Array x = ts::Array(data, {rows, cols}).astype(ts::f32);
  const auto x32 = x.to_vector<double>();
  auto loss = ts::jit([](const ts::Array& a) { return ts::sum(ts::square(a - 0.25f)); });
  auto peak = ts::jit([](const ts::Array& a) { return ts::max(ts::exp(a)); });
  double want = 0, top = -1e300;
  for (double v : x32) want += (v - 0.25) * (v - 0.25), top = std::max(top, std::exp(v));
  EXPECT_LE(std::abs(loss(x).item<double>() - want), 1e-6 * want);
  EXPECT_NEAR(peak(x).item<double>(), top, 1e-6 * top);
  data[size_t(rows * cols - 3)] = kNaN;  // in the last block
  EXPECT_TRUE(std::isnan(peak(ts::Array(data, {rows, cols}).astype(ts::f32)).item<double>()));
  EXPECT_TRUE(std::isnan(loss(ts::Array(data, {rows, cols}).astype(ts::f32)).item<double>()));
}

// ---- the same bits for any thread count ----

namespace {

// FNV-1a over the values of each result of a fixed set of large unfused computations.
std::map<std::string, uint64_t> unfused_digests() {
  auto digest = [](const ts::Array& r) {
    uint64_t h = 1469598103934665603ull;
    for (double v : r.astype(ts::f64).to_vector<double>()) {
      uint64_t bits;
      std::memcpy(&bits, &v, sizeof bits);
      for (int i = 0; i < 8; ++i) h = (h ^ ((bits >> (8 * i)) & 0xff)) * 1099511628211ull;
    }
    return h;
  };
  const int64_t rows = 4099, cols = 257, n = 1'000'003;
  const ts::Array m = ts::Array(values(rows * cols, noise), {rows, cols}).astype(ts::f32);
  const ts::Array v = ts::Array(values(n, noise), {n}).astype(ts::f32);
  const ts::Array ix = ts::Array(values(4001, [](int64_t i) { return double((i * 131) % rows); }), {4001}).astype(ts::i32);
  return {{"sum0", digest(ts::sum(m, {0}))},
          {"sum1", digest(ts::sum(m, {1}))},
          {"sum_all", digest(ts::sum(v))},
          {"sum_f16", digest(ts::sum(m.astype(ts::f16), {0}))},
          {"prod0", digest(ts::prod(m, {0}))},
          {"max0", digest(ts::max(m, {0}))},
          {"argmax", digest(ts::argmax(v))},
          {"cumsum", digest(ts::cumsum(v, 0))},
          {"cumsum0", digest(ts::cumsum(m, 0))},
          {"transpose", digest(ts::transpose(m))},
          {"fused_loss", digest(ts::jit([](const ts::Array& a) { return ts::sum(ts::square(a)); })(m))},
          {"scatter_add", digest(ts::zeros({rows, cols}, ts::f32).at({ix}).add(ts::ones({4001, cols}, ts::f32)))}};
}

}  // namespace

// Run by ResultsDoNotDependOnTheThreadCount in a child process.
TEST(UnfusedParallelDigest, DISABLED_Print) {
  for (const auto& [name, h] : unfused_digests()) std::printf("digest %s %llu\n", name.c_str(), (unsigned long long)h);
}

TEST(UnfusedParallel, ResultsDoNotDependOnTheThreadCount) {
  char exe[4096];
  const ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  ASSERT_GT(len, 0);
  exe[len] = 0;
  const auto here = unfused_digests();
  for (int threads : {1, 3}) {
    SCOPED_TRACE("TESSEL_NUM_THREADS=" + std::to_string(threads));
    const std::string cmd = "TESSEL_NUM_THREADS=" + std::to_string(threads) + " '" + exe +
                            "' --gtest_also_run_disabled_tests --gtest_filter=UnfusedParallelDigest.DISABLED_Print";
    FILE* p = popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    std::map<std::string, uint64_t> there;
    char line[512], name[128];
    unsigned long long h;
    while (std::fgets(line, sizeof line, p))
      if (std::sscanf(line, "digest %127s %llu", name, &h) == 2) there[name] = h;
    EXPECT_EQ(pclose(p), 0);
    EXPECT_EQ(there, here);
  }
}
