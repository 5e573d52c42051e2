// The factorization primitives (cholesky, triangular_solve, lu, qr, eigh, svd) and the
// functions on them (jnp.linalg's and jax.scipy.linalg's): reconstructions (L L^T = A,
// Q R = A, U S V^H = A, V diag(w) V^H = A, P L U = A) in every LAPACK dtype, JAX's own
// values for fixed inputs (from JAX 0.10.2 with x64, pasted), jit, vmap and batches,
// gradients against central finite differences in float64 and complex128, errors, NaN factors of
// matrices that are not positive definite, and a batch of factorizations split over devices
// without communication.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <limits>
#include <string>
#include <vector>

#include <lapacke.h>

#include "backend/cpu/lapack.h"
#include "expect_error.h"
#include "ops/linalg_factor.h"
#include "ops/linalg_test_util.h"
#include "tessel/linalg.h"
#include "tessel/tessel.h"
#include "transforms/check_transforms.h"

namespace {

using namespace transform_testing;
namespace la = ts::lax::linalg;
using V = std::vector<ts::Array>;
using linalg_testing::adjoint;
using tessel::tril;
using tessel::triu;

// ---- inputs ----

/// A batch of random matrices in [-1, 1) (complex dtypes get random imaginary parts too).
ts::Array random_matrix(const ts::Shape& shape, uint32_t seed, ts::DType dt = ts::f64) {
  ts::Array re = uniform(shape, seed);
  if (ts::is_complex(dt)) return ts::complex(re, uniform(shape, seed + 1000)).astype(dt);
  return re.astype(dt);
}

/// A batch of well-conditioned Hermitian positive definite matrices: X X^H + n I.
ts::Array spd_matrix(const ts::Shape& shape, uint32_t seed, ts::DType dt = ts::f64) {
  const ts::Array x = random_matrix(shape, seed, dt);
  const int64_t n = shape.back();
  return ts::matmul(x, adjoint(x)) + ts::eye(n, std::nullopt, 0, dt) * ts::Array(double(n)).astype(ts::real_dtype(dt)).astype(dt);
}

ts::Array f64s(const std::vector<double>& v, const ts::Shape& shape) { return ts::Array(v, shape).reshape(shape); }

const ts::Array kSpd = f64s({4, 2, 0.6, 2, 5, 1, 0.6, 1, 3}, {3, 3});
const ts::Array kM = f64s({1, 2, 3, 4, 5, 6.5, 7, 8.5, 10}, {3, 3});
const ts::Array kTall = f64s({1, 2, 3, 4, 5, 7}, {3, 2});

/// Tolerance for dtype dt on values of size ~1.
double tol_of(ts::DType dt) { return dt == ts::f32 || dt == ts::c64 ? 2e-4 : 1e-10; }

/// |got - want| <= tol * max(1, |want|_inf), complex values compared in both parts.
void expect_near(const ts::Array& got, const ts::Array& want, double tol, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  if (ts::is_complex(got.dtype()) || ts::is_complex(want.dtype())) {
    expect_close(ts::real(got.astype(ts::c128)), ts::real(want.astype(ts::c128)), tol, what + " (real part)");
    expect_close(ts::imag(got.astype(ts::c128)), ts::imag(want.astype(ts::c128)), tol, what + " (imaginary part)");
  } else {
    expect_close(got, want, tol, what);
  }
}

std::vector<double> vals(const ts::Array& x) { return x.astype(ts::f64).to_vector<double>(); }

// ---- values against JAX ----

TEST(LinalgFactor, ValuesMatchJax) {
  expect_close(ts::linalg::cholesky(kSpd), f64s({2, 0, 0, 1, 2, 0, 0.3, 0.35, 1.6695807857064}, {3, 3}), 1e-12,
               "cholesky");
  expect_close(ts::linalg::eigvalsh(kSpd), f64s({2.3724689848089806, 2.7225082073229028, 6.905022807868116}, {3}),
               1e-12, "eigvalsh");
  expect_close(ts::linalg::svdvals(kM), f64s({17.82153939382941, 0.9301684935905897, 0.16589215689081424}, {3}),
               1e-12, "svdvals");
  EXPECT_NEAR(vals(ts::linalg::det(kM))[0], 2.75, 1e-12);
  const auto [sign, logabs] = ts::linalg::slogdet(kM);
  EXPECT_EQ(vals(sign)[0], 1.0);
  EXPECT_NEAR(vals(logabs)[0], 1.0116009116784799, 1e-12);
  expect_close(ts::linalg::solve(kM, f64s({1, 2, 3}, {3})),
               f64s({-0.09090909090909112, 5.652044489000796e-16, 0.3636363636363633}, {3}), 1e-12, "solve");
  const auto f = la::lu(kM);
  expect_close(f.lu,
               f64s({7.0, 8.5, 10.0, 0.14285714285714285, 0.7857142857142858, 1.5714285714285716, 0.5714285714285714,
                     0.18181818181818227, 0.5},
                    {3, 3}),
               1e-12, "lu");
  EXPECT_EQ(f.pivots.to_vector<int32_t>(), (std::vector<int32_t>{2, 2, 2}));
  EXPECT_EQ(f.permutation.to_vector<int32_t>(), (std::vector<int32_t>{2, 0, 1}));
  const auto [q, r] = ts::linalg::qr(kTall);
  expect_close(q,
               f64s({-0.16903085094570325, 0.9486832980505133, -0.50709255283711, -0.31622776601683833,
                     -0.8451542547285166, 2.3208668709370606e-16},
                    {3, 2}),
               1e-12, "qr q");
  expect_close(r, f64s({-5.916079783099616, -8.282511696339462, 0.0, 0.6324555320336759}, {2, 2}), 1e-12, "qr r");
  const auto [h, tau] = ts::linalg::qr(kTall, "raw");
  expect_close(h,
               f64s({-5.916079783099616, 0.4337717455676132, 0.7229529092793553, -8.282511696339462, 0.6324555320336759,
                     0.3969656540625643},
                    {2, 3}),
               1e-12, "qr raw h");
  expect_close(tau, f64s({1.1690308509457032, 1.7277397762030497}, {2}), 1e-12, "qr raw tau");
  const ts::Array zt = ts::complex(f64s({1, 2, 3, 4, 0, 7}, {3, 2}), f64s({1, 0, 0, -2, 5, 0}, {3, 2}));
  const auto [zh, ztau] = ts::linalg::qr(zt, "raw");
  expect_near(zh,
              ts::complex(f64s({-6.0, 0.42, 0.1, -2.333333333333334, -4.024232155883213, 0.16089298698401056}, {2, 3}),
                          f64s({0.0, -0.06, 0.7, 7.166666666666666, 0.0, -0.3799988756650227}, {2, 3})),
              1e-12, "complex qr raw h");
  expect_near(ztau,
              ts::complex(f64s({1.1666666666666667, 1.6485709320185018}, {2}),
                          f64s({0.16666666666666663, 0.31558815466034357}, {2})),
              1e-12, "complex qr raw tau");
  expect_close(ts::linalg::inv(kM),
               f64s({-1.90909090909091, 2, -0.7272727272727271, 2, -4, 2, -0.36363636363636453, 2, -1.0909090909090908},
                    {3, 3}),
               1e-12, "inv");
  expect_close(ts::grad([](const ts::Array& m) { return ts::linalg::det(m); })(kM),
               f64s({-5.25, 5.5, -1.0, 5.5, -11.0, 5.5, -2.0, 5.5, -3.0}, {3, 3}), 1e-12, "grad det");
  expect_close(ts::grad([](const ts::Array& m) { return ts::linalg::slogdet(m).logabsdet; })(kM),
               f64s({-1.9090909090909094, 2, -0.36363636363636453, 2, -4, 2, -0.7272727272727271, 2, -1.0909090909090908},
                    {3, 3}),
               1e-12, "grad logabsdet");
  expect_close(ts::scipy::linalg::solve_triangular(kM, f64s({1, 2, 3}, {3}), 0, /*lower=*/true),
               f64s({1.0, -0.4, -0.06}, {3}), 1e-12, "solve_triangular");
}

// ---- reconstructions in every dtype ----

class LinalgDtypes : public testing::TestWithParam<ts::DType> {};
INSTANTIATE_TEST_SUITE_P(All, LinalgDtypes, testing::Values(ts::f32, ts::f64, ts::c64, ts::c128),
                         [](const auto& i) { return std::string(ts::dtype_name(i.param)); });

// Sizes on both sides of the small-matrix loops (n <= 16) and LAPACK (larger).
TEST_P(LinalgDtypes, CholeskyReconstructsAndIsLower) {
  const ts::DType dt = GetParam();
  for (ts::Shape shape : {ts::Shape{2, 5, 5}, ts::Shape{24, 24}}) {
    const ts::Array a = spd_matrix(shape, 1, dt);
    const ts::Array l = ts::linalg::cholesky(a);
    EXPECT_EQ(l.dtype(), dt);
    expect_near(ts::matmul(l, adjoint(l)), a, tol_of(dt) * 10, "L L^H");
    expect_near(l, tril(l), 0, "upper triangle is zero");
    expect_near(ts::linalg::cholesky(a, /*upper=*/true), adjoint(l), 0, "upper factor");
  }
}

TEST_P(LinalgDtypes, TriangularSolveAllVariants) {
  const ts::DType dt = GetParam();
  for (int64_t n : {4, 20}) {
    const ts::Array a = random_matrix({2, n, n}, 3, dt) + ts::eye(n, std::nullopt, 0, dt) * ts::Array(4.0).astype(dt);
    const ts::Array b_left = random_matrix({2, n, 3}, 4, dt), b_right = random_matrix({2, 3, n}, 5, dt);
    for (bool left : {true, false})
      for (bool lower : {true, false})
        for (bool trans : {false, true})
          for (bool conj : {false, true})
            for (bool unit : {false, true}) {
              const ts::Array tri = lower ? tril(a, unit ? -1 : 0) : triu(a, unit ? 1 : 0);
              ts::Array op = unit ? tri + ts::eye(n, std::nullopt, 0, dt) : tri;
              if (trans) op = ts::swapaxes(op, -1, -2);
              if (conj && ts::is_complex(dt)) op = ts::conj(op);
              const ts::Array& b = left ? b_left : b_right;
              const ts::Array x = la::triangular_solve(
                  a, b, {.left_side = left, .lower = lower, .transpose_a = trans, .conjugate_a = conj, .unit_diagonal = unit});
              expect_near(left ? ts::matmul(op, x) : ts::matmul(x, op), b, tol_of(dt) * 10,
                          "n " + std::to_string(n) + " left " + std::to_string(left) + " lower " + std::to_string(lower) +
                              " trans " + std::to_string(trans) + " conj " + std::to_string(conj) + " unit " +
                              std::to_string(unit));
            }
  }
}

TEST_P(LinalgDtypes, LuReconstructsPermutedMatrix) {
  const ts::DType dt = GetParam();
  for (ts::Shape shape : {ts::Shape{3, 5, 5}, ts::Shape{2, 6, 4}, ts::Shape{2, 3, 5}, ts::Shape{20, 20}, ts::Shape{24, 18}, ts::Shape{18, 24}}) {
    const ts::Array a = random_matrix(shape, 6, dt);
    const auto [p, l, u] = ts::scipy::linalg::lu(a);
    expect_near(ts::matmul(p, ts::matmul(l, u)), a, tol_of(dt) * 10, "P L U " + ts::shape_to_string(shape));
    const auto f = la::lu(a);
    EXPECT_EQ(la::lu_pivots_to_permutation(f.pivots, shape[shape.size() - 2]).to_vector<int32_t>(),
              f.permutation.to_vector<int32_t>())
        << ts::shape_to_string(shape);
  }
}

TEST_P(LinalgDtypes, QrReconstructsWithOrthonormalQ) {
  const ts::DType dt = GetParam();
  // 300 x 260 and 260 x 300: k >= 256 takes lapack.cpp's blocked geqrf / orgqr (4 blocks
  // of 64 columns and a partial one).
  for (ts::Shape shape : {ts::Shape{2, 5, 5}, ts::Shape{6, 3}, ts::Shape{2, 3, 6}, ts::Shape{20, 17}, ts::Shape{17, 20},
                          ts::Shape{300, 260}, ts::Shape{260, 300}})
    for (const char* mode : {"reduced", "complete"}) {
      const ts::Array a = random_matrix(shape, 7, dt);
      const auto [q, r] = ts::linalg::qr(a, mode);
      const std::string what = std::string(mode) + " " + ts::shape_to_string(shape);
      expect_near(ts::matmul(q, r), a, tol_of(dt) * 10, what + ": Q R");
      const int64_t k = q.dim(-1);
      expect_near(ts::matmul(adjoint(q), q), ts::broadcast_to(ts::eye(k, std::nullopt, 0, dt), ts::matmul(adjoint(q), q).shape()),
                  tol_of(dt) * 10, what + ": Q^H Q");
      expect_near(r, triu(r), 0, what + ": R upper");
    }
}

// permute_rows, the primitive that applies LU's row permutation in solves: whole rows moved,
// the inverse with `inverse`, a permutation broadcast over a batch, the derivative of a
// linear map (grad through its transpose, the inverse permutation) and vmap.
TEST(LinalgFactor, PermuteRowsMovesRowsAndTransposesToItsInverse) {
  namespace ops = ts::ops;
  const ts::Array x = random_matrix({3, 4, 2}, 40);
  const ts::Array perm(std::vector<int32_t>{2, 0, 3, 1, 0, 1, 2, 3, 3, 2, 1, 0}, {3, 4});
  const ts::Array p = ops::permute_rows(x, perm);
  expect_close(p, ts::matmul(ops::permutation_matrix(perm, ts::f64), x), 0, "P x");
  expect_close(ops::permute_rows(p, perm, /*inverse=*/true), x, 0, "P^T P x");
  const ts::Array one = ts::slice_in_dim(perm, 0, 1, 1, 0).reshape({4});
  expect_close(ops::permute_rows(x, one), ts::matmul(ops::permutation_matrix(one, ts::f64), x), 0, "broadcast");
  check_grads([&](const V& v) { return ts::sum(ops::permute_rows(v[0], perm) * v[0]); }, {x});
  check_grads([&](const V& v) { return ops::permute_rows(v[0], perm, true); }, {x});
  check_vmap([&](const V& v) { return ops::permute_rows(v[0], one); }, {x}, {0});
  check_vmap([](const V& v) { return ops::permute_rows(v[0], v[1]); }, {x, perm}, {0, 0});
  tessel_test::expect_error<ts::ShapeError>([&] { ops::permute_rows(x, ts::slice_in_dim(one, 0, 3)); },
                               {"permute_rows", "(..., 4)", "(3, 4, 2)", "(3,)"});
}

// The blocked geqrf of large matrices (64-column blocks) against LAPACK's own dgeqrf (32):
// the same reflectors, to rounding.
TEST(LinalgFactor, BlockedGeqrfMatchesLapack) {
  for (auto [m, n] : std::vector<std::pair<int64_t, int64_t>>{{300, 270}, {270, 330}}) {
    const int64_t k = std::min(m, n);
    const std::vector<double> a = random_matrix({m, n}, 17).to_vector<double>();
    std::vector<double> h(a.size()), tau(static_cast<size_t>(k));
    ts::cpu::geqrf(ts::f64, 1, m, n, a.data(), h.data(), tau.data());
    std::vector<double> want(a.size()), want_tau(static_cast<size_t>(k));  // column-major A, factored in place
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) want[size_t(i + j * m)] = a[size_t(i * n + j)];
    ASSERT_EQ(LAPACKE_dgeqrf(LAPACK_COL_MAJOR, int(m), int(n), want.data(), int(m), want_tau.data()), 0);
    for (int64_t i = 0; i < k; ++i) EXPECT_NEAR(tau[size_t(i)], want_tau[size_t(i)], 1e-12) << "tau " << i;
    double worst = 0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) worst = std::max(worst, std::abs(h[size_t(i * n + j)] - want[size_t(i + j * m)]));
    EXPECT_LT(worst, 1e-11) << m << " x " << n;
  }
}

