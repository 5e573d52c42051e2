// The configuration table (core/config.h): every TESSEL_ environment variable, one row each.
// docs/configuration.md's table is generated from these rows (markdown_table); edit them
// here and paste the output of a failing Config.DocsTableIsTheConfigTable test there.
//
// Variables that are not tessel's own are read where they are inputs: XDG_CACHE_HOME, HOME
// and TMPDIR (through std::filesystem::temp_directory_path) here, for the default of
// TESSEL_CACHE_DIR; the launcher's variables (OMPI_COMM_WORLD_SIZE, PMI_RANK, ...) in
// distributed/mpi.cpp, which asks whether mpirun started the process: they are facts about
// the launch, not settings.
#include "core/config.h"

#include <oneapi/tbb/info.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <mutex>
#include <optional>

#include "tessel/error.h"

namespace tessel::config {
namespace {

constexpr int64_t kNoMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kNoMax = std::numeric_limits<int64_t>::max();

// Computed defaults.

/// oneTBB's count of the cores this process may use (its CPU affinity).
int64_t cores() { return oneapi::tbb::info::default_concurrency(); }

/// 1 GiB, or a quarter of physical memory when that is less.
int64_t allocator_cache_bytes() {
  int64_t limit = int64_t(1) << 30;
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) limit = std::min(limit, int64_t(pages) * int64_t(page) / 4);
  return limit;
}

/// The user's cache directory, or a directory of their own under the temporary one.
std::string default_cache_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/tessel/kernels";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/tessel/kernels";
  std::error_code ec;
  return (std::filesystem::temp_directory_path(ec) / ("tessel-kernels-" + std::to_string(getuid()))).string();
}

