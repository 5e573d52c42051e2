// Sorting and searching (tessel/sort.h) against JAX's own results (sort_jax_values.h, made
// by sort_jax_values.py) for fixed inputs with NaN, +-inf, +-0 and ties; long rows of every
// dtype against std::stable_sort; jit against eager, vmap against a loop, gradients against
// JAX; the size rule under jit; sharded sorts (8 devices) along unsplit and split dimensions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <numeric>
#include <random>
#include <string>

#include "core/log.h"
#include "ops/sort_jax_values.h"
#include "tessel/sort.h"
#include "tessel/tessel.h"

namespace ts = tessel;
using sort_jax::Ref;

namespace {

/// Equal values (NaN equals NaN; `tol` relative), and with `signs` equal sign bits too.
void expect_ref(const ts::Array& got, const Ref& want, double tol = 0, bool signs = false) {
  ASSERT_EQ(got.shape(), want.shape);
  const std::vector<double> g = got.astype(ts::f64).to_vector<double>();
  ASSERT_EQ(g.size(), want.v.size());
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(want.v[i])) {
      EXPECT_TRUE(std::isnan(g[i])) << "at " << i << ": " << got;
      continue;
    }
    if (g[i] != want.v[i]) {  // (infinities are equal, not near)
      EXPECT_NEAR(g[i], want.v[i], tol * (1 + std::abs(want.v[i]))) << "at " << i << ": " << got;
    }
    if (signs) {
      EXPECT_EQ(std::signbit(g[i]), std::signbit(want.v[i])) << "sign at " << i << ": " << got;
    }
  }
}

ts::Array f32(const Ref& r) {
  return ts::Array(std::vector<float>(r.v.begin(), r.v.end()), r.shape);
}
ts::Array i32(const Ref& r) {
  return ts::Array(std::vector<int32_t>(r.v.begin(), r.v.end()), r.shape);
}

}  // namespace

// ---- the sort primitive ----

TEST(Sort, FloatsSortWithNansLastAndSignedZerosEqual) {
  using namespace sort_jax;
  const ts::Array x = f32(kF);
  expect_ref(ts::sort(x), kFSort, 0, true);
  expect_ref(ts::argsort(x), kFArgsort);
  expect_ref(ts::argsort(x, -1, true, true), kFArgsortDesc);
  expect_ref(ts::sort(x, -1, true, true), kFSortDesc, 0, true);
  expect_ref(ts::lax_sort({x})[0], kFSort, 0, true);
}

TEST(Sort, IntegersWithTiesAreStable) {
  using namespace sort_jax;
  const ts::Array x = i32(kI);
  expect_ref(ts::sort(x), kISort);
  expect_ref(ts::argsort(x), kIArgsort);
  expect_ref(ts::argsort(x, -1, true, true), kIArgsortDesc);
  EXPECT_EQ(ts::argsort(x).dtype(), ts::i32);
  for (ts::DType d : {ts::i8, ts::u8, ts::i16, ts::u16, ts::i64, ts::u64, ts::f16, ts::bf16, ts::f64}) {
    SCOPED_TRACE(ts::dtype_name(d));
    const ts::Array y = ts::is_unsigned_int(d) ? ts::astype(ts::abs(x), d) : ts::astype(x, d);
    const std::vector<int64_t> got = ts::argsort(y).to_vector<int64_t>();
    std::vector<int64_t> want(8);
    std::iota(want.begin(), want.end(), 0);
    const std::vector<double> v = y.astype(ts::f64).to_vector<double>();
    std::stable_sort(want.begin(), want.end(), [&](int64_t a, int64_t b) { return v[size_t(a)] < v[size_t(b)]; });
    EXPECT_EQ(got, want);
  }
  const ts::Array b = ts::Array(std::vector<bool>{true, false, true, false});
  EXPECT_EQ(ts::argsort(b).to_vector<int32_t>(), (std::vector<int32_t>{1, 3, 0, 2}));
}

TEST(Sort, SeveralOperandsOrderByTheirKeys) {
  using namespace sort_jax;
  const std::vector<ts::Array> r = ts::lax_sort({i32(kK1), f32(kK2), ts::arange(6)}, -1, true, 2);
  expect_ref(r[0], kMulti0);
  expect_ref(r[1], kMulti1);
  expect_ref(r[2], kMulti2);
  expect_ref(ts::lexsort({f32(kK2), i32(kK1)}), kLexsort);
  auto [k, v] = ts::sort_key_val(i32(kI), ts::arange(8) * 10);
  expect_ref(k, kISort);
  EXPECT_EQ(v.to_vector<int32_t>(), (std::vector<int32_t>{50, 60, 10, 40, 20, 70, 0, 30}));
}