TEST_P(LinalgDtypes, EighReconstructsWithAscendingEigenvalues) {
  const ts::DType dt = GetParam();
  const ts::Array a = spd_matrix({3, 6, 6}, 8, dt) - ts::eye(6, std::nullopt, 0, dt) * ts::Array(7.0).astype(dt);
  const auto [w, v] = ts::linalg::eigh(a);
  EXPECT_EQ(w.dtype(), ts::real_dtype(dt));
  expect_near(ts::matmul(v * ts::expand_dims(w.astype(dt), {1}), adjoint(v)), a, tol_of(dt) * 20, "V diag(w) V^H");
  const auto ws = vals(w);
  for (size_t i = 0; i + 1 < ws.size(); ++i) {
    if ((i + 1) % 6 != 0) {
      EXPECT_LE(ws[i], ws[i + 1]);
    }
  }
  // Without symmetrization only the named triangle is read.
  const ts::Array junk_upper = tril(a) + triu(random_matrix({3, 6, 6}, 9, dt), 1);
  expect_near(ts::linalg::eigvalsh(junk_upper, "L", false), w, tol_of(dt) * 20, "lower triangle only");
}

// 80 x 80: the eigenvectors come back through OpenBLAS's omatcopy (conjugating for complex
// dtypes) rather than the tiled loop of small matrices.
TEST_P(LinalgDtypes, EighOfALargerMatrixReconstructs) {
  const ts::DType dt = GetParam();
  const ts::Array a = spd_matrix({80, 80}, 18, dt) - ts::eye(80, std::nullopt, 0, dt) * ts::Array(90.0).astype(dt);
  const auto [w, v] = ts::linalg::eigh(a);
  expect_near(ts::matmul(v * ts::expand_dims(w.astype(dt), {0}), adjoint(v)), a, tol_of(dt) * 100, "V diag(w) V^H");
  expect_near(ts::matmul(adjoint(v), v), ts::eye(80, std::nullopt, 0, dt), tol_of(dt) * 10, "V^H V");
}

