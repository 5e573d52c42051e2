// The shallow-water model: a line-by-line port of mpi4jax's examples/shallow_water.py for
// one process. Python slices map to ts::Slice: `a[1:-1, 2:]` is `a[{I, P}]` below.
#include "shallow_water.h"

#include <cmath>
#include <numbers>
#include <vector>

namespace shallow_water {
namespace {

const ts::Slice I(1, -1);          // 1:-1, the interior
const ts::Slice P(2, ts::none);    // 2:, one cell further (east / north)
const ts::Slice M(ts::none, -2);   // :-2, one cell back (west / south)
const ts::Slice All;               // :

ts::Array from_host(const std::vector<double>& v, int64_t rows, int64_t cols, ts::DType dtype) {
  return ts::Array(v, {rows, cols}).astype(dtype);
}

}  // namespace

ts::Array enforce_boundaries(const ts::Array& arr, char grid) {
  // Send west / receive east, then send east / receive west, each with ourselves.
  ts::Array out = arr.at({All, -1}).set(arr[{All, 1}]);
  out = out.at({All, 0}).set(out[{All, -2}]);
  if (grid == 'v') out = out.at({-2, All}).set(0.0);
  return out;
}

ts::Array interior(const ts::Array& field) { return field[{I, I}]; }

ShallowWater::ShallowWater(Config config) : config_(config) {
  const int64_t nx = config_.nx, ny = config_.ny;
  if (nx < 2 || ny < 2)
    throw ts::ValueError("ShallowWater: the interior must be at least 2 x 2 cells, got nx = " + std::to_string(nx) +
                         ", ny = " + std::to_string(ny));
  if (!ts::is_floating(config_.dtype))
    throw ts::DTypeError(std::string("ShallowWater: dtype must be floating, got ") + ts::dtype_name(config_.dtype));
  // CORIOLIS_PARAM[1:-1, 1:-1]: interior rows sit at y = 0, dy, ..., computed in double
  // and rounded once to the model dtype, as the original's NumPy constant is.
  std::vector<double> f(size_t(ny * nx));
  for (int64_t j = 0; j < ny; ++j)
    for (int64_t i = 0; i < nx; ++i) f[size_t(j * nx + i)] = kCoriolisF + double(j) * kDy * kCoriolisBeta;
  coriolis_ = from_host(f, ny, nx, config_.dtype);
}

double ShallowWater::dt() { return 0.125 * std::min(kDx, kDy) / std::sqrt(kGravity * kDepth); }

State ShallowWater::initial_state() const {
  const int64_t nxg = config_.nx + 2, nyg = config_.ny + 2;
  // Global coordinates including the halo: x = (-1, 0, 1, ..., nx) * dx.
  auto x = [](int64_t i) { return double(i - 1) * kDx; };
  auto y = [](int64_t j) { return double(j - 1) * kDy; };
  const double length_x = x(nxg - 2) - x(1), length_y = y(nyg - 2) - y(1);
  const size_t n = size_t(nxg * nyg);
  std::vector<double> u0(n), h_geo(n), h0(n);
  for (int64_t j = 0; j < nyg; ++j)
    for (int64_t i = 0; i < nxg; ++i) {
      const double d = y(j) - 0.5 * length_y, w = 0.02 * length_x;
      u0[size_t(j * nxg + i)] = 10 * std::exp(-(d * d) / (w * w));
    }
  // Approximate geostrophic balance h_y = -(f / g) u: a cumulative sum along y.
  double total = 0;
  for (int64_t j = 0; j < nyg; ++j)
    for (int64_t i = 0; i < nxg; ++i) {
      const size_t k = size_t(j * nxg + i);
      const double coriolis = kCoriolisF + y(j) * kCoriolisBeta;
      h_geo[k] = -kDy * u0[k] * coriolis / kGravity + (j > 0 ? h_geo[k - size_t(nxg)] : 0.0);
      total += h_geo[k];
    }
  const double mean = total / double(n);
  for (int64_t j = 0; j < nyg; ++j)
    for (int64_t i = 0; i < nxg; ++i) {
      const size_t k = size_t(j * nxg + i);
      // Centred on the depth, plus a small perturbation to break the symmetry.
      h0[k] = kDepth + h_geo[k] - mean +
              0.2 * std::sin(x(i) / length_x * 10 * std::numbers::pi) * std::cos(y(j) / length_y * 8 * std::numbers::pi);
    }
  const ts::DType dt = config_.dtype;
  ts::Array zeros = ts::zeros({nyg, nxg}, dt);
  return State{enforce_boundaries(from_host(h0, nyg, nxg, dt), 'h'),
               enforce_boundaries(from_host(u0, nyg, nxg, dt), 'u'),
               enforce_boundaries(zeros, 'v'),
               zeros, zeros, zeros};
}

State ShallowWater::step(const State& s, bool first_step) const {
  ts::Array h = s.h, u = s.u, v = s.v;
  const ts::Array &dh = s.dh, &du = s.du, &dv = s.dv;
  const double dx = kDx, dy = kDy, dt = ShallowWater::dt();

  ts::Array hc = ts::pad(h[{I, I}], {{1, 1}}, "edge");
  hc = enforce_boundaries(hc, 'h');

  // Mass fluxes (jnp.empty_like is zeros_like: halo rows stay zero, as in JAX).
  ts::Array fe = ts::zeros_like(u), fn = ts::zeros_like(u);
  fe = fe.at({I, I}).set(0.5 * (hc[{I, I}] + hc[{I, P}]) * u[{I, I}]);
  fn = fn.at({I, I}).set(0.5 * (hc[{I, I}] + hc[{P, I}]) * v[{I, I}]);
  fe = enforce_boundaries(fe, 'u');
  fn = enforce_boundaries(fn, 'v');

  ts::Array dh_new = dh.at({I, I}).set(-(fe[{I, I}] - fe[{I, M}]) / dx - (fn[{I, I}] - fn[{M, I}]) / dy);

  // Non-linear momentum equation: planetary and relative vorticity, then potential vorticity.
  ts::Array q = ts::zeros_like(u), ke = ts::zeros_like(u);
  q = q.at({I, I}).set(coriolis_ + ((v[{I, P}] - v[{I, I}]) / dx - (u[{P, I}] - u[{I, I}]) / dy));
  q = q.at({I, I}).mul(1.0 / (0.25 * (hc[{I, I}] + hc[{I, P}] + hc[{P, I}] + hc[{P, P}])));
  q = enforce_boundaries(q, 'h');

  ts::Array du_new = du.at({I, I}).set(-kGravity * (h[{I, P}] - h[{I, I}]) / dx +
                                       0.5 * (q[{I, I}] * 0.5 * (fn[{I, I}] + fn[{I, P}]) +
                                              q[{M, I}] * 0.5 * (fn[{M, I}] + fn[{M, P}])));
  ts::Array dv_new = dv.at({I, I}).set(-kGravity * (h[{P, I}] - h[{I, I}]) / dy -
                                       0.5 * (q[{I, I}] * 0.5 * (fe[{I, I}] + fe[{P, I}]) +
                                              q[{I, M}] * 0.5 * (fe[{I, M}] + fe[{P, M}])));
  ke = ke.at({I, I}).set(0.5 * (0.5 * (ts::square(u[{I, I}]) + ts::square(u[{I, M}])) +
                                0.5 * (ts::square(v[{I, I}]) + ts::square(v[{M, I}]))));
  ke = enforce_boundaries(ke, 'h');

  du_new = du_new.at({I, I}).add(-(ke[{I, P}] - ke[{I, I}]) / dx);
  dv_new = dv_new.at({I, I}).add(-(ke[{P, I}] - ke[{I, I}]) / dy);

  if (first_step) {
    u = u.at({I, I}).add(dt * du_new[{I, I}]);
    v = v.at({I, I}).add(dt * dv_new[{I, I}]);
    h = h.at({I, I}).add(dt * dh_new[{I, I}]);
  } else {
    u = u.at({I, I}).add(dt * (kAdamsBashforthA * du_new[{I, I}] + kAdamsBashforthB * du[{I, I}]));
    v = v.at({I, I}).add(dt * (kAdamsBashforthA * dv_new[{I, I}] + kAdamsBashforthB * dv[{I, I}]));
    h = h.at({I, I}).add(dt * (kAdamsBashforthA * dh_new[{I, I}] + kAdamsBashforthB * dh[{I, I}]));
  }

  h = enforce_boundaries(h, 'h');
  u = enforce_boundaries(u, 'u');
  v = enforce_boundaries(v, 'v');

  // Lateral friction, applied after the Adams-Bashforth update.
  fe = fe.at({I, I}).set(kLateralViscosity * (u[{I, P}] - u[{I, I}]) / dx);
  fn = fn.at({I, I}).set(kLateralViscosity * (u[{P, I}] - u[{I, I}]) / dy);
  fe = enforce_boundaries(fe, 'u');
  fn = enforce_boundaries(fn, 'v');
  u = u.at({I, I}).add(dt * ((fe[{I, I}] - fe[{I, M}]) / dx + (fn[{I, I}] - fn[{M, I}]) / dy));

  // The v fluxes difference v against u (`v[1:-1, 2:] - u[1:-1, 1:-1]`): this mirrors the
  // upstream code exactly, so that results compare with it.
  fe = fe.at({I, I}).set(kLateralViscosity * (v[{I, P}] - u[{I, I}]) / dx);
  fn = fn.at({I, I}).set(kLateralViscosity * (v[{P, I}] - u[{I, I}]) / dy);
  fe = enforce_boundaries(fe, 'u');
  fn = enforce_boundaries(fn, 'v');
  v = v.at({I, I}).add(dt * ((fe[{I, I}] - fe[{I, M}]) / dx + (fn[{I, I}] - fn[{M, I}]) / dy));

  return State{h, u, v, dh_new, du_new, dv_new};
}

}  // namespace shallow_water
