// Checkpoint throughput (docs/checkpoint.md): saving and restoring a state of 4 float32 arrays
// (TESSEL_CHECKPOINT_BENCH_MIB in all, default 1024 MiB; rows split over one device per
// process) on TESSEL_CHECKPOINT_BENCH_NP processes (default 2): run alone, the program starts
// itself under `mpirun -np 2` (one core each, TESSEL_NUM_THREADS=1) and prints what process 0
// measured; NP=1 measures in this process. The values are random floats in [1, 2) (23 random
// mantissa bits), so that no writer gains by compressing them. Baselines, in the same run:
//  - a plain write()+fsync and read() of the same bytes in the same directory (TMPDIR, default
//    /tmp), each process writing its share to its own file at the same time, and process 0
//    alone writing all of them; the faster of the two is the disk's figure;
//  - Orbax (orbax.checkpoint.StandardCheckpointer, bench/baselines/orbax_checkpoint.py) on the
//    same bytes split over 2 devices of one JAX process, when $TESSEL_JAX_PYTHON imports it.
// Also the cost of asynchronous saves every 10 steps of a loop on a quarter of the state
// (checkpoint.async_step_overhead).
// Each figure is the best of TESSEL_CHECKPOINT_BENCH_ROUNDS (default 3) runs.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "bench_util.h"
#include "checkpoint/crc32c.h"
#include "tessel/checkpoint.h"
#include "tessel/comm.h"
#include "tessel/make_array.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace ck = tessel::checkpoints;
namespace tb = tessel::bench;
namespace fs = std::filesystem;
using tessel::bench::report;

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

int64_t env_int(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v ? std::atoll(v) : fallback;
}

const fs::path& work_dir() {
  static const fs::path dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    // One directory for the processes of one run: the launcher's tag, else (started by hand
    // under mpirun) the pid of mpirun, the processes' common parent on one host.
    const char* tag = std::getenv("TESSEL_CHECKPOINT_BENCH_TAG");
    const std::string id = tag ? std::string(tag) : std::to_string(std::getenv("OMPI_COMM_WORLD_SIZE") ? getppid() : getpid());
    return fs::path(tmp ? tmp : "/tmp") / ("tessel_bench_checkpoint_" + id);
  }();
  return dir;
}

// Every process waits for every other (a no-op alone): timings span the slowest process.
void sync_all() {
  if (ts::process_count() > 1) ts::comm::barrier(ts::comm::world());
}

// The best of n runs of f, each timed from a barrier to a barrier.
template <class F> double best_of(int n, F f) {
  double best = 1e30;
  for (int i = 0; i < n; ++i) {
    sync_all();
    double t0 = now();
    f();
    sync_all();
    best = std::min(best, now() - t0);
  }
  return best;
}

[[noreturn]] void fail(const char* what, const std::string& path) {
  std::fprintf(stderr, "bench_checkpoint: %s '%s' failed: %s\n", what, path.c_str(), std::strerror(errno));
  std::exit(1);
}

void write_file(const std::string& path, const char* data, size_t n) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) fail("creating", path);
  for (size_t off = 0; off < n;) {
    ssize_t w = ::write(fd, data + off, std::min<size_t>(size_t(1) << 26, n - off));
    if (w <= 0) fail("writing", path);
    off += size_t(w);
  }
  fsync(fd);
  ::close(fd);
}

void read_file(const std::string& path, char* data, size_t n) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) fail("opening", path);
  for (size_t off = 0; off < n;) {
    ssize_t r = ::read(fd, data + off, std::min<size_t>(size_t(1) << 26, n - off));
    if (r <= 0) fail("reading", path);
    off += size_t(r);
  }
  ::close(fd);
}

// Random floats in [1, 2): splitmix64 bits under the exponent of 1.0.
void fill_random(std::vector<float>& v, uint64_t seed) {
  uint64_t x = seed;
  for (size_t i = 0; i < v.size(); i += 2) {
    uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    uint32_t lo = 0x3F800000u | uint32_t(z >> 9 & 0x7FFFFF), hi = 0x3F800000u | uint32_t(z >> 41);
    std::memcpy(&v[i], &lo, 4);
    if (i + 1 < v.size()) std::memcpy(&v[i + 1], &hi, 4);
  }
}

