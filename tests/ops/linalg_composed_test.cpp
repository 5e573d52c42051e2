// tessel::linalg's and tessel::scipy::linalg's composed functions (linalg_composed.cpp)
// against values recorded from JAX 0.10.2 (tests/ops/linalg_composed_jax_values.py, next to
// this file), in several dtypes and with batched inputs; jit against eager; vmap against a
// loop; gradients against central finite differences in float64; and the errors for wrong
// ranks, shapes and orders.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <string>

#include "tessel/linalg.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace la = tessel::linalg;
namespace sla = tessel::scipy::linalg;
using C = std::complex<double>;

namespace {

constexpr double N = std::numeric_limits<double>::quiet_NaN();
constexpr double I = std::numeric_limits<double>::infinity();

/// A value JAX computed: the case's name, the result's dtype, shape and elements.
struct JaxValue {
  const char* name;
  const char* dtype;
  ts::Shape shape;
  std::vector<double> re, im;
};

// Printed by linalg_composed_jax_values.py.
const JaxValue kJax[] = {
    {"vector_norm 2", "f32", {}, {3.9449334144592285}, {}},
    {"vector_norm 1 axis -1", "f32", {2, 3}, {2.75, 2.75, 2.5, 3.25, 2.0, 3.5}, {}},
    {"vector_norm inf axis 1", "f32", {2, 4}, {1.0, 1.25, 1.0, 0.75, 1.25, 1.0, 0.75, 1.25}, {}},
    {"vector_norm -inf axes 0 2", "f32", {3}, {0.25, 0.0, 0.25}, {}},
    {"vector_norm 0 axis 2 keepdims", "f32", {2, 3, 1}, {4.0, 3.0, 4.0, 4.0, 3.0, 4.0}, {}},
    {"vector_norm 3 axis 1", "f32", {2, 4}, {1.044834852218628, 1.5749013423919678, 1.044834852218628, 0.9894729256629944, 1.5749013423919678, 1.044834852218628, 0.9894729256629944, 1.437224268913269}, {}},
    {"vector_norm 0.5 axis -1", "f32", {2, 3}, {10.183541297912598, 8.214101791381836, 9.194524765014648, 12.13866901397705, 5.598076343536377, 13.324554443359375}, {}},
    {"vector_norm -1 axis 0", "f32", {3, 4}, {0.3571428656578064, 0.2083333283662796, 0.1875, 0.4285714030265808, 0.0, 0.0, 0.4285714030265808, 0.1875, 0.2083333283662796, 0.3571428656578064, 0.25, 0.3571428656578064}, {}},
    {"vector_norm c64 2 axis -1", "f32", {3}, {1.5811388492584229, 2.0310096740722656, 1.785357117652893}, {}},
    {"vector_norm c128 3", "f64", {}, {2.1935890626932415}, {}},
    {"vector_norm f64 2 axis 0", "f64", {4}, {1.620185174601965, 1.2747548783981961, 1.346291201783626, 1.346291201783626}, {}},
    {"vector_norm i32 2", "f32", {}, {7.416198253631592}, {}},
    {"norm none 3-D", "f32", {}, {3.9449334144592285}, {}},
    {"norm none 3-D keepdims", "f32", {1, 1, 1}, {3.9449334144592285}, {}},
    {"norm fro axes 0 2", "f32", {3}, {2.3717081546783447, 2.0463380813598633, 2.397915840148926}, {}},
    {"norm 1 axes 2 1", "f32", {2}, {2.75, 3.5}, {}},
    {"norm -1 axes 0 1 keepdims", "f32", {1, 1, 4}, {1.0, 1.0, 1.0, 1.0}, {}},
    {"norm inf axes 1 2", "f32", {2}, {2.75, 3.5}, {}},
    {"norm -inf axes 2 0 keepdims", "f32", {1, 3, 1}, {1.0, 1.0, 1.0}, {}},
    {"norm 1-D inf", "f32", {}, {1.25}, {}},
    {"norm 2-D 1", "f32", {}, {2.5}, {}},
    {"norm 2-D inf", "f32", {}, {2.75}, {}},
    {"norm axis 1 3", "f32", {2, 4}, {1.044834852218628, 1.5749013423919678, 1.044834852218628, 0.9894729256629944, 1.5749013423919678, 1.044834852218628, 0.9894729256629944, 1.437224268913269}, {}},
    {"matrix_norm fro", "f32", {2}, {2.669269561767578, 2.9047374725341797}, {}},
    {"matrix_norm 1 keepdims", "f32", {2, 1, 1}, {2.5, 2.5}, {}},
    {"matrix_norm -inf", "f32", {2}, {2.5, 2.0}, {}},
    {"matrix_norm c64 inf", "f32", {2}, {2.9274301528930664, 2.6648447513580322}, {}},
    {"cross 3 broadcast", "f32", {2, 3}, {1.4375, 0.5625, 0.0625, 1.0, 0.75, 0.3125}, {}},
    {"cross 2x2", "f32", {4}, {0.75, 1.4375, 0.75, 0.75}, {}},
    {"cross 2x3", "f32", {3}, {-1.5625, 0.3125, 0.75}, {}},
    {"cross 3x2", "f32", {2, 3}, {0.25, 0.25, 0.75, 0.125, 0.125, -0.375}, {}},
    {"cross axes", "f32", {3, 4}, {1.25, -0.125, -0.125, -0.125, 0.9375, -0.4375, 0.25, 2.3125, 1.25, -0.8125, 0.5625, 0.5625}, {}},
    {"cross f64 axis 0", "f64", {3, 2}, {-1.9375, -0.5625, -0.9375, 1.125, -0.5625, -0.5625}, {}},
    {"multi_dot 4", "f32", {3, 4}, {-1.39453125, -0.296875, -2.25, -1.5390625, 1.69140625, 3.046875, -3.375, 0.6015625, 1.59765625, 2.09375, -1.40625, 0.9375}, {}},
    {"multi_dot vector first", "f32", {2}, {-3.0625, 2.265625}, {}},
    {"multi_dot vectors both", "f32", {}, {-1.875}, {}},
    {"multi_dot 2", "f32", {2}, {-0.8125, -0.9375}, {}},
    {"multi_dot c128 3", "c128", {2, 5}, {-0.21875, 0.546875, 1.453125, -2.96875, 0.890625, 0.25, 0.390625, 0.671875, -2.15625, 0.390625}, {1.6875, -0.296875, -0.109375, -1.25, -0.484375, 0.59375, -0.515625, -1.265625, 1.53125, -0.609375}},
    {"diagonal 0", "f32", {2, 3}, {-0.5, 0.0, 0.5, 1.25, -1.0, -0.5}, {}},
    {"diagonal 1", "f32", {2, 3}, {1.25, -1.0, -0.5, 0.25, 0.75, 1.25}, {}},
    {"diagonal -1", "f32", {2, 2}, {1.0, -1.25, 0.0, 0.5}, {}},
    {"diagonal 5", "f32", {2, 0}, {}, {}},
    {"matrix_transpose", "f32", {2, 4, 3}, {-0.5, 1.0, -0.25, 1.25, 0.0, -1.25, 0.25, -1.0, 0.5, -0.75, 0.75, -0.5, 1.25, 0.0, -1.25, 0.25, -1.0, 0.5, -0.75, 0.75, -0.5, 1.0, -0.25, 1.25}, {}},
    {"vecdot c64 broadcast", "c64", {2}, {-1.125, -0.0625}, {-0.25, -1.5625}},
    {"vecdot axis 0", "f32", {2}, {-1.6875, 0.875}, {}},
    {"vecdot i32", "i32", {2}, {16.0, -27.0}, {}},
    {"outer", "f32", {3, 2}, {-0.125, 0.375, 0.3125, -0.9375, 0.0625, -0.1875}, {}},
    {"trace 1", "f32", {2}, {-0.25, 2.25}, {}},
    {"trace -1", "f32", {2}, {-0.25, 0.5}, {}},
    {"trace i32 as f64", "f64", {}, {-1.0}, {}},
    {"matrix_power 0", "f32", {3, 3}, {1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0}, {}},
    {"matrix_power 1", "f32", {3, 3}, {0.25, -0.75, 1.0, 0.0, -1.0, 0.75, -0.25, -1.25, 0.5}, {}},
    {"matrix_power 2", "f32", {3, 3}, {-0.1875, -0.6875, 0.1875, -0.1875, 0.0625, -0.375, -0.1875, 0.8125, -0.9375}, {}},
    {"matrix_power 3", "f32", {3, 3}, {-0.09375, 0.59375, -0.609375, 0.046875, 0.546875, -0.328125, 0.1875, 0.5, -0.046875}, {}},
    {"matrix_power 5", "f32", {3, 3}, {0.0205078125, -0.3935546875, 0.3310546875, -0.0498046875, -0.2646484375, 0.111328125, -0.1201171875, -0.1357421875, -0.1083984375}, {}},
    {"matrix_power 13", "f32", {3, 3}, {-0.009422287344932556, -0.02020840346813202, -0.001332700252532959, -0.007271289825439453, 0.011027753353118896, -0.020995572209358215, -0.00512029230594635, 0.04226391017436981, -0.04065844416618347}, {}},
    {"matrix_power batched 6", "f32", {2, 2, 2}, {1.0, 0.0, -3.2880859375, 0.177978515625, 0.349365234375, 0.296630859375, -0.11865234375, 0.40869140625}, {}},
    {"matrix_power i32 5", "i32", {2, 2}, {1241.0, 4503.0, -1501.0, -260.0}, {}},
    {"matrix_power f64 -3", "f64", {3, 3}, {0.04799786673313552, 0.04001755173114395, -0.028963242889242992, 0.009199514114485578, 0.02149730932160976, -0.009540689250932145, 0.026426097888934488, -0.004125224113868572, 0.029673298026755626}, {}},
    {"block_diag", "f32", {5, 7}, {1.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -0.5, 1.25, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.25, -0.75, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0, 0.75, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 4.0}, {}},
    {"block_diag none", "f32", {1, 0}, {}, {}},
    {"toeplitz c", "f32", {3, 3}, {-0.5, 1.25, 0.25, 1.25, -0.5, 1.25, 0.25, 1.25, -0.5}, {}},
    {"toeplitz c r", "f32", {3, 4}, {-0.5, -0.75, 1.0, 0.0, 1.25, -0.5, -0.75, 1.0, 0.25, 1.25, -0.5, -0.75}, {}},
    {"toeplitz batched", "f32", {2, 3, 4}, {1.0, 0.75, -0.25, -1.25, 0.0, 1.0, 0.75, -0.25, -1.0, 0.0, 1.0, 0.75, 0.75, 0.75, -0.25, -1.25, -0.25, 0.75, 0.75, -0.25, -1.25, -0.25, 0.75, 0.75}, {}},
    {"toeplitz c64", "c64", {3, 3}, {-0.25, -1.25, 0.5, -1.25, -0.25, -1.25, 0.5, -1.25, -0.25}, {0.5, 0.0, 0.5, 0.0, 0.5, 0.0, -0.5, 0.0, 0.5}},
    {"hankel c", "f32", {3, 3}, {-0.5, 1.25, 0.25, 1.25, 0.25, 0.0, 0.25, 0.0, 0.0}, {}},
    {"hankel c r", "f32", {3, 4}, {-0.5, 1.25, 0.25, -0.75, 1.25, 0.25, -0.75, 1.0, 0.25, -0.75, 1.0, 0.0}, {}},
    {"hankel batched", "f32", {2, 3, 2}, {1.0, 0.0, 0.0, -1.0, -1.0, 0.75, 0.75, -0.25, -0.25, -1.25, -1.25, -1.25}, {}},
    {"circulant", "f32", {4, 4}, {-0.5, -0.75, 0.25, 1.25, 1.25, -0.5, -0.75, 0.25, 0.25, 1.25, -0.5, -0.75, -0.75, 0.25, 1.25, -0.5}, {}},
    {"circulant batched i32", "i32", {2, 3, 3}, {1.0, 4.0, -3.0, -3.0, 1.0, 4.0, 4.0, -3.0, 1.0, 0.0, 3.0, -4.0, -4.0, 0.0, 3.0, 3.0, -4.0, 0.0}, {}},
};

ts::DType dtype_of(const std::string& s) {
  static const std::map<std::string, ts::DType> m{{"f32", ts::f32},  {"f64", ts::f64}, {"c64", ts::c64},
                                                  {"c128", ts::c128}, {"i32", ts::i32}, {"i64", ts::i64}};
  return m.at(s);
}

/// The test inputs, as the Python script makes them: ((i * 7 + seed * 3) % 11 - 5) / 4 with
/// imaginary part ((i * 5 + seed) % 7 - 3) / 4; integers take the numerator only.
ts::Array arr(const ts::Shape& shape, int seed, ts::DType dt = ts::f32) {
  const int64_t n = ts::shape_size(shape);
  std::vector<ts::complex128_t> v;
  for (int64_t i = 0; i < n; ++i) {
    const double re = double((i * 7 + seed * 3) % 11 - 5);
    const double im = double((i * 5 + seed) % 7 - 3) / 4;
    v.emplace_back(ts::is_integer(dt) ? re : re / 4, ts::is_complex(dt) ? im : 0.0);
  }
  const ts::Array z(v, shape);
  return ts::is_complex(dt) ? z.astype(dt) : ts::real(z).astype(dt);
}

/// A well-conditioned matrix: arr + n * identity.
ts::Array spd(int64_t n, int seed, ts::DType dt = ts::f32) { return arr({n, n}, seed, dt) + ts::eye(n, std::nullopt, 0, dt) * double(n); }

std::vector<C> read(const ts::Array& a) {
  auto z = a.astype(ts::c128).to_vector<ts::complex128_t>();
  return std::vector<C>(z.begin(), z.end());
}

double tol_of(ts::DType dt) { return dt == ts::f64 || dt == ts::c128 ? 1e-12 : 2e-5; }

/// got == want elementwise within tol * (1 + |want|); NaNs and infinities must match.
void expect_close(const std::vector<C>& got, const std::vector<C>& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    const C g = got[i], w = want[i];
    if (std::isnan(w.real()) || std::isinf(w.real())) {
      EXPECT_TRUE(std::isnan(w.real()) ? std::isnan(g.real()) : g.real() == w.real()) << what << " at " << i;
      continue;
    }
    EXPECT_LE(std::abs(g - w), tol * (1 + std::abs(w))) << what << " at " << i << ": " << g << " vs " << w;
  }
}

