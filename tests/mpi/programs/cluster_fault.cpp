// Faults across hosts (docs/cluster.md), run by CTest inside scripts/cluster with processes
// round-robin over 2 hosts (rank r on host r mod 2) and --keep-going:
//   cluster_fault driver <fault> <bound_s>   (3 processes: the driver and worker 2 on host 0,
//       worker 1 on host 1) the driver holds an array on worker 1, injects <fault> on
//       host 1, and its next operation on the array must throw an Error naming worker 1 and
//       its host's address within <bound_s> seconds; worker 2 still serves.
//   cluster_fault mesh <fault> <bound_s>     (2 processes, one device each) a reduction over
//       a mesh of both processes' devices, in a loop; process 0 injects <fault> on host 1,
//       and its next reduction must throw an Error naming process 1 within <bound_s>.
//   cluster_fault mesh_halo <fault> <bound_s>   the same with a halo exchange (a roll)
//       before the reduction: process 0 meets the fault waiting for process 1's rows.
// <fault>: kill (the job's processes on host 1 get SIGKILL), delete (host 1's link and
// namespace are deleted, its processes killed), down (host 1's link goes down: its processes
// live on, unreachable). Prints "<mode> <fault>: ok (detected in X s)" on success.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "tessel/distributed.h"
#include "tessel/tessel.h"

namespace ts = tessel;

namespace {

using Clock = std::chrono::steady_clock;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Runs `scripts/cluster fault <fault> 1` (the script names itself in TESSEL_CLUSTER_SCRIPT).
void inject(const std::string& fault) {
  const char* script = std::getenv("TESSEL_CLUSTER_SCRIPT");
  if (!script) {
    std::printf("cluster_fault: run me inside scripts/cluster (no TESSEL_CLUSTER_SCRIPT)\n");
    std::fflush(stdout);
    std::_Exit(2);
  }
  const std::string cmd = std::string(script) + " fault " + fault + " 1";
  if (std::system(cmd.c_str()) != 0) {
    std::printf("cluster_fault: `%s` failed\n", cmd.c_str());
    std::fflush(stdout);
    std::_Exit(2);
  }
}

// Checks the Error and the time it took, prints the verdict and ends the process at once
// (MPI cannot be finalized with a peer gone).
[[noreturn]] void verdict(const std::string& what, const std::string& error, Clock::time_point t0, double bound,
                          const std::vector<std::string>& expect) {
  const double took = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("%s: got after %.2f s: %s\n", what.c_str(), took, error.c_str());
  int rc = 0;
  for (const std::string& part : expect)
    if (!contains(error, part)) {
      std::printf("%s: the message lacks \"%s\"\n", what.c_str(), part.c_str());
      rc = 1;
    }
  if (took > bound) {
    std::printf("%s: detected after %.2f s, more than the bound %.1f s\n", what.c_str(), took, bound);
    rc = 1;
  }
  if (rc == 0) std::printf("%s: ok (detected in %.2f s)\n", what.c_str(), took);
  std::fflush(stdout);
  // Host 1's link back up, so that mpirun reaches its daemon there and the job ends.
  if (what.ends_with(" down")) inject("up");
  std::_Exit(rc);
}

int driver(const std::string& fault, double bound) {
  ts::Device remote, local;
  for (const ts::Device& d : ts::distributed::worker_devices()) {
    if (d.process_index() == 1) remote = d;
    if (d.process_index() == 2) local = d;
  }
  std::vector<float> v(4);
  std::iota(v.begin(), v.end(), 0.0f);
  ts::Array x = ts::device_put(ts::Array(v, {4}), remote);
  auto add1 = ts::jit([](const ts::Array& a) { return a + 1.0f; });
  if (add1(x).to_vector<float>()[3] != 4.0f) return 1;
  inject(fault);
  const auto t0 = Clock::now();
  const std::string what = "driver " + fault;
  try {
    add1(x).to_vector<float>();
    std::printf("%s: unexpected success\n", what.c_str());
    return 1;
  } catch (const ts::Error& e) {
    // Worker 2, on the driver's host, still serves: checked before the verdict ends us.
    const std::string error = e.what();
    auto y = ts::device_put(ts::Array(v, {4}), local);
    if (add1(y).to_vector<float>()[0] != 1.0f) {
      std::printf("%s: worker 2 gave a wrong value\n", what.c_str());
      return 1;
    }
    verdict(what, error, t0, bound, {"worker process 1", "10.77.0.2", "is gone"});
  }
}

int mesh(const std::string& fault, double bound, bool halo) {
  const int64_t n = ts::device_count();
  ts::Mesh m = ts::make_mesh({n}, {"x"});
  ts::NamedSharding rows(m, ts::P("x")), repl(m, ts::P());
  // halo: each call first exchanges halo rows (a roll: collective_permute, waited for in
  // permute_done), so that is where the fault is met.
  auto total = ts::jit([halo](const ts::Array& a) { return ts::sum(halo ? ts::roll(a, 1, 0) * a : a); },
                       {.in_shardings = {rows}, .out_shardings = {repl}});
  ts::Array a = ts::ones({4 * n}, ts::f32);
  for (int i = 0; i < 3; ++i)
    if (total(a).item<float>() != float(4 * n)) return 1;
  const std::string what = std::string(halo ? "mesh_halo " : "mesh ") + fault;
  if (ts::process_index() == 1) {
    // Host 1: killed, deleted, or cut off; cut off, its own next reduction fails too.
    try {
      for (;;) total(a).item<float>();
    } catch (const ts::Error& e) {
      std::printf("%s: process 1 got: %s\n", what.c_str(), e.what());
      std::fflush(stdout);
      std::_Exit(3);
    }
  }
  inject(fault);
  const auto t0 = Clock::now();
  try {
    for (int i = 0; i < 1000; ++i) total(a).item<float>();
    std::printf("%s: unexpected success\n", what.c_str());
    return 1;
  } catch (const ts::Error& e) {
    verdict(what, e.what(), t0, bound, {"process 1", "10.77.0.2", "is gone"});
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: cluster_fault driver|mesh|mesh_halo kill|delete|down <bound_s>\n");
    return 2;
  }
  const std::string mode = argv[1], fault = argv[2];
  const double bound = std::atof(argv[3]);
  if (mode == "driver") {
    ts::distributed::initialize({.mode = ts::distributed::Mode::single_controller});
    return driver(fault, bound);
  }
  ts::distributed::initialize();
  return mesh(fault, bound, mode == "mesh_halo");
}