// The measurements, in one process or in each of an mpirun job (process 0 reports).
int measure() {
  ts::distributed::initialize();
  const int64_t mib = env_int("TESSEL_CHECKPOINT_BENCH_MIB", 1024);
  const bool root = ts::process_index() == 0;
  const fs::path& dir = work_dir();
  if (root) fs::create_directories(dir);
  sync_all();
  // One device per process (two alone), rows split over them.
  std::vector<ts::Device> mesh_devices;
  for (const ts::Device& d : ts::devices()) {
    const bool taken = std::any_of(mesh_devices.begin(), mesh_devices.end(),
                                   [&](const ts::Device& m) { return m.process_index() == d.process_index(); });
    if (ts::process_count() > 1 ? !taken : mesh_devices.size() < 2) mesh_devices.push_back(d);
  }
  ts::Mesh mesh(mesh_devices, {int64_t(mesh_devices.size())}, {"x"});
  ts::Sharding split = ts::NamedSharding(mesh, ts::P("x", ts::none));
  const int64_t rows = mib * 1024 * 1024 / 4 / 4096 / 4;  // 4 leaves of rows x 4096 float32
  const int64_t block_rows = rows / int64_t(mesh_devices.size());
  std::vector<ts::Array> state;
  for (int i = 0; i < 4; ++i) {
    std::vector<ts::Array> pieces;
    for (size_t k = 0; k < mesh_devices.size(); ++k) {
      if (mesh_devices[k].process_index() != ts::process_index()) continue;
      std::vector<float> host(size_t(block_rows * 4096));
      fill_random(host, uint64_t(i) * 1000 + k);
      pieces.push_back(ts::device_put(ts::Array(host, {block_rows, 4096}), ts::SingleDeviceSharding(mesh_devices[k])));
    }
    state.push_back(ts::make_array_from_single_device_arrays({block_rows * int64_t(mesh_devices.size()), 4096}, split, pieces));
  }
  for (auto& a : state) a.block_until_ready();
  const double gb = double(block_rows * int64_t(mesh_devices.size())) * 4096 * 4 * 4 / 1e9;
  const std::string path = (dir / "state.h5").string();

  // Alternated, so that other work on the machine weighs on both alike; the best of
  // TESSEL_CHECKPOINT_BENCH_ROUNDS (default 3) each.
  const int rounds = int(std::max<int64_t>(1, env_int("TESSEL_CHECKPOINT_BENCH_ROUNDS", 3)));
  double save = 1e30, save_nocrc = 1e30;
  for (int round = 0; round < rounds; ++round) {
    save_nocrc = std::min(save_nocrc, best_of(1, [&] { ck::save(path, state, {.overwrite = true, .checksum = false}); }));
    save = std::min(save, best_of(1, [&] { ck::save(path, state, {.overwrite = true}); }));
  }
  ck::save(path, state, {.overwrite = true});
  double restore = best_of(rounds, [&] {
    for (auto& a : ck::restore(path, state)) a.block_until_ready();
  });

  // The same bytes with write()+fsync and read(): each process its share, all at once, and
  // process 0 all of them alone.
  const size_t total = size_t(gb * 1e9), share = total / size_t(ts::process_count());
  std::vector<char> bytes(root ? total : share);
  std::memset(bytes.data(), 1, bytes.size());
  const std::string mine = (dir / ("raw_" + std::to_string(ts::process_index()) + ".bin")).string();
  const std::string whole = (dir / "raw_all.bin").string();
  double write_each = best_of(rounds, [&] { write_file(mine, bytes.data(), share); });
  double read_each = best_of(rounds, [&] { read_file(mine, bytes.data(), share); });
  double write_one = write_each, read_one = read_each;
  if (ts::process_count() > 1) {
    write_one = best_of(rounds, [&] { if (root) write_file(whole, bytes.data(), total); });
    read_one = best_of(rounds, [&] { if (root) read_file(whole, bytes.data(), total); });
  }
  const double write_s = std::min(write_each, write_one), read_s = std::min(read_each, read_one);
  if (root) {
    report("checkpoint.processes", double(ts::process_count()), "");
    report("checkpoint.state_gb", gb, "GB");
    report("checkpoint.crc32c_hardware", ck::crc32c::hardware() ? 1 : 0, "");
    report("checkpoint.save_gbps", gb / save, "GB/s");
    report("checkpoint.save_nochecksum_gbps", gb / save_nocrc, "GB/s");
    report("checkpoint.restore_gbps", gb / restore, "GB/s");
    report("checkpoint.disk_write_gbps", gb / write_s, "GB/s");
    report("checkpoint.disk_read_gbps", gb / read_s, "GB/s");
    if (ts::process_count() > 1) {
      report("checkpoint.disk_write_each_process_gbps", gb / write_each, "GB/s");
      report("checkpoint.disk_write_one_process_gbps", gb / write_one, "GB/s");
    }
    report("checkpoint.save_fraction_of_disk", write_s / save, "x");
    if (ts::process_count() > 1)  // against one sequential writer of all the bytes
      report("checkpoint.save_fraction_of_one_writer", write_one / save, "x");
    report("checkpoint.save_nochecksum_fraction_of_disk", write_s / save_nocrc, "x");
    report("checkpoint.restore_fraction_of_disk", read_s / restore, "x");
    report("checkpoint.save_seconds", save, "s");
    report("checkpoint.restore_seconds", restore, "s");
  }
  fs::remove(mine);
  if (root) fs::remove(whole);
  bytes = {};

  // A loop of element-wise steps on a quarter of the state (one leaf: steps and saves scale
  // alike with the size, and the loop stays short), saving asynchronously every 10 steps.
  const std::vector<ts::Array> loop_state(state.begin(), state.begin() + 1);
  auto step = ts::jit([](std::vector<ts::Array> s) {
    for (auto& a : s) a = a * 0.999f + 0.001f;
    return s;
  });
  auto loop = [&](bool saving) {
    ck::CheckpointManager mgr((dir / (saving ? "async" : "none")).string(), {.max_to_keep = 1, .async = true});
    std::vector<ts::Array> s = loop_state;
    sync_all();
    double t0 = now();
    for (int64_t i = 0; i < 30; ++i) {
      s = step(s);
      if (saving && i % 10 == 0) mgr.save(i, s);
    }
    for (auto& a : s) a.block_until_ready();
    mgr.wait_until_finished();
    sync_all();
    return now() - t0;
  };
  auto clear = [&] {
    sync_all();
    if (root) fs::remove_all(dir / "async");
    sync_all();
  };
  loop(false);
  double plain = std::min(loop(false), loop(false));
  clear();
  double saving = loop(true);
  clear();
  saving = std::min(saving, loop(true));
  if (root) {
    report("checkpoint.async_state_gb", gb / 4, "GB");
    report("checkpoint.async_step_overhead", saving / plain, "x");
  }
  sync_all();
  if (root) fs::remove_all(dir);
  return 0;
}