void expect_close(const ts::Array& got, const ts::Array& want, double tol, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  expect_close(read(got), read(want), tol, what);
}

/// The computations the recorded values come from, by name.
std::map<std::string, std::function<ts::Array()>> cases() {
  std::map<std::string, std::function<ts::Array()>> m;
  auto x = [] { return arr({2, 3, 4}, 1); };
  const double inf = la::inf;
  m["vector_norm 2"] = [=] { return la::vector_norm(x()); };
  m["vector_norm 1 axis -1"] = [=] { return la::vector_norm(x(), 1, ts::Axes{-1}); };
  m["vector_norm inf axis 1"] = [=] { return la::vector_norm(x(), inf, ts::Axes{1}); };
  m["vector_norm -inf axes 0 2"] = [=] { return la::vector_norm(x(), -inf, ts::Axes{0, 2}); };
  m["vector_norm 0 axis 2 keepdims"] = [=] { return la::vector_norm(x(), 0, ts::Axes{2}, true); };
  m["vector_norm 3 axis 1"] = [=] { return la::vector_norm(x(), 3, ts::Axes{1}); };
  m["vector_norm 0.5 axis -1"] = [=] { return la::vector_norm(x(), 0.5, ts::Axes{-1}); };
  m["vector_norm -1 axis 0"] = [=] { return la::vector_norm(x(), -1, ts::Axes{0}); };
  m["vector_norm c64 2 axis -1"] = [] { return la::vector_norm(arr({3, 4}, 2, ts::c64), 2, ts::Axes{-1}); };
  m["vector_norm c128 3"] = [] { return la::vector_norm(arr({3, 4}, 2, ts::c128), 3); };
  m["vector_norm f64 2 axis 0"] = [] { return la::vector_norm(arr({3, 4}, 3, ts::f64), 2, ts::Axes{0}); };
  m["vector_norm i32 2"] = [] { return la::norm(arr({5}, 4, ts::i32)); };

  m["norm none 3-D"] = [=] { return la::norm(x()); };
  m["norm none 3-D keepdims"] = [=] { return la::norm(x(), std::nullopt, std::nullopt, true); };
  m["norm fro axes 0 2"] = [=] { return la::norm(x(), "fro", ts::Axes{0, 2}); };
  m["norm 1 axes 2 1"] = [=] { return la::norm(x(), 1, ts::Axes{2, 1}); };
  m["norm -1 axes 0 1 keepdims"] = [=] { return la::norm(x(), -1, ts::Axes{0, 1}, true); };
  m["norm inf axes 1 2"] = [=] { return la::norm(x(), inf, ts::Axes{1, 2}); };
  m["norm -inf axes 2 0 keepdims"] = [=] { return la::norm(x(), -inf, ts::Axes{2, 0}, true); };
  m["norm 1-D inf"] = [] { return la::norm(arr({5}, 5), la::inf); };
  m["norm 2-D 1"] = [] { return la::norm(arr({3, 4}, 6), 1); };
  m["norm 2-D inf"] = [] { return la::norm(arr({3, 4}, 6), la::inf); };
  m["norm axis 1 3"] = [=] { return la::norm(x(), 3, ts::Axes{1}); };
  m["matrix_norm fro"] = [=] { return la::matrix_norm(x()); };
  m["matrix_norm 1 keepdims"] = [=] { return la::matrix_norm(x(), 1, true); };
  m["matrix_norm -inf"] = [=] { return la::matrix_norm(x(), -inf); };
  m["matrix_norm c64 inf"] = [] { return la::matrix_norm(arr({2, 3, 3}, 7, ts::c64), la::inf); };

  m["cross 3 broadcast"] = [] { return la::cross(arr({2, 3}, 1), arr({3}, 2)); };
  m["cross 2x2"] = [] { return la::cross(arr({4, 2}, 3), arr({4, 2}, 4), la::CrossAxes{}); };
  m["cross 2x3"] = [] { return la::cross(arr({2}, 5), arr({3}, 6), la::CrossAxes{}); };
  m["cross 3x2"] = [] { return la::cross(arr({2, 3}, 5), arr({2}, 6), la::CrossAxes{}); };
  m["cross axes"] = [] { return la::cross(arr({3, 4}, 7), arr({4, 3}, 8), {.axisa = 0, .axisb = -1, .axisc = 0}); };
  m["cross f64 axis 0"] = [] { return la::cross(arr({3, 2}, 9, ts::f64), arr({3, 2}, 10, ts::f64), 0); };

  m["multi_dot 4"] = [] { return la::multi_dot({arr({3, 5}, 1), arr({5, 2}, 2), arr({2, 6}, 3), arr({6, 4}, 4)}); };
  m["multi_dot vector first"] = [] { return la::multi_dot({arr({3}, 1), arr({3, 4}, 2), arr({4, 2}, 3)}); };
  m["multi_dot vectors both"] = [] { return la::multi_dot({arr({3}, 1), arr({3, 4}, 2), arr({4}, 3)}); };
  m["multi_dot 2"] = [] { return la::multi_dot({arr({2, 3}, 1), arr({3}, 2)}); };
  m["multi_dot c128 3"] = [] {
    return la::multi_dot({arr({2, 3}, 1, ts::c128), arr({3, 3}, 2, ts::c128), arr({3, 5}, 3, ts::c128)});
  };

  m["diagonal 0"] = [=] { return la::diagonal(x()); };
  m["diagonal 1"] = [=] { return la::diagonal(x(), 1); };
  m["diagonal -1"] = [=] { return la::diagonal(x(), -1); };
  m["diagonal 5"] = [=] { return la::diagonal(x(), 5); };
  m["matrix_transpose"] = [=] { return la::matrix_transpose(x()); };
  m["vecdot c64 broadcast"] = [] { return la::vecdot(arr({2, 3}, 1, ts::c64), arr({3}, 2, ts::c64)); };
  m["vecdot axis 0"] = [] { return la::vecdot(arr({3, 2}, 3), arr({3, 1}, 4), 0); };
  m["vecdot i32"] = [] { return la::vecdot(arr({2, 4}, 5, ts::i32), arr({2, 4}, 6, ts::i32)); };
  m["outer"] = [] { return la::outer(arr({3}, 1), arr({2}, 2)); };
  m["trace 1"] = [=] { return la::trace(x(), 1); };
  m["trace -1"] = [=] { return la::trace(x(), -1); };
  m["trace i32 as f64"] = [] { return la::trace(arr({3, 3}, 2, ts::i32), 0, ts::f64); };

  for (int n : {0, 1, 2, 3, 5, 13})
    m["matrix_power " + std::to_string(n)] = [n] { return la::matrix_power(arr({3, 3}, 2), n); };
  m["matrix_power batched 6"] = [] { return la::matrix_power(arr({2, 2, 2}, 3), 6); };
  m["matrix_power i32 5"] = [] { return la::matrix_power(arr({2, 2}, 4, ts::i32), 5); };
  m["matrix_power f64 -3"] = [] { return la::matrix_power(spd(3, 5, ts::f64), -3); };

  m["block_diag"] = [] {
    return sla::block_diag({ts::Array(ts::Scalar(1.5f)), arr({2}, 1), arr({2, 3}, 2), arr({1, 1}, 0, ts::i32) * 0 + 4});
  };
  m["block_diag none"] = [] { return sla::block_diag({}); };
  m["toeplitz c"] = [] { return sla::toeplitz(arr({3}, 1)); };
  m["toeplitz c r"] = [] { return sla::toeplitz(arr({3}, 1), arr({4}, 2)); };
  m["toeplitz batched"] = [] { return sla::toeplitz(arr({2, 3}, 3), arr({4}, 4)); };
  m["toeplitz c64"] = [] { return sla::toeplitz(arr({3}, 5, ts::c64)); };
  m["hankel c"] = [] { return sla::hankel(arr({3}, 1)); };
  m["hankel c r"] = [] { return sla::hankel(arr({3}, 1), arr({4}, 2)); };
  m["hankel batched"] = [] { return sla::hankel(arr({2, 3}, 3), arr({2, 2}, 4)); };
  m["circulant"] = [] { return sla::circulant(arr({4}, 1)); };
  m["circulant batched i32"] = [] { return sla::circulant(arr({2, 3}, 2, ts::i32)); };
  return m;
}

