// dot_general, matmul, dot, vdot, outer, trace and einsum against naive loops written here,
// for BLAS dtypes, half types and integers, with batched, broadcast and transposed inputs.
#include <gtest/gtest.h>

#include <complex>
#include <functional>

#include "tessel/tessel.h"

namespace ts = tessel;
using C = std::complex<double>;

namespace {

// Deterministic small values (exact in every dtype used), complex parts when asked.
std::vector<C> values(int64_t n, int seed, bool complex) {
  std::vector<C> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const double re = double((i * 7 + seed * 3) % 11) - 5;
    const double im = complex ? double((i * 5 + seed) % 7) - 3 : 0;
    v[size_t(i)] = C(re, im);
  }
  return v;
}

// Values for a dtype: complex parts for complex dtypes, non-negative for unsigned ones.
std::vector<C> values_for(ts::DType dt, int64_t n, int seed) {
  auto v = values(n, seed, ts::is_complex(dt));
  if (ts::is_unsigned_int(dt))
    for (auto& c : v) c += 5;
  return v;
}

ts::Array make(const std::vector<C>& v, const ts::Shape& shape, ts::DType dt) {
  if (ts::is_complex(dt)) {
    std::vector<ts::complex128_t> z(v.begin(), v.end());
    return ts::Array(z, shape).astype(dt);
  }
  std::vector<double> r;
  for (auto c : v) r.push_back(c.real());
  return ts::Array(r, shape).astype(dt);
}

std::vector<C> read(const ts::Array& a) {
  auto z = a.astype(ts::c128).to_vector<ts::complex128_t>();
  return std::vector<C>(z.begin(), z.end());
}

// Naive batched product: a (B, M, K) x b (B, K, N) with batch strides 0 for broadcast
// operands (sa / sb false means the operand has no batch dim).
std::vector<C> ref_matmul(const std::vector<C>& a, const std::vector<C>& b, int64_t batch, int64_t m, int64_t k,
                          int64_t n, bool a_batched = true, bool b_batched = true) {
  std::vector<C> c(size_t(batch * m * n));
  for (int64_t bi = 0; bi < batch; ++bi)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        C s = 0;
        for (int64_t kk = 0; kk < k; ++kk)
          s += a[size_t((a_batched ? bi : 0) * m * k + i * k + kk)] * b[size_t((b_batched ? bi : 0) * k * n + kk * n + j)];
        c[size_t((bi * m + i) * n + j)] = s;
      }
  return c;
}

void expect_close(const std::vector<C>& got, const std::vector<C>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_LE(std::abs(got[i] - want[i]), tol * (1 + std::abs(want[i]))) << "at " << i << ": " << got[i] << " vs "
                                                                          << want[i];
}

double tol_of(ts::DType dt) {
  switch (dt) {
    case ts::f16: return 2e-3;
    case ts::bf16: return 1e-2;
    case ts::f32:
    case ts::c64: return 1e-5;
    case ts::f64:
    case ts::c128: return 1e-12;
    default: return 0;
  }
}

