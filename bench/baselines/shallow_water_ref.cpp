// Hand-written C++ shallow-water model: the baseline that tessel's jitted step is measured
// against (issues 4 and 21). Same physics, constants, update order, halo handling and
// initial state as examples/shallow_water/shallow_water.cpp and
// bench/baselines/shallow_water_numpy.py, in float32 or float64, written to run at the
// machine's memory-bandwidth limit.
//
// The scheme: one pass over the grid per step. Each OpenMP thread owns a block of rows and
// walks it from south to north once per step, updating every state field in place: row r
// of the old h, u, v and of the tendencies dh, du, dv is read once, and the new row is
// written once over it. Everything between lives in ring buffers of a few rows per thread
// that stay in cache. Per row r:
//   flux:      from the old rows r and r + 1: fe, ke of row r + 1, fn of row r, and the
//              products q (fn + fn east) and q (fe + fe north) of row r that the momentum
//              tendencies use (fe of row r and fn east recomputed, not read back);
//   update:    row r's new tendencies over the old ones, the Adams-Bashforth h in place, the
//              updated u and v into rings (two loops: v first, which reads the old h);
//   friction:  of u one row behind (the updated u of rows r - 2 .. r), of v two rows
//              behind (the updated v and the new u, which it differences against), each
//              writing the final row into the field.
// Old row r is not read once its flux and update have run, so writing in place is safe
// within a block. A block reads the old rows j0 - 3 .. j1 + 1 around its own [j0, j1):
// the outside ones belong to the neighbours, which overwrite them during the step, so at
// the end of each step every thread copies its first two and last three rows of the six
// fields into a side buffer (two, alternating by step), and its neighbours read them there
// in the next step, recomputing the two or three boundary rows of the flux, update and u
// friction they need. One barrier per step, none inside it; the results do not depend on
// the number of threads (bitwise).
//
// Why this is the limit in bytes, and how near it runs: per step the six fields cross the
// memory bus once each way, 12 ny (nx + 2) sizeof(T) bytes (78 MB at 1800x900 float32),
// with no temporary arrays and no write-allocate reads (every written line was just read):
// no step can move less. The program prints that traffic over the step time
// (`gbytes_per_s`) beside `stream_gbytes_per_s`, the same threads sweeping the same six
// fields in place (x = a x + b) with nothing else to do: their ratio is how near the
// bandwidth limit the step runs. The arithmetic (about 80 operations a cell) runs in inner
// loops that all vectorize (-O3 -march=native, checked with -fopt-info-vec; contraction to
// FMA allowed; divisions by the grid constants become products with their reciprocals) on
// rows that are in L1/L2, and the fields sit on transparent huge pages. On the 2-core
// development machine (AVX-512, 32 MB L3) the sweep reached 112 GB/s in an idle second and
// the step 29 GB/s: there the step is bound by its arithmetic and by the memory latency it
// does not hide, not by bandwidth (docs/performance.md has the figures).
//
// Usage: shallow_water_ref [--nx 1800] [--ny 900] [--steps 200] [--dtype float32|float64]
//                          [--out h.npy] [--cpu-time]
// Prints `seconds`, `ms_per_step` (the time-stepping loop, set-up excluded), `threads`,
// `bytes_per_step`, `gbytes_per_s` and `stream_gbytes_per_s`; --out saves the interior
// surface height (ny, nx) as .npy in the model's dtype; --cpu-time adds `cpu_ms_per_step`,
// the CPU time of a step on the average thread, barrier waits excluded (busy machines
// disturb it less than the wall time). Threads: OpenMP's default, all cores
// (OMP_NUM_THREADS changes it), at most one per 5 rows.
#include <algorithm>
#include <atomic>
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

#include <sys/mman.h>

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