// Alone with NP > 1: this program under mpirun, then Orbax on the same bytes.
int launch(int64_t np) {
  const int64_t mib = env_int("TESSEL_CHECKPOINT_BENCH_MIB", 1024);
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  const std::string tag = std::to_string(getpid());
  const std::string mpirun =
      "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 TESSEL_CHECKPOINT_BENCH_TAG=" + tag +
      " TESSEL_NUM_THREADS=1 mpirun --oversubscribe -np " + std::to_string(np) + " " + tb::shell_quote(self);
  // Process 0's lines, passed on as they come and kept by name.
  std::map<std::string, double> ours;
  if (FILE* p = popen(mpirun.c_str(), "r")) {
    char line[512], name[256];
    double v;
    while (std::fgets(line, sizeof line, p)) {
      std::fputs(line, stdout);
      std::fflush(stdout);
      if (std::sscanf(line, "%255s %lf", name, &v) == 2) ours[name] = v;
    }
    pclose(p);
  }
  if (!ours.count("checkpoint.save_seconds")) {
    std::fprintf(stderr, "bench_checkpoint: the %lld-process run failed: %s\n", (long long)np, mpirun.c_str());
    return 1;
  }
  const char* py = std::getenv("TESSEL_JAX_PYTHON");
  if (!py) return 0;
  const std::string script = tb::shell_quote(std::string(TESSEL_SOURCE_DIR) + "/bench/baselines/orbax_checkpoint.py");
  const std::string orbax_dir = (work_dir().parent_path() / ("tessel_bench_orbax_" + tag)).string();
  std::map<std::string, double> orbax =
      tb::run_baseline(tb::shell_quote(py) + " " + script + " --mib " + std::to_string(mib) + " --devices 2 --dir " +
                       tb::shell_quote(orbax_dir));
  std::error_code ec;
  fs::remove_all(orbax_dir, ec);
  if (!orbax.count("orbax.save_fsync_seconds") || !orbax.count("orbax.restore_seconds")) {
    std::fprintf(stderr, "bench_checkpoint: no Orbax figures (%s cannot run bench/baselines/orbax_checkpoint.py; "
                         "pip install orbax-checkpoint)\n", py);
    return 0;
  }
  const double gb = ours["checkpoint.state_gb"];
  report("checkpoint.orbax_save_gbps", gb / orbax["orbax.save_fsync_seconds"], "GB/s");
  report("checkpoint.orbax_save_nofsync_gbps", gb / orbax["orbax.save_seconds"], "GB/s");
  report("checkpoint.orbax_restore_gbps", gb / orbax["orbax.restore_seconds"], "GB/s");
  report("checkpoint.save_vs_orbax", orbax["orbax.save_fsync_seconds"] / ours["checkpoint.save_seconds"], "x");
  report("checkpoint.save_vs_orbax_nofsync", orbax["orbax.save_seconds"] / ours["checkpoint.save_seconds"], "x");
  report("checkpoint.restore_vs_orbax", orbax["orbax.restore_seconds"] / ours["checkpoint.restore_seconds"], "x");
  return 0;
}

}  // namespace

int main() {
  const int64_t np = env_int("TESSEL_CHECKPOINT_BENCH_NP", 2);
  if (np > 1 && !std::getenv("OMPI_COMM_WORLD_SIZE")) return launch(np);
  return measure();
}