template <class F> void expect_error(F&& f, const std::string& needle) {
  try {
    f();
    FAIL() << "expected an error mentioning '" << needle << "'";
  } catch (const ts::Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

class MatmulDtypes : public ::testing::TestWithParam<ts::DType> {};

}  // namespace

TEST_P(MatmulDtypes, MatchesNaiveTripleLoop) {
  const ts::DType dt = GetParam();
  const auto av = values_for(dt, 5 * 7, 1), bv = values_for(dt, 7 * 3, 2);
  ts::Array r = ts::matmul(make(av, {5, 7}, dt), make(bv, {7, 3}, dt));
  EXPECT_EQ(r.shape(), (ts::Shape{5, 3}));
  EXPECT_EQ(r.dtype(), dt);
  expect_close(read(r), ref_matmul(av, bv, 1, 5, 7, 3), tol_of(dt));
}

TEST_P(MatmulDtypes, BatchedAndBroadcastBatchDims) {
  const ts::DType dt = GetParam();
  const auto av = values_for(dt, 2 * 4 * 6, 3), bv = values_for(dt, 2 * 6 * 5, 4);
  // Equal batch dims.
  expect_close(read(ts::matmul(make(av, {2, 4, 6}, dt), make(bv, {2, 6, 5}, dt))), ref_matmul(av, bv, 2, 4, 6, 5),
               tol_of(dt));
  // Size-1 batch dim broadcasts against 2; a 2-D rhs against a batched lhs and vice versa.
  const auto a1 = values_for(dt, 4 * 6, 5), b2 = values_for(dt, 6 * 5, 6);
  expect_close(read(ts::matmul(make(a1, {1, 4, 6}, dt), make(bv, {2, 6, 5}, dt))),
               ref_matmul(a1, bv, 2, 4, 6, 5, false, true), tol_of(dt));
  expect_close(read(ts::matmul(make(av, {2, 4, 6}, dt), make(b2, {6, 5}, dt))), ref_matmul(av, b2, 2, 4, 6, 5, true, false),
               tol_of(dt));
  expect_close(read(ts::matmul(make(a1, {4, 6}, dt), make(bv, {2, 6, 5}, dt))), ref_matmul(a1, bv, 2, 4, 6, 5, false, true),
               tol_of(dt));
  // Rank-4 against rank-3 batch broadcasting: (3, 1, 4, 6) @ (2, 6, 5) -> (3, 2, 4, 5).
  const auto a3 = values_for(dt, 3 * 4 * 6, 7);
  ts::Array r = ts::matmul(make(a3, {3, 1, 4, 6}, dt), make(bv, {2, 6, 5}, dt));
  EXPECT_EQ(r.shape(), (ts::Shape{3, 2, 4, 5}));
  std::vector<C> want;
  for (int i = 0; i < 3; ++i) {
    std::vector<C> ai(a3.begin() + i * 24, a3.begin() + (i + 1) * 24);
    auto w = ref_matmul(ai, bv, 2, 4, 6, 5, false, true);
    want.insert(want.end(), w.begin(), w.end());
  }
  expect_close(read(r), want, tol_of(dt));
}

TEST_P(MatmulDtypes, TransposedAndSlicedInputs) {
  const ts::DType dt = GetParam();
  // a^T @ b with a stored as (7, 5): the kernel sees a transposed operand.
  const auto at = values_for(dt, 7 * 5, 8), bv = values_for(dt, 7 * 3, 9);
  std::vector<C> a(35);
  for (int i = 0; i < 5; ++i)
    for (int k = 0; k < 7; ++k) a[size_t(i * 7 + k)] = at[size_t(k * 5 + i)];
  ts::Array ta = ts::transpose(make(at, {7, 5}, dt));
  expect_close(read(ts::matmul(ta, make(bv, {7, 3}, dt))), ref_matmul(a, bv, 1, 5, 7, 3), tol_of(dt));
  // Slices: every other row of a (10, 7) matrix, columns 1..3 of a (7, 6) one.
  const auto big = values_for(dt, 10 * 7, 10), bb = values_for(dt, 7 * 6, 11);
  std::vector<C> as, bs;
  for (int i = 0; i < 10; i += 2)
    for (int k = 0; k < 7; ++k) as.push_back(big[size_t(i * 7 + k)]);
  for (int k = 0; k < 7; ++k)
    for (int j = 1; j < 4; ++j) bs.push_back(bb[size_t(k * 6 + j)]);
  ts::Array sa = ts::slice(make(big, {10, 7}, dt), {0, 0}, {10, 7}, {2, 1});
  ts::Array sb = ts::slice(make(bb, {7, 6}, dt), {0, 1}, {7, 4});
  expect_close(read(ts::matmul(sa, sb)), ref_matmul(as, bs, 1, 5, 7, 3), tol_of(dt));
  // Batched transpose of the rhs: (2, 5, 6)^T(0, 2, 1) = (2, 6, 5).
  const auto av = values_for(dt, 2 * 4 * 6, 12), bt = values_for(dt, 2 * 5 * 6, 13);
  std::vector<C> b(60);
  for (int bi = 0; bi < 2; ++bi)
    for (int k = 0; k < 6; ++k)
      for (int j = 0; j < 5; ++j) b[size_t(bi * 30 + k * 5 + j)] = bt[size_t(bi * 30 + j * 6 + k)];
  ts::Array tb = ts::transpose(make(bt, {2, 5, 6}, dt), ts::Axes{0, 2, 1});
  expect_close(read(ts::matmul(make(av, {2, 4, 6}, dt), tb)), ref_matmul(av, b, 2, 4, 6, 5), tol_of(dt));
}

INSTANTIATE_TEST_SUITE_P(Dtypes, MatmulDtypes,
                         ::testing::Values(ts::f32, ts::f64, ts::c64, ts::c128, ts::i32, ts::i64, ts::i8, ts::u16,
                                           ts::f16, ts::bf16),
                         [](const auto& info) { return std::string(ts::dtype_name(info.param)); });

TEST(Matmul, OneDimensionalOperandsArePromotedAndRemoved) {
  const auto av = values(7, 1, false), mv = values(7 * 3, 2, false), nv = values(5 * 7, 3, false);
  ts::Array v = make(av, {7}, ts::f64), m = make(mv, {7, 3}, ts::f64), n = make(nv, {5, 7}, ts::f64);
  ts::Array vm = ts::matmul(v, m);
  EXPECT_EQ(vm.shape(), (ts::Shape{3}));
  expect_close(read(vm), ref_matmul(av, mv, 1, 1, 7, 3), 1e-12);
  ts::Array nv2 = ts::matmul(n, v);
  EXPECT_EQ(nv2.shape(), (ts::Shape{5}));
  expect_close(read(nv2), ref_matmul(nv, av, 1, 5, 7, 1), 1e-12);
  ts::Array vv = ts::matmul(v, v);
  EXPECT_EQ(vv.shape(), ts::Shape{});
  expect_close(read(vv), ref_matmul(av, av, 1, 1, 7, 1), 1e-12);
  // A vector against a batch of matrices: (7,) @ (2, 7, 3) -> (2, 3).
  const auto bm = values(2 * 7 * 3, 4, false);
  ts::Array r = ts::matmul(v, make(bm, {2, 7, 3}, ts::f64));
  EXPECT_EQ(r.shape(), (ts::Shape{2, 3}));
  expect_close(read(r), ref_matmul(av, bm, 2, 1, 7, 3, false, true), 1e-12);
}

TEST(Matmul, PromotesMixedDtypes) {
  ts::Array a = ts::ones({2, 3}, ts::f32), b = ts::ones({3, 2}, ts::i32);
  EXPECT_EQ(ts::matmul(a, b).dtype(), ts::f32);
  EXPECT_EQ(ts::matmul(a, ts::ones({3, 2}, ts::f64)).dtype(), ts::f64);
  EXPECT_EQ(ts::matmul(ts::ones({2, 3}, ts::bf16), ts::ones({3, 2}, ts::f16)).dtype(), ts::f32);
}

TEST(Matmul, LargeProductUsesBlasAccurately) {
  const int64_t m = 64, k = 300, n = 48;
  const auto av = values(m * k, 1, false), bv = values(k * n, 2, false);
  expect_close(read(ts::matmul(make(av, {m, k}, ts::f32), make(bv, {k, n}, ts::f32))), ref_matmul(av, bv, 1, m, k, n),
               1e-6);
  expect_close(read(ts::matmul(make(av, {m, k}, ts::i32), make(bv, {k, n}, ts::i32))), ref_matmul(av, bv, 1, m, k, n), 0);
}

TEST(Matmul, ConcurrentProductsOnEveryDevice) {
  // Outputs above the inline-dispatch size run on the devices' own streams, so BLAS is
  // called from several threads at once.
  const int64_t n = 160;
  const auto av = values(n * n, 1, false);
  const ts::Array a = make(av, {n, n}, ts::f32);
  std::vector<ts::Array> rs;
  for (const auto& d : ts::devices()) {
    const ts::Array ad = ts::device_put(a, d);
    for (int i = 0; i < 3; ++i) rs.push_back(ts::matmul(ad, ad));
  }
  const auto want = ref_matmul(av, av, 1, n, n, n);
  for (const auto& r : rs) expect_close(read(r), want, 1e-6);
}

TEST(Matmul, EmptyContractionGivesZeros) {
  ts::Array r = ts::matmul(ts::ones({2, 0}), ts::ones({0, 3}));
  EXPECT_EQ(r.shape(), (ts::Shape{2, 3}));
  EXPECT_EQ(r.to_vector<float>(), std::vector<float>(6, 0.0f));
  EXPECT_EQ(ts::matmul(ts::ones({0, 4}), ts::ones({4, 3})).shape(), (ts::Shape{0, 3}));
  EXPECT_EQ(ts::matmul(ts::ones({2, 0}, ts::i32), ts::ones({0, 3}, ts::i32)).to_vector<int>(), std::vector<int>(6, 0));
}

TEST(Matmul, BoolProductIsOrOfAnds) {
  ts::Array a(std::vector<bool>{true, false, false, false}, {2, 2});
  ts::Array b(std::vector<bool>{false, true, true, true}, {2, 2});
  ts::Array r = ts::matmul(a, b);
  EXPECT_EQ(r.dtype(), ts::bool_);
  EXPECT_EQ(r.to_vector<bool>(), (std::vector<bool>{false, true, false, false}));
}

TEST(Matmul, ErrorsNameShapes) {
  expect_error([] { ts::matmul(ts::ones({2, 3}), ts::ones({4, 5})); }, "matmul: contracting dimensions differ for shapes (2, 3) and (4, 5)");
  expect_error([] { ts::matmul(ts::ones({2, 2, 3}), ts::ones({3, 3, 4})); }, "matmul: batch dimensions");
  EXPECT_THROW(ts::matmul(ts::ones({2, 3}), ts::ones({4, 5})), ts::ShapeError);
  EXPECT_THROW(ts::matmul(ts::Array(2.0f), ts::ones({2})), ts::ValueError);
  EXPECT_THROW(ts::dot(ts::ones({2, 3}), ts::ones({2})), ts::ShapeError);
}

TEST(DotGeneral, ArbitraryContractingAndBatchDims) {
  // lhs (3, 4, 5), rhs (5, 3, 2): contract lhs 2 with rhs 0, batch lhs 0 with rhs 1 -> (3, 4, 2).
  const auto av = values(60, 1, false), bv = values(30, 2, false);
  ts::Array r = ts::dot_general(make(av, {3, 4, 5}, ts::f32), make(bv, {5, 3, 2}, ts::f32), {{2}, {0}, {0}, {1}});
  EXPECT_EQ(r.shape(), (ts::Shape{3, 4, 2}));
  std::vector<C> want;
  for (int b = 0; b < 3; ++b)
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 2; ++j) {
        C s = 0;
        for (int k = 0; k < 5; ++k) s += av[size_t(b * 20 + i * 5 + k)] * bv[size_t(k * 6 + b * 2 + j)];
        want.push_back(s);
      }
  expect_close(read(r), want, 1e-6);
  // Two contracting dims, no batch: (2, 3, 4) . (4, 3) over (1, 2) x (1, 0) -> (2,).
  const auto cv = values(24, 3, false), dv = values(12, 4, false);
  ts::Array r2 = ts::dot_general(make(cv, {2, 3, 4}, ts::i32), make(dv, {4, 3}, ts::i32), {{1, 2}, {1, 0}, {}, {}});
  EXPECT_EQ(r2.shape(), (ts::Shape{2}));
  std::vector<C> want2;
  for (int i = 0; i < 2; ++i) {
    C s = 0;
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) s += cv[size_t(i * 12 + j * 4 + k)] * dv[size_t(k * 3 + j)];
    want2.push_back(s);
  }
  expect_close(read(r2), want2, 0);
  // No contraction at all: an outer product with batch dims.
  ts::Array r3 = ts::dot_general(ts::ones({2, 3}), ts::ones({2, 4}), {{}, {}, {0}, {0}});
  EXPECT_EQ(r3.shape(), (ts::Shape{2, 3, 4}));
  EXPECT_EQ(r3.to_vector<float>(), std::vector<float>(24, 1.0f));
}

