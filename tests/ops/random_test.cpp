// tessel::random: Threefry known-answer vectors, JAX's published keys, exact bit layouts
// against a reference written here from the Random123 spec, and statistical sanity checks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "tessel/random.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace tr = tessel::random;

namespace {

// Reference Threefry-2x32-20, written from the Random123 paper independently of the kernel.
std::pair<uint32_t, uint32_t> ref_threefry(uint32_t k0, uint32_t k1, uint32_t x0, uint32_t x1) {
  const uint32_t k2 = k0 ^ k1 ^ 0x1BD11BDAu;
  const uint32_t ks[3] = {k0, k1, k2};
  const int rot[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  x0 += k0;
  x1 += k1;
  for (int round = 0; round < 20; ++round) {
    x0 += x1;
    const int r = rot[round % 8];
    x1 = ((x1 << r) | (x1 >> (32 - r))) ^ x0;
    if (round % 4 == 3) {
      const uint32_t s = uint32_t(round / 4 + 1);
      x0 += ks[s % 3];
      x1 += ks[(s + 1) % 3] + s;
    }
  }
  return {x0, x1};
}

ts::Array u32s(std::vector<uint32_t> v) { return ts::Array(v); }
ts::Array u32(uint32_t v) { return ts::Array(ts::Scalar(v)); }

std::vector<uint32_t> key_of(const ts::Array& k) { return k.to_vector<uint32_t>(); }

}  // namespace

TEST(Random, ThreefryMatchesRandom123KnownAnswers) {
  struct Case {
    uint32_t k0, k1, x0, x1, y0, y1;
  };
  const Case cases[] = {
      {0, 0, 0, 0, 0x6b200159u, 0x99ba4efeu},
      {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0x1cb996fcu, 0xbb002be7u},
      {0x13198a2eu, 0x03707344u, 0x243f6a88u, 0x85a308d3u, 0xc4923a9cu, 0x483df7a0u},
  };
  // One call with the three cases side by side, and each case with rank-0 operands.
  std::vector<uint32_t> k0, k1, x0, x1;
  for (const Case& c : cases) {
    k0.push_back(c.k0), k1.push_back(c.k1), x0.push_back(c.x0), x1.push_back(c.x1);
    auto [a, b] = tr::threefry2x32(u32(c.k0), u32(c.k1), u32(c.x0), u32(c.x1));
    EXPECT_EQ(a.item<uint32_t>(), c.y0);
    EXPECT_EQ(b.item<uint32_t>(), c.y1);
    EXPECT_EQ(ref_threefry(c.k0, c.k1, c.x0, c.x1), std::make_pair(c.y0, c.y1));
  }
  auto [a, b] = tr::threefry2x32(u32s(k0), u32s(k1), u32s(x0), u32s(x1));
  EXPECT_EQ(a.to_vector<uint32_t>(), (std::vector<uint32_t>{0x6b200159u, 0x1cb996fcu, 0xc4923a9cu}));
  EXPECT_EQ(b.to_vector<uint32_t>(), (std::vector<uint32_t>{0x99ba4efeu, 0xbb002be7u, 0x483df7a0u}));
}

TEST(Random, ThreefryBroadcastsRankZeroOperandsAndReadsSlicedInputs) {
  // Counters taken from a strided slice of a 2-D array (a non-contiguous view in NumPy terms).
  ts::Array grid = ts::reshape(ts::iota(ts::u32, {24}), {4, 6});
  ts::Array x1 = ts::slice(grid, {1, 0}, {4, 6}, {1, 2});  // shape (3, 3)
  auto [a, b] = tr::threefry2x32(u32(7), u32(9), u32(3), x1);
  ASSERT_EQ(a.shape(), (ts::Shape{3, 3}));
  auto xs = x1.to_vector<uint32_t>();
  auto av = a.to_vector<uint32_t>(), bv = b.to_vector<uint32_t>();
  for (size_t i = 0; i < xs.size(); ++i) {
    EXPECT_EQ(xs[i], uint32_t(6 * (1 + i / 3) + 2 * (i % 3)));
    EXPECT_EQ(std::make_pair(av[i], bv[i]), ref_threefry(7, 9, 3, xs[i]));
  }
}

TEST(Random, ThreefryLaneBlocksAndThreadSplitsEqualTheScalarReference) {
  // The kernel hashes blocks of 64 lanes with vector code and splits the points over the
  // intra-op arena: sizes around a block (63, 64, 65), a ragged tail over several blocks and
  // one over many parallel chunks, with per-point keys (as a vmapped split) and with the
  // rank-0 mixes of a draw (scalar key words and high counter word), under jit and eagerly.
  for (int64_t n : {int64_t(1), int64_t(63), int64_t(64), int64_t(65), int64_t(1000), int64_t(300001)}) {
    const size_t count = static_cast<size_t>(n);
    std::vector<uint32_t> k0(count), k1(count), x0(count), x1(count);
    for (int64_t i = 0; i < n; ++i) {
      k0[size_t(i)] = uint32_t(i * 2654435761u);
      k1[size_t(i)] = uint32_t(~i);
      x0[size_t(i)] = uint32_t(i >> 3);
      x1[size_t(i)] = uint32_t(i * 40503u + 17);
    }
    auto u32s = [n](const std::vector<uint32_t>& v) { return ts::Array(v, {n}); };
    auto hash = [](const ts::Array& a, const ts::Array& b, const ts::Array& c, const ts::Array& d) {
      auto [o0, o1] = tr::threefry2x32(a, b, c, d);
      return std::vector<ts::Array>{o0, o1};
    };
    auto jitted = ts::jit([&](const ts::Array& a, const ts::Array& b, const ts::Array& c, const ts::Array& d) {
      return hash(a, b, c, d);
    });
    for (bool use_jit : {false, true}) {
      const auto per_point = use_jit ? jitted(u32s(k0), u32s(k1), u32s(x0), u32s(x1))
                                     : hash(u32s(k0), u32s(k1), u32s(x0), u32s(x1));
      const auto mixed = use_jit ? jitted(u32(11), u32(0xdeadbeefu), u32(0), u32s(x1))
                                 : hash(u32(11), u32(0xdeadbeefu), u32(0), u32s(x1));
      const auto a = per_point[0].to_vector<uint32_t>(), b = per_point[1].to_vector<uint32_t>();
      const auto c = mixed[0].to_vector<uint32_t>(), d = mixed[1].to_vector<uint32_t>();
      for (size_t i = 0; i < size_t(n); ++i) {
        ASSERT_EQ(std::make_pair(a[i], b[i]), ref_threefry(k0[i], k1[i], x0[i], x1[i])) << "n " << n << " point " << i;
        ASSERT_EQ(std::make_pair(c[i], d[i]), ref_threefry(11, 0xdeadbeefu, 0, x1[i])) << "n " << n << " point " << i;
      }
    }
  }
}

TEST(Random, BoundedFloat32UniformRoundsLikeXlasFusedMultiplyAdd) {
  // jax.random.uniform(PRNGKey(42), (8,), float32, -3.5, 1.25) under JAX 0.10.2: XLA fuses
  // f * (maxval - minval) + minval into one multiply-add, and 5 of these 8 samples differ
  // from the two-rounding product-then-sum.
  const ts::Array u = tr::uniform(tr::key(42), {8}, ts::f32, ts::Array(-3.5f), ts::Array(1.25f));
  EXPECT_EQ(ts::bitcast_convert_type(u, ts::u32).to_vector<uint32_t>(),
            (std::vector<uint32_t>{0xbf96dd55u, 0xbe8abbb8u, 0xbf129d26u, 0xbf55cdf0u, 0xbfae0211u, 0xbf37964eu,
                                   0xc0494208u, 0x3e3a3facu}));
  auto jitted = ts::jit([](const ts::Array& k) {
    return tr::uniform(k, {8}, ts::f32, ts::Array(-3.5f), ts::Array(1.25f));
  });
  EXPECT_EQ(ts::bitcast_convert_type(jitted(tr::key(42)), ts::u32).to_vector<uint32_t>(),
            ts::bitcast_convert_type(u, ts::u32).to_vector<uint32_t>());
}

TEST(Random, KeyHoldsHighAndLowWordsOfTheSeed) {
  EXPECT_EQ(key_of(tr::key(0)), (std::vector<uint32_t>{0, 0}));
  EXPECT_EQ(key_of(tr::key(42)), (std::vector<uint32_t>{0, 42}));
  EXPECT_EQ(key_of(tr::key((int64_t(3) << 32) | 5)), (std::vector<uint32_t>{3, 5}));
  EXPECT_EQ(key_of(tr::key(-1)), (std::vector<uint32_t>{0xffffffffu, 0xffffffffu}));
  EXPECT_EQ(tr::key(1).dtype(), ts::u32);
  EXPECT_EQ(tr::key(1).shape(), (ts::Shape{2}));
}

TEST(Random, SplitOfKeyZeroMatchesJax) {
  // jax.random.split(jax.random.PRNGKey(0)) with jax_threefry_partitionable=True (JAX >= 0.5).
  ts::Array ks = tr::split(tr::key(0));
  ASSERT_EQ(ks.shape(), (ts::Shape{2, 2}));
  EXPECT_EQ(ks.to_vector<uint32_t>(), (std::vector<uint32_t>{1797259609u, 2579123966u, 928981903u, 3453687069u}));
}

TEST(Random, ThreefryPairsCounterHalvesLikeJaxOriginalSplit) {
  // JAX's original (pre-0.5) split is threefry_2x32(key, iota(4)).reshape(2, 2); its output
  // for PRNGKey(0) is the long-published [[4146024105, 967050713], [2718843009, 1272950319]].
  ts::Array ks = ts::reshape(tr::threefry_2x32(tr::key(0), ts::iota(ts::u32, {4})), {2, 2});
  EXPECT_EQ(ks.to_vector<uint32_t>(), (std::vector<uint32_t>{4146024105u, 967050713u, 2718843009u, 1272950319u}));
  // An odd count is padded with a zero counter, and the padding dropped again.
  ts::Array odd = tr::threefry_2x32(tr::key(5), ts::iota(ts::u32, {3}));
  auto v = odd.to_vector<uint32_t>();
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0], ref_threefry(0, 5, 0, 2).first);
  EXPECT_EQ(v[1], ref_threefry(0, 5, 1, 0).first);
  EXPECT_EQ(v[2], ref_threefry(0, 5, 0, 2).second);
}

