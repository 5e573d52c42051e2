// The batched Jacobi kernels (src/backend/cpu/jacobi.h) that eigh and svd use for batches of
// small real matrices: their values against LAPACK's (one syevd / gesdd call per matrix) on
// random, degenerate, ill-conditioned, badly scaled and rank-deficient matrices, batch sizes
// that leave a partial group of lanes, every matrix size up to the limit, and NaN and inf
// entries (reported to the caller, which computes those matrices with LAPACK).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/jacobi.h"
#include "backend/cpu/lapack.h"
#include "tessel/linalg.h"
#include "tessel/tessel.h"

namespace {

namespace ts = tessel;
namespace cpu = tessel::cpu;

template <class T> constexpr ts::DType dtype_of() { return std::is_same_v<T, float> ? ts::f32 : ts::f64; }
template <class T> double tol() { return std::is_same_v<T, float> ? 3e-5 : 1e-13; }

/// `batch` symmetric n x n matrices Q diag(w) Q^T with Q a random orthogonal matrix and w
/// from `eigenvalues(b, i)` (random entries in [-1, 1] when it is null: then the matrices
/// are (X + X^T) / 2 of random X).
template <class T>
std::vector<T> symmetric(int64_t batch, int64_t n, unsigned seed, double (*eigenvalues)(int64_t, int64_t) = nullptr) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<T> out(size_t(batch * n * n));
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<double> x(size_t(n * n));
    for (auto& v : x) v = u(gen);
    T* a = out.data() + b * n * n;
    if (!eigenvalues) {
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) a[i * n + j] = T((x[size_t(i * n + j)] + x[size_t(j * n + i)]) / 2);
      continue;
    }
    // Q from Gram-Schmidt on the columns of x.
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t k = 0; k < j; ++k) {
        double d = 0;
        for (int64_t i = 0; i < n; ++i) d += x[size_t(i * n + j)] * x[size_t(i * n + k)];
        for (int64_t i = 0; i < n; ++i) x[size_t(i * n + j)] -= d * x[size_t(i * n + k)];
      }
      double nrm = 0;
      for (int64_t i = 0; i < n; ++i) nrm += x[size_t(i * n + j)] * x[size_t(i * n + j)];
      for (int64_t i = 0; i < n; ++i) x[size_t(i * n + j)] /= std::sqrt(nrm);
    }
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t k = 0; k < n; ++k) s += x[size_t(i * n + k)] * eigenvalues(b, k) * x[size_t(j * n + k)];
        a[i * n + j] = T(s);
      }
  }
  return out;
}

template <class T> std::vector<T> random_values(int64_t count, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<T> out(static_cast<size_t>(count));
  for (auto& v : out) v = T(u(gen));
  return out;
}

template <class T> double max_abs(const T* x, int64_t n) {
  double m = 0;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, std::abs(double(x[i])));
  return m;
}

/// Checks one eigendecomposition of the n x n matrix a (lower triangle read): V^T V = I,
/// V diag(w) V^T = A and w ascending, each within tol * ||A||; and w against LAPACK's
/// (syevd on this matrix alone).
template <class T> void check_eigh(const T* a, int64_t n, const T* w, const T* v, const std::string& what) {
  const double scale = std::max(max_abs(a, n * n), std::numeric_limits<double>::min());
  std::vector<T> w_ref(static_cast<size_t>(n)), v_ref(static_cast<size_t>(n * n));
  cpu::eigh(dtype_of<T>(), 1, n, a, v_ref.data(), w_ref.data(), /*lower=*/true);
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_NEAR(double(w[i]), double(w_ref[size_t(i)]), tol<T>() * n * scale) << what << ": eigenvalue " << i;
    if (i > 0) {
      EXPECT_LE(w[i - 1], w[i]) << what << ": eigenvalues ascending";
    }
  }
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double vtv = 0, rec = 0;
      for (int64_t k = 0; k < n; ++k) {
        vtv += double(v[k * n + i]) * double(v[k * n + j]);
        rec += double(v[i * n + k]) * double(w[k]) * double(v[j * n + k]);
      }
      EXPECT_NEAR(vtv, i == j ? 1.0 : 0.0, tol<T>() * n) << what << ": V^T V at " << i << ", " << j;
      const double want = double(a[std::max(i, j) * n + std::min(i, j)]);
      EXPECT_NEAR(rec, want, tol<T>() * n * scale) << what << ": V diag(w) V^T at " << i << ", " << j;
    }
}

