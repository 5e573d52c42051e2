// NetCDF-4 CF output of the shallow-water demo (netcdf_output.h). SW_NETCDF is 2 with Debian's
// parallel libnetcdf-mpi-dev, 1 with a serial libnetcdf, 0 without NetCDF (set by CMake).
#include "netcdf_output.h"

#include <cmath>

#if SW_NETCDF == 2
#include <mpi.h>
#include <netcdf.h>
#include <netcdf_par.h>
#elif SW_NETCDF == 1
#include <netcdf.h>
#endif

namespace shallow_water {

bool NetcdfWriter::available() { return SW_NETCDF > 0; }
bool NetcdfWriter::parallel() { return SW_NETCDF == 2; }

#if SW_NETCDF > 0

namespace {

// Throws "netcdf '<path>': <what>: <NetCDF's message>" when `status` is an error.
void check(int status, const std::string& path, const char* what) {
  if (status != NC_NOERR) throw ts::Error("netcdf '" + path + "': " + what + ": " + nc_strerror(status));
}

void text_attr(int ncid, int var, const char* name, const std::string& value, const std::string& path) {
  check(nc_put_att_text(ncid, var, name, value.size(), value.c_str()), path, name);
}

}  // namespace

NetcdfWriter::NetcdfWriter(const std::string& path, const Config& config, bool collective)
    : path_(path), collective_(collective) {
  const int mode = NC_NETCDF4 | NC_CLOBBER;
  if (collective) {
#if SW_NETCDF == 2
    check(nc_create_par(path.c_str(), mode, MPI_COMM_WORLD, MPI_INFO_NULL, &ncid_), path, "nc_create_par");
#else
    throw ts::Error("netcdf '" + path + "': this build's NetCDF is serial; gather the frames to one process");
#endif
  } else {
    check(nc_create(path.c_str(), mode, &ncid_), path, "nc_create");
  }
  const size_t ny = size_t(config.ny), nx = size_t(config.nx);
  int time_dim, y_dim, x_dim, yv_dim, xu_dim;
  check(nc_def_dim(ncid_, "time", NC_UNLIMITED, &time_dim), path, "nc_def_dim time");
  check(nc_def_dim(ncid_, "y", ny, &y_dim), path, "nc_def_dim y");
  check(nc_def_dim(ncid_, "x", nx, &x_dim), path, "nc_def_dim x");
  check(nc_def_dim(ncid_, "yv", ny, &yv_dim), path, "nc_def_dim yv");
  check(nc_def_dim(ncid_, "xu", nx, &xu_dim), path, "nc_def_dim xu");
  // Coordinates: cell centres at (i + 0.5) dx; u on the east faces, v on the north faces.
  struct Axis {
    const char* name;
    int dim;
    double spacing, offset;
    const char* axis;
    const char* long_name;
  };
  const Axis axes[] = {{"y", y_dim, kDy, 0.5, "Y", "cell centre y (northward distance from the southern wall)"},
                       {"x", x_dim, kDx, 0.5, "X", "cell centre x (eastward distance, periodic)"},
                       {"yv", yv_dim, kDy, 1.0, "Y", "y of the cells' northern faces (the v grid)"},
                       {"xu", xu_dim, kDx, 1.0, "X", "x of the cells' eastern faces (the u grid)"}};
  int axis_vars[4];
  for (int k = 0; k < 4; ++k) {
    check(nc_def_var(ncid_, axes[k].name, NC_DOUBLE, 1, &axes[k].dim, &axis_vars[k]), path, "nc_def_var");
    text_attr(ncid_, axis_vars[k], "units", "m", path);
    text_attr(ncid_, axis_vars[k], "axis", axes[k].axis, path);
    text_attr(ncid_, axis_vars[k], "standard_name", axes[k].axis[0] == 'X' ? "projection_x_coordinate" : "projection_y_coordinate", path);
    text_attr(ncid_, axis_vars[k], "long_name", axes[k].long_name, path);
  }
  check(nc_def_var(ncid_, "time", NC_DOUBLE, 1, &time_dim, &time_var_), path, "nc_def_var time");
  text_attr(ncid_, time_var_, "units", "days since 2000-01-01 00:00:00", path);
  text_attr(ncid_, time_var_, "calendar", "standard", path);
  text_attr(ncid_, time_var_, "standard_name", "time", path);
  text_attr(ncid_, time_var_, "long_name", "model time (days since the start of the run)", path);
  text_attr(ncid_, time_var_, "axis", "T", path);
  const nc_type type = config.dtype == ts::f64 ? NC_DOUBLE : NC_FLOAT;
  struct Field {
    const char* name;
    int dims[3];
    const char* units;
    const char* standard_name;
    const char* long_name;
    int* var;
  };
  const Field fields[] = {
      {"h", {time_dim, y_dim, x_dim}, "m", "sea_floor_depth_below_sea_surface",
       "water column height (100 m of depth plus the surface elevation)", &h_var_},
      {"u", {time_dim, y_dim, xu_dim}, "m s-1", "sea_water_x_velocity", "eastward velocity", &u_var_},
      {"v", {time_dim, yv_dim, x_dim}, "m s-1", "sea_water_y_velocity", "northward velocity", &v_var_}};
  for (const Field& f : fields) {
    check(nc_def_var(ncid_, f.name, type, 3, f.dims, f.var), path, "nc_def_var");
    // One chunk per frame: a frame is written (and read back) whole.
    const size_t chunk[3] = {1, ny, nx};
    check(nc_def_var_chunking(ncid_, *f.var, NC_CHUNKED, chunk), path, "nc_def_var_chunking");
    text_attr(ncid_, *f.var, "units", f.units, path);
    text_attr(ncid_, *f.var, "standard_name", f.standard_name, path);
    text_attr(ncid_, *f.var, "long_name", f.long_name, path);
  }
  text_attr(ncid_, NC_GLOBAL, "Conventions", "CF-1.8", path);
  text_attr(ncid_, NC_GLOBAL, "title", "Non-linear shallow-water model of the mpi4jax paper (tessel demo)", path);
  text_attr(ncid_, NC_GLOBAL, "source", "tessel examples/shallow_water", path);
  text_attr(ncid_, NC_GLOBAL, "comment",
            "Arakawa C grid: h at cell centres (x, y), u on eastern faces (xu, y), v on northern faces (x, yv); "
            "periodic in x, walls in y; dx = dy = 5 km",
            path);
  check(nc_enddef(ncid_), path, "nc_enddef");
#if SW_NETCDF == 2
  if (collective) {
    for (int var : {time_var_, h_var_, u_var_, v_var_, axis_vars[0], axis_vars[1], axis_vars[2], axis_vars[3]})
      check(nc_var_par_access(ncid_, var, NC_COLLECTIVE), path, "nc_var_par_access");
  }
  int rank = 0;
  if (collective) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
#else
  const int rank = 0;
#endif
  for (int k = 0; k < 4; ++k) {
    const size_t n = k % 2 == 0 ? ny : nx;
    std::vector<double> values(n);
    for (size_t i = 0; i < n; ++i) values[i] = (double(i) + axes[k].offset) * axes[k].spacing;
    const size_t start = 0, count = rank == 0 ? n : 0;  // process 0 writes; the others take part
    check(nc_put_vara_double(ncid_, axis_vars[k], &start, &count, values.data()), path, "nc_put_vara_double");
  }
}

void NetcdfWriter::write_frame(double days, const Block& block, const std::vector<double>& h,
                               const std::vector<double>& u, const std::vector<double>& v) {
  if (ncid_ < 0) throw ts::Error("netcdf '" + path_ + "': write_frame after close");
  const size_t n = size_t(block.rows * block.cols);
  if (h.size() != n || u.size() != n || v.size() != n)
    throw ts::ShapeError("netcdf '" + path_ + "': write_frame got " + std::to_string(h.size()) + ", " +
                         std::to_string(u.size()) + " and " + std::to_string(v.size()) + " values for a block of " +
                         std::to_string(block.rows) + " x " + std::to_string(block.cols));
  const size_t frame = size_t(frames_);
  const size_t t_start = frame, t_count = block.rows > 0 ? 1 : 0;
  check(nc_put_vara_double(ncid_, time_var_, &t_start, &t_count, &days), path_, "nc_put_vara_double time");
  const size_t start[3] = {frame, size_t(block.row0), size_t(block.col0)};
  const size_t count[3] = {n > 0 ? size_t(1) : 0, size_t(block.rows), size_t(block.cols)};
  check(nc_put_vara_double(ncid_, h_var_, start, count, h.data()), path_, "nc_put_vara_double h");
  check(nc_put_vara_double(ncid_, u_var_, start, count, u.data()), path_, "nc_put_vara_double u");
  check(nc_put_vara_double(ncid_, v_var_, start, count, v.data()), path_, "nc_put_vara_double v");
  ++frames_;
}

void NetcdfWriter::close() {
  if (ncid_ < 0) return;
  const int id = ncid_;
  ncid_ = -1;
  check(nc_close(id), path_, "nc_close");
}

NetcdfWriter::~NetcdfWriter() {
  if (ncid_ >= 0) nc_close(ncid_);
}

#else  // no NetCDF in this build

NetcdfWriter::NetcdfWriter(const std::string& path, const Config&, bool) : path_(path) {
  throw ts::Error("netcdf '" + path + "': this shallow_water was built without NetCDF; install libnetcdf-mpi-dev "
                  "(scripts/install-deps) and reconfigure");
}
void NetcdfWriter::write_frame(double, const Block&, const std::vector<double>&, const std::vector<double>&,
                               const std::vector<double>&) {}
void NetcdfWriter::close() {}
NetcdfWriter::~NetcdfWriter() = default;

#endif

}  // namespace shallow_water