TEST(Random, SplitRowsHashTheCounters) {
  ts::Array ks = tr::split(tr::key(17), 5);
  ASSERT_EQ(ks.shape(), (ts::Shape{5, 2}));
  auto v = ks.to_vector<uint32_t>();
  for (uint32_t i = 0; i < 5; ++i) {
    auto [a, b] = ref_threefry(0, 17, 0, i);
    EXPECT_EQ(v[2 * i], a);
    EXPECT_EQ(v[2 * i + 1], b);
  }
  EXPECT_EQ(tr::split(tr::key(17), 0).shape(), (ts::Shape{0, 2}));
}

TEST(Random, FoldInHashesZeroAndData) {
  ts::Array k = tr::key(3);
  auto [a, b] = ref_threefry(0, 3, 0, 12345);
  EXPECT_EQ(key_of(tr::fold_in(k, 12345)), (std::vector<uint32_t>{a, b}));
  // JAX defines fold_in as threefry_2x32(key, [0, data]).
  EXPECT_EQ(key_of(tr::fold_in(k, 7)), key_of(tr::threefry_2x32(k, u32s({0, 7}))));
  EXPECT_NE(key_of(tr::fold_in(k, 1)), key_of(tr::fold_in(k, 2)));
}

TEST(Random, BitsOfEachWidthComeFromBothWords) {
  ts::Array k = tr::key(99);
  const ts::Shape shape{2, 3};
  auto expect_words = [&](auto combine, ts::DType dt) {
    ts::Array b = tr::bits(k, shape, dt);
    EXPECT_EQ(b.dtype(), dt);
    EXPECT_EQ(b.shape(), shape);
    auto v = b.to_vector<uint64_t>();
    for (uint32_t i = 0; i < 6; ++i) {
      auto [w0, w1] = ref_threefry(0, 99, 0, i);
      EXPECT_EQ(v[i], combine(w0, w1)) << ts::dtype_name(dt) << " element " << i;
    }
  };
  expect_words([](uint32_t a, uint32_t b) { return uint64_t(a ^ b); }, ts::u32);
  expect_words([](uint32_t a, uint32_t b) { return uint64_t(uint16_t(a ^ b)); }, ts::u16);
  expect_words([](uint32_t a, uint32_t b) { return uint64_t(uint8_t(a ^ b)); }, ts::u8);
  expect_words([](uint32_t a, uint32_t b) { return (uint64_t(a) << 32) | b; }, ts::u64);
  EXPECT_EQ(tr::bits(k).shape(), ts::Shape{});
}