TEST(Sort, AlongAxesAndFlattened) {
  using namespace sort_jax;
  const ts::Array x = f32(kX);
  expect_ref(ts::sort(x, 0), kXSort0);
  expect_ref(ts::argsort(x, 1), kXArgsort1);
  expect_ref(ts::sort(x, ts::none), kXSortNone);
}

TEST(Sort, ComplexOrdersByRealThenImaginary) {
  using namespace sort_jax;
  const ts::Array c = ts::complex(f32(kCre), f32(kCim));
  const ts::Array s = ts::sort(c);
  expect_ref(ts::real(s), kCSortRe);
  expect_ref(ts::imag(s), kCSortIm);
  EXPECT_EQ(ts::sort_complex(f32(kCre)).dtype(), ts::c64);
}

TEST(Sort, EmptyArrays) {
  EXPECT_EQ(ts::sort(ts::zeros({0}, ts::f32)).shape(), (ts::Shape{0}));
  EXPECT_EQ(ts::argsort(ts::zeros({3, 0}, ts::f32), 0).shape(), (ts::Shape{3, 0}));
  EXPECT_EQ(ts::sort(ts::zeros({0, 4}, ts::i32), 0).shape(), (ts::Shape{0, 4}));
  auto [v, i] = ts::top_k(ts::zeros({2, 5}), 0);
  EXPECT_EQ(v.shape(), (ts::Shape{2, 0}));
}

/// Long rows take the radix passes (and the thread arena): compare with std::stable_sort on
/// the same order.
template <class T> void check_long_row(ts::DType d, int64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<T> v(static_cast<size_t>(n));
  for (auto& e : v) {
    if constexpr (std::is_floating_point_v<T>) {
      const uint32_t r = gen();
      e = r % 97 == 0 ? T(NAN) : r % 89 == 0 ? T(-0.0) : r % 83 == 0 ? T(0.0) : T(int(r % 20001) - 10000) / T(7);
    } else {
      e = T(gen());
    }
  }
  auto key = [](T a) -> double { return std::isnan(double(a)) ? INFINITY : double(a) == 0 ? 0.0 : double(a); };
  std::vector<int64_t> want(v.size());
  std::iota(want.begin(), want.end(), 0);
  std::stable_sort(want.begin(), want.end(), [&](int64_t a, int64_t b) {
    const double x = key(v[size_t(a)]), y = key(v[size_t(b)]);
    if (std::isinf(x) && std::isinf(y) && x > 0 && y > 0) return std::isnan(double(v[size_t(a)])) < std::isnan(double(v[size_t(b)]));
    return x < y;
  });
  const ts::Array x = ts::Array(v).astype(d);
  EXPECT_EQ(ts::argsort(x).astype(ts::i64).to_vector<int64_t>(), want);
  const std::vector<T> sorted = ts::sort(x).template to_vector<T>();
  for (size_t i = 0; i < sorted.size(); ++i) {
    const T w = v[size_t(want[i])];
    if (std::isnan(double(w))) ASSERT_TRUE(std::isnan(double(sorted[i])));
    else ASSERT_EQ(std::signbit(double(sorted[i])), std::signbit(double(w))) << i;
  }
}

TEST(Sort, LongRowsOfEveryWidthMatchStableSort) {
  check_long_row<float>(ts::f32, 300000, 1);
  check_long_row<double>(ts::f64, 200000, 2);
  check_long_row<int16_t>(ts::i16, 100000, 3);
  check_long_row<uint8_t>(ts::u8, 70000, 4);
  check_long_row<int64_t>(ts::i64, 150000, 5);
  check_long_row<uint32_t>(ts::u32, 5000, 6);
}

