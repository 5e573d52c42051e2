// Failures of the system's resources reach the caller as tessel errors, never as
// std::bad_alloc, std::system_error or std::filesystem::filesystem_error. The process limits
// its own address space (RLIMIT_AS) so that the failures are certain on any machine, whatever
// its memory and overcommit policy. One mode per run (tests/CMakeLists.txt):
//   memory   an eager array, a jitted result and a host copy (to_vector) that do not fit:
//            ResourceExhaustedError naming the bytes, shape, dtype and device
//   threads  the device streams cannot start (TESSEL_CPU_DEVICES=64 in a small address
//            space): ResourceExhaustedError naming the stream
//   files    the kernel cache directory cannot be made (TESSEL_CACHE_DIR under a file): jit
//            still runs, unfused
// Prints "<mode>: ok" when every check passed.
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <fstream>
#include <string>

#include "tessel/tessel.h"

namespace ts = tessel;

namespace {

int failures = 0;

void expect(bool ok, const std::string& what) {
  if (!ok) {
    std::printf("FAILED: %s\n", what.c_str());
    ++failures;
  }
}

// Runs `f`, which must throw ResourceExhaustedError whose message holds every one of `parts`.
template <class F> void expect_exhausted(const std::string& what, F f, std::initializer_list<const char*> parts) {
  try {
    f();
    expect(false, what + ": no error");
  } catch (const ts::ResourceExhaustedError& e) {
    std::printf("%s: %s\n", what.c_str(), e.what());
    for (const char* p : parts)
      expect(std::string(e.what()).find(p) != std::string::npos, what + ": message lacks '" + p + "'");
  } catch (const std::exception& e) {
    expect(false, what + ": threw another exception: " + e.what());
  }
}

// Limits the address space to what the process maps now plus `headroom` bytes, until
// destroyed (the libraries' threads must be able to end at exit).
class AddressSpaceLimit {
 public:
  explicit AddressSpaceLimit(size_t headroom) {
    getrlimit(RLIMIT_AS, &saved_);
    size_t pages = 0;
    std::ifstream("/proc/self/statm") >> pages;
    rlimit r{rlim_t(pages) * rlim_t(sysconf(_SC_PAGESIZE)) + headroom, saved_.rlim_max};
    if (setrlimit(RLIMIT_AS, &r) != 0) std::perror("setrlimit");
  }
  ~AddressSpaceLimit() { setrlimit(RLIMIT_AS, &saved_); }

 private:
  rlimit saved_{};
};

void memory() {
  // 256 MiB on the device, made before the limit; its double copy (512 MiB) will not fit.
  ts::Array big = ts::ones({64 << 20}, ts::f32).block_until_ready();
  auto grow = ts::jit([](const ts::Array& x) { return ts::broadcast_to(x, {100000, 100000}) * 2.0f; });
  (void)grow.lower(ts::ones({100000}, ts::f32));  // compiled before the limit
  AddressSpaceLimit limit(size_t(256) << 20);
  expect_exhausted("eager", [] { ts::zeros({100000, 100000}, ts::f32).block_until_ready(); },
                   {"f32[100000,100000]", "40000000000 bytes", "cpu:0"});
  expect_exhausted("jit", [&] { grow(ts::ones({100000}, ts::f32)).block_until_ready(); },
                   {"f32[100000,100000]", "40000000000 bytes", "cpu:0"});
  expect_exhausted("to_vector", [&] { (void)big.to_vector<double>(); },
                   {"to_vector", "f32[67108864]", "536870912 bytes"});
  // Smaller work still runs afterwards.
  expect(ts::sum(ts::ones({1000}, ts::f32)).item<float>() == 1000.0f, "a small sum after the failures");
}

void threads() {
  AddressSpaceLimit limit(size_t(48) << 20);  // a few 8 MiB thread stacks, not 64
  expect_exhausted("devices", [] { (void)ts::devices(); }, {"cannot start a thread", "stream of cpu:"});
}

void files() {
  const std::string file = "/tmp/tessel_resource_exhausted_" + std::to_string(getpid());
  std::ofstream(file) << "not a directory";
  setenv("TESSEL_CACHE_DIR", (file + "/kernels").c_str(), 1);
  try {
    auto f = ts::jit([](const ts::Array& x) { return ts::sin(x) * 2.0f + 1.0f; });
    expect(f(ts::zeros({4}, ts::f32)).to_vector<float>() == std::vector<float>(4, 1.0f), "jit without a kernel cache");
  } catch (const std::exception& e) {
    expect(false, std::string("jit without a kernel cache threw: ") + e.what());
  }
  std::remove(file.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "memory") memory();
  else if (mode == "threads") threads();
  else if (mode == "files") files();
  else {
    std::fprintf(stderr, "usage: resource_exhausted memory|threads|files\n");
    return 2;
  }
  if (failures == 0) std::printf("%s: ok\n", mode.c_str());
  return failures == 0 ? 0 : 1;
}