TEST(Random, UniformUsesTheMantissaBits) {
  ts::Array k = tr::key(1);
  auto f32 = tr::uniform(k, {8}).to_vector<float>();
  auto f64 = tr::uniform(k, {8}, ts::f64).to_vector<double>();
  for (uint32_t i = 0; i < 8; ++i) {
    auto [w0, w1] = ref_threefry(0, 1, 0, i);
    uint32_t b32 = ((w0 ^ w1) >> 9) | 0x3f800000u;
    float f;
    std::memcpy(&f, &b32, 4);
    EXPECT_EQ(f32[i], f - 1.0f);
    uint64_t b64 = (((uint64_t(w0) << 32) | w1) >> 12) | 0x3ff0000000000000ull;
    double d;
    std::memcpy(&d, &b64, 8);
    EXPECT_EQ(f64[i], d - 1.0);
  }
}

class RandomFloat : public ::testing::TestWithParam<ts::DType> {};

TEST_P(RandomFloat, UniformLiesInRangeWithMeanOneHalf) {
  const ts::DType dt = GetParam();
  const int64_t n = 100000;
  ts::Array u = tr::uniform(tr::key(0), {n}, dt);
  EXPECT_EQ(u.dtype(), dt);
  auto v = u.to_vector<double>();
  double sum = 0, sq = 0;
  for (double x : v) {
    ASSERT_GE(x, 0.0);
    ASSERT_LT(x, 1.0);
    sum += x;
    sq += x * x;
  }
  const double mean = sum / n, var = sq / n - mean * mean;
  EXPECT_NEAR(mean, 0.5, 4 * std::sqrt(1.0 / 12 / n));
  EXPECT_NEAR(var, 1.0 / 12, 0.005);
}

