#pragma once
// The one owner of tessel's process-wide state, and the one order in which it ends at exit.
//
// A program may return from `main` with work still queued on device streams, host-callback
// receivers and colocated queues, and that work touches the runtime's global state (caches,
// registries, receivers, communicators). C++ destroys function-local statics in the reverse
// order of their construction, interleaved with atexit handlers: a static made after the
// handler that drains the streams would be destroyed while kernels still use it. So global
// state with a destructor is made with `make_global` and owned here, and a single exit
// handler, registered when the devices are made (before that no work can be pending), ends
// everything in this order:
//   1. the steps added with `at_exit` run phase by phase, each phase's steps in the order
//      they were added: pending work finishes (callers, devices, processes), then the
//      device streams stop (their threads are joined; work given to them later runs at once
//      on the caller's thread);
//   2. the state made with `make_global` is destroyed, newest first.
// The devices themselves stay: arrays and meshes that static objects of the program hold
// refer to them until the process ends.
#include <functional>
#include <utility>

namespace tessel::detail {

/// The phases of the first step of exit's teardown, in the order they run.
enum class ExitPhase {
  kCallers,    ///< threads that issue device work for the program (colocated calls)
  kDevices,    ///< device streams and the host callbacks their work issues
  kProcesses,  ///< the other processes of a job (pipeline workers, MPI)
  kStop,       ///< threads of the runtime end (the device streams)
};

/// Adds a step to exit's teardown (see above); registers the exit handler if no device did
/// yet.
void at_exit(ExitPhase phase, std::function<void()> step);

/// Takes ownership of `object`: `destroy(object)` runs in exit's teardown, after pending work
/// finished and the device streams stopped.
void own_global(void* object, void (*destroy)(void*));

/// A T owned by the runtime until exit's teardown: `static T& t = make_global<T>(args...);`
/// for global state that device work may touch.
template <class T, class... Args> T& make_global(Args&&... args) {
  T* p = new T(std::forward<Args>(args)...);
  own_global(p, [](void* q) { delete static_cast<T*>(q); });
  return *p;
}

/// Registers the exit handler that runs the teardown (once; the devices call it when made).
void register_teardown();

}  // namespace tessel::detail
