// ts::fft against a naive double-precision DFT written here: 1-D, 2-D and n-D transforms over
// various axes, lengths (cropped and zero-padded) and norms, in single and double precision,
// odd and even lengths; round trips; jit against eager; the plan cache; batches large enough
// to be split over threads; dtype rules and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <functional>
#include <numbers>
#include <optional>
#include <string>

#include "backend/cpu/fftw.h"
#include "ir/primitive.h"
#include "ir/trace.h"
#include "expect_error.h"
#include "tessel/tessel.h"

namespace ts = tessel;
using C = std::complex<double>;

namespace {

// ---- a naive reference, in double precision ----

/// Row-major data with its shape.
struct Ref {
  std::vector<C> v;
  ts::Shape shape;
};

/// Deterministic values in [-1, 1) (imaginary parts zero unless `complex`).
Ref values(const ts::Shape& shape, uint32_t seed, bool complex) {
  Ref r{std::vector<C>(size_t(ts::shape_size(shape))), shape};
  uint32_t s = seed * 2654435761u + 12345u;
  auto next = [&] {
    s = s * 1664525u + 1013904223u;
    return double(s >> 8) / double(1u << 24) * 2 - 1;
  };
  for (auto& c : r.v) {
    const double re = next(), im = next();
    c = C(re, complex ? im : 0.0);
  }
  return r;
}

ts::Array to_array(const Ref& r, ts::DType dt) {
  if (ts::is_complex(dt)) return ts::Array(std::vector<ts::complex128_t>(r.v.begin(), r.v.end()), r.shape).astype(dt);
  std::vector<double> re;
  for (auto c : r.v) re.push_back(c.real());
  return ts::Array(re, r.shape).astype(dt);
}

Ref from_array(const ts::Array& a) {
  auto z = a.astype(ts::c128).to_vector<ts::complex128_t>();
  return {std::vector<C>(z.begin(), z.end()), a.shape()};
}

/// Applies `f` to every line along `axis`, which gets length `out_len`.
Ref along(const Ref& x, int64_t axis, int64_t out_len, const std::function<std::vector<C>(const std::vector<C>&)>& f) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape[size_t(d)];
  for (size_t d = size_t(axis) + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
  const int64_t len = x.shape[size_t(axis)];
  Ref r{std::vector<C>(size_t(outer * out_len * inner)), x.shape};
  r.shape[size_t(axis)] = out_len;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      std::vector<C> line(static_cast<size_t>(len));
      for (int64_t k = 0; k < len; ++k) line[size_t(k)] = x.v[size_t((o * len + k) * inner + i)];
      const auto res = f(line);
      for (int64_t k = 0; k < out_len; ++k) r.v[size_t((o * out_len + k) * inner + i)] = res[size_t(k)];
    }
  return r;
}

std::vector<C> fit(std::vector<C> line, int64_t n) {
  line.resize(size_t(n), C(0));
  return line;
}

/// DFT of a line: sign -1 forward, +1 inverse (scaled by 1/n).
std::vector<C> dft(const std::vector<C>& x, int sign) {
  const int64_t n = int64_t(x.size());
  std::vector<C> y(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    C s = 0;
    for (int64_t t = 0; t < n; ++t)
      s += x[size_t(t)] * std::polar(1.0, sign * 2 * std::numbers::pi * double((k * t) % n) / double(n));
    y[size_t(k)] = sign > 0 ? s / double(n) : s;
  }
  return y;
}

/// Complex-to-real inverse of the n/2 + 1 non-negative frequencies in x (numpy's irfft).
std::vector<C> c2r(const std::vector<C>& x, int64_t n) {
  std::vector<C> full(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) full[size_t(k)] = k <= n / 2 ? x[size_t(k)] : std::conj(x[size_t(n - k)]);
  auto y = dft(full, +1);
  for (auto& c : y) c = C(c.real(), 0);
  return y;
}

