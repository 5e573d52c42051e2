// Numerics against JAX, whose values the tables record (values recorded from JAX 0.10.2 by
// numerics_jax_values.py, next to this file, with jax_enable_x64 for the 64-bit dtypes):
// division-like functions at zeros, infinities and NaN for every real dtype; signed zeros in
// maximum/minimum, max/min reductions and products; complex functions at signed zeros,
// infinities and NaN; result dtypes; shapes JAX accepts; and denormals, where tessel
// deliberately keeps IEEE values. Element-wise cases run eagerly, under jit (the unfused
// kernels), under jit on arrays large enough to fuse (the generated C++) and under vmap.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <functional>
#include <limits>
#include <map>
#include <sstream>
#include <tuple>

#include "compiler/kernel_cache.h"
#include "tessel/tessel.h"

namespace ts = tessel;
using ts::Array;

namespace {

constexpr double I = std::numeric_limits<double>::infinity();
constexpr double N = std::numeric_limits<double>::quiet_NaN();
constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();

using Binary = std::function<Array(const Array&, const Array&)>;

/// Equal as IEEE values and in the sign of zero (any NaN equals any NaN).
bool same(double got, double want) {
  if (std::isnan(want)) return std::isnan(got);
  return got == want && std::signbit(got) == std::signbit(want);
}

std::string show(double v) {
  std::ostringstream s;
  s << (v == 0 && std::signbit(v) ? "-0" : "") << (v == 0 && std::signbit(v) ? "" : std::to_string(v));
  return s.str();
}

/// (a_i, b_j) for every i and j, a outer.
template <class T> std::pair<std::vector<T>, std::vector<T>> pairs(const std::vector<T>& a, const std::vector<T>& b) {
  std::pair<std::vector<T>, std::vector<T>> r;
  for (T x : a)
    for (T y : b) r.first.push_back(x), r.second.push_back(y);
  return r;
}

enum class Path { kEager, kJit, kFused, kVmap };
constexpr Path kPaths[] = {Path::kEager, Path::kJit, Path::kFused, Path::kVmap};
const char* path_name(Path p) {
  switch (p) {
    case Path::kEager: return "eager";
    case Path::kJit: return "jit";
    case Path::kFused: return "jit, fused";
    case Path::kVmap: return "vmap";
  }
  return "?";
}

/// f(a, b) for each f of `fs` (one program), for 1-D a and b of one length, along `path`.
std::vector<Array> along(Path path, const std::vector<Binary>& fs, const Array& a, const Array& b) {
  const auto all = [fs](const Array& x, const Array& y) {
    std::vector<Array> r;
    for (const Binary& f : fs) r.push_back(f(x, y));
    return r;
  };
  switch (path) {
    case Path::kEager: return all(a, b);
    case Path::kJit: return ts::jit(all)(a, b);
    case Path::kVmap: return ts::vmap(all)(a, b);  // f of rank-0 slices
    case Path::kFused: break;
  }
  // Repeated past the fusion threshold (16384 elements), so jit generates C++ for the
  // functions (one kernel); the last repetition is checked.
  const int64_t n = a.dim(0), reps = 20000 / n + 1;
  const Array ta = ts::tile(a, {reps}), tb = ts::tile(b, {reps});
  auto g = ts::jit(all);
  const bool has_codegen_type = !ts::is_floating(a.dtype()) || ts::itemsize(a.dtype()) >= 4;
  if (ts::compiler::codegen_enabled() && has_codegen_type) {
    const std::string text = g.lower(ta, tb).compile().as_text();
    EXPECT_NE(text.find("fused"), std::string::npos) << text;
  }
  std::vector<Array> ys = g(ta, tb);
  for (Array& y : ys) y = ts::slice(y, {(reps - 1) * n}, {reps * n});
  return ys;
}

Array along(Path path, const Binary& f, const Array& a, const Array& b) {
  return along(path, std::vector<Binary>{f}, a, b)[0];
}

/// The pairs where name(a, b) differs from `want`, one per line ("" when none).
std::string float_mismatches(const std::string& name, const std::vector<double>& a, const std::vector<double>& b,
                             const std::vector<double>& got, const std::vector<double>& want) {
  std::string s;
  for (size_t i = 0; i < want.size(); ++i)
    if (!same(got.at(i), want[i]))
      s += name + "(" + show(a[i]) + ", " + show(b[i]) + ") = " + show(got[i]) + ", want " + show(want[i]) + "\n";
  return s;
}

// ---------------------------------------------------------------------------------------
// Division-like functions of floats: one JAX table for float16, bfloat16, float32, float64.

struct FloatTable {
  const char* name;
  Array (*fn)(const Array&, const Array&);
  std::vector<double> want;  // at (kFloatA[i], kFloatB[j]), i outer
};

const std::vector<double> kFloatA = {-I, -6, -1.5, -0.0, 0.0, 1.5, 6, I, N};
const std::vector<double> kFloatB = {-I, -4, -0.5, -0.0, 0.0, 0.5, 4, I, N};

const FloatTable kFloatTables[] = {
    {"divide", ts::divide,
     {N, I, I, I, -I, -I, -I, N, N, 0.0, 1.5, 12.0, I, -I, -12.0, -1.5, -0.0, N, 0.0, 0.375, 3.0, I, -I, -3.0,
      -0.375, -0.0, N, 0.0, 0.0, 0.0, N, N, -0.0, -0.0, -0.0, N, -0.0, -0.0, -0.0, N, N, 0.0, 0.0, 0.0, N, -0.0,
      -0.375, -3.0, -I, I, 3.0, 0.375, 0.0, N, -0.0, -1.5, -12.0, -I, I, 12.0, 1.5, 0.0, N, N, -I, -I, -I, I, I, I,
      N, N, N, N, N, N, N, N, N, N, N}},
    {"floor_divide", ts::floor_divide,
     {N, N, N, I, -I, N, N, N, N, -0.0, 1.0, 12.0, I, -I, -12.0, -2.0, -1.0, N, -0.0, -0.0, 3.0, I, -I, -3.0, -1.0,
      -1.0, N, -0.0, -0.0, -0.0, N, N, 0.0, 0.0, 0.0, N, -0.0, -0.0, -0.0, N, N, 0.0, 0.0, 0.0, N, -1.0, -1.0, -3.0,
      -I, I, 3.0, 0.0, 0.0, N, -1.0, -2.0, -12.0, -I, I, 12.0, 1.0, 0.0, N, N, N, N, -I, I, N, N, N, N, N, N, N, N,
      N, N, N, N, N}},
    {"remainder", ts::remainder,
     {N, N, N, N, N, N, N, N, N, -6.0, -2.0, -0.0, N, N, -0.0, 2.0, I, N, -1.5, -1.5, -0.0, N, N, -0.0, 2.5, I, N,
      -0.0, -0.0, -0.0, N, N, -0.0, -0.0, -0.0, N, 0.0, 0.0, 0.0, N, N, 0.0, 0.0, 0.0, N, -I, -2.5, 0.0, N, N, 0.0,
      1.5, 1.5, N, -I, -2.0, 0.0, N, N, 0.0, 2.0, 6.0, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N}},
    {"rem", ts::rem,
     {N, N, N, N, N, N, N, N, N, -6.0, -2.0, -0.0, N, N, -0.0, -2.0, -6.0, N, -1.5, -1.5, -0.0, N, N, -0.0, -1.5,
      -1.5, N, -0.0, -0.0, -0.0, N, N, -0.0, -0.0, -0.0, N, 0.0, 0.0, 0.0, N, N, 0.0, 0.0, 0.0, N, 1.5, 1.5, 0.0, N,
      N, 0.0, 1.5, 1.5, N, 6.0, 2.0, 0.0, N, N, 0.0, 2.0, 6.0, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N,
      N}},
    {"fmod", ts::fmod,
     {N, N, N, N, N, N, N, N, N, -6.0, -2.0, -0.0, N, N, -0.0, -2.0, -6.0, N, -1.5, -1.5, -0.0, N, N, -0.0, -1.5,
      -1.5, N, -0.0, -0.0, -0.0, N, N, -0.0, -0.0, -0.0, N, 0.0, 0.0, 0.0, N, N, 0.0, 0.0, 0.0, N, 1.5, 1.5, 0.0, N,
      N, 0.0, 1.5, 1.5, N, 6.0, 2.0, 0.0, N, N, 0.0, 2.0, 6.0, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N,
      N}},};

class FloatDivision : public ::testing::TestWithParam<ts::DType> {};

TEST_P(FloatDivision, MatchesJaxAtZerosInfinitiesAndNaN) {
  const ts::DType d = GetParam();
  const auto [av, bv] = pairs(kFloatA, kFloatB);
  const Array a = Array(av).astype(d), b = Array(bv).astype(d);
  std::vector<Binary> fns;
  for (const FloatTable& t : kFloatTables) fns.push_back(t.fn);
  for (Path path : kPaths) {
    const std::vector<Array> ys = along(path, fns, a, b);
    for (size_t k = 0; k < ys.size(); ++k) {
      const FloatTable& t = kFloatTables[k];
      ASSERT_EQ(ys[k].dtype(), d) << t.name << " " << path_name(path);
      EXPECT_EQ(float_mismatches(t.name, av, bv, ys[k].astype(ts::f64).to_vector<double>(), t.want), "")
          << ts::dtype_name(d) << ", " << path_name(path);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Numerics, FloatDivision, ::testing::Values(ts::f16, ts::bf16, ts::f32, ts::f64),
                         [](const auto& info) { return std::string(ts::dtype_name(info.param)); });

// ---------------------------------------------------------------------------------------
// Division-like functions of integers: a JAX table per dtype (by zero, by -1, at the
// extremes). Values are int64; uint64's are their int64 bit patterns (-1 is the maximum).

struct IntTable {
  ts::DType dtype;
  std::vector<int64_t> a, b;  // the pairs are (a[i], b[j]), i outer
  std::vector<int64_t> floor_divide, remainder, rem, fmod;
};

const IntTable kIntTables[] = {
    {ts::i8,
     {-128, -7, -1, 0, 1, 7, 127},
     {-128, -2, -1, 0, 1, 2, 127},
     {1, 64, -128, -2, -128, -64, -2, 0, 3, 7, -2, -7, -4, -1, 0, 0, 1, -2, -1, -1, -1, 0, 0, 0, -1, 0, 0, 0, -1,
      -1, -1, -2, 1, 0, 0, -1, -4, -7, -2, 7, 3, 0, -1, -64, -127, -2, 127, 63, 1},
     {0, 0, 0, 0, 0, 0, 126, -7, -1, 0, 0, 0, 1, 120, -1, -1, 0, 0, 0, 1, 126, 0, 0, 0, 0, 0, 0, 0, -127, -1, 0, 0,
      0, 1, 1, -121, -1, 0, 0, 0, 1, 7, -1, -1, 0, 0, 0, 1, 0},
     {0, 0, 0, -128, 0, 0, -1, -7, -1, 0, -7, 0, -1, -7, -1, -1, 0, -1, 0, -1, -1, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 1,
      0, 1, 1, 7, 1, 0, 7, 0, 1, 7, 127, 1, 0, 127, 0, 1, 0},
     {0, 0, 0, 0, 0, 0, -1, -7, -1, 0, 0, 0, -1, -7, -1, -1, 0, 0, 0, -1, -1, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 1,
      1, 7, 1, 0, 0, 0, 1, 7, 127, 1, 0, 0, 0, 1, 0}},
    {ts::i16,
     {-32768, -7, -1, 0, 1, 7, 32767},
     {-32768, -2, -1, 0, 1, 2, 32767},
     {1, 16384, -32768, -2, -32768, -16384, -2, 0, 3, 7, -2, -7, -4, -1, 0, 0, 1, -2, -1, -1, -1, 0, 0, 0, -1, 0, 0,
      0, -1, -1, -1, -2, 1, 0, 0, -1, -4, -7, -2, 7, 3, 0, -1, -16384, -32767, -2, 32767, 16383, 1},
     {0, 0, 0, 0, 0, 0, 32766, -7, -1, 0, 0, 0, 1, 32760, -1, -1, 0, 0, 0, 1, 32766, 0, 0, 0, 0, 0, 0, 0, -32767,
      -1, 0, 0, 0, 1, 1, -32761, -1, 0, 0, 0, 1, 7, -1, -1, 0, 0, 0, 1, 0},
     {0, 0, 0, -32768, 0, 0, -1, -7, -1, 0, -7, 0, -1, -7, -1, -1, 0, -1, 0, -1, -1, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0,
      1, 0, 1, 1, 7, 1, 0, 7, 0, 1, 7, 32767, 1, 0, 32767, 0, 1, 0},
     {0, 0, 0, 0, 0, 0, -1, -7, -1, 0, 0, 0, -1, -7, -1, -1, 0, 0, 0, -1, -1, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 1,
      1, 7, 1, 0, 0, 0, 1, 7, 32767, 1, 0, 0, 0, 1, 0}},
    {ts::i32,
     {-2147483648, -7, -1, 0, 1, 7, 2147483647},
     {-2147483648, -2, -1, 0, 1, 2, 2147483647},
     {1, 1073741824, -2147483648, -2, -2147483648, -1073741824, -2, 0, 3, 7, -2, -7, -4, -1, 0, 0, 1, -2, -1, -1,
      -1, 0, 0, 0, -1, 0, 0, 0, -1, -1, -1, -2, 1, 0, 0, -1, -4, -7, -2, 7, 3, 0, -1, -1073741824, -2147483647, -2,
      2147483647, 1073741823, 1},
     {0, 0, 0, 0, 0, 0, 2147483646, -7, -1, 0, 0, 0, 1, 2147483640, -1, -1, 0, 0, 0, 1, 2147483646, 0, 0, 0, 0, 0,
      0, 0, -2147483647, -1, 0, 0, 0, 1, 1, -2147483641, -1, 0, 0, 0, 1, 7, -1, -1, 0, 0, 0, 1, 0},
     {0, 0, 0, -2147483648, 0, 0, -1, -7, -1, 0, -7, 0, -1, -7, -1, -1, 0, -1, 0, -1, -1, 0, 0, 0, 0, 0, 0, 0, 1, 1,
      0, 1, 0, 1, 1, 7, 1, 0, 7, 0, 1, 7, 2147483647, 1, 0, 2147483647, 0, 1, 0},
     {0, 0, 0, 0, 0, 0, -1, -7, -1, 0, 0, 0, -1, -7, -1, -1, 0, 0, 0, -1, -1, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 1,
      1, 7, 1, 0, 0, 0, 1, 7, 2147483647, 1, 0, 0, 0, 1, 0}},
    {ts::i64,
     {kI64Min, -7, -1, 0, 1, 7, 9223372036854775807},
     {kI64Min, -2, -1, 0, 1, 2, 9223372036854775807},
     {1, 4611686018427387904, kI64Min, -2, kI64Min, -4611686018427387904, -2, 0, 3, 7, -2, -7, -4, -1, 0, 0, 1, -2,
      -1, -1, -1, 0, 0, 0, -1, 0, 0, 0, -1, -1, -1, -2, 1, 0, 0, -1, -4, -7, -2, 7, 3, 0, -1, -4611686018427387904,
      -9223372036854775807, -2, 9223372036854775807, 4611686018427387903, 1},
     {0, 0, 0, 0, 0, 0, 9223372036854775806, -7, -1, 0, 0, 0, 1, 9223372036854775800, -1, -1, 0, 0, 0, 1,
      9223372036854775806, 0, 0, 0, 0, 0, 0, 0, -9223372036854775807, -1, 0, 0, 0, 1, 1, -9223372036854775801, -1,
      0, 0, 0, 1, 7, -1, -1, 0, 0, 0, 1, 0},
     {0, 0, 0, kI64Min, 0, 0, -1, -7, -1, 0, -7, 0, -1, -7, -1, -1, 0, -1, 0, -1, -1, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0,
      1, 0, 1, 1, 7, 1, 0, 7, 0, 1, 7, 9223372036854775807, 1, 0, 9223372036854775807, 0, 1, 0},
     {0, 0, 0, 0, 0, 0, -1, -7, -1, 0, 0, 0, -1, -7, -1, -1, 0, 0, 0, -1, -1, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 1,
      1, 7, 1, 0, 0, 0, 1, 7, 9223372036854775807, 1, 0, 0, 0, 1, 0}},
    {ts::u8,
     {0, 1, 7, 255},
     {0, 1, 2, 255},
     {255, 0, 0, 0, 255, 1, 0, 0, 255, 7, 3, 0, 255, 255, 127, 1},
     {0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 7, 0, 0, 1, 0},
     {0, 0, 0, 0, 1, 0, 1, 1, 7, 0, 1, 7, 255, 0, 1, 0},
     {0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 7, 0, 0, 1, 0}},
    {ts::u16,
     {0, 1, 7, 65535},
     {0, 1, 2, 65535},
     {65535, 0, 0, 0, 65535, 1, 0, 0, 65535, 7, 3, 0, 65535, 65535, 32767, 1},
     {0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 7, 0, 0, 1, 0},
     {0, 0, 0, 0, 1, 0, 1, 1, 7, 0, 1, 7, 65535, 0, 1, 0},
     {0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 7, 0, 0, 1, 0}},
    {ts::u32,
     {0, 1, 7, 4294967295},
     {0, 1, 2, 4294967295},
     {4294967295, 0, 0, 0, 4294967295, 1, 0, 0, 4294967295, 7, 3, 0, 4294967295, 4294967295, 2147483647, 1},
     {0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 7, 0, 0, 1, 0},
     {0, 0, 0, 0, 1, 0, 1, 1, 7, 0, 1, 7, 4294967295, 0, 1, 0},
     {0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 7, 0, 0, 1, 0}},
    {ts::u64,
     {0, 1, 7, -1},
     {0, 1, 2, -1},
     {-1, 0, 0, 0, -1, 1, 0, 0, -1, 7, 3, 0, -1, -1, 9223372036854775807, 1},
     {0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 7, 0, 0, 1, 0},
     {0, 0, 0, 0, 1, 0, 1, 1, 7, 0, 1, 7, -1, 0, 1, 0},
     {0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 7, 0, 0, 1, 0}},};

class IntDivision : public ::testing::TestWithParam<IntTable> {};

TEST_P(IntDivision, MatchesJaxAtZeroMinusOneAndTheExtremes) {
  const IntTable& t = GetParam();
  const auto [av, bv] = pairs(t.a, t.b);
  const Array a = Array(av).astype(t.dtype), b = Array(bv).astype(t.dtype);
  const std::pair<const char*, std::pair<Binary, const std::vector<int64_t>*>> fns[] = {
      {"floor_divide", {ts::floor_divide, &t.floor_divide}},
      {"remainder", {ts::remainder, &t.remainder}},
      {"rem", {ts::rem, &t.rem}},
      {"fmod", {ts::fmod, &t.fmod}}};
  std::vector<Binary> all;
  for (const auto& f : fns) all.push_back(f.second.first);
  for (Path path : kPaths) {
    const std::vector<Array> ys = along(path, all, a, b);
    for (size_t k = 0; k < ys.size(); ++k) {
      const auto& [name, fw] = fns[k];
      ASSERT_EQ(ys[k].dtype(), t.dtype) << name << " " << path_name(path);
      const auto got = ys[k].astype(ts::i64).to_vector<int64_t>();
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_EQ(got[i], (*fw.second)[i]) << name << "(" << av[i] << ", " << bv[i] << ") " << ts::dtype_name(t.dtype)
                                           << ", " << path_name(path);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Numerics, IntDivision, ::testing::ValuesIn(kIntTables),
                         [](const auto& info) { return std::string(ts::dtype_name(info.param.dtype)); });

TEST(Numerics, TrueDivisionOfIntegersByZeroGivesInfinitiesAndNaN) {
  for (ts::DType d : {ts::i8, ts::i32, ts::u8, ts::i64}) {
    const Array a = Array(std::vector<int64_t>{5, 0, -5}).astype(d), z = ts::zeros({3}, d);
    for (Path path : kPaths) {
      const Array q = along(path, ts::divide, a, z);
      EXPECT_EQ(q.dtype(), d == ts::i64 ? ts::f64 : ts::f32);
      // -5 in uint8 is 251.
      EXPECT_EQ(float_mismatches("divide", a.astype(ts::f64).to_vector<double>(), {0, 0, 0},
                                 q.astype(ts::f64).to_vector<double>(), {I, N, I * (ts::is_signed_int(d) ? -1 : 1)}),
                "")
          << ts::dtype_name(d) << ", " << path_name(path);
    }
  }
}

// jnp's numeric-only functions count bool operands as int32 (JAX: int32 results).
TEST(Numerics, NumericFunctionsOfBoolsAreInt32) {
  const Array t = Array(std::vector<bool>{true, false, true, false});
  const Array f = Array(std::vector<bool>{true, true, false, false});
  const std::pair<Binary, std::vector<int32_t>> cases[] = {
      {ts::floor_divide, {1, 0, -2, -1}}, {ts::remainder, {0, 0, 0, 0}}, {ts::fmod, {0, 0, 1, 0}},
      {ts::pow, {1, 0, 1, 1}},           {ts::left_shift, {2, 0, 1, 0}}, {ts::right_shift, {0, 0, 1, 0}}};
  for (const auto& [fn, want] : cases) {
    const Array y = fn(t, f);
    EXPECT_EQ(y.dtype(), ts::i32);
    EXPECT_EQ(y.to_vector<int32_t>(), want);
  }
  const Array sq = ts::square(t);
  EXPECT_EQ(sq.dtype(), ts::i32);
  EXPECT_EQ(sq.to_vector<int32_t>(), (std::vector<int32_t>{1, 0, 1, 0}));
}

// ---------------------------------------------------------------------------------------
// Signed zeros: maximum, minimum and the max/min reductions order -0 below +0; a product
// of one term keeps the sign of its zero.

const ts::DType kFloatTypes[] = {ts::f16, ts::bf16, ts::f32, ts::f64};

TEST(Numerics, MaximumAndMinimumOrderNegativeZeroBelowPositiveZero) {
  const std::vector<double> a = {-0.0, -0.0, 0.0, 0.0, N, -0.0}, b = {-0.0, 0.0, -0.0, 0.0, -0.0, N};
  // JAX: maximum [-0, 0, 0, 0], minimum [-0, -0, -0, 0]; NaN propagates.
  const std::vector<double> max_want = {-0.0, 0.0, 0.0, 0.0, N, N}, min_want = {-0.0, -0.0, -0.0, 0.0, N, N};
  for (ts::DType d : kFloatTypes)
    for (Path path : kPaths) {
      const Array x = Array(a).astype(d), y = Array(b).astype(d);
      EXPECT_EQ(float_mismatches("maximum", a, b, along(path, ts::maximum, x, y).astype(ts::f64).to_vector<double>(),
                                 max_want),
                "")
          << ts::dtype_name(d) << ", " << path_name(path);
      EXPECT_EQ(float_mismatches("minimum", a, b, along(path, ts::minimum, x, y).astype(ts::f64).to_vector<double>(),
                                 min_want),
                "")
          << ts::dtype_name(d) << ", " << path_name(path);
      const Binary clip01 = [](const Array& v, const Array&) { return ts::clip(v, Array(0.0), Array(1.0)); };
      EXPECT_TRUE(same(along(path, clip01, x, y).astype(ts::f64).to_vector<double>()[0], 0.0))
          << "clip(-0, 0, 1) " << ts::dtype_name(d) << ", " << path_name(path);
    }
}

/// Bitwise comparison of float results (signs of zero included).
void expect_values(const Array& got, const std::vector<double>& want, const std::string& what) {
  const auto g = got.astype(ts::f64).to_vector<double>();
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_TRUE(same(g[i], want[i])) << what << " [" << i << "] = " << show(g[i]) << ", want " << show(want[i]);
}

TEST(Numerics, MaxAndMinReductionsOrderNegativeZeroBelowPositiveZero) {
  // Rows of 64 zeros, one pattern each; JAX: max [+0, +0, -0, +0], min [-0, -0, -0, +0].
  const int64_t n = 64;
  std::vector<double> v;
  for (int row = 0; row < 4; ++row)
    for (int64_t j = 0; j < n; ++j) {
      const bool negative = row == 0 ? j % 2 == 0 : row == 1 ? j == n - 1 : row == 2;
      v.push_back(negative ? -0.0 : 0.0);
    }
  const std::vector<double> max_want = {0.0, 0.0, -0.0, 0.0}, min_want = {-0.0, -0.0, -0.0, 0.0};
  for (ts::DType d : kFloatTypes) {
    const Array x = Array(v, {4, n}).astype(d);
    const std::string dt = ts::dtype_name(d);
    expect_values(ts::max(x, {1}), max_want, "max over rows " + dt);
    expect_values(ts::min(x, {1}), min_want, "min over rows " + dt);
    expect_values(ts::max(ts::transpose(x), {0}), max_want, "max over columns " + dt);  // rows of accumulators
    expect_values(ts::min(ts::transpose(x), {0}), min_want, "min over columns " + dt);
    expect_values(ts::jit([](const Array& a) { return ts::max(a, {1}); })(x), max_want, "jit max " + dt);
    for (int row = 0; row < 4; ++row) {
      const Array r = ts::slice(x, {row, 0}, {row + 1, n});
      expect_values(ts::max(r), {max_want[size_t(row)]}, "max of row " + std::to_string(row) + " " + dt);
      expect_values(ts::min(r), {min_want[size_t(row)]}, "min of row " + std::to_string(row) + " " + dt);
    }
  }
  // Fused: the reduction reads a fused element-wise value (the epilogue in generated C++).
  const Array big = ts::tile(Array(v, {4, n}).astype(ts::f32), {4096, 1});
  auto fused_max = ts::jit([](const Array& a) { return ts::max(a * 1.0f, {1}); });
  auto fused_min = ts::jit([](const Array& a) { return ts::min(a * 1.0f, {1}); });
  if (ts::compiler::codegen_enabled()) {
    EXPECT_NE(fused_max.lower(big).compile().as_text().find("fused"), std::string::npos);
  }
  expect_values(ts::slice(fused_max(big), {0}, {4}), max_want, "fused max");
  expect_values(ts::slice(fused_min(big), {0}, {4}), min_want, "fused min");
  // JAX: cummax [-0, 0, 0], cummin [0, -0, -0].
  expect_values(ts::cummax(Array(std::vector<double>{-0.0, 0.0, -0.0}), 0), {-0.0, 0.0, 0.0}, "cummax");
  expect_values(ts::cummin(Array(std::vector<double>{0.0, -0.0, 0.0}), 0), {0.0, -0.0, -0.0}, "cummin");
}

TEST(Numerics, ProductsOfOneTermKeepTheSignOfZero) {
  // JAX: a contraction of size 1 is a product (-1 * 0 = -0); longer sums start from +0.
  for (ts::DType d : {ts::f16, ts::f32, ts::f64}) {
    const std::string dt = ts::dtype_name(d);
    auto neg = [&](ts::Shape s) { return -ts::ones(s, d); };
    auto zero = [&](ts::Shape s) { return ts::zeros(s, d); };
    auto all = [](double v, size_t n) { return std::vector<double>(n, v); };
    expect_values(ts::matmul(neg({2, 1}), zero({1, 3})), all(-0.0, 6), "matmul k=1 " + dt);
    expect_values(ts::matmul(neg({2, 2}), zero({2, 3})), all(0.0, 6), "matmul k=2 " + dt);
    expect_values(ts::matmul(neg({100, 1}), zero({1, 100})), all(-0.0, 10000), "outer 100x100 " + dt);
    expect_values(ts::outer(neg({2}), zero({3})), all(-0.0, 6), "outer " + dt);
    expect_values(ts::dot(neg({1}), zero({1})), {-0.0}, "dot k=1 " + dt);
    expect_values(ts::einsum("i,i->i", {neg({3}), zero({3})}), all(-0.0, 3), "einsum i,i->i " + dt);
    expect_values(ts::einsum("bi,bi->b", {neg({2, 1}), zero({2, 1})}), all(-0.0, 2), "einsum bi,bi->b " + dt);
    expect_values(ts::einsum("bij,bjk->bik", {neg({2, 2, 1}), zero({2, 1, 2})}), all(-0.0, 8),
                  "einsum bij,bjk->bik " + dt);
    auto jit_matmul = ts::jit([](const Array& a, const Array& b) { return ts::matmul(a, b); });
    expect_values(jit_matmul(neg({2, 1}), zero({1, 3})), all(-0.0, 6), "jit matmul k=1 " + dt);
  }
  // -(1 + 0i) is (-1, -0); times (0, 0) it is (+0, -0) in JAX: each part keeps its sign.
  const Array c = ts::matmul(-ts::ones({2, 1}, ts::c64), ts::zeros({1, 3}, ts::c64));
  expect_values(ts::real(c), std::vector<double>(6, 0.0), "matmul k=1 complex64, real part");
  expect_values(ts::imag(c), std::vector<double>(6, -0.0), "matmul k=1 complex64, imaginary part");
}

TEST(Numerics, ComplexFunctionsKeepTheSignOfZeroWhereJaxDoes) {
  using C = std::complex<double>;
  const double lg = 1.3643763538418412;  // pi / ln 10
  // (input, JAX's square, log10, log1p) for complex64 and complex128.
  const std::vector<std::tuple<C, C, C>> sq_log10 = {
      {{0.0, 0.0}, {0.0, 0.0}, {-I, 0.0}},     {{0.0, -0.0}, {0.0, -0.0}, {-I, -0.0}},
      {{-0.0, 0.0}, {0.0, -0.0}, {-I, lg}},    {{-0.0, -0.0}, {0.0, 0.0}, {-I, -lg}},
      {{1.0, -0.0}, {1.0, -0.0}, {0.0, -0.0}}, {{-1.0, 0.0}, {1.0, -0.0}, {0.0, lg}},
      {{-1.0, -0.0}, {1.0, 0.0}, {0.0, -lg}}};
  const std::vector<std::pair<C, C>> log1p = {{{1.0, -0.0}, {0.6931471805599453, -0.0}}, {{-1.0, -0.0}, {-I, -0.0}}};
  for (ts::DType d : {ts::c64, ts::c128}) {
    auto check = [&](const Array& y, C want, const std::string& what) {
      const C got = y.astype(ts::c128).to_vector<C>()[0];
      EXPECT_TRUE(same(got.real(), want.real()) || (want.real() != 0 && std::abs(got.real() - want.real()) < 1e-6))
          << what << " real " << show(got.real()) << ", want " << show(want.real());
      EXPECT_TRUE(same(got.imag(), want.imag()) || (want.imag() != 0 && std::abs(got.imag() - want.imag()) < 1e-6))
          << what << " imag " << show(got.imag()) << ", want " << show(want.imag());
    };
    for (const auto& [z, sq, l10] : sq_log10) {
      const Array x = Array(std::vector<C>{z}).astype(d);
      const std::string at = "(" + show(z.real()) + ", " + show(z.imag()) + ") " + ts::dtype_name(d);
      check(ts::square(x), sq, "square" + at);
      check(ts::log10(x), l10, "log10" + at);
    }
    for (const auto& [z, want] : log1p)
      check(ts::log1p(Array(std::vector<C>{z}).astype(d)), want,
            "log1p(" + show(z.real()) + ", " + show(z.imag()) + ") " + ts::dtype_name(d));
  }
}

TEST(Numerics, ComplexFunctionsMatchJaxAtSignedZerosInfinitiesAndNan) {
  // JAX's complex functions (XLA's formulas, not C99's Annex G) at inputs with a signed zero,
  // infinite or NaN part: zeros must have JAX's sign, NaN and infinities must be where JAX
  // has them, and the other values agree to 1e-6. One table serves complex64 and complex128
  // (numerics_jax_values.py checks that JAX agrees with itself across the two), eagerly and
  // under jit.
  using C = std::complex<double>;
  const std::vector<C> z = {{0.0, 0.0}, {-0.0, 0.0}, {0.0, -0.0}, {-0.0, -0.0}, {2.0, -0.0}, {-2.0, 0.0}, {-2.0, -0.0},
                             {-0.0, 2.0}, {0.0, -2.0}, {I, -0.0}, {-I, 0.0}, {0.0, I}, {N, 0.0}, {1.0, N}, {I, I},
                             {-I, N}};
  const std::vector<std::pair<std::string, std::vector<C>>> want = {
      {"exp", {{1.0, 0.0}, {1.0, 0.0}, {1.0, 0.0}, {1.0, 0.0}, {7.3890561, 0.0}, {0.135335283, 0.0},
               {0.135335283, 0.0}, {-0.416146837, 0.909297427}, {-0.416146837, -0.909297427}, {I, 0.0}, {0.0, 0.0},
               {N, N}, {N, 0.0}, {N, N}, {N, N}, {N, N}}},
      {"exp2", {{1.0, 0.0}, {1.0, 0.0}, {1.0, 0.0}, {1.0, 0.0}, {4.0, 0.0}, {0.25, 0.0}, {0.25, 0.0},
               {0.183456975, 0.98302774}, {0.183456975, -0.98302774}, {N, N}, {N, N}, {N, N}, {N, N}, {N, N}, {N, N},
               {N, N}}},
      {"expm1", {{0.0, 0.0}, {0.0, 0.0}, {0.0, 0.0}, {0.0, 0.0}, {6.3890561, 0.0}, {-0.864664717, 0.0},
               {-0.864664717, 0.0}, {-1.41614684, 0.909297427}, {-1.41614684, -0.909297427}, {I, 0.0}, {-1.0, 0.0},
               {N, N}, {N, 0.0}, {N, N}, {N, N}, {N, N}}},
      {"log", {{-I, 0.0}, {-I, 3.14159265}, {-I, -0.0}, {-I, -3.14159265}, {0.693147181, -0.0},
               {0.693147181, 3.14159265}, {0.693147181, -3.14159265}, {0.693147181, 1.57079633},
               {0.693147181, -1.57079633}, {I, -0.0}, {I, 3.14159265}, {I, 1.57079633}, {N, N}, {N, N},
               {I, 0.785398163}, {N, N}}},
      {"log1p", {{0.0, 0.0}, {0.0, 0.0}, {0.0, -0.0}, {0.0, -0.0}, {1.09861229, -0.0}, {0.0, 3.14159265},
               {0.0, -3.14159265}, {0.804718956, 1.10714872}, {0.804718956, -1.10714872}, {I, -0.0}, {I, 3.14159265},
               {I, 1.57079633}, {N, N}, {N, N}, {I, 0.785398163}, {N, N}}},
      {"log2", {{-I, 0.0}, {-I, 4.53236014}, {-I, -0.0}, {-I, -4.53236014}, {1.0, -0.0}, {1.0, 4.53236014},
               {1.0, -4.53236014}, {1.0, 2.26618007}, {1.0, -2.26618007}, {I, -0.0}, {I, 4.53236014}, {I, 2.26618007},
               {N, N}, {N, N}, {I, 1.13309004}, {N, N}}},
      {"log10", {{-I, 0.0}, {-I, 1.36437635}, {-I, -0.0}, {-I, -1.36437635}, {0.301029996, -0.0},
               {0.301029996, 1.36437635}, {0.301029996, -1.36437635}, {0.301029996, 0.682188177},
               {0.301029996, -0.682188177}, {I, -0.0}, {I, 1.36437635}, {I, 0.682188177}, {N, N}, {N, N},
               {I, 0.341094088}, {N, N}}},
      {"sqrt", {{0.0, 0.0}, {0.0, 0.0}, {0.0, 0.0}, {0.0, 0.0}, {1.41421356, 0.0}, {0.0, 1.41421356},
               {0.0, 1.41421356}, {1.0, 1.0}, {1.0, -1.0}, {I, 0.0}, {0.0, I}, {I, I}, {N, N}, {N, N}, {I, I},
               {N, N}}},
      {"rsqrt", {{I, N}, {I, N}, {I, N}, {I, N}, {0.707106781, 0.0}, {4.32978028e-17, -0.707106781},
               {4.32978028e-17, 0.707106781}, {0.5, -0.5}, {0.5, 0.5}, {0.0, 0.0}, {-0.0, -0.0}, {0.0, -0.0}, {N, N},
               {N, N}, {0.0, -0.0}, {-0.0, -0.0}}},
      {"sin", {{0.0, 0.0}, {0.0, 0.0}, {0.0, -0.0}, {0.0, -0.0}, {0.909297427, 0.0}, {-0.909297427, -0.0},
               {-0.909297427, 0.0}, {0.0, 3.62686041}, {0.0, -3.62686041}, {N, N}, {N, N}, {0.0, I}, {N, N}, {N, N},
               {N, N}, {N, N}}},
      {"cos", {{1.0, 0.0}, {1.0, 0.0}, {1.0, 0.0}, {1.0, 0.0}, {-0.416146837, 0.0}, {-0.416146837, 0.0},
               {-0.416146837, -0.0}, {3.76219569, 0.0}, {3.76219569, 0.0}, {N, N}, {N, N}, {I, 0.0}, {N, N}, {N, N},
               {N, N}, {N, N}}},
      {"tan", {{0.0, 0.0}, {0.0, 0.0}, {0.0, -0.0}, {0.0, -0.0}, {-2.18503986, -0.0}, {2.18503986, 0.0},
               {2.18503986, -0.0}, {0.0, 0.96402758}, {0.0, -0.96402758}, {N, N}, {N, N}, {0.0, 1.0}, {N, N}, {N, N},
               {0.0, 1.0}, {N, N}}},
      {"arcsin", {{0.0, 0.0}, {-0.0, 0.0}, {0.0, 0.0}, {-0.0, 0.0}, {1.57079633, 1.3169579}, {-1.57079633, 1.3169579},
               {-1.57079633, 1.3169579}, {-0.0, 1.44363548}, {0.0, -1.44363548}, {1.57079633, I}, {-1.57079633, I},
               {0.0, I}, {N, N}, {N, N}, {0.785398163, I}, {N, I}}},
      {"arccos", {{1.57079633, -0.0}, {1.57079633, -0.0}, {1.57079633, -0.0}, {1.57079633, -0.0}, {0.0, -1.3169579},
               {3.14159265, -1.3169579}, {3.14159265, -1.3169579}, {1.57079633, -1.44363548}, {1.57079633, 1.44363548},
               {0.0, -I}, {3.14159265, -I}, {1.57079633, -I}, {N, N}, {N, N}, {0.785398163, -I}, {N, -I}}},
      {"arctan", {{0.0, -0.0}, {-0.0, -0.0}, {0.0, -0.0}, {-0.0, -0.0}, {1.10714872, -0.0}, {-1.10714872, -0.0},
               {-1.10714872, -0.0}, {-1.57079633, 0.549306144}, {1.57079633, -0.549306144}, {1.57079633, -0.0},
               {-1.57079633, -0.0}, {1.57079633, 0.0}, {-1.57079633, N}, {1.57079633, N}, {1.57079633, 0.0},
               {-1.57079633, 0.0}}},
      {"sinh", {{0.0, 0.0}, {0.0, 0.0}, {0.0, 0.0}, {0.0, 0.0}, {3.62686041, 0.0}, {-3.62686041, 0.0},
               {-3.62686041, 0.0}, {0.0, 0.909297427}, {0.0, -0.909297427}, {I, 0.0}, {-I, 0.0}, {N, N}, {N, 0.0},
               {N, N}, {N, N}, {N, N}}},
      {"cosh", {{1.0, 0.0}, {1.0, 0.0}, {1.0, 0.0}, {1.0, 0.0}, {3.76219569, 0.0}, {3.76219569, 0.0},
               {3.76219569, 0.0}, {-0.416146837, 0.0}, {-0.416146837, 0.0}, {I, 0.0}, {I, 0.0}, {N, N}, {N, 0.0},
               {N, N}, {N, N}, {N, N}}},
      {"tanh", {{0.0, 0.0}, {-0.0, 0.0}, {0.0, 0.0}, {-0.0, 0.0}, {0.96402758, 0.0}, {-0.96402758, 0.0},
               {-0.96402758, 0.0}, {-0.0, -2.18503986}, {0.0, 2.18503986}, {1.0, 0.0}, {-1.0, 0.0}, {N, N}, {N, 0.0},
               {N, N}, {1.0, 0.0}, {-1.0, 0.0}}},
      {"arcsinh", {{0.0, 0.0}, {0.0, 0.0}, {0.0, -0.0}, {0.0, -0.0}, {1.44363548, -0.0}, {-1.44363548, 0.0},
               {-1.44363548, -0.0}, {1.3169579, 1.57079633}, {1.3169579, -1.57079633}, {I, -0.0}, {-I, 0.0},
               {I, 1.57079633}, {N, N}, {N, N}, {I, 0.785398163}, {-I, N}}},
      {"arccosh", {{0.0, 1.57079633}, {0.0, 1.57079633}, {0.0, 1.57079633}, {0.0, 1.57079633}, {1.3169579, 0.0},
               {1.3169579, 3.14159265}, {1.3169579, 3.14159265}, {1.44363548, 1.57079633}, {1.44363548, -1.57079633},
               {I, 0.0}, {I, 3.14159265}, {I, 1.57079633}, {N, N}, {N, N}, {I, 0.785398163}, {I, N}}},
      {"arctanh", {{0.0, 0.0}, {0.0, 0.0}, {0.0, -0.0}, {0.0, -0.0}, {0.549306144, -1.57079633},
               {-0.549306144, 1.57079633}, {-0.549306144, -1.57079633}, {0.0, 1.10714872}, {0.0, -1.10714872},
               {0.0, 1.57079633}, {-0.0, 1.57079633}, {0.0, 1.57079633}, {N, 1.57079633}, {N, -1.57079633},
               {0.0, 1.57079633}, {-0.0, -1.57079633}}},
      {"square", {{0.0, 0.0}, {0.0, -0.0}, {0.0, -0.0}, {0.0, 0.0}, {4.0, -0.0}, {4.0, -0.0}, {4.0, 0.0}, {-4.0, -0.0},
               {-4.0, -0.0}, {I, N}, {I, N}, {-I, N}, {N, N}, {N, N}, {N, I}, {N, N}}},
      {"reciprocal", {{I, N}, {-I, N}, {I, N}, {-I, N}, {0.5, 0.0}, {-0.5, -0.0}, {-0.5, -0.0}, {0.0, -0.5},
               {-0.0, 0.5}, {0.0, 0.0}, {-0.0, -0.0}, {0.0, -0.0}, {N, N}, {N, N}, {0.0, -0.0}, {-0.0, -0.0}}},
      {"sign", {{0.0, 0.0}, {-0.0, 0.0}, {0.0, -0.0}, {-0.0, -0.0}, {1.0, -0.0}, {-1.0, 0.0}, {-1.0, -0.0},
               {-0.0, 1.0}, {0.0, -1.0}, {N, -0.0}, {N, 0.0}, {0.0, N}, {N, N}, {N, N}, {N, N}, {N, N}}},
      {"abs", {{0.0, 0.0}, {0.0, 0.0}, {0.0, 0.0}, {0.0, 0.0}, {2.0, 0.0}, {2.0, 0.0}, {2.0, 0.0}, {2.0, 0.0},
               {2.0, 0.0}, {I, 0.0}, {I, 0.0}, {I, 0.0}, {N, 0.0}, {N, 0.0}, {I, 0.0}, {N, 0.0}}},
  };
  using Fn = std::function<Array(const Array&)>;
#define TESSEL_FN(NAME) {#NAME, [](const Array& x) { return ts::NAME(x); }}
  const std::map<std::string, Fn> fns = {
      TESSEL_FN(exp),     TESSEL_FN(exp2),    TESSEL_FN(expm1),   TESSEL_FN(log),        TESSEL_FN(log1p),
      TESSEL_FN(log2),    TESSEL_FN(log10),   TESSEL_FN(sqrt),    TESSEL_FN(rsqrt),      TESSEL_FN(sin),
      TESSEL_FN(cos),     TESSEL_FN(tan),     TESSEL_FN(arcsin),  TESSEL_FN(arccos),     TESSEL_FN(arctan),
      TESSEL_FN(sinh),    TESSEL_FN(cosh),    TESSEL_FN(tanh),    TESSEL_FN(arcsinh),    TESSEL_FN(arccosh),
      TESSEL_FN(arctanh), TESSEL_FN(square),  TESSEL_FN(sign),    TESSEL_FN(reciprocal), TESSEL_FN(abs)};
#undef TESSEL_FN
  auto agrees = [](double got, double want) {
    return same(got, want) || (std::isfinite(want) && want != 0 && got != 0 &&
                               std::abs(got - want) <= 1e-6 * std::max(1.0, std::abs(want)));
  };
  for (ts::DType d : {ts::c64, ts::c128}) {
    const Array x = Array(z).astype(d);
    for (const auto& [name, w] : want) {
      const Fn& f = fns.at(name);
      for (bool jit : {false, true}) {
        const std::vector<C> got = (jit ? ts::jit(f)(x) : f(x)).astype(ts::c128).to_vector<C>();
        ASSERT_EQ(got.size(), z.size());
        for (size_t i = 0; i < z.size(); ++i)
          EXPECT_TRUE(agrees(got[i].real(), w[i].real()) && agrees(got[i].imag(), w[i].imag()))
              << name << "(" << show(z[i].real()) << ", " << show(z[i].imag()) << ") " << ts::dtype_name(d)
              << (jit ? " under jit" : "") << ": got (" << show(got[i].real()) << ", " << show(got[i].imag())
              << "), JAX (" << show(w[i].real()) << ", " << show(w[i].imag()) << ")";
      }
    }
  }
}

TEST(Numerics, ComplexProductQuotientAndPowerMatchJaxAtSignedZeros) {
  // Values recorded from JAX 0.10.2 (tests/ops/numerics_jax_values.py): XLA multiplies as
  // (ac - bd) + (ad + bc)i, divides by Smith's algorithm and raises to a power through
  // |z|^c e^(-d arg z) with Kahan's exact cases, so zero parts and the zero base differ from
  // std::complex's (C99 Annex G) results.
  using C = std::complex<double>;
  struct Case {
    const char* op;
    C x, y, want;
  };
  const std::vector<Case> cases = {
      {"multiply", {-2.0, -0.0}, {3.0, 0.0}, {-6.0, -0.0}},
      {"multiply", {-0.0, -0.0}, {-2.0, 0.0}, {0.0, 0.0}},
      {"divide", {-2.0, -2.0}, {-2.0, -2.0}, {1.0, -0.0}},
      {"divide", {-2.0, -0.0}, {0.0, -2.0}, {-0.0, -1.0}},
      {"divide", {-0.0, -0.0}, {-2.0, -0.0}, {0.0, -0.0}},
      {"divide", {-0.0, -0.0}, {-2.0, 0.0}, {-0.0, 0.0}},
      {"divide", {0.5, 0.0}, {0.0, 0.0}, {I, N}},
      {"power", {-0.0, -0.0}, {0.5, 0.0}, {0.0, 0.0}},
      {"power", {0.0, 0.0}, {-2.0, 0.0}, {N, N}},
      {"power", {0.0, 0.0}, {0.0, 0.0}, {1.0, 0.0}},
      {"power", {-2.0, -0.0}, {0.5, 0.0}, {8.659560562354934e-17, -1.4142135623730951}},
  };
  for (ts::DType d : {ts::c64, ts::c128})
    for (const Case& c : cases) {
      const Array x = Array(std::vector<C>{c.x}).astype(d), y = Array(std::vector<C>{c.y}).astype(d);
      const std::string op = c.op;
      auto f = [&](const Array& a, const Array& b) {
        return op == "multiply" ? ts::multiply(a, b) : op == "divide" ? ts::divide(a, b) : ts::pow(a, b);
      };
      for (const Array& r : {f(x, y), ts::jit(f)(x, y)}) {
        const C got = r.astype(ts::c128).to_vector<C>()[0];
        const std::string at = op + "((" + show(c.x.real()) + ", " + show(c.x.imag()) + "), (" + show(c.y.real()) +
                               ", " + show(c.y.imag()) + ")) " + ts::dtype_name(d);
        for (auto [g, w] : {std::pair{got.real(), c.want.real()}, std::pair{got.imag(), c.want.imag()}})
          EXPECT_TRUE(same(g, w) || (w != 0 && std::isfinite(w) && std::abs(g - w) < 1e-6))
              << at << ": got " << show(got.real()) << ", " << show(got.imag()) << "; JAX " << show(c.want.real())
              << ", " << show(c.want.imag());
      }
    }
}

// ---------------------------------------------------------------------------------------
// Result dtypes.

TEST(Numerics, CumsumAndCumprodKeepIntegerDtypes) {
  // JAX: int8, uint8 and int16 stay (and wrap); bool accumulates in int32.
  for (ts::DType d : {ts::i8, ts::u8, ts::i16, ts::f16}) {
    EXPECT_EQ(ts::cumsum(ts::ones({2}, d), 0).dtype(), d);
    EXPECT_EQ(ts::cumprod(ts::ones({2}, d), 0).dtype(), d);
  }
  EXPECT_EQ(ts::cumsum(ts::full({3}, 100, ts::i8), 0).to_vector<int>(), (std::vector<int>{100, -56, 44}));
  EXPECT_EQ(ts::cumprod(ts::full({2}, 20, ts::u8), 0).to_vector<int>(), (std::vector<int>{20, 144}));
  const Array b = ts::cumsum(ts::ones({3}, ts::bool_), 0);
  EXPECT_EQ(b.dtype(), ts::i32);
  EXPECT_EQ(b.to_vector<int>(), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(ts::cumprod(ts::ones({3}, ts::bool_), 0).dtype(), ts::i32);
}

TEST(Numerics, FullOfACppScalarTakesTheDefaultDtype) {
  // JAX: jnp.full((2,), 7.5) is a weak float32, jnp.full((2,), 7) an int32.
  const Array f = ts::full({2}, 7.5);
  EXPECT_EQ(f.dtype(), ts::f32);
  EXPECT_TRUE(f.weak_type());
  EXPECT_EQ(f.to_vector<float>(), (std::vector<float>{7.5f, 7.5f}));
  EXPECT_EQ((f * ts::ones({2}, ts::f16)).dtype(), ts::f16);
  EXPECT_EQ(ts::full({2}, 7).dtype(), ts::i32);
  EXPECT_EQ(ts::full({2}, int64_t(7)).dtype(), ts::i32);
  EXPECT_EQ(ts::full({2}, 7.5, ts::f64).dtype(), ts::f64);
  EXPECT_FALSE(ts::full({2}, 7.5, ts::f64).weak_type());
  EXPECT_EQ(ts::full({2}, ts::Scalar(7.5, ts::f64)).dtype(), ts::f64);  // a strong value keeps its dtype
  EXPECT_EQ(ts::full({2}, ts::Scalar(7.5f)).dtype(), ts::f32);
  // An array value broadcasts (jnp.full accepts one).
  const Array rows = ts::full({2, 3}, Array(std::vector<int16_t>{1, 2, 3}));
  EXPECT_EQ(rows.dtype(), ts::i16);
  EXPECT_EQ(rows.to_vector<int>(), (std::vector<int>{1, 2, 3, 1, 2, 3}));
  try {
    ts::full({2}, Array(std::vector<float>{1, 2, 3}));
    ADD_FAILURE() << "no error";
  } catch (const ts::ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("full: a value of shape (3,) does not broadcast to shape (2,)"),
              std::string::npos)
        << e.what();
  }
  try {
    ts::full({2}, int64_t(1) << 40);
    ADD_FAILURE() << "no error";
  } catch (const ts::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("pass dtype int64"), std::string::npos) << e.what();
  }
  EXPECT_EQ(ts::full({1}, int64_t(1) << 40, ts::i64).to_vector<int64_t>()[0], int64_t(1) << 40);
}

TEST(Numerics, NumpyReductionsOfWeakValuesAreStrong) {
  // JAX: jnp.sum(2.0) is a strong float32, so jnp.sum(2.0) * f16 is float32.
  const Array s = ts::sum(Array(2.0));
  EXPECT_EQ(s.dtype(), ts::f32);
  EXPECT_FALSE(s.weak_type());
  EXPECT_EQ((s * ts::ones({2}, ts::f16)).dtype(), ts::f32);
  const Array w = ts::broadcast_to(Array(2.0), {3});  // a weak f64 array
  ASSERT_TRUE(w.weak_type());
  for (const Array& r : {ts::sum(w), ts::prod(w), ts::max(w), ts::min(w), ts::mean(w), ts::var(w), ts::cumsum(w, 0),
                         ts::cumprod(w, 0)}) {
    EXPECT_EQ(r.dtype(), ts::f32);
    EXPECT_FALSE(r.weak_type());
  }
  EXPECT_EQ(ts::sum(w).to_vector<float>()[0], 6.0f);
  EXPECT_EQ(ts::sum(ts::broadcast_to(Array(3), {2})).dtype(), ts::i32);
  // lax.cummax keeps the operand's type.
  EXPECT_TRUE(ts::cummax(w, 0).weak_type());
  const Array j = ts::jit([](const Array& x) { return ts::sum(x); })(w);
  EXPECT_EQ(j.dtype(), ts::f32);
  EXPECT_FALSE(j.weak_type());
}

// ---------------------------------------------------------------------------------------
// Shapes JAX accepts.

TEST(Numerics, EinsumBroadcastsIndicesOfSizeOne) {
  // JAX: [[18, 22, 26], [36, 44, 52]] and [6, 22].
  const Array a = Array({{1.0f}, {2.0f}}), b = ts::reshape(ts::arange(12, ts::f32), {4, 3});
  const Array y = ts::einsum("ij,jk", {a, b});
  EXPECT_EQ(y.shape(), (ts::Shape{2, 3}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{18, 22, 26, 36, 44, 52}));
  EXPECT_EQ(ts::einsum("ij,ij->i", {ts::ones({2, 1}), ts::reshape(ts::arange(8, ts::f32), {2, 4})}).to_vector<float>(),
            (std::vector<float>{6, 22}));
  EXPECT_EQ(ts::einsum("ij,jk->ijk", {a, b}).shape(), (ts::Shape{2, 4, 3}));
  // Size 1 broadcasts to 0 too: an empty sum.
  EXPECT_EQ(ts::einsum("ij,jk", {ts::ones({2, 1}), ts::ones({0, 3})}).to_vector<float>(), std::vector<float>(6, 0.0f));
  try {
    ts::einsum("ij,jk", {ts::ones({2, 2}), ts::ones({3, 3})});
    ADD_FAILURE() << "no error";
  } catch (const ts::ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("must match or be 1"), std::string::npos) << e.what();
  }
}

TEST(Numerics, RepeatOfAScalarIsOneDimensional) {
  for (int64_t axis : {0, 1, -1}) {  // JAX ignores the axis of a scalar
    const Array y = ts::repeat(Array(ts::Scalar(5.0f)), 3, axis);
    EXPECT_EQ(y.shape(), (ts::Shape{3}));
    EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{5, 5, 5}));
  }
  EXPECT_EQ(ts::repeat(Array(ts::Scalar(5.0f)), 0, 0).shape(), (ts::Shape{0}));
}

TEST(Numerics, FftOfAnEmptyAxisIsEmpty) {
  // JAX: fft and ifft of (3, 0) are complex64 (3, 0); fft2 of (0, 0) is (0, 0); irfft of
  // (3, 0) and (3, 1) is float32 (3, 0); irfft2 of (0, 3) is (0, 4).
  const Array e30 = ts::zeros({3, 0});
  for (const Array& y : {ts::fft::fft(e30), ts::fft::ifft(e30), ts::fft::fft(e30, std::nullopt, -1, "ortho")}) {
    EXPECT_EQ(y.shape(), (ts::Shape{3, 0}));
    EXPECT_EQ(y.dtype(), ts::c64);
  }
  EXPECT_EQ(ts::fft::fft2(ts::zeros({0, 0})).shape(), (ts::Shape{0, 0}));
  EXPECT_EQ(ts::fft::fftn(ts::zeros({0, 3})).shape(), (ts::Shape{0, 3}));
  EXPECT_EQ(ts::fft::fft(ts::zeros({0, 3})).shape(), (ts::Shape{0, 3}));  // empty batch
  for (const Array& y : {ts::fft::irfft(e30), ts::fft::irfft(ts::zeros({3, 1}))}) {
    EXPECT_EQ(y.shape(), (ts::Shape{3, 0}));
    EXPECT_EQ(y.dtype(), ts::f32);
  }
  EXPECT_EQ(ts::fft::irfft2(ts::zeros({0, 3})).shape(), (ts::Shape{0, 4}));
  // Zero-padding an empty axis transforms zeros.
  EXPECT_EQ(ts::fft::fft(e30, 4).to_vector<ts::complex64_t>(), std::vector<ts::complex64_t>(12));
  // rfft has no output length for an empty axis (JAX fails to compile it).
  EXPECT_THROW(ts::fft::rfft(e30), ts::ValueError);
}

// ---------------------------------------------------------------------------------------
// Denormals: a deliberate difference (docs/arrays.md). XLA on CPU flushes float32 and
// float64 denormals to zero (JAX: log(1e-40f) = -inf, sign(1e-40f) = 0, 1e-40f * 2 = 0);
// tessel keeps IEEE arithmetic on every path.

TEST(Numerics, DenormalsKeepTheirIeeeValues) {
  for (auto [d, tiny] : {std::pair{ts::f32, double(1e-40f)}, std::pair{ts::f64, 1e-310}}) {
    const Array x = ts::full({2}, ts::Scalar(tiny, d)), unused = ts::zeros({2}, d);
    const double log_tiny = d == ts::f32 ? double(std::log(float(tiny))) : std::log(tiny);  // about -92.1, -713.8
    const std::pair<Binary, double> cases[] = {
        {[](const Array& v, const Array&) { return ts::log(v); }, log_tiny},
        {[](const Array& v, const Array&) { return ts::sign(v); }, 1.0},
        {[](const Array& v, const Array&) { return v * 2.0; }, 2 * tiny},
        {[](const Array& v, const Array&) { return -v; }, -tiny}};
    for (const auto& [fn, want] : cases)
      for (Path path : kPaths) {
        const double got = along(path, fn, x, unused).astype(ts::f64).to_vector<double>()[0];
        EXPECT_NEAR(got, want, 1e-6 * std::abs(want)) << ts::dtype_name(d) << ", " << path_name(path);
        EXPECT_NE(got, 0.0) << ts::dtype_name(d) << ", " << path_name(path);
      }
  }
}

}  // namespace
