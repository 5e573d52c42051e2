// The shallow-water demo's NetCDF-4 output (examples/shallow_water/netcdf_output.h): the writer's
// file and errors, and xarray opening the demo's file (one process, and decomposed under
// `mpirun -np 2`, each process writing its block) with the last frame of h equal to the
// demo's .npy bit for bit. The xarray test runs when TESSEL_XARRAY_PYTHON names a Python
// with xarray and netCDF4 (e.g. /work/venv-jax/bin/python), else it reports itself skipped.
#include <gtest/gtest.h>

#if __has_include("netcdf_output.h") && __has_include("shallow_water.h")
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "expect_error.h"
#include "netcdf_output.h"
#include "shallow_water.h"

namespace sw = shallow_water;
namespace ts = tessel;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("tessel_netcdf_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

// The command's output and exit status.
std::pair<std::string, int> run(const std::string& command) {
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (!p) return {"popen failed", -1};
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof buf, p)) out += buf;
  return {out, pclose(p)};
}

TEST(ShallowWaterNetcdf, WriterMakesAnHdf5FileAndChecksBlockSizes) {
  if (!sw::NetcdfWriter::available()) GTEST_SKIP() << "built without NetCDF (libnetcdf-mpi-dev)";
  const fs::path path = scratch("writer.nc");
  {
    sw::NetcdfWriter nc(path.string(), {.nx = 4, .ny = 2, .dtype = ts::f32}, false);
    std::vector<double> frame(8, 100.0);
    nc.write_frame(0.0, {.row0 = 0, .col0 = 0, .rows = 2, .cols = 4}, frame, frame, frame);
    tessel_test::expect_error<ts::ShapeError>(
        [&] { nc.write_frame(1.0, {.row0 = 0, .col0 = 0, .rows = 2, .cols = 4}, frame, frame, std::vector<double>(3)); },
        {"write_frame got 8, 8 and 3 values for a block of 2 x 4"});
    EXPECT_EQ(nc.frames(), 1);
    nc.close();
  }
  char magic[8] = {};
  std::ifstream(path, std::ios::binary).read(magic, 8);
  EXPECT_EQ(std::string(magic + 1, 3), "HDF");  // NetCDF-4 is HDF5
  tessel_test::expect_error<ts::Error>([&] { sw::NetcdfWriter("/nonexistent-dir/x.nc", {}, false); },
                                       {"netcdf '/nonexistent-dir/x.nc'", "nc_create"});
  fs::remove_all(path.parent_path());
}

TEST(ShallowWaterNetcdf, XarrayReadsTheDemosFramesAndTheLastEqualsTheNpy) {
  const char* python = std::getenv("TESSEL_XARRAY_PYTHON");
  if (!python) GTEST_SKIP() << "set TESSEL_XARRAY_PYTHON to a Python with xarray and netCDF4";
  if (run(std::string(python) + " -c 'import xarray, netCDF4'").second != 0)
    GTEST_SKIP() << python << " cannot import xarray and netCDF4";
  if (!sw::NetcdfWriter::available()) GTEST_SKIP() << "built without NetCDF (libnetcdf-mpi-dev)";
  const std::string demo = TESSEL_SHALLOW_WATER_EXE, check = TESSEL_SOURCE_DIR "/tests/examples/netcdf_check.py";
  // 30 steps, a frame every 10 and the initial state: 4 frames.
  const std::string args = " --nx 24 --ny 12 --steps 30 --no-progress --netcdf-every 10";
  std::vector<std::pair<std::string, std::string>> runs = {{"one", ""}};
  if (run("command -v mpirun").second == 0)
    runs.push_back({"mpi2", "env -u TESSEL_CPU_DEVICES OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
                            "mpirun --oversubscribe -np 2 "});
  for (const auto& [name, launcher] : runs) {
    const fs::path nc = scratch(name + ".nc"), npy = scratch(name + ".npy");
    auto [out, status] = run(launcher + demo + args + " --netcdf " + nc.string() + " --out " + npy.string());
    ASSERT_EQ(status, 0) << out;
    EXPECT_NE(out.find("(4 frames)"), std::string::npos) << out;
    auto [checked, ok] = run(std::string(python) + " " + check + " " + nc.string() + " " + npy.string() + " 4");
    EXPECT_EQ(ok, 0) << name << ": " << checked;
    EXPECT_NE(checked.find("netcdf_check: ok"), std::string::npos) << name << ": " << checked;
  }
  fs::remove_all(scratch("x").parent_path());
}

}  // namespace

#else
TEST(ShallowWaterNetcdf, NeedsTheExamples) { GTEST_SKIP() << "built without the examples (TESSEL_BUILD_EXAMPLES=OFF)"; }
#endif
