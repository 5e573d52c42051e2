// Physics of the shallow-water demo (examples/shallow_water): mass conservation, float32
// against float64, jit against eager, and the halo rules. Needs the shallow_water_model
// library (built with the examples); without it the suite reports itself skipped.
#include <gtest/gtest.h>

#if __has_include("shallow_water.h")
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>

#include "npy.h"
#include "png.h"
#include "shallow_water.h"

namespace sw = shallow_water;
namespace ts = tessel;

namespace {

std::vector<double> host(const ts::Array& a) { return a.to_vector<double>(); }

double interior_sum(const sw::State& s) {
  double total = 0;
  for (double x : host(sw::interior(s.h))) total += x;
  return total;
}

sw::State run(const sw::ShallowWater& model, int64_t steps) {
  auto step = ts::jit([model](const sw::State& s, bool first) { return model.step(s, first); },
                      {.static_argnums = {1}});
  sw::State s = model.initial_state();
  for (int64_t k = 0; k < steps; ++k) s = step(s, k == 0);
  return s;
}

// sqrt(sum (a - b)^2 / sum b^2).
double relative_l2(const std::vector<double>& a, const std::vector<double>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) num += (a[i] - b[i]) * (a[i] - b[i]), den += b[i] * b[i];
  return std::sqrt(num / den);
}

}  // namespace

TEST(ShallowWater, InitialStateIsAJetInGeostrophicBalance) {
  const sw::ShallowWater model({.nx = 40, .ny = 20, .dtype = ts::f64});
  const sw::State s = model.initial_state();
  EXPECT_EQ(s.h.shape(), (ts::Shape{22, 42}));
  EXPECT_EQ(s.h.dtype(), ts::f64);
  auto u = host(s.u);
  // Strongest zonal flow (10 m/s) in the middle row, weak at the walls.
  EXPECT_NEAR(u[10 * 42 + 5], 10 * std::exp(-std::pow(9 * sw::kDx - 0.5 * 19 * sw::kDy, 2) / std::pow(0.02 * 39 * sw::kDx, 2)), 1e-12);
  EXPECT_LT(u[1 * 42 + 5], 1e-3);
  // h falls northwards across the jet (h_y = -(f/g) u < 0) and is centred on the depth.
  auto h = host(s.h);
  EXPECT_GT(h[3 * 42 + 7] - h[18 * 42 + 7], 1.0);
  double mean = 0;
  for (double x : h) mean += x;
  EXPECT_NEAR(mean / double(h.size()), sw::kDepth, 0.2);
}

TEST(ShallowWater, HaloIsPeriodicInXWithANorthernWallForV) {
  ts::Array a = ts::reshape(ts::arange(0.0, 20.0, 1.0, ts::f64), {4, 5});
  auto h = host(sw::enforce_boundaries(a, 'h'));
  for (int j = 0; j < 4; ++j) {
    EXPECT_EQ(h[size_t(j * 5 + 0)], double(j * 5 + 3));  // column 0 <- column -2
    EXPECT_EQ(h[size_t(j * 5 + 4)], double(j * 5 + 1));  // column -1 <- column 1
  }
  auto v = host(sw::enforce_boundaries(a, 'v'));
  for (int i = 0; i < 5; ++i) EXPECT_EQ(v[size_t(2 * 5 + i)], 0.0);  // row -2 is the wall
  EXPECT_EQ(v[size_t(3 * 5 + 2)], 17.0);
}

TEST(ShallowWater, Float64ConservesInteriorMassOver1000Steps) {
  const sw::ShallowWater model({.nx = 40, .ny = 20, .dtype = ts::f64});
  const double before = interior_sum(model.initial_state());
  const sw::State s = run(model, 1000);
  const double after = interior_sum(s);
  EXPECT_NEAR(after / before, 1.0, 1e-10) << "before " << before << " after " << after;
  // The flow did evolve (the test would be empty otherwise).
  EXPECT_GT(relative_l2(host(s.h), host(model.initial_state().h)), 1e-6);
}

TEST(ShallowWater, Float32StaysCloseToFloat64) {
  const int64_t steps = 300;
  const sw::State s64 = run(sw::ShallowWater({.nx = 40, .ny = 20, .dtype = ts::f64}), steps);
  const sw::State s32 = run(sw::ShallowWater({.nx = 40, .ny = 20, .dtype = ts::f32}), steps);
  EXPECT_EQ(s32.h.dtype(), ts::f32);
  // Compare surface height anomalies (h itself is dominated by the 100 m depth).
  auto eta = [](const sw::State& s) { return host(sw::interior(s.h) - sw::kDepth); };
  const double rel = relative_l2(eta(s32), eta(s64));
  EXPECT_LT(rel, 1e-4) << "relative L2 difference of eta " << rel;
  EXPECT_LT(relative_l2(host(sw::interior(s32.u)), host(sw::interior(s64.u))), 1e-4);
}