TEST_P(LinalgDtypes, SvdReconstructs) {
  const ts::DType dt = GetParam();
  for (ts::Shape shape : {ts::Shape{2, 5, 5}, ts::Shape{6, 3}, ts::Shape{2, 3, 6}})
    for (bool full : {false, true}) {
      const ts::Array a = random_matrix(shape, 10, dt);
      const auto [u, s, vh] = ts::linalg::svd(a, full);
      const int64_t m = shape[shape.size() - 2], n = shape.back(), k = std::min(m, n);
      const std::string what = (full ? "full " : "thin ") + ts::shape_to_string(shape);
      EXPECT_EQ(u.dim(-1), full ? m : k) << what;
      EXPECT_EQ(vh.dim(-2), full ? n : k) << what;
      const ts::Array uk = ts::slice_in_dim(u, 0, k, 1, u.ndim() - 1), vk = ts::slice_in_dim(vh, 0, k, 1, vh.ndim() - 2);
      expect_near(ts::matmul(uk * ts::expand_dims(s.astype(dt), {s.ndim() - 1}), vk), a, tol_of(dt) * 10, what);
      expect_near(ts::linalg::svdvals(a), s, tol_of(dt) * 10, what + ": svdvals");
    }
}

TEST_P(LinalgDtypes, SolveInvDetSlogdet) {
  const ts::DType dt = GetParam();
  const ts::Array a = random_matrix({2, 4, 4}, 11, dt) + ts::eye(4, std::nullopt, 0, dt) * ts::Array(2.0).astype(dt);
  const ts::Array b = random_matrix({2, 4, 3}, 12, dt);
  expect_near(ts::matmul(a, ts::linalg::solve(a, b)), b, tol_of(dt) * 10, "a solve(a, b)");
  expect_near(ts::matmul(a, ts::linalg::inv(a)), ts::broadcast_to(ts::eye(4, std::nullopt, 0, dt), {2, 4, 4}),
              tol_of(dt) * 10, "a inv(a)");
  const auto [sign, logabs] = ts::linalg::slogdet(a);
  expect_near(sign * ts::exp(logabs).astype(dt), ts::linalg::det(a), tol_of(dt) * 10, "slogdet vs det");
  // det of a triangular matrix is the product of its diagonal.
  const ts::Array t = triu(a);
  expect_near(ts::linalg::det(t), ts::prod(ts::sum(ts::multiply(t, ts::eye(4, std::nullopt, 0, dt)), {-1}), {-1}),
              tol_of(dt) * 10, "det of triangular");
  const auto c = ts::scipy::linalg::cho_factor(spd_matrix({4, 4}, 13, dt), /*lower=*/false);
  expect_near(ts::matmul(spd_matrix({4, 4}, 13, dt), ts::scipy::linalg::cho_solve(c, b)), b, tol_of(dt) * 10,
              "cho_solve");
  const auto lf = ts::scipy::linalg::lu_factor(a);
  for (int trans : {0, 1, 2}) {
    ts::Array op = trans == 0 ? a : ts::swapaxes(a, -1, -2);
    if (trans == 2 && ts::is_complex(dt)) op = ts::conj(op);
    expect_near(ts::matmul(op, ts::scipy::linalg::lu_solve(lf, b, trans)), b, tol_of(dt) * 10,
                "lu_solve trans " + std::to_string(trans));
  }
}