double norm_scale(const std::string& norm, bool inverse, double n) {
  if (norm == "ortho") return inverse ? std::sqrt(n) : 1 / std::sqrt(n);
  if (norm == "forward") return inverse ? n : 1 / n;
  return 1;
}

enum class Kind { fft, ifft, rfft, irfft };

/// The reference transform over `axes` (canonical) with lengths `s`.
Ref reference(Kind kind, Ref x, const ts::Axes& axes, const ts::Shape& s, const std::string& norm) {
  const bool inverse = kind == Kind::ifft || kind == Kind::irfft;
  double total = 1;
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t ax = axes[i], n = s[i];
    total *= double(n);
    const bool last = i + 1 == axes.size();
    if (kind == Kind::irfft && last) {
      x = along(x, ax, n, [&](const std::vector<C>& l) { return c2r(fit(l, n / 2 + 1), n); });
    } else {
      x = along(x, ax, n, [&](const std::vector<C>& l) { return dft(fit(l, n), inverse ? +1 : -1); });
      if (kind == Kind::rfft && last)
        x = along(x, ax, n / 2 + 1, [&](const std::vector<C>& l) { return fit(l, n / 2 + 1); });
    }
  }
  for (auto& c : x.v) c *= norm_scale(norm, inverse, total);
  return x;
}

/// got == want within tol relative to the largest |want|.
void expect_close(const ts::Array& got, const Ref& want, double tol, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape) << what;
  const Ref g = from_array(got);
  double scale = 1e-300;
  for (auto c : want.v) scale = std::max(scale, std::abs(c));
  for (size_t i = 0; i < g.v.size(); ++i)
    ASSERT_LE(std::abs(g.v[i] - want.v[i]), tol * scale) << what << " at flat index " << i << ": got " << g.v[i]
                                                         << ", want " << want.v[i];
}

double tol_for(ts::DType dt) { return dt == ts::f64 || dt == ts::c128 ? 1e-12 : 2e-6; }

// ---- the cases ----

struct Case1d {
  ts::Shape shape;
  int64_t axis;
  std::optional<int64_t> n;
};

// Odd and even lengths, first/middle/last axes, lengths cropped and zero-padded.
const Case1d kCases1d[] = {
    {{8}, -1, std::nullopt}, {{7}, 0, std::nullopt}, {{1}, 0, std::nullopt}, {{3, 5}, 0, 8},
    {{3, 5}, 1, 3},          {{2, 6, 4}, 1, std::nullopt}, {{2, 6, 4}, -1, 9}, {{4, 3, 2}, 0, 5},
};

const char* const kNorms[] = {"backward", "ortho", "forward"};

std::string describe(const Case1d& c, const std::string& norm, ts::DType dt) {
  return "shape " + ts::shape_to_string(c.shape) + " axis " + std::to_string(c.axis) + " n " +
         (c.n ? std::to_string(*c.n) : std::string("none")) + " norm " + norm + " dtype " + ts::dtype_name(dt);
}

TEST(Fft, ComplexTransformsMatchNaiveDft) {
  for (const auto& c : kCases1d)
    for (const char* norm : kNorms)
      for (ts::DType dt : {ts::c64, ts::c128}) {
        SCOPED_TRACE(describe(c, norm, dt));
        const Ref x = values(c.shape, 1, true);
        const int64_t ax = c.axis < 0 ? c.axis + int64_t(c.shape.size()) : c.axis;
        const int64_t n = c.n.value_or(c.shape[size_t(ax)]);
        const ts::Array a = to_array(x, dt);
        const ts::Array f = ts::fft::fft(a, c.n, c.axis, norm), fi = ts::fft::ifft(a, c.n, c.axis, norm);
        EXPECT_EQ(f.dtype(), dt);
        EXPECT_EQ(fi.dtype(), dt);
        expect_close(f, reference(Kind::fft, x, {ax}, {n}, norm), tol_for(dt), "fft");
        expect_close(fi, reference(Kind::ifft, x, {ax}, {n}, norm), tol_for(dt), "ifft");
      }
}