/// Runs eigh on `batch` matrices through the public API (whose batches of small real
/// matrices take the Jacobi kernels) and checks every matrix.
template <class T> void check_eigh_batch(const std::vector<T>& a, int64_t batch, int64_t n, const std::string& what) {
  const ts::Array x(a, {batch, n, n});
  const auto [w, v] = ts::linalg::eigh(x);
  const std::vector<T> wv = w.to_vector<T>(), vv = v.to_vector<T>();
  for (int64_t b = 0; b < batch; ++b)
    check_eigh(a.data() + b * n * n, n, wv.data() + b * n, vv.data() + b * n * n, what + " #" + std::to_string(b));
}

template <class T> class LinalgJacobi : public ::testing::Test {};
using Reals = ::testing::Types<float, double>;
TYPED_TEST_SUITE(LinalgJacobi, Reals);

TYPED_TEST(LinalgJacobi, EighMatchesLapackOnEverySizeAndOddBatches) {
  using T = TypeParam;
  for (int64_t n : {2, 3, 5, 8, 13, 16})
    for (int64_t batch : {8, 16, 37}) {  // a partial group of lanes, one, and two and a part
      const std::vector<T> a = symmetric<T>(batch, n, unsigned(n * 100 + batch));
      check_eigh_batch(a, batch, n, "n=" + std::to_string(n) + " batch=" + std::to_string(batch));
    }
}

TYPED_TEST(LinalgJacobi, EighDegenerateAndIllConditioned) {
  using T = TypeParam;
  const int64_t n = 8, batch = 20;
  // Repeated eigenvalues (an orthonormal basis of each eigenspace is still required).
  check_eigh_batch(symmetric<T>(batch, n, 1, [](int64_t, int64_t k) { return double(k / 3); }), batch, n,
                   "repeated eigenvalues");
  // One eigenvalue of multiplicity n (a multiple of the identity), and the zero matrix.
  check_eigh_batch(symmetric<T>(batch, n, 2, [](int64_t b, int64_t) { return double(b % 2) * 3.0; }), batch, n,
                   "scalar matrices");
  // Eigenvalues spread over 12 (float64: 24) orders of magnitude, both signs.
  check_eigh_batch(symmetric<T>(batch, n, 3,
                                [](int64_t b, int64_t k) {
                                  const double span = std::is_same_v<T, float> ? 12.0 : 24.0;
                                  return (k % 2 ? -1.0 : 1.0) * std::pow(10.0, span * double(k) / 7 - span / 2 + double(b % 3));
                                }),
                   batch, n, "ill-conditioned");
  // Entries near the top and the bottom of the exponent range: squares would overflow or
  // vanish without the kernels' power-of-two scaling.
  for (double s : {1e30, 1e-30}) {
    std::vector<T> a = symmetric<T>(batch, n, 4);
    for (auto& x : a) x = T(double(x) * s);
    check_eigh_batch(a, batch, n, "scaled by " + std::to_string(s));
  }
}