constexpr std::array<Entry, kVarCount> kTable = {{
    {.var = Var::kCpuDevices, .name = "TESSEL_CPU_DEVICES", .kind = Kind::kInteger,
     .min = 1, .max = 1024, .default_int = 1,
     .doc = "Number of virtual CPU devices in this process. Each device has its own stream (a worker thread) "
            "that runs its operations in order. The test suite runs with `8`."},
    {.var = Var::kNumThreads, .name = "TESSEL_NUM_THREADS", .kind = Kind::kInteger,
     .min = 1, .max = 4096, .derived_int = cores, .default_doc = "cores this process may use",
     .doc = "Threads of the one pool (oneTBB arena) that every virtual device splits its kernels over — fused "
            "loop nests, the unfused kernels (reductions, scans, copies, gathers, scatters, ...), FFTs and "
            "matrix products: OpenBLAS and oneDNN are set to one thread and tessel spreads batch "
            "elements and blocks of large products over this pool, so OpenBLAS's own `OPENBLAS_NUM_THREADS` "
            "has no effect on tessel's products. (The OpenBLAS count is process-wide: a program that also calls "
            "OpenBLAS itself and wants its threads calls `openblas_set_num_threads` around those calls.) Results "
            "do not depend on it (docs/performance.md)."},
    {.var = Var::kParallelSpinUs, .name = "TESSEL_PARALLEL_SPIN_US", .kind = Kind::kInteger,
     .min = 0, .max = 1000000, .default_int = 50,
     .doc = "Microseconds a helper thread of the pool keeps looking for the next chunks of work after its last "
            "chunk before it gives its thread back to oneTBB: the kernels of a small time step, called back to "
            "back, then find a second thread awake instead of waiting for one to wake (tens of microseconds, "
            "often longer than the kernel). `0`: helpers leave as soon as no chunk is left, and each split "
            "kernel wakes one again. On cores shared with other busy processes the polling spends this "
            "process's share of a core "
            "([performance.md](performance.md#time-steps-what-a-step-costs-besides-its-loop-nests))."},
    // Any integer: a negative one queues even the operations that write nothing.
    {.var = Var::kEagerInlineBytes, .name = "TESSEL_EAGER_INLINE_BYTES", .kind = Kind::kInteger,
     .default_int = 1 << 16,
     .doc = "Eager operations whose inputs and outputs total at most this many bytes run on the caller's thread "
            "when the device stream is idle, instead of being queued (saves a thread hand-off for tiny ops). `0` "
            "queues everything. Jitted executables use the same threshold on the bytes all their steps read and "
            "write, a loop's steps included (its body's bytes times its steps; a `while_loop`, whose steps are not "
            "known, is never inline work)."},
    {.var = Var::kStreamMaxQueue, .name = "TESSEL_STREAM_MAX_QUEUE", .kind = Kind::kInteger,
     .min = 1, .out_of_range = OutOfRange::kClamp, .default_int = 64,
     .doc = "Most tasks a device stream holds queued; a producer that gets further ahead waits (each queued "
            "task holds its output buffers, so this bounds memory when eager code dispatches faster than the "
            "device computes)."},
    {.var = Var::kPinDevices, .name = "TESSEL_PIN_DEVICES", .kind = Kind::kFlag, .default_int = 0,
     .doc = "`1` pins the stream thread of virtual device `cpu:k` to the k-th core the process may run on "
            "(its CPU affinity), when it may run on at least `TESSEL_CPU_DEVICES` cores; otherwise nothing is "
            "pinned. Off by default: on a machine shared with other work a pinned thread cannot move to an idle "
            "core. Read when the devices start."},
    {.var = Var::kAllocatorCacheBytes, .name = "TESSEL_ALLOCATOR_CACHE_BYTES", .kind = Kind::kInteger,
     .min = 0, .derived_int = allocator_cache_bytes, .default_doc = "1 GiB, at most a quarter of physical memory",
     .doc = "Most bytes of freed buffer memory kept for reuse. Buffers of 16 KiB and more come from one cache of "
            "freed blocks, shared by all devices and keyed by size class (eight classes per power of two, so a "
            "request is rounded up by less than 12.5%; blocks are 64-byte aligned); freed blocks return to the "
            "cache until it holds this much (larger classes are evicted first), so a program run step after "
            "step reuses its memory instead of mapping and page-faulting it afresh. `0` turns the cache off "
            "(every buffer goes to `malloc`/`free`)."},
    {.var = Var::kHugePageBytes, .name = "TESSEL_HUGE_PAGE_BYTES", .kind = Kind::kInteger, .min = 0,
     .default_int = 2 << 20, .default_doc = "2 MiB",
     .doc = "Buffers of at least this many bytes are aligned to 2 MiB, rounded up to whole 2 MiB pages and marked "
            "for transparent huge pages (`madvise(MADV_HUGEPAGE)`, for systems whose "
            "`/sys/kernel/mm/transparent_hugepage/enabled` is `madvise`): a kernel streaming through large arrays "
            "then misses the TLB once per 2 MiB instead of once per 4 KiB, which costs most on a virtual machine "
            "(nested page tables). The default takes in the pieces of a sharded array (the shallow-water step's "
            "3.25 MiB pieces on 2 devices; [sharding.md](sharding.md#benchmarks)). `0` turns it off."},
    {.var = Var::kBufferStaggerLines, .name = "TESSEL_BUFFER_STAGGER_LINES", .kind = Kind::kInteger, .min = 0,
     .max = 4, .default_int = 3,
     .doc = "Buffers of 256 KiB and more start this many 64-byte cache lines times 0, 1, ..., 15 (in turn, one "
            "step per allocation) past their block's start (at most 4, so that the 16 starts differ within a "
            "4 KiB page), as far as the slack of their block (size class, whole huge pages) allows: no block "
            "grows, so a buffer that fills its block (an array of exactly 4 MiB) is not moved. Large blocks all begin at the same place of a 4 KiB "
            "page (2 MiB-aligned, or page-aligned from `mmap`), so without it row i of every array of a loop "
            "nest maps to the same L1 cache set and the same low 12 address bits; when a row is a multiple of "
            "4 KiB (1024 `float32`, 512 `float64` columns) every row does, and the shallow-water step at "
            "1022x1585 took 1.8x as long. `0` turns it off."},
    {.var = Var::kDisableCodegen, .name = "TESSEL_DISABLE_CODEGEN", .kind = Kind::kFlag,
     .default_int = 0,
     .doc = "Any non-empty value other than `0` turns code generation off: `jit` runs one unfused kernel per "
            "equation instead of compiling fused loop nests ([performance.md](performance.md)). Results are "
            "the same up to floating-point rounding."},
    {.var = Var::kConvOnednn, .name = "TESSEL_CONV_ONEDNN", .kind = Kind::kFlag, .when = When::kEachCall,
     .default_int = 1,
     .doc = "`0` runs every convolution on tessel's own loops instead of oneDNN (which otherwise computes "
            "float32 convolutions of 1 to 3 spatial dimensions; [convolution.md](convolution.md)), to compare "
            "the two."},
    {.var = Var::kCxx, .name = "TESSEL_CXX", .kind = Kind::kString,
     .default_text = "c++",
     .doc = "The C++ compiler that compiles generated kernels. Its first `--version` line is part of the cache "
            "key; if it does not run, code generation is off for the process (one warning)."},
    {.var = Var::kCacheDir, .name = "TESSEL_CACHE_DIR", .kind = Kind::kPath, .when = When::kEachCompilation,
     .derived_text = default_cache_dir,
     .default_doc = "`$XDG_CACHE_HOME/tessel/kernels`, else `$HOME/.cache/tessel/kernels`, else "
                    "`<tmp>/tessel-kernels-<uid>`",
     .doc = "Directory of compiled kernels (`<hash>.so`, with the source as `<hash>.cpp`); created (mode 0700) "
            "when needed, never pruned. Used only if it belongs to the current user (or root), is not writable "
            "by group or others and is not a symbolic link; otherwise jit warns once and caches in a private "
            "directory for the process (see [performance.md](performance.md#trust)). If it cannot be written, "
            "jit warns and runs unfused."},
    {.var = Var::kFpContract, .name = "TESSEL_FP_CONTRACT", .kind = Kind::kFlag, .when = When::kEachCompilation,
     .default_int = 1,
     .doc = "`0` keeps every float32 and float64 product and sum of a compiled function rounded on its own. By "
            "default `jit` rounds as `jax.jit` does: it rewrites arithmetic on literals as XLA's algebraic "
            "simplifier does (`x / c` is `x * RN(1/c)`, `(x * c1) * c2` is `x * RN(c1 * c2)`, `pow(x, 3)` is "
            "`x * (x * x)`; [performance.md](performance.md#literal-arithmetic)) and contracts a product read only "
            "by a sum or difference into one fused multiply-add (one rounding instead of two), as XLA's CPU "
            "compiler does; fused and unfused kernels then compute the same rewritten program, and its results "
            "are within the bound of [performance.md](performance.md#fused-multiply-add) of the uncontracted ones."},
    {.var = Var::kFusionMinElements, .name = "TESSEL_FUSION_MIN_ELEMENTS", .kind = Kind::kInteger,
     .when = When::kEachCompilation, .min = 0, .default_int = 16384,
     .doc = "Loop nests over fewer points stay unfused kernels (compiling would cost more than it saves); `0` "
            "fuses everything."},
    {.var = Var::kFusionMaxPointCost, .name = "TESSEL_FUSION_MAX_POINT_COST", .kind = Kind::kInteger,
     .when = When::kEachCompilation, .min = 0, .default_int = 256,
     .doc = "Work per point (in arithmetic operations; transcendental functions count 16) a loop nest may spend "
            "recomputing values it reads at several offsets before the costliest one is stored instead (a stored value "
            "that only later loop nests of a streamed chain read lives in per-thread windows of rows, not in a "
            "full-size buffer: [performance.md](performance.md#streaming-across-loop-nests))."},
    {.var = Var::kFusionSmallPointCost, .name = "TESSEL_FUSION_SMALL_POINT_COST", .kind = Kind::kInteger,
     .when = When::kEachCompilation, .min = 0, .default_int = 32,
     .doc = "The same budget (the lower of the two) for a loop nest whose domain takes at most 1 MiB: its "
            "arrays stay in cache and what it stores lives in rings of rows of a streamed chain, so storing costs "
            "less than recomputing ([performance.md](performance.md#rings-of-rows-and-the-recompute-budget)). "
            "Set it to `TESSEL_FUSION_MAX_POINT_COST`'s value to treat every size alike."},
    {.var = Var::kFusionMaxOutputs, .name = "TESSEL_FUSION_MAX_OUTPUTS", .kind = Kind::kInteger,
     .when = When::kEachCompilation, .min = 0, .default_int = 8,
     .doc = "Most outputs one loop nest computes (`0` counts as 1)."},
    {.var = Var::kFusionStream, .name = "TESSEL_FUSION_STREAM", .kind = Kind::kFlag,
     .when = When::kEachCompilation, .default_int = 1,
     .doc = "`0` runs every loop nest over all its rows before the next one starts, instead of streaming "
            "chains of consecutive loop nests over bands of rows that stay in cache "
            "([performance.md](performance.md#streaming-across-loop-nests)). Results are the same bit for bit."},
    {.var = Var::kFusionStreamBandBytes, .name = "TESSEL_FUSION_STREAM_BAND_BYTES", .kind = Kind::kInteger,
     .when = When::kEachCompilation, .min = 1, .default_int = 512 << 10, .default_doc = "512 KiB",
     .doc = "Bytes of one band of a streamed chain of loop nests: its rows of every array the chain reads or "
            "writes. Each thread runs every loop nest of the chain on one band of rows before the next band, "
            "so a band should fit in a core's L2 cache with room for the rows a consumer lags behind."},
    {.var = Var::kFusionStreamInplace, .name = "TESSEL_FUSION_STREAM_INPLACE", .kind = Kind::kFlag,
     .when = When::kEachCompilation, .default_int = 0,
     .doc = "`1` writes a streamed chain's results over inputs that die at it (a donated state, an intermediate) "
            "instead of fresh memory ([performance.md](performance.md#streaming-across-loop-nests)); off by default, "
            "as it measured slower on the shallow-water step. Results are the same bit for bit."},
    {.var = Var::kOverlapExchange, .name = "TESSEL_OVERLAP_EXCHANGE", .kind = Kind::kFlag,
     .when = When::kEachCompilation, .default_int = 1,
     .doc = "`0` waits for every `collective_permute` and jitted `comm::sendrecv` where it runs. By "
            "default a compiled program posts its rows and computes the rows of the next loop nest that "
            "do not read the received ones (and steps that do not need them) before it waits "
            "([sharding.md](sharding.md#overlapping-the-exchange)). Results are the same bit for bit."},
    {.var = Var::kHostCallbackMaxQueueBytes, .name = "TESSEL_HOST_CALLBACK_MAX_QUEUE_BYTES", .kind = Kind::kInteger,
     .min = 1, .out_of_range = OutOfRange::kClamp, .default_int = int64_t(256) << 20, .default_doc = "256 MiB",
     .doc = "Most bytes of tapped values one device's host-callback queue holds; a device whose tap would "
            "overflow it waits until the receiver thread has run enough taps "
            "([host_callbacks.md](host_callbacks.md))."},
    {.var = Var::kHostCallbackSpinUs, .name = "TESSEL_HOST_CALLBACK_SPIN_US", .kind = Kind::kInteger,
     .min = 0, .max = 1000000, .default_int = 20,
     .doc = "Microseconds a host-callback receiver thread polls for more taps after emptying its queue before it "
            "sleeps: a device tapping in a loop then hands taps over without waking a sleeping thread (a system "
            "call per tap). `0` sleeps at once. A process that may run on one core only (its CPU affinity, as "
            "under `mpirun --bind-to core`) never polls: the polling would hold the core the device needs."},
    {.var = Var::kControlSpinUs, .name = "TESSEL_CONTROL_SPIN_US", .kind = Kind::kInteger,
     .min = 0, .out_of_range = OutOfRange::kClamp, .default_int = 2000,
     .doc = "Single-controller jobs ([single_controller.md](single_controller.md)): microseconds the driver "
            "(waiting for a reply) and a worker (waiting for the next message) poll, yielding the core, before "
            "they sleep with a growing pause (5 us up to 0.5 ms). Lower it to save CPU on idle workers at the "
            "price of latency (a remote colocated call takes ~20 us at 2000, ~150 us at 50 on the 2-core VM). "
            "It must agree in every process. Reading a pipelined step's results does not use it: the driver "
            "polls 50 us, then sleeps in steps of at most 0.1 ms, leaving the cores to the workers running the "
            "step ([pipeline.md](pipeline.md#timelines)); nor does a worker's server while long work (a "
            "pipelined step, a colocated call that handed serving over) runs or waits there: it polls 50 us, then sleeps "
            "the same way."},
    {.var = Var::kPeerTimeoutMs, .name = "TESSEL_PEER_TIMEOUT_MS", .kind = Kind::kInteger,
     .min = 0, .max = 3600000, .default_int = 10000, .default_doc = "10 s",
     .doc = "Multi-process jobs: every process sends a small UDP heartbeat to every other one; a process "
            "whose heartbeats stop for this many milliseconds (its host went down, lost its link, or the "
            "process was killed) is reported dead by the next wait on it, as an Error naming its rank and "
            "host ([cluster.md](cluster.md)). `0` turns the heartbeats off."},
    {.var = Var::kMpiMaxCount, .name = "TESSEL_MPI_MAX_COUNT", .kind = Kind::kInteger,
     .min = 1, .max = INT_MAX, .default_int = INT_MAX, .default_doc = "`INT_MAX`",
     .doc = "Most elements one MPI call takes (MPI counts are `int`s): longer messages are split, reductions "
            "into chunks and data movement through one derived datatype ([comm.md](comm.md)). Small values "
            "exist to test the splitting (the tests use `7`)."},
    {.var = Var::kPipelineTrace, .name = "TESSEL_PIPELINE_TRACE", .kind = Kind::kPath, .when = When::kEachCall,
     .doc = "A file name: each call of a pipelined function writes its timeline there as a Chrome trace (open "
            "it in Perfetto or chrome://tracing; [pipeline.md](pipeline.md#timelines)), replacing the last one."},
    {.var = Var::kLog, .name = "TESSEL_LOG", .kind = Kind::kString,
     .doc = "How much tessel writes to stderr, each line prefixed `[tessel <process>]`. Unset (or any other "
            "value): warnings only. `info` (or `INFO`): also one line for each choice that costs time or "
            "memory, such as the SPMD partitioner computing an equation on gathered operands because it has "
            "no partitioned form ([sharding.md](sharding.md#seeing-what-partitioning-costs)). `debug` (or "
            "`DEBUG`): also one line per dispatch, compilation and execution. A program (a test) may override "
            "it with `detail::set_log_level` (src/core/log.h)."},
}};

