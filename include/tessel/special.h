#pragma once
// Special functions at JAX's lax level (jax.lax.lgamma, ...): element-wise primitives on
// floating arrays, with JAX's derivatives, that fuse into generated loops like sin or exp.
// Arguments of n-ary functions are promoted and broadcast as jax.numpy does (a C++ scalar
// takes the array's dtype); integer arrays are rejected with a DTypeError (convert them with
// astype). Maximum errors against float64 references: docs/special.md. The SciPy-named
// functions built on them are in tessel/scipy_special.h.
//
//   ts::Array x = ts::linspace(0.5, 4.0, 8);
//   ts::Array lg = ts::lgamma(x);                       // log|Gamma(x)|
//   ts::Array p = ts::igamma(ts::Array(2.0f), x);        // P(2, x)
#include "tessel/array.h"

namespace tessel {

/// lax.lgamma: log |Gamma(x)| (Lanczos approximation, as XLA); +inf at 0, -1, -2, ... and +-inf.
/// Derivative: digamma(x).
TESSEL_API Array lgamma(const Array& x);
/// lax.digamma: psi(x) = d lgamma(x) / dx; NaN at 0, -1, -2, .... Derivative: polygamma(1, x).
TESSEL_API Array digamma(const Array& x);
/// lax.polygamma: the n-th derivative of digamma at x, for non-negative integer values n
/// (NaN otherwise). Differentiable in x only (as in JAX).
TESSEL_API Array polygamma(const Array& n, const Array& x);
/// lax.zeta: the Hurwitz zeta function sum_k (q + k)^-x for x > 1 (NaN for x < 1, +inf at
/// x = 1 and at q = 0, -1, ...). Differentiable in q (d/dq = -x zeta(x + 1, q)); JAX defines
/// no derivative in x and neither does tessel.
TESSEL_API Array zeta(const Array& x, const Array& q);
/// lax.igamma: the regularized lower incomplete gamma function P(a, x) = gamma(a, x) / Gamma(a).
/// Derivatives: igamma_grad_a(a, x) in a, x^(a-1) e^-x / Gamma(a) in x.
TESSEL_API Array igamma(const Array& a, const Array& x);
/// lax.igammac: the regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x).
TESSEL_API Array igammac(const Array& a, const Array& x);
/// lax.igamma_grad_a: d P(a, x) / da (not differentiable itself, as in JAX).
TESSEL_API Array igamma_grad_a(const Array& a, const Array& x);
/// lax.random_gamma_grad: the derivative of a Gamma(a) sample x with respect to a at fixed
/// P(a, x) (implicit reparameterization), used by random::gamma's gradient.
TESSEL_API Array random_gamma_grad(const Array& a, const Array& x);
/// lax.betainc: the regularized incomplete beta function I_x(a, b) for a, b >= 0 and x in
/// [0, 1] (NaN outside). Differentiable in x only (as in JAX).
TESSEL_API Array betainc(const Array& a, const Array& b, const Array& x);
/// lax.bessel_i0e: exp(-|x|) I0(x), the exponentially scaled modified Bessel function of order 0.
TESSEL_API Array bessel_i0e(const Array& x);
/// lax.bessel_i1e: exp(-|x|) I1(x), the exponentially scaled modified Bessel function of order 1.
TESSEL_API Array bessel_i1e(const Array& x);

// jax.numpy's functions over bessel_i0e (declared here rather than in tessel/numpy.h, which
// everything includes):
/// The modified Bessel function of the first kind of order 0 (jnp.i0); integers are
/// converted to float. Its derivative is exp(|x|) i1e(x) (0 at 0, as JAX's custom rule gives).
TESSEL_API Array i0(const Array& x);
/// The Kaiser window of M points with shape parameter beta (jnp.kaiser):
/// i0(beta sqrt(1 - ((n - alpha) / alpha)^2)) / i0(beta), alpha = (M - 1) / 2.
TESSEL_API Array kaiser(int64_t M, double beta);

}  // namespace tessel