// The geev binding (for jnp.linalg.eig): A v = w v and u^H A = w u^H for every pair, for a
// real matrix with a complex pair of eigenvalues and for a complex matrix.
TEST(LinalgFactor, GeevBindingGivesEigenpairs) {
  using C = std::complex<double>;
  auto check = [](ts::DType dt, const std::vector<C>& a, int64_t n) {
    std::vector<C> w(static_cast<size_t>(n)), vl(static_cast<size_t>(n * n)), vr(static_cast<size_t>(n * n));
    if (dt == ts::f64) {
      std::vector<double> re;
      for (C z : a) re.push_back(z.real());
      ts::cpu::eig(dt, 1, n, re.data(), w.data(), vl.data(), vr.data());
    } else {
      ts::cpu::eig(dt, 1, n, a.data(), w.data(), vl.data(), vr.data());
    }
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < n; ++i) {
        C av = 0, ua = 0;
        for (int64_t k = 0; k < n; ++k) {
          av += a[size_t(i * n + k)] * vr[size_t(k * n + j)];
          ua += std::conj(vl[size_t(k * n + j)]) * a[size_t(k * n + i)];
        }
        EXPECT_LT(std::abs(av - w[size_t(j)] * vr[size_t(i * n + j)]), 1e-10) << ts::dtype_name(dt) << " right " << j;
        EXPECT_LT(std::abs(ua - w[size_t(j)] * std::conj(vl[size_t(i * n + j)])), 1e-10) << ts::dtype_name(dt) << " left " << j;
      }
  };
  check(ts::f64, {0, -2, 0, 1, 0, 0, 0, 0, 3}, 3);  // eigenvalues +-i sqrt(2) and 3
  check(ts::c128, {C(1, 1), C(2, 0), C(0, -1), C(0, 3), C(-1, 0), C(2, 2), C(1, 0), C(0, 1), C(4, -1)}, 3);
}

