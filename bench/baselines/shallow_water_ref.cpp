// Hand-written C++ shallow-water model: the baseline that tessel's jitted step is measured
// against (issue 4). Same physics, constants, update order, halo handling and initial state
// as examples/shallow_water/shallow_water.cpp and bench/baselines/shallow_water_numpy.py,
// written the way a careful programmer writes it without a framework: float32 fields with
// one halo cell, two fused loops per step, each parallel over blocks of rows with OpenMP,
// intermediates kept in per-thread rolling row buffers, halos filled inside the loops.
//
// Usage: shallow_water_ref [--nx 1800] [--ny 900] [--steps 200] [--out h.npy]
// Prints `seconds <t>` and `ms_per_step <v>` for the time-stepping loop (set-up excluded);
// --out saves the interior surface height (ny, nx) as float32 .npy. Threads: OpenMP's
// default, all cores (OMP_NUM_THREADS changes it); bench_shallow_water runs it with
// OMP_WAIT_POLICY=passive so that idle threads sleep rather than spin on a shared machine.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numbers>
#include <string>
#include <utility>
#include <vector>

#include "npy.h"

#ifdef _OPENMP
#include <omp.h>
#else
inline int omp_get_max_threads() { return 1; }
#endif

namespace {

// Constants of the model (examples/shallow_water/shallow_water.h), in double; the float32
// versions below are what the tessel and NumPy models use (Python/C++ scalars are rounded
// to the array dtype when they meet a float32 array).
constexpr double kDx = 5e3, kDy = 5e3;
constexpr double kGravity = 9.81;
constexpr double kDepth = 100.0;
constexpr double kCoriolisF = 2e-4;
constexpr double kCoriolisBeta = 2e-11;
constexpr double kLateralViscosity = 1e-3 * kCoriolisF * kDx * kDx;
constexpr double kAdamsBashforthA = 1.5 + 0.1;
constexpr double kAdamsBashforthB = -(0.5 + 0.1);

const double kDt = 0.125 * std::min(kDx, kDy) / std::sqrt(kGravity * kDepth);

/// A (ny + 2, nx + 2) float32 field, row-major: the interior plus one halo cell per side.
struct Field {
  int64_t rows = 0, cols = 0;
  std::vector<float> data;
  Field() = default;
  Field(int64_t r, int64_t c) : rows(r), cols(c), data(size_t(r * c), 0.0f) {}
  float* row(int64_t j) { return data.data() + j * cols; }
  const float* row(int64_t j) const { return data.data() + j * cols; }
};

/// Periodic in x: column 0 <- column nx, column nx + 1 <- column 1 (enforce_boundaries).
inline void wrap_row(float* r, int64_t nx) {
  r[nx + 1] = r[1];
  r[0] = r[nx];
}

class Model {
 public:
  Model(int64_t nx, int64_t ny) : nx_(nx), ny_(ny) { init(); }

  /// One time step: forward on the first, Adams-Bashforth after, then lateral friction.
  void step(bool first) {
    if (first)
      dynamics<true>();
    else
      dynamics<false>();
    friction();
    std::swap(h_, h_next_);
  }

  /// The interior of h, (ny, nx).
  std::vector<float> interior_h() const {
    std::vector<float> out(size_t(nx_ * ny_));
    for (int64_t j = 0; j < ny_; ++j) std::memcpy(&out[size_t(j * nx_)], h_.row(j + 1) + 1, size_t(nx_) * sizeof(float));
    return out;
  }

 private:
  void init();
  template <bool First> void dynamics();
  void friction();
  void fe_ke_row(int64_t j, float* fe, float* ke) const;
  void fn_q_row(int64_t j, float* fn, float* q) const;

