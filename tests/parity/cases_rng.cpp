// tessel's side of tests/parity/cases_rng.py (lax::rng_bit_generator with kThreeFry).
#include "parity/parity.h"
#include "tessel/lax_extra.h"

namespace lax = tessel::lax;
using namespace tessel::parity;

TESSEL_PARITY_CASES(rng) {
  reg("threefry.rng_bit_generator", [](const In& x, const Params& p) {
    auto [key, bits] = lax::rng_bit_generator(x.at(0), p.ints("shape"), p.dtype("dtype"), lax::RandomAlgorithm::kThreeFry);
    return Out{key, bits};
  });
}
