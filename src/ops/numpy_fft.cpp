// jax.numpy.fft: fft/ifft/rfft/irfft, their 2-D and n-D forms, fftfreq/rfftfreq and
// fftshift/ifftshift, composed from the `fft` primitive (fft.cpp) and shape operations. Like
// jnp's _fft_core: the transformed axes move to the end (the primitive transforms trailing
// dimensions), are cropped or zero-padded to the requested lengths, transformed, scaled for
// `norm`, and moved back.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/dtype_check.h"
#include "ops/fft.h"
#include "tessel/fft.h"

namespace tessel::ops {
namespace {

using fft::FftType;

std::string axes_to_string(const Axes& a) { return shape_to_string(a); }

void check_norm(const std::string& op, const std::string& norm) {
  if (norm != "backward" && norm != "ortho" && norm != "forward")
    throw ValueError(op + ": unknown norm \"" + norm + "\"; use \"backward\", \"ortho\" or \"forward\"");
}

/// The axes to transform: `axes` canonicalized (checked for range and repeats), else the
/// last s.size() axes when `s` is given, else all axes.
Axes transform_axes(const std::string& op, const Array& a, const std::optional<Shape>& s,
                    const std::optional<Axes>& axes) {
  const int64_t nd = a.ndim();
  if (s && axes && s->size() != axes->size())
    throw ValueError(op + ": s has " + std::to_string(s->size()) + " lengths but axes names " +
                     std::to_string(axes->size()) + " axes (s=" + shape_to_string(*s) + ", axes=" +
                     axes_to_string(*axes) + "); give one length per axis");
  Axes r;
  if (axes) {
    for (auto ax : *axes) {
      const int64_t c = canonicalize_axis(op, ax, nd);
      if (std::find(r.begin(), r.end(), c) != r.end())
        throw ValueError(op + ": axes " + axes_to_string(*axes) + " name axis " + std::to_string(c) +
                         " twice; each axis may be transformed once");
      r.push_back(c);
    }
    return r;
  }
  const int64_t k = s ? int64_t(s->size()) : nd;
  if (k > nd)
    throw ShapeError(op + ": s=" + shape_to_string(*s) + " has more lengths than the input of shape " +
                     shape_to_string(a.shape()) + " has dimensions; pass axes or fewer lengths");
  for (int64_t i = nd - k; i < nd; ++i) r.push_back(i);
  return r;
}

/// The factor that turns the primitive's result (forward unscaled, inverse scaled by 1/n)
/// into the one `norm` asks for.
double norm_factor(const std::string& norm, bool inverse, double n) {
  if (norm == "ortho") return inverse ? std::sqrt(n) : 1.0 / std::sqrt(n);
  if (norm == "forward") return inverse ? n : 1.0 / n;
  return 1.0;
}

Axes inverse_permutation(const Axes& perm) {
  Axes inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[size_t(perm[i])] = int64_t(i);
  return inv;
}

Array fft_core(const std::string& op, FftType type, const Array& a, const std::optional<Shape>& s,
               const std::optional<Axes>& axes_in, const std::string& norm) {
  check_norm(op, norm);
  if (s)
    for (auto v : *s)
      if (v < 1)
        throw ValueError(op + ": transform lengths must be >= 1, got s=" + shape_to_string(*s));
  const Axes axes = transform_axes(op, a, s, axes_in);
  Array x;
  if (type == FftType::RFFT) {
    if (is_complex(a.dtype()))
      throw DTypeError(op + ": input must be real, got " + dtype_name(a.dtype()) +
                       "; pass real(a) or use the complex transform (fft)");
    x = convert(a, fft_real_dtype(a.dtype()));
  } else {
    x = convert(a, fft_complex_dtype(a.dtype()));
  }
  if (axes.empty()) return x;

  // The transformed axes go last, in the order given.
  const int64_t nd = x.ndim(), k = int64_t(axes.size());
  Axes perm;
  for (int64_t d = 0; d < nd; ++d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) perm.push_back(d);
  perm.insert(perm.end(), axes.begin(), axes.end());
  Axes iota(static_cast<size_t>(nd));
  std::iota(iota.begin(), iota.end(), 0);
  const bool moved = perm != iota;
  if (moved) x = transpose(x, perm);

  Shape n;
  if (s) {
    // Crop or zero-pad each transformed axis; irfft's input axis holds n / 2 + 1 frequencies.
    n = *s;
    std::vector<std::array<int64_t, 3>> cfg(size_t(nd), {0, 0, 0});
    for (int64_t i = 0; i < k; ++i) {
      const int64_t d = nd - k + i;
      const int64_t want = type == FftType::IRFFT && i == k - 1 ? n[size_t(i)] / 2 + 1 : n[size_t(i)];
      cfg[size_t(d)][1] = want - x.dim(d);
    }
    x = lax_pad(x, Scalar(0.0), cfg);
  } else {
    for (int64_t i = 0; i < k; ++i) n.push_back(x.dim(nd - k + i));
    if (type == FftType::IRFFT) n.back() = std::max<int64_t>(0, 2 * (n.back() - 1));
    if (shape_size(n) == 0) {
      // rfft has no output length for an empty axis (JAX fails to compile it too).
      if (type == FftType::RFFT)
        for (int64_t i = 0; i < k; ++i)
          if (n[size_t(i)] == 0)
            throw ValueError(op + ": cannot transform axis " + std::to_string(axes[size_t(i)]) +
                             " of size 0 (shape " + shape_to_string(a.shape()) + "); pass a length >= 1 to zero-pad it");
      // An empty transform is an empty array of the output shape, as jnp.fft gives.
      Shape out = x.shape();
      std::copy(n.begin(), n.end(), out.end() - k);
      const Array y = zeros(out, type == FftType::IRFFT ? real_dtype(x.dtype()) : x.dtype());
      return moved ? transpose(y, inverse_permutation(perm)) : y;
    }
  }

  Array y = fft::lax_fft(x, type, n);
  const double f = norm_factor(norm, type == FftType::IFFT || type == FftType::IRFFT, double(shape_size(n)));
  if (f != 1.0) y = multiply(y, Array(f));
  return moved ? transpose(y, inverse_permutation(perm)) : y;
}

/// The 1-D functions: one axis, optional length n.
Array fft_1d(const char* name, FftType type, const Array& a, std::optional<int64_t> n, int64_t axis,
             const std::string& norm) {
  const std::string op = std::string("fft.") + name;
  if (n && *n < 1) throw ValueError(op + ": n must be >= 1, got " + std::to_string(*n));
  return fft_core(op, type, a, n ? std::optional<Shape>(Shape{*n}) : std::nullopt, Axes{axis}, norm);
}

Array fft_nd(const char* name, FftType type, const Array& a, const std::optional<Shape>& s,
             const std::optional<Axes>& axes, const std::string& norm) {
  return fft_core(std::string("fft.") + name, type, a, s, axes, norm);
}

/// fftshift (sign +1) and ifftshift (sign -1): roll each axis by sign * (size / 2).
Array shift_axes(const char* op, const Array& x, const std::optional<Axes>& axes_in, int sign) {
  Axes axes;
  if (axes_in) {
    for (auto a : *axes_in) axes.push_back(canonicalize_axis(op, a, x.ndim()));
  } else {
    for (int64_t d = 0; d < x.ndim(); ++d) axes.push_back(d);
  }
  Array y = x;
  for (auto d : axes) y = roll(y, sign * (y.dim(d) / 2), d);
  return y;
}

Array frequencies(const char* op, int64_t n, double d, DType dtype, bool real_only) {
  if (n < 1) throw ValueError(std::string(op) + ": n must be >= 1, got " + std::to_string(n));
  if (!is_inexact(detail::checked_dtype(dtype, op)))
    throw DTypeError(std::string(op) + ": dtype must be floating or complex, got " + dtype_name(dtype));
  const int64_t count = real_only ? n / 2 + 1 : n;
  std::vector<double> v(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    const int64_t k = real_only || i < (n + 1) / 2 ? i : i - n;
    v[size_t(i)] = double(k) / (d * double(n));
  }
  return Array(v).astype(dtype);
}

}  // namespace
}  // namespace tessel::ops

