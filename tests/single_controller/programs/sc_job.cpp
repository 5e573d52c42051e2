// Whole single-controller programs for the failure paths of the driver/worker channel
// (src/distributed/controller.cpp), one per mode, run by CTest as
// `mpirun -np 3 --mca orte_abort_on_non_zero_status 0 sc_job <mode>` (see
// tests/mpi/CMakeLists.txt): rank 0 is the driver, ranks 1 and 2 serve.
//   dead_worker       worker 2 exits (status 3) while it holds an array: the driver's next
//                     operation on it throws an Error naming the worker; worker 1 goes on
//   dead_in_mesh      worker 2 exits while both workers share a mesh: worker 1 waits for it
//                     in a collective, and the driver's read from worker 1 names worker 2
//                     instead of waiting forever; the job then ends (status 1)
//   worker_exception  worker 1 ends by an uncaught exception on a thread of its own: its
//                     death notice reaches the driver, whose next operation on it throws an
//                     Error carrying the reason
//   dead_in_pipeline  worker 2 exits 100 ms into a pipelined step over both workers: the
//                     driver's call throws an Error naming it instead of waiting for the step
//   dead_while_read   worker 2's long reply is announced to the driver, then worker 2 exits
//                     before the driver reads it (the driver is stopped meanwhile, SIGSTOP
//                     then SIGCONT): the driver reports worker 2 gone instead of waiting
//                     forever on its read of the dead process's memory
// mpirun's exit status does not tell whether the driver saw what it should (with that flag
// Open MPI 4.1 returns 0 although a worker exited non-zero): the tests match the driver's
// "<mode>: ok".
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "distributed/controller.h"
#include "tessel/distributed.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace ctl = tessel::distributed::controller;

