// The shallow-water model: a line-by-line port of mpi4jax's examples/shallow_water.py, on
// one process or one block of the paper's decomposition. Python slices map to ts::Slice:
// `a[1:-1, 2:]` is `a[{I, P}]` below.
#include "shallow_water.h"

#include <algorithm>
#include <cmath>
#include <new>
#include <numbers>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace shallow_water {
namespace {

const ts::Slice I(1, -1);          // 1:-1, the interior
const ts::Slice P(2, ts::none);    // 2:, one cell further (east / north)
const ts::Slice M(ts::none, -2);   // :-2, one cell back (west / south)
const ts::Slice All;               // :

// A host field of rows x cols doubles; running out of memory is a tessel ResourceExhaustedError
// naming the field and its size, like an allocation of tessel's own.
std::vector<double> host_field(int64_t rows, int64_t cols, const char* what) {
  try {
    return std::vector<double>(size_t(rows) * size_t(cols));
  } catch (const std::bad_alloc&) {
    throw ts::ResourceExhaustedError("shallow_water: out of memory for the host field " + std::string(what) +
                                     " f64[" + std::to_string(rows) + "," + std::to_string(cols) + "] (" +
                                     std::to_string(8 * rows * cols) + " bytes); use a smaller --nx/--ny");
  }
}

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

Decomposition Decomposition::of(const ts::comm::Comm& comm, int halo) {
  if (halo != 1 && halo < kStepHalo)
    throw ts::ValueError("shallow_water: a halo of " + std::to_string(halo) + " rows is too narrow for one exchange per "
                         "step (the step's stencils reach " + std::to_string(kStepHalo) +
                         " rows); use 1 (an exchange at every boundary enforcement) or at least " +
                         std::to_string(kStepHalo));
  Decomposition d;
  d.halo = halo;
  const int n = comm.size(), r = comm.rank();
  d.nproc_y = std::min(n, 2);
  d.nproc_x = n / d.nproc_y;
  if (d.size() != n)
    throw ts::ValueError("shallow_water: " + std::to_string(n) + " processes do not form the paper's " +
                         std::to_string(d.nproc_y) + " x nproc_x grid; run with 1 or an even number of processes");
  d.py = r / d.nproc_x;
  d.px = r % d.nproc_x;
  d.comm = comm;
  return d;
}

namespace {

// Rows [begin, end) of `field` replaced by `rows`. A concatenation, not an update: the
// step's loop nests read the received rows through it, so the rows of a block that read
// none of them are computed while the message travels (an update would be a step of its
// own, which waits for the message before anything reads the field).
ts::Array with_rows(const ts::Array& field, int64_t begin, int64_t end, const ts::Array& rows) {
  std::vector<ts::Array> parts;
  if (begin > 0) parts.push_back(ts::slice_in_dim(field, 0, begin));
  parts.push_back(rows);
  if (end < field.shape()[0]) parts.push_back(ts::slice_in_dim(field, end, field.shape()[0]));
  return parts.size() == 1 ? rows : ts::concatenate(parts, 0);
}

// Rows [first, last) of a field's first axis.
using RowRange = std::pair<int64_t, int64_t>;

// One exchange of enforce_boundaries for several fields of one shape at once (one message
// carries all their lines): the halo line `recv_idx` comes from `recv_from` while the line
// `send_idx` goes to `send_to` (-1: no neighbour that way). `recv_rows`: the received lines
// are whole rows [first, last), placed by with_rows.
Fields exchange(Fields fields, const std::vector<ts::Index>& send_idx, int send_to,
                const std::vector<ts::Index>& recv_idx, int recv_from, const Decomposition& d,
                std::optional<RowRange> recv_rows = std::nullopt) {
  namespace comm = ts::comm;
  if (send_to < 0 && recv_from < 0) return fields;
  if (send_to == d.rank() && recv_from == d.rank()) {  // periodic, alone in x
    for (ts::Array& f : fields) f = f.at(recv_idx).set(f[send_idx]);
    return fields;
  }
  // The fields' lines end to end along their first axis: a stack would add a reshape per
  // field on each side (a step each, for a few rows).
  std::vector<ts::Array> lines;
  for (const ts::Array& f : fields) lines.push_back(f[send_idx]);
  const ts::Array line = lines.size() == 1 ? lines[0] : ts::concatenate(lines, 0);
  const int64_t n = lines[0].shape()[0];
  if (recv_from < 0) {
    comm::send(line, send_to, {.comm = d.comm});
    return fields;
  }
  // The lines sent have the received lines' shape and dtype: they serve as recv_like too.
  const ts::Array got = send_to < 0 ? comm::recv(line, {.source = recv_from, .comm = d.comm})
                                    : comm::sendrecv(line, line, recv_from, send_to, {.comm = d.comm});
  for (size_t k = 0; k < fields.size(); ++k) {
    const ts::Array rows = lines.size() == 1 ? got : ts::slice_in_dim(got, int64_t(k) * n, int64_t(k + 1) * n);
    fields[k] = recv_rows ? with_rows(fields[k], recv_rows->first, recv_rows->second, rows)
                          : fields[k].at(recv_idx).set(rows);
  }
  return fields;
}

// The exchanges of the original, in x: send west / receive from the east, then send east
// / receive from the west (a local copy when the block is alone in x). Periodic, or walls
// when `periodic` is false.
Fields exchange_x(Fields fields, const Decomposition& d, bool periodic) {
  const bool first_x = d.px == 0, last_x = d.px == d.nproc_x - 1;
  const int west = first_x && !periodic ? -1 : d.rank_of(d.py, (d.px + d.nproc_x - 1) % d.nproc_x);
  const int east = last_x && !periodic ? -1 : d.rank_of(d.py, (d.px + 1) % d.nproc_x);
  fields = exchange(std::move(fields), {All, 1}, west, {All, -1}, east, d);
  return exchange(std::move(fields), {All, -2}, east, {All, 0}, west, d);
}

// In y, with the block's one neighbour (nproc_y <= 2): a single sendrecv of the `d.halo`
// rows next to the shared edge; walls at the domain's edges. The original goes west,
// north, east, south; exchanging x first fills every halo cell (corners included) with the
// same value, in half as many messages in y (every exchange is a synchronisation with the
// neighbour and splits the step's fused loops).
Fields exchange_y(Fields fields, const Decomposition& d) {
  const int south = d.py > 0 ? d.rank_of(d.py - 1, d.px) : -1;
  const int north = d.py < d.nproc_y - 1 ? d.rank_of(d.py + 1, d.px) : -1;
  // Rows [s, n) are this block's own; the halo rows lie south of s and from n on.
  const int64_t s = d.halo_south(), n = -int64_t(d.halo_north());
  using Index = std::vector<ts::Index>;
  const Index to_south{ts::Slice(s, s + d.halo), All}, from_south{ts::Slice(0, s), All};
  const Index to_north{ts::Slice(n - d.halo, n), All}, from_north{ts::Slice(n, ts::none), All};
  const int64_t rows = fields.at(0).shape()[0];
  const RowRange south_rows{0, s}, north_rows{rows + n, rows};
  if (south < 0) return exchange(std::move(fields), to_north, north, from_north, north, d, north_rows);
  if (north < 0) return exchange(std::move(fields), to_south, south, from_south, south, d, south_rows);
  fields = exchange(std::move(fields), to_north, north, from_south, south, d, south_rows);  // more than 2 rows of blocks
  return exchange(std::move(fields), to_south, south, from_north, north, d, north_rows);
}

}  // namespace

Fields enforce_boundaries(Fields fields, const std::string& grids, const Decomposition& d) {
  if (fields.size() != grids.size())
    throw ts::ValueError("enforce_boundaries: " + std::to_string(fields.size()) + " fields but " +
                         std::to_string(grids.size()) + " grids ('" + grids + "'); give one grid letter per field");
  if (d.size() == 1) {
    for (size_t k = 0; k < fields.size(); ++k) fields[k] = enforce_boundaries(fields[k], grids[k]);
    return fields;
  }
  fields = exchange_x(std::move(fields), d, /*periodic=*/true);
  // With one exchange per step the rows shared in y hold values the step computed itself.
  if (!d.exchanges_per_step()) fields = exchange_y(std::move(fields), d);
  for (size_t k = 0; k < fields.size(); ++k)
    if (grids[k] == 'v' && d.py == d.nproc_y - 1) fields[k] = fields[k].at({-2, All}).set(0.0);
  return fields;
}

ts::Array enforce_boundaries(const ts::Array& arr, char grid, const Decomposition& d) {
  return enforce_boundaries(Fields{arr}, std::string(1, grid), d)[0];
}

Fields refresh_inner_halos(Fields fields, const Decomposition& d) {
  if (d.size() == 1) return fields;
  return exchange_y(exchange_x(std::move(fields), d, /*periodic=*/false), d);
}

ts::Array interior(const ts::Array& field) { return field[{I, I}]; }

ShallowWater::ShallowWater(Config config, Decomposition decomposition)
    : config_(config), decomposition_(std::move(decomposition)) {
  const int64_t nx = config_.nx, ny = config_.ny;
  if (nx < 2 || ny < 2)
    throw ts::ValueError("ShallowWater: the interior must be at least 2 x 2 cells, got nx = " + std::to_string(nx) +
                         ", ny = " + std::to_string(ny));
  if (!ts::is_floating(config_.dtype))
    throw ts::DTypeError(std::string("ShallowWater: dtype must be floating, got ") + ts::dtype_name(config_.dtype));
  const Decomposition& d = decomposition_;
  if (nx % d.nproc_x != 0 || ny % d.nproc_y != 0 || nx / d.nproc_x < 2 || ny / d.nproc_y < 2)
    throw ts::ValueError("ShallowWater: " + std::to_string(d.nproc_y) + " x " + std::to_string(d.nproc_x) +
                         " processes must divide the " + std::to_string(ny) + " x " + std::to_string(nx) +
                         " interior into equal blocks of at least 2 x 2 cells; choose ny divisible by " +
                         std::to_string(d.nproc_y) + " and nx by " + std::to_string(d.nproc_x));
  // The halo rows come from the neighbour's own rows.
  if (d.nproc_y > 1 && ny / d.nproc_y < d.halo)
    throw ts::ValueError("ShallowWater: blocks of " + std::to_string(ny / d.nproc_y) + " rows cannot fill a halo of " +
                         std::to_string(d.halo) + " rows from the neighbour; choose ny >= " +
                         std::to_string(d.nproc_y * d.halo) + " or a halo of 1");
  // CORIOLIS_PARAM[1:-1, 1:-1]: interior rows sit at y = 0, dy, ..., computed in double
  // and rounded once to the model dtype, as the original's NumPy constant is. This
  // process's block starts at interior row py * ny_local; its wider halo rows (on sides
  // shared with a neighbour) are interior rows of the domain too.
  const int64_t nxl = nx_local(), rows = ny_local() + d.halo_south() + d.halo_north() - 2;
  const int64_t j0 = d.py * ny_local() - (d.halo_south() - 1);
  std::vector<double> f = host_field(rows, nxl, "coriolis");
  for (int64_t j = 0; j < rows; ++j)
    for (int64_t i = 0; i < nxl; ++i) f[size_t(j * nxl + i)] = kCoriolisF + double(j0 + j) * kDy * kCoriolisBeta;
  coriolis_ = from_host(f, rows, nxl, config_.dtype);
}

double ShallowWater::dt() { return 0.125 * std::min(kDx, kDy) / std::sqrt(kGravity * kDepth); }

State ShallowWater::initial_state() const {
  const int64_t nxg = config_.nx + 2, nyg = config_.ny + 2;
  // Global coordinates including the halo: x = (-1, 0, 1, ..., nx) * dx.
  auto x = [](int64_t i) { return double(i - 1) * kDx; };
  auto y = [](int64_t j) { return double(j - 1) * kDy; };
  const double length_x = x(nxg - 2) - x(1), length_y = y(nyg - 2) - y(1);
  const size_t n = size_t(nxg * nyg);
  std::vector<double> u0 = host_field(nyg, nxg, "u0"), h_geo = host_field(nyg, nxg, "h_geo"),
                      h0 = host_field(nyg, nxg, "h0");
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
  State global{enforce_boundaries(from_host(h0, nyg, nxg, dt), 'h'),
               enforce_boundaries(from_host(u0, nyg, nxg, dt), 'u'),
               enforce_boundaries(zeros, 'v'),
               zeros, zeros, zeros};
  const Decomposition& d = decomposition_;
  if (d.size() == 1) return global;
  // This process's block with its halo: the same values its halo exchange would give
  // (every process computes the small global initial state, as the original does).
  const int64_t nxl = nx_local(), nyl = ny_local();
  const ts::Slice rows(d.py * nyl + 1 - d.halo_south(), d.py * nyl + nyl + 1 + d.halo_north()),
      cols(d.px * nxl, d.px * nxl + nxl + 2);
  auto block = [&](const ts::Array& a) { return a[{rows, cols}]; };
  return State{block(global.h), block(global.u), block(global.v), block(zeros), block(zeros), block(zeros)};
}

ts::Array ShallowWater::block_interior(const ts::Array& field) const {
  const int64_t s = decomposition_.halo_south(), n = decomposition_.halo_north();
  return field[{ts::Slice(s, -n), I}];
}

ts::Array ShallowWater::gather_interior(const ts::Array& field) const {
  const Decomposition& d = decomposition_;
  if (d.size() == 1) return interior(field);
  // (size, ny_local, nx_local) on process 0, blocks in rank order = (py, px) row-major.
  const ts::Array blocks = ts::comm::gather(block_interior(field), 0, d.comm);
  if (d.rank() != 0) return ts::Array();
  const int64_t nxl = nx_local(), nyl = ny_local();
  const ts::Array grid = ts::transpose(blocks.reshape({d.nproc_y, d.nproc_x, nyl, nxl}), ts::Axes{0, 2, 1, 3});
  return grid.reshape({config_.ny, config_.nx});
}

State ShallowWater::step(const State& state, bool first_step) const {
  // With one exchange per step it comes first, on the step's inputs (which are stored
  // anyway, and patched in place when donated): exchanged at the end, the received rows
  // would be scattered into the step's results and tie all of them to one loop nest.
  // Every field's halo rows: the next step's update reads the tendencies there too.
  const State s = [&] {
    if (!decomposition_.exchanges_per_step()) return state;
    Fields f = exchange_y({state.h, state.u, state.v, state.dh, state.du, state.dv}, decomposition_);
    return State{f[0], f[1], f[2], f[3], f[4], f[5]};
  }();
  ts::Array h = s.h, u = s.u, v = s.v;
  const ts::Array &dh = s.dh, &du = s.du, &dv = s.dv;
  const double dx = kDx, dy = kDy, dt = ShallowWater::dt();

  // Halo exchanges of this process's block. Fields exchanged one after the other in the
  // original travel together (one message per neighbour instead of one per field).
  const Decomposition& decomposition = decomposition_;
  auto enforce_boundaries = [&](const ts::Array& arr, char grid) {
    return shallow_water::enforce_boundaries(arr, grid, decomposition);
  };
  auto enforce_pair = [&](ts::Array& a, char grid_a, ts::Array& b, char grid_b) {
    Fields f = shallow_water::enforce_boundaries({a, b}, {grid_a, grid_b}, decomposition);
    a = f[0], b = f[1];
  };

  ts::Array hc = ts::pad(h[{I, I}], {{1, 1}}, "edge");
  hc = enforce_boundaries(hc, 'h');

  // Mass fluxes (jnp.empty_like is zeros_like: halo rows stay zero, as in JAX).
  ts::Array fe = ts::zeros_like(u), fn = ts::zeros_like(u);
  fe = fe.at({I, I}).set(0.5 * (hc[{I, I}] + hc[{I, P}]) * u[{I, I}]);
  fn = fn.at({I, I}).set(0.5 * (hc[{I, I}] + hc[{P, I}]) * v[{I, I}]);
  enforce_pair(fe, 'u', fn, 'v');

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

  {
    Fields huv = shallow_water::enforce_boundaries({h, u, v}, "huv", decomposition);
    h = huv[0], u = huv[1], v = huv[2];
  }

  // Lateral friction, applied after the Adams-Bashforth update.
  fe = fe.at({I, I}).set(kLateralViscosity * (u[{I, P}] - u[{I, I}]) / dx);
  fn = fn.at({I, I}).set(kLateralViscosity * (u[{P, I}] - u[{I, I}]) / dy);
  enforce_pair(fe, 'u', fn, 'v');
  u = u.at({I, I}).add(dt * ((fe[{I, I}] - fe[{I, M}]) / dx + (fn[{I, I}] - fn[{M, I}]) / dy));

  // The v fluxes difference v against u (`v[1:-1, 2:] - u[1:-1, 1:-1]`): this mirrors the
  // upstream code exactly, so that results compare with it.
  fe = fe.at({I, I}).set(kLateralViscosity * (v[{I, P}] - u[{I, I}]) / dx);
  fn = fn.at({I, I}).set(kLateralViscosity * (v[{P, I}] - u[{I, I}]) / dy);
  enforce_pair(fe, 'u', fn, 'v');
  v = v.at({I, I}).add(dt * ((fe[{I, I}] - fe[{I, M}]) / dx + (fn[{I, I}] - fn[{M, I}]) / dy));

  // The original leaves the halos of u and v as they were before friction. One process
  // keeps that for its periodic halo only; decomposed, the halo cells inside the domain
  // must then take the neighbours' new values, or the next step would read stale ones
  // where the single-process model reads fresh interior cells (and the fields of N
  // processes would drift from those of one). With one exchange per step, the rows in y
  // come with the next step's exchange.
  Fields uv = decomposition.exchanges_per_step() ? exchange_x({u, v}, decomposition, /*periodic=*/false)
                                                 : refresh_inner_halos({u, v}, decomposition);
  u = uv[0], v = uv[1];
  return State{h, u, v, dh_new, du_new, dv_new};
}

}  // namespace shallow_water
