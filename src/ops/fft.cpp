// The `fft` primitive (lax.fft_p): a discrete Fourier transform over the trailing
// len(fft_lengths) dimensions of its operand (the leading ones are a batch), of one of four
// types (params fft_type = fft / ifft / rfft / irfft, fft_lengths). The inverse types are
// scaled by 1 / prod(fft_lengths). The kernel calls FFTW (backend/cpu/fftw.h).
#include "ops/fft.h"

#include "backend/cpu/fftw.h"
#include "ops/rule_util.h"
#include "tessel/fft.h"

namespace tessel::ops {

DType fft_complex_dtype(DType d) {
  if (is_complex(d)) return d;
  return d == DType::float64 || d == DType::int64 || d == DType::uint64 ? DType::complex128 : DType::complex64;
}

DType fft_real_dtype(DType d) {
  return d == DType::float64 || d == DType::int64 || d == DType::uint64 ? DType::float64 : DType::float32;
}

namespace {

using fft::FftType;

const char* type_name(FftType t) {
  switch (t) {
    case FftType::FFT: return "fft";
    case FftType::IFFT: return "ifft";
    case FftType::RFFT: return "rfft";
    case FftType::IRFFT: return "irfft";
  }
  return "?";
}

FftType type_of(const Params& p) {
  const std::string& s = p.get<std::string>("fft_type");
  for (FftType t : {FftType::FFT, FftType::IFFT, FftType::RFFT, FftType::IRFFT})
    if (s == type_name(t)) return t;
  throw ValueError("fft: unknown fft_type '" + s + "'; expected fft, ifft, rfft or irfft");
}

Params fft_params(FftType t, const Shape& lengths) {
  return Params{{"fft_type", std::string(type_name(t))}, {"fft_lengths", lengths}};
}

// ---- abstract evaluation ----

std::vector<Aval> fft_aval(std::span<const Aval> ins, const Params& p) {
  const Aval& x = ins[0];
  const FftType t = type_of(p);
  const Shape& n = p.get_ints("fft_lengths");
  const std::string op = std::string("fft (") + type_name(t) + ")";
  if (n.empty())
    throw ValueError(op + ": fft_lengths is empty; name the length of at least one transformed dimension");
  for (auto v : n)
    if (v < 1) throw ValueError(op + ": fft_lengths must be >= 1, got " + shape_to_string(n));
  const int64_t k = int64_t(n.size());
  if (k > x.ndim())
    throw ShapeError(op + ": an input of shape " + shape_to_string(x.shape) +
                     " has fewer dimensions than fft_lengths " + shape_to_string(n) +
                     "; the transform acts on the trailing dimensions");
  if (t == FftType::RFFT) {
    if (x.dtype != DType::float32 && x.dtype != DType::float64)
      throw DTypeError(op + ": input must be float32 or float64, got " + dtype_name(x.dtype) +
                       "; rfft transforms real data (ts::fft::rfft converts integer and half-precision inputs)");
  } else if (!is_complex(x.dtype)) {
    throw DTypeError(op + ": input must be complex64 or complex128, got " + dtype_name(x.dtype) +
                     "; convert it first (ts::fft::" + type_name(t) + " does this for real and integer inputs)");
  }
  const Shape lead(x.shape.begin(), x.shape.end() - k), trail(x.shape.end() - k, x.shape.end());
  Shape half = n;  // the frequency side of the real transforms
  half.back() = n.back() / 2 + 1;
  const Shape& want = t == FftType::IRFFT ? half : n;
  if (trail != want)
    throw ShapeError(op + ": the trailing dimensions of input shape " + shape_to_string(x.shape) + " must be " +
                     shape_to_string(want) + " for fft_lengths " + shape_to_string(n) +
                     (t == FftType::IRFFT ? " (the last one holds n / 2 + 1 frequencies)" : "") + ", got " +
                     shape_to_string(trail));
  Shape out = lead;
  const Shape& result = t == FftType::RFFT ? half : n;
  out.insert(out.end(), result.begin(), result.end());
  const DType dt = t == FftType::RFFT ? complex_dtype(x.dtype) : t == FftType::IRFFT ? real_dtype(x.dtype) : x.dtype;
  return {Aval(out, dt, x.weak_type)};
}

// ---- kernel ----

void fft_kernel(const KernelCall& c) {
  const FftType t = type_of(c.params);
  const Shape& n = c.params.get_ints("fft_lengths");
  const Aval& x = c.in_avals[0];
  if (c.out_avals[0].size() == 0) return;  // an empty batch: nothing to transform
  int64_t howmany = 1;
  for (int64_t i = 0; i < x.ndim() - int64_t(n.size()); ++i) howmany *= x.shape[size_t(i)];
  const bool dbl = x.dtype == DType::float64 || x.dtype == DType::complex128;
  const cpu::FftKind kind = t == FftType::FFT    ? cpu::FftKind::kForward
                            : t == FftType::IFFT ? cpu::FftKind::kInverse
                            : t == FftType::RFFT ? cpu::FftKind::kRealForward
                                                 : cpu::FftKind::kRealInverse;
  cpu::fft(kind, dbl, n, howmany, c.ins[0], c.outs[0]);
}

// ---- transformation rules ----
// Linear in its operand. Transposes follow JAX's convention for complex cotangents
// (docs/transformations.md): the transpose of a complex-linear map is its plain transpose,
// not its adjoint, so FFT and IFFT (symmetric matrices) transpose to themselves.

/// RFFT is x -> FFT(x as complex) cropped to n / 2 + 1 frequencies on the last axis; its
/// transpose zero-pads the cotangent back to n, applies FFT and keeps the real part.
Array rfft_transpose(const ir::Primitive& self, const Array& ct, const Shape& n) {
  std::vector<std::array<int64_t, 3>> cfg(size_t(ct.ndim()), {0, 0, 0});
  cfg.back()[1] = n.back() - (n.back() / 2 + 1);
  const Array full = lax_pad(ct, Scalar(0.0), cfg);
  return real(bind1(self, {full}, fft_params(FftType::FFT, n)));
}

/// IRFFT reads each frequency 0 < k < n / 2 twice (as itself and as its mirror image) and
/// the others once; its transpose is the conjugated RFFT of the cotangent, weighted by
/// those counts and scaled by 1 / prod(n).
Array irfft_transpose(const ir::Primitive& self, const Array& ct, const Shape& n) {
  const Array x = bind1(self, {ct}, fft_params(FftType::RFFT, n));
  const int64_t m = n.back() / 2 + 1, total = shape_size(n);
  std::vector<double> w(static_cast<size_t>(m));
  for (int64_t k = 0; k < m; ++k) {
    const bool single = k == 0 || (n.back() % 2 == 0 && k == m - 1);
    w[size_t(k)] = (single ? 1.0 : 2.0) / double(total);
  }
  const Array mask = Array(w).astype(real_dtype(x.dtype()));
  return conj(multiply(x, mask));
}

std::vector<Array> fft_transpose(const ir::Primitive& self, std::span<const Array> cts, std::span<const Array>,
                                 std::span<const Aval>, const Params& p) {
  if (is_zero(cts[0])) return {Array()};
  const Shape& n = p.get_ints("fft_lengths");
  switch (type_of(p)) {
    case FftType::RFFT: return {rfft_transpose(self, cts[0], n)};
    case FftType::IRFFT: return {irfft_transpose(self, cts[0], n)};
    default: return {bind1(self, {cts[0]}, p)};
  }
}

// The kernel treats leading dimensions as a batch: a batch dimension among them stays where
// it is; one among the transformed dimensions moves to the front.
Batched fft_batch(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                  const BatchAxis&, const Params& p) {
  const int64_t bd = dims[0], k = int64_t(p.get_ints("fft_lengths").size());
  if (bd < ins[0].ndim() - k) return {detail::bind(self, ins, p), {bd}};
  return {detail::bind(self, std::vector<Array>{moveaxis(ins[0], bd, 0)}, p), {0}};
}

// The leading (batch) dimensions partition: each device transforms its own rows. The
// transformed dimensions stay whole (a distributed FFT needs a transpose between passes,
// which a custom_partitioning rule can express).
ir::ShardingRule fft_sharding_rule(std::span<const Aval> ins, std::span<const Aval> outs, const Params& p) {
  const size_t k = p.get_ints("fft_lengths").size(), rank = size_t(ins[0].ndim());
  std::vector<DimRule> dims(rank, DimRule::kPass);
  for (size_t d = rank - k; d < rank; ++d) dims[d] = DimRule::kWhole;
  return aligned_sharding_rule(ins, outs, dims);
}

const ir::Primitive& fft_p = ir::register_primitive({.name = "fft",
                                                     .arity = {1, 1},
                                                     .abstract_eval = fft_aval,
                                                     .cpu_kernel = fft_kernel,
                                                     .jvp = jvp_linear,
                                                     .transpose = fft_transpose,
                                                     .batch = fft_batch,
                                                     .sharding_rule = fft_sharding_rule});

}  // namespace
}  // namespace tessel::ops

namespace tessel::fft {

Array lax_fft(const Array& x, FftType type, const Shape& fft_lengths) {
  if (type != FftType::FFT && type != FftType::IFFT && type != FftType::RFFT && type != FftType::IRFFT)
    throw ValueError("lax_fft: FftType(" + std::to_string(int(type)) +
                     ") is not a transform type (an integer cast to FftType?); use FftType::FFT, IFFT, RFFT or IRFFT");
  Array y;
  if (type == FftType::RFFT) {
    if (is_complex(x.dtype()))
      throw DTypeError(std::string("lax_fft: RFFT needs real input, got ") + dtype_name(x.dtype()) + " of shape " +
                       shape_to_string(x.shape()) + "; take real() first or use FftType::FFT");
    y = ops::convert(x, ops::fft_real_dtype(x.dtype()));
  } else {
    y = ops::convert(x, ops::fft_complex_dtype(x.dtype()));
  }
  if (fft_lengths.empty()) return y;
  return ops::bind1(ops::fft_p, {y}, ops::fft_params(type, fft_lengths));
}

}  // namespace tessel::fft
