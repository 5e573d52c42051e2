#include "core/log.h"

#include <atomic>
#include <cstdio>
#include <iterator>
#include <mutex>

#include "core/config.h"
#include "tessel/device.h"

namespace tessel::detail {
namespace {

constexpr int kUnread = -1;
std::atomic<int> g_level{kUnread};

LogLevel level_of(const std::string& v) {
  if (v == "debug" || v == "DEBUG") return LogLevel::kDebug;
  if (v == "info" || v == "INFO") return LogLevel::kInfo;
  return LogLevel::kWarning;
}

}  // namespace

LogLevel log_level() {
  int v = g_level.load(std::memory_order_relaxed);
  if (v == kUnread) {
    int want = int(level_of(config::get_string(config::kLog)));
    // A level set meanwhile by set_log_level wins.
    if (g_level.compare_exchange_strong(v, want, std::memory_order_relaxed)) v = want;
  }
  return LogLevel(v);
}

void set_log_level(LogLevel level) { g_level.store(int(level), std::memory_order_relaxed); }

std::string bytes_text(int64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = double(bytes) / 1024;
  size_t u = 0;
  for (; v >= 1024 && u + 1 < std::size(kUnits); ++u) v /= 1024;
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %s", v, kUnits[u]);
  return text;
}

void log_line(const std::string& line) {
  static std::mutex mu;
  std::lock_guard lock(mu);
  std::fprintf(stderr, "[tessel %d] %s\n", process_index(), line.c_str());
}

}  // namespace tessel::detail
