#include "backend/cpu/fftw.h"

#include <fftw3.h>

#include <algorithm>
#include <atomic>
#include <complex>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>

#include "backend/cpu/parallel.h"
#include "core/cache.h"
#include "tessel/array.h"
#include "tessel/error.h"

namespace tessel::cpu {
namespace {

// ---- the two FFTW libraries (fftw3f for float, fftw3 for double) behind one interface ----

template <class R> struct Fftw;

template <> struct Fftw<float> {
  using Complex = fftwf_complex;
  using Plan = fftwf_plan;
  static Plan c2c(int rank, const fftwf_iodim64* d, const fftwf_iodim64* h, void* in, void* out, int sign,
                  unsigned flags) {
    return fftwf_plan_guru64_dft(rank, d, 1, h, static_cast<Complex*>(in), static_cast<Complex*>(out), sign, flags);
  }
  static Plan r2c(int rank, const fftwf_iodim64* d, const fftwf_iodim64* h, void* in, void* out, unsigned flags) {
    return fftwf_plan_guru64_dft_r2c(rank, d, 1, h, static_cast<float*>(in), static_cast<Complex*>(out), flags);
  }
  static Plan c2r(int rank, const fftwf_iodim64* d, const fftwf_iodim64* h, void* in, void* out, unsigned flags) {
    return fftwf_plan_guru64_dft_c2r(rank, d, 1, h, static_cast<Complex*>(in), static_cast<float*>(out), flags);
  }
  static void run_c2c(Plan p, void* in, void* out) {
    fftwf_execute_dft(p, static_cast<Complex*>(in), static_cast<Complex*>(out));
  }
  static void run_r2c(Plan p, void* in, void* out) {
    fftwf_execute_dft_r2c(p, static_cast<float*>(in), static_cast<Complex*>(out));
  }
  static void run_c2r(Plan p, void* in, void* out) {
    fftwf_execute_dft_c2r(p, static_cast<Complex*>(in), static_cast<float*>(out));
  }
  static void destroy(Plan p) { fftwf_destroy_plan(p); }
};

template <> struct Fftw<double> {
  using Complex = fftw_complex;
  using Plan = fftw_plan;
  static Plan c2c(int rank, const fftw_iodim64* d, const fftw_iodim64* h, void* in, void* out, int sign,
                  unsigned flags) {
    return fftw_plan_guru64_dft(rank, d, 1, h, static_cast<Complex*>(in), static_cast<Complex*>(out), sign, flags);
  }
  static Plan r2c(int rank, const fftw_iodim64* d, const fftw_iodim64* h, void* in, void* out, unsigned flags) {
    return fftw_plan_guru64_dft_r2c(rank, d, 1, h, static_cast<double*>(in), static_cast<Complex*>(out), flags);
  }
  static Plan c2r(int rank, const fftw_iodim64* d, const fftw_iodim64* h, void* in, void* out, unsigned flags) {
    return fftw_plan_guru64_dft_c2r(rank, d, 1, h, static_cast<Complex*>(in), static_cast<double*>(out), flags);
  }
  static void run_c2c(Plan p, void* in, void* out) {
    fftw_execute_dft(p, static_cast<Complex*>(in), static_cast<Complex*>(out));
  }
  static void run_r2c(Plan p, void* in, void* out) {
    fftw_execute_dft_r2c(p, static_cast<double*>(in), static_cast<Complex*>(out));
  }
  static void run_c2r(Plan p, void* in, void* out) {
    fftw_execute_dft_c2r(p, static_cast<Complex*>(in), static_cast<double*>(out));
  }
  static void destroy(Plan p) { fftw_destroy_plan(p); }
};

static_assert(std::is_same_v<fftw_iodim64, fftwf_iodim64>, "FFTW's iodim64 is shared by both precisions");

// ---- the plan cache ----

struct PlanKey {
  FftKind kind;
  bool double_precision;
  bool in_place;
  int64_t howmany;
  std::vector<int64_t> lengths;
  bool operator==(const PlanKey&) const = default;
};

struct PlanKeyHash {
  size_t operator()(const PlanKey& k) const {
    size_t h = std::hash<int64_t>()(k.howmany) * 31 + size_t(k.kind) * 4 + size_t(k.double_precision) * 2 +
               size_t(k.in_place);
    for (auto n : k.lengths) h = h * 1000003u ^ std::hash<int64_t>()(n);
    return h;
  }
};

// FFTW's planner keeps global state and is not thread-safe; executing a plan on new arrays
// is. Every plan is made and destroyed under this mutex. The cache (core/cache.h) holds
// shared plans: a transform keeps the plans it runs with, so eviction and clear_caches
// destroy a plan only once no transform uses it. It is never destroyed (plans in use at exit
// stay valid). FFTW_ESTIMATE plans are small; the capacity bounds the tables of twiddle
// factors kept for long transforms of many lengths.
constexpr size_t kPlanCapacity = 128;
std::mutex& planner_mutex() {
  static std::mutex m;
  return m;
}
using PlanRef = std::shared_ptr<void>;
detail::Cache<PlanKey, PlanRef, PlanKeyHash>& plan_cache() {
  static auto* cache = new detail::Cache<PlanKey, PlanRef, PlanKeyHash>("fft.plans", kPlanCapacity);
  return *cache;
}
std::atomic<size_t> g_plan_count{0};

/// Row-major strides of `dims` (in elements).
std::vector<int64_t> row_major(std::vector<int64_t> dims) {
  std::vector<int64_t> s(dims.size());
  int64_t acc = 1;
  for (size_t i = dims.size(); i-- > 0;) s[i] = acc, acc *= dims[i];
  return s;
}

int64_t product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (auto n : v) p *= n;
  return p;
}

/// Dense layout of one transform: element counts of an input and an output block (in units
/// of the side's element type: complex or real).
struct Layout {
  int64_t in_block, out_block;
};

Layout layout_of(FftKind kind, const std::vector<int64_t>& lengths) {
  std::vector<int64_t> half = lengths;
  half.back() = half.back() / 2 + 1;
  const int64_t full = product(lengths), packed = product(half);
  switch (kind) {
    case FftKind::kRealForward: return {full, packed};
    case FftKind::kRealInverse: return {packed, full};
    default: return {full, full};
  }
}

/// Makes the plan for `key` (caller holds the planner mutex). `in`/`out` are the buffers of
/// the first chunk: FFTW_ESTIMATE does not touch them, they only tell FFTW whether the
/// transform is in place.
template <class R> void* make_plan(const PlanKey& key, void* in, void* out) {
  using F = Fftw<R>;
  const auto& n = key.lengths;
  std::vector<int64_t> half = n;
  half.back() = half.back() / 2 + 1;
  const auto full_strides = row_major(n), half_strides = row_major(half);
  const Layout lay = layout_of(key.kind, n);
  std::vector<fftw_iodim64> dims(n.size());
  for (size_t i = 0; i < n.size(); ++i) {
    dims[i].n = n[i];
    dims[i].is = key.kind == FftKind::kRealInverse ? half_strides[i] : full_strides[i];
    dims[i].os = key.kind == FftKind::kRealForward ? half_strides[i] : full_strides[i];
  }
  const fftw_iodim64 batch{key.howmany, lay.in_block, lay.out_block};
  const int rank = int(n.size());
  const unsigned flags = FFTW_ESTIMATE | FFTW_UNALIGNED;
  typename F::Plan p = nullptr;
  switch (key.kind) {
    case FftKind::kForward:
    case FftKind::kInverse:
      p = F::c2c(rank, dims.data(), &batch, in, out, key.kind == FftKind::kForward ? FFTW_FORWARD : FFTW_BACKWARD,
                 flags | (key.in_place ? 0u : unsigned(FFTW_PRESERVE_INPUT)));
      break;
    case FftKind::kRealForward: p = F::r2c(rank, dims.data(), &batch, in, out, flags | FFTW_PRESERVE_INPUT); break;
    case FftKind::kRealInverse: p = F::c2r(rank, dims.data(), &batch, in, out, flags | FFTW_DESTROY_INPUT); break;
  }
  if (!p)
    throw Error("fft: FFTW could not plan a transform of lengths " + shape_to_string(n) + " over a batch of " +
                std::to_string(key.howmany) + " (internal error)");
  ++g_plan_count;
  return static_cast<void*>(p);
}

template <class R> PlanRef get_plan(PlanKey key, void* in, void* out) {
  if (auto p = plan_cache().find(key)) return *p;
  void* made;
  {
    std::lock_guard<std::mutex> lock(planner_mutex());
    made = make_plan<R>(key, in, out);
  }
  PlanRef plan(made, [](void* p) {
    std::lock_guard<std::mutex> lock(planner_mutex());
    Fftw<R>::destroy(static_cast<typename Fftw<R>::Plan>(p));
  });
  return plan_cache().insert(std::move(key), std::move(plan));  // another thread's, if it was first
}

// Each chunk of a split batch holds at least this many elements: enough work (tens of
// microseconds) to pay for handing the chunk to another thread.
constexpr int64_t kMinChunkElements = int64_t(1) << 14;

template <class R> void run(FftKind kind, const std::vector<int64_t>& lengths, int64_t howmany, const void* in_ptr,
                            void* out_ptr) {
  using F = Fftw<R>;
  using C = std::complex<R>;  // layout-compatible with FFTW's complex type
  const Layout lay = layout_of(kind, lengths);
  const bool real_in = kind == FftKind::kRealForward, real_out = kind == FftKind::kRealInverse;
  const size_t in_item = real_in ? sizeof(R) : sizeof(C), out_item = real_out ? sizeof(R) : sizeof(C);
  const bool complex_to_complex = kind == FftKind::kForward || kind == FftKind::kInverse;
  const bool in_place = in_ptr == out_ptr;
  if (in_place && !complex_to_complex)  // the two sides have different sizes: never one buffer
    throw Error("fft: a real-to-complex or complex-to-real transform got one buffer as input and output "
                "(internal error)");

  // Split the batch into chunks of equal size (the last one may be smaller), so at most two
  // plans serve a call and the cache stays small.
  const int64_t total = howmany * product(lengths);
  int64_t nchunks = 1;
  if (num_threads() > 1 && howmany > 1)
    nchunks = std::clamp<int64_t>(total / kMinChunkElements, 1, std::min<int64_t>(howmany, int64_t(num_threads()) * 4));
  const int64_t chunk = (howmany + nchunks - 1) / nchunks;
  nchunks = (howmany + chunk - 1) / chunk;
  const int64_t last = howmany - (nchunks - 1) * chunk;

  auto* in = static_cast<unsigned char*>(const_cast<void*>(in_ptr));  // FFTW's signatures are not const
  auto* out = static_cast<unsigned char*>(out_ptr);
  const bool dbl = std::is_same_v<R, double>;
  const PlanRef full_ref = get_plan<R>({kind, dbl, in_place, chunk, lengths}, in, out);
  const PlanRef last_ref = last == chunk ? full_ref : get_plan<R>({kind, dbl, in_place, last, lengths}, in, out);
  const auto full_plan = static_cast<typename F::Plan>(full_ref.get());
  const auto last_plan = static_cast<typename F::Plan>(last_ref.get());

  const R scale = R(1.0 / double(product(lengths)));
  auto run_chunk = [&](int64_t c) {
    const int64_t first = c * chunk, count = std::min(chunk, howmany - first);
    const typename F::Plan p = count == chunk ? full_plan : last_plan;
    unsigned char* src = in + size_t(first * lay.in_block) * in_item;
    unsigned char* dst = out + size_t(first * lay.out_block) * out_item;
    switch (kind) {
      case FftKind::kForward:
      case FftKind::kInverse: F::run_c2c(p, src, dst); break;
      case FftKind::kRealForward: F::run_r2c(p, src, dst); break;
      case FftKind::kRealInverse: {
        // FFTW's complex-to-real transforms overwrite their input: run on a copy.
        std::vector<C> copy(size_t(count * lay.in_block));
        std::memcpy(copy.data(), src, copy.size() * sizeof(C));
        F::run_c2r(p, copy.data(), dst);
        break;
      }
    }
    if (kind == FftKind::kInverse || kind == FftKind::kRealInverse) {
      R* o = reinterpret_cast<R*>(dst);
      const int64_t n = count * lay.out_block * (real_out ? 1 : 2);
      for (int64_t i = 0; i < n; ++i) o[i] *= scale;
    }
  };
  if (nchunks == 1) return run_chunk(0);
  parallel_for(nchunks, 1, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) run_chunk(c);
  });
}

}  // namespace

void fft(FftKind kind, bool double_precision, const std::vector<int64_t>& lengths, int64_t howmany, const void* in,
         void* out) {
  if (howmany <= 0) return;
  if (lengths.empty() || std::any_of(lengths.begin(), lengths.end(), [](int64_t n) { return n < 1; }))
    throw Error("fft: transform lengths must be >= 1, got " + shape_to_string(lengths) + " (internal error)");
  if (double_precision) run<double>(kind, lengths, howmany, in, out);
  else run<float>(kind, lengths, howmany, in, out);
}

size_t fft_plan_count() { return g_plan_count.load(); }

}  // namespace tessel::cpu
