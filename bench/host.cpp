// Host callbacks: the cost of an id_tap and of a `call` round trip inside a jitted loop,
// measured as the loop's time with the callback minus its time without, per iteration.
//   host.id_tap_us          a scalar tap per iteration (barrier_wait included): goal <= 1 us
//   host.call_roundtrip_us  a scalar `call` per iteration: goal <= 5 us
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>

#include "bench_util.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace tb = tessel::bench;

namespace {

/// Seconds of the best of `repeats` runs of `f`.
template <class F> double best_seconds(F&& f, int repeats) {
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const int n_tap = argc > 1 ? std::atoi(argv[1]) : 200000;
  const int n_call = argc > 2 ? std::atoi(argv[2]) : 50000;
  const int repeats = 5;
  const ts::Array x0(0.0f);
  std::atomic<int64_t> taps = 0;

  auto plain = [](int n) {
    return ts::jit([n](const ts::Array& x) {
      return ts::fori_loop(0, n, [](const ts::Array&, const ts::Array& c) { return c + 1.0f; }, x);
    });
  };

  // ---- id_tap ----
  auto loop = plain(n_tap);
  auto tapped = ts::jit([&](const ts::Array& x) {
    return ts::fori_loop(0, n_tap, [&](const ts::Array&, const ts::Array& c) {
      ts::Array next = c + 1.0f;
      ts::host::id_tap([&](const ts::Array&, const ts::host::Transforms&) { taps.fetch_add(1, std::memory_order_relaxed); },
                       next);
      return next;
    }, x);
  });
  loop(x0).block_until_ready();  // compile
  tapped(x0).block_until_ready();
  ts::host::barrier_wait();
  const double t_loop = best_seconds([&] { loop(x0).block_until_ready(); }, repeats);
  const double t_tap = best_seconds([&] {
    tapped(x0).block_until_ready();
    ts::host::barrier_wait();
  }, repeats);
  if (taps.load() != int64_t(n_tap) * (repeats + 1)) {
    std::fprintf(stderr, "host bench: %lld taps arrived, expected %lld\n", (long long)taps.load(),
                 (long long)n_tap * (repeats + 1));
    return 1;
  }
  tb::report("host.loop_iteration_us", t_loop / n_tap * 1e6, "us");
  tb::report("host.id_tap_us", (t_tap - t_loop) / n_tap * 1e6, "us");

  // ---- call ----
  auto loop_c = plain(n_call);
  auto called = ts::jit([&](const ts::Array& x) {
    return ts::fori_loop(0, n_call, [&](const ts::Array&, const ts::Array& c) {
      return ts::host::call([](const ts::Array& a) { return ts::Array(a.item<float>() + 1.0f); }, c,
                            {.result_shape = ts::ShapeDtype({}, ts::f32)});
    }, x);
  });
  if (called(x0).item<float>() != float(n_call)) {
    std::fprintf(stderr, "host bench: the call loop computed a wrong value\n");
    return 1;
  }
  loop_c(x0).block_until_ready();
  const double t_loop_c = best_seconds([&] { loop_c(x0).block_until_ready(); }, repeats);
  const double t_call = best_seconds([&] { called(x0).block_until_ready(); }, repeats);
  tb::report("host.call_roundtrip_us", (t_call - t_loop_c) / n_call * 1e6, "us");
  return 0;
}