// tridiagonal_solve against the dense solve of the same matrix, its rules, and its errors.
TEST(LinalgFactor, TridiagonalSolve) {
  const int64_t m = 6;
  const ts::Array dl = random_matrix({2, m}, 40), d = random_matrix({2, m}, 41) + ts::Array(4.0),
                  du = random_matrix({2, m}, 42), b = random_matrix({2, m, 3}, 43);
  // The dense matrix: d on the diagonal, dl[i] at (i, i-1), du[i] at (i, i+1).
  auto dense = [m](const ts::Array& l, const ts::Array& c, const ts::Array& u) {
    const ts::Array r = ts::iota(ts::i32, {m, m}, 0), k = ts::iota(ts::i32, {m, m}, 1);
    auto at = [&](const ts::Array& v, int off) {  // v[..., i] at (i, i + off)
      return ts::where(ts::equal(k - r, ts::Array(int32_t(off))), ts::expand_dims(v, {-1}) * ts::ones({m, m}, ts::f64),
                       ts::zeros({m, m}, ts::f64));
    };
    return at(l, -1) + at(c, 0) + at(u, 1);
  };
  const ts::Array x = la::tridiagonal_solve(dl, d, du, b);
  expect_close(ts::matmul(dense(dl, d, du), x), b, 1e-12, "A x = b");
  expect_close(ts::jit([](const V& v) { return la::tridiagonal_solve(v[0], v[1], v[2], v[3]); })(V{dl, d, du, b}), x,
               1e-14, "jit");
  check_grads([](const V& v) { return la::tridiagonal_solve(v[0], v[1], v[2], v[3]); }, {dl, d, du, b});
  // vmap with the three diagonals stacked into one argument (..., 3, m).
  auto f = [](const V& v) {
    auto diag = [&](int64_t i) { return ts::squeeze(ts::slice_in_dim(v[0], i, i + 1, 1, v[0].ndim() - 2), ts::Axes{v[0].ndim() - 2}); };
    return la::tridiagonal_solve(diag(0), diag(1), diag(2), v[1]);
  };
  const ts::Array diags = ts::stack({dl, d, du}, 1);  // (2, 3, m)
  check_vmap(f, {diags, b}, {0, 0});
  check_vmap(f, {ts::slice(diags, {0, 0, 0}, {1, 3, m}).reshape({3, m}), b}, {std::nullopt, 0});
  check_vmap(f, {diags, ts::slice(b, {0, 0, 0}, {1, m, 3}).reshape({m, 3})}, {0, std::nullopt});
  EXPECT_THROW(la::tridiagonal_solve(dl, d, du, random_matrix({2, m + 1, 3}, 44)), ts::ShapeError);
  EXPECT_THROW(la::tridiagonal_solve(dl, d.astype(ts::f32), du, b), ts::DTypeError);
}

