#include "compiler/kernel_cache.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <vector>

#include "core/config.h"
#include "core/cache.h"
#include "core/log.h"
#include "tessel/error.h"

extern char** environ;

namespace tessel::compiler {
namespace {

namespace fs = std::filesystem;

// -ffp-contract=off: no fused multiply-add of the compiler's choosing, so generated code rounds
// like the unfused kernels; the multiply-adds jit contracts are fma equations of the program
// (compiler::contract_multiply_adds), computed alike by both.
// -fno-math-errno: libm calls have no side effects, so loops over exp, tanh, ... vectorise
// with glibc's libmvec (backend/cpu/scalar.h declares the vector forms; -lmvec links them).
// -fno-trapping-math: tessel never unmasks floating-point traps, so GCC may compute both
// sides of a select; without it, a select with a constant side (max(lo, u) before erf_inv in
// random.normal) is turned into a branch by PRE and the loop stays scalar. Values are unchanged.
const std::vector<std::string> kFlags = {"-O3", "-march=native", "-fPIC", "-shared", "-std=c++20", "-ffp-contract=off",
                                         "-fno-math-errno", "-fno-trapping-math", "-w"};
// Libraries, after the source file on the command line.
#if defined(__x86_64__) && defined(__GLIBC__)
const std::vector<std::string> kLibraries = {"-lmvec", "-lm"};
#else
const std::vector<std::string> kLibraries = {"-lm"};
#endif

/// Read once, like the version line it is keyed with.
const std::string& compiler_path() {
  static const std::string& path = *new std::string(config::get_string(config::kCxx));  // never destroyed
  return path;
}

/// Runs argv with stdout and stderr sent to `log`; returns the exit status (-1 if it did
/// not start).
int run_process(const std::vector<std::string>& argv, const std::string& log) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string read_file(const std::string& path, size_t limit) {
  std::ifstream f(path);
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (s.size() > limit) s = s.substr(0, limit) + "\n...";
  return s;
}

std::string unique_suffix() {
  static std::atomic<uint64_t> counter{0};
  return std::to_string(getpid()) + "." + std::to_string(counter++) + "." +
         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
}

/// The compiler's first --version line, or "" when it does not run.
const std::string& compiler_version() {
  static const std::string& v = *new std::string([] {  // never destroyed: jit may run during exit
    std::error_code ec;
    // mkstemp: a fresh file of our own, not a predictable name in a shared directory.
    std::string log = (fs::temp_directory_path(ec) / "tessel-cxx-version.XXXXXX").string();
    const int fd = mkstemp(log.data());
    if (fd < 0) return std::string();
    close(fd);
    std::string line;
    if (run_process({compiler_path(), "--version"}, log) == 0) {
      std::ifstream f(log);
      std::getline(f, line);
    }
    fs::remove(log, ec);
    return line;
  }());
  return v;
}

/// 128-bit FNV-1a-style key (two 64-bit lanes), as 32 hex digits.
std::string hash_key(const std::string& text) {
  uint64_t a = 0xcbf29ce484222325ull, b = 0x84222325cbf29ce4ull;
  for (unsigned char c : text) {
    a = (a ^ c) * 0x100000001b3ull;
    b = (b ^ c) * 0x100000001b3ull + 0x9e3779b97f4a7c15ull;
  }
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", (unsigned long long)a, (unsigned long long)b);
  return buf;
}

// Libraries loaded by this process, by key (core/cache.h): jitting a function again after
// its executables are gone only finds the library here. A library stays loaded while an
// executable or the cache holds it; eviction and clear_caches unload those no executable
// uses. The cache is a member of the never-destroyed state, as kernels may run at exit.
constexpr size_t kLoadedCapacity = 256;

struct State {
  std::mutex mu;
  tessel::detail::Cache<std::string, std::shared_ptr<KernelLibrary>> loaded{"codegen.libraries", kLoadedCapacity};
  CodegenStats stats;
  std::set<std::string> warned;  // refusals already reported, one warning each
};
State& state() {
  static State* s = new State;  // outlives static destructors of users
  return *s;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// ---- trust ----
// Loading a shared object runs its code, so the cache may hold only files that no one but
// this user (or root) could have written: the directory and each .so must belong to this
// user or root and be writable by neither group nor others, and neither may be a symbolic
// link. Then no other user can place or swap a file there between our check and dlopen.

/// Why a file or directory with status `st` (from lstat) cannot be trusted, or "".
std::string distrust(const struct stat& st) {
  if (S_ISLNK(st.st_mode)) return "a symbolic link";
  if (st.st_uid != geteuid() && st.st_uid != 0)
    return "owned by uid " + std::to_string(st.st_uid) + ", not by this user (uid " + std::to_string(geteuid()) + ")";
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", unsigned(st.st_mode & 07777));
    return std::string("writable by group or others (mode ") + mode + ")";
  }
  return "";
}

/// Warns once per distinct message (the caller holds state().mu).
void warn_once(State& st, const std::string& message) {
  if (st.warned.insert(message).second) TESSEL_WARN_LOG(message);
}

/// A directory of this process's own (mkdtemp, mode 0700), removed at exit: the cache when
/// the configured one cannot be trusted. Made again if something (a tmp cleaner) removed it.
/// The caller holds state().mu.
fs::path private_cache_dir() {
  static std::string* dir = nullptr;  // never destroyed: the exit handler reads it
  struct stat info;
  if (dir && ::lstat(dir->c_str(), &info) == 0 && S_ISDIR(info.st_mode)) return *dir;
  std::error_code ec;
  std::string templ =
      (fs::temp_directory_path(ec) / ("tessel-kernels-" + std::to_string(geteuid()) + "-XXXXXX")).string();
  if (!mkdtemp(templ.data()))
    throw Error("codegen: cannot create a private kernel cache directory from '" + templ + "': " +
                std::strerror(errno) + "; set TESSEL_CACHE_DIR to a directory of your own, or TESSEL_DISABLE_CODEGEN=1");
  if (!dir) {
    dir = new std::string(templ);
    std::atexit([] {
      std::error_code e;
      fs::remove_all(*dir, e);
    });
  }
  *dir = templ;
  return *dir;
}

/// kernel_cache_dir() made (mode 0700) if missing, when it can be trusted; otherwise, after
/// a warning, the private directory.
fs::path trusted_cache_dir(State& st) {
  fs::path dir = fs::path(kernel_cache_dir()).lexically_normal();
  if (dir.has_parent_path() && dir.filename().empty()) dir = dir.parent_path();  // "a/b/" names "a/b"
  std::error_code ec;
  if (dir.has_parent_path()) fs::create_directories(dir.parent_path(), ec);
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    throw Error("codegen: cannot create the kernel cache directory '" + dir.string() + "': " + std::strerror(errno) +
                "; set TESSEL_CACHE_DIR to a writable directory, or TESSEL_DISABLE_CODEGEN=1");
  struct stat info;
  std::string why = ::lstat(dir.c_str(), &info) != 0 ? std::string("not readable: ") + std::strerror(errno)
                    : !S_ISDIR(info.st_mode) && !S_ISLNK(info.st_mode) ? "not a directory"
                                                                       : distrust(info);
  if (why.empty()) return dir;
  const fs::path own = private_cache_dir();
  warn_once(st, "codegen: not using the kernel cache directory '" + dir.string() + "': it is " + why +
                    ", so another user could put code there that this process would load. Using the private directory '" +
                    own.string() + "' for this process instead; set TESSEL_CACHE_DIR to a directory of your own (mode "
                    "0700) to keep kernels between runs");
  return own;
}

/// Whether the shared object at `so` may be loaded: it exists, is a regular file (not a
/// symbolic link) and can be trusted. A refused file is reported and recompiled over.
bool loadable(State& st, const fs::path& so) {
  struct stat info;
  if (::lstat(so.c_str(), &info) != 0) return false;
  std::string why = S_ISREG(info.st_mode) || S_ISLNK(info.st_mode) ? distrust(info) : "not a regular file";
  if (why.empty()) return true;
  warn_once(st, "codegen: not loading " + so.string() + ": it is " + why + "; compiling the kernels again in its place");
  return false;
}

}  // namespace

KernelLibrary::~KernelLibrary() {
  if (handle_) dlclose(handle_);
}

void* KernelLibrary::symbol(const std::string& name) const {
  void* p = dlsym(handle_, name.c_str());
  if (!p) throw Error("internal: generated kernel '" + name + "' is missing from its shared object");
  return p;
}

bool codegen_enabled() {
  static const bool enabled = [] {
    if (config::get_flag(config::kDisableCodegen)) return false;
    if (compiler_version().empty()) {
      TESSEL_WARN_LOG("codegen: the C++ compiler '" + compiler_path() +
                      "' does not run; jit uses the unfused kernels (set TESSEL_CXX to a compiler to fuse)");
      return false;
    }
    return true;
  }();
  return enabled;
}

std::string kernel_cache_dir() { return config::get_path(config::kCacheDir); }

std::string kernel_key(const std::string& source) {
  std::string flags;
  for (const auto& f : kFlags) flags += f + " ";
  for (const auto& f : kLibraries) flags += f + " ";
  return hash_key(source + '\0' + compiler_version() + '\0' + flags);
}

std::shared_ptr<KernelLibrary> load_or_compile(const std::string& source) {
  const std::string key = kernel_key(source);
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (auto lib = st.loaded.find(key)) return *lib;

  const fs::path dir = trusted_cache_dir(st);
  std::error_code ec;
  const fs::path so = dir / (key + ".so");
  auto t0 = std::chrono::steady_clock::now();
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (loadable(st, so)) {
      if (void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL)) {
        auto lib = std::make_shared<KernelLibrary>(h);
        st.loaded.insert(key, lib);
        if (attempt == 0) {
          st.stats.disk_loads++;
          st.stats.load_ms += ms_since(t0);
        }
        TESSEL_DEBUG_LOG("codegen: loaded " + so.string());
        return lib;
      }
      // A damaged file (say, from a full disk): compile it again.
      TESSEL_WARN_LOG(std::string("codegen: cannot load ") + so.string() + " (" + dlerror() + "); recompiling");
      fs::remove(so, ec);
    }
    const std::string tmp = (dir / (key + ".tmp." + unique_suffix())).string();
    {
      std::ofstream f(tmp + ".cpp");
      f << source;
      if (!f)
        throw Error("codegen: cannot write '" + tmp + ".cpp' in the kernel cache; set TESSEL_CACHE_DIR to a writable "
                    "directory, or TESSEL_DISABLE_CODEGEN=1");
    }
    std::vector<std::string> argv{compiler_path()};
    argv.insert(argv.end(), kFlags.begin(), kFlags.end());
    argv.insert(argv.end(), {"-o", tmp + ".so", tmp + ".cpp"});
    argv.insert(argv.end(), kLibraries.begin(), kLibraries.end());
    auto c0 = std::chrono::steady_clock::now();
    const int rc = run_process(argv, tmp + ".log");
    st.stats.compiles++;
    st.stats.compile_ms += ms_since(c0);
    if (rc != 0) {
      st.stats.failures++;
      std::string log = read_file(tmp + ".log", 4000);
      fs::remove(tmp + ".so", ec);
      throw Error("codegen: compiling generated kernels with '" + compiler_path() + "' failed (exit " +
                  std::to_string(rc) + "); source kept at " + tmp + ".cpp. Compiler output:\n" + log +
                  "\nSet TESSEL_DISABLE_CODEGEN=1 to run the unfused kernels.");
    }
    fs::remove(tmp + ".log", ec);
    fs::rename(tmp + ".cpp", dir / (key + ".cpp"), ec);  // kept for reading; not needed to load
    fs::rename(tmp + ".so", so, ec);                       // atomic: readers see all or nothing
    if (ec) throw Error("codegen: cannot move the compiled kernels into " + so.string() + ": " + ec.message());
    TESSEL_DEBUG_LOG("codegen: compiled " + so.string());
  }
  throw Error("codegen: cannot load the compiled kernels " + so.string() + ": " + dlerror());
}

CodegenStats codegen_stats() {
  std::lock_guard<std::mutex> lock(state().mu);
  return state().stats;
}

void forget_loaded_libraries() { state().loaded.clear(); }

}  // namespace tessel::compiler