TEST(ShallowWater, JitStepMatchesEagerStep) {
  const sw::ShallowWater model({.nx = 24, .ny = 12, .dtype = ts::f64});
  auto jitted = ts::jit([model](const sw::State& s, bool first) { return model.step(s, first); },
                        {.static_argnums = {1}});
  sw::State eager = model.initial_state(), traced = eager;
  for (int k = 0; k < 5; ++k) {
    eager = model.step(eager, k == 0);
    traced = jitted(traced, k == 0);
  }
  EXPECT_EQ(jitted.cache_size(), 2u);  // first step and Adams-Bashforth
  for (auto [a, b] : {std::pair{eager.h, traced.h}, {eager.u, traced.u}, {eager.v, traced.v}, {eager.dh, traced.dh}}) {
    auto x = host(a), y = host(b);
    ASSERT_EQ(x.size(), y.size());
    for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], y[i], 1e-12 * (1 + std::fabs(x[i]))) << i;
  }
}

TEST(ShallowWater, RejectsBadConfigurations) {
  EXPECT_THROW(sw::ShallowWater({.nx = 1, .ny = 10}), ts::ValueError);
  EXPECT_THROW(sw::ShallowWater({.nx = 10, .ny = 10, .dtype = ts::i32}), ts::DTypeError);
}

TEST(ShallowWater, DecompositionMustDivideTheInterior) {
  // The paper's layout for 6 processes: 2 rows of 3 blocks (the decomposed runs themselves
  // are tests/mpi's shallow_water_mpi_np*).
  const sw::Decomposition d{.nproc_x = 3, .nproc_y = 2, .px = 1, .py = 1};
  const sw::ShallowWater model({.nx = 12, .ny = 8}, d);
  EXPECT_EQ(model.nx_local(), 4);
  EXPECT_EQ(model.ny_local(), 4);
  EXPECT_EQ(d.rank(), 4);
  try {
    sw::ShallowWater({.nx = 10, .ny = 8}, d);
    FAIL() << "expected a ValueError";
  } catch (const ts::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("nx by 3"), std::string::npos) << e.what();
  }
  EXPECT_THROW(sw::ShallowWater({.nx = 12, .ny = 2}, d), ts::ValueError);  // blocks of 1 row
}

TEST(ShallowWater, HaloRowsComeFromTheNeighboursOwnRows) {
  // Two rows of blocks exchanging kStepHalo rows once per step: each block must own that many.
  const sw::Decomposition d{.nproc_x = 1, .nproc_y = 2, .px = 0, .py = 1};
  const int halo = sw::Decomposition::kStepHalo;
  EXPECT_EQ(d.halo_south(), halo);
  EXPECT_EQ(d.halo_north(), 1);  // the wall
  const sw::ShallowWater model({.nx = 8, .ny = 2 * halo}, d);
  EXPECT_EQ(model.initial_state().h.shape(), (ts::Shape{halo + halo + 1, 8 + 2}));
  try {
    sw::ShallowWater({.nx = 8, .ny = 2 * halo - 2}, d);
    FAIL() << "expected a ValueError";
  } catch (const ts::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot fill a halo of"), std::string::npos) << e.what();
  }
  // The paper's one-line exchange needs one row per block.
  sw::Decomposition paper = d;
  paper.halo = 1;
  EXPECT_EQ(sw::ShallowWater({.nx = 8, .ny = 4}, paper).initial_state().h.shape(), (ts::Shape{4, 10}));
  // Halos between one row and kStepHalo rows would compute wrong values.
  EXPECT_THROW(sw::Decomposition::of(ts::comm::world(), halo - 1), ts::ValueError);
}

TEST(ShallowWater, NpyAndPngFilesHaveTheirFormatsHeaders) {
  const std::string npy = ::testing::TempDir() + "sw_test.npy", png = ::testing::TempDir() + "sw_test.png";
  sw::write_npy(npy, std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  std::ifstream f(npy, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  ASSERT_EQ(bytes.size() % 64, 24u);  // header padded to 64 bytes, then 6 floats
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_NE(bytes.find("'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"), std::string::npos);
  EXPECT_EQ(bytes[size_t(bytes.size() - 25)], '\n');
  EXPECT_THROW(sw::write_npy(npy, std::vector<double>{1, 2}, {3}), std::runtime_error);

  sw::Image img(3, 2);
  img.set(1, 1, {255, 0, 0});
  sw::write_png(png, img);
  std::ifstream p(png, std::ios::binary);
  std::string pb((std::istreambuf_iterator<char>(p)), std::istreambuf_iterator<char>());
  EXPECT_EQ(pb.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_EQ(pb.substr(12, 4), "IHDR");
  EXPECT_EQ(pb.substr(pb.size() - 8, 4), "IEND");
  std::remove(npy.c_str());
  std::remove(png.c_str());
}

#else

TEST(ShallowWater, NeedsTheModelLibrary) {
  GTEST_SKIP() << "shallow_water_model is not linked into this test binary (configure with "
                  "-DTESSEL_BUILD_EXAMPLES=ON)";
}

#endif