// Matrices large enough to run alone with OpenBLAS's threads (src/backend/cpu/lapack.cpp).
TEST(LinalgFactor, LargeMatricesReconstruct) {
  const int64_t n = 420;
  const ts::Array a = spd_matrix({n, n}, 50);
  const ts::Array l = ts::linalg::cholesky(a);
  expect_close(ts::matmul(l, ts::swapaxes(l, 0, 1)), a, 1e-12, "L L^T");
  const ts::Array b = random_matrix({n, 3}, 51);
  expect_close(ts::matmul(a, ts::linalg::solve(a, b)), b, 1e-10, "a solve(a, b)");
  const auto [q, r] = ts::linalg::qr(random_matrix({n, 300}, 52));
  expect_close(ts::matmul(q, r), random_matrix({n, 300}, 52), 1e-12, "Q R");
  const auto [w, v] = ts::linalg::eigh(a);
  expect_close(ts::matmul(v * ts::expand_dims(w, {0}), ts::swapaxes(v, 0, 1)), a, 1e-12, "V diag(w) V^T");
}

// ---- failures as JAX ----

TEST(LinalgFactor, NotPositiveDefiniteGivesNan) {
  const ts::Array a = f64s({1, 2, 2, 1}, {2, 2});  // eigenvalues 3 and -1
  const ts::Array both = ts::stack({a, ts::slice(kSpd, {0, 0}, {2, 2})});
  const auto l = vals(ts::linalg::cholesky(both));
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(std::isnan(l[size_t(i)])) << i;
  for (int i = 4; i < 8; ++i) EXPECT_FALSE(std::isnan(l[size_t(i)])) << i;  // the other matrix of the batch
}

TEST(LinalgFactor, SingularSolveGivesInfOrNan) {
  const ts::Array a = f64s({1, 2, 2, 4}, {2, 2});
  bool bad = false;
  for (double v : vals(ts::linalg::solve(a, f64s({1, 1}, {2})))) bad |= !std::isfinite(v);
  EXPECT_TRUE(bad);
  EXPECT_EQ(vals(ts::linalg::det(a))[0], 0.0);
  EXPECT_EQ(vals(ts::linalg::slogdet(a).sign)[0], 0.0);
  EXPECT_EQ(vals(ts::linalg::slogdet(a).logabsdet)[0], -std::numeric_limits<double>::infinity());
}

TEST(LinalgFactor, ErrorsNameTheFunctionAndShape) {
  using tessel_test::expect_error;
  expect_error<ts::ShapeError>([] { ts::linalg::cholesky(ts::ones({3, 4}, ts::f32)); }, {"cholesky", "(3, 4)"});
  EXPECT_THROW(ts::linalg::eigh(ts::ones({4}, ts::f32)), ts::ShapeError);
  EXPECT_THROW(ts::linalg::det(ts::ones({2, 3}, ts::f32)), ts::ShapeError);
  EXPECT_THROW(ts::linalg::solve(ts::ones({3, 3}, ts::f32), ts::ones({4}, ts::f32)), ts::ShapeError);
  EXPECT_THROW(la::cholesky(ts::ones({3, 3}, ts::i32)), ts::DTypeError);
  EXPECT_THROW(la::triangular_solve(ts::ones({3, 3}), ts::ones({3, 2}), {.left_side = false}), ts::ShapeError);
  EXPECT_THROW(la::triangular_solve(ts::ones({3, 3}), ts::ones({3, 3}, ts::f64)), ts::DTypeError);
  EXPECT_THROW(ts::linalg::qr(ts::ones({3, 3}), "economic"), ts::ValueError);
  // geqrf has no derivative, as in JAX: the error names the primitive.
  expect_error<ts::Error>(
      [] { ts::grad([](const ts::Array& x) { return ts::sum(ts::linalg::qr(x, "raw").r); })(ts::ones({3, 3}, ts::f64)); },
      {"geqrf"});
  EXPECT_THROW(ts::linalg::eigh(ts::ones({3, 3}), "X"), ts::ValueError);
  expect_error<ts::ShapeError>([] { ts::linalg::svd(ts::ones({5}, ts::f32)); }, {"svd", "(5,)"});
  // Integer inputs are converted to float, as jnp.linalg does.
  EXPECT_EQ(ts::linalg::det(ts::Array(std::vector<int32_t>{2, 0, 0, 3}, {2, 2})).dtype(), ts::f32);
}

// ---- jit and vmap ----

TEST(LinalgFactor, JitMatchesEager) {
  const ts::Array a = spd_matrix({3, 4, 4}, 14);
  auto f = [](const ts::Array& x) {
    const auto [w, v] = ts::linalg::eigh(x);
    const auto [q, r] = ts::linalg::qr(x);
    return ts::sum(ts::linalg::cholesky(x)) + ts::sum(w) + ts::sum(ts::abs(r)) + ts::sum(ts::linalg::svdvals(x)) +
           ts::sum(ts::linalg::det(x)) + ts::sum(ts::linalg::solve(x, x));
  };
  expect_close(ts::jit(f)(a), f(a), 1e-12, "jit");
}

