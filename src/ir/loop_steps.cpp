#include "ir/loop_steps.h"

#include <mutex>
#include <unordered_map>

#include "tessel/error.h"

namespace tessel::ir {
namespace {

struct Registry {
  std::mutex mu;
  std::unordered_map<const Primitive*, LoopSteps> rules;
};

Registry& registry() {
  static Registry& r = *new Registry();  // never destroyed: read by work queued at exit
  return r;
}

}  // namespace

bool register_loop_steps(const Primitive& prim, LoopSteps rule) {
  if (!rule.steps || !rule.with_steps) throw Error("register_loop_steps: a rule needs both steps and with_steps");
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  r.rules[&prim] = rule;
  return true;
}

const LoopSteps* loop_steps(const Primitive& prim) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  auto it = r.rules.find(&prim);
  return it == r.rules.end() ? nullptr : &it->second;  // entries never move: unordered_map nodes are stable
}

}  // namespace tessel::ir