TEST(LinalgComposedJax, MatchesRecordedValues) {
  const auto fns = cases();
  std::set<std::string> seen;
  for (const JaxValue& v : kJax) {
    SCOPED_TRACE(v.name);
    seen.insert(v.name);
    auto it = fns.find(v.name);
    ASSERT_NE(it, fns.end()) << "no computation for " << v.name;
    ts::Array got;
    try {
      got = it->second();
    } catch (const std::exception& e) {
      ADD_FAILURE() << v.name << " threw: " << e.what();
      continue;
    }
    const ts::DType dt = dtype_of(v.dtype);
    EXPECT_EQ(got.dtype(), dt);
    EXPECT_EQ(got.shape(), v.shape);
    std::vector<C> want;
    for (size_t i = 0; i < v.re.size(); ++i) want.emplace_back(v.re[i], v.im.empty() ? 0.0 : v.im[i]);
    expect_close(read(got), want, tol_of(dt), v.name);
  }
  for (const auto& [name, fn] : fns) EXPECT_TRUE(seen.count(name)) << name << " has no recorded value";
}

// ---- transformations ----

/// Float64 values without zeros or ties (the norms built on |x|, max and min are smooth
/// there): arr + 0.0137 i + 0.1.
ts::Array smooth(const ts::Shape& shape, int seed) {
  return arr(shape, seed, ts::f64) + ts::arange(0.0, double(ts::shape_size(shape)), 1.0, ts::f64).reshape(shape) * 0.0137 + 0.1;
}