// Everything of rows r and r + 1 that the update of row r reads, in one pass over them:
// fe, ke of row r + 1 (`fe_n`, `ke_n`; zero when r = ny, North false), fn of row r (zero
// on the wall row ny), and the vorticity-flux products of row r, `qfn` = q (fn_i + fn_{i+1})
// and `qfe` = q (fe + fe_north), with fe of row r and fn_{i+1} recomputed from the rows at
// hand rather than read back. `h_n` is hc's row r + 1 (h's row ny when r = ny), `u_n`,
// `v_n` are rows r + 1, `coriolis` is row r's f + beta y.
template <class T, bool North> struct Flux {
  const T *h, *h_n, *u, *u_n, *v, *v_n;
  T *fe_n, *ke_n, *fn, *qfn, *qfe;
  T half = T(0.5), quarter = T(0.25), rdx, rdy, coriolis;

  T fn_at(int64_t i) const { return North ? half * (h[i] + h_n[i]) * v[i] : T(0); }
  // Column i, given fn of column i + 1.
  void cell(int64_t i, T fn_east) const {
    const T fe_i = half * (h[i] + h[i + 1]) * u[i];
    const T fe_north = North ? half * (h_n[i] + h_n[i + 1]) * u_n[i] : T(0);
    const T fn_i = fn_at(i);
    const T q = (coriolis + ((v[i + 1] - v[i]) * rdx - (u_n[i] - u[i]) * rdy)) /
                (quarter * (h[i] + h[i + 1] + h_n[i] + h_n[i + 1]));
    fe_n[i] = fe_north;
    ke_n[i] = North ? quarter * ((u_n[i] * u_n[i] + u_n[i - 1] * u_n[i - 1]) + (v_n[i] * v_n[i] + v[i] * v[i])) : T(0);
    fn[i] = fn_i;
    qfn[i] = q * (fn_i + fn_east);
    qfe[i] = q * (fe_i + fe_north);
  }
};

// The loop of Flux. fn_{i+1} is recomputed, except that on column nx the original wraps fn
// (fn_{nx+1} = fn_1) rather than computing it from v's halo column, which friction leaves
// behind: that cell is computed again after the loop (which keeps a trip count of nx,
// vectorized to the end with a half-width tail, where a count of nx - 1 left a scalar one).
template <class T, bool North>
void flux_kernel(int64_t nx, const Coefficients<T>& c, T coriolis, const T* __restrict h, const T* __restrict h_n,
                 const T* __restrict u, const T* __restrict u_n, const T* __restrict v, const T* __restrict v_n,
                 T* __restrict fe_n, T* __restrict ke_n, T* __restrict fn, T* __restrict qfn, T* __restrict qfe) {
  const Flux<T, North> f{h, h_n, u, u_n, v, v_n, fe_n, ke_n, fn, qfn, qfe, T(0.5), T(0.25), c.rdx, c.rdy, coriolis};
#pragma omp simd
  for (int64_t i = 1; i <= nx; ++i) f.cell(i, f.fn_at(i + 1));
  f.cell(nx, f.fn_at(1));
}

// The new v tendency of row r (over the old one, which the Adams-Bashforth step reads
// first) and v1 = v + ca dv_new + cb dv_old: (ca, cb) = dt (1, 0) on the first step, dt (A,
// B) after. `h_n` is h's row r + 1 (not hc's: the halo row on the top row).
template <class T>
void update_v_kernel(int64_t nx, const Coefficients<T>& c, T ca, T cb, const T* __restrict h,
                     const T* __restrict h_n, const T* __restrict qfe, const T* __restrict ke,
                     const T* __restrict ke_n, const T* __restrict v, T* __restrict dv, T* __restrict v1) {
  const T quarter = T(0.25), rdy = c.rdy, gy = c.neg_g_dy;
#pragma omp simd
  for (int64_t i = 1; i <= nx; ++i) {
    const T dv_new = gy * (h_n[i] - h[i]) - quarter * (qfe[i] + qfe[i - 1]) - (ke_n[i] - ke[i]) * rdy;
    v1[i] = v[i] + (ca * dv_new + cb * dv[i]);
    dv[i] = dv_new;
  }
}

