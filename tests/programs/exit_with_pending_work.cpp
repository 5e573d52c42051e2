// Exits while large computations are still queued on several device streams: the runtime
// must finish (or drop) them cleanly, never crash or hang at exit.
#include <cstdio>

#include "tessel/tessel.h"

namespace ts = tessel;

int main() {
  std::vector<ts::Array> keep;
  for (const ts::Device& d : ts::devices()) {
    ts::Array x = ts::device_put(ts::ones({512, 512}), d);
    for (int i = 0; i < 20; ++i) x = ts::sin(x) * 1.0001 + ts::transpose(x);
    keep.push_back(x);  // never waited on
  }
  std::printf("dispatched on %zu devices\n", keep.size());
  return 0;
}