/// grad(f) at x against central differences along a few directions.
void expect_grad_matches_differences(const std::function<ts::Array(const ts::Array&)>& f, const ts::Array& x,
                                     const std::string& what) {
  SCOPED_TRACE(what);
  const ts::Array g = ts::grad(f)(x);
  ASSERT_EQ(g.shape(), x.shape());
  const double eps = 1e-6;
  for (int seed = 0; seed < 3; ++seed) {
    const ts::Array v = arr(x.shape(), 20 + seed, ts::f64);
    const double fd = (f(x + v * eps).item<double>() - f(x - v * eps).item<double>()) / (2 * eps);
    const double ad = ts::sum(g * v).item<double>();
    EXPECT_NEAR(ad, fd, 1e-6 * (1 + std::abs(fd))) << "direction " << seed;
  }
}

TEST(LinalgComposedTransforms, GradientsMatchFiniteDifferences) {
  const ts::Array m = smooth({3, 4}, 1), b = smooth({2, 3, 4}, 2), sq = smooth({3, 3}, 3);
  using F = std::function<ts::Array(const ts::Array&)>;
  const std::vector<std::pair<std::string, std::pair<F, ts::Array>>> fs{
      {"vector_norm 2", {[](const ts::Array& x) { return la::vector_norm(x); }, b}},
      {"vector_norm 3 axis", {[](const ts::Array& x) { return ts::sum(la::vector_norm(x, 3, ts::Axes{1})); }, b}},
      {"vector_norm 0.5", {[](const ts::Array& x) { return la::vector_norm(x, 0.5); }, m}},
      {"vector_norm inf", {[](const ts::Array& x) { return ts::sum(la::vector_norm(x, la::inf, ts::Axes{0})); }, m}},
      {"vector_norm -inf", {[](const ts::Array& x) { return la::vector_norm(x, -la::inf); }, m}},
      {"matrix_norm fro", {[](const ts::Array& x) { return ts::sum(la::matrix_norm(x)); }, b}},
      {"matrix_norm 1", {[](const ts::Array& x) { return ts::sum(la::matrix_norm(x, 1)); }, b}},
      {"norm -inf axes", {[](const ts::Array& x) { return ts::sum(la::norm(x, -la::inf, ts::Axes{2, 0})); }, b}},
      {"cross", {[](const ts::Array& x) {
                   return ts::sum(la::cross(x, ts::flip(x, ts::Axes{0})) * ts::arange(0.0, 3.0, 1.0, ts::f64));
                 }, sq}},
      {"multi_dot", {[](const ts::Array& x) {
                       return ts::sum(la::multi_dot({x, ts::transpose(x), x, smooth({4, 2}, 5)}));
                     }, m}},
      {"matrix_power 5", {[](const ts::Array& x) { return ts::sum(la::matrix_power(x * 0.3, 5)); }, sq}},
      {"trace and diagonal", {[](const ts::Array& x) {
                                return ts::sum(la::trace(x, 1) * 2.0) + ts::sum(la::diagonal(x, -1) * la::diagonal(x, -1));
                              }, b}},
      {"vecdot", {[](const ts::Array& x) { return ts::sum(la::vecdot(x, x * x, 0)); }, m}},
      {"toeplitz hankel circulant", {[](const ts::Array& x) {
                                       return ts::sum(sla::toeplitz(x, x * 2.0) * smooth({4, 4}, 7)) +
                                              ts::sum(ts::square(sla::hankel(x))) + ts::sum(ts::sin(sla::circulant(x)));
                                     }, smooth({4}, 6)}},
      {"block_diag", {[](const ts::Array& x) {
                        return ts::sum(ts::square(sla::block_diag({x, x * 3.0})) * smooth({6, 8}, 8));
                      }, m}},
  };
  for (const auto& [name, fx] : fs) expect_grad_matches_differences(fx.first, fx.second, name);
}