TEST(DotGeneral, PreferredElementType) {
  ts::Array a = ts::full({2, 40}, 100, ts::i8), b = ts::full({40, 2}, 100, ts::i8);
  ts::Array r = ts::dot_general(a, b, {{1}, {0}, {}, {}}, ts::i32);
  EXPECT_EQ(r.dtype(), ts::i32);
  EXPECT_EQ(r.to_vector<int>(), std::vector<int>(4, 400000));
  ts::Array h = ts::full({2, 3000}, 1, ts::bf16);
  ts::Array rf = ts::dot_general(h, ts::full({3000, 1}, 1, ts::bf16), {{1}, {0}, {}, {}}, ts::f32);
  EXPECT_EQ(rf.dtype(), ts::f32);
  EXPECT_EQ(rf.to_vector<float>(), (std::vector<float>{3000, 3000}));
  EXPECT_THROW(ts::dot_general(ts::ones({2}), ts::ones({2}), {{0}, {0}, {}, {}}, ts::i32), ts::DTypeError);
}

TEST(DotGeneral, ValidationErrorsNameShapesAndDims) {
  const ts::Array a = ts::ones({2, 3}), b = ts::ones({4, 5});
  expect_error([&] { ts::dot_general(a, b, {{1}, {0}, {}, {}}); }, "dot_general: contracting dimensions have different sizes");
  expect_error([&] { ts::dot_general(a, b, {{1}, {0}, {}, {}}); }, "shapes (2, 3) and (4, 5)");
  EXPECT_THROW(ts::dot_general(a, b, {{1}, {0}, {}, {}}), ts::ShapeError);
  expect_error([&] { ts::dot_general(ts::ones({2, 3}), ts::ones({3, 3}), {{1}, {0}, {0}, {1}}); }, "batch dimensions have different sizes");
  expect_error([&] { ts::dot_general(a, ts::ones({3, 2}), {{1, 1}, {0, 1}, {}, {}}); }, "named more than once");
  EXPECT_THROW(ts::dot_general(a, ts::ones({3, 2}), {{2}, {0}, {}, {}}), ts::IndexError);
  EXPECT_THROW(ts::dot_general(a, ts::ones({3, 2}), {{1}, {}, {}, {}}), ts::ValueError);
}

