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
/// plus one halo cell on every side; decomposed, (ny_local + halo_south + halo_north,
/// nx_local + 2): this process's block plus its halo (see Decomposition).
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
/// (py, px) = (r / nproc_x, r % nproc_x) (py = 0 in the south) plus a halo: periodic in x,
/// walls in y. The default is one process, which never calls MPI.
///
/// The halo is one cell wide, as in the original, except on the sides shared with the
/// block to the north or south, where its width is `halo`:
///  - 1 is the paper's scheme: every boundary enforcement of the step exchanges one line
///    with the neighbours (eight exchanges per step);
///  - kStepHalo or more exchanges `halo` rows of every field with the neighbours in y once
///    per step and computes the overlap redundantly, which gives the same values: each
///    exchange inside the step is a synchronisation that splits the step's fused loop
///    nests, so with one exchange per step a 2-process run keeps the single-process
///    step's three loop nests. Neighbours in x (4 processes and more) still exchange one
///    line at each enforcement: across the periodic seam the original's halo columns are
///    copies (stale after friction), which redundant computation would not reproduce.
struct Decomposition {
  /// Fewest rows a once-per-step exchange needs: the stencils of one step reach this far.
  static constexpr int kStepHalo = 4;
  int nproc_x = 1, nproc_y = 1;
  int px = 0, py = 0;
  int halo = kStepHalo;   ///< halo width on the sides shared in y: 1 or >= kStepHalo
  ts::comm::Comm comm{};  ///< used only when size() > 1
  /// The paper's layout over the processes of `comm` (collective only in that it asks
  /// comm for its rank and size); throws ValueError for a halo of 2 to kStepHalo - 1.
  static Decomposition of(const ts::comm::Comm& comm, int halo = kStepHalo);
  int size() const { return nproc_x * nproc_y; }
  int rank() const { return py * nproc_x + px; }
  /// Rank of block (py, px).
  int rank_of(int block_y, int block_x) const { return block_y * nproc_x + block_x; }
  /// Halo rows south and north of this block: `halo` where a neighbour is, else 1.
  int halo_south() const { return py > 0 ? halo : 1; }
  int halo_north() const { return py < nproc_y - 1 ? halo : 1; }
  /// True when the neighbours in y exchange once per step, at its end.
  bool exchanges_per_step() const { return nproc_y > 1 && halo > 1; }
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
  /// This process's own cells of a field, (ny_local, nx_local): the field without its halo.
  ts::Array block_interior(const ts::Array& field) const;

 private:
  Config config_;
  Decomposition decomposition_;
  ts::Array coriolis_;  // f + beta * y on the (local) interior, (ny_local, nx_local)
};

/// Fills the halo of a single-process domain: periodic in x (column 0 <- column -2 and
/// column -1 <- column 1, the send-west/receive-east exchange of the original with itself),
/// and for the v grid the wall at the northern boundary (row -2 = 0).
ts::Array enforce_boundaries(const ts::Array& arr, char grid);
/// The same for one block of a decomposed domain. With a one-cell halo (the paper's
/// scheme): the halo exchanges of the original, each a comm::sendrecv inside the (jitted)
/// step — west and east (a local copy when the neighbour is this process), then one with
/// the neighbour in y — then the wall of the v grid on the northern blocks; every halo
/// cell gets the single-process field's value. With a wider halo only the domain's own
/// halo is filled (periodic columns when the block spans the domain in x, the v wall on
/// the northern blocks): the shared sides hold values the step computed itself.
ts::Array enforce_boundaries(const ts::Array& arr, char grid, const Decomposition& d);
/// Several fields of one shape at once, `grids[k]` ('h', 'u' or 'v') the grid of
/// `fields[k]`: decomposed, one message per neighbour carries the lines of all of them.
using Fields = std::vector<ts::Array>;
Fields enforce_boundaries(Fields fields, const std::string& grids, const Decomposition& d);
/// Fills the halo cells on the sides shared with a neighbouring block with the neighbours'
/// values, leaving the domain's own halo (periodic columns, wall rows) as it is: the
/// exchanges of enforce_boundaries without the periodic wrap or the wall, `d.halo` lines
/// deep. The step calls it at its end: with a one-cell halo for u and v, which the original
/// updates by friction without refreshing their halos (so that every block holds the
/// single-process field's values); with a wider halo for every field, its one exchange.
/// One process: `fields`.
Fields refresh_inner_halos(Fields fields, const Decomposition& d);

/// The interior of a field, (ny, nx).
ts::Array interior(const ts::Array& field);

}  // namespace shallow_water

TESSEL_TREE(shallow_water::State, h, u, v, dh, du, dv)
