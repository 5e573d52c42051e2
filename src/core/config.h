#pragma once
// The configuration table: every TESSEL_ environment variable tessel reads, with its kind,
// bounds, default, when it is read and its documentation. The table itself is in
// core/config.cpp; readers go through the typed accessors below, which parse and validate
// in one place (no other file reads a TESSEL_ variable). docs/configuration.md's table
// is markdown_table()'s text, and tests/core/config_test.cpp fails when they drift.
//
//   const int64_t n = config::get_int(config::kCpuDevices);
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>

namespace tessel::config {

/// Every variable, in the order of the table (and of the rows of docs/configuration.md).
enum class Var {
  kCpuDevices,
  kNumThreads,
  kParallelSpinUs,
  kEagerInlineBytes,
  kStreamMaxQueue,
  kPinDevices,
  kAllocatorCacheBytes,
  kHugePageBytes,
  kBufferStaggerLines,
  kDisableCodegen,
  kConvOnednn,
  kCxx,
  kCacheDir,
  kFpContract,
  kFusionMinElements,
  kFusionMaxPointCost,
  kFusionSmallPointCost,
  kFusionMaxOutputs,
  kFusionStream,
  kFusionStreamBandBytes,
  kFusionStreamInplace,
  kOverlapExchange,
  kHostCallbackMaxQueueBytes,
  kHostCallbackSpinUs,
  kControlSpinUs,
  kPeerTimeoutMs,
  kMpiMaxCount,
  kPipelineTrace,
  kLog,
};
inline constexpr size_t kVarCount = size_t(Var::kLog) + 1;

/// How a variable's text is read. An empty value counts as unset for every kind.
enum class Kind {
  kInteger,  // a decimal integer within [min, max]; outside, rejected or clamped (OutOfRange)
  kFlag,     // "0": off; anything else: on
  kString,   // the text as it is
  kPath,     // a file or directory name, as it is
};

/// When a variable is read.
enum class When {
  kOnce,             // once, when first needed: later changes to the environment are not seen
  kEachCompilation,  // at each jit compilation
  kEachCall,         // at each call of the function that uses it
};

/// What an integer outside [min, max] does.
enum class OutOfRange {
  kReject,  // a ValueError naming the variable, the value and the range
  kClamp,   // the nearest bound (kept for variables that always did so)
};

/// One row of the table. Defaults are either fixed (default_int, default_text) or computed
/// when the variable is read (derived_int, derived_text); default_doc says how, for the docs.
struct Entry {
  Var var;
  const char* name;
  Kind kind;
  When when = When::kOnce;
  int64_t min = std::numeric_limits<int64_t>::min();  // kInteger: the accepted range
  int64_t max = std::numeric_limits<int64_t>::max();
  OutOfRange out_of_range = OutOfRange::kReject;
  int64_t default_int = 0;          // kInteger, kFlag (0 or 1)
  const char* default_text = "";    // kString, kPath ("": none)
  int64_t (*derived_int)() = nullptr;
  std::string (*derived_text)() = nullptr;
  /// The docs' default column: how a computed default is derived, or a note shown after a
  /// fixed default ("256 MiB").
  const char* default_doc = "";
  const char* doc = "";  // the docs' meaning column, without the "Read at ..." sentence
};

/// A variable of a given kind: the accessors take only the kind they read, so asking for a
/// flag as an integer does not compile.
template <Kind K>
struct Key {
  Var var;
};
using IntKey = Key<Kind::kInteger>;
using FlagKey = Key<Kind::kFlag>;
using StringKey = Key<Kind::kString>;
using PathKey = Key<Kind::kPath>;

inline constexpr IntKey kCpuDevices{Var::kCpuDevices};
inline constexpr IntKey kNumThreads{Var::kNumThreads};
inline constexpr IntKey kParallelSpinUs{Var::kParallelSpinUs};
inline constexpr IntKey kEagerInlineBytes{Var::kEagerInlineBytes};
inline constexpr IntKey kStreamMaxQueue{Var::kStreamMaxQueue};
inline constexpr FlagKey kPinDevices{Var::kPinDevices};
inline constexpr IntKey kAllocatorCacheBytes{Var::kAllocatorCacheBytes};
inline constexpr IntKey kHugePageBytes{Var::kHugePageBytes};
inline constexpr IntKey kBufferStaggerLines{Var::kBufferStaggerLines};
inline constexpr FlagKey kDisableCodegen{Var::kDisableCodegen};
inline constexpr FlagKey kConvOnednn{Var::kConvOnednn};
inline constexpr StringKey kCxx{Var::kCxx};
inline constexpr PathKey kCacheDir{Var::kCacheDir};
inline constexpr FlagKey kFpContract{Var::kFpContract};
inline constexpr IntKey kFusionMinElements{Var::kFusionMinElements};
inline constexpr IntKey kFusionMaxPointCost{Var::kFusionMaxPointCost};
inline constexpr IntKey kFusionSmallPointCost{Var::kFusionSmallPointCost};
inline constexpr IntKey kFusionMaxOutputs{Var::kFusionMaxOutputs};
inline constexpr FlagKey kFusionStream{Var::kFusionStream};
inline constexpr IntKey kFusionStreamBandBytes{Var::kFusionStreamBandBytes};
inline constexpr FlagKey kFusionStreamInplace{Var::kFusionStreamInplace};
inline constexpr FlagKey kOverlapExchange{Var::kOverlapExchange};
inline constexpr IntKey kHostCallbackMaxQueueBytes{Var::kHostCallbackMaxQueueBytes};
inline constexpr IntKey kHostCallbackSpinUs{Var::kHostCallbackSpinUs};
inline constexpr IntKey kControlSpinUs{Var::kControlSpinUs};
inline constexpr IntKey kPeerTimeoutMs{Var::kPeerTimeoutMs};
inline constexpr IntKey kMpiMaxCount{Var::kMpiMaxCount};
inline constexpr PathKey kPipelineTrace{Var::kPipelineTrace};
inline constexpr StringKey kLog{Var::kLog};

/// The integer's value, or its default when unset; throws ValueError naming the variable,
/// the value and the accepted range when the text is not a decimal integer or lies outside
/// the range of a rejecting entry (parse_int).
int64_t get_int(IntKey key);
/// What get_int makes of the variable set to `text` (not empty): the value, clamped for a
/// clamping entry; a ValueError for text that is not an integer or out of a rejecting range.
int64_t parse_int(IntKey key, const std::string& text);
/// True when the flag is set to anything but "0" (unset or empty: its default).
bool get_flag(FlagKey key);
/// The text, or its default when unset ("" when it has none).
std::string get_string(StringKey key);
/// The path, or its default when unset ("" when it has none).
std::string get_path(PathKey key);

/// The row of one variable.
const Entry& entry(Var var);
/// Every row, in table order.
std::span<const Entry> entries();
/// The docs' default column of a row ("`64`", "unset", "cores this process may use").
std::string default_doc(const Entry& e);
/// The table of docs/configuration.md: the header and one line per variable.
std::string markdown_table();

}  // namespace tessel::config
