#pragma once
// The non-linear shallow-water model of the mpi4jax paper, ported from mpi4jax's
// examples/shallow_water.py for one process: same grid, constants, update order and halo
// handling, written once with tessel operations so it runs eagerly or under ts::jit.
#include <cstdint>

#include "tessel/tessel.h"

namespace shallow_water {

namespace ts = tessel;

// Physical and numerical constants of the original.
inline constexpr double kDx = 5e3;  // grid spacing (m)
inline constexpr double kDy = 5e3;
inline constexpr double kGravity = 9.81;
inline constexpr double kDepth = 100.0;
inline constexpr double kCoriolisF = 2e-4;
inline constexpr double kCoriolisBeta = 2e-11;
inline constexpr double kLateralViscosity = 1e-3 * kCoriolisF * kDx * kDx;
inline constexpr double kAdamsBashforthA = 1.5 + 0.1;
inline constexpr double kAdamsBashforthB = -(0.5 + 0.1);
inline constexpr double kDayInSeconds = 86400.0;

/// Prognostic fields h, u, v and their last tendencies, each (ny + 2, nx + 2): the interior
/// plus one halo cell on every side.
struct State {
  ts::Array h, u, v, dh, du, dv;
};

/// Interior size and dtype (dx = dy = 5 km fixed, as in the original).
struct Config {
  int64_t nx = 360;
  int64_t ny = 180;
  ts::DType dtype = ts::f32;
};

class ShallowWater {
 public:
  explicit ShallowWater(Config config = {});
  const Config& config() const { return config_; }
  /// Time step from the CFL condition: 0.125 * min(dx, dy) / sqrt(g * depth).
  static double dt();

  /// A zonal jet in geostrophic balance plus a small perturbation, halos filled.
  State initial_state() const;
  /// One time step: a forward step when `first_step`, Adams-Bashforth otherwise, then
  /// lateral friction. Works on concrete arrays and on tracers (jit it with
  /// `ts::jit(..., {.static_argnums = {1}})`).
  State step(const State& s, bool first_step) const;

 private:
  Config config_;
  ts::Array coriolis_;  // f + beta * y on the interior, (ny, nx)
};

/// Fills the halo of a single-process domain: periodic in x (column 0 <- column -2 and
/// column -1 <- column 1, the send-west/receive-east exchange of the original with itself),
/// and for the v grid the wall at the northern boundary (row -2 = 0).
ts::Array enforce_boundaries(const ts::Array& arr, char grid);

/// The interior of a field, (ny, nx).
ts::Array interior(const ts::Array& field);

}  // namespace shallow_water

TESSEL_TREE(shallow_water::State, h, u, v, dh, du, dv)