TEST(Sort, SkewedLongRowsMatchStableSort) {
  // One binade (the top key byte is the same everywhere), two binades (two huge buckets),
  // and a few distinct values (long runs of ties).
  std::mt19937 gen(11);
  for (int mode = 0; mode < 3; ++mode) {
    SCOPED_TRACE(mode);
    std::vector<float> v(400000);
    for (auto& e : v) {
      const uint32_t r = gen();
      e = mode == 0 ? 1.0f + float(r % 1000000) / 1e6f
          : mode == 1 ? (r & 1 ? 0.5f : -0.5f) * (1.0f + float(r % 4096) / 4096.0f)
                      : float(r % 5);
    }
    std::vector<int32_t> want(v.size());
    std::iota(want.begin(), want.end(), 0);
    std::stable_sort(want.begin(), want.end(), [&](int32_t a, int32_t b) { return v[size_t(a)] < v[size_t(b)]; });
    const ts::Array x = ts::Array(v);
    ASSERT_EQ(ts::argsort(x).to_vector<int32_t>(), want);
    std::vector<float> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    ASSERT_EQ(ts::sort(x).to_vector<float>(), sorted);
  }
}

TEST(Sort, ManyRowsAndStridedRowsMatchAPerRowSort) {
  std::mt19937 gen(7);
  std::vector<float> v(64 * 3000);
  for (auto& e : v) e = float(gen() % 1000) / 10.0f;
  const ts::Array x = ts::Array(v, {64, 3000});
  const std::vector<float> rows = ts::sort(x, 1).to_vector<float>();
  const std::vector<float> cols = ts::sort(x.T(), 0).T().to_vector<float>();
  for (int r = 0; r < 64; ++r) {
    std::vector<float> want(v.begin() + r * 3000, v.begin() + (r + 1) * 3000);
    std::sort(want.begin(), want.end());
    ASSERT_TRUE(std::equal(want.begin(), want.end(), rows.begin() + r * 3000)) << r;
    ASSERT_TRUE(std::equal(want.begin(), want.end(), cols.begin() + r * 3000)) << r;
  }
  // Several keys over a long row: (a, b) lexicographic with a 64-bit second key.
  std::vector<int32_t> a(100000);
  std::vector<int64_t> b(100000);
  for (size_t i = 0; i < a.size(); ++i) a[i] = int32_t(gen() % 5), b[i] = int64_t(gen()) - (int64_t(1) << 31);
  const std::vector<ts::Array> s = ts::lax_sort({ts::Array(a), ts::Array(b), ts::arange(100000)}, 0, true, 2);
  std::vector<int32_t> want(a.size());
  std::iota(want.begin(), want.end(), 0);
  std::stable_sort(want.begin(), want.end(), [&](int32_t i, int32_t j) {
    return std::pair(a[size_t(i)], b[size_t(i)]) < std::pair(a[size_t(j)], b[size_t(j)]);
  });
  EXPECT_EQ(s[2].to_vector<int32_t>(), want);
}

// ---- top_k and partitions ----

TEST(TopK, UsesTheTotalOrderAndLowerPositionsFirst) {
  using namespace sort_jax;
  auto [v, i] = ts::top_k(f32(kF), 6);
  expect_ref(v, kFTopkValues, 0, true);
  expect_ref(i, kFTopkIndices);
  EXPECT_EQ(i.dtype(), ts::i32);
  auto [v0, i0] = ts::top_k(f32(kX), 2, 0);
  EXPECT_EQ(v0.shape(), (ts::Shape{2, 4}));
  EXPECT_EQ(i0.to_vector<int32_t>(), (std::vector<int32_t>{0, 2, 0, 1, 2, 0, 1, 0}));
  EXPECT_THROW(ts::top_k(f32(kF), 12), ts::ValueError);
  EXPECT_THROW(ts::top_k(ts::complex(f32(kCre), f32(kCim)), 1), ts::DTypeError);
}

TEST(TopK, PartitionAndArgpartitionMatchJax) {
  using namespace sort_jax;
  expect_ref(ts::partition(i32(kI), 3), kIPartition3);
  expect_ref(ts::argpartition(i32(kI), 3), kIArgpartition3);
  expect_ref(ts::partition(f32(kF), 4), kFPartition4, 0, true);
  const ts::Array p = ts::partition(f32(kX), 1, 0);
  EXPECT_EQ(p.shape(), (ts::Shape{3, 4}));
  EXPECT_THROW(ts::partition(i32(kI), 8), ts::ValueError);
}

// ---- searching ----

