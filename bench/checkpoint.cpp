// Checkpoint throughput (docs/checkpoint.md): saving and restoring a state of float32 arrays
// (TESSEL_CHECKPOINT_BENCH_MIB, default 256 MiB, rows split over 2 devices) against a plain
// write()+fsync and read() of the same bytes in the same directory (TMPDIR, default /tmp),
// and the cost of asynchronous saves every 10 steps of a loop. Under mpirun every process
// runs it (collective saves).
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "bench_util.h"
#include "tessel/checkpoint.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace ck = tessel::checkpoints;
namespace fs = std::filesystem;
using tessel::bench::report;

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

template <class F> double best_of(int n, F f) {
  double best = 1e30;
  for (int i = 0; i < n; ++i) {
    double t0 = now();
    f();
    best = std::min(best, now() - t0);
  }
  return best;
}

}  // namespace

int main() {
  ts::distributed::initialize();
  const char* mib_env = std::getenv("TESSEL_CHECKPOINT_BENCH_MIB");
  const int64_t mib = mib_env ? std::atoll(mib_env) : 256;
  const char* tmp = std::getenv("TMPDIR");
  const fs::path dir = fs::path(tmp ? tmp : "/tmp") / ("tessel_bench_checkpoint_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const int64_t rows = mib * 1024 * 1024 / 4 / 4096 / 4;  // 4 leaves of rows x 4096 float32
  ts::Mesh mesh = ts::make_mesh({std::min<int64_t>(2, ts::device_count())}, {"x"});
  ts::Sharding split = ts::NamedSharding(mesh, ts::P("x", ts::none));
  std::vector<ts::Array> state;
  for (int i = 0; i < 4; ++i) state.push_back(ts::device_put(ts::full({rows, 4096}, float(i) + 0.5f, ts::f32), split));
  for (auto& a : state) a.block_until_ready();
  const double gb = double(rows) * 4096 * 4 * 4 / 1e9;
  const std::string path = (dir / "state.h5").string();

  double save = best_of(3, [&] { ck::save(path, state, {.overwrite = true}); });
  double save_nocrc = best_of(3, [&] { ck::save(path, state, {.overwrite = true, .checksum = false}); });
  ck::save(path, state, {.overwrite = true});
  double restore = best_of(3, [&] { ck::restore(path, state)[3].block_until_ready(); });

  // The same bytes with write()+fsync and read().
  std::vector<char> bytes(size_t(gb * 1e9));
  std::memset(bytes.data(), 1, bytes.size());
  const std::string raw = (dir / "raw.bin").string();
  double write_s = best_of(3, [&] {
    int fd = ::open(raw.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (size_t off = 0; off < bytes.size();) off += size_t(::write(fd, bytes.data() + off, std::min<size_t>(1 << 26, bytes.size() - off)));
    fsync(fd);
    ::close(fd);
  });
  double read_s = best_of(3, [&] {
    int fd = ::open(raw.c_str(), O_RDONLY);
    for (size_t off = 0; off < bytes.size();) off += size_t(::read(fd, bytes.data() + off, std::min<size_t>(1 << 26, bytes.size() - off)));
    ::close(fd);
  });
  report("checkpoint.state_gb", gb, "GB");
  report("checkpoint.save_gbps", gb / save, "GB/s");
  report("checkpoint.save_nochecksum_gbps", gb / save_nocrc, "GB/s");
  report("checkpoint.restore_gbps", gb / restore, "GB/s");
  report("checkpoint.disk_write_gbps", gb / write_s, "GB/s");
  report("checkpoint.disk_read_gbps", gb / read_s, "GB/s");
  report("checkpoint.save_fraction_of_disk", write_s / save, "x");
  report("checkpoint.save_nochecksum_fraction_of_disk", write_s / save_nocrc, "x");
  report("checkpoint.restore_fraction_of_disk", read_s / restore, "x");

  // A loop of element-wise steps on the state, saving asynchronously every 10 steps.
  auto step = ts::jit([](std::vector<ts::Array> s) {
    for (auto& a : s) a = a * 0.999f + 0.001f;
    return s;
  });
  auto loop = [&](bool saving) {
    ck::CheckpointManager mgr((dir / (saving ? "async" : "none")).string(), {.max_to_keep = 1, .async = true});
    std::vector<ts::Array> s = state;
    double t0 = now();
    for (int64_t i = 0; i < 30; ++i) {
      s = step(s);
      if (saving && i % 10 == 0) mgr.save(i, s);
    }
    for (auto& a : s) a.block_until_ready();
    mgr.wait_until_finished();
    return now() - t0;
  };
  loop(false);
  double plain = std::min(loop(false), loop(false));
  fs::remove_all(dir / "async");
  double saving = loop(true);
  fs::remove_all(dir / "async");
  saving = std::min(saving, loop(true));
  report("checkpoint.async_step_overhead", saving / plain, "x");
  fs::remove_all(dir);
  return 0;
}
