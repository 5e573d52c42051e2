#pragma once
// Compiling generated C++ into shared objects, cached on disk (docs/performance.md).
//
// A translation unit is keyed by a hash of its source, the compiler's version line and the
// flags. The shared object lives at <cache dir>/<key>.so; it is compiled into a temporary
// file and renamed into place, so concurrent processes never see a partial file (the loser
// of a race renames an identical file over the winner's). Warm runs only dlopen. Only a
// directory and files no other user can write are trusted (see kernel_cache_dir).
#include <cstdint>
#include <memory>
#include <string>

namespace tessel::compiler {

/// A loaded shared object; symbols stay valid while it lives.
class KernelLibrary {
 public:
  explicit KernelLibrary(void* handle) : handle_(handle) {}
  ~KernelLibrary();
  KernelLibrary(const KernelLibrary&) = delete;
  KernelLibrary& operator=(const KernelLibrary&) = delete;
  /// The address of extern "C" function `name`; throws an internal Error if absent.
  void* symbol(const std::string& name) const;

 private:
  void* handle_;
};

/// Whether generated code is used: false when TESSEL_DISABLE_CODEGEN=1 or no compiler runs
/// (TESSEL_CXX, else c++ on PATH).
bool codegen_enabled();

/// The library compiled from `source` (from the disk cache when present). Throws
/// tessel::Error with the compiler's messages when compilation fails.
std::shared_ptr<KernelLibrary> load_or_compile(const std::string& source);

/// Counters of this process, for benchmarks and tests.
struct CodegenStats {
  int64_t compiles = 0;      ///< compiler invocations
  double compile_ms = 0;     ///< wall time spent in them
  int64_t disk_loads = 0;    ///< shared objects loaded from the disk cache without compiling
  double load_ms = 0;        ///< wall time of those loads
  int64_t failures = 0;      ///< compiler invocations that failed (jit then runs unfused)
};
CodegenStats codegen_stats();
/// Forgets libraries loaded by this process (kernels in use stay loaded), so the next
/// load_or_compile of a source reads the disk cache again; for the warm-load benchmark.
/// (clear_caches does this too.)
void forget_loaded_libraries();
/// The configured cache directory: TESSEL_CACHE_DIR, else $XDG_CACHE_HOME/tessel/kernels,
/// else $HOME/.cache/tessel/kernels, else <tmp>/tessel-kernels-<uid>. load_or_compile uses
/// it only if it belongs to this user (or root), is writable by no one else and is not a
/// symbolic link (it is created with mode 0700); otherwise it warns once and caches in a
/// private mkdtemp directory for the process. Each <key>.so passes the same test before
/// it is loaded; one that fails is compiled again over it.
std::string kernel_cache_dir();
/// The name of the shared object for `source` in the cache directory, less ".so" (a hash
/// of the source, the compiler's version line and the flags).
std::string kernel_key(const std::string& source);

}  // namespace tessel::compiler