TEST(Dot, FollowsJnpDotRules) {
  const auto av = values(2 * 3 * 4, 1, false), bv = values(5 * 4 * 6, 2, false), v4 = values(4, 3, false);
  ts::Array a = make(av, {2, 3, 4}, ts::f64);
  // N-D . M-D contracts a's last axis with b's second-to-last: (2, 3, 4) . (5, 4, 6) -> (2, 3, 5, 6).
  ts::Array r = ts::dot(a, make(bv, {5, 4, 6}, ts::f64));
  EXPECT_EQ(r.shape(), (ts::Shape{2, 3, 5, 6}));
  std::vector<C> want;
  for (int i = 0; i < 6; ++i)
    for (int p = 0; p < 5; ++p)
      for (int j = 0; j < 6; ++j) {
        C s = 0;
        for (int k = 0; k < 4; ++k) s += av[size_t(i * 4 + k)] * bv[size_t(p * 24 + k * 6 + j)];
        want.push_back(s);
      }
  expect_close(read(r), want, 1e-12);
  // N-D . 1-D contracts the last axis.
  ts::Array r1 = ts::dot(a, make(v4, {4}, ts::f64));
  EXPECT_EQ(r1.shape(), (ts::Shape{2, 3}));
  expect_close(read(r1), ref_matmul(av, v4, 1, 6, 4, 1), 1e-12);
  // Scalars multiply.
  EXPECT_EQ(ts::dot(ts::Array(2.0f), ts::ones({3})).to_vector<float>(), (std::vector<float>{2, 2, 2}));
}

