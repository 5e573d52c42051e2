#include "core/log.h"

#include <cstdio>
#include <mutex>

#include "core/config.h"
#include "tessel/device.h"

namespace tessel::detail {

bool debug_logging() {
  static const bool on = [] {
    const std::string v = config::get_string(config::kLog);
    return v == "debug" || v == "DEBUG";
  }();
  return on;
}

void log_line(const std::string& line) {
  static std::mutex mu;
  std::lock_guard lock(mu);
  std::fprintf(stderr, "[tessel %d] %s\n", process_index(), line.c_str());
}

}  // namespace tessel::detail