TEST(Fft, RealTransformsMatchNaiveDft) {
  for (const auto& c : kCases1d)
    for (const char* norm : kNorms)
      for (ts::DType dt : {ts::f32, ts::f64}) {
        SCOPED_TRACE(describe(c, norm, dt));
        const int64_t ax = c.axis < 0 ? c.axis + int64_t(c.shape.size()) : c.axis;
        const int64_t n = c.n.value_or(c.shape[size_t(ax)]);
        const Ref x = values(c.shape, 2, false);
        const ts::Array r = ts::fft::rfft(to_array(x, dt), c.n, c.axis, norm);
        EXPECT_EQ(r.dtype(), ts::complex_dtype(dt));
        expect_close(r, reference(Kind::rfft, x, {ax}, {n}, norm), tol_for(dt), "rfft");
        // irfft reads n / 2 + 1 frequencies of a complex input (cropped or padded to them).
        const Ref z = values(c.shape, 3, true);
        const ts::DType cdt = ts::complex_dtype(dt);
        if (!c.n && c.shape[size_t(ax)] == 1) continue;  // default length 2 * (1 - 1) = 0: an error (tested below)
        const int64_t m = c.n.value_or(2 * (c.shape[size_t(ax)] - 1));
        const ts::Array ir = ts::fft::irfft(to_array(z, cdt), c.n, c.axis, norm);
        EXPECT_EQ(ir.dtype(), dt);
        expect_close(ir, reference(Kind::irfft, z, {ax}, {m}, norm), tol_for(dt), "irfft");
      }
}

struct CaseNd {
  ts::Shape shape;
  std::optional<ts::Shape> s;
  std::optional<ts::Axes> axes;
};

const CaseNd kCasesNd[] = {
    {{4, 6}, std::nullopt, std::nullopt},
    {{3, 5, 2}, std::nullopt, ts::Axes{0, 2}},
    {{3, 5, 2}, std::nullopt, ts::Axes{2, 0}},  // the order of axes only changes which axis irfftn halves
    {{3, 4, 5}, std::nullopt, std::nullopt},
    {{2, 3, 4, 5}, ts::Shape{4, 6}, std::nullopt},  // the last two axes, padded
    {{5, 7}, ts::Shape{3, 4}, ts::Axes{-1, 0}},     // cropped, axes reversed
    {{2, 3, 2, 3}, std::nullopt, ts::Axes{0, 1, 3}},
};

std::pair<ts::Axes, ts::Shape> resolve(const CaseNd& c, Kind kind) {
  const int64_t nd = int64_t(c.shape.size());
  ts::Axes axes;
  if (c.axes) {
    for (auto a : *c.axes) axes.push_back(a < 0 ? a + nd : a);
  } else {
    const int64_t k = c.s ? int64_t(c.s->size()) : nd;
    for (int64_t i = nd - k; i < nd; ++i) axes.push_back(i);
  }
  ts::Shape s;
  if (c.s) {
    s = *c.s;
  } else {
    for (auto a : axes) s.push_back(c.shape[size_t(a)]);
    if (kind == Kind::irfft) s.back() = 2 * (s.back() - 1);
  }
  return {axes, s};
}