TEST_P(RandomFloat, NormalHasMeanZeroAndVarianceOne) {
  const ts::DType dt = GetParam();
  const int64_t n = 100000;
  auto v = tr::normal(tr::key(1), {n}, dt).to_vector<double>();
  double sum = 0, sq = 0;
  for (double x : v) {
    ASSERT_TRUE(std::isfinite(x));
    sum += x;
    sq += x * x;
  }
  const double mean = sum / n, var = sq / n - mean * mean;
  EXPECT_NEAR(mean, 0.0, 4 / std::sqrt(double(n)));
  EXPECT_NEAR(var, 1.0, 4 * std::sqrt(2.0 / n) + (ts::itemsize(dt) == 2 ? 0.01 : 0.0));
}

INSTANTIATE_TEST_SUITE_P(Dtypes, RandomFloat, ::testing::Values(ts::f16, ts::bf16, ts::f32, ts::f64),
                         [](const auto& info) { return std::string(ts::dtype_name(info.param)); });

TEST(Random, UniformHonoursMinvalAndMaxval) {
  auto v = tr::uniform(tr::key(4), {1000}, ts::f32, -3.0, 5.0).to_vector<float>();
  float lo = 1e9f, hi = -1e9f;
  for (float x : v) lo = std::min(lo, x), hi = std::max(hi, x);
  EXPECT_GE(lo, -3.0f);
  EXPECT_LT(hi, 5.0f);
  EXPECT_LT(lo, -2.9f);
  EXPECT_GT(hi, 4.9f);
  // Per-row bounds broadcast against the shape.
  ts::Array rows = tr::uniform(tr::key(4), {2, 500}, ts::f64, ts::Array(std::vector<double>{0, 10}, {2, 1}),
                               ts::Array(std::vector<double>{1, 11}, {2, 1}));
  auto r = rows.to_vector<double>();
  for (size_t i = 0; i < r.size(); ++i) {
    const double base = i < 500 ? 0 : 10;
    EXPECT_GE(r[i], base);
    EXPECT_LT(r[i], base + 1);
  }
}

TEST(Random, ComplexNormalSplitsVarianceBetweenParts) {
  const int64_t n = 50000;
  auto v = tr::normal(tr::key(2), {n}, ts::c64).to_vector<std::complex<float>>();
  double re2 = 0, im2 = 0;
  for (auto z : v) re2 += double(z.real()) * z.real(), im2 += double(z.imag()) * z.imag();
  EXPECT_NEAR(re2 / n, 0.5, 0.02);
  EXPECT_NEAR(im2 / n, 0.5, 0.02);
}

TEST(Random, DrawsAreDeterministicAndKeysIndependent) {
  ts::Array ks = tr::split(tr::key(8), 2);
  ts::Array k0 = ts::reshape(ts::slice(ks, {0, 0}, {1, 2}), {2});
  ts::Array k1 = ts::reshape(ts::slice(ks, {1, 0}, {2, 2}), {2});
  EXPECT_EQ(tr::normal(k0, {16}).to_vector<float>(), tr::normal(k0, {16}).to_vector<float>());
  EXPECT_NE(tr::normal(k0, {16}).to_vector<float>(), tr::normal(k1, {16}).to_vector<float>());
}

