#pragma once
// FFTW binding: batches of multi-dimensional transforms on dense row-major buffers, with
// plans cached per (kind, precision, lengths, batch size, in-place) and batches split over
// the shared intra-op arena. The `fft` primitive's kernel (src/ops/fft.cpp) calls this once.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tessel::cpu {

/// Which transform: complex-to-complex forward (sign -1) or inverse (sign +1), real-to-
/// complex forward, complex-to-real inverse.
enum class FftKind { kForward, kInverse, kRealForward, kRealInverse };

/// Runs `howmany` transforms of logical size `lengths` (row-major, innermost last) stored
/// back to back: transform b reads the b-th block of `in` and writes the b-th block of `out`.
/// Blocks hold prod(lengths) complex numbers for kForward/kInverse, prod(lengths) reals for
/// the input of kRealForward and the output of kRealInverse, and prod(lengths[:-1]) *
/// (lengths[-1] / 2 + 1) complex numbers for the other side of the real transforms.
/// `double_precision` picks float64/complex128 (else float32/complex64). Inverse transforms
/// are normalized by 1 / prod(lengths), as numpy and XLA define them. `in` is never written
/// (the complex-to-real transform runs on a copy); `in == out` is allowed for kForward and
/// kInverse. Lengths must be >= 1.
void fft(FftKind kind, bool double_precision, const std::vector<int64_t>& lengths, int64_t howmany, const void* in,
         void* out);

/// Number of FFTW plans created so far (both precisions); for tests of the plan cache.
size_t fft_plan_count();

}  // namespace tessel::cpu