TEST(Fft, MultiDimensionalTransformsMatchNaiveDft) {
  for (const auto& c : kCasesNd)
    for (const char* norm : kNorms)
      for (ts::DType dt : {ts::f32, ts::f64}) {
        SCOPED_TRACE("shape " + ts::shape_to_string(c.shape) + " norm " + norm + " dtype " + ts::dtype_name(dt));
        const ts::DType cdt = ts::complex_dtype(dt);
        const Ref z = values(c.shape, 4, true), x = values(c.shape, 5, false);
        auto [axes, s] = resolve(c, Kind::fft);
        expect_close(ts::fft::fftn(to_array(z, cdt), c.s, c.axes, norm), reference(Kind::fft, z, axes, s, norm),
                     tol_for(dt), "fftn");
        expect_close(ts::fft::ifftn(to_array(z, cdt), c.s, c.axes, norm), reference(Kind::ifft, z, axes, s, norm),
                     tol_for(dt), "ifftn");
        expect_close(ts::fft::rfftn(to_array(x, dt), c.s, c.axes, norm), reference(Kind::rfft, x, axes, s, norm),
                     tol_for(dt), "rfftn");
        auto [iaxes, is] = resolve(c, Kind::irfft);
        expect_close(ts::fft::irfftn(to_array(z, cdt), c.s, c.axes, norm), reference(Kind::irfft, z, iaxes, is, norm),
                     tol_for(dt), "irfftn");
      }
}

TEST(Fft, TwoDimensionalFunctionsUseTheLastTwoAxesByDefault) {
  const Ref z = values({3, 4, 6}, 6, true), x = values({3, 4, 6}, 7, false);
  const ts::Array zc = to_array(z, ts::c128), xr = to_array(x, ts::f64);
  expect_close(ts::fft::fft2(zc), reference(Kind::fft, z, {1, 2}, {4, 6}, "backward"), 1e-12, "fft2");
  expect_close(ts::fft::ifft2(zc, ts::Shape{5, 3}), reference(Kind::ifft, z, {1, 2}, {5, 3}, "backward"), 1e-12,
               "ifft2");
  expect_close(ts::fft::rfft2(xr, std::nullopt, {0, 2}), reference(Kind::rfft, x, {0, 2}, {3, 6}, "backward"), 1e-12,
               "rfft2");
  expect_close(ts::fft::irfft2(zc, ts::Shape{4, 7}), reference(Kind::irfft, z, {1, 2}, {4, 7}, "backward"), 1e-12,
               "irfft2");
}

TEST(Fft, RoundTripsRecoverTheInput) {
  for (ts::DType dt : {ts::f32, ts::f64})
    for (int64_t n : {1, 2, 7, 8, 15, 64}) {
      SCOPED_TRACE("n " + std::to_string(n) + " " + ts::dtype_name(dt));
      const Ref x = values({3, n}, 8, false);
      const ts::Array a = to_array(x, dt);
      expect_close(ts::fft::irfft(ts::fft::rfft(a), n), x, 4 * tol_for(dt), "irfft(rfft(x), n)");
      expect_close(ts::real(ts::fft::ifft(ts::fft::fft(a))), x, 4 * tol_for(dt), "ifft(fft(x))");
      expect_close(ts::fft::irfftn(ts::fft::rfftn(a), ts::Shape{3, n}), x, 4 * tol_for(dt), "irfftn(rfftn(x))");
      for (const char* norm : kNorms)
        expect_close(ts::fft::irfft(ts::fft::rfft(a, std::nullopt, -1, norm), n, -1, norm), x, 4 * tol_for(dt), norm);
    }
}

TEST(Fft, JitMatchesEager) {
  const ts::Array x = to_array(values({4, 6}, 9, false), ts::f32);
  const ts::Array z = to_array(values({4, 6}, 10, true), ts::c64);
  auto f = [](const ts::Array& r, const ts::Array& c) {
    return std::make_tuple(ts::fft::rfft(r, 8, 0), ts::fft::irfft(c, 9, -1, "ortho"), ts::fft::fft2(c),
                           ts::fft::ifftn(r, std::nullopt, ts::Axes{1}, "forward"));
  };
  auto [a, b, c, d] = f(x, z);
  auto [ja, jb, jc, jd] = ts::jit(f)(x, z);
  const std::vector<std::pair<ts::Array, ts::Array>> pairs{{ja, a}, {jb, b}, {jc, c}, {jd, d}};
  for (const auto& [got, want] : pairs) {
    ASSERT_EQ(got.dtype(), want.dtype());
    expect_close(got, from_array(want), 1e-6, "jit vs eager");
  }
  // The program shows one `fft` equation per transform.
  const std::string prog = ts::make_program([](const ts::Array& r) { return ts::fft::rfft(r); }, x).to_string();
  EXPECT_NE(prog.find("fft[fft_lengths=(6,), fft_type=rfft]"), std::string::npos) << prog;
}