  int64_t nx_, ny_;
  Field h_, u_, v_, dh_, du_, dv_;  // state
  Field h_next_, u_next_, v_next_;  // after the Adams-Bashforth update, before friction
  Field coriolis_;                  // f + beta * y, (ny, nx)
};

// The demo's initial state, computed in double and rounded once to float32: a zonal jet in
// geostrophic balance plus a small perturbation (ShallowWater::initial_state).
void Model::init() {
  const int64_t nxg = nx_ + 2, nyg = ny_ + 2;
  auto x = [](int64_t i) { return double(i - 1) * kDx; };
  auto y = [](int64_t j) { return double(j - 1) * kDy; };
  const double length_x = x(nxg - 2) - x(1), length_y = y(nyg - 2) - y(1);
  const size_t n = size_t(nxg * nyg);
  std::vector<double> u0(n), h_geo(n);
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
      h_geo[k] = -kDy * u0[k] * coriolis / kGravity + (j > 0 ? h_geo[k - size_t(nxg)] : 0.0);
      total += h_geo[k];
    }
  const double mean = total / double(n);
  h_ = Field(nyg, nxg);
  u_ = Field(nyg, nxg);
  for (int64_t j = 0; j < nyg; ++j) {
    for (int64_t i = 0; i < nxg; ++i) {
      const size_t k = size_t(j * nxg + i);
      h_.data[k] = float(kDepth + h_geo[k] - mean +
                         0.2 * std::sin(x(i) / length_x * 10 * std::numbers::pi) *
                             std::cos(y(j) / length_y * 8 * std::numbers::pi));
      u_.data[k] = float(u0[k]);
    }
    wrap_row(h_.row(j), nx_);
    wrap_row(u_.row(j), nx_);
  }
  // v starts at zero (its wall row too). The halo rows of h and u are never updated, so
  // both buffers of each field start as copies of the initial state.
  h_next_ = h_;
  u_next_ = u_;
  for (Field* f : {&v_, &dh_, &du_, &dv_, &v_next_}) *f = Field(nyg, nxg);
  coriolis_ = Field(ny_, nx_);
  for (int64_t j = 0; j < ny_; ++j)
    for (int64_t i = 0; i < nx_; ++i) coriolis_.row(j)[i] = float(kCoriolisF + double(j) * kDy * kCoriolisBeta);
}

// This thread's share of the interior rows 1..ny: one contiguous block, so the row
// pipelines below touch each input row once and keep its neighbours in cache.
std::pair<int64_t, int64_t> row_block(int64_t ny) {
#ifdef _OPENMP
  const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
#else
  const int64_t t = 0, nt = 1;
#endif
  return {1 + ny * t / nt, 1 + ny * (t + 1) / nt};
}

// Row kernels. GCC only trusts __restrict on function parameters, so each loop body is a
// function of row pointers; that lets it vectorize without run-time alias checks.
constexpr float kHalf = 0.5f, kQuarter = 0.25f, kOne = 1.0f;
const float kDxF = float(kDx), kDyF = float(kDy), kDtF = float(kDt), kNegGF = float(-kGravity);
const float kNuF = float(kLateralViscosity), kAF = float(kAdamsBashforthA), kBF = float(kAdamsBashforthB);

// Eastward mass flux fe and kinetic energy ke on one row.
void fe_ke_kernel(int64_t nx, const float* __restrict h, const float* __restrict u, const float* __restrict v,
                  const float* __restrict vS, float* __restrict fe, float* __restrict ke) {
  for (int64_t i = 1; i <= nx; ++i) {
    fe[i] = kHalf * (h[i] + h[i + 1]) * u[i];
    ke[i] = kHalf * (kHalf * (u[i] * u[i] + u[i - 1] * u[i - 1]) + kHalf * (v[i] * v[i] + vS[i] * vS[i]));
  }
}

// Northward mass flux fn and potential vorticity q on one row. hc (h with edge-padded halo
// rows) is read straight from h: `hN` is row min(j + 1, ny).
void fn_q_kernel(int64_t nx, const float* __restrict h, const float* __restrict hN, const float* __restrict u,
                 const float* __restrict uN, const float* __restrict v, const float* __restrict cor,
                 float* __restrict fn, float* __restrict q) {
  for (int64_t i = 1; i <= nx; ++i) {
    fn[i] = kHalf * (h[i] + hN[i]) * v[i];
    const float qi = cor[i - 1] + ((v[i + 1] - v[i]) / kDxF - (uN[i] - u[i]) / kDyF);
    q[i] = qi * (kOne / (kQuarter * (h[i] + h[i + 1] + hN[i] + hN[i + 1])));
  }
}

