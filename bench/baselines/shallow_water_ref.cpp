// Hand-written C++ shallow-water model: the baseline that tessel's jitted step is measured
// against (issues 4 and 21). Same physics, constants, update order, halo handling and
// initial state as examples/shallow_water/shallow_water.cpp and
// bench/baselines/shallow_water_numpy.py, in float32 or float64, written to run at the
// machine's memory-bandwidth limit.
//
// The scheme: one pass over the grid per step. Each OpenMP thread owns a block of rows and
// walks it from south to north once per step, updating every state field in place: row r
// of the old h, u, v and of the tendencies dh, du, dv is read once, and the new row is
// written once over it. Everything between (the fluxes fe and fn, the potential vorticity
// q, the kinetic energy ke, the Adams-Bashforth u and v before friction, u after friction)
// lives in ring buffers of a few rows per thread that stay in cache. Three stages run row
// by row, each a few rows behind the one it feeds:
//   dynamics at row r:   fe, ke of row r + 1 and fn, q of row r (from the old rows r and
//                        r + 1), then the new tendencies and the Adams-Bashforth update of
//                        row r: h and the tendencies go to the arrays, u and v to rings;
//   friction of u at r - 1: from the updated u of rows r - 2 .. r, into the array;
//   friction of v at r - 2: from the updated v of rows r - 2, r - 1 and the new u of rows
//                        r - 3, r - 2, into the array.
// Old row r is dead once the dynamics of row r has run, so writing in place is safe within
// a block. A block's stages need the old rows j0 - 3 .. j1 + 1 of its block [j0, j1): the
// outside ones belong to the neighbours, which overwrite them during the step, so at the
// end of each step every thread copies its two first and three last rows of the six fields
// into a side buffer (two, alternating by step), and the neighbours read them there in the
// next step, recomputing the two or three boundary rows of the dynamics and of u's friction
// they need. One barrier per step, none inside it.
//
// Why this is near the limit: per step the six fields cross the memory bus once each way,
// 12 (ny + 2)(nx + 2) sizeof(T) bytes (78 MB at 1800x900 float32), with no write-allocate
// reads (every written line was just read) and no temporary arrays. The program prints
// that traffic divided by the step time (`gbytes_per_s`) beside `stream_gbytes_per_s`: the
// same threads sweeping the same six fields in place (x = a x + b) with nothing else to do,
// which is what memory allows a step. The arithmetic (about 80 operations a cell) runs in
// vectorized inner loops (-O3 -march=native; contraction to FMA allowed; divisions by the
// grid constants become products with their reciprocals), while the data is in L1/L2.
//
// Usage: shallow_water_ref [--nx 1800] [--ny 900] [--steps 200] [--dtype float32|float64]
//                          [--out h.npy]
// Prints `seconds`, `ms_per_step` (the time-stepping loop, set-up excluded), `threads`,
// `bytes_per_step`, `gbytes_per_s` and `stream_gbytes_per_s`; --out saves the interior
// surface height (ny, nx) as .npy in the model's dtype. Threads: OpenMP's default, all
// cores (OMP_NUM_THREADS changes it), at most one per 5 rows.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <numbers>
#include <string>
#include <utility>
#include <vector>

#include "npy.h"

#ifdef _OPENMP
#include <omp.h>
#else
inline int omp_get_max_threads() { return 1; }
inline int omp_get_thread_num() { return 0; }
inline int omp_get_num_threads() { return 1; }
#endif

