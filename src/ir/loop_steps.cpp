#include "ir/loop_steps.h"

#include <algorithm>
#include <mutex>
#include <unordered_map>

#include "ir/primitive.h"
#include "ir/program.h"
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

constexpr size_t kLarge = SIZE_MAX;

size_t times(size_t a, size_t n) { return n != 0 && a > kLarge / n ? kLarge : a * n; }

/// The bytes every equation of `p` reads and writes, its nested programs included.
size_t program_work_bytes(const Program& p) {
  size_t bytes = 0;
  for (const Equation& e : p.eqns) {
    for (const Atom& a : e.inputs) bytes = add_work_bytes(bytes, a.aval().nbytes());
    for (const Var& v : e.outputs) bytes = add_work_bytes(bytes, v->aval.nbytes());
    bytes = add_work_bytes(bytes, nested_work_bytes(*e.prim, e.inputs.size(), e.params));
  }
  return bytes;
}

}  // namespace

size_t nested_work_bytes(const Primitive& prim, size_t num_operands, const Params& params) {
  size_t sum = 0, largest = 0;
  bool any = false;
  for_each_program(params, [&](const Program& q) {
    const size_t bytes = program_work_bytes(q);
    sum = add_work_bytes(sum, bytes);
    largest = std::max(largest, bytes);
    any = true;
  });
  if (!any) return 0;
  // Only a loop (its regions keep carries) runs its programs more than once.
  const bool loop = prim.regions && !prim.regions(num_operands, params).carries.empty();
  if (!loop) return largest;
  const LoopSteps* rule = loop_steps(prim);
  const int64_t steps = rule ? rule->steps(params) : -1;
  if (steps < 0) return kLarge;
  return times(sum, size_t(steps));
}

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
