// The per-function cache of jit (detail::TraceCache, include/tessel/jit.h) over a core Cache.
#include "core/array_impl.h"
#include "core/cache.h"
#include "tessel/jit.h"

namespace tessel::detail {
namespace {

// Signatures one jitted function keeps: enough for the shapes of a real program (a training
// step, the last partial batch, an evaluation step), few enough that a function called on
// ever new shapes does not keep every executable. Fixed (docs/performance.md, "Caches").
constexpr size_t kTraceCapacity = 256;

struct Signature {
  const std::type_info* arg_types;
  StaticKey statics;
  std::vector<Aval> avals;
};

// Static values have no hash: they are compared in the bucket of the types and avals.
size_t hash_of(std::span<const Array> leaves) {
  size_t h = leaves.size();
  for (const Array& a : leaves) h = hash_aval(h, a.aval_ref());
  return h;
}
size_t hash_of(std::span<const Aval> avals) {
  size_t h = avals.size();
  for (const Aval& av : avals) h = hash_aval(h, av);
  return h;
}

struct SameSignature {
  bool operator()(const Signature& a, const Signature& b) const {
    return *a.arg_types == *b.arg_types && a.avals == b.avals && same_static_key(a.statics, b.statics);
  }
};
struct HashSignature {
  size_t operator()(const Signature& s) const { return hash_of(s.avals); }
};

}  // namespace

struct TraceCache::Impl {
  Cache<Signature, Hit, HashSignature, SameSignature> cache{"jit.traces", kTraceCapacity};
};

TraceCache::TraceCache() : impl_(std::make_unique<Impl>()) {}
TraceCache::~TraceCache() = default;

std::optional<TraceCache::Hit> TraceCache::find(const std::type_info& arg_types, const StaticKey& statics,
                                                std::span<const Array> leaves) {
  return impl_->cache.find_if([&] { return hash_of(leaves); }, [&](const Signature& s) {
    if (*s.arg_types != arg_types || s.avals.size() != leaves.size()) return false;
    for (size_t i = 0; i < leaves.size(); ++i)
      if (!(s.avals[i] == leaves[i].aval_ref())) return false;
    return same_static_key(s.statics, statics);
  });
}

TraceCache::Hit TraceCache::insert(const std::type_info& arg_types, StaticKey statics, std::vector<Aval> avals, Hit hit) {
  return impl_->cache.insert(Signature{&arg_types, std::move(statics), std::move(avals)}, std::move(hit));
}

size_t TraceCache::size() const { return impl_->cache.size(); }

}  // namespace tessel::detail
