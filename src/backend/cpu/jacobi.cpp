#include "backend/cpu/jacobi.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tessel::cpu {
namespace {

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
// One clone per ISA (the loader picks the widest the CPU has): the lane loops below become
// 16-wide AVX-512 (8-wide AVX2) instructions instead of the baseline's 4-wide SSE2.
#define TESSEL_JACOBI_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define TESSEL_JACOBI_CLONES
#endif

constexpr int64_t L = kJacobiLanes;
constexpr int64_t N = kJacobiMaxN;
// Sweep limits: cyclic Jacobi converges quadratically (5 to 7 sweeps at n = 8 in float32);
// a matrix still off after these goes to LAPACK.
constexpr int kMaxSweeps = 24;

#define TESSEL_LANES _Pragma("GCC ivdep") for (int64_t l = 0; l < L; ++l)

/// A group of up to L matrices, element (i, j) of every lane side by side.
template <class T> struct Lanes {
  alignas(64) T x[N][N][L];
};

/// Per lane: the exponent of the power of two that brings the largest |entry| `mx` near 1;
/// `bad` gets the lanes with a non-finite entry.
template <class T> void scale_exponents(const T (&mx)[L], int (&e)[L], uint32_t& bad) {
  for (int64_t l = 0; l < L; ++l) {
    if (!std::isfinite(mx[l])) {
      bad |= 1u << l;
      e[l] = 0;
    } else {
      e[l] = mx[l] > 0 ? std::ilogb(mx[l]) : 0;
    }
  }
}

/// The Jacobi rotation (c, s) that annihilates the off-diagonal entry `apq` of the 2 x 2
/// symmetric block [app apq; apq aqq] (t = tan of the angle, the smaller root).
template <class T>
__attribute__((always_inline)) inline void rotation(const T (&app)[L], const T (&aqq)[L], const T (&apq)[L], T (&t)[L],
                                                    T (&c)[L], T (&s)[L]) {
  TESSEL_LANES {
    const T tau = aqq[l] - app[l];
    // den is 0 only when apq and tau are: then num is 0 too, and t = 0 (no rotation).
    const T den = std::max(std::abs(tau) + std::sqrt(tau * tau + T(4) * apq[l] * apq[l]),
                           std::numeric_limits<T>::min());
    const T sign = tau >= T(0) ? T(2) : T(-2);
    t[l] = sign * apq[l] / den;
    c[l] = T(1) / std::sqrt(T(1) + t[l] * t[l]);
    s[l] = t[l] * c[l];
  }
}

/// Rotations of lanes that have converged (`live` 0; 1 for the lanes still iterating) made
/// the identity (t = s = 0, c = 1, applied exactly), so that a matrix's result does not
/// depend on how long the other matrices of its group take, nor on which matrices share it.
template <class T>
__attribute__((always_inline)) inline void freeze_converged(const T (&live)[L], T (&t)[L], T (&c)[L], T (&s)[L]) {
  TESSEL_LANES {
    t[l] *= live[l];
    s[l] *= live[l];
    c[l] = c[l] * live[l] + (T(1) - live[l]);
  }
}

/// 1 for the lanes whose bit is set in `open`, 0 for the others.
template <class T> void live_lanes(uint32_t open, T (&live)[L]) {
  for (int64_t l = 0; l < L; ++l) live[l] = (open >> l) & 1 ? T(1) : T(0);
}

/// Columns p and q of x (rows [0, rows)) rotated: (x_p, x_q) <- (c x_p - s x_q, s x_p + c x_q).
template <class T>
__attribute__((always_inline)) inline void rotate_columns(Lanes<T>& x, int64_t rows, int64_t p, int64_t q,
                                                          const T (&c)[L], const T (&s)[L]) {
  for (int64_t r = 0; r < rows; ++r) {
    T* __restrict xp = x.x[r][p];
    T* __restrict xq = x.x[r][q];
    TESSEL_LANES {
      const T a = xp[l], b = xq[l];
      xp[l] = c[l] * a - s[l] * b;
      xq[l] = s[l] * a + c[l] * b;
    }
  }
}

/// Per lane, the position of each of the n keys (ascending or descending; equal keys in
/// index order), counted with comparisons across all lanes at once (the insertion sort it
/// replaced, one lane at a time, was a tenth of eigh's time at n = 8).
template <class T>
__attribute__((always_inline)) inline void ranks(const Lanes<T>& keys, int64_t n, bool descending,
                                                 int32_t (&rank)[N][L]) {
  for (int64_t i = 0; i < n; ++i) {
    TESSEL_LANES rank[i][l] = 0;
    const T* ki = keys.x[0][i];
    for (int64_t j = 0; j < n; ++j) {
      if (j == i) continue;
      const T* kj = keys.x[0][j];
      const bool earlier = j < i;
      TESSEL_LANES {
        const bool ahead = descending ? kj[l] > ki[l] : kj[l] < ki[l];
        rank[i][l] += int32_t(ahead || (earlier && kj[l] == ki[l]));
      }
    }
  }
}

/// Lane l's order from ranks: idx[position] = key index.
inline void order_of(const int32_t (&rank)[N][L], int64_t n, int64_t l, int64_t* idx) {
  for (int64_t i = 0; i < n; ++i) idx[rank[i][l]] = i;
}

template <class T>
TESSEL_JACOBI_CLONES uint32_t eigh_group(int64_t count, int64_t n, const T* a, bool lower, T* w, T* v) {
  thread_local Lanes<T> A, V;  // 32 KiB (float) per thread, off the stack
  uint32_t bad = 0;
  T mx[L];
  int e[L];
  for (int64_t l = 0; l < L; ++l) {
    const T* src = a + std::min(l, count - 1) * n * n;  // padding lanes repeat the last matrix
    T m = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j <= i; ++j) {
        const T x = lower ? src[i * n + j] : src[j * n + i];
        A.x[i][j][l] = A.x[j][i][l] = x;
        m = std::isnan(x) ? x : std::max(m, std::abs(x));
      }
    mx[l] = m;
  }
  scale_exponents(mx, e, bad);
  T scale[L], tol2[L];
  for (int64_t l = 0; l < L; ++l) scale[l] = std::ldexp(T(1), -e[l]);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      T* x = A.x[i][j];
      T* y = V.x[i][j];
      TESSEL_LANES {
        x[l] = (bad >> l) & 1 ? T(i == j) : x[l] * scale[l];
        y[l] = T(i == j);
      }
    }
  // Stop when the off-diagonal mass is below eps^2 ||A||_F^2 (rotations keep ||A||_F).
  {
    T fro2[L] = {};
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const T* x = A.x[i][j];
        TESSEL_LANES fro2[l] += x[l] * x[l];
      }
    const T eps = std::numeric_limits<T>::epsilon();
    TESSEL_LANES tol2[l] = eps * eps * fro2[l];
  }
  uint32_t open = (count >= 32 ? ~0u : (1u << count) - 1) & ~bad;
  for (int sweep = 0; sweep <= kMaxSweeps && open; ++sweep) {
    T off2[L] = {};
    for (int64_t p = 0; p < n; ++p)
      for (int64_t q = p + 1; q < n; ++q) {
        const T* x = A.x[p][q];
        TESSEL_LANES off2[l] += T(2) * x[l] * x[l];
      }
    for (int64_t l = 0; l < L; ++l)
      if (off2[l] <= tol2[l]) open &= ~(1u << l);
    if (!open || sweep == kMaxSweeps) break;
    T live[L];
    live_lanes(open, live);
    for (int64_t p = 0; p < n; ++p)
      for (int64_t q = p + 1; q < n; ++q) {
        T app[L], aqq[L], apq[L], t[L], c[L], s[L];
        TESSEL_LANES {
          app[l] = A.x[p][p][l];
          aqq[l] = A.x[q][q][l];
          apq[l] = A.x[p][q][l];
        }
        rotation(app, aqq, apq, t, c, s);
        freeze_converged(live, t, c, s);
        rotate_columns(A, n, p, q, c, s);  // A J (rows p and q of A J are fixed below)
        for (int64_t r = 0; r < n; ++r) {   // J^T A J is symmetric: rows p, q = columns p, q
          if (r == p || r == q) continue;  // the 2 x 2 block is set below
          T* __restrict rp = A.x[p][r];
          T* __restrict rq = A.x[q][r];
          const T* cp = A.x[r][p];
          const T* cq = A.x[r][q];
          TESSEL_LANES {
            rp[l] = cp[l];
            rq[l] = cq[l];
          }
        }
        TESSEL_LANES {
          A.x[p][p][l] = app[l] - t[l] * apq[l];
          A.x[q][q][l] = aqq[l] + t[l] * apq[l];
          A.x[p][q][l] = A.x[q][p][l] = t[l] != T(0) ? T(0) : apq[l];
        }
        if (v) rotate_columns(V, n, p, q, c, s);
      }
  }
  bad |= open;
  thread_local Lanes<T> keys;  // the eigenvalues, in keys.x[0][i]
  for (int64_t i = 0; i < n; ++i) {
    const T* d = A.x[i][i];
    T* k = keys.x[0][i];
    TESSEL_LANES k[l] = d[l];
  }
  int32_t rank[N][L];
  ranks(keys, n, /*descending=*/false, rank);
  int64_t idx[N];
  for (int64_t l = 0; l < count; ++l) {
    if ((bad >> l) & 1) continue;
    order_of(rank, n, l, idx);
    T* wl = w + l * n;
    for (int64_t i = 0; i < n; ++i) wl[i] = std::ldexp(keys.x[0][idx[i]][l], e[l]);
    if (!v) continue;
    T* vl = v + l * n * n;
    for (int64_t r = 0; r < n; ++r)
      for (int64_t i = 0; i < n; ++i) vl[r * n + i] = V.x[r][idx[i]][l];
  }
  return bad & (count >= 32 ? ~0u : (1u << count) - 1);
}