TEST(Search, SearchsortedSidesAndMethods) {
  using namespace sort_jax;
  const ts::Array a = f32(kA), v = f32(kV);
  for (const char* m : {"scan", "scan_unrolled", "sort", "compare_all"}) {
    SCOPED_TRACE(m);
    expect_ref(ts::searchsorted(a, v, "left", ts::Array(), m), kSearchLeft);
    expect_ref(ts::searchsorted(a, v, "right", ts::Array(), m), kSearchRight);
  }
  // A sorter: positions that sort a shuffled `a`.
  const ts::Array shuffled = ts::Array(std::vector<float>{3.f, NAN, 1.f, 2.f, 2.f});
  expect_ref(ts::searchsorted(shuffled, v, "left", ts::argsort(shuffled)), kSearchLeft);
  EXPECT_EQ(ts::searchsorted(ts::zeros({0}), v).to_vector<int32_t>(), std::vector<int32_t>(7, 0));
  EXPECT_THROW(ts::searchsorted(a, v, "middle"), ts::ValueError);
  EXPECT_THROW(ts::searchsorted(a, v, "left", ts::Array(), "bisect"), ts::ValueError);
  EXPECT_THROW(ts::searchsorted(f32(kX), v), ts::ShapeError);
}

TEST(Search, Digitize) {
  using namespace sort_jax;
  const ts::Array bins = ts::Array(std::vector<float>{0.f, 1.f, 2.5f, 4.f});
  expect_ref(ts::digitize(f32(kH), bins), kDigitize);
  expect_ref(ts::digitize(f32(kH), bins, true), kDigitizeRight);
  expect_ref(ts::digitize(f32(kH), ts::flip(bins)), kDigitizeDown);
}

TEST(Search, NonzeroArgwhereFlatnonzero) {
  using namespace sort_jax;
  const ts::Array n = f32(kN);
  std::vector<ts::Array> nz = ts::nonzero(n);
  expect_ref(nz[0], kNonzero0);
  expect_ref(nz[1], kNonzero1);
  nz = ts::where(n, {.size = 5});
  expect_ref(nz[0], kNonzero5_0);
  expect_ref(nz[1], kNonzero5_1);
  expect_ref(ts::nonzero(n, {.size = 5, .fill_value = -1})[1], kNonzero5Fill_1);
  expect_ref(ts::argwhere(n), kArgwhere);
  expect_ref(ts::flatnonzero(n, {.size = 2}), kFlatnonzero2);
  EXPECT_EQ(ts::argwhere(ts::Array(3.0f)).shape(), (ts::Shape{1, 0}));
  EXPECT_EQ(ts::nonzero(ts::zeros({2, 2}))[0].shape(), (ts::Shape{0}));
  EXPECT_THROW(ts::nonzero(ts::Array(1.0f)), ts::ShapeError);
}

// ---- unique, counting, histograms ----

TEST(Unique, FlatWithEveryReturn) {
  using namespace sort_jax;
  const ts::Array u = f32(kU);
  ts::UniqueResult r = ts::unique(u, {.return_index = true, .return_inverse = true, .return_counts = true});
  expect_ref(r.values, kUValues, 0, true);
  expect_ref(r.indices, kUIndex);
  expect_ref(r.inverse, kUInverse);
  expect_ref(r.counts, kUCounts);
  r = ts::unique(u, {.return_index = true, .return_counts = true, .size = 7, .fill_value = -9});
  expect_ref(r.values, kUValues7);
  expect_ref(r.indices, kUIndex7);
  expect_ref(r.counts, kUCounts7);
  EXPECT_FALSE(r.inverse.valid());
  expect_ref(ts::unique(u, {.size = 7}).values, kUValues7Default, 0, true);
  expect_ref(ts::unique(u, {.equal_nan = false}).values, kUValuesNoEqualNan);
  EXPECT_EQ(ts::unique(ts::zeros({0})).values.shape(), (ts::Shape{0}));
  EXPECT_THROW(ts::unique(ts::zeros({0}), {.size = 2}), ts::ValueError);
}

TEST(Unique, ArrayApiForms) {
  using namespace sort_jax;
  const ts::Array u = ts::reshape(f32(kU), {3, 3});
  const ts::UniqueResult r = ts::unique_all(u);
  expect_ref(r.values, kUAllValues);
  expect_ref(r.indices, kUAllIndices);
  expect_ref(r.inverse, kUAllInverse);
  expect_ref(r.counts, kUAllCounts);
  EXPECT_FALSE(ts::unique_counts(u).inverse.valid());
  expect_ref(ts::unique_counts(u).counts, kUAllCounts);
  expect_ref(ts::unique_inverse(u).inverse, kUAllInverse);
  expect_ref(ts::unique_values(f32(kU), {.size = 8, .fill_value = 7}), kUValuesSize);
}

