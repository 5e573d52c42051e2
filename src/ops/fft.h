#pragma once
// Helpers shared by the `fft` primitive (fft.cpp) and the jax.numpy.fft functions
// (numpy_fft.cpp).
#include "ops/op_util.h"

namespace tessel::ops {

/// The dtype the complex transforms (fft, ifft, irfft) compute in for input dtype `d`
/// (jnp's to_complex_dtype): complex stays, float64 and 64-bit integers give complex128,
/// everything else complex64.
DType fft_complex_dtype(DType d);
/// The dtype rfft computes in for real input dtype `d`: float64 and 64-bit integers give
/// float64, everything else float32 (FFTW has no half-precision transforms).
DType fft_real_dtype(DType d);

}  // namespace tessel::ops
