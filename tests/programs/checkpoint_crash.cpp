// Crash safety of checkpoints (docs/checkpoint.md "Guarantees").
//   checkpoint_crash kill DIR RUNS: RUNS times, starts a writer process saving step after
//     step into DIR (CheckpointManager, max_to_keep 2) and SIGKILLs it after a random delay
//     (seeded, reproducible); after each kill every committed step restores bit for bit.
//   checkpoint_crash full DIR: with the file size limited (RLIMIT_FSIZE, as a full disk
//     answers EFBIG/ENOSPC), a save fails with a tessel::Error naming the file and the previous
//     checkpoint still restores.
//   checkpoint_crash nospace DIR: the same on a real full file system (DIR inside a small
//     tmpfs, see checkpoint_nospace.sh): after step 1, a filler file takes all but 64 KiB of
//     it, so step 2's save meets ENOSPC.
// Prints "checkpoint_crash: <mode> ok".
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_test_util.h"
#include "tessel/checkpoint.h"
#include "tessel/error.h"
#include "tessel/ops.h"

namespace ts = tessel;
namespace ck = tessel::checkpoints;
using checkpoint_test::HostArray;

namespace {

HostArray state(int64_t step) { return checkpoint_test::pattern({512, 512}, ts::f32, uint64_t(step)); }

ts::Array on_device(const HostArray& h) { return checkpoint_test::place(h, ts::SingleDeviceSharding(ts::devices()[0])); }

[[noreturn]] void writer(const std::string& dir) {
  ck::CheckpointManager mgr(dir, {.max_to_keep = 2});
  for (int64_t step = mgr.latest_step() + 1;; ++step) mgr.save(step, std::vector<ts::Array>{on_device(state(step))});
}

int check_all(const std::string& dir, int run) {
  ck::CheckpointManager mgr(dir);
  int bad = 0;
  for (int64_t step : mgr.all_steps()) {
    HostArray h = state(step);
    std::vector<ts::Array> target{ts::zeros({512, 512}, ts::f32)};
    try {
      auto back = mgr.restore(step, target);
      std::string diff = checkpoint_test::bits_difference(back[0], h, ts::SingleDeviceSharding(ts::devices()[0]));
      if (!diff.empty()) std::fprintf(stderr, "run %d: step %lld: %s\n", run, (long long)step, diff.c_str()), ++bad;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "run %d: step %lld does not restore: %s\n", run, (long long)step, e.what());
      ++bad;
    }
  }
  return bad;
}

// Fills the file system holding `path` with one file, leaving `keep_free` bytes.
bool fill_disk(const std::string& path, size_t keep_free) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  std::vector<char> chunk(1 << 16, 'x');
  size_t written = 0;
  for (size_t n = chunk.size(); n >= 512; n /= 2)  // smaller writes as space runs out
    while (std::fwrite(chunk.data(), 1, n, f) == n && std::fflush(f) == 0) written += n;
  std::fclose(f);
  std::filesystem::resize_file(path, written > keep_free ? written - keep_free : 0);
  return written > keep_free;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: checkpoint_crash kill DIR RUNS | full DIR | nospace DIR | writer DIR\n");
    return 2;
  }
  const std::string mode = argv[1], dir = argv[2];
  if (mode == "writer") writer(dir);
  if (mode == "kill") {
    std::filesystem::remove_all(dir);
    const int runs = argc > 3 ? std::atoi(argv[3]) : 20;
    std::mt19937 rng(1);
    int bad = 0, committed_before = 0;
    for (int run = 0; run < runs; ++run) {
      pid_t pid = fork();  // before this process starts any thread of its own: exec at once
      if (pid == 0) {
        execl("/proc/self/exe", argv[0], "writer", dir.c_str(), static_cast<char*>(nullptr));
        _exit(127);
      }
      usleep(useconds_t(50000 + rng() % 400000));
      kill(pid, SIGKILL);
      int status = 0;
      waitpid(pid, &status, 0);
      if (!WIFSIGNALED(status)) std::fprintf(stderr, "run %d: the writer ended by itself (status %d)\n", run, status), ++bad;
      ck::CheckpointManager mgr(dir);
      if (!mgr.all_steps().empty()) ++committed_before;
      bad += check_all(dir, run);
    }
    if (bad || committed_before == 0) return 1;
    std::printf("checkpoint_crash: kill ok (%d runs, latest step %lld)\n", runs, (long long)ck::CheckpointManager(dir).latest_step());
    return 0;
  }
  if (mode == "full" || mode == "nospace") {
    std::filesystem::remove_all(dir);
    ck::CheckpointManager mgr(dir);
    mgr.save(1, std::vector<ts::Array>{on_device(state(1))});
    if (mode == "full") {
      signal(SIGXFSZ, SIG_IGN);  // writes past the limit fail with EFBIG instead of killing
      rlimit lim{600 * 1024, 600 * 1024};
      setrlimit(RLIMIT_FSIZE, &lim);
    } else if (!fill_disk((std::filesystem::path(dir).parent_path() / "filler").string(), 64 * 1024)) {
      std::fprintf(stderr, "nospace: could not fill the file system of %s\n", dir.c_str());
      return 1;
    }
    try {
      mgr.save(2, std::vector<ts::Array>{on_device(state(2))});
      std::fprintf(stderr, "%s: the save past the limit succeeded\n", mode.c_str());
      return 1;
    } catch (const ts::Error& e) {
      std::printf("%s: the save failed: %s\n", mode.c_str(), e.what());
      if (!std::strstr(e.what(), "ckpt_2.h5")) return 1;
    }
    if (mgr.all_steps() != std::vector<int64_t>{1} || check_all(dir, 0) != 0) return 1;
    std::printf("checkpoint_crash: %s ok\n", mode.c_str());
    return 0;
  }
  return 2;
}