TEST(Dot, VdotConjugatesTheFirstArgumentAndFlattens) {
  std::vector<ts::complex64_t> a{{1, 2}, {3, -1}, {0, 1}, {2, 2}}, b{{2, 0}, {1, 1}, {-1, 3}, {0, -1}};
  ts::Array r = ts::vdot(ts::Array(a, {2, 2}), ts::Array(b, {4}));
  C want = 0;
  for (int i = 0; i < 4; ++i) want += std::conj(C(a[size_t(i)])) * C(b[size_t(i)]);
  EXPECT_EQ(r.shape(), ts::Shape{});
  EXPECT_NEAR(std::abs(C(r.item<ts::complex128_t>()) - want), 0, 1e-5);
  EXPECT_EQ(ts::vdot(ts::Array(std::vector<int>{1, 2, 3}), ts::Array(std::vector<int>{4, 5, 6})).item<int>(), 32);
  EXPECT_THROW(ts::vdot(ts::ones({3}), ts::ones({4})), ts::ShapeError);
}

TEST(Dot, OuterFlattensBothArguments) {
  ts::Array r = ts::outer(ts::Array(std::vector<int>{1, 2}), ts::Array(std::vector<int>{3, 4, 5}, {3, 1}));
  EXPECT_EQ(r.shape(), (ts::Shape{2, 3}));
  EXPECT_EQ(r.to_vector<int>(), (std::vector<int>{3, 4, 5, 6, 8, 10}));
}

