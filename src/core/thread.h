#pragma once
// Starting the runtime's threads (device streams, host-callback receivers, colocated queues).
#include <sched.h>

#include <algorithm>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include "tessel/error.h"

namespace tessel::detail {

/// Starts a thread running `fn`. When the system refuses one (too many threads, no memory for
/// its stack) throws ResourceExhaustedError naming `what`, instead of std::system_error.
template <class F> std::thread start_thread(const std::string& what, F&& fn) {
  try {
    return std::thread(std::forward<F>(fn));
  } catch (const std::system_error& e) {
    throw ResourceExhaustedError("cannot start a thread for " + what + ": " + e.what() +
                                 "; the process has too many threads or too little memory (see ulimit -u and "
                                 "ulimit -v), or lower TESSEL_CPU_DEVICES");
  }
}

/// The cores this process may run on (its CPU affinity; `mpirun --bind-to core` gives one):
/// a thread that polls for work only steals time from the one it waits for when this is 1.
inline int usable_cores() {
  static const int n = [] {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
    return std::max(1, int(std::thread::hardware_concurrency()));
  }();
  return n;
}

}  // namespace tessel::detail
