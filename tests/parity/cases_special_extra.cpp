// tessel's side of tests/parity/cases_special_extra.py (the rest of include/tessel/scipy_special.h).
#include "parity/parity.h"
#include "tessel/scipy_special.h"

namespace sp = tessel::scipy::special;
using namespace tessel::parity;

TESSEL_PARITY_CASES(special_extra) {
  reg("scipy.special.dawsn", unary(sp::dawsn));
  reg("scipy.special.wofz", unary(sp::wofz));
  reg("scipy.special.owens_t", binary(sp::owens_t));
  reg("scipy.special.sici", [](const In& x, const Params&) {
    auto [si, ci] = sp::sici(x.at(0));
    return Out{si, ci};
  });
  reg("scipy.special.fresnel", [](const In& x, const Params&) {
    auto [s, c] = sp::fresnel(x.at(0));
    return Out{s, c};
  });
  reg("scipy.special.bessel_jn", [](const In& x, const Params& p) {
    return out(sp::bessel_jn(x.at(0), p.i("v"), p.has("n_iter") ? p.i("n_iter") : 50));
  });
  reg("scipy.special.hyp1f1", [](const In& x, const Params&) { return out(sp::hyp1f1(x.at(0), x.at(1), x.at(2))); });
  reg("scipy.special.hyp2f1",
      [](const In& x, const Params&) { return out(sp::hyp2f1(x.at(0), x.at(1), x.at(2), x.at(3))); });
  reg("scipy.special.sph_harm_y", [](const In& x, const Params& p) {
    return out(sp::sph_harm_y(x.at(0), x.at(1), x.at(2), x.at(3), p.i("n_max")));
  });
}