TYPED_TEST(LinalgJacobi, EighUpperTriangleAndValuesOnly) {
  using T = TypeParam;
  const int64_t n = 6, batch = 17;
  std::vector<T> a = symmetric<T>(batch, n, 5);
  std::vector<T> junk = a;  // the lower triangle replaced by noise: "U" reads the upper one
  const std::vector<T> noise = random_values<T>(batch * n * n, 6);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < i; ++j) junk[size_t(b * n * n + i * n + j)] = noise[size_t(b * n * n + i * n + j)];
  const ts::Array x(a, {batch, n, n}), xu(junk, {batch, n, n});
  const std::vector<T> w = ts::linalg::eigh(x).eigenvalues.to_vector<T>();
  const std::vector<T> wu = ts::linalg::eigh(xu, "U", false).eigenvalues.to_vector<T>();
  const std::vector<T> wo = ts::linalg::eigvalsh(x).to_vector<T>();
  for (size_t i = 0; i < w.size(); ++i) {
    EXPECT_NEAR(double(wu[i]), double(w[i]), tol<T>() * 10) << "upper triangle, value " << i;
    EXPECT_NEAR(double(wo[i]), double(w[i]), tol<T>() * 10) << "eigvalsh, value " << i;
  }
}

// A matrix's result is the same, bit for bit, whatever the other matrices of its group of
// lanes are (converged lanes stop rotating while the others go on): vmap and a batch split
// differently give the same values.
TYPED_TEST(LinalgJacobi, ResultsDoNotDependOnTheOtherMatricesOfTheGroup) {
  using T = TypeParam;
  const int64_t n = 7, batch = 16;
  // a: nearly diagonal matrices, done in a sweep or two. b: matrix 5 of a among dense random
  // matrices that take several sweeps more, and the identity (no rotation at all).
  std::vector<T> a = symmetric<T>(batch, n, 21), b = symmetric<T>(batch, n, 22);
  for (int64_t m = 0; m < batch; ++m)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        T& x = a[size_t(m * n * n + i * n + j)];
        x = i == j ? T(i + 1) : x * T(1e-3);
      }
  std::copy(a.begin() + 5 * n * n, a.begin() + 6 * n * n, b.begin() + 5 * n * n);
  std::fill(b.begin() + 9 * n * n, b.begin() + 10 * n * n, T(0));
  for (int64_t i = 0; i < n; ++i) b[size_t(9 * n * n + i * n + i)] = T(1);
  std::vector<T> wa(size_t(batch * n)), va(size_t(batch * n * n)), wb(wa.size()), vb(va.size());
  ASSERT_EQ(cpu::jacobi_eigh(batch, n, a.data(), true, wa.data(), va.data()), 0u);
  ASSERT_EQ(cpu::jacobi_eigh(batch, n, b.data(), true, wb.data(), vb.data()), 0u);
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(wa[size_t(5 * n + i)], wb[size_t(5 * n + i)]) << "eigenvalue " << i;
  for (int64_t i = 0; i < n * n; ++i) EXPECT_EQ(va[size_t(5 * n * n + i)], vb[size_t(5 * n * n + i)]) << "vector entry " << i;
  std::vector<T> sa(size_t(batch * n)), ua(size_t(batch * n * n)), ta(ua.size()), sb(sa.size()), ub(ua.size()), tb(ua.size());
  ASSERT_EQ(cpu::jacobi_svd(batch, n, n, a.data(), sa.data(), ua.data(), ta.data()), 0u);
  ASSERT_EQ(cpu::jacobi_svd(batch, n, n, b.data(), sb.data(), ub.data(), tb.data()), 0u);
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(sa[size_t(5 * n + i)], sb[size_t(5 * n + i)]) << "singular value " << i;
  for (int64_t i = 0; i < n * n; ++i) {
    EXPECT_EQ(ua[size_t(5 * n * n + i)], ub[size_t(5 * n * n + i)]) << "U entry " << i;
    EXPECT_EQ(ta[size_t(5 * n * n + i)], tb[size_t(5 * n * n + i)]) << "V^T entry " << i;
  }
}