// New tendencies (in place: each point reads only its own old tendency) and the forward
// (First) or Adams-Bashforth update of h, u, v on one interior row.
template <bool First>
void update_kernel(int64_t nx, const float* __restrict h, const float* __restrict hN, const float* __restrict u,
                   const float* __restrict v, const float* __restrict fe, const float* __restrict feN,
                   const float* __restrict fn, const float* __restrict fnS, const float* __restrict q,
                   const float* __restrict qS, const float* __restrict ke, const float* __restrict keN,
                   float* __restrict dh, float* __restrict du, float* __restrict dv, float* __restrict h1,
                   float* __restrict u1, float* __restrict v1) {
  for (int64_t i = 1; i <= nx; ++i) {
    const float dh_new = -(fe[i] - fe[i - 1]) / kDxF - (fn[i] - fnS[i]) / kDyF;
    float du_new = kNegGF * (h[i + 1] - h[i]) / kDxF +
                   kHalf * (q[i] * kHalf * (fn[i] + fn[i + 1]) + qS[i] * kHalf * (fnS[i] + fnS[i + 1]));
    float dv_new = kNegGF * (hN[i] - h[i]) / kDyF -
                   kHalf * (q[i] * kHalf * (fe[i] + feN[i]) + q[i - 1] * kHalf * (fe[i - 1] + feN[i - 1]));
    du_new += -(ke[i + 1] - ke[i]) / kDxF;
    dv_new += -(keN[i] - ke[i]) / kDyF;
    if constexpr (First) {
      h1[i] = h[i] + kDtF * dh_new;
      u1[i] = u[i] + kDtF * du_new;
      v1[i] = v[i] + kDtF * dv_new;
    } else {
      h1[i] = h[i] + kDtF * (kAF * dh_new + kBF * dh[i]);
      u1[i] = u[i] + kDtF * (kAF * du_new + kBF * du[i]);
      v1[i] = v[i] + kDtF * (kAF * dv_new + kBF * dv[i]);
    }
    dh[i] = dh_new;
    du[i] = du_new;
    dv[i] = dv_new;
  }
}

// Lateral friction on one row of a field a (u, or v against u): fe = nu (a[j, i+1] -
// b[j, i]) / dx, fn = nu (a[j+1, i] - b[j, i]) / dy, out = a + dt (fe_x + fn_y), where b is
// u (u's own friction) or the new u (v's). fn is zero on the wall row ny and on halo row 0
// (`north`, `south` false), and fe wraps periodically: fe[0] = fe[nx]. `fe` is a scratch
// row of nx + 1.
void friction_kernel(int64_t nx, bool north, bool south, const float* __restrict a, const float* __restrict aN,
                     const float* __restrict b, const float* __restrict bS, float* __restrict fe,
                     float* __restrict out) {
  for (int64_t i = 1; i <= nx; ++i) fe[i] = kNuF * (a[i + 1] - b[i]) / kDxF;
  fe[0] = fe[nx];
  for (int64_t i = 1; i <= nx; ++i) {
    const float fn = north ? kNuF * (aN[i] - b[i]) / kDyF : 0.0f;
    const float fnS = south ? kNuF * (a[i] - bS[i]) / kDyF : 0.0f;
    out[i] = a[i] + kDtF * ((fe[i] - fe[i - 1]) / kDxF + (fn - fnS) / kDyF);
  }
  out[0] = a[0];  // no boundary exchange after friction: the halo keeps its values
  out[nx + 1] = a[nx + 1];
}

// fe and ke on row j with periodic halo columns; zero on the halo row ny + 1.
void Model::fe_ke_row(int64_t j, float* fe, float* ke) const {
  if (j > ny_) {
    std::fill(fe, fe + nx_ + 2, 0.0f);
    std::fill(ke, ke + nx_ + 2, 0.0f);
    return;
  }
  fe_ke_kernel(nx_, h_.row(j), u_.row(j), v_.row(j), v_.row(j - 1), fe, ke);
  wrap_row(fe, nx_);
  wrap_row(ke, nx_);
}

// fn and q on row j with periodic halo columns; zero on the halo row 0, and fn zero on the
// wall row ny (enforce_boundaries of the v grid).
void Model::fn_q_row(int64_t j, float* fn, float* q) const {
  if (j < 1) {
    std::fill(fn, fn + nx_ + 2, 0.0f);
    std::fill(q, q + nx_ + 2, 0.0f);
    return;
  }
  fn_q_kernel(nx_, h_.row(j), h_.row(std::min(j + 1, ny_)), u_.row(j), u_.row(j + 1), v_.row(j), coriolis_.row(j - 1),
              fn, q);
  wrap_row(q, nx_);
  if (j == ny_)
    std::fill(fn, fn + nx_ + 2, 0.0f);
  else
    wrap_row(fn, nx_);
}