TEST(LinalgComposedTransforms, JitMatchesEager) {
  auto f = [](const ts::Array& x, const ts::Array& c) {
    return std::make_tuple(la::norm(x, 1, ts::Axes{2, 1}), la::vector_norm(x, 3, ts::Axes{-1}, true),
                           la::matrix_norm(x, -la::inf), la::diagonal(x, 1), la::trace(x, -1),
                           la::multi_dot({x[{0}], ts::transpose(x[{1}]), x[{0}]}), sla::toeplitz(c),
                           sla::hankel(c, c * 2.0), sla::circulant(c), la::cross(x[{0, ts::Slice(0, 3), ts::Slice(0, 3)}], c[{ts::Slice(0, 3)}]));
  };
  const ts::Array x = arr({2, 3, 4}, 1), c = arr({5}, 2);
  auto eager = f(x, c);
  auto jitted = ts::jit(f)(x, c);
  auto check = [&]<size_t... I>(std::index_sequence<I...>) {
    (expect_close(std::get<I>(jitted), std::get<I>(eager), 1e-6, "output " + std::to_string(I)), ...);
  };
  check(std::make_index_sequence<10>{});
}

TEST(LinalgComposedTransforms, VmapMatchesALoop) {
  const ts::Array ms = arr({4, 3, 3}, 1), cs = arr({4, 5}, 2), r = arr({3}, 3), vs = arr({4, 3}, 4);
  const ts::Array pw = ts::vmap([](const ts::Array& m) { return la::matrix_power(m, 5); })(ms);
  const ts::Array tp = ts::vmap([](const ts::Array& c, const ts::Array& r) { return sla::toeplitz(c, r); },
                                {0, ts::none})(cs, r);
  const ts::Array nm = ts::vmap([](const ts::Array& m) { return la::norm(m, la::inf); })(ms);
  const ts::Array md = ts::vmap([](const ts::Array& m, const ts::Array& v) { return la::multi_dot({v, m, m, v}); })(ms, vs);
  const ts::Array cr = ts::vmap([](const ts::Array& m, const ts::Array& v) { return la::cross(m, v); }, {0, ts::none})(ms, r);
  for (int64_t i = 0; i < 4; ++i) {
    const ts::Array m = ms[{i}], v = vs[{i}];
    expect_close(pw[{i}], la::matrix_power(m, 5), 1e-6, "matrix_power");
    expect_close(tp[{i}], sla::toeplitz(cs[{i}], r), 0, "toeplitz");
    expect_close(nm[{i}], la::norm(m, la::inf), 1e-6, "norm");
    expect_close(md[{i}], la::multi_dot({v, m, m, v}), 1e-6, "multi_dot");
    expect_close(cr[{i}], la::cross(m, r), 1e-6, "cross");
  }
  // Batched inputs of the functions themselves give the same as vmap.
  expect_close(la::matrix_power(ms, 5), pw, 1e-6, "batched matrix_power");
  expect_close(sla::toeplitz(cs, r), tp, 0, "batched toeplitz");
}

