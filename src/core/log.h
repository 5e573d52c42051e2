#pragma once
// TESSEL_LOG=debug: one line per dispatch, compilation and execution, prefixed by the
// process rank. Off by default; the check is one branch on a cached flag.
#include <string>

namespace tessel::detail {

bool debug_logging();
/// Writes "[tessel <rank>] <line>" to stderr.
void log_line(const std::string& line);

#define TESSEL_DEBUG_LOG(expr)                                  \
  do {                                                          \
    if (::tessel::detail::debug_logging()) ::tessel::detail::log_line(expr); \
  } while (0)

/// Always written: conditions the user should know about (a fallback to slower code).
#define TESSEL_WARN_LOG(expr) ::tessel::detail::log_line(std::string("warning: ") + (expr))

}  // namespace tessel::detail