TYPED_TEST(LinalgJacobi, NonFiniteMatricesGoToLapack) {
  using T = TypeParam;
  const int64_t n = 4, batch = 16;
  std::vector<T> a = symmetric<T>(batch, n, 7);
  a[size_t(3 * n * n + 5)] = std::numeric_limits<T>::quiet_NaN();  // matrix 3 (row 1, column 1)
  a[size_t(9 * n * n + 4)] = std::numeric_limits<T>::infinity();   // matrix 9 (row 1, column 0)
  std::vector<T> w(size_t(batch * n)), v(size_t(batch * n * n));
  const uint32_t left = cpu::jacobi_eigh(batch, n, a.data(), /*lower=*/true, w.data(), v.data());
  EXPECT_EQ(left, (1u << 3) | (1u << 9));
  std::vector<T> s(size_t(batch * n)), u(size_t(batch * n * n)), vt(size_t(batch * n * n));
  EXPECT_EQ(cpu::jacobi_svd(batch, n, n, a.data(), s.data(), u.data(), vt.data()), (1u << 3) | (1u << 9));
  // Through the public API those matrices get LAPACK's result (syevd / gesdd on that matrix
  // alone); the other matrices of the batch are not disturbed.
  const ts::Array x(a, {batch, n, n});
  const std::vector<T> wv = ts::linalg::eigvalsh(x).to_vector<T>(), sv = ts::linalg::svdvals(x).to_vector<T>();
  for (int64_t b : {3, 9}) {
    std::vector<T> w_ref(static_cast<size_t>(n)), s_ref(static_cast<size_t>(n));
    cpu::eigh(dtype_of<T>(), 1, n, a.data() + b * n * n, nullptr, w_ref.data(), true);
    cpu::svd(dtype_of<T>(), 1, n, n, a.data() + b * n * n, s_ref.data(), nullptr, nullptr, false);
    for (int64_t i = 0; i < n; ++i) {
      const T got = wv[size_t(b * n + i)], want = w_ref[size_t(i)];
      EXPECT_TRUE(got == want || (std::isnan(got) && std::isnan(want))) << "eigh #" << b << ": " << got << " vs " << want;
      const T gs = sv[size_t(b * n + i)], ws = s_ref[size_t(i)];
      EXPECT_TRUE(gs == ws || (std::isnan(gs) && std::isnan(ws))) << "svd #" << b << ": " << gs << " vs " << ws;
    }
  }
  for (int64_t b : {0, 15})
    for (int64_t i = 0; i < n; ++i) EXPECT_TRUE(std::isfinite(wv[size_t(b * n + i)])) << "matrix " << b;
}

/// Checks one SVD of the m x n matrix a: s descending and against LAPACK's (gesdd on this
/// matrix alone), and (with vectors) U^T U = I, V^T V = I (k x k) and U diag(s) V^T = A.
template <class T>
void check_svd(const T* a, int64_t m, int64_t n, const T* s, const T* u, const T* vt, const std::string& what) {
  const int64_t k = std::min(m, n);
  const double scale = std::max(max_abs(a, m * n), std::numeric_limits<double>::min());
  std::vector<T> s_ref(static_cast<size_t>(k));
  cpu::svd(dtype_of<T>(), 1, m, n, a, s_ref.data(), nullptr, nullptr, false);
  const double t = tol<T>() * double(std::max(m, n));
  for (int64_t i = 0; i < k; ++i) {
    EXPECT_NEAR(double(s[i]), double(s_ref[size_t(i)]), t * scale) << what << ": singular value " << i;
    if (i > 0) {
      EXPECT_GE(s[i - 1], s[i]) << what << ": singular values descending";
    }
  }
  if (!u) return;
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < k; ++j) {
      double utu = 0, vvt = 0;
      for (int64_t r = 0; r < m; ++r) utu += double(u[r * k + i]) * double(u[r * k + j]);
      for (int64_t c = 0; c < n; ++c) vvt += double(vt[i * n + c]) * double(vt[j * n + c]);
      EXPECT_NEAR(utu, i == j ? 1.0 : 0.0, t) << what << ": U^T U at " << i << ", " << j;
      EXPECT_NEAR(vvt, i == j ? 1.0 : 0.0, t) << what << ": V^T V at " << i << ", " << j;
    }
  for (int64_t r = 0; r < m; ++r)
    for (int64_t c = 0; c < n; ++c) {
      double rec = 0;
      for (int64_t i = 0; i < k; ++i) rec += double(u[r * k + i]) * double(s[i]) * double(vt[i * n + c]);
      EXPECT_NEAR(rec, double(a[r * n + c]), t * scale) << what << ": U S V^T at " << r << ", " << c;
    }
}