TEST(Trace, SumsTheMainDiagonal) {
  ts::Array sq(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3});
  EXPECT_EQ(ts::trace(sq).item<float>(), 15);
  ts::Array rect(std::vector<int>{1, 2, 3, 4, 5, 6}, {2, 3});  // diagonal 1, 5
  EXPECT_EQ(ts::trace(rect).item<int>(), 6);
  EXPECT_EQ(ts::trace(ts::transpose(rect)).item<int>(), 6);
  // 3-D: sums over axes 0 and 1, keeps the rest.
  std::vector<double> v(2 * 2 * 3);
  for (size_t i = 0; i < v.size(); ++i) v[i] = double(i);
  ts::Array t3 = ts::trace(ts::Array(v, {2, 2, 3}));
  EXPECT_EQ(t3.shape(), (ts::Shape{3}));
  EXPECT_EQ(t3.to_vector<double>(), (std::vector<double>{0 + 9, 1 + 10, 2 + 11}));
  EXPECT_EQ(ts::trace(ts::Array(std::vector<bool>{true, true, false, true}, {2, 2})).dtype(), ts::i32);
  EXPECT_THROW(ts::trace(ts::ones({3})), ts::ValueError);
}

TEST(Einsum, MatrixProductExplicitAndImplicit) {
  const auto av = values(4 * 5, 1, false), bv = values(5 * 3, 2, false);
  ts::Array a = make(av, {4, 5}, ts::f32), b = make(bv, {5, 3}, ts::f32);
  const auto want = ref_matmul(av, bv, 1, 4, 5, 3);
  expect_close(read(ts::einsum("ij,jk->ik", {a, b})), want, 1e-6);
  expect_close(read(ts::einsum("ij,jk", {a, b})), want, 1e-6);
  expect_close(read(ts::einsum(" ij , jk -> ik ", {a, b})), want, 1e-6);
  // Output order follows the spec: "ij,jk->ki" is the transpose.
  ts::Array t = ts::einsum("ij,jk->ki", {a, b});
  EXPECT_EQ(t.shape(), (ts::Shape{3, 4}));
  expect_close(read(ts::transpose(t)), want, 1e-6);
}

