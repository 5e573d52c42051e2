// Transformation rules of the `fft` primitive through ts::fft: jvp against finite
// differences, vjp against jvp (the transposes of all four transform types), both under jit,
// and vmap against a loop with the mapped axis before, among and after the transformed axes.
// Complex values enter as (real, imaginary) pairs of float64 arrays and leave as real and
// imaginary parts concatenated, so the checks work on real arrays.
#include "transforms/check_transforms.h"

namespace {
using namespace transform_testing;
using V = std::vector<ts::Array>;

/// Real and imaginary parts of z, concatenated along the last axis.
ts::Array parts(const ts::Array& z) { return ts::concatenate({ts::real(z), ts::imag(z)}, -1); }

struct FftCase {
  const char* name;
  /// Complex cases take (re, im) arrays of `shape`; real ones one array.
  bool complex_input;
  ts::Shape shape;
  std::function<ts::Array(const ts::Array&)> f;  // on the (complex or real) input; real result
};

const FftCase kCases[] = {
    {"fft", true, {6}, [](const ts::Array& z) { return parts(ts::fft::fft(z)); }},
    {"fft_padded_axis0_ortho", true, {4, 3}, [](const ts::Array& z) { return parts(ts::fft::fft(z, 6, 0, "ortho")); }},
    {"ifft_odd", true, {2, 5}, [](const ts::Array& z) { return parts(ts::fft::ifft(z)); }},
    {"ifft_cropped_forward", true, {2, 5},
     [](const ts::Array& z) { return parts(ts::fft::ifft(z, 3, -1, "forward")); }},
    {"rfft_even", false, {8}, [](const ts::Array& x) { return parts(ts::fft::rfft(x)); }},
    {"rfft_odd_axis0", false, {7, 2}, [](const ts::Array& x) { return parts(ts::fft::rfft(x, std::nullopt, 0)); }},
    {"rfft_padded_ortho", false, {3, 5}, [](const ts::Array& x) { return parts(ts::fft::rfft(x, 8, -1, "ortho")); }},
    {"irfft_even", true, {5}, [](const ts::Array& z) { return ts::fft::irfft(z); }},
    {"irfft_odd", true, {2, 4}, [](const ts::Array& z) { return ts::fft::irfft(z, 7); }},
    {"irfft_axis0_forward", true, {4, 3}, [](const ts::Array& z) { return ts::fft::irfft(z, 6, 0, "forward"); }},
    {"fft2", true, {3, 4}, [](const ts::Array& z) { return parts(ts::fft::fft2(z)); }},
    {"ifftn_axes", true, {3, 2, 4},
     [](const ts::Array& z) { return parts(ts::fft::ifftn(z, std::nullopt, ts::Axes{0, 2})); }},
    {"rfftn", false, {4, 5}, [](const ts::Array& x) { return parts(ts::fft::rfftn(x)); }},
    {"rfftn_3d_odd", false, {3, 2, 5}, [](const ts::Array& x) { return parts(ts::fft::rfftn(x)); }},
    {"irfftn", true, {4, 4}, [](const ts::Array& z) { return ts::fft::irfftn(z, ts::Shape{4, 6}); }},
    {"irfftn_odd", true, {3, 2, 3}, [](const ts::Array& z) { return ts::fft::irfftn(z, ts::Shape{3, 2, 5}); }},
    {"fftshift_of_fft", true, {5}, [](const ts::Array& z) { return parts(ts::fft::fftshift(ts::fft::fft(z))); }},
};

std::string case_name(const testing::TestParamInfo<FftCase>& i) { return i.param.name; }
void PrintTo(const FftCase& c, std::ostream* os) { *os << c.name; }

/// The case as a function of real arrays.
Fn as_real_fn(const FftCase& c) {
  if (c.complex_input) return [f = c.f](const V& x) { return f(ts::complex(x[0], x[1])); };
  return [f = c.f](const V& x) { return f(x[0]); };
}

V real_args(const FftCase& c, const ts::Shape& shape, uint32_t seed) {
  if (c.complex_input) return {uniform(shape, seed), uniform(shape, seed + 1)};
  return {uniform(shape, seed)};
}

class FftRules : public testing::TestWithParam<FftCase> {};

TEST_P(FftRules, JvpAndVjpMatchFiniteDifferences) {
  const auto& c = GetParam();
  check_grads(as_real_fn(c), real_args(c, c.shape, 1));
}

TEST_P(FftRules, VmapMatchesLoopAtEveryBatchPosition) {
  const auto& c = GetParam();
  const int64_t rank = int64_t(c.shape.size());
  const int64_t out_rank = as_real_fn(c)(real_args(c, c.shape, 1)).ndim();
  // Batch axis before, among and after the transformed axes (the kernel needs it in front
  // when it falls among them); outputs mapped to the first and to the last axis.
  for (int64_t at = 0; at <= rank; ++at) {
    SCOPED_TRACE("batch axis at " + std::to_string(at));
    ts::Shape shape = c.shape;
    shape.insert(shape.begin() + at, 3);
    const V args = real_args(c, shape, 10 + uint32_t(at));
    const std::vector<ts::AxisSpec> in_axes(args.size(), at);
    check_vmap(as_real_fn(c), args, in_axes, 0);
    check_vmap(as_real_fn(c), args, in_axes, out_rank);
  }
}

INSTANTIATE_TEST_SUITE_P(Transforms, FftRules, testing::ValuesIn(kCases), case_name);

/// The cases with complex input (two real arguments).
std::vector<FftCase> complex_cases() {
  std::vector<FftCase> r;
  for (const auto& c : kCases)
    if (c.complex_input) r.push_back(c);
  return r;
}

class FftComplexInputRules : public testing::TestWithParam<FftCase> {};

TEST_P(FftComplexInputRules, VmapWithOnePartUnbatched) {
  // complex(re, im) with only re mapped: im is broadcast before the transform.
  const auto& c = GetParam();
  ts::Shape shape = c.shape;
  shape.insert(shape.begin(), 3);
  check_vmap(as_real_fn(c), {uniform(shape, 21), uniform(c.shape, 22)}, {0, ts::none});
  check_vmap(as_real_fn(c), {uniform(c.shape, 23), uniform(shape, 24)}, {ts::none, 0});
}

INSTANTIATE_TEST_SUITE_P(Transforms, FftComplexInputRules, testing::ValuesIn(complex_cases()), case_name);

// ---- hand-derived derivatives and nesting ----

TEST(FftRulesFormulas, ParsevalGradientIsScaledInput) {
  // sum |fft(x)|^2 = n sum |x|^2 for real x, so its gradient is 2 n x.
  const ts::Array x = uniform({3, 8}, 31);
  auto energy = [](const ts::Array& v) {
    const ts::Array z = ts::fft::fft(v);
    return ts::sum(ts::real(z) * ts::real(z) + ts::imag(z) * ts::imag(z));
  };
  expect_close(ts::grad(energy)(x), x * 16.0, 1e-12, "grad");
  expect_close(ts::jit(ts::grad(energy))(x), x * 16.0, 1e-12, "jit(grad)");
  // With norm="ortho" the transform is unitary: the gradient is 2 x.
  auto unitary = [](const ts::Array& v) {
    const ts::Array z = ts::fft::rfft(v, std::nullopt, -1, "ortho");
    const ts::Array w = ts::fft::irfft(z, 8, -1, "ortho");
    return ts::sum(w * w);
  };
  expect_close(ts::grad(unitary)(x), x * 2.0, 1e-12, "grad through rfft and irfft");
}

TEST(FftRulesFormulas, VmapOfGradAndGradOfVmapAgree) {
  const ts::Array xs = uniform({4, 6}, 41), w = uniform({6}, 42);
  auto f = [&](const ts::Array& v) {
    const ts::Array z = ts::fft::rfft(v * v);
    return ts::sum(ts::fft::irfft(z * ts::fft::rfft(w), 6));
  };
  const ts::Array per_row = ts::vmap(ts::grad(f))(xs);
  auto total = [&](const ts::Array& m) { return ts::sum(ts::vmap(f)(m)); };
  expect_close(per_row, ts::grad(total)(xs), 1e-12, "vmap(grad) vs grad(sum(vmap))");
  expect_close(ts::jit(ts::vmap(ts::grad(f)))(xs), per_row, 1e-12, "jit(vmap(grad))");
}

TEST(FftRulesFormulas, SecondDerivativeThroughTransposeOfTranspose) {
  // g(x) = sum(irfft(rfft(x)^2)): the hessian-vector product exercises the transposes of
  // rfft and irfft twice; compare against forward-over-reverse with finite differences.
  const ts::Array x = uniform({8}, 51);
  auto g = [](const ts::Array& v) {
    const ts::Array z = ts::fft::rfft(v);
    return ts::sum(ts::fft::irfft(z * z, 8) * ts::arange(0.0, 8.0, 1.0, ts::f64));
  };
  check_grads([&](const V& a) { return ts::grad(g)(a[0]); }, {x}, 1e-6);
}

}  // namespace