template <class T>
void check_svd_batch(const std::vector<T>& a, int64_t batch, int64_t m, int64_t n, const std::string& what) {
  const ts::Array x(a, {batch, m, n});
  const auto [u, s, vt] = ts::linalg::svd(x, false);
  const std::vector<T> uv = u.to_vector<T>(), sv = s.to_vector<T>(), vv = vt.to_vector<T>();
  const std::vector<T> so = ts::linalg::svdvals(x).to_vector<T>();
  const int64_t k = std::min(m, n);
  for (int64_t b = 0; b < batch; ++b) {
    const std::string name = what + " #" + std::to_string(b);
    check_svd(a.data() + b * m * n, m, n, sv.data() + b * k, uv.data() + b * m * k, vv.data() + b * k * n, name);
    check_svd<T>(a.data() + b * m * n, m, n, so.data() + b * k, nullptr, nullptr, name + " (values only)");
  }
}

TYPED_TEST(LinalgJacobi, SvdMatchesLapackOnSquareTallAndWide) {
  using T = TypeParam;
  for (auto [m, n] : std::vector<std::pair<int64_t, int64_t>>{{2, 2}, {8, 8}, {16, 16}, {7, 3}, {3, 7}, {16, 1}, {1, 5}})
    for (int64_t batch : {9, 37}) {
      const std::vector<T> a = random_values<T>(batch * m * n, unsigned(m * 1000 + n * 10 + batch));
      check_svd_batch(a, batch, m, n, std::to_string(m) + "x" + std::to_string(n) + " batch=" + std::to_string(batch));
    }
}

TYPED_TEST(LinalgJacobi, SvdRankDeficientIllConditionedAndScaled) {
  using T = TypeParam;
  const int64_t m = 6, n = 5, batch = 18;
  std::vector<T> a = random_values<T>(batch * m * n, 11);
  for (int64_t b = 0; b < batch; ++b) {
    T* x = a.data() + b * m * n;
    if (b % 3 == 0)  // rank 1: every row a multiple of the first
      for (int64_t r = 1; r < m; ++r)
        for (int64_t c = 0; c < n; ++c) x[r * n + c] = x[c] * T(r + 1);
    if (b % 3 == 1)  // a zero column, and columns 1 and 2 equal
      for (int64_t r = 0; r < m; ++r) x[r * n + 4] = T(0), x[r * n + 2] = x[r * n + 1];
    if (b == 2) std::fill(x, x + m * n, T(0));  // the zero matrix
    if (b == 5)  // columns scaled over many orders of magnitude
      for (int64_t r = 0; r < m; ++r)
        for (int64_t c = 0; c < n; ++c) x[r * n + c] *= T(std::pow(10.0, std::is_same_v<T, float> ? 2.0 * c : 4.0 * c));
  }
  check_svd_batch(a, batch, m, n, "rank-deficient");
  for (double s : {1e30, 1e-30}) {
    std::vector<T> b = random_values<T>(batch * m * n, 12);
    for (auto& x : b) x = T(double(x) * s);
    check_svd_batch(b, batch, m, n, "scaled by " + std::to_string(s));
  }
}

TYPED_TEST(LinalgJacobi, SvdFullMatricesOfSquareMatrices) {
  using T = TypeParam;
  const int64_t n = 8, batch = 16;
  const std::vector<T> a = random_values<T>(batch * n * n, 13);
  const ts::Array x(a, {batch, n, n});
  const auto [u, s, vt] = ts::linalg::svd(x, true);  // square: complete = reduced, Jacobi
  const std::vector<T> uv = u.to_vector<T>(), sv = s.to_vector<T>(), vv = vt.to_vector<T>();
  for (int64_t b = 0; b < batch; ++b)
    check_svd(a.data() + b * n * n, n, n, sv.data() + b * n, uv.data() + b * n * n, vv.data() + b * n * n,
              "full #" + std::to_string(b));
}

}  // namespace
