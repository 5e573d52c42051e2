#pragma once
// The exponential-integral primitives (special.cpp) for scipy::special, which has their public
// names: jax.lax has no such functions, so they get no lax-level entry point.
#include "tessel/array.h"

namespace tessel::ops {

/// Ei(x) (scipy.special.expi).
Array expi(const Array& x);
/// E_1(x) (scipy.special.exp1).
Array exp1(const Array& x);
/// E_n(x) for integer n >= 0 (scipy.special.expn); n and x promoted and broadcast together.
Array expn(const Array& n, const Array& x);

}  // namespace tessel::ops