TEST(LinalgFactor, VmapMatchesLoop) {
  const ts::Array a = spd_matrix({3, 4, 4}, 15);
  const ts::Array stacked = ts::moveaxis(a, 0, 2);  // mapped axis last
  for (int64_t axis : {0, 2}) {
    const ts::Array x = axis == 0 ? a : stacked;
    check_vmap([](const V& v) { return ts::linalg::cholesky(v[0]); }, {x}, {axis});
    check_vmap([](const V& v) { return ts::linalg::eigvalsh(v[0]); }, {x}, {axis});
    check_vmap([](const V& v) { return ts::abs(ts::linalg::qr(v[0]).r); }, {x}, {axis});
    check_vmap([](const V& v) { return ts::linalg::svdvals(v[0]); }, {x}, {axis});
    check_vmap([](const V& v) { return ts::scipy::linalg::lu_factor(v[0]).lu; }, {x}, {axis});
    check_vmap([](const V& v) { return ts::linalg::det(v[0]); }, {x}, {axis});
  }
  // Solves: both batched, only b batched (the rule folds the batch into b's columns or
  // rows), only a batched.
  const ts::Array m = spd_matrix({4, 4}, 16), b = random_matrix({3, 4, 2}, 17);
  for (bool left : {true, false}) {
    const ts::Array rhs = left ? b : ts::swapaxes(b, -1, -2);
    auto solve = [left](const V& v) {
      return la::triangular_solve(v[0], v[1], {.left_side = left, .lower = true});
    };
    check_vmap(solve, {a, rhs}, {0, 0});
    check_vmap(solve, {m, rhs}, {std::nullopt, 0});
    check_vmap(solve, {m, ts::moveaxis(rhs, 0, 2)}, {std::nullopt, 2});
    check_vmap(solve, {a, left ? ts::Array(random_matrix({4, 2}, 18)) : ts::Array(random_matrix({2, 4}, 18))},
               {0, std::nullopt});
  }
  check_vmap([](const V& v) { return ts::linalg::solve(v[0], v[1]); }, {a, b}, {0, 0});
}

// ---- gradients against finite differences (float64) ----

TEST(LinalgFactorGrads, Solve) {
  const ts::Array a = random_matrix({3, 3}, 20) + ts::eye(3, std::nullopt, 0, ts::f64) * ts::Array(3.0);
  check_grads([](const V& v) { return ts::linalg::solve(v[0], v[1]); }, {a, random_matrix({3, 2}, 21)});
  check_grads([](const V& v) { return ts::linalg::inv(v[0]); }, {a});
}

TEST(LinalgFactorGrads, Cholesky) {
  check_grads([](const V& v) { return ts::linalg::cholesky(v[0]); }, {spd_matrix({2, 4, 4}, 22)});
}

TEST(LinalgFactorGrads, TriangularSolve) {
  const ts::Array a = random_matrix({4, 4}, 23) + ts::eye(4, std::nullopt, 0, ts::f64) * ts::Array(3.0);
  for (bool left : {true, false})
    for (bool lower : {true, false})
      for (bool trans : {false, true})
        for (bool unit : {false, true})
          check_grads(
              [=](const V& v) {
                return la::triangular_solve(v[0], v[1],
                                            {.left_side = left, .lower = lower, .transpose_a = trans, .unit_diagonal = unit});
              },
              {a, left ? random_matrix({4, 2}, 24) : random_matrix({2, 4}, 24)});
}

TEST(LinalgFactorGrads, Eigh) {
  // Distinct eigenvalues; eigenvectors enter through a sign-invariant function of them.
  const ts::Array a = spd_matrix({4, 4}, 25);
  check_grads([](const V& v) { return ts::linalg::eigvalsh(v[0]); }, {a});
  check_grads(
      [](const V& v) {
        const auto [w, vec] = ts::linalg::eigh(v[0]);
        return ts::matmul(vec * ts::expand_dims(ts::sqrt(w), {0}), ts::swapaxes(vec, -1, -2));  // sqrt(A)
      },
      {a});
}

TEST(LinalgFactorGrads, Svd) {
  for (ts::Shape shape : {ts::Shape{4, 4}, ts::Shape{5, 3}, ts::Shape{3, 5}}) {
    const ts::Array a = random_matrix(shape, 26);
    check_grads([](const V& v) { return ts::linalg::svdvals(v[0]); }, {a});
    check_grads(
        [](const V& v) {
          const auto [u, s, vh] = ts::linalg::svd(v[0], false);
          // u diag(1 / s) vh and the projector u u^T do not depend on the signs of the vectors.
          return ts::concatenate({ts::reshape(ts::matmul(u * ts::expand_dims(ts::reciprocal(s), {0}), vh), {-1}),
                                  ts::reshape(ts::matmul(u, ts::swapaxes(u, -1, -2)), {-1})});
        },
        {a});
  }
}

TEST(LinalgFactorGrads, DetAndSlogdet) {
  const ts::Array a = random_matrix({2, 4, 4}, 27);
  check_grads([](const V& v) { return ts::linalg::det(v[0]); }, {a});
  check_grads([](const V& v) { return ts::linalg::slogdet(v[0]).logabsdet; }, {a});
  // A singular matrix of rank n - 1 still has a gradient (the adjugate), as in JAX.
  const ts::Array s = f64s({1, 2, 3, 2, 4, 6, 1, 0, 1}, {3, 3});
  expect_close(ts::grad([](const ts::Array& m) { return ts::linalg::det(m); })(s),
               f64s({4, 4, -4, -2, -2, 2, 0, 0, 0}, {3, 3}), 1e-10, "grad det of a singular matrix (JAX's value)");
}