TEST(Fft, PlansAreCachedPerShape) {
  const ts::Array z = to_array(values({3, 10}, 11, true), ts::c64);
  ts::fft::fft(z).block_until_ready();
  const size_t after_first = tessel::cpu::fft_plan_count();
  for (int i = 0; i < 3; ++i) ts::fft::fft(z).block_until_ready();
  EXPECT_EQ(tessel::cpu::fft_plan_count(), after_first) << "the same transform made a new plan";
  ts::fft::fft(z, 11).block_until_ready();  // a new length needs a new plan
  EXPECT_GT(tessel::cpu::fft_plan_count(), after_first);
}

TEST(Fft, LargeBatchesSplitOverThreadsMatchTheReference) {
  // 777 transforms: enough work to be split into chunks, with a smaller last chunk.
  for (ts::DType dt : {ts::f32, ts::f64}) {
    SCOPED_TRACE(ts::dtype_name(dt));
    const Ref z = values({777, 48}, 12, true), x = values({777, 48}, 13, false);
    const ts::Array zc = to_array(z, ts::complex_dtype(dt)), xr = to_array(x, dt);
    expect_close(ts::fft::fft(zc), reference(Kind::fft, z, {1}, {48}, "backward"), tol_for(dt), "fft");
    expect_close(ts::fft::ifft(zc), reference(Kind::ifft, z, {1}, {48}, "backward"), tol_for(dt), "ifft");
    expect_close(ts::fft::rfft(xr), reference(Kind::rfft, x, {1}, {48}, "backward"), tol_for(dt), "rfft");
    expect_close(ts::fft::irfft(zc, 46), reference(Kind::irfft, z, {1}, {46}, "backward"), tol_for(dt), "irfft");
  }
}

TEST(Fft, ConcurrentTransformsOnAllDevicesAgree) {
  // Every virtual device runs its transforms on its own stream at the same time; each
  // device gets lengths of its own, so plans are made concurrently (serialized by the
  // planner mutex) while other devices execute theirs.
  const auto devs = ts::devices();
  std::vector<ts::Array> outs;
  std::vector<Ref> want;
  for (size_t d = 0; d < devs.size(); ++d) {
    const int64_t n = 40 + int64_t(d);
    const Ref z = values({64, n}, 100 + uint32_t(d), true);
    const ts::Array x = ts::device_put(to_array(z, ts::c128), devs[d]);
    outs.push_back(ts::fft::irfft(ts::fft::fft(x), n + 3));
    want.push_back(reference(Kind::irfft, reference(Kind::fft, z, {1}, {n}, "backward"), {1}, {n + 3}, "backward"));
  }
  for (size_t d = 0; d < devs.size(); ++d) expect_close(outs[d], want[d], 1e-12, "device " + std::to_string(d));
}

TEST(Fft, IrfftLeavesItsInputIntact) {
  // FFTW's complex-to-real transforms overwrite their input; the kernel runs on a copy.
  const ts::Array z = to_array(values({5, 9}, 14, true), ts::c128);
  const auto before = z.to_vector<ts::complex128_t>();
  ts::fft::irfftn(z).block_until_ready();
  ts::fft::irfft(z, 16).block_until_ready();
  EXPECT_EQ(z.to_vector<ts::complex128_t>(), before);
}