namespace {

// Constants of the model (examples/shallow_water/shallow_water.h), in double.
constexpr double kDx = 5e3, kDy = 5e3;
constexpr double kGravity = 9.81;
constexpr double kDepth = 100.0;
constexpr double kCoriolisF = 2e-4;
constexpr double kCoriolisBeta = 2e-11;
constexpr double kLateralViscosity = 1e-3 * kCoriolisF * kDx * kDx;
constexpr double kAdamsBashforthA = 1.5 + 0.1;
constexpr double kAdamsBashforthB = -(0.5 + 0.1);

const double kDt = 0.125 * std::min(kDx, kDy) / std::sqrt(kGravity * kDepth);

// The arithmetic's constants in T, each rounded once from its double value.
template <class T> struct Coefficients {
  T rdx = T(1 / kDx), rdy = T(1 / kDy);              // divisions by dx, dy become products
  T neg_g_dx = T(-kGravity / kDx), neg_g_dy = T(-kGravity / kDy);
  T fric_x = T(kDt * kLateralViscosity / (kDx * kDx));  // dt nu / dx^2: friction's x part
  T fric_y = T(kDt * kLateralViscosity / (kDy * kDy));
};

// ---- Row kernels. GCC trusts __restrict on parameters only, so each loop is a function of
// row pointers; `inout` rows are read and then written at the same index, one parameter.

// fe (eastward mass flux) and ke (kinetic energy) of one row, columns 1..nx.
template <class T>
void fe_ke_kernel(int64_t nx, const T* __restrict h, const T* __restrict u, const T* __restrict v,
                  const T* __restrict v_south, T* __restrict fe, T* __restrict ke) {
  const T half = T(0.5), quarter = T(0.25);
#pragma omp simd
  for (int64_t i = 1; i <= nx; ++i) {
    fe[i] = half * (h[i] + h[i + 1]) * u[i];
    ke[i] = quarter * ((u[i] * u[i] + u[i - 1] * u[i - 1]) + (v[i] * v[i] + v_south[i] * v_south[i]));
  }
}

// fn (northward mass flux) and q (potential vorticity) of one row; `h_north` is the edge-
// padded h of the row above (the row itself on the top row), `coriolis` the row's f + beta y.
template <class T>
void fn_q_kernel(int64_t nx, const Coefficients<T>& c, T coriolis, const T* __restrict h,
                 const T* __restrict h_north, const T* __restrict u, const T* __restrict u_north,
                 const T* __restrict v, T* __restrict fn, T* __restrict q) {
  const T half = T(0.5), quarter = T(0.25), rdx = c.rdx, rdy = c.rdy;
#pragma omp simd
  for (int64_t i = 1; i <= nx; ++i) {
    fn[i] = half * (h[i] + h_north[i]) * v[i];
    q[i] = (coriolis + ((v[i + 1] - v[i]) * rdx - (u_north[i] - u[i]) * rdy)) /
           (quarter * (h[i] + h[i + 1] + h_north[i] + h_north[i + 1]));
  }
}

// Fluxes of the rows around row r (`_s` one row south, `_n` one row north), as the update
// kernel reads them.
template <class T> struct Fluxes {
  const T *fe, *fe_n, *ke, *ke_n, *fn, *fn_s, *q, *q_s;
};

// The new tendencies of one row (written over the old ones, which the Adams-Bashforth
// step reads first) and the update h1 = h + ca new + cb old: h in place, u and v into
// `u1`, `v1`. (ca, cb) = dt (1, 0) on the first step, dt (A, B) after.
template <class T>
void update_kernel(int64_t nx, const Coefficients<T>& c, T ca, T cb, const Fluxes<T>& f, T* h,
                   const T* __restrict h_north, const T* __restrict u, const T* __restrict v,
                   T* __restrict dh, T* __restrict du, T* __restrict dv, T* __restrict u1, T* __restrict v1) {
  const T* __restrict fe = f.fe;
  const T* __restrict fe_n = f.fe_n;
  const T* __restrict ke = f.ke;
  const T* __restrict ke_n = f.ke_n;
  const T* __restrict fn = f.fn;
  const T* __restrict fn_s = f.fn_s;
  const T* __restrict q = f.q;
  const T* __restrict q_s = f.q_s;
  const T quarter = T(0.25), rdx = c.rdx, rdy = c.rdy, gx = c.neg_g_dx, gy = c.neg_g_dy;
  // h[i + 1] is read before h[i + 1] is written: a forward anti-dependence, which GCC
  // vectorizes (its loads of an iteration come before its stores).
  for (int64_t i = 1; i <= nx; ++i) {
    const T dh_new = -(fe[i] - fe[i - 1]) * rdx - (fn[i] - fn_s[i]) * rdy;
    const T du_new = gx * (h[i + 1] - h[i]) + quarter * (q[i] * (fn[i] + fn[i + 1]) + q_s[i] * (fn_s[i] + fn_s[i + 1])) -
                     (ke[i + 1] - ke[i]) * rdx;
    const T dv_new = gy * (h_north[i] - h[i]) - quarter * (q[i] * (fe[i] + fe_n[i]) + q[i - 1] * (fe[i - 1] + fe_n[i - 1])) -
                     (ke_n[i] - ke[i]) * rdy;
    u1[i] = u[i] + (ca * du_new + cb * du[i]);
    v1[i] = v[i] + (ca * dv_new + cb * dv[i]);
    h[i] = h[i] + (ca * dh_new + cb * dh[i]);
    dh[i] = dh_new;
    du[i] = du_new;
    dv[i] = dv_new;
  }
}

// Lateral friction of one row of a field a, differenced against b (b = a for u; for v, b is
// the new u, as the original has it): out = a + dt ((fe_i - fe_{i-1}) / dx + (fn - fn_s) / dy)
// with fe_i = nu (a[i + 1] - b[i]) / dx, fn = nu (a_north - b) / dy, fn_s = nu (a - b_south)
// / dy, folded into two constants; `cy_north` / `cy_south` are 0 where fn is zero (the wall
// row ny, the halo row 0). Needs fe_0 = fe_nx, which holds when b[0] = b[nx] and
// a[1] = a[nx + 1] (the caller's rows are wrapped so).
template <class T>
void friction_kernel(int64_t nx, T cx, T cy_north, T cy_south, const T* __restrict a, const T* __restrict a_north,
                     const T* __restrict b, const T* __restrict b_south, T* __restrict out) {
#pragma omp simd
  for (int64_t i = 1; i <= nx; ++i)
    out[i] = a[i] + (cx * ((a[i + 1] - b[i]) - (a[i] - b[i - 1])) +
                     (cy_north * (a_north[i] - b[i]) - cy_south * (a[i] - b_south[i])));
}

/// Periodic in x: column 0 <- column nx, column nx + 1 <- column 1 (enforce_boundaries).
template <class T> inline void wrap_row(T* r, int64_t nx) {
  r[nx + 1] = r[1];
  r[0] = r[nx];
}

/// Aligned storage without value-initialization, so that the threads that use a page touch
/// it first (and it lands in their memory).
template <class T> struct Buffer {
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T, Free> ptr;
  explicit Buffer(size_t n = 0) {
    if (n == 0) return;
    const size_t bytes = (n * sizeof(T) + 63) / 64 * 64;
    ptr.reset(static_cast<T*>(std::aligned_alloc(64, bytes)));
    if (!ptr) {
      std::fprintf(stderr, "shallow_water_ref: out of memory (%zu bytes)\n", bytes);
      std::exit(1);
    }
  }
  T* get() const { return ptr.get(); }
};

enum Field : int { kH, kU, kV, kDH, kDU, kDV };
constexpr int kNumFields = 6;

template <class T> class Model {
 public:
  Model(int64_t nx, int64_t ny, int threads);

  /// Runs `steps` steps (the first a forward step) in one parallel region, one barrier
  /// between steps.
  void run(int steps);

  /// Sweeps the six fields in place `sweeps` times (x = a x + b) on the same threads and
  /// blocks as a step: the time a step's memory traffic takes with no arithmetic.
  double stream_seconds_per_sweep(int sweeps);

  /// The interior of h, (ny, nx).
  std::vector<T> interior_h() const {
    std::vector<T> out(size_t(nx_ * ny_));
    for (int64_t j = 0; j < ny_; ++j) std::memcpy(&out[size_t(j * nx_)], row(kH, j + 1) + 1, size_t(nx_) * sizeof(T));
    return out;
  }

  int threads() const { return threads_; }
  double cpu_seconds_ = 0;
  /// Bytes a step moves at least: each field read and written once.
  double bytes_per_step() const { return 2.0 * kNumFields * double(ny_) * double(nx_ + 2) * sizeof(T); }

 private:
  // Per-thread state: the ring rows and the scratch rows of recomputed boundary rows.
  struct Work {
    Buffer<T> storage;
    T *fe[2], *ke[2], *fn[2], *q[2];  // indexed by row & 1
    T *u1[4], *v1[4];                 // indexed by row & 3
    T *u2_south, *h_scratch, *dh_scratch, *du_scratch, *dv_scratch;
  };

  T* row(int f, int64_t r) const { return fields_[f].get() + offset_ + r * ld_; }
  std::pair<int64_t, int64_t> block(int t) const { return {1 + ny_ * t / threads_, 1 + ny_ * (t + 1) / threads_}; }
  T coriolis(int64_t r) const { return T(kCoriolisF + double(r - 1) * kDy * kCoriolisBeta); }

  void init_rows(int64_t r0, int64_t r1, const std::vector<double>& h0, const std::vector<double>& u0);
  void save_edges(int t, int parity);
  void step(int t, int parity, bool first, Work& w);

  int64_t nx_, ny_, ld_, offset_;
  int threads_;
  Buffer<T> fields_[kNumFields];
  // The rows a block's neighbours read, saved at the end of each step: shadow_[p][f][r] is
  // row r of field f as step p's readers need it (nullptr for rows no neighbour reads).
  std::vector<Buffer<T>> shadow_storage_;
  std::vector<T*> shadow_[2][kNumFields];
  std::vector<Work> work_;
};

template <class T>
Model<T>::Model(int64_t nx, int64_t ny, int threads) : nx_(nx), ny_(ny), threads_(threads) {
  // Rows padded to whole cache lines, with column 1 (the first interior cell) aligned.
  const int64_t per_line = int64_t(64 / sizeof(T));
  offset_ = per_line - 1;
  ld_ = (nx + 2 + offset_ + per_line - 1) / per_line * per_line;
  for (auto& f : fields_) f = Buffer<T>(size_t(ld_ * (ny + 2)));
  for (auto& p : shadow_)
    for (auto& f : p) f.assign(size_t(ny + 2), nullptr);
  shadow_storage_.resize(size_t(threads_));
  work_.resize(size_t(threads_));

  // The demo's initial state, computed in double and rounded once to T: a zonal jet in
  // geostrophic balance plus a small perturbation (ShallowWater::initial_state).
  const int64_t nxg = nx + 2, nyg = ny + 2;
  auto x = [](int64_t i) { return double(i - 1) * kDx; };
  auto y = [](int64_t j) { return double(j - 1) * kDy; };
  const double length_x = x(nxg - 2) - x(1), length_y = y(nyg - 2) - y(1);
  const size_t n = size_t(nxg * nyg);
  std::vector<double> u0(n), h0(n);
  for (int64_t j = 0; j < nyg; ++j)
    for (int64_t i = 0; i < nxg; ++i) {
      const double d = y(j) - 0.5 * length_y, w = 0.02 * length_x;
      u0[size_t(j * nxg + i)] = 10 * std::exp(-(d * d) / (w * w));
    }
  double total = 0;
  for (int64_t j = 0; j < nyg; ++j)
    for (int64_t i = 0; i < nxg; ++i) {
      const size_t k = size_t(j * nxg + i);
      const double coriolis = kCoriolisF + y(j) * kCoriolisBeta;
      h0[k] = -kDy * u0[k] * coriolis / kGravity + (j > 0 ? h0[k - size_t(nxg)] : 0.0);
      total += h0[k];
    }
  const double mean = total / double(n);
  for (int64_t j = 0; j < nyg; ++j)
    for (int64_t i = 0; i < nxg; ++i)
      h0[size_t(j * nxg + i)] += kDepth - mean + 0.2 * std::sin(x(i) / length_x * 10 * std::numbers::pi) *
                                                     std::cos(y(j) / length_y * 8 * std::numbers::pi);

  // Each thread touches first the rows it will update (and its ring and side buffers).
  const int64_t w = ld_;
#pragma omp parallel num_threads(threads_)
  {
    const int t = omp_get_thread_num();
    const auto [j0, j1] = block(t);
    init_rows(t == 0 ? 0 : j0, t == threads_ - 1 ? ny + 2 : j1, h0, u0);

    Work& wk = work_[size_t(t)];
    wk.storage = Buffer<T>(size_t(21 * w));
    T* p = wk.storage.get() + offset_;
    std::memset(wk.storage.get(), 0, size_t(21 * w) * sizeof(T));
    for (T** r : {&wk.fe[0], &wk.fe[1], &wk.ke[0], &wk.ke[1], &wk.fn[0], &wk.fn[1], &wk.q[0], &wk.q[1], &wk.u1[0],
                  &wk.u1[1], &wk.u1[2], &wk.u1[3], &wk.v1[0], &wk.v1[1], &wk.v1[2], &wk.v1[3], &wk.u2_south,
                  &wk.h_scratch, &wk.dh_scratch, &wk.du_scratch, &wk.dv_scratch}) {
      *r = p;
      p += w;
    }

    // Side buffers: rows j0, j0 + 1 for the block to the south, j1 - 3 .. j1 - 1 for the
    // one to the north, of every field, for both parities.
    std::vector<int64_t> edges;
    if (t > 0) edges.insert(edges.end(), {j0, j0 + 1});
    if (t < threads_ - 1) edges.insert(edges.end(), {j1 - 3, j1 - 2, j1 - 1});
    Buffer<T>& s = shadow_storage_[size_t(t)];
    s = Buffer<T>(size_t(2 * kNumFields) * edges.size() * size_t(w) + 1);  // + 1: never empty
    T* q = s.get();
    for (int par = 0; par < 2; ++par)
      for (int f = 0; f < kNumFields; ++f)
        for (int64_t r : edges) {
          shadow_[par][f][size_t(r)] = q + offset_;  // aligned like row(f, r)
          q += w;
        }
    save_edges(t, 0);
  }
}

template <class T>
void Model<T>::init_rows(int64_t r0, int64_t r1, const std::vector<double>& h0, const std::vector<double>& u0) {
  const int64_t nxg = nx_ + 2;
  for (int64_t j = r0; j < r1; ++j) {
    for (int f = 0; f < kNumFields; ++f) std::memset(fields_[f].get() + j * ld_, 0, size_t(ld_) * sizeof(T));
    for (int64_t i = 0; i < nxg; ++i) {
      row(kH, j)[i] = T(h0[size_t(j * nxg + i)]);
      row(kU, j)[i] = T(u0[size_t(j * nxg + i)]);
    }
    wrap_row(row(kH, j), nx_);
    wrap_row(row(kU, j), nx_);
  }
}

// Copies this thread's edge rows of all six fields into the side buffer of `parity`.
template <class T> void Model<T>::save_edges(int t, int parity) {
  const auto [j0, j1] = block(t);
  auto save = [&](int64_t r) {
    for (int f = 0; f < kNumFields; ++f)
      std::memcpy(shadow_[parity][f][size_t(r)], row(f, r), size_t(nx_ + 2) * sizeof(T));
  };
  if (t > 0) save(j0), save(j0 + 1);
  if (t < threads_ - 1) save(j1 - 3), save(j1 - 2), save(j1 - 1);
}

// One step of thread t's block [j0, j1). Old rows outside the block come from the side
// buffers of `parity`; the three stages run as described at the top of the file.
template <class T> void Model<T>::step(int t, int parity, bool first, Work& w) {
  const int64_t nx = nx_, ny = ny_;
  const auto [j0, j1] = block(t);
  const Coefficients<T> c;
  const T ca = first ? T(kDt) : T(kDt * kAdamsBashforthA), cb = first ? T(0) : T(kDt * kAdamsBashforthB);

  // The old rows this block reads, j0 - 3 .. j1 + 1, indexed by row: its own rows and the
  // halo rows 0 and ny + 1 (never written) from the fields, the neighbours' from the side
  // buffers. Rows are written in place through these pointers (a recomputed neighbour row
  // only ever in the side buffer, which no one else reads this step).
  auto old = [&](int f, int64_t r) -> T* {
    if ((r >= j0 && r < j1) || r == 0 || r == ny + 1) return row(f, r);
    return shadow_[parity][f][size_t(r)];
  };
  // The fields' old rows as the kernels read them.
  auto H = [&](int64_t r) { return old(kH, r); };
  auto U = [&](int64_t r) { return old(kU, r); };
  auto V = [&](int64_t r) { return old(kV, r); };

  const int64_t d_lo = std::max<int64_t>(j0 - 2, 1), d_hi = std::min(j1, ny);
  int64_t next_fu = std::max<int64_t>(j0 - 1, 1), next_fv = j0;

  // fe, ke of row r (zero on row ny + 1).
  auto fe_ke = [&](int64_t r) {
    T *fe = w.fe[r & 1], *ke = w.ke[r & 1];
    if (r > ny) {
      std::fill(fe, fe + nx + 2, T(0));
      std::fill(ke, ke + nx + 2, T(0));
      return;
    }
    fe_ke_kernel(nx, H(r), U(r), V(r), V(r - 1), fe, ke);
    wrap_row(fe, nx);
    wrap_row(ke, nx);
  };
  // fn, q of row r (zero on the halo row 0; fn zero on the wall row ny).
  auto fn_q = [&](int64_t r) {
    T *fn = w.fn[r & 1], *q = w.q[r & 1];
    if (r < 1) {
      std::fill(fn, fn + nx + 2, T(0));
      std::fill(q, q + nx + 2, T(0));
      return;
    }
    fn_q_kernel(nx, c, coriolis(r), H(r), H(std::min(r + 1, ny)), U(r), U(r + 1), V(r), fn, q);
    wrap_row(q, nx);
    if (r == ny) std::fill(fn, fn + nx + 2, T(0));
    else wrap_row(fn, nx);
  };
  // The new u of row k, after friction: in the field for the block's rows, else scratch.
  auto u2_row = [&](int64_t k) { return k >= j0 ? row(kU, k) : w.u2_south; };
  auto friction_u = [&](int64_t k) {
    const T* a = w.u1[k & 3];
    const T* a_north = k < ny ? w.u1[(k + 1) & 3] : a;
    const T* a_south = k > 1 ? w.u1[(k - 1) & 3] : a;
    T* out = u2_row(k);
    friction_kernel(nx, c.fric_x, k < ny ? c.fric_y : T(0), k > 1 ? c.fric_y : T(0), a, a_north, a, a_south, out);
    // No boundary exchange after friction: the halo columns keep the updated values.
    out[0] = a[0];
    out[nx + 1] = a[nx + 1];
  };
  auto friction_v = [&](int64_t k) {
    T* a = w.v1[k & 3];
    const T* a_north = k < ny ? w.v1[(k + 1) & 3] : a;
    T* b = u2_row(k);
    const T* b_south = k > 1 ? u2_row(k - 1) : b;
    // fe_0 = fe_nx needs b[0] = b[nx], but the new u keeps its old halo column: peel i = 1.
    const T halo0 = b[0];
    b[0] = b[nx];
    T* out = row(kV, k);
    const T v0 = a[0], v_end = a[nx + 1];
    friction_kernel(nx, c.fric_x, k < ny ? c.fric_y : T(0), k > 1 ? c.fric_y : T(0), a, a_north, b, b_south, out);
    b[0] = halo0;
    out[0] = v0;
    out[nx + 1] = v_end;
  };

  fe_ke(d_lo);
  fn_q(d_lo - 1);
  for (int64_t r = d_lo; r <= d_hi; ++r) {
    fe_ke(r + 1);
    fn_q(r);
    const Fluxes<T> f{w.fe[r & 1], w.fe[(r + 1) & 1], w.ke[r & 1], w.ke[(r + 1) & 1],
                      w.fn[r & 1], w.fn[(r - 1) & 1], w.q[r & 1],  w.q[(r - 1) & 1]};
    T* h = old(kH, r);
    T* dh = old(kDH, r);
    T* du = old(kDU, r);
    T* dv = old(kDV, r);
    update_kernel(nx, c, ca, cb, f, h, old(kH, r + 1), U(r), V(r), dh, du, dv, w.u1[r & 3], w.v1[r & 3]);
    wrap_row(h, nx);
    wrap_row(w.u1[r & 3], nx);
    if (r == ny) std::fill(w.v1[r & 3], w.v1[r & 3] + nx + 2, T(0));  // the northern wall
    else wrap_row(w.v1[r & 3], nx);
    for (; next_fu < j1 && std::min(next_fu + 1, ny) <= r; ++next_fu) friction_u(next_fu);
    for (; next_fv < j1 && next_fv < next_fu && std::min(next_fv + 1, ny) <= r; ++next_fv) friction_v(next_fv);
  }
}

template <class T> void Model<T>::run(int steps) {
#pragma omp parallel num_threads(threads_)
  {
    const int t = omp_get_thread_num();
    Work& w = work_[size_t(t)];
    timespec c0, c1;
    double busy = 0;
    for (int k = 0; k < steps; ++k) {
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
      step(t, k & 1, k == 0, w);
      save_edges(t, (k + 1) & 1);
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
      busy += double(c1.tv_sec - c0.tv_sec) + 1e-9 * double(c1.tv_nsec - c0.tv_nsec);
#pragma omp barrier
    }
#pragma omp atomic
    cpu_seconds_ += busy;
  }
}

template <class T> double Model<T>::stream_seconds_per_sweep(int sweeps) {
  static volatile T one = T(1), zero = T(0);  // opaque to the optimizer
  const T a = one, b = zero;
  double best = 1e30;
  for (int s = 0; s < sweeps; ++s) {
    const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads_)
    {
      const auto [j0, j1] = block(omp_get_thread_num());
      for (int64_t r = j0; r < j1; ++r)
        for (int f = 0; f < kNumFields; ++f) {
          T* __restrict x = row(f, r);
#pragma omp simd
          for (int64_t i = 0; i < nx_ + 2; ++i) x[i] = a * x[i] + b;
        }
    }
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

[[noreturn]] void usage(const char* msg) {
  std::fprintf(stderr,
               "shallow_water_ref: %s\nusage: shallow_water_ref [--nx N] [--ny N] [--steps N] "
               "[--dtype float32|float64] [--out h.npy]\n",
               msg);
  std::exit(2);
}

template <class T> int run(int64_t nx, int64_t ny, int steps, const std::string& out) {
  const int threads = int(std::max<int64_t>(1, std::min<int64_t>(omp_get_max_threads(), ny / 5)));
  Model<T> model(nx, ny, threads);
  const auto t0 = std::chrono::steady_clock::now();
  model.run(steps);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("seconds %.4f\n", seconds);
  std::printf("ms_per_step %.4f\n", 1e3 * seconds / steps);
  std::printf("threads %d\n", model.threads());
  std::printf("cpu_ms_per_step %.4f\n", 1e3 * model.cpu_seconds_ / steps / model.threads());
  std::printf("bytes_per_step %.0f\n", model.bytes_per_step());
  std::printf("gbytes_per_s %.2f\n", model.bytes_per_step() * steps / seconds * 1e-9);
  if (!out.empty()) shallow_water::write_npy(out, model.interior_h(), {ny, nx});
  const int sweeps = int(std::clamp<int64_t>(2e9 / model.bytes_per_step(), 5, 200));
  std::printf("stream_gbytes_per_s %.2f\n", model.bytes_per_step() / model.stream_seconds_per_sweep(sweeps) * 1e-9);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t nx = 1800, ny = 900;
  int steps = 200;
  std::string out, dtype = "float32";
  for (int k = 1; k < argc; ++k) {
    const std::string arg = argv[k];
    if (k + 1 >= argc) usage(("missing value after " + arg).c_str());
    const char* val = argv[++k];
    if (arg == "--nx") nx = std::atoll(val);
    else if (arg == "--ny") ny = std::atoll(val);
    else if (arg == "--steps") steps = std::atoi(val);
    else if (arg == "--dtype") dtype = val;
    else if (arg == "--out") out = val;
    else usage(("unknown option " + arg).c_str());
  }
  if (nx < 2 || ny < 2 || steps < 1) usage("need nx >= 2, ny >= 2 and steps >= 1");
  if (dtype == "float32") return run<float>(nx, ny, steps, out);
  if (dtype == "float64") return run<double>(nx, ny, steps, out);
  usage(("unknown dtype " + dtype + " (float32 or float64)").c_str());
}
