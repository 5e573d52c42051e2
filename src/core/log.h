#pragma once
// Logging to stderr, by level (TESSEL_LOG, core/config.h):
//   unset    warnings only: conditions the user should know about (a fallback to slower code);
//   info     also what tessel chose on the user's behalf that costs time or memory (the SPMD
//            partitioner gathering an operand it cannot partition, docs/sharding.md);
//   debug    also one line per dispatch, compilation and execution.
// Every line is prefixed by the process rank. The check of a disabled level is one relaxed
// atomic load, so TESSEL_DEBUG_LOG and TESSEL_INFO_LOG cost nothing measurable when off (the
// expression is not evaluated).
#include <cstdint>
#include <string>

namespace tessel::detail {

enum class LogLevel { kWarning = 0, kInfo = 1, kDebug = 2 };

/// The level in force: the one set by set_log_level, else TESSEL_LOG's (read once).
LogLevel log_level();
/// Overrides TESSEL_LOG for the rest of the process (tests, and programs that want the
/// partitioner's info lines without setting the environment).
void set_log_level(LogLevel level);
inline bool debug_logging() { return log_level() >= LogLevel::kDebug; }
inline bool info_logging() { return log_level() >= LogLevel::kInfo; }
/// A byte count for people: "512 B", "3.5 KiB", "2.0 MiB", "1.2 GiB" (binary units).
std::string bytes_text(int64_t bytes);
/// Writes "[tessel <rank>] <line>" to stderr.
void log_line(const std::string& line);

#define TESSEL_DEBUG_LOG(expr)                                  \
  do {                                                          \
    if (::tessel::detail::debug_logging()) ::tessel::detail::log_line(expr); \
  } while (0)

/// Written at TESSEL_LOG=info and debug, prefixed "info: ".
#define TESSEL_INFO_LOG(expr)                                                                     \
  do {                                                                                            \
    if (::tessel::detail::info_logging()) ::tessel::detail::log_line(std::string("info: ") + (expr)); \
  } while (0)

/// Always written: conditions the user should know about (a fallback to slower code).
#define TESSEL_WARN_LOG(expr) ::tessel::detail::log_line(std::string("warning: ") + (expr))

}  // namespace tessel::detail
