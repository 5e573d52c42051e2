#pragma once
// tessel's in-memory caches, as a whole: clear them (like jax.clear_caches) and read their
// statistics. Each cache is bounded by a fixed number of entries; docs/performance.md
// ("Caches") lists them with their capacities.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tessel/export.h"

namespace tessel {

/// Statistics of one kind of cache (all live caches of that name together: "jit.traces" has
/// one cache per jitted function).
struct CacheStats {
  std::string name;        ///< what it holds, e.g. "jit.traces", "eager.ops", "fft.plans"
  size_t size = 0;         ///< entries held now
  size_t capacity = 0;     ///< most entries one cache of this name holds
  size_t instances = 0;    ///< caches of this name alive now
  uint64_t hits = 0;       ///< lookups answered from the cache, since the process started
  uint64_t misses = 0;     ///< lookups that computed the value (a trace, a compilation, a plan)
  uint64_t evictions = 0;  ///< entries dropped to stay within capacity (clear_caches not counted)
};

/// Empties every in-memory cache of this process: the traces and executables of all jitted
/// functions, the eager dispatch cache, partitioned programs, loaded kernel libraries
/// (those no live executable uses are unloaded), FFT plans and colocated output specs. The
/// next call of a jitted function traces and compiles again and gives the same values.
/// Safe to call at any time from any thread; work already dispatched keeps what it uses.
/// State that is not a cache is kept: registered functions, communicators, arrays and the
/// programs other processes hold. The kernel cache on disk is not touched, and freed
/// buffer memory stays with the allocator for reuse.
TESSEL_API void clear_caches();

/// One line per kind of cache, sorted by name. Hit, miss and eviction counts are never
/// reset (clear_caches sets sizes to 0).
TESSEL_API std::vector<CacheStats> cache_stats();

}  // namespace tessel