// Loop 1: fluxes, vorticity, kinetic energy, tendencies and the time step, row by row into
// the *_next_ buffers. The intermediates live in two-row rolling buffers per thread: row
// j needs fe and ke of rows j and j + 1, fn and q of rows j - 1 and j.
template <bool First> void Model::dynamics() {
  const int64_t nx = nx_, ny = ny_;
#pragma omp parallel
  {
    const auto [j0, j1] = row_block(ny);
    const size_t w = size_t(nx + 2);
    std::vector<float> rows(8 * w);
    float *fe = &rows[0], *fe_n = &rows[w], *ke = &rows[2 * w], *ke_n = &rows[3 * w];
    float *fn_s = &rows[4 * w], *fn = &rows[5 * w], *q_s = &rows[6 * w], *q = &rows[7 * w];
    fe_ke_row(j0, fe, ke);
    fn_q_row(j0 - 1, fn_s, q_s);
    for (int64_t j = j0; j < j1; ++j) {
      fe_ke_row(j + 1, fe_n, ke_n);
      fn_q_row(j, fn, q);
      update_kernel<First>(nx, h_.row(j), h_.row(j + 1), u_.row(j), v_.row(j), fe, fe_n, fn, fn_s, q, q_s, ke, ke_n,
                           dh_.row(j), du_.row(j), dv_.row(j), h_next_.row(j), u_next_.row(j), v_next_.row(j));
      wrap_row(h_next_.row(j), nx);
      wrap_row(u_next_.row(j), nx);
      if (j == ny)
        std::fill(v_next_.row(j), v_next_.row(j) + nx + 2, 0.0f);  // the northern wall
      else
        wrap_row(v_next_.row(j), nx);
      std::swap(fe, fe_n);
      std::swap(ke, ke_n);
      std::swap(fn_s, fn);
      std::swap(q_s, q);
    }
  }
}

// Loop 2: lateral friction, u from u_next_ into u_, then v from v_next_ into v_,
// differencing v against the new u as the original does (`v[1:-1, 2:] - u[1:-1, 1:-1]`).
// Row j of v needs the new u of rows j and j - 1; the first row of each thread's block
// recomputes the new u of the row above it privately instead of waiting for its owner.
void Model::friction() {
  const int64_t nx = nx_, ny = ny_;
#pragma omp parallel
  {
    const auto [j0, j1] = row_block(ny);
    std::vector<float> fe(size_t(nx + 1)), u_above(size_t(nx + 2));
    const float* uS = u_.row(j0 - 1);  // row 0 is only read when j0 > 1
    if (j0 > 1) {
      const int64_t k = j0 - 1;
      friction_kernel(nx, k < ny, k > 1, u_next_.row(k), u_next_.row(k + 1), u_next_.row(k), u_next_.row(k - 1),
                      fe.data(), u_above.data());
      uS = u_above.data();
    }
    for (int64_t j = j0; j < j1; ++j) {
      friction_kernel(nx, j < ny, j > 1, u_next_.row(j), u_next_.row(j + 1), u_next_.row(j), u_next_.row(j - 1),
                      fe.data(), u_.row(j));
      friction_kernel(nx, j < ny, j > 1, v_next_.row(j), v_next_.row(j + 1), u_.row(j), uS, fe.data(), v_.row(j));
      uS = u_.row(j);
    }
  }
}

[[noreturn]] void usage(const char* msg) {
  std::fprintf(stderr, "shallow_water_ref: %s\nusage: shallow_water_ref [--nx N] [--ny N] [--steps N] [--out h.npy]\n",
               msg);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  int64_t nx = 1800, ny = 900;
  int steps = 200;
  std::string out;
  for (int k = 1; k < argc; ++k) {
    const std::string arg = argv[k];
    if (k + 1 >= argc) usage(("missing value after " + arg).c_str());
    const char* val = argv[++k];
    if (arg == "--nx") nx = std::atoll(val);
    else if (arg == "--ny") ny = std::atoll(val);
    else if (arg == "--steps") steps = std::atoi(val);
    else if (arg == "--out") out = val;
    else usage(("unknown option " + arg).c_str());
  }
  if (nx < 2 || ny < 2 || steps < 1) usage("need nx >= 2, ny >= 2 and steps >= 1");

  Model model(nx, ny);
  const auto t0 = std::chrono::steady_clock::now();
  for (int k = 0; k < steps; ++k) model.step(k == 0);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("seconds %.4f\n", seconds);
  std::printf("ms_per_step %.4f\n", 1e3 * seconds / steps);
  std::printf("threads %d\n", omp_get_max_threads());
  if (!out.empty()) shallow_water::write_npy(out, model.interior_h(), {ny, nx});
  return 0;
}
