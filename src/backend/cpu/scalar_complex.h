#pragma once
// Complex element-wise functions computed as JAX on CPU computes them (XLA's elemental IR
// emitter, StableHLO's complex math expansions, the CHLO decompositions, and a few
// formulas JAX writes itself), so that the sign of a zero part, and the inf/NaN cases,
// come out as in JAX. The C++ <complex> functions follow C99 Annex G instead, which
// differs in exactly those places (exp(x - 0i) has imaginary part -0 in C, +0 in JAX).
//
// Where JAX's formula loses precision (sinh and cosh cancel for small real parts, expm1
// rounds through expm1(a) + 1 and cos b - 1), the accurate formula is kept for finite values
// and only JAX's choice of the zero sign is taken over.
//
// backend/cpu/scalar.h declares these (its element-wise rows call them) and includes this file at its
// end. Like it, this file includes only standard headers.
#include <cmath>
#include <complex>
#include <limits>

namespace tessel::scalar::cx {

template <class R> using C = std::complex<R>;

template <class R> inline constexpr R kInf = std::numeric_limits<R>::infinity();
template <class R> inline constexpr R kNaN = std::numeric_limits<R>::quiet_NaN();
template <class R> inline constexpr R kSqrt2 = R(1.4142135623730951);
template <class R> inline constexpr R kLn2 = R(0.69314718055994529);
template <class R> inline constexpr R kPi = R(3.1415926535897931);

template <class R> inline bool isnan_(R x) { return x != x; }
template <class R> inline bool isinf_(R x) { return std::abs(x) == kInf<R>; }

/// max and min of XLA: NaN when either operand is NaN (std::fmax would drop the NaN).
template <class R> inline R max_(R a, R b) { return isnan_(a) ? a : isnan_(b) ? b : a > b ? a : b; }
template <class R> inline R min_(R a, R b) { return isnan_(a) ? a : isnan_(b) ? b : a < b ? a : b; }

/// The product as XLA writes it, (ac - bd) + (ad + bc)i, with none of C's recovery of
/// infinities from NaN parts.
template <class R> inline C<R> mul(C<R> x, C<R> y) {
  return {x.real() * y.real() - x.imag() * y.imag(), x.real() * y.imag() + x.imag() * y.real()};
}

/// The quotient as XLA computes it: Smith's algorithm, and where that gives NaN + NaN i,
/// the limits for a zero divisor, an infinite dividend or an infinite divisor.
template <class R> inline C<R> div(C<R> x, C<R> y) {
  const R ar = x.real(), ai = x.imag(), br = y.real(), bi = y.imag();
  R cr, ci;
  if (std::abs(br) < std::abs(bi)) {
    const R ratio = br / bi, denom = bi + ratio * br;
    cr = (ratio * ar + ai) / denom;
    ci = (ratio * ai - ar) / denom;
  } else {
    const R ratio = bi / br, denom = br + ratio * bi;
    cr = (ratio * ai + ar) / denom;
    ci = (ai - ratio * ar) / denom;
  }
  if (!(isnan_(cr) && isnan_(ci))) return {cr, ci};
  const bool a_finite = std::isfinite(ar) && std::isfinite(ai), b_finite = std::isfinite(br) && std::isfinite(bi);
  if (br == 0 && bi == 0 && !(isnan_(ar) && isnan_(ai))) {
    const R s = std::copysign(kInf<R>, br);
    return {s * ar, s * ai};
  }
  if ((isinf_(ar) || isinf_(ai)) && b_finite) {  // unit-sized stand-ins for the infinite parts
    const R sr = std::copysign(isinf_(ar) ? R(1) : R(0), ar), si = std::copysign(isinf_(ai) ? R(1) : R(0), ai);
    return {kInf<R> * (sr * br + si * bi), kInf<R> * (si * br - sr * bi)};
  }
  if ((isinf_(br) || isinf_(bi)) && a_finite) {
    const R sr = std::copysign(isinf_(br) ? R(1) : R(0), br), si = std::copysign(isinf_(bi) ? R(1) : R(0), bi);
    return {R(0) * (ar * sr + ai * si), R(0) * (ai * sr - ar * si)};
  }
  return {cr, ci};
}

/// z^w as XLA computes it: |z|^c e^(-d arg z) (cos q + i sin q) with q = c arg z + d ln|z|
/// (w = c + di), then Kahan's exact cases in XLA's order of precedence: 0^c = 0 for real
/// c > 0, z^0 = 1, 1^w = 1, and inf^c = inf or 0 for real c.
template <class R> inline C<R> pow(C<R> z, C<R> w) {
  const R a = z.real(), b = z.imag(), c = w.real(), d = w.imag();
  if (a == kInf<R> && b == 0 && d == 0 && c < 0) return {R(0), R(0)};
  if (a == kInf<R> && b == 0 && d == 0 && c > 0) return {kInf<R>, R(0)};
  if (a == 1 && b == 0) return {R(1), R(0)};
  if (c == 0 && d == 0) return {R(1), R(0)};
  const R r = cx::abs(z), t = std::atan2(b, a);
  if (r == 0 && d == 0 && c >= 0) return {c == 0 ? R(1) : R(0), R(0)};
  const R coeff = std::pow(r, c) * std::exp(-d * t), q = c * t + d * std::log(r);
  return {coeff * std::cos(q), coeff * std::sin(q)};
}

/// |z|: NaN when either part is NaN (even beside an infinity, unlike C's hypot).
template <class R> inline R abs(C<R> z) {
  if (isnan_(z.real()) || isnan_(z.imag())) return kNaN<R>;
  return std::hypot(z.real(), z.imag());
}

/// sqrt(x^2 + y^2) for x, y >= 0 without overflow, as the StableHLO expansions compute it:
/// m sqrt(1 + r^2) with r = min/max, switching to m (1 + r^2/2) where the square root
/// rounds to 1.
template <class R> inline R hypot_(R x, R y) {
  const R mx = max_(x, y), mn = min_(x, y);
  if (mx == mn) return kSqrt2<R> * mx;
  const R q = mn / mx, r = q * q, s = std::sqrt(R(1) + r);
  return s == R(1) && r > R(0) ? mx + mx * r * R(0.5) : mx * s;
}

/// x^2 - hi, exactly, where hi = x * x rounded (Dekker's product with Veltkamp's split).
template <class R> inline R square_low(R x, R hi) {
  constexpr R split = std::numeric_limits<R>::digits > 24 ? R(134217729) : R(4097);  // 2^ceil(p/2) + 1
  const R t = split * x, xh = t + (x - t), xl = x - xh;
  return (((-hi + xh * xh) + xh * xl) + xh * xl) + xl * xl;
}

/// exp(z): XLA computes exp(a) (cos b + i sin b) part by part and sets the imaginary part
/// to +0 when b is zero; where exp(a) overflows it multiplies by exp(a/2) twice.
template <class R> inline C<R> exp(C<R> z) {
  const R a = z.real(), b = z.imag();
  const R e = std::exp(a), c = std::cos(b), s = std::sin(b);
  R re = e * c, im = e * s;
  if (e == kInf<R>) {
    const R h = std::exp(a * R(0.5));
    re = (h * c) * h;
    im = (h * s) * h;
  }
  return {re, b == R(0) ? R(0) : im};
}

/// exp(z) - 1 = (expm1(a) cos b + cosm1(b)) + i exp(a) sin b, XLA's formula, with +0 as the
/// imaginary part when b is zero. Two of XLA's roundings are not copied: it multiplies sin b
/// by expm1(a) + 1, which is 0 for a below about -17 (float32; -37 in float64), and takes cosm1(b) as
/// cos b - 1 for |b| > pi/4, which cancels near multiples of 2 pi; -2 sin^2(b/2) does not.
template <class R> inline C<R> expm1(C<R> z) {
  const R a = z.real(), b = z.imag();
  const R h = std::sin(b * R(0.5));
  const R cosm1 = R(-2) * h * h + R(0);  // + 0: cosm1(+-0) = +0, as in XLA
  return {std::expm1(a) * std::cos(b) + cosm1, b == R(0) ? R(0) : std::exp(a) * std::sin(b)};
}

/// log(z) = log|z| + i atan2(b, a). Near |z| = 1, log|z| = log1p(a^2 + b^2 - 1) / 2 with the
/// sum carried in two parts (Dekker squares, fast two-sums), as StableHLO's expansion does;
/// elsewhere log(max) + log1p((min/max)^2) / 2.
template <class R> inline C<R> log(C<R> z) {
  const R x = z.real(), y = z.imag();
  const R xx = x * x, yy = y * y;
  const R big = yy > xx ? yy : xx, small = yy > xx ? xx : yy;
  // (big - 1) + small + low(y^2) + low(x^2), each addition with its rounding error kept
  const R s0 = big + R(-1), s1 = s0 + small, ly = square_low(y, yy), s2 = s1 + ly, lx = square_low(x, xx),
          s3 = s2 + lx;
  const R err = (((big - (s0 - R(-1))) + (small - (s1 - s0))) + (ly - (s2 - s1))) + (lx - (s3 - s2));
  const R d = s3 + err;
  const R ax = std::abs(x), ay = std::abs(y), mx = max_(ax, ay), mn = min_(ax, ay);
  const R q = mn == mx ? R(1) : mn / mx;
  const R re = std::abs(d) < R(0.5) ? R(0.5) * std::log1p(d) : std::log(mx) + R(0.5) * std::log1p(q * q);
  return {re, std::atan2(y, x)};
}

/// log(1 + z) = log|1 + z| + i atan2(b, 1 + a), with log|1 + z| = log1p(2a + a^2 + b^2) / 2 and
/// the sum carried in two parts (StableHLO's expansion); log(max) + ... for huge parts, and
/// log((1 + a)^2 + b^2) / 2 right next to z = -1.
template <class R> inline C<R> log1p(C<R> z) {
  const R x = z.real(), y = z.imag();
  const R ax = std::abs(x), ay = std::abs(y), mx = max_(ax, ay), mn = min_(ax, ay);
  const R xp1 = x + R(1), yy = y * y;
  R re;
  if (mx > std::sqrt(std::numeric_limits<R>::max()) * R(0.01)) {
    const R q = mn / mx;
    re = std::log(mx) + R(0.5) * std::log1p(mn == mx ? R(1) : q * q);
  } else if (std::abs(xp1) + ay < R(0.2)) {
    re = R(0.5) * std::log(xp1 * xp1 + yy);
  } else {
    // 2x + y^2 + x^2 + low(y^2) + low(x^2), each addition with its rounding error (two-sum)
    const auto two_sum_err = [](R p, R q, R s) {
      const R t = s - p;
      return (p - (s - t)) + (q - t);
    };
    const R xx = x * x, x2 = x + x, s0 = x2 + yy, s1 = s0 + xx, ly = square_low(y, yy), s2 = s1 + ly,
            lx = square_low(x, xx), s3 = s2 + lx;
    const R err = ((two_sum_err(x2, yy, s0) + two_sum_err(s0, xx, s1)) + two_sum_err(s1, ly, s2)) +
                  two_sum_err(s2, lx, s3);
    re = R(0.5) * std::log1p(s3 + err);
  }
  return {re, std::atan2(y, xp1)};
}

/// sqrt(z), StableHLO's expansion: u = sqrt((|z| + |a|) / 2) and |b| / (2u), assigned to the
/// real and imaginary parts by the signs of a and b (so sqrt(a - 0i) = sqrt(a) + 0i for
/// a > 0), with rescaled forms where u under- or overflows.
template <class R> inline C<R> sqrt(C<R> z) {
  const R x = z.real(), y = z.imag();
  const R ax = std::abs(x), ay = std::abs(y);
  const bool eq = ax == ay, gt = ax > ay, lt = ax < ay;
  const R sq_ax = std::sqrt(ax), sq_ay = std::sqrt(ay);
  const R u_general = std::sqrt(hypot_(ax, ay) * R(0.5) + ax * R(0.5));
  const bool rescale = u_general == R(0) || u_general == kInf<R>;
  const R r = eq ? R(1) : lt ? ax / ay : ay / ax;
  const R h = hypot_(R(1), std::abs(r));
  const R sq_1h = std::sqrt(R(1) + h), sq_rh = std::sqrt(r + h);
  const R inv_sqrt2 = R(1) / kSqrt2<R>;
  // sqrt((1 + sqrt 2) / 2), and its double's reciprocal, for |a| = |b|
  const R c_eq = R(1.5537739740300374) / kSqrt2<R>, c_eq_inv = R(1) / R(2.19736822693562);
  R u, v;  // v = |b| / (2u)
  if (eq) {
    u = sq_ax * c_eq;
    v = sq_ay * c_eq_inv;
  } else if (rescale) {
    u = gt ? sq_ax * (sq_1h * inv_sqrt2) : sq_ay * (sq_rh * inv_sqrt2);
    v = gt ? (sq_ay * (sq_ay / sq_ax)) / (sq_1h * kSqrt2<R>) : sq_ay / (sq_rh * kSqrt2<R>);
  } else {
    u = u_general;
    v = ay / (u_general * R(2));
  }
  const R re = x >= R(0) ? u : v;
  const R im = x < R(0) ? (y < R(0) ? -u : u) : (y < R(0) ? -v : v);
  return {re, im};
}

/// 1 / sqrt(z) in polar form, as XLA computes it: |z|^(-1/2) (cos t + i sin t) with
/// t = -atan2(b, a) / 2. So rsqrt(-1) has the real part cos(pi/2) = -4.4e-8 (float32), not 0;
/// infinite parts give zeros signed like a and -b, and rsqrt(0) = inf + NaN i.
template <class R> inline C<R> rsqrt(C<R> z) {
  const R a = z.real(), b = z.imag();
  const R ax = std::abs(a), ay = std::abs(b), mx = max_(ax, ay), mn = min_(ax, ay);
  const R q = mn / mx;
  R r = (R(1) / std::sqrt(mx)) * (R(1) / std::sqrt(std::sqrt(R(1) + q * q)));
  if (isnan_(r)) r = R(1) / std::sqrt(mn);
  const R t = std::atan2(b, a) * R(-0.5);
  if (a == R(0) && b == R(0)) return {kInf<R>, kNaN<R>};
  if ((ay == kInf<R> && isnan_(a)) || ax == kInf<R>) return {std::copysign(R(0), a), -std::copysign(R(0), b)};
  return {r * std::cos(t), r * std::sin(t)};
}

/// sin(z) = sin a cosh b + i cos a sinh b, as JAX writes it (cosh and sinh of b from
/// expm1(b) and expm1(-b)); the real part is +0 when a is zero.
template <class R> inline C<R> sin(C<R> z) {
  const R a = z.real(), b = z.imag();
  const R ep = std::expm1(b), em = std::expm1(-b);
  const R sh = (ep - em) * R(0.5), ch = (ep + em + R(2)) * R(0.5);
  return {a == R(0) ? R(0) : std::sin(a) * ch, std::cos(a) * sh};
}

/// cos(z) = cos a cosh b - i sin a sinh b, as JAX writes it; the imaginary part is +0 when a
/// is zero.
template <class R> inline C<R> cos(C<R> z) {
  const R a = z.real(), b = z.imag();
  const R ep = std::expm1(b), em = std::expm1(-b);
  const R sh = (ep - em) * R(0.5), ch = (ep + em + R(2)) * R(0.5);
  return {std::cos(a) * ch, a == R(0) ? R(0) : -std::sin(a) * sh};
}

/// tanh(a + bi) = (sinh 2a + i sin 2b) / (cosh 2a + cos 2b), XLA's form: numerator and
/// denominator from expm1(2a), expm1(-2a), cos b and sin b; +-1 where cosh 2a overflows, NaN
/// real part for an infinite or NaN b (unless a is infinite), +0 imaginary part when b is zero.
template <class R> inline C<R> tanh(C<R> z) {
  const R a = z.real(), b = z.imag();
  const R ep = std::expm1(a + a), em = std::expm1(-(a + a));
  const R cb = std::cos(b), sb = std::sin(b);
  const R im_num = R(4) * (cb * sb), sum_m2 = ep + em, denom = sum_m2 + cb * cb * R(4);
  R re = sum_m2 == kInf<R> ? std::copysign(R(1), a) : (ep - em) / denom;
  R im = im_num / denom;
  const bool a_inf = isinf_(a), sin2b_nan = isnan_(im_num);
  if (sin2b_nan && !a_inf) re = kNaN<R>;
  if (b == R(0) || (a_inf && sin2b_nan)) im = R(0);
  return {re, im};
}

/// tan(z) = -i tanh(iz), XLA's way: tanh of (-b, a), turned back as (im, -re).
template <class R> inline C<R> tan(C<R> z) {
  const C<R> t = cx::tanh(C<R>(-z.imag(), z.real()));
  return {t.imag(), -t.real()};
}

/// sinh and cosh: CHLO writes them as exp(z - log 2) -+ exp(-z - log 2). That cancels for
/// small |a| (it gives sinh(1e-20) = 0) and rounds a - log 2 for large |a| (500 ulps at
/// a = 700), so finite arguments take the product form, sinh a cos b + i cosh a sin b (cosh:
/// cosh a cos b + i sinh a sin b), with CHLO's zero parts: +0 wherever a or b, whichever makes
/// the part vanish, is zero. Infinite and NaN parts go through CHLO's formula itself.
template <bool Sinh, class R> inline C<R> sinh_cosh(C<R> z) {
  const R a = z.real(), b = z.imag();
  if (!std::isfinite(a) || !std::isfinite(b)) {
    const C<R> e1 = cx::exp(C<R>(a + -kLn2<R>, b + R(0))), e2 = cx::exp(C<R>(-kLn2<R> - a, R(0) - b));
    return Sinh ? e1 - e2 : e1 + e2;
  }
  const R cb = std::cos(b), sb = std::sin(b);
  R ca, sa, e = R(1);  // cosh a and sinh a are e ca and e sa (split in two where they overflow)
  if (std::abs(a) < R(40)) {
    ca = std::cosh(a);
    sa = std::sinh(a);
  } else {  // e^-|a| is negligible: cosh a = e^|a| / 2 = e (e / 2), sinh a = +-cosh a
    e = std::exp(std::abs(a) * R(0.5));
    ca = e * R(0.5);
    sa = a < R(0) ? -ca : ca;
  }
  if (Sinh) return {a == R(0) ? R(0) : (sa * cb) * e, b == R(0) ? R(0) : (ca * sb) * e};
  return {(ca * cb) * e, a == R(0) || b == R(0) ? R(0) : (sa * sb) * e};
}
template <class R> inline C<R> sinh(C<R> z) { return sinh_cosh<true>(z); }
template <class R> inline C<R> cosh(C<R> z) { return sinh_cosh<false>(z); }

/// The shared part of asin, acos, asinh and acosh (Hull, Fairgrieve and Tang's algorithm as
/// StableHLO decomposes it), for x = |Re|, y = |Im|: returns (re, im) such that
/// asin(z) = atan2(Re z, re) + i im (signs restored by the callers).
template <class R> inline C<R> asin_acos_kernel(R x, R y) {
  const R safe_max = std::sqrt(std::numeric_limits<R>::max()) / R(8);
  const R safe_max_opt = x < safe_max * R(1e12) ? safe_max * R(1e-6) : safe_max * R(100);
  const R xp1 = x + R(1), xm1 = x + R(-1);
  const R r = hypot_(std::abs(xp1), y), s = hypot_(std::abs(xm1), y);  // |z + 1|, |z - 1|
  const R a = R(0.5) * (r + s), half_apx = R(0.5) * (a + x), yy = y * y;
  const R rpxp1 = r + xp1, smxm1 = s - xm1, spxm1 = s + xm1;
  R re;
  if (max_(x, y) >= safe_max) re = y;
  else if (x <= R(1)) re = std::sqrt(half_apx * (yy / rpxp1 + smxm1));
  else re = y * std::sqrt(half_apx / rpxp1 + half_apx / spxm1);
  const bool y_big = y >= safe_max_opt;
  const R mx = y_big ? y : x;
  const R xoy = y_big && y != kInf<R> ? x / y : R(0);
  const bool tiny_y = y < std::sqrt(std::numeric_limits<R>::min()) * R(4) && x < R(1);
  const R ap1 = a + R(1), half_yy = R(0.5) * yy, d = half_yy / rpxp1;
  R am1;  // a - 1 without cancellation
  if (tiny_y) am1 = -((xp1 * xm1) / ap1);
  else if (x >= R(1)) am1 = d + R(0.5) * spxm1;
  else am1 = a <= R(1.5) ? d + half_yy / smxm1 : a + R(-1);
  const R sq = std::sqrt(am1 * ap1);
  R im;
  if (mx >= (y_big ? safe_max_opt : safe_max)) im = (std::log(mx) + kLn2<R>) + R(0.5) * std::log1p(xoy * xoy);
  else im = tiny_y ? y / sq : std::log1p(am1 + sq);
  return {re, im};
}

template <class R> inline C<R> asin(C<R> z) {
  const C<R> k = asin_acos_kernel(std::abs(z.real()), std::abs(z.imag()));
  return {std::atan2(z.real(), k.real()), z.imag() < R(0) ? -k.imag() : k.imag()};
}
template <class R> inline C<R> acos(C<R> z) {
  const C<R> k = asin_acos_kernel(std::abs(z.real()), std::abs(z.imag()));
  return {std::atan2(k.real(), z.real()), z.imag() < R(0) ? k.imag() : -k.imag()};
}
template <class R> inline C<R> asinh(C<R> z) {
  const C<R> k = asin_acos_kernel(std::abs(z.imag()), std::abs(z.real()));
  return {z.real() < R(0) ? -k.imag() : k.imag(), std::atan2(z.imag(), k.real())};
}
/// acosh as jnp.arccosh: CHLO's acosh, negated where its real part is negative.
template <class R> inline C<R> acosh(C<R> z) {
  const C<R> k = asin_acos_kernel(std::abs(z.real()), std::abs(z.imag()));
  const R t = std::atan2(k.real(), z.real());
  const C<R> w(k.imag(), z.imag() < R(0) ? -t : t);
  return w.real() < R(0) ? -w : w;
}

/// atanh(z) = log1p(4|a| / ((1 - |a|)^2 + b^2)) / 4 (signed like a) + i atan2(2b, (1 - a)(1 + a)
/// - b^2) / 2, StableHLO's decomposition; outside the safe range the real part is taken from
/// 1/|a| or 1/(b (|a|/b + b/|a|)) and the imaginary part is +-pi/2.
template <class R> inline C<R> atanh(C<R> z) {
  const R x = z.real(), y = z.imag(), ax = std::abs(x), ay = std::abs(y);
  const R inv_eps = R(2) / std::numeric_limits<R>::epsilon() + R(2);  // 2^p + 2
  const R safe_max = inv_eps * inv_eps;
  const bool safe = ax < safe_max && ay < safe_max;
  const R naxm1 = R(1) - ax, y2 = y * y;
  R t;
  if (safe) t = ax / (naxm1 * naxm1 + y2);
  else if (ay * inv_eps < ax) t = R(1) / ax;
  else if (isinf_(x) || isinf_(y)) t = R(0);
  else t = R(1) / ((ax / y + y / ax) * y);
  const R re = ((x >= R(0) ? R(1) : R(-1)) * std::log1p(R(4) * t)) * R(0.25);
  const R im = (safe ? std::atan2(y + y, naxm1 * (ax + R(1)) - y2) : (y >= R(0) ? R(1) : R(-1)) * kPi<R>) * R(0.5);
  return {re, im};
}

/// atan(z) = -i atanh(iz), with iz = (-b, a) and -i w = (Im w, -Re w).
template <class R> inline C<R> atan(C<R> z) {
  const C<R> w = cx::atanh(C<R>(-z.imag(), z.real()));
  return {w.imag(), -w.real()};
}

/// jnp.square of a complex number (CHLO): (a - b)(a + b) + 2ab i, with a real part of +0 when
/// |a| = |b| is finite.
template <class R> inline C<R> square(C<R> z) {
  const R a = z.real(), b = z.imag();
  const R re = std::isfinite(a) && std::abs(a) == std::abs(b) ? R(0) : (a - b) * (a + b);
  return {re, (a * b) * R(2)};
}

}  // namespace tessel::scalar::cx