constexpr bool in_order() {
  for (size_t i = 0; i < kTable.size(); ++i)
    if (kTable[i].var != Var(i)) return false;
  return true;
}
static_assert(in_order(), "config: the rows of kTable must follow the order of Var");

template <Kind K>
constexpr bool agrees(Key<K> key) {
  return kTable[size_t(key.var)].kind == K;
}
static_assert(agrees(kCpuDevices) && agrees(kNumThreads) && agrees(kParallelSpinUs) && agrees(kEagerInlineBytes) && agrees(kStreamMaxQueue) && agrees(kPinDevices) &&
                  agrees(kAllocatorCacheBytes) && agrees(kHugePageBytes) && agrees(kBufferStaggerLines) && agrees(kDisableCodegen) && agrees(kConvOnednn) && agrees(kCxx) && agrees(kCacheDir) && agrees(kFpContract) &&
                  agrees(kFusionMinElements) && agrees(kFusionMaxPointCost) && agrees(kFusionSmallPointCost) && agrees(kFusionMaxOutputs) && agrees(kFusionStream) &&
                  agrees(kFusionStreamBandBytes) &&
                  agrees(kHostCallbackMaxQueueBytes) && agrees(kHostCallbackSpinUs) && agrees(kControlSpinUs) && agrees(kPeerTimeoutMs) &&
                  agrees(kMpiMaxCount) && agrees(kPipelineTrace) && agrees(kLog),
              "config: a key's kind differs from its row's");