// ---- errors ----

/// Runs f, expecting an exception of type E whose message contains every one of `parts`.
template <class E> void expect_error(const std::function<void()>& f, std::initializer_list<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "no exception";
  } catch (const E& e) {
    const std::string msg = e.what();
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' missing in: " << msg;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

TEST(LinalgComposedErrors, NameTheFunctionAndTheShape) {
  const ts::Array v = arr({3}, 1), m = arr({2, 3}, 2);
  expect_error<ts::ShapeError>([&] { la::matrix_power(m, 2); }, {"linalg.matrix_power", "square", "(2, 3)"});
  expect_error<ts::ShapeError>([&] { la::matrix_power(v, 2); }, {"linalg.matrix_power", "(3,)"});
  expect_error<ts::ShapeError>([&] { la::matrix_norm(v); }, {"linalg.matrix_norm", "(3,)"});
  expect_error<ts::ShapeError>([&] { la::diagonal(v); }, {"linalg.diagonal", "(3,)"});
  expect_error<ts::ShapeError>([&] { la::trace(v); }, {"linalg.trace", "(3,)"});
  expect_error<ts::ShapeError>([&] { la::matrix_transpose(v); }, {"linalg.matrix_transpose", "(3,)"});
  expect_error<ts::ValueError>([&] { la::norm(arr({2, 2, 2}, 1), 2); }, {"linalg.norm", "3 axes", "(2, 2, 2)"});
  expect_error<ts::ValueError>([&] { la::norm(m, 2, ts::Axes{1, -1}); }, {"linalg.norm", "differ"});
  expect_error<ts::ValueError>([&] { la::norm(m, 3); }, {"linalg.norm", "invalid order 3", "matrix norm"});
  expect_error<ts::ValueError>([&] { la::vector_norm(v, "fro"); }, {"linalg.vector_norm", "'fro'", "vector norm"});
  expect_error<ts::ValueError>([&] { la::norm(v, "nuc"); }, {"linalg.norm", "'nuc'"});
  expect_error<ts::ValueError>([&] { la::vector_norm(ts::zeros({0}), -la::inf); }, {"linalg.vector_norm", "-inf", "(0,)"});
  expect_error<ts::IndexError>([&] { la::vector_norm(m, 2, ts::Axes{2}); }, {"linalg.vector_norm"});
  expect_error<ts::ValueError>([&] { la::multi_dot({m}); }, {"linalg.multi_dot", "at least two"});
  expect_error<ts::ShapeError>([&] { la::multi_dot({m, m}); }, {"linalg.multi_dot", "(2, 3), (2, 3)"});
  expect_error<ts::ShapeError>([&] { la::multi_dot({m, arr({3, 2, 1}, 1), v}); }, {"linalg.multi_dot", "2-D"});
  expect_error<ts::ValueError>([&] { la::cross(arr({4}, 1), v, la::CrossAxes{}); }, {"cross", "2 or 3", "(4,)"});
  expect_error<ts::ValueError>([&] { la::cross(arr({2}, 1), arr({2}, 1)); }, {"linalg.cross", "3-vectors", "(2,)"});
  expect_error<ts::ShapeError>([&] { la::vecdot(m, v, 0); }, {"linalg.vecdot", "(2, 3)", "(3,)"});
  expect_error<ts::ShapeError>([&] { la::outer(m, v); }, {"linalg.outer", "1-D", "(2, 3)"});
  expect_error<ts::ShapeError>([&] { sla::block_diag({v, arr({1, 2, 2}, 1)}); }, {"block_diag", "(1, 2, 2)", "argument 1"});
  expect_error<ts::ShapeError>([&] { sla::hankel(ts::Array(1.0)); }, {"scipy.linalg.hankel", "1-D"});
  expect_error<ts::ShapeError>([&] { sla::toeplitz(arr({2, 3}, 1), arr({3, 3}, 1)); }, {"scipy.linalg.toeplitz"});
  // Under jit the same errors come while tracing.
  expect_error<ts::ShapeError>([&] { ts::jit([](const ts::Array& a) { return la::matrix_power(a, 3); })(m); },
                               {"linalg.matrix_power", "(2, 3)"});
}

TEST(LinalgComposedEdges, EmptyAndDegenerateInputs) {
  // Empty reductions follow JAX: inf-norms of nothing are 0, the 2-norm is 0.
  EXPECT_EQ(la::vector_norm(ts::zeros({0}), la::inf).item<float>(), 0.0f);
  EXPECT_EQ(la::matrix_norm(ts::zeros({2, 0}), 1).item<float>(), 0.0f);
  EXPECT_EQ(la::norm(ts::zeros({0, 3})).item<float>(), 0.0f);
  EXPECT_EQ(sla::toeplitz(ts::zeros({0})).shape(), (ts::Shape{0, 0}));
  EXPECT_EQ(sla::hankel(ts::zeros({2}), ts::zeros({0})).shape(), (ts::Shape{2, 0}));
  EXPECT_EQ(sla::circulant(ts::zeros({3, 0})).shape(), (ts::Shape{3, 0, 0}));
  EXPECT_EQ(la::diagonal(ts::zeros({2, 3}), -5).shape(), (ts::Shape{0}));
  EXPECT_EQ(la::matrix_power(ts::zeros({2, 0, 0}), 3).shape(), (ts::Shape{2, 0, 0}));
  // A scalar passes through toeplitz and circulant as a 1-vector.
  expect_close(sla::circulant(ts::Array(2.0f)), ts::full({1, 1}, 2.0f), 0, "circulant of a scalar");
  // The int order 0 is the number 0, not a null name.
  EXPECT_EQ(la::vector_norm(ts::Array({1.0f, 0.0f, 3.0f}), 0).item<float>(), 2.0f);
}

}  // namespace