TEST(Unique, AlongAnAxis) {
  using namespace sort_jax;
  const ts::UniqueResult r = ts::unique(i32(kM), {.return_inverse = true, .return_counts = true, .axis = 0});
  expect_ref(r.values, kMUnique0);
  expect_ref(r.inverse, kMInverse0);
  expect_ref(r.counts, kMCounts0);
}

TEST(Unique, BincountAndHistograms) {
  using namespace sort_jax;
  expect_ref(ts::bincount(i32(kB)), kBincount);
  expect_ref(ts::bincount(i32(kB), f32(kW), 0, 5), kBincountW5);
  EXPECT_EQ(ts::bincount(i32(kB), ts::Array(), 10).shape(), (ts::Shape{10}));
  auto [h, e] = ts::histogram(f32(kH), 4, {.range = std::pair(0.0, 4.0)});
  expect_ref(h, kHist4);
  expect_ref(e, kHistEdges4);
  const ts::Array h8 = ts::slice(f32(kH), {0}, {8});
  auto [hd, ed] = ts::histogram(h8, 3, {.weights = ts::arange(0.0, 8.0), .density = true});
  expect_ref(hd, kHistDensity, 1e-6);
  expect_ref(ed, kHistDensityEdges, 1e-6);
  expect_ref(ts::histogram_bin_edges(h8, 3), kHistDensityEdges, 1e-6);
  expect_ref(ts::histogram(f32(kH), ts::Array(std::vector<float>{0.f, 1.f, 2.5f, 4.f})).first, kHistEdgesGiven);
  EXPECT_THROW(ts::bincount(f32(kW)), ts::DTypeError);
}

// ---- order statistics ----

TEST(Quantile, EveryMethodAndItsNanForm) {
  using namespace sort_jax;
  const ts::Array q = f32(kQ), qs = f32(kQs);
  const std::vector<std::pair<const char*, std::pair<const Ref*, const Ref*>>> methods = {
      {"linear", {&kQuantile_linear, &kNanquantile_linear}},
      {"lower", {&kQuantile_lower, &kNanquantile_lower}},
      {"higher", {&kQuantile_higher, &kNanquantile_higher}},
      {"midpoint", {&kQuantile_midpoint, &kNanquantile_midpoint}},
      {"nearest", {&kQuantile_nearest, &kNanquantile_nearest}},
      {"inverted_cdf", {&kQuantile_inverted_cdf, &kNanquantile_inverted_cdf}}};
  for (const auto& [m, refs] : methods) {
    SCOPED_TRACE(m);
    expect_ref(ts::quantile(q, qs, {1}, m), *refs.first, 1e-6);
    expect_ref(ts::nanquantile(q, qs, {1}, m), *refs.second, 1e-6);
  }
  expect_ref(ts::quantile(q, qs, {1}, "inverted_cdf", false, f32(kQW)), kQuantileWeighted);
  expect_ref(ts::nanquantile(q, qs, {1}, "inverted_cdf", false, f32(kQW2)), kNanquantileWeighted2);
  expect_ref(ts::percentile(ts::slice(q, {0, 0}, {2, 5}), ts::Array(30.0f), {1}, "inverted_cdf", false,
                            ts::slice(f32(kQW2), {0, 0}, {2, 5})),
             kPercentileWeighted);
  EXPECT_THROW(ts::quantile(q, qs, {1}, "linear", false, f32(kQW)), ts::NotImplementedError);
  EXPECT_THROW(ts::quantile(q, qs, {0}, "inverted_cdf", false, f32(kQW)), ts::ShapeError);
  const ts::Array q2 = ts::slice(q, {0, 0}, {2, 5});
  expect_ref(ts::quantile(q2, ts::Array(0.3f)), kQuantileAll, 1e-6);
  expect_ref(ts::quantile(q, ts::Array(0.7f), {0}, "linear", true), kQuantileAxis0Keep, 1e-6);
  expect_ref(ts::median(q, {1}), kMedian1);
  expect_ref(ts::nanmedian(q, {0}), kNanmedian0);
  expect_ref(ts::percentile(q2, ts::Array(std::vector<float>{10.f, 50.f}), {1}), kPercentile, 1e-6);
  expect_ref(ts::nanpercentile(q, ts::Array(40.0f)), kNanpercentileAll, 1e-6);
  expect_ref(ts::median(i32(kI)), kMedianInt);
  EXPECT_EQ(ts::median(i32(kI)).dtype(), ts::f32);
  EXPECT_THROW(ts::quantile(q, qs, {1}, "cubic"), ts::ValueError);
  EXPECT_THROW(ts::quantile(q, f32(kX)), ts::ShapeError);
}

