#include "core/log.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "tessel/device.h"

namespace tessel::detail {

bool debug_logging() {
  static const bool on = [] {
    const char* v = std::getenv("TESSEL_LOG");
    return v && (std::strcmp(v, "debug") == 0 || std::strcmp(v, "DEBUG") == 0);
  }();
  return on;
}

void log_line(const std::string& line) {
  static std::mutex mu;
  std::lock_guard lock(mu);
  std::fprintf(stderr, "[tessel %d] %s\n", process_index(), line.c_str());
}

}  // namespace tessel::detail
