// Returns from main while work of every kind is still pending: large computations queued on
// several device streams, jitted host::call whose callbacks compute with tessel, taps,
// colocated calls, communication and eager work. Exit's teardown (src/core/lifetime.h) must
// finish all of it before anything that work touches is destroyed: never crash, never hang.
// The report printed after the teardown counts the callbacks that ran. Run 50 times by
// exit_with_pending_work.sh (a crash used to come about 1 run in 7).
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "tessel/colocated.h"
#include "tessel/comm.h"
#include "tessel/tessel.h"

namespace ts = tessel;

namespace {

std::atomic<int> g_calls{0}, g_taps{0}, g_colocated{0};

// Made before main, so destroyed after exit's teardown: it sees every pending callback done.
struct Report {
  int devices = 0;
  ~Report() {
    std::printf("at exit: %d calls, %d taps, %d colocated calls (expected %d, %d, 1)\n", g_calls.load(),
                g_taps.load(), g_colocated.load(), devices, devices);
    std::fflush(stdout);
  }
} g_report;

ts::Array slow(ts::Array x) {
  for (int i = 0; i < 5; ++i) x = ts::sin(x) * 1.0001 + ts::transpose(x);
  return x;
}

}  // namespace

int main(int argc, char** argv) {
  // Without communication MPI's own exit handler does not drain the streams first.
  const bool with_comm = !(argc > 1 && std::string(argv[1]) == "no-comm");
  const std::vector<ts::Device> devices = ts::devices();
  g_report.devices = int(devices.size());
  // A jitted call (which computes with tessel) and a tap, queued behind slow work: they run
  // after main returned.
  auto call_and_tap = ts::jit([](const ts::Array& x) {
    ts::Array y = ts::host::call(
        [](const ts::Array& v) {
          ++g_calls;
          return v + ts::ones_like(v) * ts::arange(v.shape()[1], v.dtype());
        },
        x, {.result_shape = ts::ShapeDtype(x.shape(), x.dtype())});
    return ts::host::id_tap([](const ts::Array& v, const ts::host::Transforms&) { g_taps += v.size() > 0; }, y);
  });
  // Compiled now, so that the calls below only queue: no callback runs before main returns.
  for (const ts::Device& d : devices) (void)call_and_tap.lower(ts::device_put(ts::ones({1024, 1024}), d));
  std::vector<ts::Array> keep;
  // A colocated call still running.
  ts::Mesh mesh(ts::colocated::colocated_cpu_devices(devices), {int64_t(devices.size())}, {"x"});
  ts::Array r = ts::device_put(ts::ones({8}), ts::NamedSharding(mesh, ts::P()));
  auto add_one = ts::colocated::colocated([](const ts::Array& v) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ++g_colocated;
    return v + 1.0f;
  });
  keep.push_back(add_one(r));
  // Communication (a one-process MPI world) queued behind slow work.
  if (with_comm) {
    ts::Array c = slow(ts::ones({256, 256}));
    for (int i = 0; i < 20; ++i) c = ts::comm::allreduce(c, ts::comm::SUM) * 0.5f;
    keep.push_back(c);
  }
  for (const ts::Device& d : devices) {
    ts::Array x = slow(ts::device_put(ts::ones({1024, 1024}), d));
    keep.push_back(call_and_tap(x));
    keep.push_back(slow(x));  // eager work after the call
  }
  std::printf("dispatched on %zu devices\n", devices.size());
  std::fflush(stdout);
  return 0;
}