// ---- set operations ----

TEST(SetOps, IsinIntersectUnionSetdiff) {
  using namespace sort_jax;
  expect_ref(ts::isin(f32(kH), f32(kT)), kIsin);
  expect_ref(ts::isin(f32(kH), f32(kT), false, true), kIsinInvert);
  EXPECT_EQ(ts::isin(f32(kX), f32(kT)).shape(), (ts::Shape{3, 4}));
  const ts::Array s1 = f32(kS1), s2 = f32(kS2);
  expect_ref(ts::intersect1d(s1, s2), kIntersect);
  expect_ref(ts::intersect1d(s1, s2, false, {.size = 6}), kIntersect6);
  expect_ref(ts::intersect1d(s1, s2, false, {.size = 6, .fill_value = -1}), kIntersect6Fill);
  ts::Intersect1dResult r = ts::intersect1d_indices(s1, s2);
  expect_ref(r.values, kIntersect);
  expect_ref(r.indices1, kIntersectIdx1);
  expect_ref(r.indices2, kIntersectIdx2);
  r = ts::intersect1d_indices(s1, s2, false, {.size = 5});
  expect_ref(r.values, kIntersect5Values);
  expect_ref(r.indices1, kIntersect5Idx1);
  expect_ref(r.indices2, kIntersect5Idx2);
  r = ts::intersect1d_indices(ts::Array(std::vector<float>{4.f, 2.f, 9.f, 0.f}),
                              ts::Array(std::vector<float>{3.f, 0.f, 9.f, 5.f}), true);
  expect_ref(r.values, kIntersectUniqueValues);
  expect_ref(r.indices1, kIntersectUniqueIdx1);
  expect_ref(r.indices2, kIntersectUniqueIdx2);
  expect_ref(ts::union1d(s1, s2), kUnion);
  expect_ref(ts::union1d(s1, s2, {.size = 9, .fill_value = 100}), kUnion9);
  expect_ref(ts::setdiff1d(s1, s2), kSetdiff);
  expect_ref(ts::setdiff1d(s1, s2, false, {.size = 5}), kSetdiff5);
  expect_ref(ts::setdiff1d(ts::Array(std::vector<float>{4.f, 2.f, 9.f}), s2, true), kSetdiffUnique);
}

// ---- transformations ----

