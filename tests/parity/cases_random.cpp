// tessel's side of tests/parity/cases_random.py (include/tessel/random.h).
#include "parity/parity.h"
#include "tessel/random.h"

namespace ts = tessel;
using namespace tessel::parity;

TESSEL_PARITY_CASES(random) {
  reg("random.key", [](const In&, const Params& p) { return out(ts::random::key(p.i("seed"))); });
  reg("random.split", [](const In& x, const Params& p) { return out(ts::random::split(x[0], p.i("num"))); });
  reg("random.fold_in", binary(ts::random::fold_in));
  reg("random.bits", [](const In& x, const Params& p) {
    return out(ts::random::bits(x[0], p.ints("shape"), p.dtype("dtype")));
  });
  reg("random.uniform", [](const In& x, const Params& p) {
    if (x.size() == 3) return out(ts::random::uniform(x[0], p.ints("shape"), p.dtype("dtype"), x[1], x[2]));
    return out(ts::random::uniform(x[0], p.ints("shape"), p.dtype("dtype")));
  });
  reg("random.normal", [](const In& x, const Params& p) {
    return out(ts::random::normal(x[0], p.ints("shape"), p.dtype("dtype")));
  });
  reg("random.threefry_2x32", binary(ts::random::threefry_2x32));
}
