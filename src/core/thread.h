#pragma once
// Starting the runtime's threads (device streams, host-callback receivers, colocated queues).
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

}  // namespace tessel::detail