template <class T>
TESSEL_JACOBI_CLONES uint32_t svd_group(int64_t count, int64_t m, int64_t n, const T* a, T* s_out, T* u, T* vt) {
  thread_local Lanes<T> B, V;
  const bool wide = m < n;                          // then the kernel orthogonalizes A^T's columns
  const int64_t rows = wide ? n : m, cols = wide ? m : n;  // B = A or A^T: rows >= cols = k
  const bool vectors = u && vt;
  uint32_t bad = 0;
  T mx[L];
  int e[L];
  for (int64_t l = 0; l < L; ++l) {
    const T* src = a + std::min(l, count - 1) * m * n;
    T mxl = 0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const T x = src[i * n + j];
        if (wide) B.x[j][i][l] = x;
        else B.x[i][j][l] = x;
        mxl = std::isnan(x) ? x : std::max(mxl, std::abs(x));
      }
    mx[l] = mxl;
  }
  scale_exponents(mx, e, bad);
  T scale[L];
  for (int64_t l = 0; l < L; ++l) scale[l] = std::ldexp(T(1), -e[l]);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      T* x = B.x[i][j];
      TESSEL_LANES x[l] = (bad >> l) & 1 ? T(i == j) : x[l] * scale[l];
    }
  for (int64_t i = 0; i < cols; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      T* y = V.x[i][j];
      TESSEL_LANES y[l] = T(i == j);
    }
  // A pair of columns is orthogonal enough when |x_p . x_q| <= tol ||x_p|| ||x_q||; a sweep
  // that finds every pair so in every open lane ends the iteration for that lane.
  const T tol = std::numeric_limits<T>::epsilon() * T(rows);
  const T tol2 = tol * tol;
  uint32_t open = (count >= 32 ? ~0u : (1u << count) - 1) & ~bad;
  for (int sweep = 0; sweep < kMaxSweeps && open; ++sweep) {
    T live[L];
    live_lanes(open, live);
    T worst[L] = {};  // the largest (x_p . x_q)^2 / (|x_p|^2 |x_q|^2) of this sweep
    for (int64_t p = 0; p < cols; ++p)
      for (int64_t q = p + 1; q < cols; ++q) {
        T alpha[L] = {}, beta[L] = {}, gamma[L] = {}, t[L], c[L], s[L];
        for (int64_t r = 0; r < rows; ++r) {
          const T* xp = B.x[r][p];
          const T* xq = B.x[r][q];
          TESSEL_LANES {
            alpha[l] += xp[l] * xp[l];
            beta[l] += xq[l] * xq[l];
            gamma[l] += xp[l] * xq[l];
          }
        }
        TESSEL_LANES {
          const T ab = alpha[l] * beta[l];
          const T ratio = ab > T(0) ? gamma[l] * gamma[l] / ab : T(0);
          worst[l] = std::max(worst[l], ratio);
        }
        rotation(alpha, beta, gamma, t, c, s);  // the Jacobi rotation of B^T B's (p, q) block
        freeze_converged(live, t, c, s);
        rotate_columns(B, rows, p, q, c, s);
        if (vectors) rotate_columns(V, cols, p, q, c, s);
      }
    for (int64_t l = 0; l < L; ++l)
      if (!(worst[l] > tol2)) open &= ~(1u << l);  // NaN counts as converged: bad already has it
  }
  bad |= open;
  const int64_t k = cols;
  thread_local Lanes<T> norms;  // the column norms, in norms.x[0][j]
  for (int64_t j = 0; j < k; ++j) {
    T* nj = norms.x[0][j];
    TESSEL_LANES nj[l] = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const T* x = B.x[r][j];
      TESSEL_LANES nj[l] += x[l] * x[l];
    }
    TESSEL_LANES nj[l] = std::sqrt(nj[l]);
  }
  int32_t rank[N][L];
  ranks(norms, k, /*descending=*/true, rank);
  int64_t idx[N];
  for (int64_t l = 0; l < count; ++l) {
    if ((bad >> l) & 1) continue;
    order_of(rank, k, l, idx);
    if (vectors && !(norms.x[0][idx[k - 1]][l] > T(0))) {  // a zero column has no direction: LAPACK
      bad |= 1u << l;
      continue;
    }
    T* sl = s_out + l * k;
    for (int64_t i = 0; i < k; ++i) sl[i] = std::ldexp(norms.x[0][idx[i]][l], e[l]);
    if (!vectors) continue;
    // B = X S Y^T with X = B's normalized columns (rows x k) and Y = V (k x k): A = B, or
    // A = B^T = Y S X^T when wide.
    T* ul = u + l * m * k;
    T* vl = vt + l * k * n;
    for (int64_t i = 0; i < k; ++i) {
      const int64_t j = idx[i];
      const T inv = T(1) / norms.x[0][j][l];
      for (int64_t r = 0; r < rows; ++r) {
        const T x = B.x[r][j][l] * inv;
        if (wide) vl[i * n + r] = x;
        else ul[r * k + i] = x;
      }
      for (int64_t r = 0; r < cols; ++r) {
        const T y = V.x[r][j][l];
        if (wide) ul[r * k + i] = y;
        else vl[i * n + r] = y;
      }
    }
  }
  return bad & (count >= 32 ? ~0u : (1u << count) - 1);
}

}  // namespace

uint32_t jacobi_eigh(int64_t count, int64_t n, const float* a, bool lower, float* w, float* v) {
  return eigh_group<float>(count, n, a, lower, w, v);
}
uint32_t jacobi_eigh(int64_t count, int64_t n, const double* a, bool lower, double* w, double* v) {
  return eigh_group<double>(count, n, a, lower, w, v);
}
uint32_t jacobi_svd(int64_t count, int64_t m, int64_t n, const float* a, float* s, float* u, float* vt) {
  return svd_group<float>(count, m, n, a, s, u, vt);
}
uint32_t jacobi_svd(int64_t count, int64_t m, int64_t n, const double* a, double* s, double* u, double* vt) {
  return svd_group<double>(count, m, n, a, s, u, vt);
}

}  // namespace tessel::cpu
