#include "core/lifetime.h"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <vector>

namespace tessel::detail {
namespace {

constexpr ExitPhase kPhases[] = {ExitPhase::kCallers, ExitPhase::kDevices, ExitPhase::kProcesses, ExitPhase::kStop};

struct Owned {
  void* object;
  void (*destroy)(void*);
};

struct Lifetime {
  std::mutex mu;
  std::vector<std::pair<ExitPhase, std::function<void()>>> steps;
  std::vector<Owned> owned;  // in order of creation
};

Lifetime& lifetime() {
  static auto* l = new Lifetime;  // the owner itself outlives everything it ends
  return *l;
}

// A failing step must not keep the others from running: report it and go on.
void run_step(const std::function<void()>& step) {
  try {
    step();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tessel: at exit: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "tessel: at exit: an exception that is not a std::exception\n");
  }
}

void teardown() {
  Lifetime& l = lifetime();
  for (ExitPhase phase : kPhases)
    for (size_t i = 0;; ++i) {  // by index: a step may add steps
      std::function<void()> step;
      {
        std::lock_guard lock(l.mu);
        if (i >= l.steps.size()) break;
        if (l.steps[i].first != phase) continue;
        step = l.steps[i].second;
      }
      run_step(step);
    }
  for (;;) {
    Owned o;
    {
      std::lock_guard lock(l.mu);
      if (l.owned.empty()) break;
      o = l.owned.back();
      l.owned.pop_back();
    }
    o.destroy(o.object);
  }
}

}  // namespace

void at_exit(ExitPhase phase, std::function<void()> step) {
  Lifetime& l = lifetime();
  {
    std::lock_guard lock(l.mu);
    l.steps.emplace_back(phase, std::move(step));
  }
  register_teardown();
}

void own_global(void* object, void (*destroy)(void*)) {
  Lifetime& l = lifetime();
  std::lock_guard lock(l.mu);
  l.owned.push_back(Owned{object, destroy});
}

void register_teardown() {
  static const bool registered = (std::atexit(teardown), true);
  (void)registered;
}

}  // namespace tessel::detail
