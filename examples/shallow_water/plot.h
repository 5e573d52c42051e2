#pragma once
// Renders a model state like Figure 1 of the mpi4jax paper: surface height anomaly in a
// blue-white-red colour map, velocity arrows on a coarse grid, a colour bar and the time.
#include <cstdint>
#include <vector>

#include "png.h"

namespace shallow_water {

struct PlotInput {
  int64_t nx = 0, ny = 0;
  /// Interior fields, (ny, nx) row-major, row 0 southmost.
  std::vector<double> eta, u, v;
  /// The colour scale spans [-eta_range, eta_range]; <= 0 picks max |eta|.
  double eta_range = 10.0;
  double time_days = 0.0;
};

Image plot_surface(const PlotInput& in);

/// The plot's colour map (matplotlib's RdBu_r): t in [0, 1] from dark blue through white to
/// dark red (NaN maps to the middle).
Rgb colormap(double t);

}  // namespace shallow_water