TEST(Random, JitMatchesEager) {
  auto draw = [](const ts::Array& k) { return tr::normal(tr::fold_in(k, 3), {64}, ts::f32); };
  auto jitted = ts::jit(draw);
  ts::Array k = tr::key(11);
  EXPECT_EQ(jitted(k).to_vector<float>(), draw(k).to_vector<float>());
}

TEST(Random, ErfInvInvertsErf) {
  for (double x : {-0.999, -0.9, -0.5, -0.1, 0.0, 0.05, 0.3, 0.77, 0.99, 0.999999, 1 - 1e-12}) {
    double y = ts::erf_inv(ts::Array(ts::Scalar(x))).item<double>();
    EXPECT_NEAR(std::erf(y), x, 4e-16) << x;
    if (std::fabs(x) < 0.9999) {
      float yf = ts::erf_inv(ts::Array(ts::Scalar(float(x)))).item<float>();
      EXPECT_NEAR(yf, y, 2e-6 * std::max(1.0, std::fabs(y))) << x;
    }
  }
  auto edges = ts::erf_inv(ts::Array(std::vector<float>{1, -1, 2})).to_vector<float>();
  EXPECT_EQ(edges[0], INFINITY);
  EXPECT_EQ(edges[1], -INFINITY);
  EXPECT_TRUE(std::isnan(edges[2]));
  EXPECT_NEAR(ts::erf_inv(ts::Array(ts::Scalar(ts::float16_t(0.5f)))).item<float>(), 0.4769, 1e-3);
  EXPECT_EQ(ts::erf_inv(ts::Array(ts::Scalar(ts::bfloat16_t(0.5f)))).dtype(), ts::bf16);
}

TEST(Random, BitcastReinterpretsSameWidthDtypes) {
  ts::Array one = ts::Array(std::vector<float>{1.0f, -2.0f});
  EXPECT_EQ(ts::bitcast_convert_type(one, ts::u32).to_vector<uint32_t>(),
            (std::vector<uint32_t>{0x3f800000u, 0xc0000000u}));
  EXPECT_EQ(ts::bitcast_convert_type(ts::Array(std::vector<int32_t>{-1}), ts::u32).item<uint32_t>(), 0xffffffffu);
  ts::Array d = ts::bitcast_convert_type(ts::Array(std::vector<uint64_t>{0x3ff8000000000000ull}), ts::f64);
  EXPECT_EQ(d.item<double>(), 1.5);
  ts::Array h = ts::bitcast_convert_type(ts::Array(std::vector<uint16_t>{0x3c00}), ts::f16);
  EXPECT_EQ(h.item<float>(), 1.0f);
}

TEST(Random, BadArgumentsRaiseNamedErrors) {
  auto expect_error = [](auto fn, const char* op, auto tag) {
    using E = decltype(tag);
    try {
      fn();
      ADD_FAILURE() << "no error for " << op;
    } catch (const E& e) {
      EXPECT_NE(std::string(e.what()).find(op), std::string::npos) << e.what();
    }
  };
  ts::Array bad_key = ts::Array(std::vector<float>{0, 0});
  expect_error([&] { tr::split(bad_key); }, "split", ts::ValueError(""));
  expect_error([&] { tr::uniform(tr::key(0), {3}, ts::i32); }, "uniform", ts::DTypeError(""));
  expect_error([&] { tr::uniform(tr::key(0), {3}, ts::f32, ts::zeros({4})); }, "uniform", ts::ShapeError(""));
  expect_error([&] { tr::normal(tr::key(0), {3}, ts::i8); }, "normal", ts::DTypeError(""));
  expect_error([&] { tr::bits(tr::key(0), {3}, ts::f32); }, "bits", ts::DTypeError(""));
  expect_error([&] { tr::fold_in(tr::key(0), 1.5); }, "fold_in", ts::ValueError(""));
  expect_error([&] { tr::threefry2x32(u32(0), u32(0), ts::Array(1), u32(0)); }, "threefry2x32", ts::DTypeError(""));
  expect_error([&] { tr::threefry2x32(u32(0), u32(0), u32s({1, 2}), u32s({1, 2, 3})); }, "threefry2x32",
               ts::ShapeError(""));
  expect_error([&] { ts::bitcast_convert_type(ts::zeros({2}), ts::f64); }, "bitcast_convert_type",
               ts::DTypeError(""));
  expect_error([&] { ts::bitcast_convert_type(ts::zeros({2}, ts::u8), ts::bool_); }, "bitcast_convert_type",
               ts::DTypeError(""));
  expect_error([&] { ts::erf_inv(ts::Array(std::vector<int32_t>{1})); }, "erf_inv", ts::DTypeError(""));
}
