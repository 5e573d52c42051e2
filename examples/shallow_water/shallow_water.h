#pragma once
// The non-linear shallow-water model of the mpi4jax paper, ported from mpi4jax's
// examples/shallow_water.py: same grid, constants, update order and halo handling, written
// once with tessel operations so it runs eagerly or under ts::jit, on one process or, with
// the paper's domain decomposition, on several (`mpirun -np N`), where the halo exchange
// is ts::comm::sendrecv inside the jitted step.
#include <cstdint>
#include <string>
#include <vector>

#include "tessel/comm.h"
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
/// (of this process's block, when decomposed) plus one halo cell on every side.
struct State {
  ts::Array h, u, v, dh, du, dv;
};

/// Interior size (of the whole domain) and dtype (dx = dy = 5 km fixed, as in the original).
struct Config {
  int64_t nx = 360;
  int64_t ny = 180;
  ts::DType dtype = ts::f32;
};

/// The paper's domain decomposition: the interior is cut into nproc_y = min(nproc, 2) rows
/// times nproc_x = nproc / nproc_y columns of equal blocks; process r holds block
/// (py, px) = (r / nproc_x, r % nproc_x) (py = 0 in the south) plus a one-cell halo that
/// enforce_boundaries fills from its neighbours: periodic in x, walls in y. The default is
/// one process, which never calls MPI.
struct Decomposition {
  int nproc_x = 1, nproc_y = 1;
  int px = 0, py = 0;
  ts::comm::Comm comm{};  ///< used only when size() > 1
  /// The paper's layout over the processes of `comm` (collective only in that it asks
  /// comm for its rank and size).
  static Decomposition of(const ts::comm::Comm& comm);
  int size() const { return nproc_x * nproc_y; }
  int rank() const { return py * nproc_x + px; }
  /// Rank of block (py, px).
  int rank_of(int block_y, int block_x) const { return block_y * nproc_x + block_x; }
};

class ShallowWater {
 public:
  /// The model of `config`'s domain on this process's block of `decomposition`; throws
  /// ValueError when the processes do not divide the interior evenly.
  explicit ShallowWater(Config config = {}, Decomposition decomposition = {});
  const Config& config() const { return config_; }
  const Decomposition& decomposition() const { return decomposition_; }
  /// This process's interior block: (ny / nproc_y, nx / nproc_x).
  int64_t nx_local() const { return config_.nx / decomposition_.nproc_x; }
  int64_t ny_local() const { return config_.ny / decomposition_.nproc_y; }
  /// Time step from the CFL condition: 0.125 * min(dx, dy) / sqrt(g * depth).
  static double dt();

  /// A zonal jet in geostrophic balance plus a small perturbation, halos filled (this
  /// process's block of it).
  State initial_state() const;
  /// One time step: a forward step when `first_step`, Adams-Bashforth otherwise, then
  /// lateral friction. Works on concrete arrays and on tracers (jit it with
  /// `ts::jit(..., {.static_argnums = {1}})`). Decomposed, every process must call it
  /// alike: its halo exchanges pair with the neighbours'.
  State step(const State& s, bool first_step) const;
  /// The whole interior (ny, nx) of a field, assembled on process 0 from every process's
  /// block (a collective ts::comm::gather); the other processes get an empty Array. One
  /// process: interior(field).
  ts::Array gather_interior(const ts::Array& field) const;

 private:
  Config config_;
  Decomposition decomposition_;
  ts::Array coriolis_;  // f + beta * y on the (local) interior, (ny_local, nx_local)
};

/// Fills the halo of a single-process domain: periodic in x (column 0 <- column -2 and
/// column -1 <- column 1, the send-west/receive-east exchange of the original with itself),
/// and for the v grid the wall at the northern boundary (row -2 = 0).
ts::Array enforce_boundaries(const ts::Array& arr, char grid);
/// The same for one block of a decomposed domain: the halo exchanges of the original,
/// each a comm::sendrecv inside the (jitted) step — west and east (a local copy when the
/// neighbour is this process), then one with the neighbour in y — then the wall of the v
/// grid on the northern blocks. Every halo cell gets the single-process field's value.
ts::Array enforce_boundaries(const ts::Array& arr, char grid, const Decomposition& d);
/// Several fields of one shape at once, `grids[k]` ('h', 'u' or 'v') the grid of
/// `fields[k]`: decomposed, one message per neighbour carries the lines of all of them.
using Fields = std::vector<ts::Array>;
Fields enforce_boundaries(Fields fields, const std::string& grids, const Decomposition& d);
/// Fills only the halo cells of `fields` that lie inside the domain (shared with a
/// neighbouring block) with the neighbours' values, leaving the domain's own halo (periodic columns, wall rows)
/// as it is: the same exchanges without the periodic wrap or the wall. The step calls it
/// after friction, where the original updates u and v without refreshing their halos, so
/// that every block holds the single-process field's values. One process: `fields`.
Fields refresh_inner_halos(Fields fields, const Decomposition& d);

/// The interior of a field, (ny, nx).
ts::Array interior(const ts::Array& field);

}  // namespace shallow_water

TESSEL_TREE(shallow_water::State, h, u, v, dh, du, dv)