// The new h and u tendencies of row r and the updates of h (in place) and u (into `u1`).
// `_s` rows are row r - 1's.
template <class T>
void update_hu_kernel(int64_t nx, const Coefficients<T>& c, T ca, T cb, const T* __restrict fe,
                      const T* __restrict fn, const T* __restrict fn_s, const T* __restrict qfn,
                      const T* __restrict qfn_s, const T* __restrict ke, T* h, T* __restrict dh, T* __restrict du,
                      const T* __restrict u, T* __restrict u1) {
  const T quarter = T(0.25), rdx = c.rdx, rdy = c.rdy, gx = c.neg_g_dx;
  // h[i + 1] is read before h[i + 1] is written: a forward anti-dependence, which GCC
  // vectorizes (the loads of an iteration come before its stores).
  for (int64_t i = 1; i <= nx; ++i) {
    const T dh_new = -(fe[i] - fe[i - 1]) * rdx - (fn[i] - fn_s[i]) * rdy;
    const T du_new = gx * (h[i + 1] - h[i]) + quarter * (qfn[i] + qfn_s[i]) - (ke[i + 1] - ke[i]) * rdx;
    u1[i] = u[i] + (ca * du_new + cb * du[i]);
    h[i] = h[i] + (ca * dh_new + cb * dh[i]);
    dh[i] = dh_new;
    du[i] = du_new;
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
/// it first (and it lands in their memory). Large buffers (the fields) are asked for
/// transparent huge pages: a step streams through 78 MB, 19,000 4 KiB pages, far more than
/// the TLB holds.
template <class T> struct Buffer {
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T, Free> ptr;
  explicit Buffer(size_t n = 0) {
    if (n == 0) return;
    constexpr size_t kHugePage = size_t(2) << 20;
    const size_t align = n * sizeof(T) >= 2 * kHugePage ? kHugePage : 64;
    const size_t bytes = (n * sizeof(T) + align - 1) / align * align;
    ptr.reset(static_cast<T*>(std::aligned_alloc(align, bytes)));
    if (!ptr) {
      std::fprintf(stderr, "shallow_water_ref: out of memory (%zu bytes)\n", bytes);
      std::exit(1);
    }
#ifdef MADV_HUGEPAGE
    if (align == kHugePage) madvise(ptr.get(), bytes, MADV_HUGEPAGE);  // advice: failure is harmless
#endif
  }
  T* get() const { return ptr.get(); }
};

// The barrier between steps. It spins first: on a quiet machine the threads of a step
// arrive within microseconds of each other, and a thread put to sleep takes tens of
// microseconds to wake, as long as a whole step at 360x180. After ~50 us it sleeps in the
// kernel (std::atomic::wait): on a busy machine a spinning thread would take the core its
// late partner needs. (OpenMP's own barrier spins for 300,000 rounds by default, which on
// 2 busy cores made the 360x180 step 10-20x slower than sleeping at once; with
// OMP_WAIT_POLICY=passive it sleeps at once and pays a wake-up every step.)
class StepBarrier {
 public:
  explicit StepBarrier(int threads) : threads_(threads) {}
  void arrive_and_wait() {
    const unsigned generation = generation_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) == threads_ - 1) {
      arrived_.store(0, std::memory_order_relaxed);
      generation_.fetch_add(1, std::memory_order_release);
      generation_.notify_all();
      return;
    }
    for (int k = 0; k < kSpins; ++k) {
      if (generation_.load(std::memory_order_acquire) != generation) return;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
    while (generation_.load(std::memory_order_acquire) == generation) generation_.wait(generation, std::memory_order_acquire);
  }

 private:
  static constexpr int kSpins = 2000;  // pause instructions: about 50 us
  const int threads_;
  std::atomic<int> arrived_{0};
  std::atomic<unsigned> generation_{0};
};

enum Field : int { kH, kU, kV, kDH, kDU, kDV };
constexpr int kNumFields = 6;

template <class T> class Model {
 public:
  Model(int64_t nx, int64_t ny, int threads);

  /// Runs `steps` steps (the first a forward step) in one parallel region, one barrier
  /// between steps. With `cpu_time`, returns the CPU seconds per step of the average
  /// thread, barrier waits excluded (a figure that busy machines disturb less), else 0.
  double run(int steps, bool cpu_time);

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
  /// Bytes a step moves at least: each field read and written once.
  double bytes_per_step() const { return 2.0 * kNumFields * double(ny_) * double(nx_ + 2) * sizeof(T); }

 private:
  // Per-thread rows: the rings (fe, ke, fn, qfn indexed by row & 1; the updated u, v by
  // row & 3; qfe of the current row) and the new u of row j0 - 1, which the block below
  // owns and this one recomputes.
  struct Work {
    Buffer<T> storage;
    T *fe[2], *ke[2], *fn[2], *qfn[2], *qfe;
    T *u1[4], *v1[4];
    T* u2_south;
  };

  T* row(int f, int64_t r) const { return base_[f] + offset_ + r * ld_; }
  std::pair<int64_t, int64_t> block(int t) const { return {1 + ny_ * t / threads_, 1 + ny_ * (t + 1) / threads_}; }
  T coriolis(int64_t r) const { return T(kCoriolisF + double(r - 1) * kDy * kCoriolisBeta); }

  void init_rows(int64_t r0, int64_t r1, const std::vector<double>& h0, const std::vector<double>& u0);
  void save_edges(int t, int parity);
  void step(int t, int parity, bool first, Work& w);

  int64_t nx_, ny_, ld_, offset_;
  int threads_;
  Buffer<T> fields_[kNumFields];
  T* base_[kNumFields];  // row 0 of each field, staggered (see the constructor)
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
  // The fields start 3 cache lines apart modulo the page: a row's cells in the six fields
  // then fall in different L1 sets and 4 KiB-aliasing slots (large allocations are
  // page-aligned, so without this they would all share both).
  for (int f = 0; f < kNumFields; ++f) {
    const int64_t stagger = 3 * per_line * f;
    fields_[f] = Buffer<T>(size_t(ld_ * (ny + 2) + stagger));
    base_[f] = fields_[f].get() + stagger;
  }
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
      h0[size_t(j * nxg + i)] = kDepth + h0[size_t(j * nxg + i)] - mean +  // h0 held h_geo
                                0.2 * std::sin(x(i) / length_x * 10 * std::numbers::pi) *
                                    std::cos(y(j) / length_y * 8 * std::numbers::pi);

  // Each thread touches first the rows it will update (and its ring and side buffers).
  const int64_t w = ld_;
#pragma omp parallel num_threads(threads_)
  {
    const int t = omp_get_thread_num();
    const int64_t j0 = block(t).first, j1 = block(t).second;
    init_rows(t == 0 ? 0 : j0, t == threads_ - 1 ? ny + 2 : j1, h0, u0);

    Work& wk = work_[size_t(t)];
    wk.storage = Buffer<T>(size_t(18 * w));
    T* p = wk.storage.get() + offset_;
    std::memset(wk.storage.get(), 0, size_t(18 * w) * sizeof(T));
    for (T** r : {&wk.fe[0], &wk.fe[1], &wk.ke[0], &wk.ke[1], &wk.fn[0], &wk.fn[1], &wk.qfn[0], &wk.qfn[1], &wk.qfe, &wk.u1[0],
                  &wk.u1[1], &wk.u1[2], &wk.u1[3], &wk.v1[0], &wk.v1[1], &wk.v1[2], &wk.v1[3], &wk.u2_south}) {
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
    for (int f = 0; f < kNumFields; ++f) std::memset(base_[f] + j * ld_, 0, size_t(ld_) * sizeof(T));
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
  const int64_t j0 = block(t).first, j1 = block(t).second;
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
  const int64_t j0 = block(t).first, j1 = block(t).second;
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

  // The fluxes of rows r and r + 1 (r = 0: fe, ke of row 1 only; fn and qfn of the halo
  // row 0 are zero).
  auto flux = [&](int64_t r) {
    T *fe_n = w.fe[(r + 1) & 1], *ke_n = w.ke[(r + 1) & 1], *fn = w.fn[r & 1], *qfn = w.qfn[r & 1];
    if (r < ny)
      flux_kernel<T, true>(nx, c, coriolis(r), H(r), H(r + 1), U(r), U(r + 1), V(r), V(r + 1), fe_n, ke_n, fn, qfn,
                           w.qfe);
    else
      flux_kernel<T, false>(nx, c, coriolis(r), H(r), H(r), U(r), U(r + 1), V(r), V(r), fe_n, ke_n, fn, qfn, w.qfe);
    wrap_row(fe_n, nx);
    wrap_row(ke_n, nx);
    wrap_row(w.qfe, nx);
    if (r == 0) {
      std::fill(fn, fn + nx + 2, T(0));
      std::fill(qfn, qfn + nx + 2, T(0));
    }
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

  flux(d_lo - 1);
  for (int64_t r = d_lo; r <= d_hi; ++r) {
    flux(r);
    T* h = old(kH, r);
    update_v_kernel(nx, c, ca, cb, h, old(kH, r + 1), w.qfe, w.ke[r & 1], w.ke[(r + 1) & 1], V(r), old(kDV, r),
                    w.v1[r & 3]);
    update_hu_kernel(nx, c, ca, cb, w.fe[r & 1], w.fn[r & 1], w.fn[(r - 1) & 1], w.qfn[r & 1], w.qfn[(r - 1) & 1],
                     w.ke[r & 1], h, old(kDH, r), old(kDU, r), U(r), w.u1[r & 3]);
    wrap_row(h, nx);
    wrap_row(w.u1[r & 3], nx);
    if (r == ny) std::fill(w.v1[r & 3], w.v1[r & 3] + nx + 2, T(0));  // the northern wall
    else wrap_row(w.v1[r & 3], nx);
    for (; next_fu < j1 && std::min(next_fu + 1, ny) <= r; ++next_fu) friction_u(next_fu);
    for (; next_fv < j1 && next_fv < next_fu && std::min(next_fv + 1, ny) <= r; ++next_fv) friction_v(next_fv);
  }
}

template <class T> double Model<T>::run(int steps, bool cpu_time) {
  StepBarrier barrier(threads_);
  double cpu_seconds = 0;
#pragma omp parallel num_threads(threads_) reduction(+ : cpu_seconds)
  {
    const int t = omp_get_thread_num();
    Work& w = work_[size_t(t)];
    auto now = [] {
      timespec ts;
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
      return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
    };
    for (int k = 0; k < steps; ++k) {
      const double t0 = cpu_time ? now() : 0;
      step(t, k & 1, k == 0, w);
      save_edges(t, (k + 1) & 1);
      if (cpu_time) cpu_seconds += now() - t0;
      barrier.arrive_and_wait();
    }
  }
  return cpu_seconds / threads_ / steps;
}

template <class T> double Model<T>::stream_seconds_per_sweep(int sweeps) {
  static volatile T one = T(1), zero = T(0);  // opaque to the optimizer
  const T a = one, b = zero;
  double best = 1e30;
  for (int s = 0; s < sweeps; ++s) {
    const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads_)
    {
      const int t = omp_get_thread_num();
      const int64_t j0 = block(t).first, j1 = block(t).second;
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
               "[--dtype float32|float64] [--out h.npy] [--cpu-time]\n",
               msg);
  std::exit(2);
}

template <class T> int run(int64_t nx, int64_t ny, int steps, const std::string& out, bool cpu_time) {
  const int threads = int(std::max<int64_t>(1, std::min<int64_t>(omp_get_max_threads(), ny / 5)));
  Model<T> model(nx, ny, threads);
  const auto t0 = std::chrono::steady_clock::now();
  const double cpu_seconds = model.run(steps, cpu_time);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("seconds %.4f\n", seconds);
  std::printf("ms_per_step %.4f\n", 1e3 * seconds / steps);
  std::printf("threads %d\n", model.threads());
  if (cpu_time) std::printf("cpu_ms_per_step %.4f\n", 1e3 * cpu_seconds);
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
  bool cpu_time = false;
  for (int k = 1; k < argc; ++k) {
    const std::string arg = argv[k];
    if (arg == "--cpu-time") {
      cpu_time = true;
      continue;
    }
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
  if (dtype == "float32") return run<float>(nx, ny, steps, out, cpu_time);
  if (dtype == "float64") return run<double>(nx, ny, steps, out, cpu_time);
  usage(("unknown dtype " + dtype + " (float32 or float64)").c_str());
}