TEST(LinalgFactorGrads, QrAndLu) {
  for (ts::Shape shape : {ts::Shape{4, 4}, ts::Shape{5, 3}, ts::Shape{3, 5}}) {
    const ts::Array a = random_matrix(shape, 28);
    check_grads([](const V& v) { return ts::concatenate({ts::reshape(ts::linalg::qr(v[0]).q, {-1}),
                                                          ts::reshape(ts::linalg::qr(v[0]).r, {-1})}); },
                {a});
    check_grads([](const V& v) { return la::lu(v[0]).lu; }, {a});
  }
  // Complete QR of a tall matrix (the complement of Q has its own rule).
  check_grads([](const V& v) { return ts::linalg::qr(v[0], "complete").q; }, {random_matrix({5, 3}, 29)});
}

// Complex inputs enter as (real, imaginary) float64 pairs and results leave as real and
// imaginary parts, so the same finite-difference check covers the complex rules.
TEST(LinalgFactorGrads, ComplexInputs) {
  auto parts = [](const ts::Array& z) {
    if (!ts::is_complex(z.dtype())) return z;
    return z.ndim() == 0 ? ts::stack({ts::real(z), ts::imag(z)}) : ts::concatenate({ts::real(z), ts::imag(z)}, -1);
  };
  auto hermitian = [](const V& v) {  // X X^H + 3 I from the (re, im) pair
    const ts::Array x = ts::complex(v[0], v[1]);
    return ts::matmul(x, adjoint(x)) + ts::eye(3, std::nullopt, 0, ts::c128) * ts::Array(3.0).astype(ts::c128);
  };
  const V args{random_matrix({3, 3}, 60), random_matrix({3, 3}, 61)};
  check_grads([&](const V& v) { return parts(ts::linalg::cholesky(hermitian(v))); }, args);
  check_grads([&](const V& v) { return ts::linalg::eigvalsh(hermitian(v)); }, args);
  check_grads([&](const V& v) { return parts(ts::linalg::solve(ts::complex(v[0], v[1]), ts::complex(v[1], v[0]))); },
              args);
  check_grads([&](const V& v) { return parts(ts::linalg::det(ts::complex(v[0], v[1]))); }, args);
  check_grads([&](const V& v) { return ts::linalg::slogdet(ts::complex(v[0], v[1])).logabsdet; }, args);
  check_grads([&](const V& v) { return ts::linalg::svdvals(ts::complex(v[0], v[1])); }, args);
  check_grads(
      [&](const V& v) {
        const auto [q, r] = ts::linalg::qr(ts::complex(v[0], v[1]));
        return ts::concatenate({ts::reshape(parts(q), {-1}), ts::reshape(parts(r), {-1})});
      },
      args);
  check_grads([&](const V& v) { return parts(la::lu(ts::complex(v[0], v[1])).lu); }, args);
  // Phase-invariant functions of the vectors: sqrt(A) from eigh, u diag(1 / s) vh from svd.
  check_grads(
      [&](const V& v) {
        const auto [w, vec] = ts::linalg::eigh(hermitian(v));
        return parts(ts::matmul(vec * ts::expand_dims(ts::sqrt(w).astype(ts::c128), {0}), adjoint(vec)));
      },
      args);
  check_grads(
      [&](const V& v) {
        const auto [u, s, vh] = ts::linalg::svd(ts::complex(v[0], v[1]), false);
        return parts(ts::matmul(u * ts::expand_dims(ts::reciprocal(s).astype(ts::c128), {0}), vh));
      },
      args);
  check_grads(
      [&](const V& v) {
        return parts(la::triangular_solve(ts::complex(v[0], v[1]) + ts::eye(3, std::nullopt, 0, ts::c128) * ts::Array(3.0).astype(ts::c128),
                                          ts::complex(v[1], v[0]),
                                          {.left_side = true, .lower = true, .transpose_a = true, .conjugate_a = true}));
      },
      args);
}

// ---- sharding ----

TEST(LinalgFactor, ShardedBatchStaysPartitioned) {
  const ts::NamedSharding rows = linalg_testing::batch_sharding();
  const ts::Array a = spd_matrix({8, 4, 4}, 30);
  auto row = [](const ts::Array& x, int64_t i) { return ts::squeeze(ts::slice_in_dim(x, i, i + 1, 1, 1), ts::Axes{1}); };
  auto f = [row](const ts::Array& x) {
    const auto [w, v] = ts::linalg::eigh(x);
    const auto [u, s, vh] = ts::linalg::svd(x, false);
    const auto [q, r] = ts::linalg::qr(x);
    return ts::linalg::cholesky(x) + ts::expand_dims(w + s + ts::expand_dims(ts::linalg::det(x), {1}), {1}) +
           ts::abs(r) + ts::scipy::linalg::lu_factor(x).lu + la::triangular_solve(x, x, {.left_side = true, .lower = true}) +
           la::tridiagonal_solve(row(x, 0), row(x, 1) + ts::Array(8.0), row(x, 2), x);
  };
  auto jf = ts::jit(f, {.in_shardings = {rows}});
  linalg_testing::expect_no_batch_collectives(jf.lower(a).compile().as_text());
  expect_close(jf(ts::device_put(a, rows)), f(a), 1e-10, "sharded vs one device");
}

}  // namespace