namespace {

// Registered in every process (the driver's copies never run): a worker that ends at once,
// and one that ends by an exception nobody catches.
[[maybe_unused]] const bool registered = [] {
  ctl::register_handler("test.exit", [](tessel::ir::Reader&, ctl::Reply) { std::_Exit(3); });
  ctl::register_handler("test.exit_soon", [](tessel::ir::Reader&, ctl::Reply) {
    std::thread([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      std::_Exit(3);
    }).detach();
  });
  // Stops the driver (pid in the payload), sends it a 1 MiB reply (too long to travel in the
  // message: the driver reads it from this process's memory, by CMA under Open MPI's
  // shared-memory transport) and exits 5 ms later; a child process wakes the driver as soon
  // as this process is gone. The driver, a few milliseconds after its last liveness check,
  // finds a reply announced by a process that no longer exists.
  ctl::register_handler("test.reply_after_death", [](tessel::ir::Reader& r, ctl::Reply reply) {
    const pid_t driver = pid_t(r.u64());
    kill(driver, SIGSTOP);
    const pid_t me = getpid();
    if (fork() == 0) {
      while (getppid() == me) usleep(100);  // re-parented: this worker has exited
      kill(driver, SIGCONT);
      _exit(0);
    }
    std::thread([reply] { reply.ok(std::string(size_t(1) << 20, 'x')); }).detach();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::_Exit(3);
  });
  ctl::register_handler("test.terminate", [](tessel::ir::Reader&, ctl::Reply) {
    std::thread([] { throw std::runtime_error("boom"); }).join();
  });
  return true;
}();

std::vector<float> iota_f(size_t n, float start = 0) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

// The first device of worker process `p`.
ts::Device device_of(int p) {
  for (const ts::Device& d : ts::distributed::worker_devices())
    if (d.process_index() == p) return d;
  std::fprintf(stderr, "sc_job: no device of worker process %d (run under mpirun -np 3)\n", p);
  std::exit(2);
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// An array put on `d`, transformed there by a jitted function, read back.
std::vector<float> round_trip(const ts::Device& d) {
  ts::Array x = ts::device_put(ts::Array(iota_f(4), {4}), d);
  ts::Array y = ts::jit([](const ts::Array& a) { return a * 2.0f + 1.0f; })(x);
  return y.to_vector<float>();
}

bool round_trip_ok(const ts::Device& d) {
  std::vector<float> want = {1, 3, 5, 7};
  return round_trip(d) == want;
}

// Makes worker `p` end via handler `kind`, then expects the driver's next operation on it to
// throw an Error containing every string of `expect`.
int expect_gone(const std::string& mode, int p, const std::string& kind, const std::vector<std::string>& expect) {
  const ts::Device dead = device_of(p);
  const int other = p == 1 ? 2 : 1;
  ts::Array x = ts::device_put(ts::Array(iota_f(4), {4}), dead);
  if (x.to_vector<float>() != iota_f(4)) {
    std::printf("%s: the array on worker %d read back wrong\n", mode.c_str(), p);
    return 1;
  }
  ctl::post({p}, kind, {});
  try {
    ts::Array y = ts::jit([](const ts::Array& a) { return a + 1.0f; })(x);
    y.to_vector<float>();
    std::printf("%s: unexpected success\n", mode.c_str());
    return 1;
  } catch (const ts::Error& e) {
    const std::string what = e.what();
    std::printf("%s: driver got: %s\n", mode.c_str(), what.c_str());
    std::fflush(stdout);
    for (const std::string& part : expect)
      if (!contains(what, part)) {
        std::printf("%s: the message lacks \"%s\"\n", mode.c_str(), part.c_str());
        return 1;
      }
  }
  // Later operations on the dead worker fail at once, with the same reason.
  try {
    ts::device_put(ts::Array(iota_f(2), {2}), dead).to_vector<float>();
    std::printf("%s: unexpected success on the dead worker again\n", mode.c_str());
    return 1;
  } catch (const ts::Error& e) {
    if (!contains(e.what(), "worker process " + std::to_string(p)) || !contains(e.what(), "is gone")) {
      std::printf("%s: second error lacks the worker: %s\n", mode.c_str(), e.what());
      return 1;
    }
  }
  // The other worker still serves.
  if (!round_trip_ok(device_of(other))) {
    std::printf("%s: worker %d gave wrong values\n", mode.c_str(), other);
    return 1;
  }
  std::printf("%s: ok\n", mode.c_str());
  std::fflush(stdout);
  return 0;
}

// A reduction over a mesh of both workers' devices after worker 2 ended: worker 1 waits in
// the collective forever, so the driver's read must name worker 2.
int dead_in_mesh() {
  auto workers = ts::distributed::worker_devices();
  ts::Mesh mesh(workers, {int64_t(workers.size())}, {"x"});
  ts::Array x = ts::device_put(ts::Array(iota_f(workers.size() * 2), {int64_t(workers.size() * 2)}),
                               ts::NamedSharding(mesh, ts::P("x")));
  x.block_until_ready();
  ctl::post({2}, "test.exit", {});
  try {
    ts::jit([](const ts::Array& a) { return ts::sum(a); })(x).item<float>();
    std::printf("dead_in_mesh: unexpected success\n");
    return 1;
  } catch (const ts::Error& e) {
    std::printf("dead_in_mesh: driver got: %s\n", e.what());
    if (!contains(e.what(), "worker process 2") || !contains(e.what(), "is gone")) return 1;
  }
  std::printf("dead_in_mesh: ok\n");
  std::fflush(stdout);
  return 0;
}

// A pipelined step long enough (16 microbatches of 2 x 4 products of 256 x 256 matrices) for
// worker 2 to die in the middle of it.
int dead_in_pipeline() {
  namespace pp = ts::pipeline;
  pp::RemoteMpmdMesh mesh(2, {1}, {"x"});
  auto loss = [](const std::vector<ts::Array>& w, const ts::Array& x) {
    ts::Array h = x;
    for (size_t i = 0; i < w.size(); ++i) {
      if (i == w.size() / 2) h = pp::enter_stage(h);
      h = ts::tanh(ts::matmul(h, w[i]));
    }
    return ts::mean(h * h);
  };
  pp::PipelineOptions opts;
  opts.num_microbatches = 16;
  opts.batch_argnums = {1};
  auto step = pp::pipelined([&](const std::vector<ts::Array>& w, const ts::Array& x) { return ts::value_and_grad(loss)(w, x); },
                            mesh, opts);
  std::vector<ts::Array> w(8, ts::ones({256, 256}, ts::f32) * 0.01f);
  ts::Array x = ts::ones({16 * 128, 256}, ts::f32);
  std::get<0>(step(w, x)).item<float>();  // compiles, and works while both workers live
  ctl::post({2}, "test.exit_soon", {});
  try {
    for (int i = 0; i < 20; ++i) std::get<0>(step(w, x)).item<float>();
    std::printf("dead_in_pipeline: unexpected success\n");
    return 1;
  } catch (const ts::Error& e) {
    std::printf("dead_in_pipeline: driver got: %s\n", e.what());
    if (!contains(e.what(), "worker process 2") || !contains(e.what(), "is gone")) return 1;
  }
  std::printf("dead_in_pipeline: ok\n");
  std::fflush(stdout);
  return 0;
}

// Worker 2 announces a long reply and dies before the driver reads it: the driver's request
// throws an Error naming worker 2, and worker 1 goes on serving.
int dead_while_read() {
  tessel::ir::Writer w;
  w.u64(uint64_t(getpid()));
  try {
    ctl::request(2, "test.reply_after_death", w.bytes());
    std::printf("dead_while_read: unexpected success\n");
    return 1;
  } catch (const ts::Error& e) {
    std::printf("dead_while_read: driver got: %s\n", e.what());
    if (!contains(e.what(), "worker process 2") || !contains(e.what(), "is gone")) return 1;
  }
  if (!round_trip_ok(device_of(1))) {
    std::printf("dead_while_read: worker 1 gave wrong values\n");
    return 1;
  }
  std::printf("dead_while_read: ok\n");
  std::fflush(stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  ts::distributed::initialize({.mode = ts::distributed::Mode::single_controller});
  // Only the driver gets here.
  if (ts::process_count() < 3) {
    std::fprintf(stderr, "sc_job: run under mpirun -np 3 (a driver and 2 workers)\n");
    return 2;
  }
  if (mode == "dead_worker") return expect_gone(mode, 2, "test.exit", {"worker process 2", "is gone"});
  if (mode == "dead_in_mesh") return dead_in_mesh();
  if (mode == "dead_in_pipeline") return dead_in_pipeline();
  if (mode == "dead_while_read") return dead_while_read();
  if (mode == "worker_exception")
    return expect_gone(mode, 1, "test.terminate", {"worker process 1", "is gone", "uncaught exception", "boom"});
  std::fprintf(stderr, "usage: sc_job dead_worker|dead_in_mesh|worker_exception|dead_in_pipeline|dead_while_read\n");
  return 2;
}