TEST(SortTransforms, JitMatchesEagerAndNeedsSizeForValueDependentLengths) {
  using namespace sort_jax;
  const ts::Array u = f32(kU);
  auto sorted = ts::jit([](const ts::Array& x) { return ts::sort(x, -1, true, true); });
  expect_ref(sorted(f32(kF)), kFSortDesc, 0, true);
  auto uniq = ts::jit([](const ts::Array& x) { return ts::unique(x, {.size = 7, .fill_value = -9}).values; });
  expect_ref(uniq(u), kUValues7);
  auto quant = ts::jit([](const ts::Array& x) { return ts::nanquantile(x, ts::Array(0.25f), {1}, "nearest"); });
  EXPECT_EQ(quant(f32(kQ)).to_vector<float>(), (std::vector<float>{1.f, 3.f, 7.f}));
  auto inter = ts::jit([](const ts::Array& a, const ts::Array& b) { return ts::intersect1d(a, b, false, {.size = 6}); });
  expect_ref(inter(f32(kS1), f32(kS2)), kIntersect6);
  auto bad = ts::jit([](const ts::Array& x) { return ts::unique(x).values; });
  try {
    bad(u);
    ADD_FAILURE() << "unique under jit without size did not throw";
  } catch (const ts::ConcretizationError& e) {
    EXPECT_NE(std::string(e.what()).find("size"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("unique"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ts::jit([](const ts::Array& x) { return ts::flatnonzero(x); })(u), ts::ConcretizationError);
  EXPECT_THROW(ts::jit([](const ts::Array& x) { return ts::bincount(x); })(i32(kB)), ts::ConcretizationError);
  EXPECT_EQ(ts::jit([](const ts::Array& x) { return ts::bincount(x, ts::Array(), 0, 8); })(i32(kB)).shape(),
            (ts::Shape{8}));
}

TEST(SortTransforms, VmapMatchesRowByRow) {
  const ts::Array x = f32(sort_jax::kX);
  const ts::Array batched = ts::vmap([](const ts::Array& r) { return ts::argsort(r); })(x);
  EXPECT_EQ(batched.to_vector<int32_t>(), ts::argsort(x, 1).to_vector<int32_t>());
  const ts::Array cols = ts::vmap([](const ts::Array& c) { return ts::sort(c); }, {1}, {1})(x);
  EXPECT_EQ(cols.shape(), (ts::Shape{3, 4}));
  EXPECT_EQ(ts::isnan(cols).to_vector<bool>(), ts::isnan(ts::sort(x, 0)).to_vector<bool>());
  // An unbatched key sorted together with a batched value.
  const ts::Array keys = ts::Array(std::vector<float>{2.f, 0.f, 1.f, 3.f});
  const ts::Array vals = ts::vmap([&](const ts::Array& v) { return ts::sort_key_val(keys, v).second; })(x);
  EXPECT_EQ(ts::isnan(vals).to_vector<bool>(), ts::isnan(ts::take(x, ts::Array({1, 2, 0, 3}), 1)).to_vector<bool>());
  auto [tv, ti] = [&] {
    auto r = ts::vmap([](const ts::Array& c) {
      auto [v, i] = ts::top_k(c, 2);
      return ts::stack({v, ts::astype(i, ts::f32)});
    }, {1}, {0})(x);
    return std::pair(ts::slice(r, {0, 0, 0}, {4, 1, 2}), ts::slice(r, {0, 1, 0}, {4, 2, 2}));
  }();
  EXPECT_EQ(tv.shape(), (ts::Shape{4, 1, 2}));
  EXPECT_EQ(ts::reshape(ti, {4, 2}).to_vector<float>(), (std::vector<float>{0, 2, 2, 0, 0, 1, 1, 0}));  // top_k of each column
  // Value-dependent lengths under vmap, with a size (JAX's values).
  const ts::Array m = ts::Array({{3.f, 1.f, 3.f, 2.f}, {5.f, 5.f, 5.f, 0.f}});
  EXPECT_EQ(ts::vmap([](const ts::Array& r) { return ts::unique(r, {.size = 4, .fill_value = -1.f}).values; })(m)
                .to_vector<float>(),
            (std::vector<float>{1, 2, 3, -1, 0, 5, -1, -1}));
  EXPECT_EQ(ts::vmap([](const ts::Array& r) { return ts::nonzero(r - 3.f, {.size = 4})[0]; })(m).to_vector<int32_t>(),
            (std::vector<int32_t>{1, 3, 0, 0, 0, 1, 2, 3}));
  EXPECT_EQ(ts::vmap([](const ts::Array& r) { return ts::searchsorted(ts::Array({1.f, 2.f, 3.f}), r); })(m)
                .to_vector<int32_t>(),
            (std::vector<int32_t>{2, 0, 2, 1, 3, 3, 3, 0}));
}

TEST(SortTransforms, GradientsMatchJax) {
  using namespace sort_jax;
  const ts::Array g = f32(kG), w = f32(kGW);
  expect_ref(ts::grad([&](const ts::Array& x) { return ts::sum(ts::sort(x) * w); })(g), kGradSort, 1e-6);
  expect_ref(ts::grad([&](const ts::Array& x) {
               return ts::sum(ts::square(ts::take(x, ts::argsort(-x), 0)) * w);
             })(g),
             kGradArgsortGather, 1e-5);
  expect_ref(ts::grad([&](const ts::Array& x) {
               return ts::sum(ts::top_k(x, 3).first * ts::slice(w, {0}, {3}));
             })(g),
             kGradTopk, 1e-6);
  expect_ref(ts::grad([](const ts::Array& x) { return ts::quantile(x, ts::Array(0.3f)); })(g), kGradQuantile, 1e-6);
  EXPECT_EQ(ts::jit(ts::grad([](const ts::Array& x) { return ts::median(x); }))(ts::Array({3.f, 1.f, 4.f, 2.f}))
                .to_vector<float>(),
            (std::vector<float>{0.5f, 0, 0, 0.5f}));
  expect_ref(ts::grad([&](const ts::Array& x) { return ts::sum(ts::lax_sort({ts::flip(x), x}, -1, true, 1)[1] * w); })(g),
             kGradMulti, 1e-6);
  // Under jit and vmap too.
  auto per_row = ts::vmap(ts::grad([](const ts::Array& x) { return ts::sum(ts::sort(x) * ts::arange(0.0, 4.0)); }));
  const ts::Array rows = ts::jit([&](const ts::Array& x) { return per_row(x); })(ts::Array({{4.f, 1.f, 3.f, 2.f}, {0.f, 5.f, -1.f, 2.f}}));
  EXPECT_EQ(rows.to_vector<float>(), (std::vector<float>{3, 0, 2, 1, 1, 3, 0, 2}));
}

TEST(SortErrors, NameTheFunctionAndTheProblem) {
  try {
    ts::lax_sort({ts::zeros({3}), ts::zeros({4})});
    ADD_FAILURE();
  } catch (const ts::ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("sort: all operands must have one shape"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ts::lax_sort({ts::zeros({3})}, -1, true, 2), ts::ValueError);
  EXPECT_THROW(ts::sort(ts::zeros({3}), 1), ts::IndexError);
  EXPECT_THROW(ts::sort(ts::Array(1.0f)), ts::ShapeError);
  EXPECT_NO_THROW(ts::sort(ts::Array(1.0f), ts::none));
  EXPECT_THROW(ts::lexsort({}), ts::ValueError);
  EXPECT_THROW(ts::partition(ts::zeros({4}, ts::c64), 1), ts::DTypeError);
}

// ---- sharding ----

namespace {

const ts::Mesh& mesh8() {
  static const ts::Mesh m = ts::make_mesh({8}, {"x"});
  return m;
}

}  // namespace

TEST(SortSharding, AnUnsplitDimensionStaysPartitioned) {
  std::mt19937 gen(3);
  std::vector<float> v(16 * 50);
  for (auto& e : v) e = float(gen() % 997) / 3.0f;
  const ts::Array x = ts::Array(v, {16, 50});
  const ts::NamedSharding rows(mesh8(), ts::P("x", ts::none));
  auto f = ts::jit([](const ts::Array& a) { return ts::sort(a, 1) + ts::astype(ts::argsort(a, 1), ts::f32); },
                   {.in_shardings = {rows}});
  const std::string text = f.lower(x).compile().as_text();
  EXPECT_EQ(text.find("all_gather"), std::string::npos) << text;
  EXPECT_EQ(text.find("all_to_all"), std::string::npos) << text;
  const ts::Array got = f(ts::device_put(x, rows));
  EXPECT_EQ(got.to_vector<float>(), (ts::sort(x, 1) + ts::astype(ts::argsort(x, 1), ts::f32)).to_vector<float>());
  auto g = ts::jit([](const ts::Array& a) { return ts::top_k(a, 3).first; }, {.in_shardings = {rows}});
  EXPECT_EQ(g.lower(x).compile().as_text().find("all_gather"), std::string::npos);
  EXPECT_EQ(g(x).to_vector<float>(), ts::top_k(x, 3).first.to_vector<float>());
}

TEST(SortSharding, ASplitDimensionIsGatheredAndLogged) {
  const ts::Array x = ts::Array(std::vector<float>{5, 3, 9, 1, 7, 2, 8, 6, 4, 0, 11, 10, 15, 13, 12, 14});
  const ts::NamedSharding split(mesh8(), ts::P("x"));
  auto f = ts::jit([](const ts::Array& a) { return ts::sort(a); }, {.in_shardings = {split}});
  const ts::detail::LogLevel before = ts::detail::log_level();
  ts::detail::set_log_level(ts::detail::LogLevel::kInfo);
  ::testing::internal::CaptureStderr();
  const ts::Array got = f(ts::device_put(x, split));
  got.block_until_ready();
  const std::string err = ::testing::internal::GetCapturedStderr();
  ts::detail::set_log_level(before);
  EXPECT_EQ(got.to_vector<float>(), ts::sort(x).to_vector<float>());
  EXPECT_NE(err.find("sort along dimension 0 split over x: no partitioned form"), std::string::npos) << err;
}
