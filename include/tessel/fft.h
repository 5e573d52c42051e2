#pragma once
// Discrete Fourier transforms, named and behaving like jax.numpy.fft. Everything is built on
// one primitive, `fft` (lax.fft: a transform over the trailing dimensions of an array), which
// the CPU backend computes with FFTW using cached plans. Works eagerly and under jit, grad
// and vmap (docs/fft.md).
//
//   ts::Array x = ts::arange(0.0, 8.0);             // float32[8]
//   ts::Array X = ts::fft::rfft(x);                 // complex64[5]
//   ts::Array y = ts::fft::irfft(X, 8);             // float32[8], equal to x
//   ts::Array Z = ts::fft::fft2(ts::ones({4, 6}), std::nullopt, {0, 1}, "ortho");
//
// Common arguments, as in jax.numpy.fft:
//  - `n` / `s`: the length(s) of the transformed axes; the input is cropped or zero-padded
//    to them (for the inverse real transforms, `n` is the length of the real output).
//  - `axis` / `axes`: which axes to transform (negative counts from the end).
//  - `norm`: "backward" (default: forward unscaled, inverse scaled by 1/n), "ortho" (both
//    scaled by 1/sqrt(n)) or "forward" (forward scaled by 1/n, inverse unscaled).
// Real and integer inputs of the complex transforms are converted to complex (float64 and
// 64-bit integers to complex128, others to complex64), as jnp does.
#include <optional>
#include <string>

#include "tessel/array.h"
#include "tessel/ops.h"

namespace tessel::fft {

/// The four transforms of the `fft` primitive (lax.FftType).
enum class FftType {
  FFT,    ///< complex to complex, forward
  IFFT,   ///< complex to complex, inverse (scaled by 1/n)
  RFFT,   ///< real to complex, forward: the last axis keeps n/2 + 1 frequencies
  IRFFT,  ///< complex to real, inverse (scaled by 1/n): the last axis grows back to n
};

/// lax.fft: transforms the trailing `fft_lengths.size()` dimensions of `x` (the leading ones
/// are a batch). FFT/IFFT/IRFFT convert `x` to complex first, RFFT to a real floating dtype
/// (complex input is a DTypeError). The trailing dimensions must equal `fft_lengths`, except
/// for IRFFT, whose last input dimension is fft_lengths.back() / 2 + 1. Empty `fft_lengths`
/// returns the converted `x`.
TESSEL_API Array lax_fft(const Array& x, FftType type, const Shape& fft_lengths);

/// One-dimensional discrete Fourier transform along `axis`, of length `n` (default: the
/// axis' size). Result: complex, with `n` elements along `axis`.
TESSEL_API Array fft(const Array& a, std::optional<int64_t> n = std::nullopt, int64_t axis = -1,
                     const std::string& norm = "backward");
/// Inverse of `fft`: ifft(fft(a)) == a.
TESSEL_API Array ifft(const Array& a, std::optional<int64_t> n = std::nullopt, int64_t axis = -1,
                      const std::string& norm = "backward");
/// Transform of real input along `axis`: the non-negative frequencies only, n / 2 + 1 of
/// them. Complex input is a DTypeError (take real() or use fft).
TESSEL_API Array rfft(const Array& a, std::optional<int64_t> n = std::nullopt, int64_t axis = -1,
                      const std::string& norm = "backward");
/// Inverse of `rfft`: a real array with `n` elements along `axis` (default 2 * (m - 1) for
/// an axis of size m; pass `n` to get an odd length back). The input is taken as the
/// non-negative half of a Hermitian-symmetric spectrum.
TESSEL_API Array irfft(const Array& a, std::optional<int64_t> n = std::nullopt, int64_t axis = -1,
                       const std::string& norm = "backward");

/// Two-dimensional transform over `axes` (default the last two), lengths `s`.
TESSEL_API Array fft2(const Array& a, std::optional<Shape> s = std::nullopt, const Axes& axes = {-2, -1},
                      const std::string& norm = "backward");
/// Inverse of `fft2`.
TESSEL_API Array ifft2(const Array& a, std::optional<Shape> s = std::nullopt, const Axes& axes = {-2, -1},
                       const std::string& norm = "backward");
/// Two-dimensional transform of real input (the last of `axes` is halved as in rfft).
TESSEL_API Array rfft2(const Array& a, std::optional<Shape> s = std::nullopt, const Axes& axes = {-2, -1},
                       const std::string& norm = "backward");
/// Inverse of `rfft2`.
TESSEL_API Array irfft2(const Array& a, std::optional<Shape> s = std::nullopt, const Axes& axes = {-2, -1},
                        const std::string& norm = "backward");

/// N-dimensional transform over `axes` (default: all axes, or the last s.size() axes when
/// `s` is given) with lengths `s` (default: the axes' sizes). Axes may not repeat.
TESSEL_API Array fftn(const Array& a, std::optional<Shape> s = std::nullopt, std::optional<Axes> axes = std::nullopt,
                      const std::string& norm = "backward");
/// Inverse of `fftn`.
TESSEL_API Array ifftn(const Array& a, std::optional<Shape> s = std::nullopt, std::optional<Axes> axes = std::nullopt,
                       const std::string& norm = "backward");
/// N-dimensional transform of real input; the last of `axes` keeps s.back() / 2 + 1
/// frequencies.
TESSEL_API Array rfftn(const Array& a, std::optional<Shape> s = std::nullopt, std::optional<Axes> axes = std::nullopt,
                       const std::string& norm = "backward");
/// Inverse of `rfftn`: real output of lengths `s` (default: the axes' sizes, except the last
/// one, which becomes 2 * (m - 1)).
TESSEL_API Array irfftn(const Array& a, std::optional<Shape> s = std::nullopt, std::optional<Axes> axes = std::nullopt,
                        const std::string& norm = "backward");

/// Sample frequencies of an n-point `fft` with sample spacing `d`: [0, 1, ..., (n - 1) / 2,
/// -(n / 2), ..., -1] / (d * n).
TESSEL_API Array fftfreq(int64_t n, double d = 1.0, DType dtype = default_float);
/// Sample frequencies of an n-point `rfft`: [0, 1, ..., n / 2] / (d * n).
TESSEL_API Array rfftfreq(int64_t n, double d = 1.0, DType dtype = default_float);
/// Moves the zero frequency to the centre: rolls each of `axes` (default all) by size / 2.
TESSEL_API Array fftshift(const Array& x, std::optional<Axes> axes = std::nullopt);
/// Inverse of `fftshift`: rolls each of `axes` (default all) by -(size / 2).
TESSEL_API Array ifftshift(const Array& x, std::optional<Axes> axes = std::nullopt);

}  // namespace tessel::fft