TEST(Einsum, BatchedProduct) {
  const auto av = values(2 * 3 * 4, 1, true), bv = values(2 * 4 * 5, 2, true);
  ts::Array r = ts::einsum("bij,bjk->bik", {make(av, {2, 3, 4}, ts::c128), make(bv, {2, 4, 5}, ts::c128)});
  EXPECT_EQ(r.shape(), (ts::Shape{2, 3, 5}));
  expect_close(read(r), ref_matmul(av, bv, 2, 3, 4, 5), 1e-12);
  // Ellipsis batch dims that broadcast: (1, 3, 4) against (2, 4, 5).
  const auto a1 = values(12, 3, true);
  ts::Array e = ts::einsum("...ij,...jk->...ik", {make(a1, {1, 3, 4}, ts::c128), make(bv, {2, 4, 5}, ts::c128)});
  EXPECT_EQ(e.shape(), (ts::Shape{2, 3, 5}));
  expect_close(read(e), ref_matmul(a1, bv, 2, 3, 4, 5, false, true), 1e-12);
}

TEST(Einsum, InnerProductTraceDiagonalAndSums) {
  ts::Array v(std::vector<int>{1, 2, 3}), w(std::vector<int>{4, 5, 6});
  EXPECT_EQ(ts::einsum("i,i->", {v, w}).item<int>(), 32);
  EXPECT_EQ(ts::einsum("i,i", {v, w}).item<int>(), 32);
  ts::Array m(std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3});
  EXPECT_EQ(ts::einsum("ii->", {m}).item<int>(), 15);
  EXPECT_EQ(ts::einsum("ii", {m}).item<int>(), 15);
  EXPECT_EQ(ts::einsum("ii->i", {m}).to_vector<int>(), (std::vector<int>{1, 5, 9}));
  EXPECT_EQ(ts::einsum("ij->", {m}).item<int>(), 45);
  EXPECT_EQ(ts::einsum("ij->j", {m}).to_vector<int>(), (std::vector<int>{12, 15, 18}));
  EXPECT_EQ(ts::einsum("ij->ji", {m}).to_vector<int>(), (std::vector<int>{1, 4, 7, 2, 5, 8, 3, 6, 9}));
  EXPECT_EQ(ts::einsum("ij", {m}).to_vector<int>(), m.to_vector<int>());
  EXPECT_EQ(ts::einsum("ji", {m}).to_vector<int>(), (std::vector<int>{1, 4, 7, 2, 5, 8, 3, 6, 9}));
  EXPECT_EQ(ts::einsum("i,j->ij", {v, w}).to_vector<int>(), ts::outer(v, w).to_vector<int>());
  // A diagonal inside a product: sum_i m_ii * v_i.
  EXPECT_EQ(ts::einsum("ii,i->", {m, v}).item<int>(), 1 * 1 + 5 * 2 + 9 * 3);
}

