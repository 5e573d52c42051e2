#include "ir/primitive.h"

#include "core/shape_check.h"
#include "ir/abstract_eval.h"
#include "ir/evaluator.h"

#include <deque>
#include <mutex>
#include <unordered_map>

#include "tessel/error.h"

namespace tessel::ir {
namespace {

struct Registry {
  std::mutex mu;
  std::deque<Primitive> prims;  // deque: references stay valid
  std::unordered_map<std::string, const Primitive*> by_name;
};

Registry& registry() {
  static Registry r;
  return r;
}

const Evaluator* g_evaluator = nullptr;

}  // namespace

void install_evaluator(const Evaluator& e) { g_evaluator = &e; }
const Evaluator& evaluator() {
  if (!g_evaluator) throw Error("internal: no evaluator installed (src/sharding/dispatch.cpp is not linked in)");
  return *g_evaluator;
}

void run_program(const std::shared_ptr<const Program>& program, std::span<const void* const> ins,
                 std::span<void* const> outs, detail::DeviceImpl* device) {
  evaluator().run_program(program, ins, outs, device);
}

std::vector<size_t> inplace_elementwise(size_t out, std::span<const Aval> in_avals, std::span<const Aval> out_avals,
                                        const Params&) {
  std::vector<size_t> r;
  for (size_t j = 0; j < in_avals.size(); ++j)
    if (in_avals[j].same_type(out_avals[out])) r.push_back(j);
  return r;
}

std::vector<size_t> inplace_operand(size_t out, std::span<const Aval> in_avals, std::span<const Aval> out_avals,
                                    const Params&) {
  if (out == 0 && !in_avals.empty() && in_avals[0].same_type(out_avals[0])) return {0};
  return {};
}

std::vector<Aval> abstract_eval(const Primitive& p, std::span<const Aval> ins, const Params& params) {
  if (!p.abstract_eval) throw NotImplementedError(p.name + ": the primitive has no abstract evaluation rule");
  const Arity& a = p.arity;
  if (ins.size() < size_t(a.min) || (a.max >= 0 && ins.size() > size_t(a.max)))
    throw ValueError(p.name + ": takes " +
                     (a.min == a.max ? std::to_string(a.min)
                      : a.max < 0    ? "at least " + std::to_string(a.min)
                                     : std::to_string(a.min) + " to " + std::to_string(a.max)) +
                     " operands, got " + std::to_string(ins.size()));
  std::vector<Aval> outs = p.abstract_eval(ins, params);
  for (const Aval& a : outs) detail::checked_size(p.name, a);
  return outs;
}

const Primitive& register_primitive(Primitive p) {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  if (r.by_name.count(p.name)) throw Error("register_primitive: a primitive named '" + p.name + "' exists already");
  r.prims.push_back(std::move(p));
  const Primitive& ref = r.prims.back();
  r.by_name.emplace(ref.name, &ref);
  return ref;
}

const Primitive& lookup_primitive(std::string_view name) {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  auto it = r.by_name.find(std::string(name));
  if (it == r.by_name.end()) throw Error("lookup_primitive: no primitive named '" + std::string(name) + "'");
  return *it->second;
}

}  // namespace tessel::ir