/// The variable's text; nullopt when unset or empty. Variables read once keep the text of
/// their first read.
std::optional<std::string> read(const Entry& e) {
  auto get = [&]() -> std::optional<std::string> {
    const char* v = std::getenv(e.name);
    if (!v || !*v) return std::nullopt;
    return std::string(v);
  };
  if (e.when != When::kOnce) return get();
  // Never destroyed: a stream made during exit may still ask.
  static std::mutex& mu = *new std::mutex;
  static auto& first = *new std::array<std::optional<std::optional<std::string>>, kVarCount>;
  std::lock_guard lock(mu);
  auto& slot = first[size_t(e.var)];
  if (!slot) slot = get();
  return *slot;
}

int64_t int_default(const Entry& e) { return e.derived_int ? e.derived_int() : e.default_int; }

std::string text_or_default(const Entry& e) {
  if (std::optional<std::string> text = read(e)) return *text;
  return e.derived_text ? e.derived_text() : e.default_text;
}

std::string range_text(const Entry& e) {
  if (e.min == kNoMin && e.max == kNoMax) return "any integer";
  if (e.max == kNoMax) return std::to_string(e.min) + " or more";
  return std::to_string(e.min) + " to " + std::to_string(e.max);
}

std::string when_sentence(When w) {
  switch (w) {
    case When::kOnce: return "";
    case When::kEachCompilation: return "Read at each compilation.";
    case When::kEachCall: return "Read at each call.";
  }
  return "";
}