TEST(Fft, InputDtypesConvertLikeJaxNumpy) {
  EXPECT_EQ(ts::fft::fft(ts::arange(4, ts::i32)).dtype(), ts::c64);
  EXPECT_EQ(ts::fft::fft(ts::arange(4, ts::i64)).dtype(), ts::c128);
  EXPECT_EQ(ts::fft::fft(ts::ones({4}, ts::f64)).dtype(), ts::c128);
  EXPECT_EQ(ts::fft::ifft(ts::ones({4}, ts::bool_)).dtype(), ts::c64);
  EXPECT_EQ(ts::fft::rfft(ts::ones({4}, ts::f16)).dtype(), ts::c64);
  EXPECT_EQ(ts::fft::rfft(ts::arange(4, ts::i32)).dtype(), ts::c64);
  EXPECT_EQ(ts::fft::irfft(ts::ones({4}, ts::f32)).dtype(), ts::f32);
  EXPECT_EQ(ts::fft::irfft(ts::ones({4}, ts::c128)).dtype(), ts::f64);
  // fft of integers: [0, 1, 2, 3] -> [6, -2+2i, -2, -2-2i].
  const auto v = ts::fft::fft(ts::arange(4, ts::i32)).to_vector<ts::complex64_t>();
  const std::vector<ts::complex64_t> want{{6, 0}, {-2, 2}, {-2, 0}, {-2, -2}};
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(std::abs(v[i] - want[i]), 0, 1e-6) << i;
  // Transforming no axes only converts (like jnp.fft.fftn of a rank-0 array).
  EXPECT_EQ(ts::fft::fftn(ts::Array(2.0f)).dtype(), ts::c64);
}

TEST(Fft, FrequenciesAndShifts) {
  auto vals = [](const ts::Array& a) { return a.astype(ts::f64).to_vector<double>(); };
  auto near = [](const std::vector<double>& got, const std::vector<double>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;
  };
  near(vals(ts::fft::fftfreq(5, 0.1)), {0, 2, 4, -4, -2});
  near(vals(ts::fft::fftfreq(4)), {0, 0.25, -0.5, -0.25});
  near(vals(ts::fft::rfftfreq(5)), {0, 0.2, 0.4});
  near(vals(ts::fft::rfftfreq(4, 2.0)), {0, 0.125, 0.25});
  EXPECT_EQ(ts::fft::fftfreq(4, 1.0, ts::f64).dtype(), ts::f64);
  near(vals(ts::fft::fftshift(ts::arange(5, ts::f32))), {3, 4, 0, 1, 2});
  near(vals(ts::fft::ifftshift(ts::fft::fftshift(ts::arange(5, ts::f32)))), {0, 1, 2, 3, 4});
  near(vals(ts::fft::fftshift(ts::fft::fftfreq(4))), {-0.5, -0.25, 0, 0.25});
  const ts::Array m = ts::arange(6, ts::f32).reshape({2, 3});
  near(vals(ts::fft::fftshift(m)), {5, 3, 4, 2, 0, 1});
  near(vals(ts::fft::fftshift(m, ts::Axes{1})), {2, 0, 1, 5, 3, 4});
}

// ---- errors ----

using tessel_test::expect_error;

