#pragma once
// The demo's model output (--netcdf): a NetCDF-4 file following the CF conventions, which
// xarray, ncview and ocean-model tools open. Dimensions time (unlimited), y, x, yv, xu;
// coordinates in metres (cell centres; u on the east faces, v on the north faces) and time in
// days; the interior of h (water column height), u and v, one frame per write_frame call.
//
// Built on Debian's libnetcdf-mpi-dev, the file is written in parallel under mpirun
// (nc_create_par: collective MPI-IO through the same parallel HDF5 as the checkpoints), each
// process writing its own block. Built on a serial libnetcdf, only the process that creates
// the writer writes (the demo gathers each frame to process 0). Built without NetCDF, the
// constructor throws.
#include <cstdint>
#include <string>
#include <vector>

#include "shallow_water.h"

namespace shallow_water {

/// The part of the interior (ny, nx) one process writes: rows [row0, row0 + rows) from the
/// south, columns [col0, col0 + cols). rows = 0: nothing (the process still takes part).
struct Block {
  int64_t row0 = 0, col0 = 0, rows = 0, cols = 0;
};

class NetcdfWriter {
 public:
  /// True when this build writes NetCDF files at all, and when it writes them in parallel.
  static bool available();
  static bool parallel();

  /// Creates (replaces) `path` for a model of `config`'s interior. With `collective`, every
  /// process of the job calls this and every method together (parallel builds only). A
  /// tessel::Error naming the path and NetCDF's message when it cannot.
  NetcdfWriter(const std::string& path, const Config& config, bool collective);
  ~NetcdfWriter();
  NetcdfWriter(const NetcdfWriter&) = delete;
  NetcdfWriter& operator=(const NetcdfWriter&) = delete;

  /// Appends a frame at model time `days`: this process's `block` of h, u and v, each
  /// rows * cols values in row-major order (stored in the model's dtype).
  void write_frame(double days, const Block& block, const std::vector<double>& h, const std::vector<double>& u,
                   const std::vector<double>& v);
  /// Frames written so far.
  int64_t frames() const { return frames_; }
  /// Closes the file (collective like the rest); the destructor closes it too.
  void close();

 private:
  std::string path_;
  int ncid_ = -1;
  int time_var_ = -1, h_var_ = -1, u_var_ = -1, v_var_ = -1;
  int64_t frames_ = 0;
  bool collective_ = false;
};

}  // namespace shallow_water