namespace tessel::fft {

Array fft(const Array& a, std::optional<int64_t> n, int64_t axis, const std::string& norm) {
  return ops::fft_1d("fft", FftType::FFT, a, n, axis, norm);
}
Array ifft(const Array& a, std::optional<int64_t> n, int64_t axis, const std::string& norm) {
  return ops::fft_1d("ifft", FftType::IFFT, a, n, axis, norm);
}
Array rfft(const Array& a, std::optional<int64_t> n, int64_t axis, const std::string& norm) {
  return ops::fft_1d("rfft", FftType::RFFT, a, n, axis, norm);
}
Array irfft(const Array& a, std::optional<int64_t> n, int64_t axis, const std::string& norm) {
  return ops::fft_1d("irfft", FftType::IRFFT, a, n, axis, norm);
}

Array fft2(const Array& a, std::optional<Shape> s, const Axes& axes, const std::string& norm) {
  return ops::fft_nd("fft2", FftType::FFT, a, s, axes, norm);
}
Array ifft2(const Array& a, std::optional<Shape> s, const Axes& axes, const std::string& norm) {
  return ops::fft_nd("ifft2", FftType::IFFT, a, s, axes, norm);
}
Array rfft2(const Array& a, std::optional<Shape> s, const Axes& axes, const std::string& norm) {
  return ops::fft_nd("rfft2", FftType::RFFT, a, s, axes, norm);
}
Array irfft2(const Array& a, std::optional<Shape> s, const Axes& axes, const std::string& norm) {
  return ops::fft_nd("irfft2", FftType::IRFFT, a, s, axes, norm);
}

Array fftn(const Array& a, std::optional<Shape> s, std::optional<Axes> axes, const std::string& norm) {
  return ops::fft_nd("fftn", FftType::FFT, a, s, axes, norm);
}
Array ifftn(const Array& a, std::optional<Shape> s, std::optional<Axes> axes, const std::string& norm) {
  return ops::fft_nd("ifftn", FftType::IFFT, a, s, axes, norm);
}
Array rfftn(const Array& a, std::optional<Shape> s, std::optional<Axes> axes, const std::string& norm) {
  return ops::fft_nd("rfftn", FftType::RFFT, a, s, axes, norm);
}
Array irfftn(const Array& a, std::optional<Shape> s, std::optional<Axes> axes, const std::string& norm) {
  return ops::fft_nd("irfftn", FftType::IRFFT, a, s, axes, norm);
}

Array fftfreq(int64_t n, double d, DType dtype) { return ops::frequencies("fft.fftfreq", n, d, dtype, false); }
Array rfftfreq(int64_t n, double d, DType dtype) { return ops::frequencies("fft.rfftfreq", n, d, dtype, true); }
Array fftshift(const Array& x, std::optional<Axes> axes) { return ops::shift_axes("fft.fftshift", x, axes, 1); }
Array ifftshift(const Array& x, std::optional<Axes> axes) { return ops::shift_axes("fft.ifftshift", x, axes, -1); }

}  // namespace tessel::fft