TEST(FftErrors, PublicFunctionsNameTheOpAndTheValue) {
  const ts::Array x = ts::ones({3, 4}, ts::f32), z = ts::ones({3, 4}, ts::c64);
  expect_error<ts::DTypeError>([&] { ts::fft::rfft(z); }, {"fft.rfft", "complex64", "real"});
  expect_error<ts::DTypeError>([&] { ts::fft::rfftn(z); }, {"fft.rfftn", "complex64"});
  expect_error<ts::IndexError>([&] { ts::fft::fft(x, std::nullopt, 2); }, {"fft", "2"});
  expect_error<ts::IndexError>([&] { ts::fft::irfft(z, std::nullopt, -3); }, {"fft.irfft", "-3"});
  expect_error<ts::IndexError>([&] { ts::fft::fftn(x, std::nullopt, ts::Axes{0, 5}); }, {"fft.fftn", "5"});
  expect_error<ts::ValueError>([&] { ts::fft::fft(x, 0); }, {"fft.fft", "n must be >= 1", "0"});
  expect_error<ts::ValueError>([&] { ts::fft::irfft(z, -2); }, {"fft.irfft", "-2"});
  expect_error<ts::ValueError>([&] { ts::fft::fft2(x, ts::Shape{3, 0}); }, {"fft.fft2", "(3, 0)"});
  expect_error<ts::ValueError>([&] { ts::fft::fft(x, std::nullopt, -1, "bogus"); }, {"fft.fft", "\"bogus\"", "ortho"});
  expect_error<ts::ValueError>([&] { ts::fft::fftn(x, ts::Shape{4}, ts::Axes{0, 1}); }, {"fft.fftn", "(4,)", "(0, 1)"});
  expect_error<ts::ValueError>([&] { ts::fft::fftn(x, std::nullopt, ts::Axes{1, -1}); }, {"fft.fftn", "twice"});
  expect_error<ts::ShapeError>([&] { ts::fft::fftn(x, ts::Shape{2, 2, 2}); }, {"fft.fftn", "(2, 2, 2)", "(3, 4)"});
  // An empty fft or irfft is empty, as in JAX (tests/ops/numerics_test.cpp); rfft has no length.
  expect_error<ts::ValueError>([&] { ts::fft::rfft(ts::ones({0, 3}), std::nullopt, 0); }, {"fft.rfft", "size 0"});
  expect_error<ts::ValueError>([&] { ts::fft::fftfreq(0); }, {"fft.fftfreq", "0"});
  // Under jit the same errors come while tracing.
  expect_error<ts::ValueError>([&] { ts::jit([](const ts::Array& a) { return ts::fft::fft(a, 0); })(x); },
                               {"fft.fft", "0"});
}

TEST(FftErrors, PrimitiveChecksDtypeAndShape) {
  using ts::fft::FftType;
  const auto& p = tessel::ir::lookup_primitive("fft");
  auto bind = [&](const ts::Array& x, const char* type, ts::Shape n) {
    return tessel::detail::bind1(p, {x}, tessel::ir::Params{{"fft_type", std::string(type)}, {"fft_lengths", n}});
  };
  expect_error<ts::DTypeError>([&] { bind(ts::ones({4}, ts::f32), "fft", {4}); },
                               {"fft (fft)", "float32", "complex64"});
  expect_error<ts::DTypeError>([&] { bind(ts::ones({4}, ts::f32), "irfft", {6}); }, {"fft (irfft)", "float32"});
  expect_error<ts::DTypeError>([&] { bind(ts::ones({4}, ts::c64), "rfft", {4}); }, {"fft (rfft)", "complex64"});
  expect_error<ts::DTypeError>([&] { bind(ts::ones({4}, ts::f16), "rfft", {4}); }, {"fft (rfft)", "float16"});
  expect_error<ts::ShapeError>([&] { ts::fft::lax_fft(ts::ones({3, 5}), FftType::FFT, {4}); },
                               {"fft (fft)", "(3, 5)", "(4,)"});
  expect_error<ts::ShapeError>([&] { ts::fft::lax_fft(ts::ones({3, 5}), FftType::IRFFT, {3, 6}); },
                               {"fft (irfft)", "(3, 4)", "n / 2 + 1"});
  expect_error<ts::ShapeError>([&] { ts::fft::lax_fft(ts::ones({5}), FftType::RFFT, {2, 5}); },
                               {"fft (rfft)", "(5,)", "(2, 5)"});
  expect_error<ts::ValueError>([&] { ts::fft::lax_fft(ts::ones({5}), FftType::FFT, {0}); }, {"fft (fft)", "(0,)"});
  expect_error<ts::DTypeError>([&] { ts::fft::lax_fft(ts::ones({5}, ts::c64), FftType::RFFT, {5}); },
                               {"lax_fft", "complex64"});
  // lax_fft with no lengths converts only.
  EXPECT_EQ(ts::fft::lax_fft(ts::ones({5}), FftType::FFT, {}).dtype(), ts::c64);
}

}  // namespace