/// What the docs say about the accepted values of an integer.
std::string bounds_sentence(const Entry& e) {
  if (e.kind != Kind::kInteger || (e.min == kNoMin && e.max == kNoMax)) return "";
  if (e.out_of_range == OutOfRange::kReject) return "Accepted: " + range_text(e) + ".";
  std::string s;
  if (e.min != kNoMin)
    s = "Values below " + std::to_string(e.min) + " count as " + std::to_string(e.min) + ".";
  if (e.max != kNoMax)
    s += std::string(s.empty() ? "" : " ") + "Values above " + std::to_string(e.max) + " count as " +
         std::to_string(e.max) + ".";
  return s;
}

}  // namespace

const Entry& entry(Var var) { return kTable.at(size_t(var)); }

std::span<const Entry> entries() { return kTable; }

int64_t get_int(IntKey key) {
  const std::optional<std::string> text = read(entry(key.var));
  return text ? parse_int(key, *text) : int_default(entry(key.var));
}

int64_t parse_int(IntKey key, const std::string& text) {
  const Entry& e = entry(key.var);
  // strtol's grammar, as before the table: leading blanks and a sign are accepted.
  char* end = nullptr;
  const int64_t v = std::strtol(text.c_str(), &end, 10);
  auto error = [&](const std::string& what) {
    std::string hint = ", or unset it for " + std::to_string(int_default(e));
    if (e.derived_int) hint += std::string(" (") + e.default_doc + ")";
    return ValueError(e.name + what + "; use " + range_text(e) + hint);
  };
  if (*end != '\0') throw error("='" + text + "' is not an integer");
  if (v >= e.min && v <= e.max) return v;
  if (e.out_of_range == OutOfRange::kClamp) return std::clamp(v, e.min, e.max);
  throw error("=" + text + " is out of range");
}