TEST(Einsum, ThreeOperandsContractLeftToRight) {
  const auto av = values(2 * 3, 1, false), bv = values(3 * 4, 2, false), cv = values(4 * 5, 3, false);
  ts::Array r = ts::einsum("ij,jk,kl->il", {make(av, {2, 3}, ts::f64), make(bv, {3, 4}, ts::f64),
                                             make(cv, {4, 5}, ts::f64)});
  EXPECT_EQ(r.shape(), (ts::Shape{2, 5}));
  expect_close(read(r), ref_matmul(ref_matmul(av, bv, 1, 2, 3, 4), cv, 1, 2, 4, 5), 1e-12);
  // An index shared by the first and last operand only: sum_ijk a_ij b_jk c_ki.
  const auto c2 = values(4 * 2, 4, false);
  double want = 0;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k)
        want += av[size_t(i * 3 + j)].real() * bv[size_t(j * 4 + k)].real() * c2[size_t(k * 2 + i)].real();
  EXPECT_DOUBLE_EQ(ts::einsum("ij,jk,ki->", {make(av, {2, 3}, ts::f64), make(bv, {3, 4}, ts::f64),
                                             make(c2, {4, 2}, ts::f64)}).item<double>(), want);
}

TEST(Einsum, PromotesOperandDtypes) {
  EXPECT_EQ(ts::einsum("i,i->", {ts::ones({3}, ts::i32), ts::ones({3}, ts::f32)}).dtype(), ts::f32);
  EXPECT_EQ(ts::einsum("ij->i", {ts::ones({2, 3}, ts::i8)}).dtype(), ts::i8);
}

TEST(Einsum, BadSpecsAreClearErrors) {
  const ts::Array a = ts::ones({2, 3}), b = ts::ones({4, 5});
  expect_error([&] { ts::einsum("ij,jk->ik", {a, b}); }, "einsum: index 'j'");
  EXPECT_THROW(ts::einsum("ij,jk->ik", {a, b}), ts::ShapeError);
  expect_error([&] { ts::einsum("ij,jk->ik", {a}); }, "name 2 operand(s) but 1 were given");
  expect_error([&] { ts::einsum("ijk->i", {a}); }, "einsum: operand 0 has shape (2, 3)");
  expect_error([&] { ts::einsum("i1->i", {a}); }, "invalid character '1'");
  expect_error([&] { ts::einsum("ij->iz", {a}); }, "output index 'z'");
  expect_error([&] { ts::einsum("ij->ii", {a}); }, "is repeated");
  expect_error([&] { ts::einsum("ij->i->j", {a}); }, "more than one '->'");
  expect_error([&] { ts::einsum("ii->i", {a}); }, "einsum: index 'i'");
  EXPECT_THROW(ts::einsum("", {}), ts::ValueError);
}

TEST(Linalg, JitMatchesEager) {
  auto f = [](const ts::Array& a, const ts::Array& b) {
    return std::vector<ts::Array>{ts::matmul(a, b), ts::einsum("ij,jk->ki", {a, b}), ts::dot(a, b),
                                  ts::trace(ts::matmul(a, b)), ts::einsum("ii->i", {ts::matmul(a, b)})};
  };
  ts::Array a = make(values(3 * 4, 1, false), {3, 4}, ts::f64), b = make(values(4 * 3, 2, false), {4, 3}, ts::f64);
  auto eager = f(a, b);
  auto jitted = ts::jit(f)(a, b);
  ASSERT_EQ(eager.size(), jitted.size());
  for (size_t i = 0; i < eager.size(); ++i) {
    EXPECT_EQ(jitted[i].shape(), eager[i].shape()) << i;
    expect_close(read(jitted[i]), read(eager[i]), 1e-12);
  }
}

TEST(Linalg, ProgramsShowDotGeneralParamsAndTraceTimeErrors) {
  const std::string text =
      ts::make_program([](const ts::Array& a, const ts::Array& b) { return ts::matmul(a, b); }, ts::ones({2, 3, 4}),
                       ts::ones({2, 4, 5}))
          .to_string();
  EXPECT_NE(text.find("dot_general["), std::string::npos) << text;
  EXPECT_NE(text.find("lhs_batch=(0,)"), std::string::npos) << text;
  EXPECT_NE(text.find("lhs_contracting=(2,)"), std::string::npos) << text;
  EXPECT_THROW(ts::make_program([](const ts::Array& a) { return ts::matmul(a, a); }, ts::ones({2, 3})), ts::ShapeError);
}
