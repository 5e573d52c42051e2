// The rest of jax.scipy.special (include/tessel/scipy_special.h, docs/special.md): Dawson's,
// the sine/cosine and Fresnel integrals, Owen's T, the Faddeeva function, Bessel J_n, the
// hypergeometric functions 1F1 and 2F1 and the spherical harmonics. Each is a composition of
// tessel's element-wise primitives following JAX's algorithm (jax/_src/scipy/special.py and
// jax/_src/third_party/scipy/special.py) with JAX's custom derivatives; the rational
// approximations' coefficients are Cephes', Cody's and Weideman's published tables.
//
// JAX evaluates the series of 1F1 and 2F1 in a vectorized while_loop, which runs each element
// until its own term is small; masked_while below is the same loop over whole arrays.
#include <cmath>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include "scipy/special_util.h"
#include "tessel/control_flow.h"
#include "tessel/error.h"
#include "tessel/numpy.h"
#include "tessel/ops.h"
#include "tessel/scipy_special.h"
#include "tessel/special.h"
#include "tessel/transforms.h"

namespace tessel::scipy::special {
namespace {

constexpr double kPi = std::numbers::pi;
using scipy::detail::horner;

std::string qualified(const char* fn) { return std::string("special::") + fn; }
Array f32_or_f64(const char* fn, const Array& x) { return scipy::detail::f32_or_f64(qualified(fn), x); }
/// The arguments promoted together, float32 or float64.
std::vector<Array> f32_or_f64_all(const char* fn, std::vector<Array> xs) {
  std::vector<Array> v = scipy::detail::real_inexact_all(qualified(fn), std::move(xs));
  for (Array& a : v) a = f32_or_f64(fn, a);
  return broadcast_arrays(v);
}

double eps_of(const Array& x) {
  return x.dtype() == DType::float64 ? std::numeric_limits<double>::epsilon()
                                     : double(std::numeric_limits<float>::epsilon());
}
Array constant(const Array& like, double v) { return full_like(like, Scalar(v)); }

/// Repeats `body` on the elements where `active(state)` holds until none does; the other
/// elements keep their values (a vectorized while_loop: every element runs its own loop).
template <class Active, class Body>
std::vector<Array> masked_while(std::vector<Array> init, const Active& active, const Body& body) {
  return while_loop([&](const std::vector<Array>& s) { return any(active(s)); },
                    [&](const std::vector<Array>& s) {
                      Array on = active(s);
                      std::vector<Array> next = body(s);
                      for (size_t i = 0; i < next.size(); ++i) next[i] = where(on, next[i], s[i]);
                      return next;
                    },
                    init);
}

// ---- Dawson's integral ----

Array dawsn_value(const Array& x) {
  Array ax = abs(x);
  Array t = Array(1.0) / square(ax);
  // Each region on safe points only, so no unused branch overflows into inf / inf.
  Array r1 = ax < Array(3.25), r3 = ax >= Array(6.25), r2 = (!r1) & (!r3);
  Array ax1 = where(r1, ax, ones_like(ax)), ax1sq = square(ax1);
  Array v1 = ax1 *
             horner({1.13681498971755972054e-11, 8.49262267667473811108e-10, 1.94434204175553054283e-8,
                     9.53151741254484363489e-7, 3.07828309874913200438e-6, 3.52513368520288738649e-4,
                     -8.50149846724410912031e-4, 4.22618223005546594270e-2, -9.17480371773452345351e-2,
                     9.99999999999999994612e-1},
                    ax1sq) /
             horner({2.40372073066762605484e-11, 1.48864681368493396752e-9, 5.21265281010541664570e-8,
                     1.27258478273186970203e-6, 2.32490249820789513991e-5, 3.25524741826057911661e-4,
                     3.48805814657162590916e-3, 2.79448531198828973716e-2, 1.58874241960120565368e-1,
                     5.74918629489320327824e-1, 1.00000000000000000539e0},
                    ax1sq);
  Array t2 = where(r2, t, ones_like(t)), ax2 = where(r2, ax, ones_like(ax));
  Array v2 = (Array(0.5) / ax2) *
             (Array(1.0) + t2 *
                               horner({5.08955156417900903354e-1, -2.44754418142697847934e-1, 9.41512335303534411857e-2,
                                       -2.18711255142039025206e-2, 3.66207612329569181322e-3, -4.23209114460388756528e-4,
                                       3.59641304793896631888e-5, -2.14640351719968974225e-6, 9.10010780076391431042e-8,
                                       -2.40274520828250956942e-9, 3.59233385440928410398e-11},
                                      t2) /
                               horner({1.00000000000000000000e0, -6.31839869873368190192e-1, 2.36706788228248691528e-1,
                                       -5.31806367003223277662e-2, 8.48041718586295374409e-3, -9.47996768486665330168e-4,
                                       7.81025592944552338085e-5, -4.55875153252442634831e-6, 1.89100358111421846170e-7,
                                       -4.91324691331920606875e-9, 7.18466403235734541950e-11},
                                      t2));
  Array t3 = where(r3, t, ones_like(t)), ax3 = where(r3, ax, ones_like(ax));
  Array v3 = (Array(0.5) / ax3) *
             (Array(1.0) + t3 *
                               horner({-5.90592860534773254987e-1, 6.29235242724368800674e-1, -1.72858975380388136411e-1,
                                       1.64837047825189632310e-2, -4.86827613020462700845e-4},
                                      t3) /
                               horner({1.00000000000000000000e0, -2.69820057197544900361e0, 1.73270799045947845857e0,
                                       -3.93708582281939493482e-1, 3.44278924041233391079e-2, -9.73655226040941223894e-4},
                                      t3));
  return sign(x) * where(r1, v1, where(r2, v2, v3));
}

const auto dawsn_fn = custom_jvp([](const Array& x) { return dawsn_value(x); },
                                 [](const std::tuple<Array>& p, const std::tuple<Array>& t) {
                                   const Array& x = std::get<0>(p);
                                   Array out = dawsn_value(x);
                                   return std::pair(out, std::get<0>(t) * (Array(1.0) - Array(2.0) * x * out));
                                 });

// ---- sine and cosine integrals ----

std::pair<Array, Array> sici_value(const Array& x) {
  Array ax = abs(x);
  // |x| <= 4: Cephes' rational series.
  Array t = ax * ax;
  Array si_series = (ax * horner({-8.39167827910303881427E-11, 4.62591714427012837309E-8, -9.75759303843632795789E-6,
                                  9.76945438170435310816E-4, -4.13470316229406538752E-2, 1.00000000000000000302E0},
                                 t)) /
                    horner({2.03269266195951942049E-12, 1.27997891179943299903E-9, 4.41827842801218905784E-7,
                            9.96412122043875552487E-5, 1.42085239326149893930E-2, 9.99999999999999996984E-1},
                           t);
  Array ci_series = Array(std::numbers::egamma) + log(ax) +
                    t *
                        horner({2.02524002389102268789E-11, -1.35249504915790756375E-8, 3.59325051419993077021E-6,
                                -4.74007206873407909465E-4, 2.89159652607555242092E-2, -1.00000000000000000080E0},
                               t) /
                        horner({4.07746040061880559506E-12, 3.06780997581887812692E-9, 1.23210355685883423679E-6,
                                3.17442024775032769882E-4, 5.10028056236446052392E-2, 4.00000000000000000080E0},
                               t);
  Array zero = ax == Array(0.0);
  si_series = where(zero, zeros_like(ax), si_series);
  ci_series = where(zero, constant(ax, -INFINITY), ci_series);
  // 4 < |x| <= 1e9: the auxiliary functions f and g (two rational fits, below and above 8).
  Array s = sin(ax), c = cos(ax), z = Array(1.0) / (ax * ax);
  Array f4 = horner({4.23612862892216586994E0, 5.45937717161812843388E0, 1.62083287701538329132E0,
                     1.67006611831323023771E-1, 6.81020132472518137426E-3, 1.08936580650328664411E-4,
                     5.48900223421373614008E-7},
                    z) /
             (ax * horner({1, 8.16496634205391016773E0, 7.30828822505564552187E0, 1.86792257950184183883E0,
                           1.78792052963149907262E-1, 7.01710668322789753610E-3, 1.10034357153915731354E-4,
                           5.48900252756255700982E-7},
                          z));
  Array g4 = z *
             horner({8.71001698973114191777E-2, 6.11379109952219284151E-1, 3.97180296392337498885E-1,
                     7.48527737628469092119E-2, 5.38868681462177273157E-3, 1.61999794598934024525E-4,
                     1.97963874140963632189E-6, 7.82579040744090311069E-9},
                    z) /
             horner({1, 1.64402202413355338886E0, 6.66296701268987968381E-1, 9.88771761277688796203E-2,
                     6.22396345441768420760E-3, 1.73221081474177119497E-4, 2.02659182086343991969E-6,
                     7.82579218933534490868E-9},
                    z);
  Array f8 = horner({4.55880873470465315206E-1, 7.13715274100146711374E-1, 1.60300158222319456320E-1,
                     1.16064229408124407915E-2, 3.49556442447859055605E-4, 4.86215430826454749482E-6,
                     3.20092790091004902806E-8, 9.41779576128512936592E-11, 9.70507110881952024631E-14},
                    z) /
             (ax * horner({1.0, 9.17463611873684053703E-1, 1.78685545332074536321E-1, 1.22253594771971293032E-2,
                           3.58696481881851580297E-4, 4.92435064317881464393E-6, 3.21956939101046018377E-8,
                           9.43720590350276732376E-11, 9.70507110881952025725E-14},
                          z));
  Array g8 = z *
             horner({6.97359953443276214934E-1, 3.30410979305632063225E-1, 3.84878767649974295920E-2,
                     1.71718239052347903558E-3, 3.48941165502279436777E-5, 3.47131167084116673800E-7,
                     1.70404452782044526189E-9, 3.85945925430276600453E-12, 3.14040098946363334640E-15},
                    z) /
             horner({1.0, 1.68548898811011640017E0, 4.87852258695304967486E-1, 4.67913194259625806320E-2,
                     1.90284426674399523638E-3, 3.68475504442561108162E-5, 3.57043223443740838771E-7,
                     1.72693748966316146736E-9, 3.87830166023954706752E-12, 3.14040098946363335242E-15},
                    z);
  Array below_8 = ax < Array(8.0);
  Array f = where(below_8, f4, f8), g = where(below_8, g4, g8);
  Array si_asymptotic = Array(kPi / 2) - f * c - g * s;
  Array ci_asymptotic = f * s - g * c;
  // |x| > 1e9: the leading terms.
  Array pos_inf = isposinf(ax);
  Array si_far = where(pos_inf, constant(ax, kPi / 2), Array(kPi / 2) - c / ax);
  Array ci_far = where(pos_inf, zeros_like(ax), s / ax);
  Array near = ax <= Array(4.0), mid = (ax > Array(4.0)) & (ax <= Array(1e9));
  Array si = sign(x) * where(near, si_series, where(mid, si_asymptotic, si_far));
  Array ci = where(near, ci_series, where(mid, ci_asymptotic, ci_far));
  return {si, where(isneginf(x), constant(x, NAN), ci)};
}

const auto sici_fn = custom_jvp([](const Array& x) { return sici_value(x); },
                                [](const std::tuple<Array>& p, const std::tuple<Array>& t) {
                                  const Array& x = std::get<0>(p);
                                  const Array& dx = std::get<0>(t);
                                  return std::pair(sici_value(x), std::pair(sinc(x / Array(kPi)) * dx, cos(x) / x * dx));
                                });

// ---- Fresnel integrals ----

/// {sin, cos}(pi x^2 / 2) reduced exactly: with s = x mod 2, x^2 / 2 = s (x - s / 2) mod 2.
std::pair<Array, Array> sincos_pi_half_square(const Array& x0) {
  Array x = abs(x0);
  Array s = fmod(x, Array(2.0));
  Array r = fmod(s * (x - s / Array(2.0)), Array(2.0));
  Array sinpi = where(r < Array(0.5), sin(Array(kPi) * r),
                      where(r > Array(1.5), sin(Array(kPi) * (r - Array(2.0))), -sin(Array(kPi) * (r - Array(1.0)))));
  Array cospi = where(r == Array(0.5), zeros_like(r),
                      where(r < Array(1.0), -sin(Array(kPi) * (r - Array(0.5))), sin(Array(kPi) * (r - Array(1.5)))));
  return {sinpi, cospi};
}

std::pair<Array, Array> fresnel_value(const Array& xx) {
  const bool single = xx.dtype() == DType::float32;
  Array x = abs(xx), x2 = x * x, t4 = x2 * x2;
  Array s_small, c_small;
  if (single) {
    s_small = x * x2 *
              horner({+1.647629463788700e-9, -1.522754752581096e-7, +8.424748808502400e-6, -3.120693124703272e-4,
                      +7.244727626597022e-3, -9.228055941124598e-2, +5.235987735681432e-1},
                     t4);
    c_small = x * horner({+1.416802502367354e-8, -1.157231412229871e-6, +5.387223446683264e-5, -1.604381798862293e-3,
                          +2.818489036795073e-2, -2.467398198317899e-1, +9.999999760004487e-1},
                         t4);
  } else {
    s_small = x * x2 *
              horner({-2.99181919401019853726e3, +7.08840045257738576863e5, -6.29741486205862506537e7,
                      +2.54890880573376359104e9, -4.42979518059697779103e10, +3.18016297876567817986e11},
                     t4) /
              horner({+1.00000000000000000000e0, +2.81376268889994315696e2, +4.55847810806532581675e4,
                      +5.17343888770096400730e6, +4.19320245898111231129e8, +2.24411795645340920940e10,
                      +6.07366389490084639049e11},
                     t4);
    c_small = x *
              horner({-4.98843114573573548651e-8, +9.50428062829859605134e-6, -6.45191435683965050962e-4,
                      +1.88843319396703850064e-2, -2.05525900955013891793e-1, +9.99999999999999998822e-1},
                     t4) /
              horner({+3.99982968972495980367e-12, +9.15439215774657478799e-10, +1.25001862479598821474e-7,
                      +1.22262789024179030997e-5, +8.68029542941784300606e-4, +4.12142090722199792936e-2,
                      +1.00000000000000000118e0},
                     t4);
  }
  auto [sinpi, cospi] = sincos_pi_half_square(x);
  Array c_large = single ? constant(x, 0.5) : Array(0.5) + Array(1.0) / (Array(kPi) * x) * sinpi;
  Array s_large = single ? constant(x, 0.5) : Array(0.5) - Array(1.0) / (Array(kPi) * x) * cospi;
  // The auxiliary functions f and g in between.
  Array pt = Array(kPi) * x2;
  Array u = Array(1.0) / (pt * pt), tinv = Array(1.0) / pt;
  Array f, g;
  if (single) {
    f = Array(1.0) - u * horner({-1.903009855649792e12, +1.355942388050252e11, -4.158143148511033e9,
                                 +7.343848463587323e7, -8.732356681548485e5, +8.560515466275470e3,
                                 -1.032877601091159e2, +2.999401847870011e0},
                                u);
    g = tinv * horner({-1.860843997624650e11, +1.278350673393208e10, -3.779387713202229e8, +6.492611570598858e6,
                       -7.787789623358162e4, +8.602931494734327e2, -1.493439396592284e1, +9.999841934744914e-1},
                      u);
  } else {
    f = Array(1.0) - u *
                         horner({+4.21543555043677546506e-1, +1.43407919780758885261e-1, +1.15220955073585758835e-2,
                                 +3.45017939782574027900e-4, +4.63613749287867322088e-6, +3.05568983790257605827e-8,
                                 +1.02304514164907233465e-10, +1.72010743268161828879e-13, +1.34283276233062758925e-16,
                                 +3.76329711269987889006e-20},
                                u) /
                         horner({+1.00000000000000000000e0, +7.51586398353378947175e-1, +1.16888925859191382142e-1,
                                 +6.44051526508858611005e-3, +1.55934409164153020873e-4, +1.84627567348930545870e-6,
                                 +1.12699224763999035261e-8, +3.60140029589371370404e-11, +5.88754533621578410010e-14,
                                 +4.52001434074129701496e-17, +1.25443237090011264384e-20},
                                u);
    g = tinv *
        horner({+5.04442073643383265887e-1, +1.97102833525523411709e-1, +1.87648584092575249293e-2,
                +6.84079380915393090172e-4, +1.15138826111884280931e-5, +9.82852443688422223854e-8,
                +4.45344415861750144738e-10, +1.08268041139020870318e-12, +1.37555460633261799868e-15,
                +8.36354435630677421531e-19, +1.86958710162783235106e-22},
               u) /
        horner({+1.00000000000000000000e0, +1.47495759925128324529e0, +3.37748989120019970451e-1,
                +2.53603741420338795122e-2, +8.14679107184306179049e-4, +1.27545075667729118702e-5,
                +1.04314589657571990585e-7, +4.60680728146520428211e-10, +1.10273215066240270757e-12,
                +1.38796531259578871258e-15, +8.39158816283118707363e-19, +1.86958710162783236342e-22},
               u);
  }
  Array px = Array(kPi) * x;
  Array c_other = Array(0.5) + (f * sinpi - g * cospi) / px;
  Array s_other = Array(0.5) - (f * cospi + g * sinpi) / px;
  Array inf = isinf(xx), small = x2 < Array(2.5625), large = x > Array(36974.0);
  Array half = constant(x, 0.5);
  Array s = where(inf, half, where(small, s_small, where(large, s_large, s_other)));
  Array c = where(inf, half, where(small, c_small, where(large, c_large, c_other)));
  Array neg = xx < Array(0.0);
  return {where(neg, -s, s), where(neg, -c, c)};
}

const auto fresnel_fn = custom_jvp([](const Array& x) { return fresnel_value(x); },
                                   [](const std::tuple<Array>& p, const std::tuple<Array>& t) {
                                     const Array& x = std::get<0>(p);
                                     const Array& dx = std::get<0>(t);
                                     auto [sinpi, cospi] = sincos_pi_half_square(x);
                                     return std::pair(fresnel_value(x), std::pair(sinpi * dx, cospi * dx));
                                   });

// ---- Owen's T ----

/// The 13-point quadrature of Patefield and Tandy's method T5 for 0 <= a <= 1.
Array owens_t_quadrature(const Array& h, const Array& a) {
  static constexpr double kPoints[13] = {
      0.0035082039676451715, 0.031279042338030754, 0.085266826283219451, 0.16245071730812277, 0.25851196049125435,
      0.36807553840697534,   0.48501092905604697,  0.60277514152618577,  0.71477884217753227, 0.81475510988760099,
      0.89711029755948966,   0.95723808085944262,  0.99178832974629704};
  static constexpr double kWeights[13] = {
      0.018831438115323503, 0.018567086243977649, 0.018042093461223386, 0.017263829606398753, 0.016243219975989857,
      0.014994592034116705, 0.013535474469662088, 0.011886351605820165, 0.010070377242777432, 0.0081130545742299587,
      0.0060419009528470239, 0.0038862217010742058, 0.0016793031084546090};
  Array a2 = square(a), h2 = square(h);
  Array sum = zeros_like(a);
  for (int i = 0; i < 13; ++i) {
    Array r = a2 * Array(kPoints[i]);
    sum = sum + exp(Array(-0.5) * h2 * (Array(1.0) + r)) / (Array(1.0) + r) * Array(kWeights[i]);
  }
  return a * sum;
}

Array owens_t_value(const Array& h0, const Array& a) {
  const double root2 = std::sqrt(2.0);
  Array h = abs(h0), abs_a = abs(a);
  Array h_normed = h / Array(root2);
  Array at_most_1 = abs_a <= Array(1.0);
  Array ma = where(at_most_1, abs_a, Array(1.0) / abs_a);
  Array mh = where(at_most_1, h, abs_a * h);
  Array result = owens_t_quadrature(mh, ma);
  // Exact values at h = 0 and at a = 1.
  result = where(mh == Array(0.0), arctan(ma) / Array(2 * kPi), result);
  result = where(ma == Array(1.0), Array(0.125) * tessel::erfc(-mh / Array(root2)) * tessel::erfc(mh / Array(root2)), result);
  // T(h, a) = (Phi(h) + Phi(ah)) / 2 - Phi(h) Phi(ah) - T(ah, 1/a) for |a| > 1.
  Array normh = tessel::erfc(h_normed), normah = tessel::erfc(abs_a * h_normed);
  Array reflected = where(abs_a * h <= Array(0.67),
                          Array(0.25) - Array(0.25) * tessel::erf(h_normed) * tessel::erf(abs_a * h_normed) - result,
                          Array(0.25) * (normh + normah - normh * normah) - result);
  result = sign(a) * where(abs_a > Array(1.0), reflected, result);
  return where(isnan(a) | isnan(h0), constant(result, NAN), result);
}

const auto owens_t_fn = custom_jvp(
    [](const Array& h, const Array& a) { return owens_t_value(h, a); },
    [](const std::tuple<Array, Array>& p, const std::tuple<Array, Array>& t) {
      const auto& [h, a] = p;
      const auto& [dh, da] = t;
      Array d_h = -exp(Array(-0.5) * square(h)) * tessel::erf(a * h / Array(std::sqrt(2.0))) / Array(2.0 * std::sqrt(2 * kPi));
      Array a2p1 = square(a) + Array(1.0);
      Array d_a = exp(Array(-0.5) * a2p1 * square(h)) / (Array(2 * kPi) * a2p1);
      return std::pair(owens_t_value(h, a), d_h * dh + d_a * da);
    });

// ---- the Faddeeva function ----

/// w(z) for Im z >= 0: Weideman's N = 32 rational approximation in Z = (L + iz) / (L - iz).
Array wofz_upper(const Array& z) {
  constexpr double kL = 4.7568284600108841;
  Array re = real(z);
  Array iz = complex(-imag(z), re);
  Array L = complex(constant(re, kL), zeros_like(re));
  Array denom = L - iz;
  Array Z = (L + iz) / denom;
  Array p = horner({-1.3034426067909105e-12, 3.7411838373738471e-12,  8.030427700497756e-12,   -2.1543593557490879e-11,
                    -5.5442449963237932e-11, 1.165824698850374e-10,   4.1537441121999766e-10,  -5.2310202114920615e-10,
                    -3.2080151339721323e-09, 8.1248864216535907e-10,  2.3797556530014025e-08,  2.2930438438915445e-08,
                    -1.4813078929137642e-07, -4.1840763750512053e-07, 4.2558331397138446e-07,  4.4015317312832251e-06,
                    6.8210319443575151e-06,  -2.1409619201999998e-05, -0.00013075449254579421, -0.00024532980270038237,
                    0.00039259136070109705,  0.0045195411053493093,   0.019006155784845501,    0.057304403529837282,
                    0.14060716226893755,     0.29544451071508743,     0.54601397206393376,     0.9019254893648001,
                    1.3455441692345449,      1.8256696296324815,      2.2635372999002676,      2.5722534081245696},
                   Z);
  return Array(2.0) * p / (denom * denom) + Array(1.0 / std::sqrt(kPi)) / denom;
}

/// w(z) everywhere: the lower half plane through w(z) = 2 exp(-z^2) - w(-z).
Array wofz_value(const Array& z) {
  Array upper = imag(z) >= Array(0.0);
  Array w_upper = wofz_upper(where(upper, z, -z));
  return where(upper, w_upper, Array(2.0) * exp(-(z * z)) - w_upper);
}

const auto wofz_fn = custom_jvp([](const Array& z) { return wofz_value(z); },
                                [](const std::tuple<Array>& p, const std::tuple<Array>& t) {
                                  const Array& z = std::get<0>(p);
                                  Array out = wofz_value(z);
                                  Array re = real(z);
                                  Array i2 = complex(zeros_like(re), constant(re, 2.0 / std::sqrt(kPi)));
                                  return std::pair(out, std::get<0>(t) * (-(Array(2.0) * z * out) + i2));
                                });

// ---- the confluent hypergeometric function 1F1 ----

/// sum_k term_k, term_0 = first and term_{k+1} = term_k * ratio(k), from index k = 1 until
/// |term| <= eps |sum| or 250 terms; `weight(k)` multiplies each term as it is added (the
/// derivative series). `start` is the sum before the first term.
template <class Ratio, class Weight>
Array hyper_series(const Array& start, const Array& first, const Ratio& ratio, const Weight& weight) {
  const double eps = eps_of(first);
  std::vector<Array> s = masked_while(
      {start, ones_like(first), first},
      [&](const std::vector<Array>& v) { return (v[1] < Array(250.0)) & (abs(v[2]) / abs(v[0]) > Array(eps)); },
      [&](const std::vector<Array>& v) {
        const Array &sum = v[0], &k = v[1], &term = v[2];
        return std::vector<Array>{sum + weight(term, k), k + Array(1.0), term * ratio(k)};
      });
  return s[0];
}
Array plain_term(const Array& term, const Array&) { return term; }

Array hyp1f1_value(const Array& a, const Array& b, const Array& x) {
  Array series = hyper_series(
      ones_like(x), a / b * x, [&](const Array& k) { return (a + k) / (b + k) * x / (k + Array(1.0)); }, plain_term);
  Array tail = hyper_series(
      ones_like(x), (b - a) * (Array(1.0) - a) / x,
      [&](const Array& k) { return (b - a + k) * (Array(1.0) - a + k) / (k + Array(1.0)) / x; }, plain_term);
  Array asymptotic = gamma(b) / gamma(a) * exp(x) * pow(x, a - b) * tail;
  Array result = where(abs(x) < Array(100.0), series, asymptotic);
  Array a_zero = a == Array(0.0);
  return where(a_zero, ones_like(x),
               where(a == b, exp(x), where(b == Array(0.0), constant(x, INFINITY), result)));
}

/// d 1F1 / da (wrt_a) or d 1F1 / db: the series with each term weighted by digamma differences.
Array hyp1f1_parameter_derivative(const Array& a, const Array& b, const Array& x, bool wrt_a) {
  return hyper_series(
      zeros_like(x), a / b * x, [&](const Array& k) { return (a + k) / (b + k) * x / (k + Array(1.0)); },
      [&](const Array& term, const Array& k) {
        return wrt_a ? term * (tessel::digamma(a + k) - tessel::digamma(a))
                     : term * (tessel::digamma(b) - tessel::digamma(b + k));
      });
}

const auto hyp1f1_fn = custom_jvp(
    [](const Array& a, const Array& b, const Array& x) { return hyp1f1_value(a, b, x); },
    [](const std::tuple<Array, Array, Array>& p, const std::tuple<Array, Array, Array>& t) {
      const auto& [a, b, x] = p;
      const auto& [da, db, dx] = t;
      Array d_x = a / b * hyp1f1_value(a + Array(1.0), b + Array(1.0), x);
      return std::pair(hyp1f1_value(a, b, x), hyp1f1_parameter_derivative(a, b, x, true) * da +
                                                  hyp1f1_parameter_derivative(a, b, x, false) * db + d_x * dx);
    });

// ---- the Gauss hypergeometric function 2F1 ----

/// Whether v is within 50 eps of an integer (JAX's test for integer parameters).
Array near_integer(const Array& v) { return abs(v - round(v)) < Array(eps_of(v) * 50); }
Array is_whole(const Array& v) { return remainder(v, Array(1.0)) == Array(0.0); }

/// The terminating series, where a or b is a non-positive integer: |a| + 1 terms.
/// `use` marks the elements whose result is selected: the loop runs there only (its trip count
/// is the parameter's value).
Array hyp2f1_terminal(const Array& a0, const Array& b0, const Array& c, const Array& x, const Array& use) {
  // Loop over the parameter of larger magnitude unless c is a non-positive integer reached first.
  Array swap = (b0 < a0) & near_integer(b0) & (!(is_whole(c) & (c <= Array(0.0)) & (c > b0)));
  Array a = abs(where(swap, b0, a0)), b = where(swap, a0, b0);
  std::vector<Array> s = masked_while(
      {ones_like(x), ones_like(x), ones_like(x)},
      [&](const std::vector<Array>& v) { return use & (v[2] < a + Array(1.0)); },
      [&](const std::vector<Array>& v) {
        const Array &sum = v[0], &term = v[1], &i = v[2];
        Array next = term * (-(a - i + Array(1.0)) / (c + i - Array(1.0)) * (b + i - Array(1.0)) / i * x);
        return std::vector<Array>{sum + next, next, i + Array(1.0)};
      });
  return s[0];
}

/// The Taylor series sum_k (a)_k (b)_k / (c)_k x^k / k!.
Array hyp2f1_series(const Array& a, const Array& b, const Array& c, const Array& x) {
  const double eps = eps_of(x);
  std::vector<Array> s = masked_while(
      {zeros_like(x), ones_like(x), ones_like(x)},
      [&](const std::vector<Array>& v) { return (v[1] < Array(250.0)) & (abs(v[2]) > Array(eps) * abs(v[0])); },
      [&](const std::vector<Array>& v) {
        const Array &sum = v[0], &k = v[1], &term = v[2];
        Array km1 = k - Array(1.0);
        return std::vector<Array>{sum + term, k + Array(1.0), term * ((a + km1) * (b + km1) / (c + km1) / k * x)};
      });
  return s[0];
}

/// 2F1 near x = 1 where c - a - b is an integer (Abramowitz and Stegun 15.3.10-15.3.12).
/// `use` marks the selected elements, as for hyp2f1_terminal.
Array hyp2f1_digamma_transform(const Array& a, const Array& b, const Array& c, const Array& x, const Array& use) {
  const double eps = eps_of(x);
  const Array zero = zeros_like(x), one = ones_like(x);
  Array d = c - a - b, s = Array(1.0) - x, rd = round(d);
  Array nonneg = rd >= Array(0.0);
  Array e = where(nonneg, d, -d), d1 = where(nonneg, d, zero), d2 = where(nonneg, zero, d);
  Array ard = abs(rd);
  Array ax = log(s);
  auto psi = [](const Array& v) { return tessel::digamma(v); };
  Array y = (Array(-std::numbers::egamma) + psi(Array(1.0) + e) - psi(a + d1) - psi(b + d1) - ax) / gamma(e + Array(1.0));
  Array p = (a + d1) * (b + d1) * s / gamma(e + Array(2.0));
  // The series of the logarithmic terms; state (p, q, t, y).
  std::vector<Array> st = masked_while(
      {p, y, one, y},
      [&](const std::vector<Array>& v) { return (v[2] < Array(250.0)) & (abs(v[1]) >= Array(eps) * abs(v[3])); },
      [&](const std::vector<Array>& v) {
        const Array &pp = v[0], &t = v[2], &yy = v[3];
        Array r = psi(Array(1.0) + t) + psi(Array(1.0) + t + e) - psi(a + t + d1) - psi(b + t + d1) - ax;
        Array q = pp * r;
        Array np = pp * (s * (a + t + d1) / (t + Array(1.0)));
        np = np * ((b + t + d1) / (t + Array(1.0) + e));
        return std::vector<Array>{np, q, t + Array(1.0), yy + q};
      });
  Array ys = st[3];
  // The finite sum of |c - a - b| - 1 terms; state (p, t, y1, i).
  std::vector<Array> fs = masked_while(
      {one, zero, one, one}, [&](const std::vector<Array>& v) { return use & (v[3] < ard); },
      [&](const std::vector<Array>& v) {
        const Array &pp = v[0], &t = v[1], &y1 = v[2], &i = v[3];
        Array r = Array(1.0) - e + t;
        Array np = pp * (s * (a + t + d2) * (b + t + d2) / r);
        Array nt = t + Array(1.0);
        np = np / nt;
        return std::vector<Array>{np, nt, y1 + np, i + Array(1.0)};
      });
  Array gc = gamma(c);
  Array y1 = fs[2] * (gamma(e) * gc / (gamma(a + d1) * gamma(b + d1)));
  Array yf = ys * (gc / (gamma(a + d2) * gamma(b + d2)));
  yf = where(remainder(ard, Array(2.0)) != Array(0.0), -yf, yf);
  Array q = pow(s, rd);
  Array summed = where(rd > Array(0.0), yf * q + y1, yf + y1 * q);
  return where(rd == Array(0.0), ys * gc / (gamma(a) * gamma(b)), summed);
}

/// The series, the digamma form (x > 0.9 with integer c - a - b) or the terminating sum.
Array hyp2f1_terminal_or_series(const Array& a, const Array& b, const Array& c, const Array& x) {
  Array d = c - a - b;
  Array neg_int = ((a <= Array(0.0)) & near_integer(a)) | ((b <= Array(0.0)) & near_integer(b));
  Array near_one = (x > Array(0.9)) & (!neg_int);
  Array digamma_form = near_one & near_integer(d), terminal = (!near_one) & neg_int;
  return where(digamma_form, hyp2f1_digamma_transform(a, b, c, x, digamma_form),
               where(terminal, hyp2f1_terminal(a, b, c, x, terminal), hyp2f1_series(a, b, c, x)));
}

Array hyp2f1_value(const Array& a, const Array& b, const Array& c, const Array& x) {
  Array d = c - a - b, s = Array(1.0) - x, ca = c - a, cb = c - b;
  Array one = ones_like(x), inf = constant(x, INFINITY);
  Array trivial = (x == Array(0.0)) | (((a == Array(0.0)) | (b == Array(0.0))) & (c != Array(0.0)));
  Array c_pole = (c == Array(0.0)) | ((c < Array(0.0)) & is_whole(c));
  Array euler = (d <= Array(-1.0)) & (!((!near_integer(d)) & (s < Array(0.0))));
  Array lt1 = x < Array(1.0);
  return where(trivial, one,
         where(c_pole, inf,
         where(euler, pow(s, d) * hyp2f1_terminal_or_series(ca, cb, c, x),
         where((d <= Array(0.0)) & (x == Array(1.0)), inf,
         where(lt1 & (b == c), pow(s, -a),
         where(lt1 & (a == c), pow(s, -b),
         where(x > Array(1.0), inf,
         where(x == Array(1.0), gamma(c) * gamma(d) / (gamma(ca) * gamma(cb)),
               hyp2f1_terminal_or_series(a, b, c, x)))))))));
}

/// d 2F1 / d(a, b or c): the series weighted by digamma differences (param 0, 1, 2).
Array hyp2f1_parameter_derivative(const Array& a, const Array& b, const Array& c, const Array& x, int param) {
  return hyper_series(
      zeros_like(x), a * b / c * x,
      [&](const Array& k) { return (a + k) * (b + k) / (c + k) / (k + Array(1.0)) * x; },
      [&](const Array& term, const Array& k) {
        switch (param) {
          case 0: return term * (tessel::digamma(a + k) - tessel::digamma(a));
          case 1: return term * (tessel::digamma(b + k) - tessel::digamma(b));
          default: return term * (tessel::digamma(c) - tessel::digamma(c + k));
        }
      });
}

const auto hyp2f1_fn = custom_jvp(
    [](const Array& a, const Array& b, const Array& c, const Array& x) { return hyp2f1_value(a, b, c, x); },
    [](const std::tuple<Array, Array, Array, Array>& p, const std::tuple<Array, Array, Array, Array>& t) {
      const auto& [a, b, c, x] = p;
      const auto& [da, db, dc, dx] = t;
      Array d_x = a * b / c * hyp2f1_value(a + Array(1.0), b + Array(1.0), c + Array(1.0), x);
      return std::pair(hyp2f1_value(a, b, c, x), hyp2f1_parameter_derivative(a, b, c, x, 0) * da +
                                                     hyp2f1_parameter_derivative(a, b, c, x, 1) * db +
                                                     hyp2f1_parameter_derivative(a, b, c, x, 2) * dc + d_x * dx);
    });

}  // namespace

Array dawsn(const Array& x) { return dawsn_fn(f32_or_f64("dawsn", x)); }

std::pair<Array, Array> sici(const Array& x) { return sici_fn(f32_or_f64("sici", x)); }

std::pair<Array, Array> fresnel(const Array& x) { return fresnel_fn(f32_or_f64("fresnel", x)); }

Array owens_t(const Array& h, const Array& a) {
  std::vector<Array> v = f32_or_f64_all("owens_t", {h, a});
  return owens_t_fn(v[0], v[1]);
}

Array wofz(const Array& z0) {
  Array z = ops::to_inexact(z0);
  if (z.dtype() == DType::float32) z = astype(z, DType::complex64);
  else if (z.dtype() == DType::float64) z = astype(z, DType::complex128);
  if (z.dtype() != DType::complex64 && z.dtype() != DType::complex128)
    throw DTypeError("scipy::special::wofz: dtype " + std::string(dtype_name(z.dtype())) +
                     " is not supported; expected a float32/float64 or complex64/complex128 array");
  return wofz_fn(z);
}

Array bessel_jn(const Array& z0, int64_t v, int64_t n_iter) {
  if (v < 0) throw ValueError("scipy::special::bessel_jn: the order v must be >= 0, got " + std::to_string(v));
  if (n_iter < v)
    throw ValueError("scipy::special::bessel_jn: n_iter (" + std::to_string(n_iter) + ") must be at least v (" +
                     std::to_string(v) + "); JAX's rule of thumb takes n_iter well above v and |z|");
  Array z = f32_or_f64("bessel_jn", z0);
  // Miller's algorithm: the recurrence J_k = 2 (k + 1) / z J_{k+1} - J_{k+2} run downwards from
  // a tiny seed, normalized by J_0 + 2 (J_2 + J_4 + ...) = 1.
  Array f0 = zeros_like(z), f1 = constant(z, 1e-16), even_sum = zeros_like(z), f = zeros_like(z);
  std::vector<Array> low(size_t(v) + 1);
  for (int64_t k = n_iter; k >= 0; --k) {
    f = Array(2.0 * double(k + 1)) * f1 / z - f0;
    if (k % 2 == 0) even_sum = even_sum + Array(2.0) * f;
    f0 = f1;
    f1 = f;
    if (k <= v) low[size_t(k)] = f;
  }
  Array norm = even_sum - f;
  for (Array& j : low) j = j / norm;
  return stack(low, 0);
}

Array hyp1f1(const Array& a, const Array& b, const Array& x) {
  std::vector<Array> v = f32_or_f64_all("hyp1f1", {a, b, x});
  return hyp1f1_fn(v[0], v[1], v[2]);
}

Array hyp2f1(const Array& a, const Array& b, const Array& c, const Array& x) {
  std::vector<Array> v = f32_or_f64_all("hyp2f1", {a, b, c, x});
  return hyp2f1_fn(v[0], v[1], v[2], v[3]);
}

Array sph_harm_y(const Array& n0, const Array& m0, const Array& theta0, const Array& phi0, std::optional<int64_t> n_max) {
  if (!is_integer(n0.dtype()) || !is_integer(m0.dtype()))
    throw DTypeError("scipy::special::sph_harm_y: the degree n and order m must be integer arrays, got " +
                     std::string(dtype_name(n0.dtype())) + " and " + dtype_name(m0.dtype()));
  std::vector<Array> angles = f32_or_f64_all("sph_harm_y", {theta0, phi0});
  if (!n_max) {
    if (n0.is_tracer())
      throw ValueError("scipy::special::sph_harm_y: n_max must be given when n is traced (under jit or vmap)");
    n_max = n0.size() ? max(n0).item<int64_t>() : 0;
  }
  if (*n_max < 0) throw ValueError("scipy::special::sph_harm_y: n_max must be >= 0, got " + std::to_string(*n_max));
  std::vector<Array> b = broadcast_arrays({n0, m0, angles[0], angles[1]});
  const Array& theta = b[2];
  const DType dt = theta.dtype();
  // Orders and degrees clipped to n_max, as JAX's table lookup does.
  Array am = astype(minimum(abs(b[1]), full_like(b[1], Scalar(*n_max))), dt);
  Array n = astype(clip(b[0], zeros_like(b[0]), full_like(b[0], Scalar(*n_max))), dt);
  Array x = cos(theta);
  Array y = sqrt(Array(1.0) - x * x);
  // Normalized P_l^am(x) for l = 0 .. n_max by the diagonal, the first off-diagonal and the
  // three-term recurrence; `value` keeps P_n^am.
  Array zero = zeros_like(x);
  Array diag = constant(x, 0.5 / std::sqrt(kPi));  // P_l^l, starting at P_0^0
  Array prev2 = zero, prev1 = zero, value = zero;
  for (int64_t l = 0; l <= *n_max; ++l) {
    const double lf = double(l);
    if (l > 0) diag = Array(-std::sqrt(1.0 + 0.5 / lf)) * diag * y;
    Array m2 = am * am;
    Array d0 = sqrt((Array(4.0 * lf * lf) - Array(1.0)) / (Array(lf * lf) - m2));
    Array d1 = sqrt((Array(2.0 * lf + 1.0) * (Array((lf - 1) * (lf - 1)) - m2)) /
                    (Array(2.0 * lf - 3.0) * (Array(lf * lf) - m2)));
    Array first_off = sqrt(Array(2.0) * am + Array(3.0)) * x * prev1;
    Array recur = d0 * (prev1 * x) - d1 * prev2;
    Array cur = where(Array(lf) < am, zero,
                      where(Array(lf) == am, diag, where(Array(lf) == am + Array(1.0), first_off, recur)));
    value = where(n == Array(lf), cur, value);
    prev2 = prev1;
    prev1 = cur;
  }
  // The phase and the sign of negative orders use the order before clipping, as JAX's do.
  Array abs_m = astype(abs(b[1]), dt);
  Array angle = abs_m * b[3];
  Array harmonic = complex(value * cos(angle), value * sin(angle));
  Array odd = remainder(abs_m, Array(2.0)) != Array(0.0);
  Array negative = conj(harmonic) * where(odd, constant(x, -1.0), constant(x, 1.0));
  return where(b[1] < zeros_like(b[1]), negative, harmonic);
}

}  // namespace tessel::scipy::special