bool get_flag(FlagKey key) {
  const Entry& e = entry(key.var);
  const std::optional<std::string> text = read(e);
  return text ? *text != "0" : e.default_int != 0;
}

std::string get_string(StringKey key) { return text_or_default(entry(key.var)); }

std::string get_path(PathKey key) { return text_or_default(entry(key.var)); }

std::string default_doc(const Entry& e) {
  if (e.derived_int || e.derived_text) return e.default_doc;
  std::string value;
  switch (e.kind) {
    case Kind::kInteger:
    case Kind::kFlag: value = std::to_string(e.default_int); break;
    case Kind::kString:
    case Kind::kPath: value = e.default_text; break;
  }
  if (value.empty()) return "unset";
  return "`" + value + "`" + (*e.default_doc ? std::string(" (") + e.default_doc + ")" : "");
}

std::string markdown_table() {
  std::string s = "| variable | default | meaning |\n|---|---|---|\n";
  for (const Entry& e : kTable) {
    std::string meaning = e.doc;
    for (const std::string& extra : {bounds_sentence(e), when_sentence(e.when)})
      if (!extra.empty()) meaning += " " + extra;
    s += "| `" + std::string(e.name) + "` | " + default_doc(e) + " | " + meaning + " |\n";
  }
  return s;
}

}  // namespace tessel::config
