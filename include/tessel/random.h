#pragma once
// Counter-based pseudo-random numbers, like jax.random with raw keys: a key is a uint32[2]
// array, every draw is a pure function of (key, shape, dtype), and new keys come from
// `split` / `fold_in`. The generator is Threefry-2x32 (20 rounds, Random123), composed the
// way JAX composes it with `jax_threefry_partitionable=True` (JAX's default since 0.5): keys
// and bits equal jax.random's for raw keys (split(key(0)) is JAX's [[1797259609, 2579123966],
// [928981903, 3453687069]]), and floats are made from the bits by JAX's recipe (uniform:
// mantissa bits under the exponent of 1.0; normal: sqrt(2) * erf_inv of a uniform in (-1, 1)).
//
//   ts::Array k = ts::random::key(0);
//   ts::Array ks = ts::random::split(k);                  // uint32[2, 2], row i a key
//   ts::Array x = ts::random::normal(ts::random::fold_in(k, 1), {3, 4});  // float32[3, 4]
#include <utility>

#include "tessel/array.h"
#include "tessel/random_distributions.h"

namespace tessel {

/// lax.bitcast_convert_type: reinterprets the bits of each element as `dtype`, which must
/// have the same width as x's dtype (bool and complex dtypes are not accepted).
TESSEL_API Array bitcast_convert_type(const Array& x, DType dtype);
/// lax.erf_inv: the inverse error function of a floating array (Giles' approximation, as
/// XLA computes it); erf_inv(+-1) = +-inf, NaN outside [-1, 1].
TESSEL_API Array erf_inv(const Array& x);

namespace random {

/// A key from an integer seed (jax.random.PRNGKey): [high 32 bits, low 32 bits] of the
/// seed as a 64-bit two's-complement number, so key(s) = [0, s] for 0 <= s < 2^32 (negative
/// seeds match JAX with jax_enable_x64).
TESSEL_API Array key(int64_t seed);
/// `num` new keys, as a uint32[num, 2] array (row i is a key).
TESSEL_API Array split(const Array& key, int64_t num = 2);
/// A new key from `key` and a rank-0 integer `data` (converted to uint32, like JAX).
TESSEL_API Array fold_in(const Array& key, const Array& data);
/// Uniform random bits of `shape`; dtype uint8, uint16, uint32 or uint64.
TESSEL_API Array bits(const Array& key, const Shape& shape = {}, DType dtype = DType::uint32);
/// Uniform floats in [minval, maxval) of `shape` and floating `dtype`; minval and maxval
/// broadcast to `shape`.
TESSEL_API Array uniform(const Array& key, const Shape& shape = {}, DType dtype = DType::float32,
                         const Array& minval = 0.0, const Array& maxval = 1.0);
/// Standard normal floats of `shape` (floating or complex `dtype`; complex values have
/// independent real and imaginary parts of variance 1/2 each, as in JAX).
TESSEL_API Array normal(const Array& key, const Shape& shape = {}, DType dtype = DType::float32);

/// The Threefry-2x32 block function (the `threefry2x32` primitive): encrypts the counter
/// pairs (x0, x1) with the key (key0, key1). All four are uint32 arrays of one shape (rank-0
/// ones broadcast); returns the two output words.
TESSEL_API std::pair<Array, Array> threefry2x32(const Array& key0, const Array& key1, const Array& x0,
                                                const Array& x1);
/// JAX's `threefry_2x32(keypair, count)`: hashes a uint32 array of counters with a key,
/// pairing the first half of the flattened counters with the second half (an odd count is
/// padded with one zero). Returns a uint32 array of count's shape.
TESSEL_API Array threefry_2x32(const Array& key, const Array& count);

}  // namespace random
}  // namespace tessel
